//! Deletion on both targets: finalizers, preconditions, propagation policies and the garbage
//! collector, namespace termination. On the real server the garbage collector and the namespace
//! controller are kube-controller-manager's and act asynchronously: their effects are awaited.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::api::{
    Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions, WatchEvent, WatchParams,
};
use serde_json::json;

use super::{Env, api_err, dual};

dual!(
    deleting_an_object_with_a_finalizer_marks_it_and_keeps_it,
    delete_of_a_finalizer_held_object_answers_200_with_the_object,
    removing_the_last_finalizer_deletes_the_object_and_watchers_see_deleted,
    adding_a_finalizer_to_a_deleting_object_is_rejected_as_invalid,
    deleting_an_object_without_finalizers_answers_a_success_status,
    delete_with_a_wrong_uid_precondition_is_a_conflict,
    delete_with_a_stale_resource_version_precondition_is_a_conflict,
    default_deletion_removes_the_owner_at_once_and_collects_its_dependents,
    background_deletion_removes_the_owner_at_once_and_collects_its_dependents,
    foreground_deletion_keeps_the_owner_until_blocking_dependents_are_gone,
    orphan_deletion_keeps_dependents_and_drops_their_owner_reference,
    a_dependent_with_two_owners_survives_while_one_owner_remains,
    an_object_whose_only_owner_does_not_exist_is_collected,
    foreground_deletion_spares_dependents_with_another_live_owner,
    deleting_a_namespace_with_held_content_leaves_it_terminating_until_the_content_is_gone,
    deleting_a_namespace_removes_its_content_and_then_itself,
    marking_an_object_for_deletion_bumps_its_generation,
    the_default_namespaces_may_not_be_deleted,
    namespace_spec_finalizers_change_only_through_finalize,
);

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

fn owner_names(c: &ConfigMap) -> Vec<String> {
    c.metadata
        .owner_references
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|r| r.name)
        .collect()
}

fn phase(ns: &Namespace) -> Option<String> {
    ns.status.as_ref().and_then(|s| s.phase.clone())
}

fn is_marked(o: Option<&ConfigMap>) -> bool {
    o.is_some_and(|c| c.metadata.deletion_timestamp.is_some())
}

// --- finalizers ---------------------------------------------------------------------------------

async fn deleting_an_object_with_a_finalizer_marks_it_and_keeps_it(env: Env) {
    let api = env.api::<ConfigMap>();
    create(&api, &held("x")).await;

    let answer = api
        .delete("x", &DeleteParams::default())
        .await
        .expect("delete")
        .left_or_else(|other| panic!("expected the object, still being deleted, got: {other:?}"));
    assert!(answer.metadata.deletion_timestamp.is_some());
    assert_eq!(answer.metadata.deletion_grace_period_seconds, Some(0));
    assert_eq!(answer.metadata.finalizers, Some(vec![HOLD.to_string()]));

    let stored = api.get("x").await.expect("still there");
    assert_eq!(
        stored.metadata.deletion_timestamp,
        answer.metadata.deletion_timestamp
    );
    assert_eq!(stored.data, cm("x").data);
    release(&api, "x").await;
}

async fn delete_of_a_finalizer_held_object_answers_200_with_the_object(env: Env) {
    // The real server answers 202 only when the client sent orphanDependents=false.
    let api = env.api::<ConfigMap>();
    create(&api, &held("x")).await;
    let raw = env
        .raw(
            "DELETE",
            &format!("/api/v1/namespaces/{}/configmaps/x", env.ns),
            "application/json",
            r#"{"propagationPolicy":"Background"}"#,
        )
        .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_eq!(raw.body["kind"], "ConfigMap");
    assert!(
        raw.body["metadata"]["deletionTimestamp"].is_string(),
        "{}",
        raw.text
    );
    release(&api, "x").await;
}

async fn removing_the_last_finalizer_deletes_the_object_and_watchers_see_deleted(env: Env) {
    let api = env.api::<ConfigMap>();
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

async fn adding_a_finalizer_to_a_deleting_object_is_rejected_as_invalid(env: Env) {
    let api = env.api::<ConfigMap>();
    create(&api, &held("x")).await;
    api.delete("x", &DeleteParams::default())
        .await
        .expect("delete");

    let err = api_err(
        api.patch(
            "x",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": [HOLD, "example.com/late"]}})),
        )
        .await,
    );
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, "Invalid");
    assert_eq!(
        err.message,
        "ConfigMap \"x\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/late\"}"
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
    release(&api, "x").await;
}

async fn deleting_an_object_without_finalizers_answers_a_success_status(env: Env) {
    let api = env.api::<ConfigMap>();
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

async fn delete_with_a_wrong_uid_precondition_is_a_conflict(env: Env) {
    let api = env.api::<ConfigMap>();
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
    // The registry names the kind (GroupResource{group, Kind}), not the resource.
    assert_eq!(
        err.message,
        format!(
            "Operation cannot be fulfilled on ConfigMap \"x\": the UID in the precondition (11111111-2222-4333-8444-555555555555) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
        )
    );
    let details = err.details.expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("x", "ConfigMap")
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

async fn delete_with_a_stale_resource_version_precondition_is_a_conflict(env: Env) {
    let api = env.api::<ConfigMap>();
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
    assert_eq!(
        err.message,
        format!(
            "Operation cannot be fulfilled on ConfigMap \"x\": the ResourceVersion in the precondition ({old_rv}) does not match the ResourceVersion in record ({new_rv}). The object might have been modified"
        )
    );
    assert!(exists(&api, "x").await);
}

// --- propagation policies and the garbage collector --------------------------------------------

async fn owner_goes_at_once_and_dependents_follow(env: Env, dp: DeleteParams) {
    let api = env.api::<ConfigMap>();
    let owner = create(&api, &cm("owner")).await;
    create(&api, &owned_by("dep-1", &[&owner])).await;
    create(&api, &owned_by("dep-2", &[&owner])).await;
    create(&api, &cm("bystander")).await;

    let status = (api.delete("owner", &dp).await.expect("delete owner"))
        .right_or_else(|other| panic!("expected a Success Status, got the object: {other:?}"));
    assert!(status.is_success());
    assert!(!exists(&api, "owner").await, "the owner goes at once");
    env.wait_gone(&api, "dep-1").await;
    env.wait_gone(&api, "dep-2").await;
    assert!(exists(&api, "bystander").await, "unrelated objects stay");
}

async fn default_deletion_removes_the_owner_at_once_and_collects_its_dependents(env: Env) {
    owner_goes_at_once_and_dependents_follow(env, DeleteParams::default()).await;
}

async fn background_deletion_removes_the_owner_at_once_and_collects_its_dependents(env: Env) {
    owner_goes_at_once_and_dependents_follow(env, DeleteParams::background()).await;
}

async fn foreground_deletion_keeps_the_owner_until_blocking_dependents_are_gone(env: Env) {
    let api = env.api::<ConfigMap>();
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

    env.wait_gone(&api, "plain-dep").await;
    let blocker_now = env
        .wait_for(
            &api,
            "blocker",
            is_marked,
            "the garbage collector deletes the blocker",
        )
        .await
        .expect("held by its finalizer");
    // A dependent without dependents of its own is deleted in the background: its finalizers
    // are only its own.
    assert_eq!(
        blocker_now.metadata.finalizers,
        Some(vec![HOLD.to_string()])
    );
    let owner_now = api.get("owner").await.expect("the owner waits");
    assert!(owner_now.metadata.deletion_timestamp.is_some());
    assert_eq!(
        owner_now.metadata.finalizers,
        Some(vec!["foregroundDeletion".to_string()])
    );

    release(&api, "blocker").await;
    assert!(!exists(&api, "blocker").await);
    env.wait_gone(&api, "owner").await;
}

async fn orphan_deletion_keeps_dependents_and_drops_their_owner_reference(env: Env) {
    let api = env.api::<ConfigMap>();
    let owner = create(&api, &cm("owner")).await;
    let other = create(&api, &cm("other-owner")).await;
    create(&api, &owned_by("dep", &[&owner])).await;
    create(&api, &owned_by("dep-of-two", &[&owner, &other])).await;

    api.delete("owner", &DeleteParams::orphan())
        .await
        .expect("delete owner");
    // The owner goes once the garbage collector has orphaned its dependents.
    env.wait_gone(&api, "owner").await;

    let dep = api.get("dep").await.expect("the dependent stays");
    assert!(dep.metadata.deletion_timestamp.is_none());
    assert!(
        owner_names(&dep).is_empty(),
        "its reference to the owner is removed"
    );
    let dep2 = api.get("dep-of-two").await.expect("the dependent stays");
    assert_eq!(owner_names(&dep2), vec!["other-owner".to_string()]);
}

async fn a_dependent_with_two_owners_survives_while_one_owner_remains(env: Env) {
    let api = env.api::<ConfigMap>();
    let a = create(&api, &cm("owner-a")).await;
    let b = create(&api, &cm("owner-b")).await;
    create(&api, &owned_by("dep", &[&a, &b])).await;

    api.delete("owner-a", &DeleteParams::background())
        .await
        .expect("delete owner a");
    // The garbage collector removes references to owners that are gone.
    let dep = env
        .wait_for(
            &api,
            "dep",
            |o: Option<&ConfigMap>| o.is_some_and(|c| owner_names(c) == ["owner-b"]),
            "the reference to owner-a is dropped",
        )
        .await
        .expect("owner b still holds it");
    assert!(dep.metadata.deletion_timestamp.is_none());

    api.delete("owner-b", &DeleteParams::background())
        .await
        .expect("delete owner b");
    env.wait_gone(&api, "dep").await;
}

async fn an_object_whose_only_owner_does_not_exist_is_collected(env: Env) {
    let api = env.api::<ConfigMap>();
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
    env.wait_gone(&api, "orphan").await;
}

async fn foreground_deletion_spares_dependents_with_another_live_owner(env: Env) {
    let api = env.api::<ConfigMap>();
    let a = create(&api, &cm("owner-a")).await;
    let b = create(&api, &cm("owner-b")).await;
    create(&api, &owned_by("shared", &[&a, &b])).await;
    api.delete("owner-a", &DeleteParams::foreground())
        .await
        .expect("delete a");
    env.wait_gone(&api, "owner-a").await;
    let shared = env
        .wait_for(
            &api,
            "shared",
            |o: Option<&ConfigMap>| o.is_some_and(|c| owner_names(c) == ["owner-b"]),
            "the reference to owner-a is dropped",
        )
        .await
        .expect("kept for owner b");
    assert!(shared.metadata.deletion_timestamp.is_none());
}

// --- namespaces -----------------------------------------------------------------------------------

async fn deleting_a_namespace_with_held_content_leaves_it_terminating_until_the_content_is_gone(
    env: Env,
) {
    let namespaces = env.all::<Namespace>();
    let ns = env.name("doomed");
    env.create_namespace(&ns).await;
    let api = env.api_in::<ConfigMap>(&ns);
    create(&api, &held("held")).await;
    create(&api, &cm("plain")).await;

    let answer = namespaces
        .delete(&ns, &DeleteParams::background())
        .await
        .expect("delete namespace")
        .left_or_else(|other| panic!("expected the object, still being deleted, got: {other:?}"));
    assert_eq!(phase(&answer).as_deref(), Some("Terminating"));
    assert!(answer.metadata.deletion_timestamp.is_some());

    let err = api_err(api.create(&PostParams::default(), &cm("x")).await);
    assert_eq!(err.code, 403);
    assert_eq!(err.reason, "Forbidden");
    assert_eq!(
        err.message,
        format!(
            "configmaps \"x\" is forbidden: unable to create new content in namespace {ns} because it is being terminated"
        )
    );

    env.wait_gone(&api, "plain").await;
    env.wait_for(&api, "held", is_marked, "the held content is marked")
        .await;
    let now = namespaces.get(&ns).await.expect("still there");
    assert_eq!(phase(&now).as_deref(), Some("Terminating"));

    release(&api, "held").await;
    assert!(!exists(&api, "held").await);
    env.wait_gone(&namespaces, &ns).await;
}

async fn deleting_a_namespace_removes_its_content_and_then_itself(env: Env) {
    let namespaces = env.all::<Namespace>();
    let ns = env.name("quick");
    env.create_namespace(&ns).await;
    let api = env.api_in::<ConfigMap>(&ns);
    create(&api, &cm("a")).await;
    create(&api, &cm("b")).await;

    namespaces
        .delete(&ns, &DeleteParams::background())
        .await
        .expect("delete namespace");
    env.wait_gone(&namespaces, &ns).await;
    assert!(!exists(&api, "a").await);
    assert!(!exists(&api, "b").await);

    let err = api_err(api.create(&PostParams::default(), &cm("c")).await);
    assert_eq!(err.code, 404);
    assert_eq!(err.message, format!("namespaces \"{ns}\" not found"));
}

async fn marking_an_object_for_deletion_bumps_its_generation(env: Env) {
    let jobs = env.api::<Job>();
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "g", "finalizers": [HOLD]},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}
    }))
    .expect("job");
    let created = jobs
        .create(&PostParams::default(), &job)
        .await
        .expect("create");
    assert_eq!(created.metadata.generation, Some(1));
    jobs.delete("g", &DeleteParams::background())
        .await
        .expect("delete");
    let marked = jobs.get("g").await.expect("held");
    assert_eq!(
        marked.metadata.generation,
        Some(2),
        "controllers filtering on generation see it"
    );
    jobs.patch(
        "g",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .expect("release");
}

async fn the_default_namespaces_may_not_be_deleted(env: Env) {
    let namespaces = env.all::<Namespace>();
    for name in ["default", "kube-system", "kube-public"] {
        let e = api_err(namespaces.delete(name, &DeleteParams::default()).await);
        assert_eq!((e.code, e.reason.as_str()), (403, "Forbidden"));
        assert_eq!(
            e.message,
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
        );
    }
}

async fn namespace_spec_finalizers_change_only_through_finalize(env: Env) {
    let namespaces = env.all::<Namespace>();
    let name = env.name("fin");
    env.create_namespace(&name).await;
    let mut ns = namespaces.get(&name).await.expect("get");
    ns.spec = None;
    let replaced = namespaces
        .replace(&name, &PostParams::default(), &ns)
        .await
        .expect("replace");
    assert_eq!(
        replaced.spec.and_then(|s| s.finalizers),
        Some(vec!["kubernetes".to_string()])
    );

    let raw = env
        .raw(
            "PUT",
            &format!("/api/v1/namespaces/{name}/finalize"),
            "application/json",
            format!(
                r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}"}},"spec":{{"finalizers":[]}}}}"#
            ),
        )
        .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert!(raw.body["spec"].get("finalizers").is_none(), "{}", raw.text);
    let raw = env
        .raw(
            "GET",
            &format!("/api/v1/namespaces/{name}/finalize"),
            "",
            "",
        )
        .await;
    assert_eq!(raw.code, 405, "{}", raw.text);
}
