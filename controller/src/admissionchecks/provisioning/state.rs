//! The admission check's state from its ProvisioningRequest, in Kueue's order of evaluation: a
//! missing config, then `Failed`, `CapacityRevoked`, `BookingExpired`, `Provisioned`, `Accepted`
//! (with a `Provisioned` condition: how an ETA reaches the user), and otherwise Pending.

use api::constants::provreq_condition as cond;
use api::kueue::{AdmissionCheckState, CheckState, EffectiveRetryStrategy, PodSetUpdate};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// The check's message while its ProvisioningRequestConfig is missing.
pub const CHECK_INACTIVE_MESSAGE: &str = "the check is not active";
/// The check's message when no podset needs capacity (no request is created).
pub const NO_REQUEST_NEEDED_MESSAGE: &str = "the provisioning request is not needed";

/// What the check's state is decided from.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    /// The config's retry strategy, or `None` when the config is missing.
    pub retry: Option<EffectiveRetryStrategy>,
    /// Whether any podset needs capacity (see [`super::request::is_needed`]).
    pub needed: bool,
    /// The workload's current request for this check, if there is one.
    pub request: Option<RequestFacts<'a>>,
    pub workload_admitted: bool,
    pub workload_active: bool,
    pub workload_finished: bool,
}

/// The parts of a ProvisioningRequest that decide the check.
#[derive(Debug, Clone)]
pub struct RequestFacts<'a> {
    /// The attempt the request's name stands for.
    pub attempt: u32,
    pub conditions: &'a [Condition],
    /// What a Ready check hands to the pods (see [`super::request::pod_set_updates`]).
    pub pod_set_updates: Vec<PodSetUpdate>,
}

/// Brings `check` up to date with `facts`; returns whether anything changed. Kueue's rules:
/// - a failure (or a booking that expired before admission) is retried only while the attempt
///   is within `backoffLimitCount`, and only once per attempt (an attempt not newer than the
///   check's retry count just updates the message); beyond the limit the check is Rejected;
/// - a revoked capacity rejects only an active, unfinished workload;
/// - a booking that expires after admission is ignored;
/// - Ready takes the podSetUpdates and the Provisioned message only on the transition.
pub fn sync(check: &mut AdmissionCheckState, facts: &Facts) -> bool {
    let Some(retry) = facts.retry else {
        return set_state(check, CheckState::Pending) | set_message(check, CHECK_INACTIVE_MESSAGE);
    };
    if !facts.needed {
        if set_state(check, CheckState::Ready) {
            check.message = NO_REQUEST_NEEDED_MESSAGE.into();
            check.pod_set_updates.clear();
            return true;
        }
        return false;
    }
    let Some(request) = &facts.request else {
        return false;
    };
    let found = |kind: &str| {
        request
            .conditions
            .iter()
            .find(|c| c.type_ == kind && c.status == "True")
    };
    if let Some(failed) = found(cond::FAILED) {
        retry_or_reject(check, request.attempt, &retry, "failure", &failed.message)
    } else if let Some(revoked) = found(cond::CAPACITY_REVOKED) {
        // Rejecting deactivates the workload, so that its pods do not wait forever for nodes
        // the autoscaler has already taken away.
        if facts.workload_active && !facts.workload_finished {
            set_state(check, CheckState::Rejected) | set_message(check, &revoked.message)
        } else {
            false
        }
    } else if let Some(expired) = found(cond::BOOKING_EXPIRED) {
        if facts.workload_admitted {
            false
        } else {
            retry_or_reject(
                check,
                request.attempt,
                &retry,
                "booking expired",
                &expired.message,
            )
        }
    } else if let Some(provisioned) = found(cond::PROVISIONED) {
        if set_state(check, CheckState::Ready) {
            check.pod_set_updates = request.pod_set_updates.clone();
            check.message = provisioned.message.clone();
            true
        } else {
            false
        }
    } else if found(cond::ACCEPTED).is_some() {
        match request
            .conditions
            .iter()
            .find(|c| c.type_ == cond::PROVISIONED)
        {
            Some(provisioned) => {
                set_message(check, &provisioned.message) | set_state(check, CheckState::Pending)
            }
            None => false,
        }
    } else {
        // Nothing to report until the class sets a condition; an earlier message (an error
        // creating the request, say) no longer holds.
        set_message(check, "") | set_state(check, CheckState::Pending)
    }
}

fn retry_or_reject(
    check: &mut AdmissionCheckState,
    attempt: u32,
    retry: &EffectiveRetryStrategy,
    what: &str,
    message: &str,
) -> bool {
    let limit = u32::try_from(retry.backoff_limit_count).unwrap_or(0);
    if attempt > limit {
        check.state = CheckState::Rejected;
        check.message = message.into();
        return true;
    }
    let mut changed = set_message(check, &format!("Retrying after {what}: {message}"));
    let retries = u32::try_from(check.retry_count.unwrap_or(0)).unwrap_or(0);
    // An old request (its attempt already counted) is not retried again.
    if attempt > retries {
        check.state = CheckState::Retry;
        check.requeue_after_seconds = Some(requeue_after_seconds(
            retries,
            retry.backoff_base_seconds,
            retry.backoff_max_seconds,
        ));
        changed = true;
    }
    changed
}

/// Seconds to wait before the next attempt after `retry_count` earlier retries: the base doubled
/// per retry (60, 120, 240 by default), as Kueue's `wait.Backoff` steps it: the cap applies from
/// the second step on, and a cap of 0 means none.
pub fn requeue_after_seconds(retry_count: u32, base: i32, max: i32) -> i32 {
    let base = i64::from(base.max(0));
    if retry_count == 0 {
        return base as i32;
    }
    let wait = base.saturating_mul(1i64 << retry_count.min(32));
    let capped = if max > 0 {
        wait.min(i64::from(max))
    } else {
        wait
    };
    capped.min(i64::from(i32::MAX)) as i32
}

fn set_state(check: &mut AdmissionCheckState, state: CheckState) -> bool {
    if check.state == state {
        return false;
    }
    check.state = state;
    true
}

fn set_message(check: &mut AdmissionCheckState, message: &str) -> bool {
    if check.message == message {
        return false;
    }
    check.message = message.into();
    true
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
