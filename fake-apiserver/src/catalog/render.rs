//! An object as a client of one version of its kind sees it: converted from the stored form,
//! typed, and (for custom resources) pruned or defaulted by that version's schema.

use serde_json::{Value, json};

use super::ResourceType;

/// The object as a client of `rt`'s version sees it.
pub fn render(rt: &ResourceType, stored: &Value) -> Value {
    render_ref(rt, stored).into_owned()
}

/// [`render`], borrowing the stored object when it already is what a client sees: stored in this
/// version, with every schema default in place (as writes leave it, unless the CRD changed since).
pub fn render_ref<'a>(rt: &ResourceType, stored: &'a Value) -> std::borrow::Cow<'a, Value> {
    if rt.behavior.convert.is_none()
        && stored.get("apiVersion").and_then(Value::as_str) == Some(rt.api_version().as_str())
        && stored.get("kind").and_then(Value::as_str) == Some(rt.kind.as_str())
        && rt
            .structural
            .as_ref()
            .is_none_or(|schema| !schema.needs_defaults(stored))
    {
        return std::borrow::Cow::Borrowed(stored);
    }
    std::borrow::Cow::Owned(render_owned(rt, stored))
}

fn render_owned(rt: &ResourceType, stored: &Value) -> Value {
    let mut out = match rt.behavior.convert {
        Some(c) => (c.from_storage)(stored),
        None => stored.clone(),
    };
    let converted = out.get("apiVersion").and_then(Value::as_str) != Some(&rt.api_version());
    out["apiVersion"] = json!(rt.api_version());
    out["kind"] = json!(rt.kind);
    if let Some(schema) = &rt.structural {
        if converted {
            // Another version's object: apiextensions-apiserver prunes what this version's schema
            // does not know (its defaults are those of the stored version, applied on write).
            schema.prune(&mut out);
        } else {
            // Like the real server, schema defaults also apply on read: objects stored before a
            // default was added to the CRD show it.
            schema.apply_defaults(&mut out);
        }
    }
    out
}
