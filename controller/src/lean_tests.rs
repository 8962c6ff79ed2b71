use api::kueue::{ClusterQueue, Workload};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, ObjectList, PostParams};
use kube::core::WatchEvent;
use rstest::rstest;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::Lean;
use crate::writer::{FIELD_MANAGER, Writer, Written};

fn managed_fields() -> Value {
    json!([
        {"manager": "kubectl", "operation": "Update", "apiVersion": "kueue.x-k8s.io/v1beta2",
         "time": "2026-11-23T00:00:00Z", "fieldsType": "FieldsV1",
         "fieldsV1": {"f:spec": {"f:queueName": {}, "f:podSets": {"k:{\"name\":\"main\"}": {".": {}, "f:count": {}}}}}},
        {"manager": "kueue", "operation": "Update", "apiVersion": "kueue.x-k8s.io/v1beta2",
         "time": "2026-11-23T00:00:01Z", "fieldsType": "FieldsV1", "subresource": "status",
         "fieldsV1": {"f:status": {"f:conditions": {}}}},
    ])
}

fn workload() -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {
            "name": "wl", "namespace": "default", "resourceVersion": "7", "uid": "u-1",
            "labels": {"team": "a"}, "managedFields": managed_fields(),
            "annotations": {"note": "kept"},
        },
        "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 2, "template": {"spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}}]}}}]},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False", "reason": "Pending",
            "message": "waiting", "lastTransitionTime": "2026-11-23T00:00:01Z"}]},
    })
}

fn job() -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"managedFields": managed_fields(), "name": "job", "namespace": "default"},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}],
            "restartPolicy": "Never"}}},
    })
}

fn cluster_queue() -> Value {
    json!({
        "spec": {"namespaceSelector": {}},
        "metadata": {"name": "cq", "managedFields": managed_fields()},
        "kind": "ClusterQueue", "apiVersion": "kueue.x-k8s.io/v1beta2",
    })
}

/// Decoded lean, the object equals its full decoding with managedFields cleared.
fn same_but_managed_fields<K>(text: &str)
where
    K: DeserializeOwned + kube::Resource + PartialEq + std::fmt::Debug,
{
    let mut full: K = serde_json::from_str(text).expect("decodes");
    assert!(
        !full
            .meta()
            .managed_fields
            .as_deref()
            .unwrap_or_default()
            .is_empty()
    );
    full.meta_mut().managed_fields = None;
    let lean: Lean<K> = serde_json::from_str(text).expect("decodes lean");
    assert_eq!(lean.0, full);
}

/// The workload's JSON with its metadata's keys in `order` (the rest after them, as serde_json
/// sorts them) and the object's top-level keys in `top` order.
fn reordered(top: &[&str], meta_first: &[&str]) -> String {
    let v = workload();
    let field = |obj: &Value, k: &str| format!("{}:{}", json!(k), obj[k]);
    let meta = &v["metadata"];
    let mut meta_keys: Vec<&str> = meta_first.to_vec();
    meta_keys.extend(
        meta.as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .filter(|k| !meta_first.contains(k)),
    );
    let meta_text = meta_keys
        .iter()
        .map(|k| field(meta, k))
        .collect::<Vec<_>>()
        .join(",");
    let top_text = top
        .iter()
        .map(|k| match *k {
            "metadata" => format!("\"metadata\":{{{meta_text}}}"),
            k => field(&v, k),
        })
        .collect::<Vec<_>>()
        .join(",");
    format!("{{{top_text}}}")
}

#[rstest]
#[case::as_served(&["apiVersion", "kind", "metadata", "spec", "status"], &["name"])]
#[case::managed_fields_first(&["apiVersion", "kind", "metadata", "spec", "status"], &["managedFields"])]
#[case::managed_fields_last(
    &["apiVersion", "kind", "metadata", "spec", "status"],
    &["annotations", "labels", "name", "namespace", "resourceVersion", "uid"],
)]
#[case::metadata_first(&["metadata", "status", "spec", "kind", "apiVersion"], &["uid"])]
#[case::metadata_last(&["status", "spec", "kind", "apiVersion", "metadata"], &["labels"])]
fn a_workload_decodes_without_managed_fields(#[case] top: &[&str], #[case] meta_first: &[&str]) {
    same_but_managed_fields::<Workload>(&reordered(top, meta_first));
}

#[test]
fn other_kinds_decode_without_managed_fields() {
    same_but_managed_fields::<Job>(&job().to_string());
    same_but_managed_fields::<ClusterQueue>(&cluster_queue().to_string());
}

#[test]
fn escaped_keys_are_recognised() {
    // serde_json hands escaped keys over as owned strings.
    let text = workload()
        .to_string()
        .replacen("\"metadata\"", r#""metad\u0061ta""#, 1)
        .replacen("\"managedFields\"", r#""m\u0061nagedFields""#, 1);
    same_but_managed_fields::<Workload>(&text);
}

#[test]
fn a_managed_fields_key_elsewhere_is_kept() {
    // Only metadata's managedFields go; a label or annotation of that name is data.
    let mut v = workload();
    v["metadata"]["labels"]["managedFields"] = json!("x");
    v["metadata"]["annotations"]["managedFields"] = json!("y");
    let lean: Lean<Workload> = serde_json::from_value(v).expect("decodes");
    assert_eq!(lean.0.metadata.labels.unwrap()["managedFields"], "x");
    assert_eq!(lean.0.metadata.annotations.unwrap()["managedFields"], "y");
}

#[rstest]
#[case::type_first(json!({"type": "MODIFIED", "object": workload()}))]
// Object before type: serde buffers the object before decoding it.
#[case::object_first(json!({"object": workload(), "type": "MODIFIED"}))]
fn watch_events_decode_lean(#[case] line: Value) {
    let event: WatchEvent<Lean<Workload>> =
        serde_json::from_str(&line.to_string()).expect("decodes");
    let WatchEvent::Modified(Lean(wl)) = event else {
        panic!("a modification: {event:?}");
    };
    assert_eq!(wl.metadata.managed_fields, None);
    assert_eq!(wl.metadata.resource_version.as_deref(), Some("7"));
    assert_eq!(wl.spec.queue_name.as_deref(), Some("lq"));
}

#[test]
fn a_job_in_a_buffered_watch_event_decodes_lean() {
    // A Job's metadata is an `Option`; the object before its type is buffered first.
    let line = json!({"object": job(), "type": "ADDED"}).to_string();
    let event: WatchEvent<Lean<Job>> = serde_json::from_str(&line).expect("decodes");
    let WatchEvent::Added(Lean(job)) = event else {
        panic!("an addition: {event:?}");
    };
    assert_eq!(job.metadata.managed_fields, None);
    assert_eq!(job.metadata.name.as_deref(), Some("job"));
}

#[test]
fn a_list_decodes_each_item_lean() {
    // How a watch starts: a list of every object.
    let list = json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "WorkloadList",
        "metadata": {"resourceVersion": "9"},
        "items": [workload(), workload()],
    });
    let list: ObjectList<Lean<Workload>> = serde_json::from_value(list).expect("decodes");
    assert_eq!(list.items.len(), 2);
    for Lean(wl) in list.items {
        assert_eq!(wl.metadata.managed_fields, None);
        assert_eq!(wl.metadata.labels.unwrap_or_default()["team"], "a");
    }
}

#[rstest]
#[case::metadata_not_an_object(json!({"metadata": 5, "spec": {"podSets": []}}))]
#[case::spec_not_an_object(json!({"metadata": {"name": "wl"}, "spec": "nope"}))]
#[case::bad_field_in_metadata(json!({"metadata": {"name": 5}, "spec": {"podSets": []}}))]
fn errors_read_as_without_lean(#[case] object: Value) {
    let text = object.to_string();
    let full = serde_json::from_str::<Workload>(&text).expect_err("invalid");
    let lean = serde_json::from_str::<Lean<Workload>>(&text).expect_err("invalid");
    assert_eq!(lean.to_string(), full.to_string());
}

#[test]
fn it_serializes_as_the_object() {
    let wl: Workload = serde_json::from_value(workload()).expect("decodes");
    assert_eq!(
        serde_json::to_value(Lean::of(&wl)).expect("encodes"),
        serde_json::to_value(&wl).expect("encodes")
    );
}

/// The API server keeps an object's managedFields when the controller writes it lean: the
/// creator's entry stays, and the controller's own is added.
#[tokio::test(start_paused = true)]
async fn a_lean_write_keeps_the_servers_managed_fields() {
    let mut builder = fake_apiserver::FakeApiServer::builder();
    for (file, yaml) in api::CHECKED_IN_CRDS {
        builder = builder.crds_yaml(file, yaml);
    }
    let server = builder.build().expect("server starts");
    let client = server.client();
    let api: Api<Workload> = Api::namespaced(client.clone(), "default");
    let mut wl: Workload = serde_json::from_value(workload()).expect("decodes");
    wl.metadata = kube::api::ObjectMeta {
        name: Some("wl".into()),
        ..Default::default()
    };
    wl.status = None;
    let pp = PostParams {
        field_manager: Some("tester".into()),
        ..Default::default()
    };
    api.create(&pp, &wl).await.expect("created");

    let lean: Api<Lean<Workload>> = Api::namespaced(client.clone(), "default");
    let Lean(mut read) = lean.get("wl").await.expect("read");
    assert_eq!(read.metadata.managed_fields, None);
    read.status = serde_json::from_value(workload()["status"].clone()).expect("status");
    let writer = Writer::new(client, crate::Clock::system());
    let Written::Ok(written) = writer.replace_status(&read).await.expect("written") else {
        panic!("the write was stale");
    };
    assert_eq!(written.metadata.managed_fields, None);

    let stored = api.get("wl").await.expect("read");
    let mut managers: Vec<_> = stored
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .map(|e| (e.manager.unwrap_or_default(), e.subresource))
        .collect();
    managers.sort();
    assert_eq!(
        managers,
        [
            (FIELD_MANAGER.to_string(), Some("status".to_string())),
            ("tester".to_string(), None),
        ]
    );
    assert_eq!(stored.status, written.status);
}
