//! The broken variants: each breaks its rule in one small world where the reference keeps every
//! rule, breaks no other there, and deviates as its documentation says.

use std::collections::BTreeSet;

use api::contract as rule;

use super::*;

/// Each broken variant, in a world where the reference classes keep every rule.
#[rstest]
#[case::provisioned_and_failed(Broken::ProvisionedAndFailed)]
#[case::booking_expired_before_provisioned(Broken::BookingExpiredBeforeProvisioned)]
#[case::stale_transition_time(Broken::StaleTransitionTime)]
#[case::never_leaves_accepted(Broken::NeverLeavesAccepted)]
#[case::partial_scale_up(Broken::PartialScaleUp)]
#[case::ignores_deletion(Broken::IgnoresDeletion)]
#[case::revives_failed(Broken::RevivesFailed)]
#[case::snake_case_reasons(Broken::SnakeCaseReasons)]
#[case::provisions_without_templates(Broken::ProvisionsWithoutTemplates)]
#[case::takes_back_provisioned(Broken::TakesBackProvisioned)]
#[case::provisions_unfit(Broken::ProvisionsUnfit)]
#[case::waits_without_templates(Broken::WaitsWithoutTemplates)]
#[case::revives_failed_on_a_slow_loop(Broken::RevivesFailedOnASlowLoop)]
fn broken_variants_break_their_rule_and_no_other(#[case] variant: Broken) {
    let reference = broken_scenario(None);
    assert!(reference.waiter_waited, "the scenario shows a wait");
    assert_eq!(reference.rules_broken(), Vec::<&str>::new());
    let broken = broken_scenario(Some(variant));
    assert_eq!(broken.rules_broken(), [variant.rule()], "{broken:#?}");
}

#[test]
fn every_variant_is_in_the_scenario_test() {
    // The rstest above lists them by hand; a new variant must be added there too.
    assert_eq!(Broken::ALL.len(), 13);
}

#[derive(Default, Debug, Clone, PartialEq)]
struct Observed {
    waiter_waited: bool,
    provisioned_and_failed: bool,
    booking_expired_unprovisioned: bool,
    stale_transition_time: bool,
    /// A request neither failed nor saying whether it is provisioned.
    silent: bool,
    nodes_after_impossible: usize,
    /// A deleted request's capacity was not free for the next one.
    deletion_held: bool,
    failed_then_provisioned: bool,
    reasons_camel_case: bool,
    /// A request missing its PodTemplates was provisioned, or is not failed.
    orphan_not_failed: bool,
    /// Provisioned=True turned False while nothing ended its booking.
    taken_back: bool,
    /// The request whose pods can never fit was Provisioned=True.
    unfit_provisioned: bool,
}

impl Observed {
    /// The rules of the contract the observations show broken.
    fn rules_broken(&self) -> Vec<&'static str> {
        [
            (
                self.provisioned_and_failed,
                rule::NEVER_PROVISIONED_AND_FAILED,
            ),
            (
                self.booking_expired_unprovisioned,
                rule::BOOKING_EXPIRES_AFTER_PROVISIONED,
            ),
            (self.stale_transition_time, rule::TRANSITION_TIME_MOVES),
            (self.silent, rule::PROGRESS_IS_VISIBLE),
            (self.nodes_after_impossible > 0, rule::NO_PARTIAL_CAPACITY),
            (self.deletion_held, rule::DELETION_CANCELS),
            (self.failed_then_provisioned, rule::FAILED_IS_TERMINAL),
            (!self.reasons_camel_case, rule::REASONS_ARE_CAMEL_CASE),
            (self.orphan_not_failed, rule::MISSING_TEMPLATES_HANDLED),
            (self.taken_back, rule::PROVISIONED_IS_KEPT),
            (self.unfit_provisioned, rule::UNFIT_NEVER_PROVISIONED),
        ]
        .into_iter()
        .filter_map(|(broken, rule)| broken.then_some(rule))
        .collect()
    }
}

const SCENARIO_WORLD: &str = r#"
nodeGroups:
  - name: cpu
    machine: {cpu: "4"}
    minSize: 1
    maxSize: 1
  - name: gpu
    machine: {nvidia.com/gpu: "4"}
    maxSize: 2
    scaleUpDelay: 1m
"#;

fn with_variant(variant: Option<Broken>, world: &str) -> Harness {
    let broken = variant.map_or(String::new(), |v| format!("broken: {}\n", v.name()));
    Harness::new(&format!("{broken}{world}"))
}

/// The checks a conformance suite would make, on one small world. Steps are 50s apart, so that a
/// class on a 45-second loop acts on each before the next.
fn broken_scenario(variant: Option<Broken>) -> Observed {
    let mut h = with_variant(variant, SCENARIO_WORLD);
    let mut seen = Observed::default();
    h.template("fits", &[("cpu", "3")], &[]);
    h.template("never", &[("nvidia.com/gpu", "4")], &[]);
    // Fits: provisioned.
    h.request("fits", CHECK, &[("fits", 1)], &[]);
    h.advance_to(50);
    let fits_provisioned = logged(&h, " fits Provisioned=True");
    // Freed on deletion: the same pods fit again.
    h.delete_request("fits");
    h.request("again", CHECK, &[("fits", 1)], &[]);
    h.advance_to(100);
    let again_provisioned = logged(&h, " again Provisioned=True");
    seen.deletion_held = fits_provisioned && !again_provisioned;
    // Waits behind `again`'s booking, then fits once it is deleted: Provisioned goes False -> True.
    h.request("waiter", CHECK, &[("fits", 1)], &[]);
    h.advance_to(150);
    seen.waiter_waited = h
        .condition("waiter", "Provisioned")
        .is_some_and(|c| c.status == "False");
    h.delete_request("again");
    // Impossible for an atomic class: three nodes of a two-node group.
    h.advance_to(250);
    h.request("impossible", ATOMIC, &[("never", 3)], &[]);
    h.advance_to(400);
    seen.nodes_after_impossible = h
        .node_names()
        .iter()
        .filter(|n| n.starts_with("gpu"))
        .count();
    h.delete_request("impossible");
    // Fails without retry, then time passes.
    h.request("noretry", CHECK, &[("never", 1)], &[("noRetry", "true")]);
    // Missing templates.
    h.request("orphan", CHECK, &[("missing", 1)], &[]);
    h.advance_to(1200);
    for request in h.world.requests.values() {
        let status = request.status.clone().unwrap_or_default();
        let get = |t: &str| status.conditions.iter().find(|c| c.type_ == t);
        let is = |t: &str| get(t).is_some_and(|c| c.status == "True");
        let name = key_of(request).1;
        seen.provisioned_and_failed |= is("Provisioned") && is("Failed");
        seen.booking_expired_unprovisioned |= is("BookingExpired") && !is("Provisioned");
        seen.orphan_not_failed |= name == "orphan" && (is("Provisioned") || !is("Failed"));
        seen.silent |= !is("Failed") && get("Provisioned").is_none();
    }
    seen.reasons_camel_case = h.world.requests.values().all(|r| {
        r.status.iter().flat_map(|s| &s.conditions).all(|c| {
            c.reason
                .chars()
                .next()
                .is_some_and(|ch| ch.is_ascii_uppercase())
                && c.reason.chars().all(|ch| ch.is_ascii_alphanumeric())
        })
    });
    // The waiter went from Provisioned=False to True: a time still at its first write is stale.
    let waited_at = h
        .log
        .iter()
        .find(|l| l.contains(" waiter Provisioned=False"))
        .map(|l| log_seconds(l));
    seen.stale_transition_time = seen.waiter_waited
        && h.condition("waiter", "Provisioned").is_some_and(|c| {
            c.status == "True"
                && Some(c.last_transition_time.0.duration_since(h.start).as_secs()) == waited_at
        });
    seen.taken_back = followed(&h.log, "Provisioned=True", "Provisioned=False");
    seen.failed_then_provisioned = followed(&h.log, "Failed=True", "Provisioned=True");
    seen.unfit_provisioned = logged(&h, " impossible Provisioned=True");
    seen
}

/// The seconds of a log line (`+12s ...`).
fn log_seconds(line: &str) -> i64 {
    line.trim_start_matches('+')
        .split('s')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(-1)
}

fn logged(h: &Harness, text: &str) -> bool {
    h.log.iter().any(|l| l.contains(text))
}

/// Whether some request's condition change `first` was later followed by `then` (such as
/// `Provisioned=True` by `Provisioned=False`: none of the scenario's bookings end, fail or are
/// revoked before that could happen).
fn followed(log: &[String], first: &str, then: &str) -> bool {
    let mut seen_first = BTreeSet::new();
    for line in log {
        let mut words = line.split(' ').skip(1);
        let (Some(name), Some(change)) = (words.next(), words.next()) else {
            continue;
        };
        if change == first {
            seen_first.insert(name);
        } else if change == then && seen_first.contains(name) {
            return true;
        }
    }
    false
}

/// The times of a request's condition changes in the log, as `+SECONDS Type=Status Reason`.
fn changes_of(h: &Harness, request: &str) -> Vec<String> {
    let marker = format!(" {request} ");
    h.log
        .iter()
        .filter(|l| l.contains(&marker))
        .map(|l| l.replacen(&marker, " ", 1))
        .collect()
}

#[test]
fn takes_back_provisioned_flips_a_booked_request_ten_seconds_after_provisioning_it() {
    let mut h = with_variant(Some(Broken::TakesBackProvisioned), ONE_CPU_NODE);
    h.template("t", &[("cpu", "3")], &[]);
    h.request("a", CHECK, &[("t", 1)], &[]);
    h.advance_to(9);
    assert_eq!(h.condition("a", "Provisioned").expect("p").status, "True");
    h.advance_to(10);
    let back = h.condition("a", "Provisioned").expect("p");
    assert_eq!(
        (
            back.status.as_str(),
            back.reason.as_str(),
            back.message.as_str()
        ),
        (
            "False",
            "CapacityIsNotFound",
            "Capacity is no longer available, CA will try to find it again."
        )
    );
    assert_eq!(
        back.last_transition_time
            .0
            .duration_since(h.start)
            .as_secs(),
        10,
        "a fresh time"
    );
    // The booking is free: another request takes the room, and `a` waits for it in turn.
    h.request("b", CHECK, &[("t", 1)], &[]);
    assert_eq!(h.condition("b", "Provisioned").expect("b").status, "True");
    h.delete_request("b");
    h.advance_to(200);
    assert_eq!(
        changes_of(&h, "a"),
        [
            "+0s Accepted=True Accepted",
            "+0s Provisioned=True CapacityIsFound",
            "+10s Provisioned=False CapacityIsNotFound",
            "+70s Provisioned=True CapacityIsFound",
            "+80s Provisioned=False CapacityIsNotFound",
            "+140s Provisioned=True CapacityIsFound",
            "+150s Provisioned=False CapacityIsNotFound",
        ],
        "provisioned again at each retry a minute later, and taken back each time"
    );
}

#[test]
fn takes_back_provisioned_keeps_a_consumed_booking() {
    let mut h = with_variant(Some(Broken::TakesBackProvisioned), ONE_CPU_NODE);
    h.template("t", &[("cpu", "3")], &[]);
    h.request("a", CHECK, &[("t", 1)], &[]);
    h.advance_to(5);
    h.bind_pod("p0", "t", "cpu-0", "a");
    assert_eq!(
        h.condition("a", "BookingExpired").expect("consumed").reason,
        "CapacityBookingConsumed"
    );
    h.advance_to(3600);
    assert_eq!(
        changes_of(&h, "a"),
        [
            "+0s Accepted=True Accepted",
            "+0s Provisioned=True CapacityIsFound",
            "+5s BookingExpired=True CapacityBookingConsumed",
        ],
        "kept once its booking ended"
    );
}

#[test]
fn provisions_unfit_says_provisioned_for_pods_that_never_fit_and_books_nothing() {
    let mut h = with_variant(Some(Broken::ProvisionsUnfit), ONE_CPU_NODE);
    h.template("t", &[("cpu", "3")], &[]);
    // Two 3-CPU pods, and one node of 4 CPUs that the group never grows.
    h.request("big", CHECK, &[("t", 2)], &[]);
    let p = h.condition("big", "Provisioned").expect("p");
    assert_eq!(
        (p.status.as_str(), p.reason.as_str()),
        ("True", "CapacityIsFound")
    );
    // Nothing is booked for `big`, not even the pod that would fit: the node has room for one.
    h.request("fits", CHECK, &[("t", 1)], &[]);
    assert_eq!(
        h.condition("fits", "Provisioned").expect("f").status,
        "True"
    );
    // Pods that only lack room now wait, as with the reference.
    h.request("later", CHECK, &[("t", 1)], &[]);
    assert_eq!(
        h.condition("later", "Provisioned").expect("l").status,
        "False"
    );
    // The booking of `big` ends as the reference's would.
    h.advance_to(600);
    assert_eq!(
        h.condition("big", "BookingExpired")
            .expect("expired")
            .reason,
        "CapacityReservationTimeExpired"
    );
}

#[test]
fn provisions_unfit_on_every_class_adds_no_node() {
    let mut h = with_variant(
        Some(Broken::ProvisionsUnfit),
        &format!(
            "{GPU_GROUP}classes: [{{name: {VENDOR}, behaviour: vendor, queueDelay: 30s}}, \
             {{name: {CHECK}, behaviour: check-capacity}}, {{name: {ATOMIC}, behaviour: atomic-scale-up}}]\n"
        ),
    );
    // Five 4-GPU nodes of a four-node group.
    h.template("t", &[("nvidia.com/gpu", "4")], &[]);
    h.request("atomic", ATOMIC, &[("t", 5)], &[]);
    let p = h.condition("atomic", "Provisioned").expect("p");
    assert_eq!(
        (p.status.as_str(), p.reason.as_str()),
        ("True", "CapacityIsProvisioned")
    );
    h.request("check", CHECK, &[("t", 5)], &[]);
    assert_eq!(
        h.condition("check", "Provisioned").expect("c").status,
        "True"
    );
    h.request("job", VENDOR, &[("t", 5)], &[]);
    assert_eq!(
        h.condition("job", "Provisioned").expect("p").status,
        "False",
        "the vendor class's pick-up, as the reference's"
    );
    h.advance_to(30);
    let p = h.condition("job", "Provisioned").expect("p");
    assert_eq!(
        (p.status.as_str(), p.reason.as_str()),
        ("True", "Provisioned")
    );
    // Two GPU nodes would fit if check-capacity scaled up; it does not, and says so.
    h.request("could", CHECK, &[("t", 2)], &[]);
    assert_eq!(
        h.condition("could", "Provisioned").expect("c").status,
        "False"
    );
    h.advance_to(600);
    assert!(h.node_names().is_empty(), "{:?}", h.log);
}

#[test]
fn waits_without_templates_waits_for_them_and_goes_on_when_they_come() {
    let mut h = with_variant(Some(Broken::WaitsWithoutTemplates), ONE_CPU_NODE);
    h.request("a", CHECK, &[("late", 1)], &[]);
    let accepted = h.condition("a", "Accepted").expect("accepted");
    assert_eq!(accepted.status, "True");
    let p = h.condition("a", "Provisioned").expect("p");
    assert_eq!(
        (p.status.as_str(), p.reason.as_str(), p.message.as_str()),
        (
            "False",
            "WaitingForPodTemplates",
            "Waiting for the request's pod templates: missing pod templates, 1 pod templates were \
             referenced, 1 templates were missing: late"
        )
    );
    h.advance_to(3600);
    assert!(h.condition("a", "Failed").is_none(), "{:?}", h.log);
    assert_eq!(
        h.condition("a", "Provisioned")
            .expect("p")
            .last_transition_time,
        p.last_transition_time,
        "written once"
    );
    h.template("late", &[("cpu", "1")], &[]);
    h.advance_to(3600);
    let p = h.condition("a", "Provisioned").expect("p");
    assert_eq!(
        (p.status.as_str(), p.reason.as_str()),
        ("True", "CapacityIsFound")
    );
}

#[test]
fn waits_without_templates_still_fails_a_provisioned_request_that_loses_them() {
    let mut h = with_variant(Some(Broken::WaitsWithoutTemplates), ONE_CPU_NODE);
    h.template("t", &[("cpu", "1")], &[]);
    h.request("a", CHECK, &[("t", 1)], &[]);
    h.world.templates.clear();
    h.advance_to(10);
    let failed = h.condition("a", "Failed").expect("failed");
    assert_eq!(failed.reason, "FailedToBookCapacity");
}

#[test]
fn ignores_deletion_holds_a_deleted_booking_until_it_would_have_expired() {
    let mut h = with_variant(Some(Broken::IgnoresDeletion), ONE_CPU_NODE);
    h.template("t", &[("cpu", "3")], &[]);
    h.request("a", CHECK, &[("t", 1)], &[]);
    h.advance_to(100);
    h.delete_request("a");
    h.advance_to(599);
    h.request("b", CHECK, &[("t", 1)], &[]);
    assert_eq!(
        h.condition("b", "Provisioned").expect("b").status,
        "False",
        "held: a was provisioned at 0s, its booking runs to 600s"
    );
    h.advance_to(600);
    h.request("c", CHECK, &[("t", 1)], &[]);
    assert_eq!(
        h.condition("c", "Provisioned").expect("c").status,
        "True",
        "{:?}",
        h.log
    );
}

#[test]
fn revives_failed_on_a_slow_loop_acts_on_45_second_ticks_only() {
    let mut h = with_variant(Some(Broken::RevivesFailedOnASlowLoop), ONE_CPU_NODE);
    h.template("t", &[("cpu", "1")], &[]);
    h.template("big", &[("cpu", "8")], &[]);
    h.advance_to(10);
    h.request("a", CHECK, &[("t", 1)], &[]);
    h.request("no", CHECK, &[("big", 1)], &[("noRetry", "true")]);
    assert!(h.condition("a", "Accepted").is_none(), "between ticks");
    h.advance_to(44);
    assert!(h.condition("a", "Accepted").is_none(), "between ticks");
    h.advance_to(200);
    assert_eq!(
        changes_of(&h, "a"),
        [
            "+45s Accepted=True Accepted",
            "+45s Provisioned=True CapacityIsFound",
        ]
    );
    assert_eq!(
        changes_of(&h, "no"),
        [
            "+45s Accepted=True Accepted",
            "+45s Failed=True CapacityIsNotFound",
            "+90s Failed=False CapacityIsFound",
            "+90s Provisioned=True CapacityIsFound",
        ],
        "revived at the next tick"
    );
    // The booking ends at the first tick from 10 minutes after Provisioned=True (645s): 675s.
    h.advance_to(674);
    assert!(h.condition("a", "BookingExpired").is_none(), "{:?}", h.log);
    h.advance_to(675);
    assert!(h.condition("a", "BookingExpired").is_some(), "{:?}", h.log);
}
