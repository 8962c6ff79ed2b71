//! Deletion: finalizers, preconditions, propagation policies and the garbage collector, namespace
//! termination, and deletecollection.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::common::server;

/// A finalizer owned by an imaginary controller of the tests.
const HOLD: &str = "example.com/hold";

fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some([("k".to_string(), "v".to_string())].into()),
        ..Default::default()
    }
}

fn configmaps(client: Client, ns: &str) -> Api<ConfigMap> {
    Api::namespaced(client, ns)
}

async fn create(api: &Api<ConfigMap>, obj: &ConfigMap) -> ConfigMap {
    api.create(&PostParams::default(), obj)
        .await
        .expect("create configmap")
}

async fn exists(api: &Api<ConfigMap>, name: &str) -> bool {
    api.get_opt(name).await.expect("get configmap").is_some()
}

async fn create_namespace(client: Client, name: &str) -> Api<Namespace> {
    let namespaces: Api<Namespace> = Api::all(client);
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
    namespaces
}

fn phase(ns: &Namespace) -> Option<String> {
    ns.status.as_ref().and_then(|s| s.phase.clone())
}

// --- finalizers ---------------------------------------------------------------------------------

// --- preconditions ------------------------------------------------------------------------------

// --- propagation policies and the garbage collector --------------------------------------------

// --- namespaces -----------------------------------------------------------------------------------

// --- deletecollection ----------------------------------------------------------------------------

// --- found in review ----------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_namespace_held_by_its_own_finalizer_waits_without_churning_writes() {
    let s = server();
    let namespaces = create_namespace(s.client(), "held-ns").await;
    namespaces
        .patch(
            "held-ns",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": [HOLD]}})),
        )
        .await
        .expect("add a finalizer to the namespace");
    let api = configmaps(s.client(), "held-ns");
    create(&api, &cm("content")).await;
    namespaces
        .delete("held-ns", &DeleteParams::default())
        .await
        .expect("delete namespace");

    assert!(!exists(&api, "content").await, "the content is deleted");
    let ns = namespaces
        .get("held-ns")
        .await
        .expect("still held by its finalizer");
    assert_eq!(phase(&ns).as_deref(), Some("Terminating"));
    assert_eq!(
        ns.spec.and_then(|s| s.finalizers),
        None,
        "the kubernetes finalizer is done"
    );

    // A later write elsewhere is one change, not a burst of empty updates.
    let before = s.resource_version();
    create(&configmaps(s.client(), "default"), &cm("elsewhere")).await;
    assert_eq!(s.resource_version(), before + 1);

    namespaces
        .patch(
            "held-ns",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .expect("release the namespace");
    assert!(
        namespaces.get_opt("held-ns").await.expect("get").is_none(),
        "gone once released"
    );
}
