use api::kueue::{AdmissionCheckState, WorkloadSchedulingStatsEviction};
use rstest::rstest;
use serde_json::json;

use super::*;

fn at(s: &str) -> Time {
    Time(s.parse().expect("a timestamp"))
}

fn now() -> Time {
    at("2026-01-01T00:05:00Z")
}

/// A workload holding quota, with one admission check in `check`.
fn reserved(check: CheckState) -> Workload {
    let mut wl = Workload::new("wl", Default::default());
    wl.metadata.generation = Some(1);
    let mut status = WorkloadStatus::default();
    for type_ in [cond::QUOTA_RESERVED, cond::ADMITTED] {
        set(
            &mut status,
            Some(1),
            type_,
            true,
            type_,
            "",
            &at("2026-01-01T00:00:00Z"),
        );
    }
    status.admission_checks = vec![AdmissionCheckState {
        name: "check".into(),
        state: check,
        last_transition_time: at("2026-01-01T00:01:00Z"),
        message: "said so".into(),
        requeue_after_seconds: None,
        retry_count: None,
        pod_set_updates: vec![],
    }];
    wl.status = Some(status);
    wl
}

fn counters(wl: &Workload) -> Vec<(String, String, i32)> {
    wl.status
        .as_ref()
        .and_then(|s| s.scheduling_stats.as_ref())
        .map(|s| {
            s.evictions
                .iter()
                .map(|e| (e.reason.clone(), e.underlying_cause.clone(), e.count))
                .collect()
        })
        .unwrap_or_default()
}

fn evicted_reason(wl: &Workload) -> String {
    let status = wl.status.as_ref().expect("a status");
    conditions::find(&status.conditions, cond::EVICTED)
        .expect("an Evicted condition")
        .reason
        .clone()
}

/// Runs the lifecycle as the reconciler would, writing each step, until nothing is left to do.
fn settle(wl: &mut Workload) {
    let ctx = Context {
        now: now(),
        local_queue: None,
        cluster_queue: None,
        cluster_queue_active: true,
        owned_by_job: false,
        observability: true,
    };
    for _ in 0..10 {
        if matches!(step(wl, &ctx), Step::Idle | Step::WakeAt(_)) {
            return;
        }
    }
    panic!("the lifecycle did not settle: {:?}", wl.status);
}

fn counted(reason: &str, cause: &str, count: i32) -> (String, String, i32) {
    (reason.to_owned(), cause.to_owned(), count)
}

#[rstest]
#[case::preemption(reason::PREEMPTED, None, reason::PREEMPTED, "")]
#[case::admission_check_retry(reason::ADMISSION_CHECK, None, "AdmissionCheck", "")]
#[case::deactivated_by_the_user(reason::DEACTIVATED, None, "Deactivated", "")]
#[case::deactivated_by_a_rejected_check(
    reason::DEACTIVATED_DUE_TO_ADMISSION_CHECK,
    None,
    "Deactivated",
    "AdmissionCheck"
)]
#[case::deactivated_by_the_requeuing_limit(
    "DeactivatedDueToRequeuingLimitExceeded",
    None,
    "Deactivated",
    "RequeuingLimitExceeded"
)]
#[case::deactivated_by_the_maximum_execution_time(
    "DeactivatedDueToMaximumExecutionTimeExceeded",
    None,
    "Deactivated",
    "MaximumExecutionTimeExceeded"
)]
#[case::cluster_queue_stopped(reason::CLUSTER_QUEUE_STOPPED, None, "ClusterQueueStopped", "")]
#[case::local_queue_stopped(reason::LOCAL_QUEUE_STOPPED, None, "LocalQueueStopped", "")]
#[case::pods_never_ready(reason::PODS_READY_TIMEOUT, None, "PodsReadyTimeout", "WaitForStart")]
#[case::pods_not_yet_ready(
    reason::PODS_READY_TIMEOUT,
    Some("WaitForStart"),
    "PodsReadyTimeout",
    "WaitForStart"
)]
#[case::pods_not_recovered(
    reason::PODS_READY_TIMEOUT,
    Some("WaitForRecovery"),
    "PodsReadyTimeout",
    "WaitForRecovery"
)]
fn each_eviction_is_counted_under_kueues_reason_and_cause(
    #[case] evicted_as: &str,
    #[case] pods_ready_false_because: Option<&str>,
    #[case] expected_reason: &str,
    #[case] expected_cause: &str,
) {
    let mut wl = reserved(CheckState::Ready);
    let status = wl.status.as_mut().expect("a status");
    if let Some(why) = pods_ready_false_because {
        set(status, Some(1), cond::PODS_READY, false, why, "", &now());
    }
    evict(status, Some(1), &now(), evicted_as, "why");
    assert_eq!(counters(&wl), [counted(expected_reason, expected_cause, 1)]);
    assert_eq!(evicted_reason(&wl), evicted_as);
}

#[test]
fn the_same_kind_again_raises_its_count_and_a_new_kind_is_appended() {
    let mut wl = reserved(CheckState::Ready);
    let status = wl.status.as_mut().expect("a status");
    for evicted_as in [
        reason::PREEMPTED,
        reason::DEACTIVATED_DUE_TO_ADMISSION_CHECK,
        reason::PREEMPTED,
        reason::DEACTIVATED,
        reason::PREEMPTED,
    ] {
        evict(status, Some(1), &now(), evicted_as, "why");
    }
    assert_eq!(
        counters(&wl),
        [
            counted("Preempted", "", 3),
            counted("Deactivated", "AdmissionCheck", 1),
            counted("Deactivated", "", 1),
        ]
    );
}

#[test]
fn a_retry_check_evicts_and_counts_once() {
    let mut wl = reserved(CheckState::Retry);
    settle(&mut wl);
    assert_eq!(evicted_reason(&wl), "AdmissionCheck");
    assert_eq!(counters(&wl), [counted("AdmissionCheck", "", 1)]);
}

#[test]
fn a_rejected_check_deactivates_and_counts_deactivated_due_to_admission_check_once() {
    let mut wl = reserved(CheckState::Rejected);
    settle(&mut wl);
    assert_eq!(wl.spec.active, Some(false));
    assert_eq!(evicted_reason(&wl), "DeactivatedDueToAdmissionCheck");
    assert_eq!(counters(&wl), [counted("Deactivated", "AdmissionCheck", 1)]);
}

#[test]
fn a_workload_the_user_deactivates_counts_deactivated_once() {
    let mut wl = reserved(CheckState::Ready);
    wl.spec.active = Some(false);
    settle(&mut wl);
    assert_eq!(evicted_reason(&wl), "Deactivated");
    assert_eq!(counters(&wl), [counted("Deactivated", "", 1)]);
}

#[test]
fn an_evicted_workload_deactivated_later_is_not_counted_again() {
    let mut wl = reserved(CheckState::Retry);
    settle(&mut wl);
    wl.spec.active = Some(false);
    settle(&mut wl);
    assert_eq!(counters(&wl), [counted("AdmissionCheck", "", 1)]);
}

#[test]
fn the_counters_are_written_with_an_empty_underlying_cause() {
    let mut status = WorkloadStatus::default();
    evict(&mut status, Some(1), &now(), reason::PREEMPTED, "why");
    let written = serde_json::to_value(&status).expect("serialises");
    assert_eq!(
        written["schedulingStats"],
        json!({"evictions": [{"reason": "Preempted", "underlyingCause": "", "count": 1}]})
    );
    let read: WorkloadStatus = serde_json::from_value(written).expect("reads back");
    assert_eq!(
        read.scheduling_stats.map(|s| s.evictions),
        Some(vec![WorkloadSchedulingStatsEviction {
            reason: "Preempted".into(),
            underlying_cause: String::new(),
            count: 1,
        }])
    );
}
