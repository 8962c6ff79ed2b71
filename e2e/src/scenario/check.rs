//! What checking an operation may use: the objects an operation names, read from `object`,
//! `objects` or `file` and checked to name their kind (and their name, where one is needed).
//! `load` checks the file's structure; each operation checks its own fields with this.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// How long `assert`, `absent` and `events` wait by default (virtual time on the embedded cluster).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The field manager of the scenario's own writes.
pub const DEFAULT_FIELD_MANAGER: &str = "tollgate-scenario";

/// Checks the operations of one scenario file; `file:` references are read from `dir`.
pub struct Checker<'a> {
    dir: &'a Path,
}

/// Whether the objects of an operation must be named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    Required,
    NameOrGenerateName,
    /// Assertions without a name match any object of the kind.
    Optional,
}

impl<'a> Checker<'a> {
    pub fn new(dir: &'a Path) -> Self {
        Checker { dir }
    }

    /// The objects of an operation: exactly one of `object`, `objects` and `file`, each naming its
    /// apiVersion and kind, and a name as `name_rule` says.
    pub fn objects(
        &self,
        object: Option<Value>,
        objects: Option<Vec<Value>>,
        file: Option<String>,
        name_rule: NameRule,
    ) -> Result<Vec<Value>, String> {
        let list = match (object, objects, file) {
            (Some(o), None, None) => vec![o],
            (None, Some(list), None) if !list.is_empty() => list,
            (None, Some(_), None) => return Err("objects: the list is empty".into()),
            (None, None, Some(f)) => self.read_objects(&f)?,
            (None, None, None) => return Err("needs one of `object`, `objects` or `file`".into()),
            _ => return Err("give only one of `object`, `objects` and `file`".into()),
        };
        for (i, obj) in list.iter().enumerate() {
            check_object(obj, name_rule).map_err(|m| format!("objects[{i}]: {m}"))?;
        }
        Ok(list)
    }

    fn read_objects(&self, file: &str) -> Result<Vec<Value>, String> {
        let path = self.dir.join(file);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("file: cannot read {}: {e}", path.display()))?;
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
            .map_err(|e| format!("file: {}: {e}", path.display()))?;
        let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
        if docs.is_empty() {
            return Err(format!("file: {} holds no objects", path.display()));
        }
        Ok(docs)
    }
}

fn check_object(obj: &Value, rule: NameRule) -> Result<(), String> {
    if !obj.is_object() {
        return Err("must be a mapping (a Kubernetes object)".into());
    }
    for field in ["apiVersion", "kind"] {
        if obj[field].as_str().is_none_or(str::is_empty) {
            return Err(format!("`{field}` is missing: every object names its kind"));
        }
    }
    let has = |f: &str| obj["metadata"][f].as_str().is_some_and(|s| !s.is_empty());
    match rule {
        NameRule::Required if !has("name") => Err("`metadata.name` is missing".into()),
        NameRule::NameOrGenerateName if !has("name") && !has("generateName") => {
            Err("`metadata.name` or `metadata.generateName` is missing".into())
        }
        _ => Ok(()),
    }
}
