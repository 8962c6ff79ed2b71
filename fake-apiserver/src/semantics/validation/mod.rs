//! Validation kube-apiserver runs on built-in kinds beyond their metadata and pod specs: Secrets
//! and ConfigMaps, Nodes, Leases, Events, PriorityClasses, Deployments and Jobs, Services and pod
//! updates. Each family answers the causes of kube-apiserver's 422, in its order and words.
//!
//! [`prepare`] first does what kube-apiserver's decoding does to a body before it is validated
//! (a Secret's `stringData` merged into `data`, a Node's `podCIDR` into `podCIDRs`, a Service's
//! allocated cluster IP kept by an update that leaves it out).

mod config;
mod event;
mod lease;
mod node;
mod pod;
mod scheduling;
mod service;
pub mod webhooks;
mod workloads;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::error::{CauseReason, FieldCause};

pub use lease::microtime_error;

/// Rewrite a create (`old` None) or update body as kube-apiserver's decoding does.
pub fn prepare(group: &str, kind: &str, obj: &mut Value, old: Option<&Value>) {
    decode_conversions(group, kind, obj);
    if let (("", "Service"), Some(old)) = ((group, kind), old) {
        service::keep_allocated(obj, old);
    }
}

/// What kube-apiserver's decoder converts as it reads a body (a Secret's stringData into data, a
/// Node's podCIDR and podCIDRs into each other): done before a write's managedFields are
/// recorded, which never see the unconverted fields. Running it twice changes nothing.
pub fn decode_conversions(group: &str, kind: &str, obj: &mut Value) {
    match (group, kind) {
        ("", "Secret") => config::merge_string_data(obj),
        ("", "Node") => node::convert_pod_cidrs(obj),
        _ => {}
    }
}

/// The causes kube-apiserver gives for a create (`old` None) or update of a built-in object of
/// the kind written through `group` (events.k8s.io Events are checked in their core form).
/// `same_kind` lists the stored objects of the same resource, for the checks that need them.
pub fn validate(
    group: &str,
    kind: &str,
    obj: &Value,
    old: Option<&Value>,
    same_kind: &mut dyn Iterator<Item = Arc<Value>>,
) -> Vec<FieldCause> {
    match (kind, old) {
        ("Secret", _) if group.is_empty() => config::secret(obj, old),
        ("ConfigMap", _) if group.is_empty() => config::config_map(obj, old),
        ("Node", None) if group.is_empty() => node::node(obj),
        ("Lease", _) if group == "coordination.k8s.io" => lease::lease(obj),
        ("Event", None) if group.is_empty() || group == "events.k8s.io" => {
            event::create(obj, group == "events.k8s.io")
        }
        ("PriorityClass", _) if group == "scheduling.k8s.io" => {
            scheduling::priority_class(obj, old)
        }
        ("Deployment", _) if group == "apps" => workloads::deployment(obj, old),
        ("Job", _) if group == "batch" => workloads::job(obj, old),
        ("Service", _) if group.is_empty() => service::service(obj, old, same_kind),
        ("Pod", Some(old)) if group.is_empty() => pod::update(obj, old),
        ("MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration", _)
            if group == "admissionregistration.k8s.io" =>
        {
            webhooks::configuration(obj)
        }
        _ => Vec::new(),
    }
}

/// The causes kube-apiserver gives for an update of a built-in object's `/status`.
pub fn validate_status(group: &str, kind: &str, obj: &Value, old: &Value) -> Vec<FieldCause> {
    match kind {
        "Job" if group == "batch" => workloads::job_status(obj, old),
        _ => Vec::new(),
    }
}

/// An Invalid cause whose value is already rendered as Go prints it (`-1`, `{"a":"b"}`, `null`).
fn invalid_rendered(field: impl Into<String>, rendered: &str, detail: &str) -> FieldCause {
    FieldCause {
        reason: CauseReason::Invalid,
        field: field.into(),
        message: format!("Invalid value: {rendered}: {detail}"),
    }
}

fn duplicate(field: impl Into<String>, rendered: &str) -> FieldCause {
    FieldCause {
        reason: CauseReason::Duplicate,
        field: field.into(),
        message: format!("Duplicate value: {rendered}"),
    }
}

/// A JSON value as Go marshals it: compact, map keys sorted.
fn go_json(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, String> =
                m.iter().map(|(k, v)| (k, go_json(v))).collect();
            let parts: Vec<String> = sorted
                .iter()
                .map(|(k, v)| format!("{}:{v}", Value::from(k.as_str())))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(go_json).collect();
            format!("[{}]", parts.join(","))
        }
        other => other.to_string(),
    }
}

/// A LabelSelector as Go marshals the struct: matchLabels, then matchExpressions (key,
/// operator, values), empty ones left out.
fn label_selector_json(sel: &Value) -> String {
    if sel.is_null() {
        return "null".into();
    }
    let mut parts = Vec::new();
    if let Some(ml) = sel["matchLabels"].as_object().filter(|m| !m.is_empty()) {
        parts.push(format!(
            "\"matchLabels\":{}",
            go_json(&Value::Object(ml.clone()))
        ));
    }
    if let Some(exprs) = sel["matchExpressions"].as_array().filter(|a| !a.is_empty()) {
        let rendered: Vec<String> = exprs
            .iter()
            .map(|e| {
                let mut fields = vec![
                    format!("\"key\":{}", Value::from(e["key"].as_str().unwrap_or(""))),
                    format!(
                        "\"operator\":{}",
                        Value::from(e["operator"].as_str().unwrap_or(""))
                    ),
                ];
                if let Some(values) = e["values"].as_array().filter(|v| !v.is_empty()) {
                    fields.push(format!(
                        "\"values\":{}",
                        go_json(&Value::Array(values.clone()))
                    ));
                }
                format!("{{{}}}", fields.join(","))
            })
            .collect();
        parts.push(format!("\"matchExpressions\":[{}]", rendered.join(",")));
    }
    format!("{{{}}}", parts.join(","))
}

/// Whether a LabelSelector has neither labels nor expressions (it selects everything).
fn selector_is_empty(sel: &Value) -> bool {
    sel["matchLabels"].as_object().is_none_or(|m| m.is_empty())
        && sel["matchExpressions"]
            .as_array()
            .is_none_or(|a| a.is_empty())
}

/// Whether a template's labels are selected by its owner's LabelSelector (an empty selector
/// selects everything, a missing one nothing).
fn selects(sel: &Value, labels: &Value) -> bool {
    crate::semantics::selectors::label_selector_selects(sel, labels)
}

/// `field: Invalid value: N: must be greater than or equal to 0` for a negative number.
fn non_negative(obj: &Value, path: &[&str], field: &str) -> Option<FieldCause> {
    let n = path.iter().fold(obj, |v, k| &v[*k]).as_i64()?;
    (n < 0).then(|| invalid_rendered(field, &n.to_string(), "must be greater than or equal to 0"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn go_json_sorts_map_keys() {
        assert_eq!(
            go_json(&json!({"b": "1", "a": {"d": 1, "c": [2]}})),
            r#"{"a":{"c":[2],"d":1},"b":"1"}"#
        );
    }

    #[test]
    fn selectors_render_and_match_as_go() {
        let sel = json!({"matchExpressions": [{"operator": "In", "key": "k", "values": ["a"]}], "matchLabels": {"x": "y"}});
        assert_eq!(
            label_selector_json(&sel),
            r#"{"matchLabels":{"x":"y"},"matchExpressions":[{"key":"k","operator":"In","values":["a"]}]}"#
        );
        assert!(selects(&sel, &json!({"x": "y", "k": "a"})));
        assert!(!selects(&sel, &json!({"x": "y", "k": "b"})));
        assert!(!selects(&Value::Null, &json!({})));
        assert!(selector_is_empty(&json!({})));
    }
}
