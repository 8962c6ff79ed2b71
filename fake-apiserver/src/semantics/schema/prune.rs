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

/// Prunes `v` against `node`. `resource_root` marks the object root and embedded resources,
/// where `apiVersion`, `kind` and `metadata` are handled outside the schema.
pub(super) fn prune(node: &Node, v: &mut Value, resource_root: bool) {
    match v {
        Value::Object(m) => prune_object(node, m, resource_root),
        Value::Array(items) => {
            if let Some(item) = node.items.as_deref() {
                for x in items {
                    prune(item, x, item.embedded);
                }
            }
        }
        _ => {}
    }
}

fn prune_object(node: &Node, m: &mut Map<String, Value>, resource_root: bool) {
    m.retain(|k, _| {
        (resource_root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata"))
            || node.properties.contains_key(k)
            || node.additional.is_some()
            || node.preserve_unknown
    });
    for (k, x) in m.iter_mut() {
        if resource_root {
            match k.as_str() {
                "metadata" => {
                    if let Value::Object(meta) = x {
                        meta.retain(|mk, _| OBJECT_META_FIELDS.contains(&mk.as_str()));
                    }
                    continue;
                }
                "apiVersion" | "kind" => continue,
                _ => {}
            }
        }
        if let Some(sub) = node.child(k) {
            prune(sub, x, sub.embedded);
        }
    }
}
