//! Validation of the pod specs inside built-in kinds that real clients trip over: a spec needs
//! containers, each with a unique DNS-label name and an image, and extended resources
//! (`nvidia.com/gpu`, ...) cannot be overcommitted, so a container that requests one must set a
//! limit, and the same amount (kube-apiserver's core validation).

use serde_json::Value;

use crate::error::{CauseReason, FieldCause};

/// Where the pod spec sits in each kind that carries one.
fn pod_spec_path(group: &str, kind: &str) -> Option<&'static [&'static str]> {
    Some(match (group, kind) {
        ("", "Pod") => &["spec"],
        ("", "PodTemplate") => &["template", "spec"],
        ("", "ReplicationController")
        | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job") => &["spec", "template", "spec"],
        ("batch", "CronJob") => &["spec", "jobTemplate", "spec", "template", "spec"],
        _ => return None,
    })
}

/// `cpu`, `memory`, `ephemeral-storage` and `*kubernetes.io/*` may be overcommitted; hugepages
/// and extended resources (any other domain) may not.
fn overcommit_allowed(resource: &str) -> bool {
    let native = !resource.contains('/') || resource.contains("kubernetes.io/");
    native && !resource.starts_with("hugepages-")
}

/// The causes kube-apiserver gives for `obj`'s containers, with its field paths.
pub fn validate(group: &str, kind: &str, obj: &Value) -> Vec<FieldCause> {
    let Some(path) = pod_spec_path(group, kind) else {
        return Vec::new();
    };
    let mut spec = obj;
    for key in path {
        match spec.get(key) {
            Some(v) => spec = v,
            None => return Vec::new(),
        }
    }
    let base = path.join(".");
    let mut causes = Vec::new();
    // Containers before init containers, one set of names for both, as upstream walks them.
    let mut names: Vec<&str> = Vec::new();
    for list in ["containers", "initContainers"] {
        let containers = spec.get(list).and_then(Value::as_array);
        if list == "containers" && containers.is_none_or(Vec::is_empty) {
            causes.push(FieldCause::required(format!("{base}.containers"), ""));
        }
        for (i, c) in containers.into_iter().flatten().enumerate() {
            let at = format!("{base}.{list}[{i}]");
            let name = c["name"].as_str().unwrap_or("");
            if name.is_empty() {
                causes.push(FieldCause::required(format!("{at}.name"), ""));
            } else {
                causes.extend(
                    super::names::is_dns1123_label(name)
                        .iter()
                        .map(|p| FieldCause::invalid(format!("{at}.name"), name, p)),
                );
            }
            if names.contains(&name) {
                causes.push(FieldCause {
                    reason: CauseReason::Duplicate,
                    field: format!("{at}.name"),
                    message: format!("Duplicate value: {}", Value::from(name)),
                });
            } else {
                names.push(name);
            }
            if c["image"].as_str().unwrap_or("").is_empty() {
                causes.push(FieldCause::required(format!("{at}.image"), ""));
            }
            causes.extend(resource_causes(c, &format!("{at}.resources")));
        }
    }
    causes
}

/// Extended resources cannot be overcommitted: a request needs an equal limit.
fn resource_causes(c: &Value, at: &str) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let requests = c["resources"]["requests"].as_object();
    let limits = c["resources"]["limits"].as_object();
    for (name, request) in requests.into_iter().flatten() {
        if overcommit_allowed(name) {
            continue;
        }
        match limits.and_then(|l| l.get(name)) {
            None => causes.push(FieldCause::required(
                format!("{at}.limits"),
                "Limit must be set for non overcommitable resources",
            )),
            Some(limit) if !same_quantity(request, limit) => {
                let request = request.as_str().unwrap_or_default();
                causes.push(FieldCause::invalid(
                    format!("{at}.requests"),
                    request,
                    &format!(
                        "must be equal to {name} limit of {}",
                        limit.as_str().unwrap_or_default()
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    causes
}

/// Whether two quantities are the same amount (`1` and `1000m`, `1Gi` and `1024Mi`).
fn same_quantity(a: &Value, b: &Value) -> bool {
    match (amount(a), amount(b)) {
        (Some(x), Some(y)) => (x - y).abs() <= f64::EPSILON * x.abs().max(y.abs()),
        _ => a == b,
    }
}

fn amount(v: &Value) -> Option<f64> {
    if let Some(n) = v.as_f64() {
        return Some(n);
    }
    let s = v.as_str()?.trim();
    let split = s
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(s.len());
    let (number, suffix) = s.split_at(split);
    let factor = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        _ => return None,
    };
    number.parse::<f64>().ok().map(|n| n * factor)
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    fn template(resources: Value) -> Value {
        json!({"template": {"spec": {"containers": [{"name": "c", "image": "i", "resources": resources}]}}})
    }

    #[rstest]
    #[case::native_without_limits(json!({"requests": {"cpu": "3", "memory": "1Gi"}}), &[])]
    #[case::extended_with_equal_limit(json!({"requests": {"nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": 4}}), &[])]
    #[case::extended_only_limits(json!({"limits": {"nvidia.com/gpu": "4"}}), &[])]
    #[case::extended_without_limit(
        json!({"requests": {"nvidia.com/gpu": "4"}}),
        &["template.spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"]
    )]
    #[case::hugepages_without_limit(
        json!({"requests": {"hugepages-2Mi": "4Mi"}}),
        &["template.spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"]
    )]
    #[case::extended_with_other_limit(
        json!({"requests": {"example.com/fpga": "1"}, "limits": {"example.com/fpga": "2"}}),
        &["template.spec.containers[0].resources.requests: Invalid value: \"1\": must be equal to example.com/fpga limit of 2"]
    )]
    #[case::same_amount_other_spelling(json!({"requests": {"example.com/mem": "1Gi"}, "limits": {"example.com/mem": "1024Mi"}}), &[])]
    fn pod_templates(#[case] resources: Value, #[case] expected: &[&str]) {
        let causes: Vec<String> = validate("", "PodTemplate", &template(resources))
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert_eq!(causes, expected);
    }

    #[test]
    fn a_job_template_is_checked_at_its_own_path() {
        let job = json!({"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "i"}],
            "initContainers": [{"name": "i", "image": "i", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]
        }}}});
        let causes = validate("batch", "Job", &job);
        assert_eq!(causes.len(), 1);
        assert_eq!(
            causes[0].field,
            "spec.template.spec.initContainers[0].resources.limits"
        );
        assert!(validate("", "ConfigMap", &job).is_empty());
    }

    #[test]
    fn containers_need_unique_names_and_images() {
        let pod = |spec: Value| json!({"spec": spec});
        let causes = |spec: Value| -> Vec<String> {
            validate("", "Pod", &pod(spec))
                .into_iter()
                .map(|c| format!("{} {}: {}", c.reason.as_str(), c.field, c.message))
                .collect()
        };
        assert_eq!(
            causes(json!({"containers": []})),
            ["FieldValueRequired spec.containers: Required value"]
        );
        assert_eq!(
            causes(
                json!({"containers": [{"name": "c", "image": "a"}, {"name": "c", "image": ""}],
                "initContainers": [{"name": "c", "image": "b"}]})
            ),
            [
                "FieldValueDuplicate spec.containers[1].name: Duplicate value: \"c\"",
                "FieldValueRequired spec.containers[1].image: Required value",
                "FieldValueDuplicate spec.initContainers[0].name: Duplicate value: \"c\"",
            ]
        );
        assert_eq!(
            causes(json!({"containers": [{"image": "a"}]})),
            ["FieldValueRequired spec.containers[0].name: Required value"]
        );
    }
}
