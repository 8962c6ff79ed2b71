//! CRUD through `kube::Api`: get, list, create, replace, delete, delete_collection and patch on
//! namespaced and cluster-scoped kinds; server-owned metadata (uid, creationTimestamp,
//! resourceVersion, generation); the status subresource; the patch types; the Status bodies of
//! the common failures; and what a fresh cluster holds.

use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Service, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::ObjectMeta;
use serde_json::json;

use crate::common::server;
use crate::dual::crud::{configmap, from_json};

const DEFAULT_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    from_json(json!({
        "metadata": {
            "name": name,
            "labels": labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        },
    }))
}

fn namespace(name: &str) -> Namespace {
    from_json(json!({"metadata": {"name": name}}))
}

fn job(name: &str) -> Job {
    from_json(json!({
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "work", "image": "busybox:1.36", "command": ["true"]}],
                },
            },
        },
    }))
}

fn rv_of(meta: &ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .expect("a resourceVersion")
        .parse()
        .expect("a numeric resourceVersion")
}

fn names<K: kube::Resource>(items: &[K]) -> Vec<String> {
    items
        .iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// What a fresh cluster holds
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn default_namespaces_exist_at_start_each_with_a_default_service_account() {
    let s = server();
    let namespaces: Api<Namespace> = Api::all(s.client());
    let listed = namespaces
        .list(&ListParams::default())
        .await
        .expect("list namespaces");
    let listed = names(&listed.items);
    for ns in DEFAULT_NAMESPACES {
        assert!(listed.contains(&ns.to_string()), "{ns} in {listed:?}");
        let got = namespaces.get(ns).await.expect("get namespace");
        assert_eq!(
            got.status.and_then(|st| st.phase).as_deref(),
            Some("Active"),
            "{ns} is Active"
        );
        let sas: Api<ServiceAccount> = Api::namespaced(s.client(), ns);
        let sa = sas.get("default").await.expect("default service account");
        assert_eq!(sa.metadata.namespace.as_deref(), Some(ns));
    }
}

#[tokio::test(start_paused = true)]
async fn a_new_namespace_gets_a_default_service_account() {
    let s = server();
    let namespaces: Api<Namespace> = Api::all(s.client());
    namespaces
        .create(&PostParams::default(), &namespace("team-a"))
        .await
        .expect("create namespace");
    let sas: Api<ServiceAccount> = Api::namespaced(s.client(), "team-a");
    // The real server's service-account controller creates it shortly after: allow it a moment.
    let mut found = None;
    for _ in 0..50 {
        found = sas.get_opt("default").await.expect("get service account");
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let sa = found.expect("a default ServiceAccount in the new namespace");
    assert_eq!(sa.metadata.namespace.as_deref(), Some("team-a"));
    assert!(sa.metadata.uid.is_some());
}

#[tokio::test(start_paused = true)]
async fn the_kubernetes_service_exists_in_default() {
    let s = server();
    let services: Api<Service> = Api::namespaced(s.client(), "default");
    let svc = services
        .get("kubernetes")
        .await
        .expect("kubernetes service");
    let spec = svc.spec.expect("a spec");
    assert!(spec.cluster_ip.is_some_and(|ip| !ip.is_empty()));
    let ports = spec.ports.expect("ports");
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].name.as_deref(), Some("https"));
    assert_eq!(ports[0].port, 443);
    assert_eq!(ports[0].protocol.as_deref(), Some("TCP"));
}

// ---------------------------------------------------------------------------------------------
// Namespaced kind: ConfigMap
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn creation_timestamps_follow_the_virtual_clock() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let mut cm = configmap("first", &[]);
    cm.metadata.uid = Some("chosen-by-the-client".into());
    let first = cms
        .create(&PostParams::default(), &cm)
        .await
        .expect("create");
    let uid = first.metadata.uid.clone().expect("a uid");
    assert_ne!(uid, "chosen-by-the-client");
    assert_eq!(uid.len(), 36, "a UUID: {uid}");
    assert_eq!(
        first
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        Some("2026-01-01T00:00:00Z".into())
    );

    tokio::time::sleep(Duration::from_secs(3600)).await;
    let second = cms
        .create(&PostParams::default(), &configmap("second", &[]))
        .await
        .expect("create later");
    assert_eq!(
        second
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        Some("2026-01-01T01:00:00Z".into())
    );
    assert_ne!(second.metadata.uid, first.metadata.uid);

    // A replace cannot rewrite the creation timestamp (a forged uid is a conflict: see
    // dual::crud).
    let mut forged = first.clone();
    forged.metadata.creation_timestamp = second.metadata.creation_timestamp.clone();
    forged.data = configmap("first", &[("k", "v")]).data;
    let replaced = cms
        .replace("first", &PostParams::default(), &forged)
        .await
        .expect("replace");
    assert_eq!(replaced.metadata.uid, first.metadata.uid);
    assert_eq!(
        replaced.metadata.creation_timestamp,
        first.metadata.creation_timestamp
    );
}

// ---------------------------------------------------------------------------------------------
// Cluster-scoped kinds: Node and Namespace
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn node_delete_collection_with_a_label_selector() {
    let s = server();
    let nodes: Api<Node> = Api::all(s.client());
    for (name, pool) in [("n1", "spot"), ("n2", "spot"), ("n3", "stable")] {
        nodes
            .create(&PostParams::default(), &node(name, &[("pool", pool)]))
            .await
            .expect("create node");
    }
    nodes
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("pool=spot"),
        )
        .await
        .expect("delete collection");
    let left = nodes.list(&ListParams::default()).await.expect("list");
    assert_eq!(names(&left.items), ["n3"]);
}

// ---------------------------------------------------------------------------------------------
// resourceVersion
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn one_global_resource_version_increases_across_kinds() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let nodes: Api<Node> = Api::all(s.client());
    let jobs: Api<Job> = Api::namespaced(s.client(), "default");
    let start = s.resource_version();

    let cm = cms
        .create(&PostParams::default(), &configmap("x", &[]))
        .await
        .expect("create configmap");
    let n = nodes
        .create(&PostParams::default(), &node("n", &[]))
        .await
        .expect("create node");
    let j = jobs
        .create(&PostParams::default(), &job("j"))
        .await
        .expect("create job");
    let cm2 = cms
        .patch(
            "x",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "v"}})),
        )
        .await
        .expect("patch configmap");
    let rvs = [
        rv_of(&cm.metadata),
        rv_of(&n.metadata),
        rv_of(&j.metadata),
        rv_of(&cm2.metadata),
    ];
    assert!(rvs[0] > start, "{start} < {rvs:?}");
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "increasing: {rvs:?}");
    assert_eq!(s.resource_version(), rvs[3]);
}

// ---------------------------------------------------------------------------------------------
// generation and the status subresource
// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// PATCH types
// ---------------------------------------------------------------------------------------------
