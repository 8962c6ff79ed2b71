//! Deployments and Jobs: a selector that matches the template's labels, the restart policies
//! each allows, non-negative counts, and what an update may not change.

use serde_json::Value;

use super::{
    go_json, invalid_rendered, label_selector_json, non_negative, selector_is_empty, selects,
};
use crate::error::FieldCause;

const MISMATCH: &str = "`selector` does not match template `labels`";

fn labels_mismatch(template: &Value) -> FieldCause {
    let labels = &template["metadata"]["labels"];
    let rendered = if labels.is_object() {
        go_json(labels)
    } else {
        "null".into()
    };
    invalid_rendered("spec.template.metadata.labels", &rendered, MISMATCH)
}

fn immutable_selector(spec: &Value, old_spec: &Value) -> Option<FieldCause> {
    let (new, old) = (&spec["selector"], &old_spec["selector"]);
    (new != old).then(|| {
        invalid_rendered(
            "spec.selector",
            &label_selector_json(new),
            "field is immutable",
        )
    })
}

pub fn deployment(d: &Value, old: Option<&Value>) -> Vec<FieldCause> {
    let spec = &d["spec"];
    let mut causes = Vec::new();
    causes.extend(non_negative(d, &["spec", "replicas"], "spec.replicas"));
    let selector = &spec["selector"];
    if selector.is_null() {
        causes.push(FieldCause::required("spec.selector", ""));
    } else if selector_is_empty(selector) {
        causes.push(invalid_rendered(
            "spec.selector",
            &label_selector_json(selector),
            "empty selector is invalid for deployment",
        ));
    }
    let template = &spec["template"];
    if !selects(selector, &template["metadata"]["labels"]) {
        causes.push(labels_mismatch(template));
    }
    if let Some(policy) = template["spec"]["restartPolicy"].as_str()
        && policy != "Always"
    {
        causes.push(FieldCause::not_supported(
            "spec.template.spec.restartPolicy",
            policy,
            &["Always"],
        ));
    }
    causes.extend(non_negative(
        d,
        &["spec", "minReadySeconds"],
        "spec.minReadySeconds",
    ));
    causes.extend(non_negative(
        d,
        &["spec", "revisionHistoryLimit"],
        "spec.revisionHistoryLimit",
    ));
    causes.extend(non_negative(
        d,
        &["spec", "progressDeadlineSeconds"],
        "spec.progressDeadlineSeconds",
    ));
    if let Some(deadline) = spec["progressDeadlineSeconds"].as_i64()
        && deadline <= spec["minReadySeconds"].as_i64().unwrap_or(0)
    {
        causes.push(invalid_rendered(
            "spec.progressDeadlineSeconds",
            &deadline.to_string(),
            "must be greater than minReadySeconds",
        ));
    }
    if let Some(old) = old {
        causes.extend(immutable_selector(spec, &old["spec"]));
    }
    causes
}

pub fn job(job: &Value, old: Option<&Value>) -> Vec<FieldCause> {
    let spec = &job["spec"];
    let mut causes = Vec::new();
    for field in ["parallelism", "completions", "backoffLimit"] {
        causes.extend(non_negative(
            job,
            &["spec", field],
            &format!("spec.{field}"),
        ));
    }
    // Always is the pod default, so a template without a policy is refused too.
    let policy = spec["template"]["spec"]["restartPolicy"]
        .as_str()
        .unwrap_or("Always");
    if policy != "OnFailure" && policy != "Never" {
        causes.push(FieldCause::required(
            "spec.template.spec.restartPolicy",
            "valid values: \"OnFailure\", \"Never\"",
        ));
    }
    // Without manualSelector the server generates the selector and the labels that match it.
    let manual = spec["manualSelector"] == Value::Bool(true);
    if manual || old.is_some() {
        let selector = &spec["selector"];
        if selector.is_null() {
            causes.push(FieldCause::required("spec.selector", ""));
        }
        if !selects(selector, &spec["template"]["metadata"]["labels"]) {
            causes.push(labels_mismatch(&spec["template"]));
        }
    }
    if let Some(old) = old {
        let old_spec = &old["spec"];
        if let Some(c) = spec["completions"].as_i64()
            && old_spec["completions"].as_i64() != Some(c)
        {
            causes.push(invalid_rendered(
                "spec.completions",
                &c.to_string(),
                "field is immutable",
            ));
        }
        causes.extend(immutable_selector(spec, old_spec));
        causes.extend(immutable_template(&spec["template"], old));
        let mode = |s: &Value| {
            s["completionMode"]
                .as_str()
                .unwrap_or("NonIndexed")
                .to_string()
        };
        if mode(spec) != mode(old_spec) {
            causes.push(FieldCause::invalid(
                "spec.completionMode",
                &mode(spec),
                "field is immutable",
            ));
        }
    }
    causes
}

/// A Job's pod template is immutable, as kube-apiserver 1.37 decides it (with its default gates
/// MutableSchedulingDirectivesForSuspendedJobs and MutablePodResourcesForSuspendedJobs): a job
/// that is suspended, has no active pods and has never started (or carries `Suspended=True`) may
/// change its scheduling directives (the template's labels and annotations, node selector,
/// tolerations, node affinity and scheduling gates: what Kueue sets when it starts a job and puts
/// back when it stops one) and its containers' resources; any other job, nothing.
fn immutable_template(template: &Value, old: &Value) -> Option<FieldCause> {
    let old_template = &old["spec"]["template"];
    if template == old_template {
        return None;
    }
    let suspended = old["spec"]["suspend"] == Value::Bool(true);
    let mutable = suspended
        && (old["status"]["startTime"].is_null() || suspended_status(old) == "True")
        && old["status"]["active"].as_i64().unwrap_or(0) == 0;
    let mut allowed = old_template.clone();
    if mutable {
        for path in [
            &["metadata", "labels"][..],
            &["metadata", "annotations"],
            &["spec", "nodeSelector"],
            &["spec", "tolerations"],
            &["spec", "schedulingGates"],
            &["spec", "affinity", "nodeAffinity"],
        ] {
            copy_path(template, &mut allowed, path);
        }
        // An affinity emptied by the copy is no affinity.
        if allowed["spec"]["affinity"]
            .as_object()
            .is_some_and(|a| a.is_empty())
            && template["spec"]["affinity"].is_null()
            && let Some(spec) = allowed["spec"].as_object_mut()
        {
            spec.remove("affinity");
        }
        // Only the pod spec is compared then, containers' resources aside.
        for list in ["containers", "initContainers"] {
            // `get_mut`, not indexing: indexing a map would add the key.
            let old = allowed["spec"].get_mut(list).and_then(Value::as_array_mut);
            if let (Some(new), Some(old)) = (template["spec"][list].as_array(), old)
                && new.len() == old.len()
            {
                for (n, o) in new.iter().zip(old.iter_mut()) {
                    if n["name"] == o["name"] {
                        copy_path(n, o, &["resources"]);
                    }
                }
            }
        }
        return (template["spec"] != allowed["spec"]).then(|| {
            invalid_rendered(
                "spec.template.spec",
                &go_json(&template["spec"]),
                "field is immutable",
            )
        });
    }
    (template != &allowed)
        .then(|| invalid_rendered("spec.template", &go_json(template), "field is immutable"))
}

/// Sets `path` in `to` to its value in `from` (removing it where `from` has none).
fn copy_path(from: &Value, to: &mut Value, path: &[&str]) {
    let value = path.iter().fold(from, |v, k| &v[*k]);
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut slot = to;
    for key in parents {
        if !slot[*key].is_object() {
            slot[*key] = Value::Object(Default::default());
        }
        slot = &mut slot[*key];
    }
    match (value.is_null(), slot.as_object_mut()) {
        (true, Some(map)) => {
            map.remove(*last);
        }
        (false, _) => slot[*last] = value.clone(),
        (true, None) => {}
    }
}

/// The causes of a Job's status update (its `/status` subresource).
pub fn job_status(job: &Value, old: &Value) -> Vec<FieldCause> {
    start_time_kept(job, old).into_iter().collect()
}

/// A running job's `status.startTime` stays once set (RejectStartTimeUpdateForUnsuspendedJob),
/// unless the job resumes (its JobSuspended condition goes from True to False).
/// The status of a Job's `Suspended` condition (`Null` without one).
fn suspended_status(job: &Value) -> &Value {
    job["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Suspended")
        .map_or(&Value::Null, |c| &c["status"])
}

fn start_time_kept(job: &Value, old: &Value) -> Option<FieldCause> {
    let (new_start, old_start) = (&job["status"]["startTime"], &old["status"]["startTime"]);
    let suspended = job["spec"]["suspend"] == Value::Bool(true);
    let resuming = suspended_status(old) == "True" && suspended_status(job) == "False";
    if old_start.is_null() || new_start == old_start || suspended || resuming {
        return None;
    }
    // Go prints a *metav1.Time through its String method.
    let rendered = match new_start.as_str() {
        None => "null".to_owned(),
        Some(t) => t
            .parse::<jiff::Timestamp>()
            .map(|t| t.strftime("%Y-%m-%d %H:%M:%S +0000 UTC").to_string())
            .unwrap_or_else(|_| t.to_owned()),
    };
    Some(invalid_rendered(
        "status.startTime",
        &rendered,
        "field is immutable for unsuspended job once set",
    ))
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

    fn template(labels: Value) -> Value {
        json!({"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
    }

    #[test]
    fn deployments_need_a_matching_selector() {
        let d = json!({"spec": {"selector": {"matchLabels": {"app": "d"}}, "template": template(json!({"app": "e"}))}});
        assert_eq!(
            messages(deployment(&d, None)),
            [
                "spec.template.metadata.labels: Invalid value: {\"app\":\"e\"}: `selector` does not match template `labels`"
            ]
        );
        let d = json!({"spec": {"template": template(json!({"app": "e"}))}});
        assert_eq!(
            messages(deployment(&d, None)),
            [
                "spec.selector: Required value",
                "spec.template.metadata.labels: Invalid value: {\"app\":\"e\"}: `selector` does not match template `labels`"
            ]
        );
        let d = json!({"spec": {"selector": {}, "template": template(json!({"app": "e"}))}});
        assert_eq!(
            messages(deployment(&d, None)),
            ["spec.selector: Invalid value: {}: empty selector is invalid for deployment"]
        );
    }

    #[test]
    fn a_deployment_selector_is_immutable() {
        let old = json!({"spec": {"selector": {"matchLabels": {"app": "e"}}, "template": template(json!({"app": "e", "x": "y"}))}});
        let mut new = old.clone();
        new["spec"]["selector"]["matchLabels"]["x"] = json!("y");
        assert_eq!(
            messages(deployment(&new, Some(&old))),
            [
                "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"e\",\"x\":\"y\"}}: field is immutable"
            ]
        );
    }

    #[test]
    fn a_running_jobs_start_time_stays() {
        let job_with = |suspend: bool, start: Value| {
            json!({"spec": {"suspend": suspend, "selector": {"matchLabels": {"a": "b"}},
                            "template": {"metadata": {"labels": {"a": "b"}},
                                         "spec": {"restartPolicy": "Never"}}},
                   "status": {"startTime": start}})
        };
        let started = job_with(false, json!("2026-01-01T00:00:00Z"));
        assert_eq!(
            messages(job_status(&job_with(false, Value::Null), &started)),
            [
                "status.startTime: Invalid value: null: field is immutable for unsuspended job once set"
            ]
        );
        assert!(messages(job_status(&job_with(true, Value::Null), &started)).is_empty());
        assert!(messages(job_status(&started, &job_with(false, Value::Null))).is_empty());
    }

    #[test]
    fn jobs_restart_policies_and_manual_selectors() {
        let j = json!({"spec": {"template": {"spec": {"restartPolicy": "Always"}}}});
        assert_eq!(
            messages(job(&j, None)),
            [
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
            ]
        );
        let j = json!({"spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "c"}}, "spec": {"restartPolicy": "Never"}}}});
        assert_eq!(
            messages(job(&j, None)),
            [
                "spec.template.metadata.labels: Invalid value: {\"a\":\"c\"}: `selector` does not match template `labels`"
            ]
        );
    }
}
