//! The built-in kinds as structured-merge-diff types: which lists are atomic, sets or keyed (and by
//! which keys), which structs and maps are atomic, which objects are maps (their keys owned one by
//! one) rather than structs, and which fields a Go zero value of a struct holds (non-pointer
//! structs as `{}`, nil lists without `omitempty` as `null`).
//!
//! kube-apiserver records a create as a change from the kind's Go zero value, so the fields that
//! zero value already holds (a Pod's `spec`, a container's `resources`) are never "added" and carry
//! no `"."` in fieldsV1, while the pointer structs, maps and lists a write adds do.
//!
//! `builtin_schema.json` was generated from kube-apiserver v1.37.2's `/openapi/v3` documents (the
//! `x-kubernetes-list-*` and `x-kubernetes-map-type` extensions, `default: {}` on non-pointer struct
//! fields, `required` on fields without `omitempty`); its header says how it is encoded.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Map, Value};

/// A field's type.
#[derive(Debug)]
pub enum Ty {
    Scalar,
    /// No declared structure (`RawExtension`, preserved unknown fields): maps whose keys are owned
    /// one by one, atomic lists.
    Untyped,
    Struct(u32),
    List(ListKind, Box<Ty>),
    Map {
        atomic: bool,
        elem: Box<Ty>,
    },
}

#[derive(Debug, PartialEq)]
pub enum ListKind {
    Atomic,
    Set,
    Keyed(Vec<String>),
}

#[derive(Debug, Default)]
struct TypeDef {
    atomic: bool,
    fields: HashMap<String, Ty>,
    /// The element of a struct that is itself a map (`additionalProperties` without properties).
    map_elem: Option<Ty>,
    /// Fields of the Go zero value: true for `{}`, false for `null`.
    zero: HashMap<String, bool>,
    /// Defaults of key fields, used when an item of a keyed list omits one.
    key_defaults: Map<String, Value>,
}

pub struct Types {
    kinds: HashMap<String, Ty>,
    types: Vec<TypeDef>,
}

pub const SCHEMA_JSON: &str = include_str!("builtin_schema.json");

static BUILTIN: LazyLock<Types> = LazyLock::new(|| load(SCHEMA_JSON));

#[derive(serde::Deserialize)]
struct File {
    kinds: std::collections::BTreeMap<String, String>,
    types: std::collections::BTreeMap<String, RawType>,
}

#[derive(serde::Deserialize, Default)]
#[serde(default)]
struct RawType {
    a: u8,
    f: std::collections::BTreeMap<String, String>,
    m: Option<String>,
    z: Vec<String>,
    n: Vec<String>,
    d: Map<String, Value>,
}

fn load(json: &str) -> Types {
    let file: File = match serde_json::from_str(json) {
        Ok(f) => f,
        Err(e) => {
            // Compiled in and checked by a test; without it lists fall back to the merge keys.
            tracing::error!(%e, "builtin_schema.json does not parse");
            return Types {
                kinds: HashMap::new(),
                types: Vec::new(),
            };
        }
    };
    let ids: HashMap<&str, u32> = file
        .types
        .keys()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i as u32))
        .collect();
    let types = file
        .types
        .values()
        .map(|t| TypeDef {
            atomic: t.a != 0,
            fields: t
                .f
                .iter()
                .map(|(k, r)| (k.clone(), parse(r, &ids)))
                .collect(),
            map_elem: t.m.as_deref().map(|r| parse(r, &ids)),
            zero: t
                .z
                .iter()
                .map(|k| (k.clone(), true))
                .chain(t.n.iter().map(|k| (k.clone(), false)))
                .collect(),
            key_defaults: t.d.clone(),
        })
        .collect();
    let kinds = file
        .kinds
        .iter()
        .filter_map(|(k, t)| Some((k.clone(), Ty::Struct(*ids.get(t.as_str())?))))
        .collect();
    Types { kinds, types }
}

/// `""` scalar, `*` untyped, a type name, `[]T` atomic list, `[s]T` set, `[k=a,b]T` keyed list,
/// `{}T` map, `{a}T` atomic map.
fn parse(r: &str, ids: &HashMap<&str, u32>) -> Ty {
    if let Some(rest) = r.strip_prefix("[]") {
        Ty::List(ListKind::Atomic, Box::new(parse(rest, ids)))
    } else if let Some(rest) = r.strip_prefix("[s]") {
        Ty::List(ListKind::Set, Box::new(parse(rest, ids)))
    } else if let Some(rest) = r.strip_prefix("[k=") {
        let (keys, elem) = rest.split_once(']').unwrap_or((rest, ""));
        let keys = keys.split(',').map(str::to_string).collect();
        Ty::List(ListKind::Keyed(keys), Box::new(parse(elem, ids)))
    } else if let Some(rest) = r.strip_prefix("{}") {
        Ty::Map {
            atomic: false,
            elem: Box::new(parse(rest, ids)),
        }
    } else if let Some(rest) = r.strip_prefix("{a}") {
        Ty::Map {
            atomic: true,
            elem: Box::new(parse(rest, ids)),
        }
    } else if r == "*" {
        Ty::Untyped
    } else {
        ids.get(r).map_or(Ty::Scalar, |&id| Ty::Struct(id))
    }
}

static SCALAR: Ty = Ty::Scalar;
static UNTYPED: Ty = Ty::Untyped;

/// The root type of a built-in kind, e.g. `("apps/v1", "Deployment")`.
pub fn root(api_version: &str, kind: &str) -> Option<&'static Ty> {
    BUILTIN.kinds.get(&format!("{api_version}/{kind}"))
}

impl Types {
    fn def(&self, ty: &Ty) -> Option<&TypeDef> {
        match ty {
            Ty::Struct(id) => self.types.get(*id as usize),
            _ => None,
        }
    }

    /// One step down by an object key; a list is stepped through to its items first.
    fn step<'a>(&'a self, ty: &'a Ty, name: &str) -> &'a Ty {
        match ty {
            Ty::List(_, elem) => self.step(elem, name),
            Ty::Map { elem, .. } => elem,
            Ty::Untyped => &UNTYPED,
            Ty::Struct(_) => match self.def(ty) {
                Some(d) => d
                    .fields
                    .get(name)
                    .or(d.map_elem.as_ref())
                    .unwrap_or(&SCALAR),
                None => &SCALAR,
            },
            Ty::Scalar => &SCALAR,
        }
    }
}

/// The type at `names` (object keys; list items addressed by their list's name) under `root`.
pub fn at(root: &'static Ty, names: &[&str]) -> &'static Ty {
    names.iter().fold(root, |ty, n| BUILTIN.step(ty, n))
}

/// A list's items, or the value itself.
fn item(ty: &'static Ty) -> &'static Ty {
    match ty {
        Ty::List(_, elem) => elem,
        _ => ty,
    }
}

pub fn list_keys(ty: &Ty) -> Option<Vec<String>> {
    match ty {
        Ty::List(ListKind::Set, _) => Some(Vec::new()),
        Ty::List(ListKind::Keyed(keys), _) => Some(keys.clone()),
        _ => None,
    }
}

/// Whether the struct or map (or a list's item) at this type is owned whole.
pub fn atomic(ty: &'static Ty) -> bool {
    match item(ty) {
        Ty::Map { atomic, .. } => *atomic,
        t @ Ty::Struct(_) => BUILTIN.def(t).is_some_and(|d| d.atomic),
        _ => false,
    }
}

/// Whether the object at this type is a map: an apply owns each of its keys, not only leaves.
pub fn is_map(ty: &'static Ty) -> bool {
    match item(ty) {
        Ty::Map { .. } | Ty::Untyped => true,
        t @ Ty::Struct(_) => BUILTIN
            .def(t)
            .is_some_and(|d| d.fields.is_empty() && d.map_elem.is_some()),
        _ => false,
    }
}

/// The value `field` has in a Go zero value of the struct at `parent`, if it has one.
pub fn zero(parent: &'static Ty, field: &str) -> Option<Value> {
    let d = BUILTIN.def(item(parent))?;
    d.zero.get(field).map(|&is_struct| {
        if is_struct {
            Value::Object(Map::new())
        } else {
            Value::Null
        }
    })
}

/// The default of key field `key` of the items of the list at `list`.
pub fn key_default(list: &'static Ty, key: &str) -> Option<Value> {
    BUILTIN.def(item(list))?.key_defaults.get(key).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_loads_and_knows_pods() {
        let pod = root("v1", "Pod").expect("Pod");
        assert_eq!(
            list_keys(at(pod, &["spec", "containers", "ports"])),
            Some(vec!["containerPort".into(), "protocol".into()])
        );
        assert_eq!(list_keys(at(pod, &["spec", "containers", "args"])), None);
        assert_eq!(
            list_keys(at(pod, &["metadata", "finalizers"])),
            Some(vec![])
        );
        assert!(atomic(at(pod, &["metadata", "ownerReferences"])));
        assert!(is_map(at(pod, &["metadata", "labels"])));
        assert!(!is_map(at(pod, &["spec"])));
        assert_eq!(zero(pod, "spec"), Some(Value::Object(Map::new())));
        assert_eq!(zero(at(pod, &["spec"]), "containers"), Some(Value::Null));
        assert_eq!(zero(at(pod, &["spec"]), "securityContext"), None);
        assert_eq!(
            zero(at(pod, &["spec", "containers"]), "resources"),
            Some(Value::Object(Map::new()))
        );
        assert_eq!(
            key_default(at(pod, &["spec", "containers", "ports"]), "protocol"),
            Some(Value::String("TCP".into()))
        );
    }
}
