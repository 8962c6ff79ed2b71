//! Reading a scenario file: parse it, then check what serde cannot (one operation per step,
//! blocks that do not nest, and each operation's own checks), so that a bad file is refused
//! before anything runs, with its file, line and field.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use serde_saphyr::Spanned;

use super::check::Checker;
use super::model::{Need, RawStep, ScenarioFile};
use super::naming::KindRef;
use super::ops::{self, Operation, RawOperation};

/// Why a scenario file was refused. `Display` starts with `file:line:column`.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct LoadError {
    pub file: String,
    pub line: u64,
    pub column: u64,
    pub message: String,
}

/// A scenario, checked and ready to run.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    /// The file it came from, as given to [`load`].
    pub file: String,
    pub components: BTreeMap<String, Value>,
    /// The kinds the trace records.
    pub trace: Vec<KindRef>,
    pub namespace: String,
    /// What it declares it needs of the embedded world.
    pub needs: Vec<Need>,
    pub steps: Vec<Step>,
}

/// The longest wait (`advance`, or an assertion's timeout) a real backend runs; a scenario that
/// waits longer needs virtual time.
pub const REAL_TIME_LIMIT: Duration = Duration::from_secs(30);

impl Scenario {
    /// Why this scenario cannot run on a real cluster (real time, no faults), if it cannot.
    pub fn real_time_blocker(&self) -> Option<String> {
        if self.needs.contains(&Need::Faults) {
            return Some("it declares that it needs fault injection".into());
        }
        if self.needs.contains(&Need::VirtualTime) {
            return Some("it declares that it needs virtual time".into());
        }
        for op in self.operations() {
            if op.action.injects_faults() {
                return Some(format!("line {}: it injects faults", op.line));
            }
            if let Some((verb, d)) = op.action.wait()
                && d > REAL_TIME_LIMIT
            {
                return Some(format!(
                    "line {}: it {verb} {} on virtual time; a real cluster waits at most {}",
                    op.line,
                    super::duration::format_duration(d),
                    super::duration::format_duration(REAL_TIME_LIMIT)
                ));
            }
        }
        None
    }

    /// Every operation of every step: `try`, then `catch`, then `finally`, step by step.
    pub fn operations(&self) -> impl Iterator<Item = &Op> {
        self.steps
            .iter()
            .flat_map(|s| s.try_.iter().chain(&s.catch).chain(&s.finally))
    }
}

/// One step: a `try` block with what to do on failure and afterwards.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: Option<String>,
    pub line: u64,
    pub try_: Vec<Op>,
    pub catch: Vec<Op>,
    pub finally: Vec<Op>,
}

/// One operation and where it is written.
#[derive(Debug, Clone)]
pub struct Op {
    pub name: Option<String>,
    pub line: u64,
    pub action: Arc<dyn Operation>,
}

/// Read and check a scenario file.
pub fn load(path: &Path) -> Result<Scenario, LoadError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| LoadError {
        file: file.clone(),
        line: 0,
        column: 0,
        message: format!("cannot read it: {e}"),
    })?;
    parse(&file, &text, path.parent().unwrap_or(Path::new(".")))
}

/// Check a scenario given as text. `file` names it in errors; `dir` is where `file:` references
/// are read from.
pub fn parse(file: &str, text: &str, dir: &Path) -> Result<Scenario, LoadError> {
    let raw: ScenarioFile = serde_saphyr::from_str(text).map_err(|e| yaml_error(file, &e))?;
    Loader {
        file,
        checker: Checker::new(dir),
    }
    .scenario(raw)
}

fn yaml_error(file: &str, e: &serde_saphyr::Error) -> LoadError {
    let (line, column) = e
        .location()
        .map(|l| (l.line(), l.column()))
        .unwrap_or((0, 0));
    // The library's message starts with its own position and shows the lines around it as coming
    // from `<input>`: keep the explanation and the snippet, named after the real file.
    let text = e.to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    let prefix = format!("line {line} column {column}: ");
    let text = text.strip_prefix(&prefix).unwrap_or(text);
    LoadError {
        file: file.to_string(),
        line,
        column,
        message: text.replace("<input>", file),
    }
}

/// Checks the file's structure, and each operation with the operation's own check.
struct Loader<'a> {
    file: &'a str,
    checker: Checker<'a>,
}

impl Loader<'_> {
    fn err(&self, line: u64, message: impl Into<String>) -> LoadError {
        LoadError {
            file: self.file.to_string(),
            line,
            column: 0,
            message: message.into(),
        }
    }

    fn scenario(&self, raw: ScenarioFile) -> Result<Scenario, LoadError> {
        let name = raw.name.value.clone();
        let name_ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !name.starts_with('-')
            && !name.ends_with('-');
        if !name_ok {
            return Err(self.err(
                raw.name.referenced.line(),
                format!("name: `{name}` must be lower-case letters, digits and `-` (it names the snapshot)"),
            ));
        }
        if raw.steps.is_empty() {
            return Err(self.err(0, "steps: a scenario needs at least one step"));
        }
        let mut steps = Vec::new();
        for (i, step) in raw.steps.into_iter().enumerate() {
            steps.push(self.step(&format!("steps[{i}]"), step)?);
        }
        let mut trace = Vec::new();
        for kind in &raw.trace {
            let parsed = KindRef::parse(&kind.value)
                .map_err(|m| self.err(kind.referenced.line(), format!("trace: {m}")))?;
            trace.push(parsed);
        }
        let mut scenario = Scenario {
            name,
            description: raw.description,
            tags: raw.tags,
            file: self.file.to_string(),
            components: raw.components,
            trace,
            namespace: raw.namespace.unwrap_or_else(|| "default".into()),
            needs: raw.needs,
            steps,
        };
        if scenario.trace.is_empty() {
            scenario.trace = kinds_named(&scenario);
        }
        Ok(scenario)
    }

    fn step(&self, at: &str, raw: Spanned<RawStep>) -> Result<Step, LoadError> {
        let line = raw.referenced.line();
        let raw = raw.value;
        let has_operation = !raw.operations.is_empty();
        match raw.try_ {
            Some(ops) => {
                if has_operation {
                    return Err(self.err(
                        line,
                        format!("{at}: a step has either `try` or one operation, not both"),
                    ));
                }
                if ops.is_empty() {
                    return Err(self.err(line, format!("{at}.try: needs at least one operation")));
                }
                Ok(Step {
                    name: raw.name,
                    line,
                    try_: self.ops(&format!("{at}.try"), ops)?,
                    catch: self.ops(&format!("{at}.catch"), raw.catch.unwrap_or_default())?,
                    finally: self.ops(&format!("{at}.finally"), raw.finally.unwrap_or_default())?,
                })
            }
            None => {
                if raw.catch.is_some() || raw.finally.is_some() {
                    return Err(self.err(
                        line,
                        format!("{at}: `catch` and `finally` belong to a step with `try`"),
                    ));
                }
                let op = self.op(at, line, raw.name.clone(), raw.operations)?;
                Ok(Step {
                    name: raw.name,
                    line,
                    try_: vec![op],
                    catch: Vec::new(),
                    finally: Vec::new(),
                })
            }
        }
    }

    fn ops(&self, at: &str, raw: Vec<Spanned<RawStep>>) -> Result<Vec<Op>, LoadError> {
        raw.into_iter()
            .enumerate()
            .map(|(i, r)| {
                let at = format!("{at}[{i}]");
                let line = r.referenced.line();
                let r = r.value;
                if r.try_.is_some() || r.catch.is_some() || r.finally.is_some() {
                    return Err(self.err(
                        line,
                        format!("{at}: `try`, `catch` and `finally` do not nest"),
                    ));
                }
                self.op(&at, line, r.name, r.operations)
            })
            .collect()
    }

    fn op(
        &self,
        at: &str,
        line: u64,
        name: Option<String>,
        mut operations: Vec<RawOperation>,
    ) -> Result<Op, LoadError> {
        if operations.len() != 1 {
            return Err(self.err(
                line,
                format!(
                    "{at}: needs exactly one operation ({}), found {}",
                    ops::KEYS.join(", "),
                    operations.len()
                ),
            ));
        }
        let RawOperation { key, fields } = operations.remove(0);
        let action = fields
            .check(&self.checker)
            .map_err(|m| self.err(line, format!("{at}.{key}: {m}")))?;
        Ok(Op {
            name,
            line,
            action: Arc::from(action),
        })
    }
}

/// Every kind the operations' objects name, in order of first mention.
fn kinds_named(scenario: &Scenario) -> Vec<KindRef> {
    let mut seen = Vec::new();
    for obj in scenario.operations().flat_map(|op| op.action.objects()) {
        let kind = KindRef::of(obj);
        if !seen.contains(&kind) {
            seen.push(kind);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "name: s\ndescription: d\nsteps:\n";

    fn refused(steps: &str) -> String {
        match parse("s.yaml", &format!("{HEAD}{steps}"), Path::new(".")) {
            Ok(_) => panic!("the scenario was accepted"),
            Err(e) => e.to_string(),
        }
    }

    fn blocker(steps: &str) -> Option<String> {
        parse("s.yaml", &format!("{HEAD}{steps}"), Path::new("."))
            .unwrap()
            .real_time_blocker()
    }

    #[test]
    fn a_step_without_an_operation_lists_every_operation() {
        let message = refused("  - name: nothing\n");
        assert!(
            message.contains(
                "s.yaml:4:0: steps[0]: needs exactly one operation (apply, create, update, \
                 patch, delete, assert, error, absent, advance, fault, events, dump, watch, \
                 stop, start, restart), found 0"
            ),
            "{message}"
        );
    }

    #[test]
    fn a_misspelt_operation_lists_what_a_step_may_hold() {
        let message = refused("  - advanc: 1m\n");
        assert!(
            message.contains(
                "s.yaml:4:5: unknown field `advanc`, expected one of name, try, catch, finally, \
                 apply, create, update, patch, delete, assert, error, absent, advance, fault, \
                 events, dump, watch, stop, start, restart"
            ),
            "{message}"
        );
    }

    #[test]
    fn an_operation_in_a_block_is_named_by_its_path() {
        let message = refused(
            "  - try:\n      - advance: 1s\n    finally:\n      - delete:\n          object: {apiVersion: v1, kind: Pod}\n",
        );
        assert!(
            message.contains(
                "s.yaml:7:0: steps[0].finally[0].delete: objects[0]: `metadata.name` is missing"
            ),
            "{message}"
        );
    }

    #[test]
    fn real_clusters_are_refused_faults_and_long_waits_with_the_line() {
        assert_eq!(blocker("  - advance: 30s\n"), None);
        assert_eq!(
            blocker("  - advance: 1s\n  - fault: heal\n").as_deref(),
            Some("line 5: it injects faults")
        );
        assert_eq!(
            blocker("  - advance: 45m\n").as_deref(),
            Some("line 4: it advances 45m0s on virtual time; a real cluster waits at most 30s")
        );
        let absent =
            "  - absent:\n      object: {apiVersion: v1, kind: Pod}\n      consistently: 2m\n";
        assert_eq!(
            blocker(absent).as_deref(),
            Some("line 4: it waits 2m0s on virtual time; a real cluster waits at most 30s")
        );
    }
}
