use std::collections::BTreeMap;

use api::kueue::{PodSetAssignment as ApiPodSetAssignment, PreemptionPolicy, ResourceFlavorSpec};
use k8s_openapi::api::core::v1::{
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use rstest::rstest;

use super::*;
use crate::scheduler::snapshot::Snapshot;
use crate::scheduler::test_support::{
    cq, flavor_quotas, pending, pending_cpu, podset, quota, reserved, snapshot,
};

/// Queue `q` with one cpu group of flavors `one` then `two`, `nominal` cpu each.
fn two_flavors(nominal: &str) -> Snapshot {
    snapshot(
        &["one", "two"],
        vec![
            cq("q")
                .group(
                    &["cpu"],
                    vec![
                        flavor_quotas("one", vec![quota("cpu", nominal, None, None)]),
                        flavor_quotas("two", vec![quota("cpu", nominal, None, None)]),
                    ],
                )
                .build(),
        ],
    )
}

fn taint(key: &str, value: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        value: Some(value.into()),
        effect: effect.into(),
        time_added: None,
    }
}

fn toleration(key: &str, operator: &str, value: Option<&str>, effect: Option<&str>) -> Toleration {
    Toleration {
        key: Some(key.into()),
        operator: Some(operator.into()),
        value: value.map(Into::into),
        effect: effect.map(Into::into),
        toleration_seconds: None,
    }
}

fn requirement(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.into(),
        operator: operator.into(),
        values: Some(values.iter().map(|v| v.to_string()).collect()),
    }
}

fn affinity(terms: Vec<Vec<NodeSelectorRequirement>>) -> NodeSelector {
    NodeSelector {
        node_selector_terms: terms
            .into_iter()
            .map(|expressions| NodeSelectorTerm {
                match_expressions: Some(expressions),
                match_fields: None,
            })
            .collect(),
    }
}

#[rstest]
#[case::first_flavor_has_room(0, "one")]
#[case::first_flavor_full_takes_second(10_000, "two")]
#[case::first_flavor_too_full_takes_second(8_000, "two")]
fn flavors_are_tried_in_queue_order(#[case] used_in_one: i64, #[case] expected: &str) {
    let mut s = two_flavors("10");
    s.add_workload("q", reserved("old", 0, 0, &[("one", "cpu", used_in_one)]));
    let a = assign_flavors(&s, "q", &pending_cpu("w", 0, 3_000));
    assert_eq!(a.mode, Mode::Fit);
    assert_eq!(a.podsets[0].flavors["cpu"], expected);
    assert_eq!(
        a.usage,
        BTreeMap::from([((expected.to_string(), "cpu".to_string()), 3_000)])
    );
    assert_eq!(a.message(), "");
}

#[rstest]
#[case::untolerated(vec![], Some("couldn't assign flavors to pod set main: untolerated taint {instance spot NoSchedule <nil>} in flavor one, untolerated taint {instance spot NoSchedule <nil>} in flavor two"))]
#[case::tolerated_by_equal(vec![toleration("instance", "Equal", Some("spot"), Some("NoSchedule"))], None)]
#[case::tolerated_by_exists(vec![toleration("instance", "Exists", None, None)], None)]
#[case::wrong_value_not_tolerated(vec![toleration("instance", "Equal", Some("demand"), None)], Some("couldn't assign flavors to pod set main: untolerated taint {instance spot NoSchedule <nil>} in flavor one, untolerated taint {instance spot NoSchedule <nil>} in flavor two"))]
#[case::wrong_effect_not_tolerated(vec![toleration("instance", "Exists", None, Some("NoExecute"))], Some("couldn't assign flavors to pod set main: untolerated taint {instance spot NoSchedule <nil>} in flavor one, untolerated taint {instance spot NoSchedule <nil>} in flavor two"))]
fn taints_need_podset_tolerations(
    #[case] tolerations: Vec<Toleration>,
    #[case] message: Option<&str>,
) {
    let mut s = two_flavors("10");
    for flavor in ["one", "two"] {
        s.flavors.insert(
            flavor.into(),
            ResourceFlavorSpec {
                node_taints: vec![taint("instance", "spot", "NoSchedule")],
                ..Default::default()
            },
        );
    }
    let mut wl = pending_cpu("w", 0, 1_000);
    wl.podsets[0].tolerations = tolerations;
    let a = assign_flavors(&s, "q", &wl);
    match message {
        Some(message) => {
            assert_eq!(a.mode, Mode::NoFit);
            assert_eq!(a.message(), message);
        }
        None => {
            assert_eq!(a.mode, Mode::Fit);
            assert_eq!(a.podsets[0].flavors["cpu"], "one");
        }
    }
}

#[rstest]
#[case::untolerated_first_flavor_skipped(None, "two")]
#[case::flavor_tolerations_count(Some(toleration("instance", "Exists", None, None)), "one")]
fn tainted_flavor_is_skipped_unless_its_own_tolerations_cover_it(
    #[case] flavor_toleration: Option<Toleration>,
    #[case] expected: &str,
) {
    let mut s = two_flavors("10");
    s.flavors.insert(
        "one".into(),
        ResourceFlavorSpec {
            node_taints: vec![
                taint("instance", "spot", "NoExecute"),
                taint("soft", "x", "PreferNoSchedule"),
            ],
            tolerations: flavor_toleration.into_iter().collect(),
            ..Default::default()
        },
    );
    let a = assign_flavors(&s, "q", &pending_cpu("w", 0, 1_000));
    assert_eq!(a.mode, Mode::Fit);
    assert_eq!(a.podsets[0].flavors["cpu"], expected);
}

#[test]
fn taint_with_time_added_prints_like_go() {
    let mut s = two_flavors("10");
    let mut t = taint("instance", "spot", "NoSchedule");
    t.time_added = Some(Time("2024-05-06T07:08:09Z".parse().expect("timestamp")));
    s.flavors.insert(
        "one".into(),
        ResourceFlavorSpec {
            node_taints: vec![t],
            ..Default::default()
        },
    );
    s.flavors.insert(
        "two".into(),
        ResourceFlavorSpec {
            node_taints: vec![taint("gpu", "", "NoSchedule")],
            ..Default::default()
        },
    );
    let a = assign_flavors(&s, "q", &pending_cpu("w", 0, 1_000));
    assert_eq!(
        a.message(),
        "couldn't assign flavors to pod set main: untolerated taint {gpu  NoSchedule <nil>} in flavor two, untolerated taint {instance spot NoSchedule 2024-05-06 07:08:09 +0000 UTC} in flavor one"
    );
}

/// Flavor `one` has `zone=a`, flavor `two` has `zone=b`.
fn zoned() -> Snapshot {
    let mut s = two_flavors("10");
    for (flavor, zone) in [("one", "a"), ("two", "b")] {
        s.flavors.insert(
            flavor.into(),
            ResourceFlavorSpec {
                node_labels: BTreeMap::from([("zone".to_string(), zone.to_string())]),
                ..Default::default()
            },
        );
    }
    s
}

#[rstest]
#[case::selector_picks_second(&[("zone", "b")], None, Some("two"))]
#[case::selector_on_unknown_key_is_ignored(&[("disk", "ssd")], None, Some("one"))]
#[case::selector_matches_nothing(&[("zone", "c")], None, None)]
#[case::affinity_in_picks_second(&[], Some(affinity(vec![vec![requirement("zone", "In", &["b", "c"])]])), Some("two"))]
#[case::affinity_not_in_skips_first(&[], Some(affinity(vec![vec![requirement("zone", "NotIn", &["a"])]])), Some("two"))]
#[case::affinity_terms_are_ored(&[], Some(affinity(vec![vec![requirement("zone", "In", &["c"])], vec![requirement("zone", "In", &["b"])]])), Some("two"))]
#[case::affinity_term_on_other_keys_matches_all(&[], Some(affinity(vec![vec![requirement("zone", "In", &["c"])], vec![requirement("disk", "In", &["ssd"])]])), Some("one"))]
#[case::affinity_matches_nothing(&[], Some(affinity(vec![vec![requirement("zone", "In", &["c"])]])), None)]
#[case::affinity_and_selector_both_apply(&[("zone", "a")], Some(affinity(vec![vec![requirement("zone", "In", &["b"])]])), None)]
fn node_affinity_selects_flavors(
    #[case] selector: &[(&str, &str)],
    #[case] required: Option<NodeSelector>,
    #[case] expected: Option<&str>,
) {
    let s = zoned();
    let mut wl = pending_cpu("w", 0, 1_000);
    wl.podsets[0].node_selector = selector
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    wl.podsets[0].required_affinity = required;
    let a = assign_flavors(&s, "q", &wl);
    match expected {
        Some(flavor) => {
            assert_eq!(a.mode, Mode::Fit);
            assert_eq!(a.podsets[0].flavors["cpu"], flavor);
        }
        None => {
            assert_eq!(a.mode, Mode::NoFit);
            assert_eq!(
                a.message(),
                "couldn't assign flavors to pod set main: flavor one doesn't match node affinity, flavor two doesn't match node affinity"
            );
        }
    }
}

#[rstest]
#[case::beyond_maximum_capacity(
    0,
    12_000,
    Mode::NoFit,
    "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default, previously considered podsets requests (0) + current podset request (12) > maximum capacity (10)"
)]
#[case::beyond_unused_quota(
    6_000,
    5_000,
    Mode::Preempt,
    "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 1 more needed"
)]
#[case::milli_units(
    9_500,
    1_000,
    Mode::Preempt,
    "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 500m more needed"
)]
fn quota_messages(
    #[case] used: i64,
    #[case] request: i64,
    #[case] mode: Mode,
    #[case] message: &str,
) {
    let mut s = snapshot(
        &["default"],
        vec![cq("q").cpu("default", "10", None, None).build()],
    );
    s.add_workload("q", reserved("old", 100, 0, &[("default", "cpu", used)]));
    let a = assign_flavors(&s, "q", &pending_cpu("w", 0, request));
    assert_eq!(a.mode, mode);
    assert_eq!(a.message(), message);
}

#[test]
fn later_podsets_see_earlier_podsets_usage() {
    let s = snapshot(
        &["default"],
        vec![cq("q").cpu("default", "10", None, None).build()],
    );
    let wl = pending(
        "w",
        0,
        vec![
            podset("driver", 2, &[("cpu", 3_000)]),
            podset("workers", 1, &[("cpu", 6_000)]),
            podset("never", 1, &[("cpu", 1_000)]),
        ],
    );
    let a = assign_flavors(&s, "q", &wl);
    assert_eq!(a.mode, Mode::NoFit);
    assert_eq!(
        a.message(),
        "couldn't assign flavors to pod set workers: insufficient quota for cpu in flavor default, previously considered podsets requests (6) + current podset request (6) > maximum capacity (10)"
    );
    // The first podset fits and is kept; assignment stops at the failing one.
    assert_eq!(a.podsets.len(), 2);
    assert_eq!(a.podsets[0].mode, Mode::Fit);
    assert_eq!(a.podsets[0].usage["cpu"], 6_000);
    assert!(a.podsets[1].flavors.is_empty());
}

#[test]
fn podsets_needing_preemption_are_all_reported() {
    let mut s = snapshot(
        &["default"],
        vec![cq("q").cpu("default", "10", None, None).build()],
    );
    s.add_workload("q", reserved("old", 0, 0, &[("default", "cpu", 8_000)]));
    let wl = pending(
        "w",
        0,
        vec![
            podset("a", 1, &[("cpu", 3_000)]),
            podset("b", 1, &[("cpu", 1_000)]),
        ],
    );
    let a = assign_flavors(&s, "q", &wl);
    assert_eq!(a.mode, Mode::Preempt);
    assert_eq!(
        a.message(),
        "couldn't assign flavors to pod set a: insufficient unused quota for cpu in flavor default, 1 more needed; couldn't assign flavors to pod set b: insufficient unused quota for cpu in flavor default, 2 more needed"
    );
}

#[test]
fn reasons_from_every_flavor_tried_are_sorted() {
    let mut s = two_flavors("10");
    s.flavors.insert(
        "one".into(),
        ResourceFlavorSpec {
            node_taints: vec![taint("key", "val", "NoSchedule")],
            ..Default::default()
        },
    );
    s.add_workload("q", reserved("old", 0, 0, &[("two", "cpu", 8_000)]));
    let a = assign_flavors(&s, "q", &pending_cpu("w", 0, 5_000));
    assert_eq!(a.mode, Mode::Preempt);
    assert_eq!(a.podsets[0].flavors["cpu"], "two");
    assert_eq!(
        a.message(),
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor two, 3 more needed, untolerated taint {key val NoSchedule <nil>} in flavor one"
    );
}

#[rstest]
#[case::uncovered_resource(&[("cpu", 1_000), ("example.com/gpu", 1)], Mode::NoFit, "couldn't assign flavors to pod set main: resource example.com/gpu unavailable in ClusterQueue")]
#[case::zero_uncovered_resource_is_ignored(&[("cpu", 1_000), ("example.com/gpu", 0)], Mode::Fit, "")]
fn resources_the_queue_does_not_cover(
    #[case] per_pod: &[(&str, i64)],
    #[case] mode: Mode,
    #[case] message: &str,
) {
    let s = snapshot(
        &["default"],
        vec![cq("q").cpu("default", "10", None, None).build()],
    );
    let a = assign_flavors(&s, "q", &pending("w", 0, vec![podset("main", 1, per_pod)]));
    assert_eq!(a.mode, mode);
    assert_eq!(a.message(), message);
}

#[test]
fn missing_flavor_object_is_reported() {
    let mut s = two_flavors("10");
    s.flavors.remove("one");
    let a = assign_flavors(&s, "q", &pending_cpu("w", 0, 20_000));
    assert_eq!(
        a.message(),
        "couldn't assign flavors to pod set main: flavor one not found, insufficient quota for cpu in flavor two, previously considered podsets requests (0) + current podset request (20) > maximum capacity (10)"
    );
}

#[test]
fn resources_of_a_group_share_a_flavor_and_pods_are_counted() {
    let s = snapshot(
        &["small", "big", "slots"],
        vec![
            cq("q")
                .group(
                    &["cpu", "memory"],
                    vec![
                        flavor_quotas(
                            "small",
                            vec![
                                quota("cpu", "10", None, None),
                                quota("memory", "1", None, None),
                            ],
                        ),
                        flavor_quotas(
                            "big",
                            vec![
                                quota("cpu", "10", None, None),
                                quota("memory", "100", None, None),
                            ],
                        ),
                    ],
                )
                .group(
                    &["pods"],
                    vec![flavor_quotas("slots", vec![quota("pods", "5", None, None)])],
                )
                .build(),
        ],
    );
    let a = assign_flavors(
        &s,
        "q",
        &pending(
            "w",
            0,
            vec![podset("main", 4, &[("cpu", 1_000), ("memory", 2)])],
        ),
    );
    assert_eq!(a.mode, Mode::Fit);
    let ps = &a.podsets[0];
    assert_eq!(
        ps.flavors,
        BTreeMap::from([
            ("cpu".into(), "big".into()),
            ("memory".into(), "big".into()),
            ("pods".into(), "slots".into())
        ])
    );
    assert_eq!(
        ps.usage,
        BTreeMap::from([
            ("cpu".into(), 4_000),
            ("memory".into(), 8),
            ("pods".into(), 4)
        ])
    );
    assert_eq!(
        a.to_api(),
        vec![ApiPodSetAssignment {
            name: "main".into(),
            flavors: ps.flavors.clone(),
            resource_usage: BTreeMap::from([
                ("cpu".into(), Quantity("4".into())),
                ("memory".into(), Quantity("8".into())),
                ("pods".into(), Quantity("4".into())),
            ]),
            count: Some(4),
        }]
    );
    // Six pods exceed the pods quota.
    let a = assign_flavors(
        &s,
        "q",
        &pending("w", 0, vec![podset("main", 6, &[("cpu", 1_000)])]),
    );
    assert_eq!(
        a.message(),
        "couldn't assign flavors to pod set main: insufficient quota for pods in flavor slots, previously considered podsets requests (0) + current podset request (6) > maximum capacity (5)"
    );
}

/// Cohort `c`: `a` (nominal 10, optional borrowing limit), `b` (nominal 10, optional lending
/// limit), `solo` (nominal 10, no cohort).
fn cohort(a_borrowing: Option<&str>, b_lending: Option<&str>) -> Snapshot {
    snapshot(
        &["default"],
        vec![
            cq("a")
                .cohort("c")
                .cpu("default", "10", a_borrowing, None)
                .build(),
            cq("b")
                .cohort("c")
                .cpu("default", "10", None, b_lending)
                .build(),
            cq("solo").cpu("default", "10", None, None).build(),
        ],
    )
}

#[rstest]
#[case::fits_in_nominal(cohort(None, None), "a", 10_000, Mode::Fit, false, "")]
#[case::fits_by_borrowing(cohort(None, None), "a", 15_000, Mode::Fit, true, "")]
#[case::borrowing_limit_caps(
    cohort(Some("3"), None),
    "a",
    15_000,
    Mode::NoFit,
    false,
    "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default, previously considered podsets requests (0) + current podset request (15) > maximum capacity (13)"
)]
#[case::lending_limit_caps(
    cohort(None, Some("4")),
    "a",
    15_000,
    Mode::NoFit,
    false,
    "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default, previously considered podsets requests (0) + current podset request (15) > maximum capacity (14)"
)]
#[case::queue_without_cohort_cannot_borrow(
    cohort(None, None),
    "solo",
    15_000,
    Mode::NoFit,
    false,
    "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor default, previously considered podsets requests (0) + current podset request (15) > maximum capacity (10)"
)]
fn borrowing_within_a_cohort(
    #[case] s: Snapshot,
    #[case] queue: &str,
    #[case] request: i64,
    #[case] mode: Mode,
    #[case] borrows: bool,
    #[case] message: &str,
) {
    let a = assign_flavors(&s, queue, &pending_cpu("w", 0, request));
    assert_eq!(a.mode, mode);
    assert_eq!(a.borrows, borrows);
    assert_eq!(a.message(), message);
}

#[test]
fn needing_more_than_nominal_while_others_borrow_is_no_fit() {
    // b borrows 5 of a's quota; a needs 12 > its nominal 10, so it cannot reclaim: NoFit.
    let mut s = cohort(None, None);
    if let Some(q) = s.cluster_queues.get_mut("a") {
        q.spec.preemption = Some(api::kueue::ClusterQueuePreemption {
            reclaim_within_cohort: PreemptionPolicy::Any,
            within_cluster_queue: PreemptionPolicy::LowerPriority,
        });
    }
    s.add_workload(
        "b",
        reserved("borrower", 0, 0, &[("default", "cpu", 15_000)]),
    );
    let a = assign_flavors(&s, "a", &pending_cpu("w", 0, 12_000));
    assert_eq!(a.mode, Mode::NoFit);
    assert_eq!(
        a.message(),
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor default, 7 more needed"
    );
    // Within its nominal quota it can reclaim, so preemption is an option.
    let a = assign_flavors(&s, "a", &pending_cpu("w", 0, 8_000));
    assert_eq!(a.mode, Mode::Preempt);
    assert_eq!(a.podsets[0].modes["cpu"], Mode::Preempt);
}

#[rstest]
#[case::preemption_tries_next_flavor(8_000, 0, 4_000, "two", Mode::Fit, false)]
#[case::borrowing_stops_the_search(0, 0, 6_000, "one", Mode::Fit, true)]
#[case::preemption_everywhere_keeps_first(8_000, 8_000, 4_000, "one", Mode::Preempt, false)]
fn flavor_fungibility_defaults(
    #[case] used_one: i64,
    #[case] used_two: i64,
    #[case] request: i64,
    #[case] expected: &str,
    #[case] mode: Mode,
    #[case] borrows: bool,
) {
    let mut s = snapshot(
        &["one", "two"],
        vec![
            cq("q")
                .cohort("c")
                .group(
                    &["cpu"],
                    vec![
                        flavor_quotas("one", vec![quota("cpu", "4", None, None)]),
                        flavor_quotas("two", vec![quota("cpu", "10", None, None)]),
                    ],
                )
                .preemption(PreemptionPolicy::LowerPriority, PreemptionPolicy::Never)
                .build(),
            cq("lender")
                .cohort("c")
                .group(
                    &["cpu"],
                    vec![flavor_quotas("one", vec![quota("cpu", "10", None, None)])],
                )
                .build(),
        ],
    );
    // Low-priority workloads hold quota in q; the lender lends `one` only while idle.
    if used_one > 0 {
        s.add_workload(
            "lender",
            reserved("lender-wl", 0, 0, &[("one", "cpu", 10_000)]),
        );
        s.add_workload("q", reserved("low-one", 0, 0, &[("one", "cpu", 4_000)]));
    }
    if used_two > 0 {
        s.add_workload("q", reserved("low-two", 0, 0, &[("two", "cpu", used_two)]));
    }
    let a = assign_flavors(&s, "q", &pending_cpu("w", 10, request));
    assert_eq!(a.mode, mode);
    assert_eq!(a.borrows, borrows);
    assert_eq!(a.podsets[0].flavors["cpu"], expected);
}

#[test]
fn unknown_queue_and_empty_workload_do_not_fit() {
    let s = two_flavors("10");
    assert_eq!(
        assign_flavors(&s, "missing", &pending_cpu("w", 0, 1)).mode,
        Mode::NoFit
    );
    assert_eq!(
        assign_flavors(&s, "q", &pending("w", 0, vec![])).mode,
        Mode::NoFit
    );
}

#[test]
fn podset_without_requests_fits_without_flavors() {
    let s = two_flavors("10");
    let a = assign_flavors(&s, "q", &pending("w", 0, vec![podset("main", 3, &[])]));
    assert_eq!(a.mode, Mode::Fit);
    assert!(a.podsets[0].flavors.is_empty());
}

#[test]
fn huge_requests_saturate() {
    let s = two_flavors("10");
    let a = assign_flavors(
        &s,
        "q",
        &pending("w", 0, vec![podset("main", i32::MAX, &[("cpu", i64::MAX)])]),
    );
    assert_eq!(a.mode, Mode::NoFit);
    assert!(
        a.message()
            .contains("current podset request (9223372036854775807m)"),
        "{}",
        a.message()
    );
}

#[rstest]
#[case::candidates_beat_no_candidates(100, 0, 10_000, "two")]
#[case::reclaiming_beats_preempting_own_workloads(0, 100, 14_000, "two")]
#[case::first_of_equal_preemptions_wins(0, 0, 10_000, "one")]
fn best_preemption_flavor_is_chosen(
    #[case] one_holder_priority: i32,
    #[case] two_holder_priority: i32,
    #[case] lender_two: i64,
    #[case] expected: &str,
) {
    // q (cohort c) has 4 cpu in each of `one` and `two`; the lender has 10 of `two`.
    let mut s = snapshot(
        &["one", "two"],
        vec![
            cq("q")
                .cohort("c")
                .group(
                    &["cpu"],
                    vec![
                        flavor_quotas("one", vec![quota("cpu", "4", None, None)]),
                        flavor_quotas("two", vec![quota("cpu", "4", None, None)]),
                    ],
                )
                .preemption(PreemptionPolicy::LowerPriority, PreemptionPolicy::Any)
                .build(),
            cq("lender")
                .cohort("c")
                .group(
                    &["cpu"],
                    vec![flavor_quotas("two", vec![quota("cpu", "10", None, None)])],
                )
                .build(),
        ],
    );
    s.add_workload(
        "q",
        reserved("in-one", one_holder_priority, 0, &[("one", "cpu", 4_000)]),
    );
    if lender_two == 10_000 {
        s.add_workload(
            "q",
            reserved("in-two", two_holder_priority, 0, &[("two", "cpu", 4_000)]),
        );
    }
    s.add_workload(
        "lender",
        reserved("lender-wl", 0, 0, &[("two", "cpu", lender_two)]),
    );
    let a = assign_flavors(&s, "q", &pending_cpu("w", 10, 4_000));
    assert_eq!(a.mode, Mode::Preempt);
    assert_eq!(a.podsets[0].flavors["cpu"], expected);
}

#[test]
fn among_preemption_flavors_the_one_not_borrowing_afterwards_wins() {
    // In `one`, preempting q's low workload leaves q borrowing from the lender; in `two` it does
    // not. Both need preemption in q, so the more local quota decides.
    let mut s = snapshot(
        &["one", "two"],
        vec![
            cq("q")
                .cohort("c")
                .group(
                    &["cpu"],
                    vec![
                        flavor_quotas("one", vec![quota("cpu", "4", None, None)]),
                        flavor_quotas("two", vec![quota("cpu", "4", None, None)]),
                    ],
                )
                .preemption(PreemptionPolicy::LowerPriority, PreemptionPolicy::Never)
                .build(),
            cq("lender")
                .cohort("c")
                .group(
                    &["cpu"],
                    vec![flavor_quotas("one", vec![quota("cpu", "2", None, None)])],
                )
                .build(),
        ],
    );
    s.add_workload("q", reserved("high-one", 100, 0, &[("one", "cpu", 3_000)]));
    s.add_workload("q", reserved("low-one", 0, 0, &[("one", "cpu", 1_000)]));
    s.add_workload(
        "lender",
        reserved("lender-wl", 0, 0, &[("one", "cpu", 1_000)]),
    );
    s.add_workload("q", reserved("low-two", 0, 0, &[("two", "cpu", 4_000)]));
    let a = assign_flavors(&s, "q", &pending_cpu("w", 10, 2_000));
    assert_eq!(a.mode, Mode::Preempt);
    assert_eq!(a.podsets[0].flavors["cpu"], "two");
}
