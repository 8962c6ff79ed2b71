use api::kueue::{FlavorUsage, ResourceUsage};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use rstest::rstest;

use super::*;
use crate::scheduler::test_support::{cq, flavor_quotas, quota, reserved, snapshot, to_units};

/// Two members `a` and `b` of cohort `c`, one flavor `f` of cpu, with optional limits, and the
/// given usage (millicores) held by one workload each.
fn pair(
    a: (&str, Option<&str>, Option<&str>),
    b: (&str, Option<&str>, Option<&str>),
    used: (i64, i64),
) -> Snapshot {
    let mut s = snapshot(
        &["f"],
        vec![
            cq("a").cohort("c").cpu("f", a.0, a.1, a.2).build(),
            cq("b").cohort("c").cpu("f", b.0, b.1, b.2).build(),
        ],
    );
    s.add_workload("a", reserved("wa", 0, 0, &[("f", "cpu", used.0)]));
    s.add_workload("b", reserved("wb", 0, 0, &[("f", "cpu", used.1)]));
    s
}

#[rstest]
#[case::idle_cohort_lends_everything(("10", None, None), ("10", None, None), (0, 0), 20_000, 20_000)]
#[case::own_usage_counts(("10", None, None), ("10", None, None), (4_000, 0), 16_000, 20_000)]
#[case::borrowing_limit_caps_what_can_be_borrowed(("10", Some("5"), None), ("10", None, None), (0, 0), 15_000, 15_000)]
#[case::borrowing_limit_counts_what_is_already_borrowed(("10", Some("5"), None), ("10", None, None), (12_000, 0), 3_000, 15_000)]
#[case::lending_limit_caps_what_others_can_take(("10", None, None), ("10", None, Some("4")), (0, 0), 14_000, 14_000)]
#[case::borrower_reduces_what_the_lender_has(("10", None, None), ("10", None, None), (0, 12_000), 8_000, 20_000)]
#[case::over_admitted_queue_has_nothing(("10", Some("0"), None), ("10", None, None), (15_000, 0), 0, 10_000)]
fn cohort_available_and_potential(
    #[case] a: (&str, Option<&str>, Option<&str>),
    #[case] b: (&str, Option<&str>, Option<&str>),
    #[case] used: (i64, i64),
    #[case] available: i64,
    #[case] potential: i64,
) {
    let s = pair(a, b, used);
    assert_eq!(s.available("a", "f", "cpu"), available);
    assert_eq!(s.potential_available("a", "f", "cpu"), potential);
}

#[test]
fn lender_keeps_its_guaranteed_quota_when_the_pool_is_used() {
    // b lends only 4 of its 10: a borrowing all of the pool leaves b its 6 guaranteed.
    let s = pair(("10", None, None), ("10", None, Some("4")), (14_000, 0));
    assert_eq!(s.available("b", "f", "cpu"), 6_000);
    assert_eq!(s.borrowing("a", "f", "cpu"), 4_000);
    assert_eq!(s.available("a", "f", "cpu"), 0);
}

#[rstest]
#[case::idle(0, 10_000, 10_000)]
#[case::partly_used(4_000, 6_000, 10_000)]
#[case::over_admitted(12_000, 0, 10_000)]
fn queue_without_cohort_has_only_its_nominal_quota(
    #[case] used: i64,
    #[case] available: i64,
    #[case] potential: i64,
) {
    let mut s = snapshot(
        &["f"],
        vec![
            cq("solo").cpu("f", "10", None, None).build(),
            // Another queue with plenty of quota but no shared cohort.
            cq("other").cpu("f", "100", None, None).build(),
        ],
    );
    s.add_workload("solo", reserved("w", 0, 0, &[("f", "cpu", used)]));
    assert_eq!(s.available("solo", "f", "cpu"), available);
    assert_eq!(s.potential_available("solo", "f", "cpu"), potential);
    assert_eq!(s.borrowing("solo", "f", "cpu"), (used - 10_000).max(0));
}

#[test]
fn add_and_remove_workload_track_usage() {
    let mut s = snapshot(&["f"], vec![cq("a").cpu("f", "10", None, None).build()]);
    assert!(s.add_workload("a", reserved("w1", 0, 0, &[("f", "cpu", 3_000)])));
    assert!(s.add_workload("a", reserved("w2", 0, 0, &[("f", "cpu", 2_000)])));
    // Re-adding the same key replaces it instead of counting it twice.
    assert!(s.add_workload("a", reserved("w2", 0, 0, &[("f", "cpu", 1_000)])));
    assert_eq!(s.available("a", "f", "cpu"), 6_000);
    let removed = s.remove_workload("a", "ns/w1").expect("w1 is reserved");
    assert_eq!(removed.key, "ns/w1");
    assert_eq!(s.available("a", "f", "cpu"), 9_000);
    assert_eq!(s.remove_workload("a", "ns/w1"), None);
    assert_eq!(s.remove_workload("missing", "ns/w2"), None);
    assert!(!s.add_workload("missing", reserved("w3", 0, 0, &[])));
}

#[test]
fn quota_set_aside_counts_as_used_but_is_no_ones() {
    let mut s = snapshot(&["f"], vec![cq("a").cpu("f", "10", None, None).build()]);
    assert!(s.add_workload("a", reserved("w1", 0, 0, &[("f", "cpu", 3_000)])));
    let aside: Usage = [(flavor_resource("f", "cpu"), 4_000)].into_iter().collect();
    assert!(s.set_aside("a", &aside));
    assert_eq!(s.available("a", "f", "cpu"), 3_000);
    // Only w1 is a workload of the queue.
    assert_eq!(s.cluster_queues["a"].workloads.len(), 1);
    assert!(!s.set_aside("missing", &aside));
}

#[test]
fn unknown_queue_or_flavor_has_no_quota() {
    let s = snapshot(&["f"], vec![cq("a").cpu("f", "10", None, None).build()]);
    assert_eq!(s.available("missing", "f", "cpu"), 0);
    assert_eq!(s.potential_available("a", "other", "cpu"), 0);
    assert_eq!(s.available("a", "f", "memory"), 0);
}

#[test]
fn sums_saturate_instead_of_overflowing() {
    let huge = i64::MAX.to_string();
    let mut s = snapshot(
        &["f"],
        vec![
            cq("a")
                .cohort("c")
                .group(
                    &["gpu"],
                    vec![flavor_quotas("f", vec![quota("gpu", &huge, None, None)])],
                )
                .build(),
            cq("b")
                .cohort("c")
                .group(
                    &["gpu"],
                    vec![flavor_quotas(
                        "f",
                        vec![quota("gpu", &huge, Some(&huge), None)],
                    )],
                )
                .build(),
        ],
    );
    assert_eq!(s.available("a", "f", "gpu"), i64::MAX);
    assert_eq!(s.potential_available("b", "f", "gpu"), i64::MAX);
    s.add_workload("a", reserved("w", 0, 0, &[("f", "gpu", i64::MAX)]));
    s.add_workload("a", reserved("w2", 0, 0, &[("f", "gpu", i64::MAX)]));
    assert_eq!(s.available("a", "f", "gpu"), 0);
    // The pool is exhausted, so b (whose own quota is all lent) has nothing left either.
    assert_eq!(s.available("b", "f", "gpu"), 0);
}

#[test]
fn flavors_reservation_reports_total_and_borrowed_in_spec_order() {
    let mut s = snapshot(
        &["on-demand", "spot"],
        vec![
            cq("a")
                .cohort("c")
                .group(
                    &["memory", "cpu"],
                    vec![
                        flavor_quotas(
                            "on-demand",
                            vec![
                                quota("memory", "10", None, None),
                                quota("cpu", "2", None, None),
                            ],
                        ),
                        flavor_quotas(
                            "spot",
                            vec![
                                quota("memory", "10", None, None),
                                quota("cpu", "2", None, None),
                            ],
                        ),
                    ],
                )
                .build(),
            cq("b")
                .cohort("c")
                .cpu("on-demand", "4", None, None)
                .build(),
        ],
    );
    s.add_workload(
        "a",
        reserved(
            "w",
            0,
            0,
            &[("on-demand", "cpu", 3_000), ("on-demand", "memory", 4)],
        ),
    );
    let report = s.cluster_queues["a"].usage_report(&s.cluster_queues["a"].usage);
    assert_eq!(
        report,
        vec![
            FlavorReservation {
                flavor: "on-demand".into(),
                resources: vec![
                    ResourceReservation {
                        resource: "cpu".into(),
                        total: 3_000,
                        borrowed: 1_000
                    },
                    ResourceReservation {
                        resource: "memory".into(),
                        total: 4,
                        borrowed: 0
                    },
                ],
            },
            FlavorReservation {
                flavor: "spot".into(),
                resources: vec![
                    ResourceReservation {
                        resource: "cpu".into(),
                        total: 0,
                        borrowed: 0
                    },
                    ResourceReservation {
                        resource: "memory".into(),
                        total: 0,
                        borrowed: 0
                    },
                ],
            },
        ]
    );
    let status = s.cluster_queues["a"].flavors_reservation_status();
    assert_eq!(
        status.first(),
        Some(&FlavorUsage {
            name: "on-demand".into(),
            resources: vec![
                ResourceUsage {
                    name: "cpu".into(),
                    total: Some(Quantity("3".into())),
                    borrowed: Some(Quantity("1".into()))
                },
                ResourceUsage {
                    name: "memory".into(),
                    total: Some(Quantity("4".into())),
                    borrowed: Some(Quantity("0".into()))
                },
            ],
        })
    );
}

#[test]
fn borrowed_is_zero_outside_a_cohort() {
    let mut s = snapshot(&["f"], vec![cq("a").cpu("f", "1", None, None).build()]);
    s.add_workload("a", reserved("w", 0, 0, &[("f", "cpu", 3_000)]));
    let report = s.cluster_queues["a"].usage_report(&s.cluster_queues["a"].usage);
    assert_eq!(
        report[0].resources[0],
        ResourceReservation {
            resource: "cpu".into(),
            total: 3_000,
            borrowed: 0
        }
    );
}

#[test]
fn invalid_quota_names_the_queue_flavor_and_field() {
    let spec = cq("a").cpu("f", "10", Some("lots"), None).spec();
    let err = ClusterQueueSnapshot::new("a", spec, to_units).expect_err("invalid borrowing limit");
    assert_eq!(
        err.to_string(),
        "ClusterQueue a: invalid borrowingLimit for resource cpu in flavor f: quantities must match the regular expression: lots"
    );
}

#[rstest]
#[case::in_cohort("a", "/c/a")]
#[case::without_cohort("solo", "/solo")]
#[case::unknown_queue("missing", "/missing")]
fn cq_path_is_cohort_then_queue(#[case] name: &str, #[case] path: &str) {
    let s = snapshot(
        &["f"],
        vec![
            cq("a").cohort("c").cpu("f", "1", None, None).build(),
            cq("solo").cpu("f", "1", None, None).build(),
        ],
    );
    assert_eq!(s.cq_path(name), path);
}

#[test]
fn empty_cohort_name_is_no_cohort() {
    let s = snapshot(
        &["f"],
        vec![
            cq("a").cohort("").cpu("f", "1", None, None).build(),
            cq("b").cohort("").cpu("f", "5", None, None).build(),
        ],
    );
    assert_eq!(s.available("a", "f", "cpu"), 1_000);
}
