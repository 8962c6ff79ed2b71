//! The garbage collector's decisions: what on a worker has no live owner on the manager, and
//! when it runs.

use std::time::Duration;

use super::*;
use api::constants::label;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use rstest::rstest;

const ORIGIN: &str = "multikueue";

fn labels(origin: &str, workload: Option<&str>) -> std::collections::BTreeMap<String, String> {
    let mut l = std::collections::BTreeMap::from([(
        label::MULTIKUEUE_ORIGIN.to_string(),
        origin.to_string(),
    )]);
    if let Some(wl) = workload {
        l.insert(label::PREBUILT_WORKLOAD_NAME.to_string(), wl.to_string());
    }
    l
}

fn local(name: &str, deleting: bool) -> Workload {
    let mut wl = Workload::new(name, Default::default());
    wl.metadata.namespace = Some("default".into());
    wl.metadata.resource_version = Some("1".into());
    if deleting {
        wl.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
    }
    wl
}

fn remote_workload(name: &str, origin: &str, owner: Option<&str>) -> Workload {
    let mut wl = local(name, false);
    wl.metadata.labels = Some(labels(origin, None));
    wl.metadata.owner_references = owner.map(|job| {
        vec![OwnerReference {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: job.into(),
            uid: format!("uid-{job}"),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]
    });
    wl
}

fn remote_job(name: &str, origin: &str, workload: &str) -> Job {
    let mut job = Job::default();
    job.metadata.name = Some(name.into());
    job.metadata.namespace = Some("default".into());
    job.metadata.resource_version = Some("1".into());
    job.metadata.labels = Some(labels(origin, Some(workload)));
    job
}

/// The manager holds `locals`; the worker holds `remotes` (name, origin, owning job) and
/// `jobs` (name, origin, workload).
fn collect(
    locals: &[(&str, bool)],
    remotes: &[(&str, &str, Option<&str>)],
    jobs: &[(&str, &str, &str)],
) -> Vec<Orphan> {
    let mut world = World::default();
    for (name, deleting) in locals {
        world.workloads.apply(local(name, *deleting));
    }
    let mut worker = Worker::default();
    for (name, origin, owner) in remotes {
        worker
            .workloads
            .apply(remote_workload(name, origin, *owner));
    }
    for (name, origin, wl) in jobs {
        worker.jobs.apply(remote_job(name, origin, wl));
    }
    orphans(&world, &worker, ORIGIN)
}

fn workload_orphan(name: &str, job: Option<&str>) -> Orphan {
    Orphan::Workload {
        key: format!("default/{name}"),
        job: job.map(|j| ("batch/v1".into(), "Job".into(), format!("default/{j}"))),
    }
}

#[rstest]
#[case::a_copy_whose_workload_is_gone_goes_with_its_job(
    &[], &[("wl-a", ORIGIN, Some("a"))], &[("a", ORIGIN, "wl-a")],
    vec![workload_orphan("wl-a", Some("a"))])]
#[case::a_copy_whose_workload_is_being_deleted_goes(
    &[("wl-a", true)], &[("wl-a", ORIGIN, None)], &[],
    vec![workload_orphan("wl-a", None)])]
#[case::a_copy_of_a_live_workload_stays(
    &[("wl-a", false)], &[("wl-a", ORIGIN, Some("a"))], &[("a", ORIGIN, "wl-a")], vec![])]
#[case::another_managers_copy_is_not_ours(
    &[], &[("wl-a", "other-manager", None)], &[], vec![])]
#[case::a_job_not_yet_adopting_its_copy_is_found_by_its_label(
    &[], &[("wl-a", ORIGIN, None)], &[("a", ORIGIN, "wl-a")],
    vec![workload_orphan("wl-a", Some("a"))])]
#[case::a_job_left_without_its_copy_goes_too(
    &[], &[], &[("a", ORIGIN, "wl-a")], vec![Orphan::Job { key: "default/a".into() }])]
#[case::a_job_of_a_live_workload_stays(&[("wl-a", false)], &[], &[("a", ORIGIN, "wl-a")], vec![])]
#[case::another_managers_job_is_not_ours(&[], &[], &[("a", "other-manager", "wl-a")], vec![])]
fn remote_objects_without_a_live_workload_are_collected(
    #[case] locals: &[(&str, bool)],
    #[case] remotes: &[(&str, &str, Option<&str>)],
    #[case] jobs: &[(&str, &str, &str)],
    #[case] expected: Vec<Orphan>,
) {
    assert_eq!(collect(locals, remotes, jobs), expected);
}

fn at(seconds: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + seconds).expect("a time")
}

#[test]
fn collections_run_every_interval_starting_one_interval_after_start() {
    let mut gc = Collector::default();
    let interval = Duration::from_secs(60);
    assert!(!gc.due(interval, at(0)), "not at start");
    assert_eq!(gc.next_wake(), Some(at(60)));
    assert!(!gc.due(interval, at(59)));
    assert!(gc.due(interval, at(60)));
    assert_eq!(gc.next_wake(), Some(at(120)));
    assert!(!gc.due(interval, at(90)));
    // A late pass (the loop was busy) counts the next interval from when it ran.
    assert!(gc.due(interval, at(200)));
    assert_eq!(gc.next_wake(), Some(at(260)));
}

#[test]
fn an_interval_of_zero_disables_collection() {
    let mut gc = Collector::default();
    for t in [0, 60, 3600] {
        assert!(!gc.due(Duration::ZERO, at(t)));
        assert_eq!(gc.next_wake(), None);
    }
}
