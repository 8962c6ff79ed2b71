//! Events, created through core/v1 (lenient, for old clients) or events.k8s.io/v1 (strict),
//! checked in their core form as kube-apiserver does.

use serde_json::Value;

use crate::error::FieldCause;
use crate::semantics::names;

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

fn is_set(v: &Value) -> bool {
    v.as_str().is_some_and(|s| !s.is_empty())
}

fn too_long(field: &str, len: usize, limit: usize) -> Option<FieldCause> {
    (len > limit)
        .then(|| FieldCause::invalid(field, "", &format!("can have at most {limit} characters")))
}

pub fn create(event: &Value, events_v1: bool) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let ns = event["metadata"]["namespace"].as_str().unwrap_or("");
    let involved_ns = event["involvedObject"]["namespace"].as_str().unwrap_or("");
    let mismatch = || {
        FieldCause::invalid(
            "involvedObject.namespace",
            involved_ns,
            "does not match event.namespace",
        )
    };
    let controller_field = if events_v1 {
        "reportingController"
    } else {
        "reportingComponent"
    };
    if !is_set(&event["eventTime"]) {
        // An old-style event: its namespace and its object's must agree.
        if involved_ns.is_empty() {
            if !ns.is_empty() && ns != "default" {
                causes.push(mismatch());
            }
        } else if ns != involved_ns {
            causes.push(mismatch());
        }
    } else {
        if involved_ns.is_empty() && ns != "default" && ns != "kube-system" {
            causes.push(mismatch());
        }
        let controller = text(event, "reportingComponent");
        if controller.is_empty() {
            causes.push(FieldCause::required(controller_field, ""));
        }
        causes.extend(
            names::is_qualified_name(controller)
                .iter()
                .map(|m| FieldCause::invalid(controller_field, controller, m)),
        );
        let instance = text(event, "reportingInstance");
        if instance.is_empty() {
            causes.push(FieldCause::required("reportingInstance", ""));
        }
        causes.extend(too_long("reportingInstance", instance.len(), 128));
        let action = text(event, "action");
        if action.is_empty() {
            causes.push(FieldCause::required("action", ""));
        }
        causes.extend(too_long("action", action.len(), 128));
        let reason = text(event, "reason");
        if reason.is_empty() {
            causes.push(FieldCause::required("reason", ""));
        }
        causes.extend(too_long("reason", reason.len(), 128));
        causes.extend(too_long("message", text(event, "message").len(), 1024));
    }
    if !events_v1 {
        return causes;
    }
    // events.k8s.io/v1 and newer add the strict rules.
    if let Some(series) = event.get("series").filter(|s| s.is_object()) {
        if series["count"].as_i64().unwrap_or(0) < 2 {
            causes.push(FieldCause::invalid(
                "series.count",
                "",
                "should be at least 2",
            ));
        }
        if !is_set(&series["lastObservedTime"]) {
            causes.push(FieldCause::required("series.lastObservedTime", ""));
        }
    }
    if !is_set(&event["eventTime"]) {
        causes.push(FieldCause::required("eventTime", ""));
    }
    let kind = text(event, "type");
    if kind != "Normal" && kind != "Warning" {
        causes.push(FieldCause::invalid(
            "type",
            "",
            &format!("has invalid value: {kind}"),
        ));
    }
    for field in ["firstTimestamp", "lastTimestamp"] {
        if is_set(&event[field]) {
            causes.push(FieldCause::invalid(field, "", "needs to be unset"));
        }
    }
    if event["count"].as_i64().unwrap_or(0) != 0 {
        causes.push(FieldCause::invalid("count", "", "needs to be unset"));
    }
    if is_set(&event["source"]["component"]) || is_set(&event["source"]["host"]) {
        causes.push(FieldCause::invalid("source", "", "needs to be unset"));
    }
    causes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(causes: Vec<FieldCause>) -> Vec<String> {
        causes
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn events_v1_needs_time_and_type() {
        let e = json!({"metadata": {"namespace": "ns"}, "reason": "R"});
        assert_eq!(
            messages(create(&e, true)),
            [
                "involvedObject.namespace: Invalid value: \"\": does not match event.namespace",
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: ",
            ]
        );
    }

    #[test]
    fn core_events_only_check_the_namespace() {
        let e = json!({"metadata": {"namespace": "ns"}, "involvedObject": {"namespace": "other"}, "type": "Bad"});
        assert_eq!(
            messages(create(&e, false)),
            ["involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"]
        );
        let ok = json!({"metadata": {"namespace": "ns"}, "involvedObject": {"namespace": "ns"}});
        assert!(create(&ok, false).is_empty());
    }
}
