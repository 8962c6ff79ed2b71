//! Deletion: finalizers, preconditions, propagation policies and the garbage collector, namespace
//! termination, and deletecollection.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Client;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent,
    WatchParams,
};
use serde_json::json;

use crate::common::{api_err, raw, server};

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

fn held(name: &str) -> ConfigMap {
    let mut c = cm(name);
    c.metadata.finalizers = Some(vec![HOLD.into()]);
    c
}

fn owner_ref(owner: &ConfigMap, block: bool) -> OwnerReference {
    OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.metadata.name.clone().expect("owner has a name"),
        uid: owner.metadata.uid.clone().expect("owner has a uid"),
        block_owner_deletion: block.then_some(true),
        controller: None,
    }
}

fn owned_by(name: &str, owners: &[&ConfigMap]) -> ConfigMap {
    let mut c = cm(name);
    c.metadata.owner_references = Some(owners.iter().map(|o| owner_ref(o, false)).collect());
    c
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

/// Remove every finalizer of `name`, as its controller would once done.
async fn release(api: &Api<ConfigMap>, name: &str) {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("remove finalizers");
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

#[tokio::test(start_paused = true)]
async fn deleting_an_object_with_a_finalizer_marks_it_and_keeps_it() {
    let s = server();
    let api = configmaps(s.client(), "default");
    create(&api, &held("x")).await;
    tokio::time::sleep(Duration::from_secs(5)).await;

    let answer = api
        .delete("x", &DeleteParams::default())
        .await
        .expect("delete")
        .left_or_else(|other| panic!("expected the object, still being deleted, got: {other:?}"));
    assert_eq!(
        answer.metadata.deletion_timestamp.map(|t| t.0.to_string()),
        Some("2026-01-01T00:00:05Z".to_string())
    );
    assert_eq!(answer.metadata.deletion_grace_period_seconds, Some(0));
    assert_eq!(answer.metadata.finalizers, Some(vec![HOLD.to_string()]));

    let stored = api.get("x").await.expect("still there");
    assert!(stored.metadata.deletion_timestamp.is_some());
    assert_eq!(stored.data, cm("x").data);
}

#[tokio::test(start_paused = true)]
async fn delete_of_a_finalizer_held_object_answers_200_with_the_object() {
    // The real server answers 202 only when the client sent orphanDependents=false.
    let s = server();
    let api = configmaps(s.client(), "default");
    create(&api, &held("x")).await;
    let (code, body) = raw(
        &s,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/x",
        "application/json",
        r#"{"propagationPolicy":"Background"}"#,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["kind"], "ConfigMap");
    assert!(body["metadata"]["deletionTimestamp"].is_string(), "{body}");
}

#[tokio::test(start_paused = true)]
async fn removing_the_last_finalizer_deletes_the_object_and_watchers_see_deleted() {
    let s = server();
    let api = configmaps(s.client(), "default");
    api.create(&PostParams::default(), &{
        let mut c = held("x");
        c.metadata.finalizers = Some(vec![HOLD.into(), "example.com/second".into()]);
        c
    })
    .await
    .expect("create");
    let deleting = api
        .delete("x", &DeleteParams::default())
        .await
        .expect("delete")
        .left_or_else(|other| panic!("expected the object, still being deleted, got: {other:?}"));
    let rv = deleting
        .metadata
        .resource_version
        .clone()
        .expect("resourceVersion");
    let mut events = api
        .watch(&WatchParams::default().fields("metadata.name=x"), &rv)
        .await
        .expect("watch")
        .boxed();

    // Dropping one of two finalizers keeps the object.
    api.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": ["example.com/second"]}})),
    )
    .await
    .expect("remove one finalizer");
    assert!(exists(&api, "x").await, "one finalizer is left");

    release(&api, "x").await;
    assert!(!exists(&api, "x").await, "gone with its last finalizer");

    let deleted = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(ev) = events.try_next().await.expect("watch event") {
            match ev {
                WatchEvent::Deleted(obj) => return Some(obj),
                WatchEvent::Modified(obj) => {
                    assert!(obj.metadata.deletion_timestamp.is_some());
                }
                WatchEvent::Bookmark(_) => {}
                other => panic!("unexpected event {other:?}"),
            }
        }
        None
    })
    .await
    .expect("a DELETED event within 10s")
    .expect("the watch stays open until the DELETED event");
    assert_eq!(deleted.metadata.name.as_deref(), Some("x"));
    assert_eq!(deleted.metadata.uid, deleting.metadata.uid);
}

#[tokio::test(start_paused = true)]
async fn adding_a_finalizer_to_a_deleting_object_is_rejected_as_invalid() {
    let s = server();
    let api = configmaps(s.client(), "default");
    create(&api, &held("x")).await;
    api.delete("x", &DeleteParams::default())
        .await
        .expect("delete");

    let err = api_err(
        api.patch(
            "x",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": [HOLD, "x"]}})),
        )
        .await,
    );
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, "Invalid");
    assert!(
        err.message.starts_with("ConfigMap \"x\" is invalid: "),
        "{}",
        err.message
    );
    assert!(
        err.message.contains(
            "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"x\"}"
        ),
        "{}",
        err.message
    );
    let details = err.details.expect("details");
    assert_eq!(details.name, "x");
    assert_eq!(details.kind, "ConfigMap");
    assert!(
        details
            .causes
            .iter()
            .any(|c| c.reason == "FieldValueForbidden" && c.field == "metadata.finalizers"),
        "{:?}",
        details.causes
    );
    let stored = api.get("x").await.expect("still there");
    assert_eq!(stored.metadata.finalizers, Some(vec![HOLD.to_string()]));
}

#[tokio::test(start_paused = true)]
async fn deleting_an_object_without_finalizers_answers_a_success_status() {
    let s = server();
    let api = configmaps(s.client(), "default");
    let created = create(&api, &cm("x")).await;
    let status = api
        .delete("x", &DeleteParams::default())
        .await
        .expect("delete")
        .right_or_else(|other| panic!("expected a Success Status, got the object: {other:?}"));
    assert!(status.is_success(), "{status:?}");
    let details = status.details.expect("details");
    assert_eq!(details.name, "x");
    assert_eq!(details.kind, "configmaps");
    assert_eq!(Some(details.uid), created.metadata.uid);
    assert!(!exists(&api, "x").await);
    let err = api_err(api.get("x").await);
    assert_eq!(err.code, 404);
    assert_eq!(err.message, "configmaps \"x\" not found");
}

// --- preconditions ------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn delete_with_a_wrong_uid_precondition_is_a_conflict() {
    let s = server();
    let api = configmaps(s.client(), "default");
    let created = create(&api, &cm("x")).await;
    let uid = created.metadata.uid.clone().expect("uid");
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some("11111111-2222-4333-8444-555555555555".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let err = api_err(api.delete("x", &dp).await);
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert!(
        err.message
            .starts_with("Operation cannot be fulfilled on configmaps \"x\": "),
        "{}",
        err.message
    );
    assert!(
        err.message.contains(&format!(
            "Precondition failed: UID in precondition: 11111111-2222-4333-8444-555555555555, UID in object meta: {uid}"
        )),
        "{}",
        err.message
    );
    assert!(
        exists(&api, "x").await,
        "a failed precondition deletes nothing"
    );

    // The right uid deletes.
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..Default::default()
    };
    api.delete("x", &dp)
        .await
        .expect("delete with the right uid");
    assert!(!exists(&api, "x").await);
}

#[tokio::test(start_paused = true)]
async fn delete_with_a_stale_resource_version_precondition_is_a_conflict() {
    let s = server();
    let api = configmaps(s.client(), "default");
    let created = create(&api, &cm("x")).await;
    let old_rv = created.metadata.resource_version.clone().expect("rv");
    let updated = api
        .patch(
            "x",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "changed"}})),
        )
        .await
        .expect("update");
    let new_rv = updated.metadata.resource_version.clone().expect("rv");
    assert_ne!(old_rv, new_rv);

    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: None,
            resource_version: Some(old_rv.clone()),
        }),
        ..Default::default()
    };
    let err = api_err(api.delete("x", &dp).await);
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert!(
        err.message
            .starts_with("Operation cannot be fulfilled on configmaps \"x\": "),
        "{}",
        err.message
    );
    assert!(
        err.message.contains(&format!(
            "Precondition failed: ResourceVersion in precondition: {old_rv}, ResourceVersion in object meta: {new_rv}"
        )),
        "{}",
        err.message
    );
    assert!(exists(&api, "x").await);
}

// --- propagation policies and the garbage collector --------------------------------------------

#[rstest::rstest]
#[case::default_policy(DeleteParams::default())]
#[case::background(DeleteParams::background())]
#[tokio::test(start_paused = true)]
async fn background_deletion_removes_the_owner_at_once_and_collects_its_dependents(
    #[case] dp: DeleteParams,
) {
    let s = server();
    let api = configmaps(s.client(), "default");
    let owner = create(&api, &cm("owner")).await;
    create(&api, &owned_by("dep-1", &[&owner])).await;
    create(&api, &owned_by("dep-2", &[&owner])).await;
    create(&api, &cm("bystander")).await;

    let status = (api.delete("owner", &dp).await.expect("delete owner"))
        .right_or_else(|other| panic!("expected a Success Status, got the object: {other:?}"));
    assert!(status.is_success());
    assert!(!exists(&api, "owner").await, "the owner goes at once");
    assert!(!exists(&api, "dep-1").await, "dependents are collected");
    assert!(!exists(&api, "dep-2").await, "dependents are collected");
    assert!(exists(&api, "bystander").await, "unrelated objects stay");
}

#[tokio::test(start_paused = true)]
async fn foreground_deletion_keeps_the_owner_until_blocking_dependents_are_gone() {
    let s = server();
    let api = configmaps(s.client(), "default");
    let owner = create(&api, &cm("owner")).await;
    let mut blocker = held("blocker");
    blocker.metadata.owner_references = Some(vec![owner_ref(&owner, true)]);
    create(&api, &blocker).await;
    create(&api, &owned_by("plain-dep", &[&owner])).await;

    let answer = api
        .delete("owner", &DeleteParams::foreground())
        .await
        .expect("delete owner")
        .left_or_else(|other| panic!("expected the object, still being deleted, got: {other:?}"));
    assert!(answer.metadata.deletion_timestamp.is_some());
    assert_eq!(
        answer.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_string()])
    );

    let owner_now = api.get("owner").await.expect("the owner waits");
    assert!(owner_now.metadata.deletion_timestamp.is_some());
    assert_eq!(
        owner_now.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_string()])
    );
    assert!(
        !exists(&api, "plain-dep").await,
        "a dependent without finalizers is deleted"
    );
    let blocker_now = api.get("blocker").await.expect("held by its finalizer");
    assert!(
        blocker_now.metadata.deletion_timestamp.is_some(),
        "the garbage collector deleted the dependent"
    );
    // A dependent without dependents of its own is deleted in the background: its finalizers
    // are only its own.
    assert_eq!(
        blocker_now.metadata.finalizers,
        Some(vec![HOLD.to_string()])
    );

    release(&api, "blocker").await;
    assert!(!exists(&api, "blocker").await);
    assert!(
        !exists(&api, "owner").await,
        "the owner goes with its last blocking dependent"
    );
}

#[tokio::test(start_paused = true)]
async fn orphan_deletion_keeps_dependents_and_drops_their_owner_reference() {
    let s = server();
    let api = configmaps(s.client(), "default");
    let owner = create(&api, &cm("owner")).await;
    let other = create(&api, &cm("other-owner")).await;
    create(&api, &owned_by("dep", &[&owner])).await;
    create(&api, &owned_by("dep-of-two", &[&owner, &other])).await;

    api.delete("owner", &DeleteParams::orphan())
        .await
        .expect("delete owner");
    assert!(!exists(&api, "owner").await, "the owner goes");

    let dep = api.get("dep").await.expect("the dependent stays");
    assert!(dep.metadata.deletion_timestamp.is_none());
    assert!(
        dep.metadata.owner_references.unwrap_or_default().is_empty(),
        "its reference to the owner is removed"
    );
    let dep2 = api.get("dep-of-two").await.expect("the dependent stays");
    let refs: Vec<String> = dep2
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(refs, vec!["other-owner".to_string()]);
}

#[tokio::test(start_paused = true)]
async fn a_dependent_with_two_owners_survives_while_one_owner_remains() {
    let s = server();
    let api = configmaps(s.client(), "default");
    let a = create(&api, &cm("owner-a")).await;
    let b = create(&api, &cm("owner-b")).await;
    create(&api, &owned_by("dep", &[&a, &b])).await;

    api.delete("owner-a", &DeleteParams::background())
        .await
        .expect("delete owner a");
    let dep = api.get("dep").await.expect("owner b still holds it");
    assert!(dep.metadata.deletion_timestamp.is_none());
    // The real garbage collector removes references to owners that are gone.
    let refs: Vec<String> = dep
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(refs, vec!["owner-b".to_string()]);

    api.delete("owner-b", &DeleteParams::background())
        .await
        .expect("delete owner b");
    assert!(!exists(&api, "dep").await, "collected with its last owner");
}

#[tokio::test(start_paused = true)]
async fn an_object_whose_only_owner_does_not_exist_is_collected() {
    let s = server();
    let api = configmaps(s.client(), "default");
    let mut orphan = cm("orphan");
    orphan.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: "ghost".into(),
        uid: "00000000-0000-4000-8000-000000000000".into(),
        ..Default::default()
    }]);
    let created = api
        .create(&PostParams::default(), &orphan)
        .await
        .expect("the create itself succeeds");
    assert_eq!(created.metadata.name.as_deref(), Some("orphan"));
    assert!(
        !exists(&api, "orphan").await,
        "the garbage collector took it"
    );
}

// --- namespaces -----------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn deleting_a_namespace_with_held_content_leaves_it_terminating_until_the_content_is_gone() {
    let s = server();
    let namespaces = create_namespace(s.client(), "ns").await;
    let api = configmaps(s.client(), "ns");
    create(&api, &held("held")).await;
    create(&api, &cm("plain")).await;

    let answer = namespaces
        .delete("ns", &DeleteParams::background())
        .await
        .expect("delete namespace")
        .left_or_else(|other| panic!("expected the object, still being deleted, got: {other:?}"));
    assert_eq!(phase(&answer).as_deref(), Some("Terminating"));
    assert!(answer.metadata.deletion_timestamp.is_some());

    let ns = namespaces.get("ns").await.expect("still there");
    assert_eq!(phase(&ns).as_deref(), Some("Terminating"));
    assert!(!exists(&api, "plain").await, "content is deleted");
    let held_now = api.get("held").await.expect("held by its finalizer");
    assert!(held_now.metadata.deletion_timestamp.is_some());

    let err = api_err(api.create(&PostParams::default(), &cm("x")).await);
    assert_eq!(err.code, 403);
    assert_eq!(err.reason, "Forbidden");
    assert_eq!(
        err.message,
        "configmaps \"x\" is forbidden: unable to create new content in namespace ns because it is being terminated"
    );

    release(&api, "held").await;
    assert!(!exists(&api, "held").await);
    assert!(
        namespaces.get_opt("ns").await.expect("get").is_none(),
        "the namespace goes with its last content"
    );
}

#[tokio::test(start_paused = true)]
async fn deleting_a_namespace_without_held_content_removes_it_and_its_content_at_once() {
    let s = server();
    let namespaces = create_namespace(s.client(), "quick").await;
    let api = configmaps(s.client(), "quick");
    create(&api, &cm("a")).await;
    create(&api, &cm("b")).await;

    namespaces
        .delete("quick", &DeleteParams::background())
        .await
        .expect("delete namespace");
    assert!(namespaces.get_opt("quick").await.expect("get").is_none());
    assert!(!exists(&api, "a").await);
    assert!(!exists(&api, "b").await);
    let all: Api<ConfigMap> = Api::all(s.client());
    let left = all
        .list(&ListParams::default().fields("metadata.namespace=quick"))
        .await
        .expect("list");
    assert!(left.items.is_empty(), "{:?}", left.items);

    let err = api_err(api.create(&PostParams::default(), &cm("c")).await);
    assert_eq!(err.code, 404);
    assert_eq!(err.message, "namespaces \"quick\" not found");
}

// --- deletecollection ----------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn delete_collection_with_a_label_selector_deletes_only_matching_objects() {
    let s = server();
    let api = configmaps(s.client(), "default");
    for (name, app) in [("a", "x"), ("b", "x"), ("c", "y")] {
        let mut c = cm(name);
        c.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        create(&api, &c).await;
    }
    create(&api, &cm("unlabelled")).await;

    let answer = api
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("app=x"),
        )
        .await
        .expect("delete collection");
    let deleted =
        answer.left_or_else(|status| panic!("expected the list of deleted items: {status:?}"));
    let mut names: Vec<String> = deleted
        .items
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, vec!["a".to_string(), "b".to_string()]);

    assert!(!exists(&api, "a").await);
    assert!(!exists(&api, "b").await);
    assert!(exists(&api, "c").await);
    assert!(exists(&api, "unlabelled").await);
}

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

#[tokio::test(start_paused = true)]
async fn marking_an_object_for_deletion_bumps_its_generation() {
    let s = server();
    let api = configmaps(s.client(), "default");
    let created = create(&api, &held("g")).await;
    assert_eq!(created.metadata.generation, Some(1));
    api.delete("g", &DeleteParams::default())
        .await
        .expect("delete");
    let marked = api.get("g").await.expect("held");
    assert_eq!(
        marked.metadata.generation,
        Some(2),
        "controllers filtering on generation see it"
    );
}

#[tokio::test(start_paused = true)]
async fn foreground_deletion_spares_dependents_with_another_live_owner() {
    let s = server();
    let api = configmaps(s.client(), "default");
    let a = create(&api, &cm("owner-a")).await;
    let b = create(&api, &cm("owner-b")).await;
    create(&api, &owned_by("shared", &[&a, &b])).await;
    api.delete("owner-a", &DeleteParams::foreground())
        .await
        .expect("delete a");
    assert!(!exists(&api, "owner-a").await);
    let shared = api.get("shared").await.expect("kept for owner b");
    let owners: Vec<String> = shared
        .metadata
        .owner_references
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(owners, vec!["owner-b".to_string()]);
}

#[tokio::test(start_paused = true)]
async fn the_default_namespaces_may_not_be_deleted() {
    let s = server();
    let namespaces: Api<Namespace> = Api::all(s.client());
    for name in ["default", "kube-system", "kube-public"] {
        let e = api_err(namespaces.delete(name, &DeleteParams::default()).await);
        assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
        assert_eq!(
            e.message,
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
        );
    }
}

#[tokio::test(start_paused = true)]
async fn namespace_spec_finalizers_change_only_through_finalize() {
    let s = server();
    let namespaces = create_namespace(s.client(), "fin").await;
    let mut ns = namespaces.get("fin").await.expect("get");
    ns.spec = None;
    let replaced = namespaces
        .replace("fin", &PostParams::default(), &ns)
        .await
        .expect("replace");
    assert_eq!(
        replaced.spec.and_then(|s| s.finalizers),
        Some(vec!["kubernetes".to_string()])
    );

    let (code, body) = raw(
        &s,
        "PUT",
        "/api/v1/namespaces/fin/finalize",
        "application/json",
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fin"},"spec":{"finalizers":[]}}"#,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert!(body["spec"].get("finalizers").is_none(), "{body}");
    let (code, _) = raw(&s, "GET", "/api/v1/namespaces/fin/finalize", "", "").await;
    assert_eq!(code, 405);
}
