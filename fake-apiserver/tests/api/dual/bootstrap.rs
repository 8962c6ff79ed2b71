//! What a cluster holds from its first second: the bootstrap RBAC objects and PriorityClasses (the
//! fake's data file is checked against kube-apiserver's here), each namespace's
//! `kube-root-ca.crt` and `default` ServiceAccount, the default namespaces, and the virtual
//! ComponentStatus list.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::ListParams;
use kube::runtime::wait::conditions;
use serde_json::{Value, json};

use super::{Env, assert_status, dual};

dual!(
    bootstrap_rbac_and_priority_classes_are_kube_apiserver_s,
    aggregated_cluster_roles_carry_their_aggregated_rules,
    every_namespace_gets_the_root_ca_and_a_default_service_account,
    the_default_namespaces_exist,
    component_statuses_are_a_read_only_virtual_list,
);

const DATA: &str = include_str!("../../../src/catalog/bootstrap.jsonl");

/// (kind, namespace, name) of every object of the fake's bootstrap data.
fn data_names(kind: &str) -> BTreeSet<(String, String)> {
    DATA.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|o| o["kind"] == kind)
        .map(|o| {
            (
                o["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                o["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

async fn served_names(env: &Env, path: &str, selector: &str) -> BTreeSet<(String, String)> {
    let raw = env
        .raw("GET", &format!("{path}?labelSelector={selector}"), "", "")
        .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    raw.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|o| {
            (
                o["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
                o["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

async fn bootstrap_rbac_and_priority_classes_are_kube_apiserver_s(env: Env) {
    let rbac = "kubernetes.io%2Fbootstrapping%3Drbac-defaults";
    for (kind, path) in [
        (
            "ClusterRole",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        ),
        (
            "ClusterRoleBinding",
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        ),
        ("Role", "/apis/rbac.authorization.k8s.io/v1/roles"),
        (
            "RoleBinding",
            "/apis/rbac.authorization.k8s.io/v1/rolebindings",
        ),
    ] {
        let served = served_names(&env, path, rbac).await;
        assert_eq!(served, data_names(kind), "{kind}");
    }
    for name in ["cluster-admin", "admin", "edit", "view", "system:discovery"] {
        assert!(
            data_names("ClusterRole").contains(&(String::new(), name.to_string())),
            "{name}"
        );
    }
    let classes = env
        .raw("GET", "/apis/scheduling.k8s.io/v1/priorityclasses", "", "")
        .await;
    let found: Vec<(Value, Value)> = classes.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|c| {
            c["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.starts_with("system-"))
        })
        .map(|c| (c["metadata"]["name"].clone(), c["value"].clone()))
        .collect();
    assert_eq!(
        found,
        vec![
            (json!("system-cluster-critical"), json!(2000000000)),
            (json!("system-node-critical"), json!(2000001000)),
        ]
    );
    let admin = env
        .raw(
            "GET",
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin",
            "",
            "",
        )
        .await;
    assert_eq!(
        admin.body["rules"],
        json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}, {"nonResourceURLs": ["*"], "verbs": ["*"]}])
    );
    assert!(admin.body["metadata"]["uid"].is_string());
    assert!(admin.body["metadata"]["resourceVersion"].is_string());
    assert!(admin.body["metadata"]["creationTimestamp"].is_string());
}

async fn aggregated_cluster_roles_carry_their_aggregated_rules(env: Env) {
    let roles = env.all::<ClusterRole>();
    // kube-controller-manager's aggregation controller fills the rules some time after start-up,
    // a role at a time (admin takes edit's once edit has view's); the fake has them all from the
    // first request.
    let aggregates_pods = |r: Option<&ClusterRole>| {
        r.and_then(|r| r.rules.as_ref()).is_some_and(|rules| {
            rules.iter().any(|r| {
                r.resources
                    .as_ref()
                    .is_some_and(|res| res.iter().any(|x| x == "pods"))
            })
        })
    };
    for name in ["admin", "edit", "view"] {
        let what = format!("{name} aggregates the pods rules");
        let role = env
            .wait_for(&roles, name, aggregates_pods, &what)
            .await
            .expect("an aggregated role");
        let selectors = role
            .aggregation_rule
            .and_then(|a| a.cluster_role_selectors)
            .unwrap_or_default();
        assert_eq!(selectors.len(), 1, "{name}");
    }
}

async fn every_namespace_gets_the_root_ca_and_a_default_service_account(env: Env) {
    env.default_service_account().await;
    let cms = env.api::<ConfigMap>();
    let root = env
        .wait_for(
            &cms,
            "kube-root-ca.crt",
            conditions::is_created(),
            "kube-root-ca.crt",
        )
        .await
        .expect("kube-root-ca.crt");
    let data = root.data.expect("data");
    assert_eq!(data.keys().collect::<Vec<_>>(), ["ca.crt"]);
    assert!(data["ca.crt"].starts_with("-----BEGIN CERTIFICATE-----"));
    let annotations = root.metadata.annotations.expect("annotations");
    assert!(annotations["kubernetes.io/description"].starts_with("Contains a CA bundle"));
    // Every namespace's copy is the same CA.
    let system = env
        .api_in::<ConfigMap>("kube-system")
        .get("kube-root-ca.crt")
        .await
        .expect("kube-system's copy");
    assert_eq!(system.data.expect("data")["ca.crt"], data["ca.crt"]);
}

async fn the_default_namespaces_exist(env: Env) {
    let names: BTreeSet<String> = env
        .all::<Namespace>()
        .list(&ListParams::default())
        .await
        .expect("namespaces")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    for ns in ["default", "kube-node-lease", "kube-public", "kube-system"] {
        assert!(names.contains(ns), "{ns}");
    }
}

async fn component_statuses_are_a_read_only_virtual_list(env: Env) {
    let path = "/api/v1/componentstatuses";
    let list = env.raw("GET", path, "", "").await;
    assert_eq!(list.code, 200, "{}", list.text);
    assert_eq!(list.body["kind"], "ComponentStatusList");
    assert_eq!(list.body["metadata"], json!({}));
    // kube-apiserver probes the components in Go map order: compared as a set.
    let names: BTreeSet<&str> = list.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|c| c["metadata"]["name"].as_str())
        .collect();
    assert_eq!(
        names,
        BTreeSet::from(["scheduler", "controller-manager", "etcd-0"])
    );
    let etcd = env.raw("GET", &format!("{path}/etcd-0"), "", "").await;
    assert_eq!(etcd.code, 200, "{}", etcd.text);
    assert_eq!(
        etcd.body,
        json!({"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": "etcd-0"},
               "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]})
    );
    let missing = env.raw("GET", &format!("{path}/nope"), "", "").await;
    assert_status(&missing, 404, "NotFound");
    assert_eq!(
        missing.body["message"],
        "componentstatus \"nope\" not found"
    );
    assert_eq!(
        missing.body["details"],
        json!({"name": "nope", "kind": "componentstatus"})
    );
    for (method, p) in [
        ("POST", path.to_string()),
        ("DELETE", format!("{path}/etcd-0")),
    ] {
        let raw = env
            .raw(
                method,
                &p,
                "application/json",
                r#"{"metadata":{"name":"x"}}"#,
            )
            .await;
        assert_status(&raw, 405, "MethodNotAllowed");
        assert_eq!(
            raw.body["message"],
            "the server does not allow this method on the requested resource"
        );
    }
    let watch = env.raw("GET", &format!("{path}?watch=true"), "", "").await;
    assert_status(&watch, 405, "MethodNotAllowed");
    assert_eq!(
        watch.body["message"],
        "watch is not supported on resources of kind \"componentstatuses\""
    );
}
