//! Role-based access control as kube-apiserver's authorizer chain decides it: members of
//! `system:masters` may do anything, everyone else what a (Cluster)RoleBinding grants them. The
//! evaluation is pure: the store hands it the bindings and roles it reads.

use serde_json::Value;

/// Who a request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub groups: Vec<String>,
    /// The whole `userInfo` (uid and extra too), as a SelfSubjectReview shows it.
    pub info: Value,
}

/// The group whose members every authorizer lets through (kube-apiserver's privileged group).
pub const MASTERS: &str = "system:masters";

impl User {
    /// Whoever holds the endpoint's own credentials, and every in-process client.
    pub fn admin() -> Self {
        Self::from_info(serde_json::json!({
            "username": "tollgate-admin",
            "groups": [MASTERS, "system:authenticated"],
        }))
    }

    /// A `userInfo` as TokenReview and SelfSubjectReview show it.
    pub fn from_info(info: Value) -> Self {
        let groups = info["groups"]
            .as_array()
            .map(|g| {
                g.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        User {
            name: str_of(&info, "username").to_string(),
            groups,
            info,
        }
    }

    /// A ServiceAccount's user, with the groups kube-apiserver gives it.
    pub fn service_account(namespace: &str, name: &str) -> Self {
        Self::from_info(serde_json::json!({
            "username": format!("system:serviceaccount:{namespace}:{name}"),
            "groups": [
                "system:serviceaccounts",
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated",
            ],
        }))
    }

    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }
}

/// What a request asks to do, as kube-apiserver's RequestInfo and a SubjectAccessReview's spec
/// name it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    pub verb: String,
    /// A resource request (`/api/v1/...`, `/apis/<g>/<v>/...`) or a path (`/version`, `/api`).
    pub resource_request: bool,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// The URL's path, for requests that are not resource requests.
    pub path: String,
}

/// Where the rules come from: the cluster's RBAC objects, as JSON.
pub trait Policy {
    fn cluster_role_bindings(&self) -> Vec<Value>;
    fn role_bindings(&self, namespace: &str) -> Vec<Value>;
    fn cluster_role(&self, name: &str) -> Option<Value>;
    fn role(&self, namespace: &str, name: &str) -> Option<Value>;
}

/// An authorizer's answer. `reason` says which binding allowed, or why rules could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

/// Whether `user` may do `attrs`, and why.
pub fn authorize(policy: &dyn Policy, user: &User, attrs: &Attributes) -> Decision {
    if user.is_master() {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    let mut errors = Vec::new();
    let mut allowed_by = None;
    visit_rules(policy, user, &attrs.namespace, &mut |visit| match visit {
        Visit::Rule { source, rule } if allows(rule, attrs) => {
            allowed_by = Some(source.to_string());
            false
        }
        Visit::Rule { .. } => true,
        Visit::Error(e) => {
            errors.push(e);
            true
        }
    });
    match allowed_by {
        Some(source) => Decision {
            allowed: true,
            reason: format!("RBAC: allowed by {source}"),
        },
        None => Decision {
            allowed: false,
            // kube-apiserver's authorizer chain names the authorizer (`rbac`) before a reason
            // given with no decision.
            reason: if errors.is_empty() {
                String::new()
            } else {
                format!("rbac: RBAC: {}", aggregate(&errors))
            },
        },
    }
}

/// The rules that apply to `user` in `namespace` (cluster-wide ones included), in the order the
/// bindings grant them, and the errors met on the way, for a SelfSubjectRulesReview.
pub fn rules_for(policy: &dyn Policy, user: &User, namespace: &str) -> (Vec<Value>, Vec<String>) {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    visit_rules(policy, user, namespace, &mut |visit| {
        match visit {
            Visit::Rule { rule, .. } => rules.push(rule.clone()),
            Visit::Error(e) => errors.push(e),
        }
        true
    });
    (rules, errors)
}

/// Go's `utilerrors.NewAggregate(...).Error()`: one error alone, several de-duplicated in `[...]`.
pub fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

enum Visit<'a> {
    Rule { source: &'a str, rule: &'a Value },
    Error(String),
}

/// Every rule granted to `user`: ClusterRoleBindings first, then the namespace's RoleBindings, each
/// binding's rules in order; `visit` returns false to stop. A binding whose role is missing is an
/// error, not a stop.
fn visit_rules(
    policy: &dyn Policy,
    user: &User,
    namespace: &str,
    visit: &mut dyn FnMut(Visit<'_>) -> bool,
) {
    let scopes = std::iter::once((None, policy.cluster_role_bindings()))
        .chain((!namespace.is_empty()).then(|| (Some(namespace), policy.role_bindings(namespace))));
    for (binding_ns, bindings) in scopes {
        for binding in bindings {
            let Some(subject) = applying_subject(user, &binding, binding_ns.unwrap_or("")) else {
                continue;
            };
            let role_ref = &binding["roleRef"];
            let (kind, role_name) = (str_of(role_ref, "kind"), str_of(role_ref, "name"));
            let role = match (kind, binding_ns) {
                ("ClusterRole", _) => policy.cluster_role(role_name).ok_or_else(|| {
                    format!("clusterrole.rbac.authorization.k8s.io \"{role_name}\" not found")
                }),
                ("Role", Some(ns)) => policy.role(ns, role_name).ok_or_else(|| {
                    format!("role.rbac.authorization.k8s.io \"{role_name}\" not found")
                }),
                (kind, _) => Err(format!("unsupported role reference kind: \"{kind}\"")),
            };
            let role = match role {
                Ok(role) => role,
                Err(e) => {
                    if !visit(Visit::Error(e)) {
                        return;
                    }
                    continue;
                }
            };
            let binding_name = str_of(&binding["metadata"], "name");
            let source = match binding_ns {
                None => format!(
                    "ClusterRoleBinding \"{binding_name}\" of {kind} \"{role_name}\" to {}",
                    describe_subject(subject, "")
                ),
                Some(ns) => format!(
                    "RoleBinding \"{binding_name}/{ns}\" of {kind} \"{role_name}\" to {}",
                    describe_subject(subject, ns)
                ),
            };
            for rule in role["rules"].as_array().into_iter().flatten() {
                if !visit(Visit::Rule {
                    source: &source,
                    rule,
                }) {
                    return;
                }
            }
        }
    }
}

/// The first of a binding's subjects that names `user`.
fn applying_subject<'a>(user: &User, binding: &'a Value, namespace: &str) -> Option<&'a Value> {
    binding["subjects"].as_array()?.iter().find(|s| {
        let name = str_of(s, "name");
        match str_of(s, "kind") {
            "User" => user.name == name,
            "Group" => user.groups.iter().any(|g| g == name),
            "ServiceAccount" => {
                // A RoleBinding's subject without a namespace means the binding's own.
                let ns = Some(str_of(s, "namespace"))
                    .filter(|n| !n.is_empty())
                    .unwrap_or(namespace);
                !ns.is_empty() && user.name == format!("system:serviceaccount:{ns}:{name}")
            }
            _ => false,
        }
    })
}

fn describe_subject(subject: &Value, binding_ns: &str) -> String {
    let (kind, name) = (str_of(subject, "kind"), str_of(subject, "name"));
    if kind == "ServiceAccount" {
        let ns = Some(str_of(subject, "namespace"))
            .filter(|n| !n.is_empty())
            .unwrap_or(binding_ns);
        format!("{kind} \"{name}/{ns}\"")
    } else {
        format!("{kind} \"{name}\"")
    }
}

/// Whether one PolicyRule allows the request.
fn allows(rule: &Value, attrs: &Attributes) -> bool {
    let list = |key: &str| -> Vec<&str> {
        rule[key]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    let verb = list("verbs").iter().any(|v| *v == "*" || *v == attrs.verb);
    if !verb {
        return false;
    }
    if !attrs.resource_request {
        return list("nonResourceURLs").iter().any(|url| {
            *url == "*"
                || *url == attrs.path
                || url
                    .strip_suffix('*')
                    .is_some_and(|prefix| attrs.path.starts_with(prefix.trim_end_matches('*')))
        });
    }
    let combined = if attrs.subresource.is_empty() {
        attrs.resource.clone()
    } else {
        format!("{}/{}", attrs.resource, attrs.subresource)
    };
    let names = list("resourceNames");
    list("apiGroups")
        .iter()
        .any(|g| *g == "*" || *g == attrs.group)
        && list("resources").iter().any(|r| {
            *r == "*"
                || *r == combined
                || (!attrs.subresource.is_empty()
                    && r.strip_prefix("*/") == Some(attrs.subresource.as_str()))
        })
        && (names.is_empty() || names.contains(&attrs.name.as_str()))
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

/// kube-apiserver's 403 for a request its authorizers did not allow: `configmaps "x" is
/// forbidden: User "u" cannot get resource "configmaps" in API group "" in the namespace "ns"`,
/// followed by the authorizer's reason when it gave one.
pub fn forbidden_message(user: &User, attrs: &Attributes, reason: &str) -> String {
    let what = if !attrs.resource_request {
        format!(
            "User \"{}\" cannot {} path \"{}\"",
            user.name, attrs.verb, attrs.path
        )
    } else {
        let resource = if attrs.subresource.is_empty() {
            attrs.resource.clone()
        } else {
            format!("{}/{}", attrs.resource, attrs.subresource)
        };
        let scope = if attrs.namespace.is_empty() {
            "at the cluster scope".to_string()
        } else {
            format!("in the namespace \"{}\"", attrs.namespace)
        };
        format!(
            "User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
            user.name, attrs.verb, attrs.group
        )
    };
    // kube-apiserver escapes these three so that the message is safe in HTML.
    let what = what
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    let why = if reason.is_empty() {
        what
    } else {
        format!("{what}: {reason}")
    };
    let qualified = crate::error::qualified_resource(&attrs.group, &attrs.resource);
    if attrs.resource.is_empty() && attrs.group.is_empty() {
        format!("forbidden: {why}")
    } else if attrs.name.is_empty() {
        format!("{qualified} is forbidden: {why}")
    } else {
        format!("{qualified} \"{}\" is forbidden: {why}", attrs.name)
    }
}

#[cfg(test)]
#[path = "rbac_tests.rs"]
mod tests;
