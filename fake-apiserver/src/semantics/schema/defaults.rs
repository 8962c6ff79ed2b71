//! Defaulting, with the real server's removal of non-nullable nulls.

use serde_json::Value;

use super::Node;

fn non_nullable_null(x: &Value, node: &Node) -> bool {
    x.is_null() && !node.nullable
}

/// Removes nulls where the schema is not nullable and has no default.
pub(super) fn prune_nulls(node: Option<&Node>, v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, x| {
                let sub = node.and_then(|n| n.child(k));
                !matches!(sub, Some(s) if non_nullable_null(x, s) && s.default.is_none())
            });
            for (k, x) in m.iter_mut() {
                prune_nulls(node.and_then(|n| n.child(k)), x);
            }
        }
        Value::Array(items) => {
            let item = node.and_then(|n| n.items.as_deref());
            for x in items {
                prune_nulls(item, x);
            }
        }
        _ => {}
    }
}

/// Whether [`prune_nulls`] then [`apply`] would change `v`: a non-nullable null to drop or to
/// default, or an absent property with a default.
pub(super) fn needed(node: Option<&Node>, v: &Value) -> bool {
    let Some(node) = node else {
        return false;
    };
    match v {
        Value::Object(m) => {
            node.properties
                .iter()
                .any(|(k, sub)| sub.default.is_some() && !m.contains_key(k))
                || m.iter().any(|(k, x)| match node.child(k) {
                    Some(sub) if non_nullable_null(x, sub) => true,
                    sub => needed(sub, x),
                })
        }
        Value::Array(items) => items.iter().any(|x| needed(node.items.as_deref(), x)),
        _ => false,
    }
}

/// Sets defaults on absent (or non-nullable null) properties, then recurses.
pub(super) fn apply(node: &Node, v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, sub) in &node.properties {
                let Some(d) = &sub.default else { continue };
                match m.get(k) {
                    Some(x) if !non_nullable_null(x, sub) => {}
                    _ => {
                        m.insert(k.clone(), d.clone());
                    }
                }
            }
            for (k, x) in m.iter_mut() {
                if let Some(sub) = node.child(k) {
                    apply(sub, x);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = node.items.as_deref() {
                for x in items {
                    apply(item, x);
                }
            }
        }
        _ => {}
    }
}
