//! Which webhooks a request is sent to: `rules` (with `matchPolicy`), then, call by call,
//! `namespaceSelector`, `objectSelector` and `matchConditions`, as kube-apiserver decides.

use std::sync::Arc;

use serde_json::{Value, json};

use super::config::{FailurePolicy, Hook, MatchPolicy, Rule};
use super::request::{NamespaceLabels, Operation};
use crate::catalog::ResourceType;
use crate::semantics::schema::AdmissionExpression;
use crate::semantics::selectors::label_selector_selects;

/// The version `hook` is shown a request in: the request's own when a rule names it; under
/// `matchPolicy: Equivalent`, another version (or group) of the same stored resource that a
/// rule names, the object converted to it. `None`: the hook does not apply.
pub fn version_for(
    hook: &Hook,
    request: &Arc<ResourceType>,
    sub: &str,
    op: Operation,
    same_resource: &[Arc<ResourceType>],
) -> Option<Arc<ResourceType>> {
    let named = |rt: &ResourceType| hook.rules.iter().any(|r| rule_matches(r, rt, sub, op));
    if named(request) {
        return Some(request.clone());
    }
    if hook.match_policy == MatchPolicy::Exact {
        return None;
    }
    same_resource
        .iter()
        .filter(|rt| rt.group != request.group || rt.version != request.version)
        .find(|rt| named(rt))
        .cloned()
}

fn rule_matches(rule: &Rule, rt: &ResourceType, sub: &str, op: Operation) -> bool {
    let listed = |list: &[String], v: &str| list.iter().any(|x| x == "*" || x == v);
    listed(&rule.operations, op.as_str())
        && listed(&rule.groups, &rt.group)
        && listed(&rule.versions, &rt.version)
        && rule.resources.iter().any(|r| {
            let (resource, subresource) = r.split_once('/').unwrap_or((r.as_str(), ""));
            (resource == "*" || resource == rt.plural) && (subresource == "*" || subresource == sub)
        })
        && scope_matches(&rule.scope, rt)
}

/// A Namespace is cluster-scoped, whatever namespace its requests carry.
fn scope_matches(scope: &str, rt: &ResourceType) -> bool {
    let namespace_object = rt.group.is_empty() && rt.plural == "namespaces";
    match scope {
        "Cluster" => !rt.namespaced || namespace_object,
        "Namespaced" => rt.namespaced && !namespace_object,
        _ => true,
    }
}

/// Whether to call a webhook, decided just before its call (an earlier webhook's patch may have
/// changed the labels it selects on).
#[derive(Debug, PartialEq)]
pub enum Decision {
    Call,
    Skip,
    /// A non-empty namespaceSelector and no such namespace: the request fails with 404, whatever
    /// the failurePolicy.
    NamespaceMissing(String),
    /// No condition was false but some failed to evaluate, under `failurePolicy: Fail`: the
    /// request is forbidden, for these reasons (`[a, b]` when several).
    ConditionsFailed(String),
}

/// The selectors and conditions of `hook` for a request showing `object` and `old` (in the
/// hook's version) and the AdmissionRequest `request`.
pub fn decide(
    hook: &Hook,
    namespace: &NamespaceLabels,
    object: Option<&Value>,
    old: Option<&Value>,
    request: &Value,
) -> Decision {
    match namespace {
        NamespaceLabels::NotApplicable => {}
        NamespaceLabels::Labels(labels) => {
            if !label_selector_selects(&hook.namespace_selector, &Value::Object(labels.clone())) {
                return Decision::Skip;
            }
        }
        NamespaceLabels::Missing(ns) => {
            // An empty selector matches without looking the namespace up.
            if !selects_everything(&hook.namespace_selector) {
                return Decision::NamespaceMissing(ns.clone());
            }
        }
    }
    let labels = |o: Option<&Value>| {
        o.map(|o| o["metadata"]["labels"].clone())
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}))
    };
    // The object selector matches if it selects the object or the object it replaces.
    let selected = selects_everything(&hook.object_selector)
        || [object, old]
            .into_iter()
            .flatten()
            .any(|o| label_selector_selects(&hook.object_selector, &labels(Some(o))));
    if !selected {
        return Decision::Skip;
    }
    conditions(hook, object, old, request)
}

fn selects_everything(selector: &Value) -> bool {
    let empty = |k: &str| {
        selector.get(k).is_none_or(|v| {
            v.is_null()
                || v.as_object().is_some_and(|m| m.is_empty())
                || v.as_array().is_some_and(|a| a.is_empty())
        })
    };
    empty("matchLabels") && empty("matchExpressions")
}

/// `matchConditions`: every one must hold. One that is false skips the webhook; one that fails
/// to evaluate fails the request under `failurePolicy: Fail`, skips the webhook under Ignore.
fn conditions(
    hook: &Hook,
    object: Option<&Value>,
    old: Option<&Value>,
    request: &Value,
) -> Decision {
    let null = Value::Null;
    let vars = [
        ("object", object.unwrap_or(&null)),
        ("oldObject", old.unwrap_or(&null)),
        ("request", request),
    ];
    let mut failed: Vec<String> = Vec::new();
    for (_, expression) in &hook.match_conditions {
        let result = AdmissionExpression::compile(expression)
            .and_then(|compiled| compiled.evaluate_bool(&vars));
        match result {
            Ok(true) => {}
            // The first false skips the webhook, whatever failed before it.
            Ok(false) => return Decision::Skip,
            Err(why) => {
                let error = format!("expression '{expression}' resulted in error: {why}");
                if !failed.contains(&error) {
                    failed.push(error);
                }
            }
        }
    }
    if failed.is_empty() {
        return Decision::Call;
    }
    match hook.failure_policy {
        FailurePolicy::Ignore => Decision::Skip,
        FailurePolicy::Fail if failed.len() == 1 => Decision::ConditionsFailed(failed.remove(0)),
        FailurePolicy::Fail => Decision::ConditionsFailed(format!("[{}]", failed.join(", "))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;

    fn rule(resources: &[&str], scope: &str) -> Rule {
        let all = vec!["*".to_string()];
        Rule {
            operations: all.clone(),
            groups: all.clone(),
            versions: all,
            resources: resources.iter().map(|r| r.to_string()).collect(),
            scope: scope.into(),
        }
    }

    fn rt(group: &str, version: &str, plural: &str) -> Arc<ResourceType> {
        Catalog::builtin()
            .lookup(group, version, plural)
            .unwrap_or_else(|| panic!("{group}/{version} {plural}"))
    }

    #[test]
    fn a_resource_entry_names_its_subresources_only_when_it_says_so() {
        let pods = rt("", "v1", "pods");
        let matches = |entry: &str, sub: &str| {
            rule_matches(&rule(&[entry], "*"), &pods, sub, Operation::Update)
        };
        assert!(matches("pods", ""));
        assert!(!matches("pods", "status"));
        assert!(matches("pods/status", "status"));
        assert!(!matches("pods/status", ""));
        assert!(matches("pods/*", "") && matches("pods/*", "status"));
        assert!(matches("*", "") && !matches("*", "status"));
        assert!(matches("*/*", "status"));
        assert!(matches("*/status", "status") && !matches("*/scale", "status"));
    }

    #[test]
    fn a_namespace_is_cluster_scoped_and_a_configmap_namespaced() {
        let namespaces = rt("", "v1", "namespaces");
        let configmaps = rt("", "v1", "configmaps");
        let nodes = rt("", "v1", "nodes");
        let scoped = |scope: &str, rt: &ResourceType| {
            rule_matches(&rule(&["*"], scope), rt, "", Operation::Create)
        };
        assert!(scoped("Cluster", &namespaces) && !scoped("Namespaced", &namespaces));
        assert!(scoped("Cluster", &nodes) && !scoped("Namespaced", &nodes));
        assert!(scoped("Namespaced", &configmaps) && !scoped("Cluster", &configmaps));
        assert!(scoped("*", &configmaps) && scoped("*", &namespaces));
    }
}
