//! PriorityClasses: the reserved `system-` names, the highest value a user may give, the
//! preemption policies, and the value and policy that never change.

use serde_json::Value;

use crate::error::FieldCause;

const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;
/// The system classes: name, value, globalDefault.
const SYSTEM_CLASSES: &[(&str, i64)] = &[
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];
const POLICIES: &[&str] = &["PreemptLowerPriority", "Never"];

/// The policy, defaulted as kube-apiserver stores it.
fn policy(pc: &Value) -> &str {
    pc["preemptionPolicy"]
        .as_str()
        .unwrap_or("PreemptLowerPriority")
}

pub fn priority_class(pc: &Value, old: Option<&Value>) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let value = pc["value"].as_i64().unwrap_or(0);
    if let Some(old) = old {
        // An update checks only what may not change.
        if value != old["value"].as_i64().unwrap_or(0) {
            causes.push(FieldCause::forbidden(
                "value",
                "may not be changed in an update.",
            ));
        }
        if policy(pc) != policy(old) {
            causes.push(FieldCause::invalid(
                "preemptionPolicy",
                policy(pc),
                "field is immutable",
            ));
        }
        return causes;
    }
    let name = pc["metadata"]["name"].as_str().unwrap_or("");
    if name.starts_with("system-") {
        let global_default = pc["globalDefault"].as_bool().unwrap_or(false);
        let problem = match SYSTEM_CLASSES.iter().find(|(n, _)| *n == name) {
            None => Some(format!("{name} is not a known system priority class")),
            Some((_, v)) if *v != value => {
                Some(format!("value of {name} PriorityClass must be {v}"))
            }
            Some(_) if global_default => Some(format!(
                "globalDefault of {name} PriorityClass must be false"
            )),
            Some(_) => None,
        };
        if let Some(problem) = problem {
            causes.push(FieldCause::forbidden(
                "metadata.name",
                &format!(
                    "priority class names with 'system-' prefix are reserved for system use only. error: {problem}"
                ),
            ));
        }
    } else if value > HIGHEST_USER_PRIORITY {
        causes.push(FieldCause::forbidden(
            "value",
            &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        ));
    }
    if let Some(p) = pc["preemptionPolicy"].as_str()
        && !POLICIES.contains(&p)
    {
        causes.push(FieldCause::not_supported("preemptionPolicy", p, POLICIES));
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
    fn values_names_and_policies() {
        assert_eq!(
            messages(priority_class(
                &json!({"metadata": {"name": "hi"}, "value": 2_000_000_000, "preemptionPolicy": "Sometimes"}),
                None
            )),
            [
                "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
                "preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"PreemptLowerPriority\", \"Never\"",
            ]
        );
        assert_eq!(
            messages(priority_class(
                &json!({"metadata": {"name": "system-x"}, "value": 10}),
                None
            )),
            [
                "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-x is not a known system priority class"
            ]
        );
        assert!(
            priority_class(
                &json!({"metadata": {"name": "system-node-critical"}, "value": 2_000_001_000}),
                None
            )
            .is_empty()
        );
    }

    #[test]
    fn value_and_policy_are_immutable() {
        let old = json!({"value": 1000});
        assert_eq!(
            messages(priority_class(
                &json!({"value": 2000, "preemptionPolicy": "Never"}),
                Some(&old)
            )),
            [
                "value: Forbidden: may not be changed in an update.",
                "preemptionPolicy: Invalid value: \"Never\": field is immutable",
            ]
        );
        assert!(
            priority_class(
                &json!({"value": 1000, "preemptionPolicy": "PreemptLowerPriority"}),
                Some(&old)
            )
            .is_empty()
        );
    }
}
