use rstest::rstest;
use serde_json::{Value, json};

use super::*;

/// A cluster's RBAC objects, by hand.
#[derive(Default)]
struct Objects {
    cluster_role_bindings: Vec<Value>,
    role_bindings: Vec<(String, Value)>,
    cluster_roles: Vec<Value>,
    roles: Vec<(String, Value)>,
}

fn named<'a>(list: impl IntoIterator<Item = &'a Value>, name: &str) -> Option<Value> {
    list.into_iter()
        .find(|o| o["metadata"]["name"] == name)
        .cloned()
}

impl Policy for Objects {
    fn cluster_role_bindings(&self) -> Vec<Value> {
        self.cluster_role_bindings.clone()
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Value> {
        let in_ns = self.role_bindings.iter().filter(|(ns, _)| ns == namespace);
        in_ns.map(|(_, b)| b.clone()).collect()
    }
    fn cluster_role(&self, name: &str) -> Option<Value> {
        named(&self.cluster_roles, name)
    }
    fn role(&self, namespace: &str, name: &str) -> Option<Value> {
        named(
            self.roles
                .iter()
                .filter(|(ns, _)| ns == namespace)
                .map(|(_, r)| r),
            name,
        )
    }
}

fn role(name: &str, rules: Value) -> Value {
    json!({"metadata": {"name": name}, "rules": rules})
}

fn binding(name: &str, kind: &str, role: &str, subjects: Value) -> Value {
    json!({"metadata": {"name": name}, "roleRef": {"kind": kind, "name": role}, "subjects": subjects})
}

fn account(ns: &str, name: &str) -> User {
    User::service_account(ns, name)
}

fn get(group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
    Attributes {
        verb: "get".into(),
        resource_request: true,
        group: group.into(),
        resource: resource.into(),
        namespace: ns.into(),
        name: name.into(),
        ..Default::default()
    }
}

/// A reader of ConfigMaps in `ns`, bound to the ServiceAccount `ns/reader`.
fn config_map_reader(ns: &str) -> Objects {
    Objects {
        roles: vec![(
            ns.into(),
            role(
                "read",
                json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
            ),
        )],
        role_bindings: vec![(
            ns.into(),
            binding(
                "read",
                "Role",
                "read",
                json!([{"kind": "ServiceAccount", "name": "reader"}]),
            ),
        )],
        ..Default::default()
    }
}

#[test]
fn a_role_binding_grants_its_roles_rules_in_its_namespace_only() {
    let objects = config_map_reader("a");
    let reader = account("a", "reader");
    let allowed = authorize(&objects, &reader, &get("", "configmaps", "a", "x"));
    assert_eq!(
        allowed,
        Decision {
            allowed: true,
            reason: "RBAC: allowed by RoleBinding \"read/a\" of Role \"read\" to ServiceAccount \"reader/a\"".into()
        }
    );
    for attrs in [
        get("", "configmaps", "b", "x"),
        get("", "secrets", "a", "x"),
        get("apps", "configmaps", "a", "x"),
        Attributes {
            verb: "delete".into(),
            ..get("", "configmaps", "a", "x")
        },
    ] {
        assert!(!authorize(&objects, &reader, &attrs).allowed, "{attrs:?}");
    }
    // Another account of the same name elsewhere is someone else.
    assert!(
        !authorize(
            &objects,
            &account("b", "reader"),
            &get("", "configmaps", "a", "x")
        )
        .allowed
    );
}

#[test]
fn masters_may_do_anything_without_a_reason() {
    let admin = User::admin();
    let decision = authorize(&Objects::default(), &admin, &get("", "secrets", "a", "x"));
    assert_eq!(
        decision,
        Decision {
            allowed: true,
            reason: String::new()
        }
    );
}

#[test]
fn a_missing_role_is_the_reason_of_a_refusal() {
    let mut objects = config_map_reader("a");
    objects.roles.clear();
    objects.cluster_role_bindings.push(binding(
        "gone",
        "ClusterRole",
        "gone",
        json!([{"kind": "Group", "name": "system:serviceaccounts"}]),
    ));
    let decision = authorize(
        &objects,
        &account("a", "reader"),
        &get("", "configmaps", "a", "x"),
    );
    assert_eq!(
        decision.reason,
        "rbac: RBAC: [clusterrole.rbac.authorization.k8s.io \"gone\" not found, role.rbac.authorization.k8s.io \"read\" not found]"
    );
    assert!(!decision.allowed);
}

#[rstest]
#[case::exact(json!(["pods/log"]), "pods", "log", true)]
#[case::any_resources_subresource(json!(["*/log"]), "pods", "log", true)]
#[case::main_resource_is_not_its_subresource(json!(["pods"]), "pods", "log", false)]
#[case::star(json!(["*"]), "pods", "log", true)]
#[case::star_subresource_needs_one(json!(["*/log"]), "pods", "", false)]
fn resources_match_as_kube_apiserver_matches_them(
    #[case] resources: Value,
    #[case] resource: &str,
    #[case] subresource: &str,
    #[case] allowed: bool,
) {
    let objects = Objects {
        cluster_roles: vec![role(
            "r",
            json!([{"apiGroups": ["*"], "resources": resources, "verbs": ["*"]}]),
        )],
        cluster_role_bindings: vec![binding(
            "b",
            "ClusterRole",
            "r",
            json!([{"kind": "User", "name": "u"}]),
        )],
        ..Default::default()
    };
    let user = User {
        name: "u".into(),
        groups: vec![],
        info: Value::Null,
    };
    let attrs = Attributes {
        subresource: subresource.into(),
        ..get("", resource, "ns", "p")
    };
    assert_eq!(authorize(&objects, &user, &attrs).allowed, allowed);
}

#[rstest]
#[case::exact("/healthz", "/healthz", true)]
#[case::prefix("/apis/*", "/apis/batch", true)]
#[case::prefix_is_a_prefix("/api*", "/apis", true)]
#[case::other("/healthz", "/livez", false)]
fn paths_match_exactly_or_by_a_trailing_star(
    #[case] rule: &str,
    #[case] path: &str,
    #[case] allowed: bool,
) {
    let objects = Objects {
        cluster_roles: vec![role(
            "r",
            json!([{"nonResourceURLs": [rule], "verbs": ["get"]}]),
        )],
        cluster_role_bindings: vec![binding(
            "b",
            "ClusterRole",
            "r",
            json!([{"kind": "Group", "name": "system:authenticated"}]),
        )],
        ..Default::default()
    };
    let attrs = Attributes {
        verb: "get".into(),
        path: path.into(),
        ..Default::default()
    };
    assert_eq!(
        authorize(&objects, &account("a", "b"), &attrs).allowed,
        allowed
    );
}

#[test]
fn resource_names_narrow_a_rule() {
    let objects = Objects {
        cluster_roles: vec![role(
            "r",
            json!([{"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["one"], "verbs": ["get"]}]),
        )],
        cluster_role_bindings: vec![binding(
            "b",
            "ClusterRole",
            "r",
            json!([{"kind": "ServiceAccount", "name": "s", "namespace": "a"}]),
        )],
        ..Default::default()
    };
    let user = account("a", "s");
    assert!(authorize(&objects, &user, &get("", "configmaps", "z", "one")).allowed);
    assert!(!authorize(&objects, &user, &get("", "configmaps", "z", "two")).allowed);
    // A cluster-wide binding of a ServiceAccount names its namespace, so this one is not "s" of "z".
    assert!(
        !authorize(
            &objects,
            &account("z", "s"),
            &get("", "configmaps", "z", "one")
        )
        .allowed
    );
}

#[rstest]
#[case::named(
    get("", "configmaps", "ns", "x"),
    "configmaps \"x\" is forbidden: User \"system:serviceaccount:a:b\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"ns\""
)]
#[case::list_cluster_wide(Attributes { verb: "list".into(), name: String::new(), ..get("batch", "jobs", "", "") }, "jobs.batch is forbidden: User \"system:serviceaccount:a:b\" cannot list resource \"jobs\" in API group \"batch\" at the cluster scope")]
#[case::subresource(Attributes { subresource: "status".into(), ..get("batch", "jobs", "ns", "j") }, "jobs.batch \"j\" is forbidden: User \"system:serviceaccount:a:b\" cannot get resource \"jobs/status\" in API group \"batch\" in the namespace \"ns\"")]
#[case::path(Attributes { verb: "post".into(), path: "/x<y>".into(), ..Default::default() }, "forbidden: User \"system:serviceaccount:a:b\" cannot post path \"/x&lt;y&gt;\"")]
fn refusals_are_worded_as_kube_apiserver_words_them(
    #[case] attrs: Attributes,
    #[case] message: &str,
) {
    assert_eq!(forbidden_message(&account("a", "b"), &attrs, ""), message);
}

#[test]
fn rules_for_lists_what_applies_in_order() {
    let mut objects = config_map_reader("a");
    objects.cluster_roles.push(role(
        "discovery",
        json!([{"nonResourceURLs": ["/api"], "verbs": ["get"]}]),
    ));
    objects.cluster_role_bindings.push(binding(
        "discovery",
        "ClusterRole",
        "discovery",
        json!([{"kind": "Group", "name": "system:authenticated"}]),
    ));
    let (rules, errors) = rules_for(&objects, &account("a", "reader"), "a");
    assert_eq!(
        rules,
        vec![
            json!({"nonResourceURLs": ["/api"], "verbs": ["get"]}),
            json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}),
        ]
    );
    assert!(errors.is_empty());
    let (rules, _) = rules_for(&objects, &account("a", "reader"), "b");
    assert_eq!(
        rules.len(),
        1,
        "only the cluster-wide rule in another namespace"
    );
}

#[test]
fn aggregate_reads_as_go_writes_it() {
    assert_eq!(aggregate(&["a".into()]), "a");
    assert_eq!(aggregate(&["a".into(), "a".into()]), "a");
    assert_eq!(aggregate(&["a".into(), "b".into(), "a".into()]), "[a, b]");
}
