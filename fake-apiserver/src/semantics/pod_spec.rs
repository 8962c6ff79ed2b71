//! Validation of the pod specs inside built-in kinds that real clients trip over. Today: extended
//! resources (`nvidia.com/gpu`, ...) cannot be overcommitted, so a container that requests one
//! must set a limit, and the same amount (kube-apiserver's core validation).

use serde_json::Value;

use crate::error::FieldCause;

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
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get(list).and_then(Value::as_array) else {
            continue;
        };
        for (i, c) in containers.iter().enumerate() {
            let at = format!("{base}.{list}[{i}].resources");
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
        json!({"template": {"spec": {"containers": [{"name": "c", "resources": resources}]}}})
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
        let job = json!({"spec": {"template": {"spec": {"initContainers": [
            {"name": "i", "resources": {"requests": {"nvidia.com/gpu": "1"}}}
        ]}}}});
        let causes = validate("batch", "Job", &job);
        assert_eq!(causes.len(), 1);
        assert_eq!(
            causes[0].field,
            "spec.template.spec.initContainers[0].resources.limits"
        );
        assert!(validate("", "ConfigMap", &job).is_empty());
    }
}
