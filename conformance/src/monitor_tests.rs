use api::autoscaling::ProvisioningRequestStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use rstest::rstest;

use super::*;

/// A condition `Type=Status/Reason@second`.
fn c(spec: &str) -> Condition {
    let (rest, at) = spec.split_once('@').expect("@second");
    let (type_status, reason) = rest.split_once('/').expect("/reason");
    let (type_, status) = type_status.split_once('=').expect("=status");
    let start: Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: "m".into(),
        last_transition_time: Time(
            start + jiff::SignedDuration::from_secs(at.parse().expect("secs")),
        ),
        observed_generation: Some(1),
    }
}

/// One string per version: its conditions, comma-separated. Versions are seen a minute apart,
/// except one starting with `~ `, seen half a second after the one before.
fn history(versions: &[&str]) -> Vec<Seen> {
    let mut at = Timestamp::UNIX_EPOCH;
    versions
        .iter()
        .enumerate()
        .map(|(i, conditions)| {
            let (soon, conditions) = match conditions.strip_prefix("~ ") {
                Some(rest) => (true, rest),
                None => (false, *conditions),
            };
            if i > 0 {
                at += if soon {
                    jiff::SignedDuration::from_millis(500)
                } else {
                    jiff::SignedDuration::from_secs(60)
                };
            }
            Seen {
                at,
                status: ProvisioningRequestStatus {
                    conditions: conditions.split(", ").map(c).collect(),
                    provisioning_class_details: Default::default(),
                },
            }
        })
        .collect()
}

#[rstest]
#[case::upstream_check_capacity_retry_then_found(
    &["Accepted=True/Accepted@0, Provisioned=False/CapacityIsNotFound@0",
      "Accepted=True/Accepted@60, Provisioned=False/CapacityIsNotFound@60",
      "Accepted=True/Accepted@180, Provisioned=True/CapacityIsFound@180",
      "Accepted=True/Accepted@180, Provisioned=True/CapacityIsFound@180, BookingExpired=True/CapacityReservationTimeExpired@780"],
    None
)]
#[case::vendor_queue(
    &["Accepted=False/NotAccepted@0, Provisioned=False/NotProvisioned@0",
      "Accepted=True/SuccessfullyQueued@30, Provisioned=False/NotProvisioned@0",
      "Accepted=True/SuccessfullyQueued@30, Provisioned=True/Provisioned@300",
      "Accepted=True/SuccessfullyQueued@30, Provisioned=True/Provisioned@300, CapacityRevoked=True/MaxRunDurationExceeded@900"],
    None
)]
#[case::provisioned_and_failed(
    &["Provisioned=True/CapacityIsFound@0, Failed=True/FailedToBookCapacity@0"],
    Some(rule::NEVER_PROVISIONED_AND_FAILED)
)]
#[case::booking_expired_first(
    &["Accepted=True/Accepted@0, BookingExpired=True/CapacityReservationTimeExpired@0"],
    Some(rule::BOOKING_EXPIRES_AFTER_PROVISIONED)
)]
#[case::booking_expired_after_a_provisioned_that_went_away_is_fine(
    &["Provisioned=True/CapacityIsFound@0",
      "Provisioned=False/CapacityIsNotFound@60, BookingExpired=True/CapacityReservationTimeExpired@600"],
    None
)]
#[case::stale_time(
    &["Provisioned=False/CapacityIsNotFound@0", "Provisioned=True/CapacityIsFound@0"],
    Some(rule::TRANSITION_TIME_MOVES)
)]
#[case::same_status_same_time_is_fine(
    &["Provisioned=False/CapacityIsNotFound@0", "Provisioned=False/StillLooking@0"],
    None
)]
#[case::failed_then_not(
    &["Failed=True/FailedToCreatePods@0", "Failed=False/CapacityIsFound@60, Provisioned=True/CapacityIsFound@60"],
    Some(rule::FAILED_IS_TERMINAL)
)]
#[case::revoked_then_not(
    &["Provisioned=True/Provisioned@0, CapacityRevoked=True/MaxRunDurationExceeded@60", "Provisioned=True/Provisioned@0, CapacityRevoked=False/Restored@120"],
    Some(rule::REVOKED_IS_TERMINAL)
)]
#[case::a_change_within_the_same_second_keeps_its_time(
    &["Accepted=False/NotAccepted@0", "~ Accepted=True/SuccessfullyQueued@0"],
    None
)]
#[case::time_going_back(
    &["Provisioned=False/CapacityIsNotFound@60", "Provisioned=True/CapacityIsFound@30"],
    Some(rule::TRANSITION_TIME_MOVES)
)]
#[case::provisioned_taken_back(
    &["Provisioned=True/CapacityIsFound@0", "Provisioned=False/CapacityIsNotFound@60"],
    Some(rule::PROVISIONED_IS_KEPT)
)]
#[case::provisioned_condition_dropped(
    &["Accepted=True/Accepted@0, Provisioned=True/CapacityIsFound@0", "Accepted=True/Accepted@0"],
    Some(rule::PROVISIONED_IS_KEPT)
)]
#[case::provisioned_taken_back_after_revocation_is_fine(
    &["Provisioned=True/Provisioned@0",
      "Provisioned=True/Provisioned@0, CapacityRevoked=True/MaxRunDurationExceeded@60",
      "Provisioned=False/Revoked@120, CapacityRevoked=True/MaxRunDurationExceeded@60"],
    None
)]
#[case::provisioned_again_after_a_take_back_is_still_a_take_back(
    &["Provisioned=True/CapacityIsFound@0", "Provisioned=False/CapacityIsNotFound@60",
      "Provisioned=True/CapacityIsFound@120"],
    Some(rule::PROVISIONED_IS_KEPT)
)]
#[case::snake_case(&["Accepted=True/accepted@0"], Some(rule::REASONS_ARE_CAMEL_CASE))]
#[case::punctuated(&["Accepted=True/Was-Accepted@0"], Some(rule::REASONS_ARE_CAMEL_CASE))]
#[case::odd_status(&["Accepted=Yes/Accepted@0"], Some(rule::STATUS_IS_TRUE_FALSE_OR_UNKNOWN))]
fn histories_are_judged_by_the_contract(
    #[case] versions: &[&str],
    #[case] broken: Option<&'static str>,
) {
    let found = check("r", &history(versions), false).map(|v| v.rule);
    assert_eq!(found, broken);
}

#[test]
fn a_violation_says_which_request_and_what() {
    let v = check(
        "train-1",
        &history(&["Provisioned=True/CapacityIsFound@0, Failed=True/Oops@0"]),
        false,
    )
    .expect("violation");
    assert!(v.detail.starts_with("request train-1 at "), "{}", v.detail);
    assert!(
        v.detail.contains("Provisioned=True and Failed=True"),
        "{}",
        v.detail
    );
}

#[test]
fn pods_that_cannot_fit_are_never_provisioned() {
    let h = history(&[
        "Provisioned=False/CapacityIsNotFound@0",
        "Provisioned=True/CapacityIsFound@60",
    ]);
    assert_eq!(
        check("r", &h, false),
        None,
        "a request that fits may be provisioned"
    );
    let v = check("r", &h, true).expect("violation");
    assert_eq!(v.rule, rule::UNFIT_NEVER_PROVISIONED);
    assert!(v.detail.contains("podTemplates.doesNotFit"), "{}", v.detail);
}
