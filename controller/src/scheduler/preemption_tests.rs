use api::kueue::PreemptionPolicy::{self, Any, LowerOrNewerEqualPriority, LowerPriority, Never};
use rstest::rstest;

use super::*;
use crate::scheduler::common::Mode;
use crate::scheduler::flavor::assign_flavors;
use crate::scheduler::snapshot::ReservedWorkload;
use crate::scheduler::test_support::{cq, flavor_quotas, pending_cpu, quota, reserved, snapshot};

/// Assigns flavors to a one-pod workload of `cpu` millicores and priority `priority` in `queue`,
/// then asks for targets; returns `(key, reason)` pairs.
fn targets_for(
    s: &Snapshot,
    queue: &str,
    priority: i32,
    cpu: i64,
) -> Vec<(String, PreemptionReason)> {
    let wl = pending_cpu("incoming", priority, cpu);
    let assignment = assign_flavors(s, queue, &wl);
    find_targets(s, queue, &wl, &assignment)
        .into_iter()
        .map(|t| (t.key, t.reason))
        .collect()
}

fn keys(targets: &[(String, PreemptionReason)]) -> Vec<&str> {
    targets.iter().map(|(k, _)| k.as_str()).collect()
}

/// Queue `q` (nominal 10 cpu, policy `within`) full with one workload `victim` of 10 cpu.
fn full_queue(within: PreemptionPolicy, victim: ReservedWorkload) -> Snapshot {
    let mut s = snapshot(
        &["default"],
        vec![
            cq("q")
                .cpu("default", "10", None, None)
                .preemption(within, Never)
                .build(),
        ],
    );
    s.add_workload("q", victim);
    s
}

#[rstest]
#[case::lower_priority_preempted(LowerPriority, 5, 2_000, true)]
#[case::equal_priority_kept_under_lower_priority(LowerPriority, 10, 2_000, false)]
#[case::higher_priority_kept(LowerPriority, 11, 2_000, false)]
#[case::newer_equal_priority_preempted(LowerOrNewerEqualPriority, 10, 2_000, true)]
#[case::older_equal_priority_kept(LowerOrNewerEqualPriority, 10, 500, false)]
#[case::never_preempts(Never, 0, 2_000, false)]
fn within_cluster_queue_policy(
    #[case] within: PreemptionPolicy,
    #[case] victim_priority: i32,
    #[case] victim_created: i64,
    #[case] preempted: bool,
) {
    // The incoming workload was created at 1000.
    let mut victim = reserved("victim", victim_priority, 0, &[("default", "cpu", 10_000)]);
    victim.queue_order_time = victim_created;
    let s = full_queue(within, victim);
    let targets = targets_for(&s, "q", 10, 4_000);
    if preempted {
        assert_eq!(
            targets,
            vec![("ns/victim".to_string(), PreemptionReason::InClusterQueue)]
        );
    } else {
        assert_eq!(targets, vec![]);
    }
}

/// Cohort `c`: `a` (nominal 10, empty) and `b` (nominal 10) holding `b_workloads`.
fn cohort(
    reclaim: PreemptionPolicy,
    within: PreemptionPolicy,
    b_workloads: Vec<ReservedWorkload>,
) -> Snapshot {
    let mut s = snapshot(
        &["default"],
        vec![
            cq("a")
                .cohort("c")
                .cpu("default", "10", None, None)
                .preemption(within, reclaim)
                .build(),
            cq("b").cohort("c").cpu("default", "10", None, None).build(),
        ],
    );
    for wl in b_workloads {
        s.add_workload("b", wl);
    }
    s
}

#[rstest]
#[case::any_takes_higher_priority_borrower(Any, 100, 16_000, vec!["ns/b2"])]
#[case::lower_priority_spares_higher_priority_borrower(LowerPriority, 100, 16_000, vec![])]
#[case::lower_priority_takes_lower_priority_borrower(LowerPriority, 1, 16_000, vec!["ns/b2"])]
#[case::never_reclaims(Never, 1, 16_000, vec![])]
fn reclaim_within_cohort(
    #[case] reclaim: PreemptionPolicy,
    #[case] priority: i32,
    #[case] b_used: i64,
    #[case] expected: Vec<&str>,
) {
    // b holds b1 (older) and b2 (newest); a needs 8 of its own 10 back.
    let b1 = reserved("b1", priority, 1, &[("default", "cpu", b_used / 2)]);
    let b2 = reserved("b2", priority, 2, &[("default", "cpu", b_used / 2)]);
    let s = cohort(reclaim, Never, vec![b1, b2]);
    let targets = targets_for(&s, "a", 10, 8_000);
    assert_eq!(keys(&targets), expected);
    assert!(
        targets
            .iter()
            .all(|(_, r)| *r == PreemptionReason::InCohortReclamation)
    );
}

#[test]
fn member_within_nominal_is_not_touched() {
    // a holds 6 itself (high priority); b uses exactly its nominal 10. a needs 8: only 4 are free
    // and b is not borrowing, so nothing can be reclaimed.
    let mut s = cohort(
        Any,
        LowerPriority,
        vec![reserved("b1", 0, 0, &[("default", "cpu", 10_000)])],
    );
    s.add_workload("a", reserved("own", 100, 0, &[("default", "cpu", 6_000)]));
    assert_eq!(targets_for(&s, "a", 10, 8_000), vec![]);
}

#[test]
fn reclaiming_stops_once_the_member_no_longer_borrows() {
    // Cohort of a, b, c (nominal 10 each). b borrows 1 (bw1 6 + bw2 5), c borrows 9 (c1 9 +
    // c2 10). a needs 10. Removing bw1 brings b within nominal, so bw2 is no longer a candidate
    // and c1 is taken next.
    let mut s = snapshot(
        &["default"],
        vec![
            cq("a")
                .cohort("c")
                .cpu("default", "10", None, None)
                .preemption(Never, Any)
                .build(),
            cq("b").cohort("c").cpu("default", "10", None, None).build(),
            cq("c").cohort("c").cpu("default", "10", None, None).build(),
        ],
    );
    s.add_workload("b", reserved("bw1", 0, 2, &[("default", "cpu", 6_000)]));
    s.add_workload("b", reserved("bw2", 0, 1, &[("default", "cpu", 5_000)]));
    s.add_workload("c", reserved("c1", 1, 0, &[("default", "cpu", 9_000)]));
    s.add_workload("c", reserved("c2", 50, 0, &[("default", "cpu", 10_000)]));
    assert_eq!(
        keys(&targets_for(&s, "a", 10, 10_000)),
        vec!["ns/bw1", "ns/c1"]
    );
}

#[test]
fn minimal_set_puts_back_unneeded_victims() {
    // Order: low (1 cpu, prio 1), mid (5 cpu, prio 2), high (4 cpu, prio 3). Removing low and
    // mid makes room for 5; low is then not needed and put back.
    let mut s = snapshot(
        &["default"],
        vec![
            cq("q")
                .cpu("default", "10", None, None)
                .preemption(LowerPriority, Never)
                .build(),
        ],
    );
    s.add_workload("q", reserved("low", 1, 0, &[("default", "cpu", 1_000)]));
    s.add_workload("q", reserved("mid", 2, 0, &[("default", "cpu", 5_000)]));
    s.add_workload("q", reserved("high", 3, 0, &[("default", "cpu", 4_000)]));
    assert_eq!(keys(&targets_for(&s, "q", 10, 5_000)), vec!["ns/mid"]);
    // Needing 6, both low and mid are required.
    assert_eq!(
        keys(&targets_for(&s, "q", 10, 6_000)),
        vec!["ns/low", "ns/mid"]
    );
}

#[test]
fn put_back_keeps_upstream_target_order() {
    // Candidates in order x (1 cpu), y (4), z (1), w (4) fill the queue; needing 8 removes all
    // four, then z and x are put back. Upstream swap-removes, so w ends up before y.
    let mut s = snapshot(
        &["default"],
        vec![
            cq("q")
                .cpu("default", "10", None, None)
                .preemption(LowerPriority, Never)
                .build(),
        ],
    );
    for (name, prio, cpu) in [
        ("x", 1, 1_000),
        ("y", 2, 4_000),
        ("z", 3, 1_000),
        ("w", 4, 4_000),
    ] {
        s.add_workload("q", reserved(name, prio, 0, &[("default", "cpu", cpu)]));
    }
    assert_eq!(keys(&targets_for(&s, "q", 10, 8_000)), vec!["ns/w", "ns/y"]);
}

#[rstest]
#[case::lower_priority_first(&[("x", 5, 0), ("y", 1, 0)], "ns/y")]
#[case::most_recently_reserved_first(&[("x", 1, 10), ("y", 1, 20)], "ns/y")]
#[case::uid_breaks_ties(&[("y", 1, 0), ("x", 1, 0)], "ns/x")]
fn candidate_order(#[case] workloads: &[(&str, i32, i64)], #[case] first: &str) {
    let mut s = snapshot(
        &["default"],
        vec![
            cq("q")
                .cpu("default", "2", None, None)
                .preemption(LowerPriority, Never)
                .build(),
        ],
    );
    for (name, prio, at) in workloads {
        s.add_workload(
            "q",
            reserved(name, *prio, *at, &[("default", "cpu", 1_000)]),
        );
    }
    assert_eq!(keys(&targets_for(&s, "q", 10, 1_000)), vec![first]);
}

#[test]
fn evicted_candidates_come_first() {
    let mut s = snapshot(
        &["default"],
        vec![
            cq("q")
                .cpu("default", "2", None, None)
                .preemption(LowerPriority, Never)
                .build(),
        ],
    );
    s.add_workload("q", reserved("low", 1, 0, &[("default", "cpu", 1_000)]));
    let mut evicted = reserved("evicted", 5, 0, &[("default", "cpu", 1_000)]);
    evicted.evicted = true;
    s.add_workload("q", evicted);
    assert_eq!(keys(&targets_for(&s, "q", 10, 1_000)), vec!["ns/evicted"]);
}

#[test]
fn other_queues_are_preempted_before_own_queue() {
    // a holds a low-priority workload (3) and b borrows 4; a needs 7 within its nominal 10.
    let mut s = cohort(
        Any,
        LowerPriority,
        vec![reserved("b1", 50, 0, &[("default", "cpu", 14_000)])],
    );
    s.add_workload("a", reserved("own", 0, 0, &[("default", "cpu", 3_000)]));
    let targets = targets_for(&s, "a", 10, 7_000);
    assert_eq!(
        targets,
        vec![("ns/b1".to_string(), PreemptionReason::InCohortReclamation)]
    );
    // Needing 10, both are needed: the borrower by reclamation, the own workload by priority.
    let mut targets = targets_for(&s, "a", 10, 10_000);
    targets.sort_by(|x, y| x.0.cmp(&y.0));
    assert_eq!(
        targets,
        vec![
            ("ns/b1".to_string(), PreemptionReason::InCohortReclamation),
            ("ns/own".to_string(), PreemptionReason::InClusterQueue),
        ]
    );
}

#[test]
fn only_workloads_on_contested_flavors_are_candidates() {
    let mut s = snapshot(
        &["one", "two"],
        vec![
            cq("q")
                .group(
                    &["cpu"],
                    vec![
                        flavor_quotas("one", vec![quota("cpu", "4", None, None)]),
                        flavor_quotas("two", vec![quota("cpu", "4", None, None)]),
                    ],
                )
                .preemption(LowerPriority, Never)
                .build(),
        ],
    );
    s.add_workload("q", reserved("on-one", 0, 0, &[("one", "cpu", 4_000)]));
    s.add_workload("q", reserved("on-two", 0, 0, &[("two", "cpu", 4_000)]));
    let wl = pending_cpu("incoming", 10, 3_000);
    let assignment = assign_flavors(&s, "q", &wl);
    assert_eq!(assignment.mode, Mode::Preempt);
    assert_eq!(assignment.podsets[0].flavors["cpu"], "one");
    let targets = find_targets(&s, "q", &wl, &assignment);
    assert_eq!(
        targets.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(),
        vec!["ns/on-one"]
    );
    assert_eq!(targets[0].cluster_queue, "q");
}

#[rstest]
#[case::victims_too_small(&[("low", 1, 2_000), ("high", 100, 8_000)], 5_000)]
#[case::only_higher_priority(&[("high", 100, 10_000)], 1_000)]
fn nothing_preempted_when_it_would_not_help(
    #[case] workloads: &[(&str, i32, i64)],
    #[case] cpu: i64,
) {
    let mut s = snapshot(
        &["default"],
        vec![
            cq("q")
                .cpu("default", "10", None, None)
                .preemption(LowerPriority, Never)
                .build(),
        ],
    );
    for (name, prio, used) in workloads {
        s.add_workload("q", reserved(name, *prio, 0, &[("default", "cpu", *used)]));
    }
    let wl = pending_cpu("incoming", 10, cpu);
    let assignment = assign_flavors(&s, "q", &wl);
    // Preemption was possible by quota, but the simulation found nothing useful.
    assert_eq!(assignment.mode, Mode::Preempt);
    assert_eq!(find_targets(&s, "q", &wl, &assignment), vec![]);
}

#[rstest]
#[case::within_nominal_reclaims(2_000, vec!["ns/b1"])]
#[case::beyond_nominal_cannot_reclaim(3_000, vec![])]
fn reclaim_needs_the_preemptor_to_stay_within_nominal(
    #[case] cpu: i64,
    #[case] expected: Vec<&str>,
) {
    // a uses 8 of its 10 with a high-priority workload; b borrows 1. Needing 3, a would end at
    // 11 > 10: reclaiming would leave it borrowing, which needs borrowWithinCohort (not in the API).
    let mut s = cohort(
        Any,
        LowerPriority,
        vec![reserved("b1", 0, 0, &[("default", "cpu", 11_000)])],
    );
    s.add_workload("a", reserved("own", 100, 0, &[("default", "cpu", 8_000)]));
    assert_eq!(keys(&targets_for(&s, "a", 10, cpu)), expected);
}

#[test]
fn queue_at_nominal_does_not_reclaim() {
    // a is at its nominal 10 (own low 6 + own high 4); b borrows 5. Preempting `low` alone is not
    // enough, and a queue that is not under its nominal quota may not reclaim, even though
    // reclaiming plus preempting `low` would make room.
    let mut s = cohort(
        Any,
        LowerPriority,
        vec![reserved("b1", 0, 0, &[("default", "cpu", 15_000)])],
    );
    s.add_workload("a", reserved("low", 0, 0, &[("default", "cpu", 6_000)]));
    s.add_workload("a", reserved("high", 100, 0, &[("default", "cpu", 4_000)]));
    assert_eq!(targets_for(&s, "a", 10, 6_000), vec![]);
    // Needing 1, preempting `low` is enough.
    assert_eq!(keys(&targets_for(&s, "a", 10, 1_000)), vec!["ns/low"]);
}

#[test]
fn fits_without_preemption_means_no_targets() {
    let s = full_queue(
        LowerPriority,
        reserved("victim", 0, 0, &[("default", "cpu", 5_000)]),
    );
    let wl = pending_cpu("incoming", 10, 1_000);
    let assignment = assign_flavors(&s, "q", &wl);
    assert_eq!(assignment.mode, Mode::Fit);
    assert_eq!(find_targets(&s, "q", &wl, &assignment), vec![]);
    assert_eq!(find_targets(&s, "missing", &wl, &assignment), vec![]);
}

#[rstest]
#[case::in_cluster_queue(
    PreemptionReason::InClusterQueue,
    "InClusterQueue",
    "prioritization in the ClusterQueue"
)]
#[case::in_cohort(
    PreemptionReason::InCohortReclamation,
    "InCohortReclamation",
    "reclamation within the cohort"
)]
fn reason_strings(#[case] reason: PreemptionReason, #[case] as_str: &str, #[case] human: &str) {
    assert_eq!(reason.as_str(), as_str);
    assert_eq!(reason.human(), human);
}

#[rstest]
#[case::complete(
    "wl-uid",
    Some("job-uid"),
    "/eng/a",
    "/eng/b",
    "Preempted to accommodate a workload (UID: wl-uid, JobUID: job-uid) due to reclamation within the cohort; preemptor path: /eng/a; preemptee path: /eng/b"
)]
#[case::unknowns(
    "",
    None,
    "",
    "/b",
    "Preempted to accommodate a workload (UID: UNKNOWN, JobUID: UNKNOWN) due to reclamation within the cohort; preemptor path: UNKNOWN; preemptee path: /b"
)]
fn eviction_message(
    #[case] uid: &str,
    #[case] job: Option<&str>,
    #[case] from: &str,
    #[case] to: &str,
    #[case] message: &str,
) {
    assert_eq!(
        preemption_message(uid, job, PreemptionReason::InCohortReclamation, from, to),
        message
    );
}

#[test]
fn eviction_message_paths_come_from_the_snapshot() {
    let s = cohort(Any, Never, vec![]);
    let message = preemption_message(
        "u",
        Some("j"),
        PreemptionReason::InClusterQueue,
        &s.cq_path("a"),
        &s.cq_path("a"),
    );
    assert_eq!(
        message,
        "Preempted to accommodate a workload (UID: u, JobUID: j) due to prioritization in the ClusterQueue; preemptor path: /c/a; preemptee path: /c/a"
    );
}

/// Upstream's scheduler benchmark setup: 5 cohorts of 6 ClusterQueues, flavor `rf`, nominal 20
/// cpu and borrowingLimit 100 each, reclaimWithinCohort Any, withinClusterQueue LowerPriority.
#[test]
fn scale_generator_setup() {
    let mut queues = Vec::new();
    for cohort in 0..5 {
        for i in 0..6 {
            queues.push(
                cq(&format!("cq-0-{i}-cohort-{cohort}"))
                    .cohort(&format!("cohort-{cohort}"))
                    .cpu("rf", "20", Some("100"), None)
                    .preemption(LowerPriority, Any)
                    .build(),
            );
        }
    }
    let mut s = snapshot(&["rf"], queues);
    let queue = "cq-0-0-cohort-0";

    let large = assign_flavors(&s, queue, &pending_cpu("large", 200, 20_000));
    assert_eq!((large.mode, large.borrows), (Mode::Fit, false));

    let huge = assign_flavors(&s, queue, &pending_cpu("huge", 200, 100_000));
    assert_eq!((huge.mode, huge.borrows), (Mode::Fit, true));
    assert_eq!(s.potential_available(queue, "rf", "cpu"), 120_000);

    let too_big = assign_flavors(&s, queue, &pending_cpu("too-big", 200, 121_000));
    assert_eq!(too_big.mode, Mode::NoFit);
    assert_eq!(
        too_big.message(),
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor rf, previously considered podsets requests (0) + current podset request (121) > maximum capacity (120)"
    );

    // The 100-cpu workload borrows 80 of its cohort's 120; a neighbour can still take 20, and
    // queues of other cohorts are unaffected.
    s.add_workload(queue, reserved("huge", 200, 0, &[("rf", "cpu", 100_000)]));
    assert_eq!(s.available("cq-0-1-cohort-0", "rf", "cpu"), 20_000);
    assert_eq!(s.available("cq-0-1-cohort-1", "rf", "cpu"), 120_000);

    // A neighbour's large workload then reclaims its nominal quota from the borrower.
    s.add_workload(
        "cq-0-2-cohort-0",
        reserved("medium", 100, 1, &[("rf", "cpu", 10_000)]),
    );
    let wl = pending_cpu("large-2", 200, 20_000);
    let assignment = assign_flavors(&s, "cq-0-1-cohort-0", &wl);
    assert_eq!(assignment.mode, Mode::Preempt);
    let targets = find_targets(&s, "cq-0-1-cohort-0", &wl, &assignment);
    assert_eq!(
        targets,
        vec![Target {
            key: "ns/huge".into(),
            cluster_queue: queue.into(),
            reason: PreemptionReason::InCohortReclamation
        }]
    );
}
