#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use api::kueue::{ResourceFlavorSpec, Workload};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use rstest::rstest;
use serde_json::{Value, json};

use super::*;

const LABEL: &str = "kueue.x-k8s.io/prebuilt-workload-name";

fn meta(labels: &[(&str, &str)], annotations: &[(&str, &str)]) -> ObjectMeta {
    let map = |pairs: &[(&str, &str)]| {
        (!pairs.is_empty()).then(|| {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>()
        })
    };
    ObjectMeta {
        labels: map(labels),
        annotations: map(annotations),
        ..Default::default()
    }
}

/// A suspended job of `parallelism` pods of `cpu`, image `image`.
fn job_with(parallelism: i32, cpu: &str, image: &str) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": "demo", "namespace": "ns", "uid": "job-uid",
                     "labels": {"kueue.x-k8s.io/queue-name": "lq", LABEL: "wl"}},
        "spec": {"suspend": true, "parallelism": parallelism, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": image,
                            "resources": {"requests": {"cpu": cpu}}}]}}},
    }))
    .unwrap()
}

fn job() -> Job {
    job_with(2, "1", "busybox")
}

/// The Workload MultiKueue copied to the worker for `job()`: no owner yet.
fn prebuilt() -> Workload {
    let mut wl = Workload::new(
        "wl",
        api::kueue::WorkloadSpec {
            pod_sets: podsets_from_job(&job()),
            queue_name: Some("lq".to_owned()),
            ..Default::default()
        },
    );
    wl.metadata.namespace = Some("ns".to_owned());
    wl
}

fn owned(mut wl: Workload, name: &str, uid: &str) -> Workload {
    wl.metadata.owner_references = Some(vec![
        serde_json::from_value(
            json!({"apiVersion": "batch/v1", "kind": "Job", "name": name,
                                      "uid": uid, "controller": true}),
        )
        .unwrap(),
    ]);
    wl
}

fn condition(type_: &str) -> Value {
    json!({"type": type_, "status": "True", "reason": type_, "message": "",
           "lastTransitionTime": "2026-01-01T00:00:00Z"})
}

/// Holding quota in flavor `tainted` (whose toleration the pods get), admitted or not.
fn reserved(mut wl: Workload, admitted: bool) -> Workload {
    let mut conditions = vec![condition("QuotaReserved")];
    if admitted {
        conditions.push(condition("Admitted"));
    }
    wl.status = Some(
        serde_json::from_value(json!({
            "conditions": conditions,
            "admission": {"clusterQueue": "cq", "podSetAssignments": [
                {"name": "main", "flavors": {"cpu": "tainted"}, "count": 2}]},
        }))
        .unwrap(),
    );
    wl
}

fn flavors() -> BTreeMap<String, ResourceFlavorSpec> {
    let tainted = serde_json::from_value(json!({
        "nodeLabels": {"pool": "tainted"},
        "tolerations": [{"key": "pool", "operator": "Equal", "value": "tainted",
                         "effect": "NoSchedule"}],
    }))
    .unwrap();
    BTreeMap::from([("tainted".to_owned(), tainted)])
}

/// The job as the worker's Kueue starts it under `wl`.
fn started(mut job: Job, wl: &Workload) -> Job {
    let infos = admitted_infos(wl, &flavors()).unwrap();
    start_job(&mut job, &infos).unwrap();
    job
}

// ---------- the name ----------

#[rstest]
#[case::label(meta(&[(LABEL, "wl")], &[]), Some("wl".to_owned()))]
#[case::none(meta(&[], &[]), None)]
#[case::empty_label(meta(&[(LABEL, "")], &[]), None)]
#[case::long_annotation(meta(&[], &[(LABEL, &"w".repeat(64))]), Some("w".repeat(64)))]
#[case::short_annotation_ignored(meta(&[], &[(LABEL, "wl")]), None)]
#[case::label_first(meta(&[(LABEL, "wl")], &[(LABEL, &"w".repeat(64))]), Some("wl".to_owned()))]
fn the_prebuilt_name_is_the_label_or_a_long_annotation(
    #[case] meta: ObjectMeta,
    #[case] want: Option<String>,
) {
    assert_eq!(prebuilt_workload_name(&meta), want.as_deref());
}

#[rstest]
#[case::short("job-demo-abcde", true)]
#[case::longest_label(&"w".repeat(63), true)]
#[case::too_long_for_a_label(&"w".repeat(64), false)]
fn setting_the_name_uses_a_label_when_it_fits(#[case] name: &str, #[case] in_label: bool) {
    let mut meta = ObjectMeta::default();
    set_prebuilt_workload_name(&mut meta, name);
    assert_eq!(meta.labels.is_some(), in_label);
    assert_eq!(meta.annotations.is_some(), !in_label);
    assert_eq!(prebuilt_workload_name(&meta), Some(name));
}

// ---------- adoption ----------

#[test]
fn adopting_makes_the_job_controller_and_labels_its_uid() {
    let mut wl = prebuilt();
    assert!(adoptable_by(&wl, &job()));
    assert!(adopt(&mut wl, &job()));
    let owner = controller_of(&wl).unwrap();
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
        ("Job", "demo", "job-uid")
    );
    assert_eq!(owner.block_owner_deletion, Some(true));
    assert_eq!(
        wl.metadata.labels.as_ref().unwrap().get(JOB_UID_LABEL),
        Some(&"job-uid".to_owned())
    );
    assert!(!adopt(&mut wl, &job()), "adopting twice changes nothing");
    assert_eq!(wl.metadata.owner_references.as_ref().unwrap().len(), 1);
}

#[test]
fn a_workload_another_object_controls_is_not_adoptable() {
    let wl = owned(prebuilt(), "demo", "another-uid");
    assert!(!adoptable_by(&wl, &job()));
    assert!(adoptable_by(&owned(prebuilt(), "demo", "job-uid"), &job()));
}

// ---------- in sync ----------

#[rstest]
#[case::same(job(), owned(prebuilt(), "demo", "job-uid"), true)]
#[case::other_image(job_with(2, "1", "nginx"), owned(prebuilt(), "demo", "job-uid"), false)]
#[case::other_count(
    job_with(3, "1", "busybox"),
    owned(prebuilt(), "demo", "job-uid"),
    false
)]
#[case::same_quantity_spelt_otherwise(
    job_with(2, "1000m", "busybox"),
    owned(prebuilt(), "demo", "job-uid"),
    true
)]
#[case::controller_of_another_name(job(), owned(prebuilt(), "other", "job-uid"), false)]
#[case::suspended_while_holding_quota(
    job(),
    reserved(owned(prebuilt(), "demo", "job-uid"), false),
    true
)]
#[case::suspended_while_admitted(job(), reserved(owned(prebuilt(), "demo", "job-uid"), true), true)]
#[case::running_without_the_flavor_tolerations_while_not_admitted(
    {
        let mut job = job();
        job.spec.as_mut().unwrap().suspend = Some(false);
        job
    },
    reserved(owned(prebuilt(), "demo", "job-uid"), false),
    false
)]
#[case::running_admitted(
    started(job(), &reserved(owned(prebuilt(), "demo", "job-uid"), true)),
    reserved(owned(prebuilt(), "demo", "job-uid"), true),
    true
)]
#[case::running_with_another_image(
    {
        let wl = reserved(owned(prebuilt(), "demo", "job-uid"), true);
        started(job_with(2, "1", "nginx"), &wl)
    },
    reserved(owned(prebuilt(), "demo", "job-uid"), true),
    false
)]
fn a_prebuilt_workload_is_in_sync_while_it_describes_the_job(
    #[case] job: Job,
    #[case] wl: Workload,
    #[case] want: bool,
) {
    assert_eq!(in_sync(&job, &wl, &flavors()), want);
}

#[test]
fn an_absent_list_is_an_empty_one() {
    let mut job = job();
    let containers = &mut job
        .spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .containers;
    containers[0].env = Some(Vec::new());
    assert!(in_sync(
        &job,
        &owned(prebuilt(), "demo", "job-uid"),
        &flavors()
    ));
}
