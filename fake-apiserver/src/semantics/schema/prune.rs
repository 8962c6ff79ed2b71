//! Pruning of unknown fields.

use serde_json::{Map, Value};

use super::Node;

/// The fields of `metav1.ObjectMeta`; other `metadata` fields are dropped.
const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// One step of the path to a pruned field.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Seg {
    Key(String),
    Index(usize),
}

/// Prunes `v` against `node`, returning the dotted paths of the non-null fields it dropped, in
/// document order. `resource_root` marks the object root and embedded resources, where
/// `apiVersion`, `kind` and `metadata` are handled outside the schema.
pub(super) fn prune_reporting(node: &Node, v: &mut Value, resource_root: bool) -> Vec<String> {
    let mut dropped = Vec::new();
    prune(node, v, resource_root, &mut Vec::new(), &mut dropped);
    // Objects are ordered maps, so the order of the paths is the order of the document.
    dropped.sort();
    dropped.iter().map(|p| spell(p)).collect()
}

fn spell(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) if out.is_empty() => out.push_str(k),
            Seg::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

fn prune(
    node: &Node,
    v: &mut Value,
    resource_root: bool,
    at: &mut Vec<Seg>,
    dropped: &mut Vec<Vec<Seg>>,
) {
    match v {
        Value::Object(m) => prune_object(node, m, resource_root, at, dropped),
        Value::Array(items) => {
            if let Some(item) = node.items.as_deref() {
                for (i, x) in items.iter_mut().enumerate() {
                    at.push(Seg::Index(i));
                    prune(item, x, item.embedded, at, dropped);
                    at.pop();
                }
            }
        }
        _ => {}
    }
}

/// Notes a dropped field; nulls are not reported, as they mean nothing was sent.
fn note(dropped: &mut Vec<Vec<Seg>>, at: &[Seg], k: &str, x: &Value) {
    if !x.is_null() {
        let mut path = at.to_vec();
        path.push(Seg::Key(k.to_string()));
        dropped.push(path);
    }
}

fn prune_object(
    node: &Node,
    m: &mut Map<String, Value>,
    resource_root: bool,
    at: &mut Vec<Seg>,
    dropped: &mut Vec<Vec<Seg>>,
) {
    m.retain(|k, x| {
        let keep = (resource_root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
            || node.properties.contains_key(k)
            || node.additional.is_some()
            || node.preserve_unknown;
        if !keep {
            note(dropped, at, k, x);
        }
        keep
    });
    for (k, x) in m.iter_mut() {
        if resource_root {
            match k.as_str() {
                "metadata" => {
                    if let Value::Object(meta) = x {
                        at.push(Seg::Key(k.clone()));
                        meta.retain(|mk, mx| {
                            let keep = OBJECT_META_FIELDS.contains(&mk.as_str());
                            if !keep {
                                note(dropped, at, mk, mx);
                            }
                            keep
                        });
                        at.pop();
                    }
                    continue;
                }
                "apiVersion" | "kind" => continue,
                _ => {}
            }
        }
        if let Some(sub) = node.child(k) {
            at.push(Seg::Key(k.clone()));
            prune(sub, x, sub.embedded, at, dropped);
            at.pop();
        }
    }
}
