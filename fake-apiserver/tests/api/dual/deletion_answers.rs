//! What a delete (or the write that ends one) answers, as kube-apiserver gives it: the marked
//! object of a dry run, the last finalizer's removal, Namespaces, Pods, propagation policies, and
//! what the garbage collector leaves in managedFields.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

use super::{Env, dual};

dual!(
    removing_the_last_finalizer_answers_the_object_at_its_last_resource_version,
    a_dry_run_delete_of_a_held_object_answers_it_marked,
    a_deleted_namespace_has_a_deletion_timestamp_but_no_grace_period,
    creating_in_a_terminating_namespace_names_the_namespace_terminating_cause,
    a_background_delete_of_an_object_held_only_by_foreground_deletion_removes_it,
    an_orphaned_dependent_keeps_no_managed_fields_for_the_removed_reference,
    an_unscheduled_pod_is_answered_marked_and_is_gone,
    a_bound_pod_deleted_with_no_grace_is_answered_marked_and_is_gone,
);

const HOLD: &str = "example.com/hold";

fn cm(name: &str, finalizers: &[&str]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            finalizers: (!finalizers.is_empty())
                .then(|| finalizers.iter().map(|f| f.to_string()).collect()),
            ..Default::default()
        },
        data: Some([("k".to_string(), "v".to_string())].into()),
        ..Default::default()
    }
}

async fn release(api: &Api<ConfigMap>, name: &str) -> ConfigMap {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("remove finalizers")
}

async fn removing_the_last_finalizer_answers_the_object_at_its_last_resource_version(env: Env) {
    let api = env.api::<ConfigMap>();
    api.create(&PostParams::default(), &cm("x", &[HOLD]))
        .await
        .expect("create");
    let marked = api
        .delete("x", &DeleteParams::default())
        .await
        .expect("delete")
        .left_or_else(|s| panic!("expected the held object, got {s:?}"));
    let rv = marked.metadata.resource_version.clone().expect("rv");
    let mut events = api
        .watch(&WatchParams::default().fields("metadata.name=x"), &rv)
        .await
        .expect("watch")
        .boxed();

    let answer = release(&api, "x").await;
    // The update is never stored: the answer carries the resourceVersion of the stored object.
    assert_eq!(answer.metadata.resource_version.as_deref(), Some(&*rv));
    assert_eq!(answer.metadata.finalizers, None);
    assert!(answer.metadata.deletion_timestamp.is_some());

    let deleted = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(ev) = events.try_next().await.expect("watch event") {
            match ev {
                WatchEvent::Deleted(obj) => return obj,
                WatchEvent::Bookmark(_) => {}
                other => panic!("unexpected event {other:?}"),
            }
        }
        panic!("the watch ended before the DELETED event")
    })
    .await
    .expect("a DELETED event");
    // Watchers see the object as it was last stored, its finalizer included.
    assert_eq!(deleted.metadata.finalizers, Some(vec![HOLD.to_string()]));
    assert_ne!(deleted.metadata.resource_version.as_deref(), Some(&*rv));
}

async fn a_dry_run_delete_of_a_held_object_answers_it_marked(env: Env) {
    let api = env.api::<ConfigMap>();
    api.create(&PostParams::default(), &cm("held", &[HOLD]))
        .await
        .expect("create");
    let path = format!("/api/v1/namespaces/{}/configmaps/held?dryRun=All", env.ns);
    let answer = env.raw("DELETE", &path, "", Vec::new()).await;
    assert_eq!(answer.code, 200, "{}", answer.text);
    let meta = &answer.body["metadata"];
    assert!(meta["deletionTimestamp"].is_string(), "{}", answer.text);
    assert_eq!(meta["deletionGracePeriodSeconds"], json!(0));
    let stored = api.get("held").await.expect("still there");
    assert!(stored.metadata.deletion_timestamp.is_none(), "a dry run");
    release(&api, "held").await;
}

async fn a_deleted_namespace_has_a_deletion_timestamp_but_no_grace_period(env: Env) {
    let name = env.name("gone");
    env.create_namespace(&name).await;
    let answer = env
        .raw(
            "DELETE",
            &format!("/api/v1/namespaces/{name}"),
            "",
            Vec::new(),
        )
        .await;
    assert_eq!(answer.code, 200, "{}", answer.text);
    let meta = &answer.body["metadata"];
    assert!(meta["deletionTimestamp"].is_string(), "{}", answer.text);
    assert!(
        meta.get("deletionGracePeriodSeconds").is_none(),
        "{}",
        answer.text
    );
    assert_eq!(answer.body["status"]["phase"], json!("Terminating"));
}

async fn creating_in_a_terminating_namespace_names_the_namespace_terminating_cause(env: Env) {
    let name = env.name("ending");
    env.create_namespace(&name).await;
    let cms = env.api_in::<ConfigMap>(&name);
    cms.create(&PostParams::default(), &cm("held", &[HOLD]))
        .await
        .expect("create held content");
    env.all::<Namespace>()
        .delete(&name, &DeleteParams::default())
        .await
        .expect("delete namespace");
    let body = serde_json::to_vec(&cm("late", &[])).expect("encodes");
    let path = format!("/api/v1/namespaces/{name}/configmaps");
    let answer = env.raw("POST", &path, "application/json", body).await;
    assert_eq!(answer.code, 403, "{}", answer.text);
    assert_eq!(
        answer.body["details"]["causes"],
        json!([{
            "reason": "NamespaceTerminating",
            "message": format!("namespace {name} is being terminated"),
            "field": "metadata.namespace",
        }]),
        "{}",
        answer.text
    );
    release(&cms, "held").await;
}

async fn a_background_delete_of_an_object_held_only_by_foreground_deletion_removes_it(env: Env) {
    let api = env.api::<ConfigMap>();
    let owner = api
        .create(&PostParams::default(), &cm("owner", &[]))
        .await
        .expect("owner");
    let mut child = cm("child", &[HOLD]);
    child.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "owner".into(),
        uid: owner.metadata.uid.clone().expect("uid"),
        block_owner_deletion: Some(true),
        ..Default::default()
    }]);
    api.create(&PostParams::default(), &child)
        .await
        .expect("child");
    let held = api
        .delete("owner", &DeleteParams::foreground())
        .await
        .expect("foreground delete")
        .left_or_else(|s| panic!("expected the held owner, got {s:?}"));
    assert_eq!(
        held.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_string()])
    );
    // Background takes the foregroundDeletion finalizer out: nothing holds the owner any more.
    let path = format!(
        "/api/v1/namespaces/{}/configmaps/owner?propagationPolicy=Background",
        env.ns
    );
    let answer = env.raw("DELETE", &path, "", Vec::new()).await;
    assert_eq!(answer.code, 200, "{}", answer.text);
    assert_eq!(answer.body["kind"], json!("Status"), "{}", answer.text);
    assert_eq!(answer.body["status"], json!("Success"));
    assert!(api.get_opt("owner").await.expect("get").is_none());
    release(&api, "child").await;
}

async fn an_orphaned_dependent_keeps_no_managed_fields_for_the_removed_reference(env: Env) {
    let api = env.api::<ConfigMap>();
    let owner = api
        .create(&PostParams::default(), &cm("owner", &[]))
        .await
        .expect("owner");
    let child = ConfigMap {
        metadata: ObjectMeta {
            name: Some("child".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "owner".into(),
                uid: owner.metadata.uid.clone().expect("uid"),
                ..Default::default()
            }]),
            ..Default::default()
        },
        ..Default::default()
    };
    api.create(&PostParams::default(), &child)
        .await
        .expect("child");
    api.delete("owner", &DeleteParams::orphan())
        .await
        .expect("orphan delete");
    let orphaned = env
        .wait_for(
            &api,
            "child",
            |c: Option<&ConfigMap>| c.is_some_and(|c| c.metadata.owner_references.is_none()),
            "the garbage collector orphans the child",
        )
        .await
        .expect("the child stays");
    // The creator's only field was the reference: its entry goes with it.
    assert_eq!(orphaned.metadata.managed_fields, None);
}

fn pod(name: &str, node: Option<&str>) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
            // No scheduler picks this one: it stays unscheduled unless bound by the test.
            "schedulerName": "tollgate-nobody",
            "nodeName": node,
        }
    }))
    .expect("a Pod")
}

/// A Pod's delete answers it marked with no grace left, and it is gone at once.
async fn delete_pod_answers_marked_and_gone(env: &Env, name: &str, query: &str) {
    let pods = env.api::<Pod>();
    let created = pods
        .create(&PostParams::default(), &pod(name, None))
        .await
        .expect("create pod");
    let path = format!("/api/v1/namespaces/{}/pods/{name}{query}", env.ns);
    let answer = env.raw("DELETE", &path, "", Vec::new()).await;
    assert_eq!(answer.code, 200, "{}", answer.text);
    assert_eq!(answer.body["kind"], json!("Pod"), "{}", answer.text);
    let meta = &answer.body["metadata"];
    assert!(meta["deletionTimestamp"].is_string(), "{}", answer.text);
    assert_eq!(meta["deletionGracePeriodSeconds"], json!(0));
    assert_eq!(meta["generation"], json!(2));
    assert_ne!(
        meta["resourceVersion"].as_str(),
        created.metadata.resource_version.as_deref(),
        "the marked Pod was stored before it went"
    );
    assert!(pods.get_opt(name).await.expect("get").is_none());
}

async fn an_unscheduled_pod_is_answered_marked_and_is_gone(env: Env) {
    delete_pod_answers_marked_and_gone(&env, "unbound", "?gracePeriodSeconds=30").await;
}

async fn a_bound_pod_deleted_with_no_grace_is_answered_marked_and_is_gone(env: Env) {
    let pods = env.api::<Pod>();
    let created = pods
        .create(
            &PostParams::default(),
            &pod("bound", Some("tollgate-no-such-node")),
        )
        .await
        .expect("create pod");
    assert_eq!(created.metadata.generation, Some(1));
    let path = format!(
        "/api/v1/namespaces/{}/pods/bound?gracePeriodSeconds=0",
        env.ns
    );
    let answer = env.raw("DELETE", &path, "", Vec::new()).await;
    assert_eq!(answer.code, 200, "{}", answer.text);
    let meta = &answer.body["metadata"];
    assert!(meta["deletionTimestamp"].is_string(), "{}", answer.text);
    assert_eq!(meta["deletionGracePeriodSeconds"], json!(0));
    assert_eq!(meta["generation"], json!(2));
    assert!(pods.get_opt("bound").await.expect("get").is_none());
}
