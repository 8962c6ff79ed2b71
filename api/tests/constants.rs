//! Spot checks that the shared names are spelled as upstream spells them.

use api::constants::*;

#[test]
fn workload_conditions_and_reasons() {
    assert_eq!(workload_condition::QUOTA_RESERVED, "QuotaReserved");
    assert_eq!(workload_condition::ADMITTED, "Admitted");
    assert_eq!(workload_condition::EVICTED, "Evicted");
    assert_eq!(workload_condition::REQUEUED, "Requeued");
    assert_eq!(
        workload_condition::DEACTIVATION_TARGET,
        "DeactivationTarget"
    );
    assert_eq!(workload_condition::FINISHED, "Finished");
    assert_eq!(workload_reason::NO_RESERVATION, "NoReservation");
    assert_eq!(
        workload_reason::UNSATISFIED_ADMISSION_CHECKS,
        "UnsatisfiedAdmissionChecks"
    );
    assert_eq!(
        workload_reason::DEACTIVATED_DUE_TO_ADMISSION_CHECK,
        "DeactivatedDueToAdmissionCheck"
    );
    assert_eq!(workload_reason::INACTIVE_WORKLOAD, "InactiveWorkload");
    assert_eq!(workload_reason::BACKOFF_FINISHED, "BackoffFinished");
}

#[test]
fn provisioning_request_names() {
    assert_eq!(provreq_condition::BOOKING_EXPIRED, "BookingExpired");
    assert_eq!(provreq_condition::CAPACITY_REVOKED, "CapacityRevoked");
    assert_eq!(
        provreq_reason::CAPACITY_RESERVATION_TIME_EXPIRED,
        "CapacityReservationTimeExpired"
    );
    assert_eq!(provreq_reason::FAILED_TO_CREATE_PODS, "FailedToCreatePods");
    assert_eq!(
        provisioning_class::CHECK_CAPACITY,
        "check-capacity.autoscaling.x-k8s.io"
    );
    assert_eq!(
        provisioning_class::BEST_EFFORT_ATOMIC_SCALE_UP,
        "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
    );
}

#[test]
fn labels_annotations_and_controllers() {
    assert_eq!(label::QUEUE_NAME, "kueue.x-k8s.io/queue-name");
    assert_eq!(label::MANAGED, "kueue.x-k8s.io/managed");
    assert_eq!(label::MULTIKUEUE_ORIGIN, "kueue.x-k8s.io/multikueue-origin");
    assert_eq!(
        label::PREBUILT_WORKLOAD_NAME,
        "kueue.x-k8s.io/prebuilt-workload-name"
    );
    assert_eq!(
        annotation::CONSUME_PROVISIONING_REQUEST,
        "autoscaling.x-k8s.io/consume-provisioning-request"
    );
    assert_eq!(
        annotation::PROVISIONING_CLASS_NAME,
        "autoscaling.x-k8s.io/provisioning-class-name"
    );
    assert_eq!(annotation::PROVREQ_PREFIX, "provreq.kueue.x-k8s.io/");
    assert_eq!(
        controller_name::PROVISIONING_REQUEST,
        "kueue.x-k8s.io/provisioning-request"
    );
    assert_eq!(controller_name::MULTIKUEUE, "kueue.x-k8s.io/multikueue");
    assert_eq!(
        dispatcher::INCREMENTAL,
        "kueue.x-k8s.io/multikueue-dispatcher-incremental"
    );
}

#[test]
fn check_states_match_the_enum() {
    use api::kueue::CheckState;
    for state in [
        CheckState::Pending,
        CheckState::Ready,
        CheckState::Retry,
        CheckState::Rejected,
    ] {
        assert_eq!(
            serde_json::to_value(state).expect("serialises"),
            state.as_str()
        );
    }
    assert_eq!(CheckState::Retry.as_str(), check_state::RETRY);
}
