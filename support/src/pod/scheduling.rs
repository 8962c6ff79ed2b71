//! Node matching as kube-scheduler's predicates do it: taints against tolerations, node selector
//! requirements against labels.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, Taint, Toleration};

/// Kubernetes' `Toleration.ToleratesTaint` for the `Equal` (default) and `Exists` operators.
/// The alpha comparison operators (`Gt`, `Lt`) tolerate nothing here.
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    // An empty effect or key matches every taint.
    let differs = |wanted: &Option<String>, actual: &str| {
        wanted
            .as_deref()
            .is_some_and(|w| !w.is_empty() && w != actual)
    };
    if differs(&toleration.effect, &taint.effect) || differs(&toleration.key, &taint.key) {
        return false;
    }
    match toleration.operator.as_deref().unwrap_or("") {
        "" | "Equal" => {
            toleration.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or("")
        }
        "Exists" => true,
        _ => false,
    }
}

/// One node selector requirement against a node's (or flavor's) labels; an invalid requirement
/// (e.g. `Gt` with a non-integer) does not match.
pub fn requirement_matches(
    req: &NodeSelectorRequirement,
    labels: &BTreeMap<String, String>,
) -> bool {
    let value = labels.get(&req.key);
    let values = req.values.as_deref().unwrap_or_default();
    let compare = |want_greater: bool| {
        let (Some(label), [bound]) = (value, values) else {
            return false;
        };
        match (label.parse::<i64>(), bound.parse::<i64>()) {
            (Ok(label), Ok(bound)) if want_greater => label > bound,
            (Ok(label), Ok(bound)) => label < bound,
            _ => false,
        }
    };
    match req.operator.as_str() {
        "In" => value.is_some_and(|v| values.contains(v)),
        "NotIn" => value.is_none_or(|v| !values.contains(v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => compare(true),
        "Lt" => compare(false),
        _ => false,
    }
}
