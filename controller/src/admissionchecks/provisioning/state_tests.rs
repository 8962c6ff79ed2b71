use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use rstest::rstest;

const DEFAULTS: EffectiveRetryStrategy = EffectiveRetryStrategy {
    backoff_limit_count: 3,
    backoff_base_seconds: 60,
    backoff_max_seconds: 1800,
};

fn condition(kind: &str, status: &str, message: &str) -> Condition {
    Condition {
        type_: kind.into(),
        status: status.into(),
        reason: "Reason".into(),
        message: message.into(),
        last_transition_time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ),
        observed_generation: None,
    }
}

fn check(state: CheckState, message: &str, retry_count: Option<i32>) -> AdmissionCheckState {
    AdmissionCheckState {
        name: "prov".into(),
        state,
        last_transition_time: Time(jiff::Timestamp::UNIX_EPOCH),
        message: message.into(),
        requeue_after_seconds: None,
        retry_count,
        pod_set_updates: vec![],
    }
}

fn update() -> PodSetUpdate {
    PodSetUpdate {
        name: "main".into(),
        annotations: [(
            "autoscaling.x-k8s.io/consume-provisioning-request".to_string(),
            "wl-prov-1".to_string(),
        )]
        .into(),
        ..Default::default()
    }
}

struct Case {
    conditions: Vec<Condition>,
    attempt: u32,
    admitted: bool,
    active: bool,
    finished: bool,
}

impl Case {
    fn new(conditions: &[(&str, &str, &str)]) -> Self {
        Case {
            conditions: conditions
                .iter()
                .map(|(k, s, m)| condition(k, s, m))
                .collect(),
            attempt: 1,
            admitted: false,
            active: true,
            finished: false,
        }
    }
    fn attempt(mut self, n: u32) -> Self {
        self.attempt = n;
        self
    }
    fn admitted(mut self) -> Self {
        self.admitted = true;
        self
    }
    fn inactive(mut self) -> Self {
        self.active = false;
        self
    }
    fn finished(mut self) -> Self {
        self.finished = true;
        self
    }
    fn facts(&self) -> Facts<'_> {
        Facts {
            retry: Some(DEFAULTS),
            needed: true,
            request: Some(RequestFacts {
                attempt: self.attempt,
                conditions: &self.conditions,
                pod_set_updates: vec![update()],
            }),
            workload_admitted: self.admitted,
            workload_active: self.active,
            workload_finished: self.finished,
        }
    }
}

/// (state, message, requeueAfterSeconds, has podSetUpdates, changed)
type Want = (CheckState, &'static str, Option<i32>, bool, bool);

#[rstest]
#[case::no_condition_yet(Case::new(&[]), check(CheckState::Pending, "", None),
    (CheckState::Pending, "", None, false, false))]
#[case::no_condition_clears_an_old_error(Case::new(&[]), check(CheckState::Pending, "Error creating PodTemplate", None),
    (CheckState::Pending, "", None, false, true))]
#[case::accepted_without_provisioned_says_nothing(Case::new(&[("Accepted", "True", "")]), check(CheckState::Pending, "", None),
    (CheckState::Pending, "", None, false, false))]
#[case::accepted_passes_on_the_eta(Case::new(&[("Accepted", "True", ""), ("Provisioned", "False", "ETA 10:42")]),
    check(CheckState::Pending, "", None),
    (CheckState::Pending, "ETA 10:42", None, false, true))]
#[case::not_accepted_ignores_the_eta(Case::new(&[("Accepted", "False", ""), ("Provisioned", "False", "ETA 10:42")]),
    check(CheckState::Pending, "", None),
    (CheckState::Pending, "", None, false, false))]
#[case::provisioned_is_ready_with_updates(Case::new(&[("Accepted", "True", ""), ("Provisioned", "True", "Capacity is provisioned")]),
    check(CheckState::Pending, "ETA 10:42", None),
    (CheckState::Ready, "Capacity is provisioned", None, true, true))]
#[case::ready_stays_as_it_is(Case::new(&[("Provisioned", "True", "a newer message")]),
    check(CheckState::Ready, "Capacity is provisioned", None),
    (CheckState::Ready, "Capacity is provisioned", None, false, false))]
#[case::first_failure_retries_after_60s(Case::new(&[("Failed", "True", "out of GPUs")]),
    check(CheckState::Pending, "", None),
    (CheckState::Retry, "Retrying after failure: out of GPUs", Some(60), false, true))]
#[case::second_failure_retries_after_120s(Case::new(&[("Failed", "True", "out of GPUs")]).attempt(2),
    check(CheckState::Pending, "", Some(1)),
    (CheckState::Retry, "Retrying after failure: out of GPUs", Some(120), false, true))]
#[case::third_failure_retries_after_240s(Case::new(&[("Failed", "True", "out of GPUs")]).attempt(3),
    check(CheckState::Pending, "", Some(2)),
    (CheckState::Retry, "Retrying after failure: out of GPUs", Some(240), false, true))]
#[case::fourth_failure_is_rejected(Case::new(&[("Failed", "True", "out of GPUs")]).attempt(4),
    check(CheckState::Pending, "", Some(3)),
    (CheckState::Rejected, "out of GPUs", None, false, true))]
#[case::an_attempt_already_counted_only_updates_the_message(Case::new(&[("Failed", "True", "out of GPUs")]),
    check(CheckState::Pending, "", Some(1)),
    (CheckState::Pending, "Retrying after failure: out of GPUs", None, false, true))]
#[case::failed_wins_over_provisioned(Case::new(&[("Provisioned", "True", "ok"), ("Failed", "True", "broken")]),
    check(CheckState::Pending, "", None),
    (CheckState::Retry, "Retrying after failure: broken", Some(60), false, true))]
#[case::revoked_rejects_an_active_workload(Case::new(&[("Provisioned", "True", "ok"), ("CapacityRevoked", "True", "nodes deleted")]).admitted(),
    check(CheckState::Ready, "ok", None),
    (CheckState::Rejected, "nodes deleted", None, false, true))]
#[case::revoked_leaves_a_finished_workload(Case::new(&[("CapacityRevoked", "True", "nodes deleted")]).admitted().finished(),
    check(CheckState::Ready, "ok", None),
    (CheckState::Ready, "ok", None, false, false))]
#[case::revoked_leaves_an_inactive_workload(Case::new(&[("CapacityRevoked", "True", "nodes deleted")]).inactive(),
    check(CheckState::Pending, "", None),
    (CheckState::Pending, "", None, false, false))]
#[case::revoked_wins_over_booking_expired(Case::new(&[("BookingExpired", "True", "expired"), ("CapacityRevoked", "True", "nodes deleted")]),
    check(CheckState::Pending, "", None),
    (CheckState::Rejected, "nodes deleted", None, false, true))]
#[case::booking_expired_before_admission_retries(Case::new(&[("Provisioned", "True", "ok"), ("BookingExpired", "True", "booking ran out")]),
    check(CheckState::Ready, "ok", None),
    (CheckState::Retry, "Retrying after booking expired: booking ran out", Some(60), false, true))]
#[case::booking_expired_after_admission_is_ignored(Case::new(&[("Provisioned", "True", "ok"), ("BookingExpired", "True", "booking ran out")]).admitted(),
    check(CheckState::Ready, "ok", None),
    (CheckState::Ready, "ok", None, false, false))]
#[case::booking_expired_past_the_limit_is_rejected(Case::new(&[("BookingExpired", "True", "booking ran out")]).attempt(4),
    check(CheckState::Pending, "", Some(3)),
    (CheckState::Rejected, "booking ran out", None, false, true))]
#[case::false_conditions_do_not_count(Case::new(&[("Failed", "False", ""), ("CapacityRevoked", "False", ""), ("BookingExpired", "False", "")]),
    check(CheckState::Pending, "", None),
    (CheckState::Pending, "", None, false, false))]
fn the_check_follows_its_request_in_kueues_order(
    #[case] case: Case,
    #[case] mut state: AdmissionCheckState,
    #[case] want: Want,
) {
    let changed = sync(&mut state, &case.facts());
    assert_eq!(
        (
            state.state,
            state.message.as_str(),
            state.requeue_after_seconds,
            !state.pod_set_updates.is_empty(),
            changed
        ),
        want
    );
}

#[test]
fn a_missing_config_makes_the_check_pending_and_inactive() {
    let mut state = check(CheckState::Ready, "ok", None);
    let facts = Facts {
        retry: None,
        needed: true,
        request: None,
        workload_admitted: false,
        workload_active: true,
        workload_finished: false,
    };
    assert!(sync(&mut state, &facts));
    assert_eq!(
        (state.state, state.message.as_str()),
        (CheckState::Pending, CHECK_INACTIVE_MESSAGE)
    );
    assert!(!sync(&mut state, &facts), "a second pass changes nothing");
}

#[test]
fn no_podset_needing_capacity_makes_the_check_ready_without_a_request() {
    let mut state = check(CheckState::Pending, "", None);
    state.pod_set_updates = vec![update()];
    let facts = Facts {
        retry: Some(DEFAULTS),
        needed: false,
        request: None,
        workload_admitted: false,
        workload_active: true,
        workload_finished: false,
    };
    assert!(sync(&mut state, &facts));
    assert_eq!(
        (
            state.state,
            state.message.as_str(),
            state.pod_set_updates.len()
        ),
        (CheckState::Ready, NO_REQUEST_NEEDED_MESSAGE, 0)
    );
}

#[test]
fn without_a_request_nothing_is_decided() {
    let mut state = check(CheckState::Pending, "waiting", None);
    let facts = Facts {
        retry: Some(DEFAULTS),
        needed: true,
        request: None,
        workload_admitted: false,
        workload_active: true,
        workload_finished: false,
    };
    assert!(!sync(&mut state, &facts));
    assert_eq!(state.message, "waiting");
}

#[test]
fn a_zero_limit_rejects_the_first_failure() {
    let mut state = check(CheckState::Pending, "", None);
    let conditions = [condition("Failed", "True", "no")];
    let facts = Facts {
        retry: Some(EffectiveRetryStrategy {
            backoff_limit_count: 0,
            ..DEFAULTS
        }),
        needed: true,
        request: Some(RequestFacts {
            attempt: 1,
            conditions: &conditions,
            pod_set_updates: vec![],
        }),
        workload_admitted: false,
        workload_active: true,
        workload_finished: false,
    };
    assert!(sync(&mut state, &facts));
    assert_eq!(state.state, CheckState::Rejected);
}

#[rstest]
#[case::first(0, 60, 1800, 60)]
#[case::second(1, 60, 1800, 120)]
#[case::third(2, 60, 1800, 240)]
#[case::capped(5, 60, 1800, 1800)]
#[case::custom_base(1, 10, 1800, 20)]
#[case::huge_count_saturates(200, 60, 1800, 1800)]
#[case::a_base_above_the_cap_is_waited_once(0, 100, 50, 100)]
#[case::then_the_cap(1, 100, 50, 50)]
#[case::no_cap_when_zero(3, 60, 0, 480)]
fn backoff_doubles_per_retry_up_to_the_max(
    #[case] retries: u32,
    #[case] base: i32,
    #[case] max: i32,
    #[case] want: i32,
) {
    assert_eq!(requeue_after_seconds(retries, base, max), want);
}
