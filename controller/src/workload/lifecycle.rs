//! One step of a workload's life, decided without IO, in the order Kueue's workload reconciler
//! takes them: deactivation, check-based eviction, releasing quota, backoff and requeueing, syncing
//! the admission checks, then the QuotaReserved/Admitted conditions.
//!
//! [`step`] mutates the workload as the next write should leave it and says what to write. The
//! reconciler writes, sees the result, and calls it again until it answers [`Step::Idle`] or asks
//! to be woken later.

use api::constants::{workload_condition as cond, workload_reason as reason};
use api::kueue::{
    CheckState, ClusterQueue, LocalQueue, SchedulingStats, StopPolicy, Workload,
    WorkloadSchedulingStatsEviction, WorkloadStatus,
};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::{checks, conditions};

/// What the world around a workload looks like.
pub struct Context<'a> {
    pub now: Time,
    /// The workload's LocalQueue, if it exists.
    pub local_queue: Option<&'a LocalQueue>,
    /// The LocalQueue's ClusterQueue, if it exists.
    pub cluster_queue: Option<&'a ClusterQueue>,
    /// Whether that ClusterQueue can admit (its Active condition).
    pub cluster_queue_active: bool,
    /// Whether a job integration owns the workload. It then stops the job before quota is
    /// released; a workload nobody runs has its quota released here, at once.
    pub owned_by_job: bool,
    /// The `UnadmittedWorkloadsObservability` gate (Kueue's default: on).
    pub observability: bool,
}

/// A Kubernetes Event to record about the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub warning: bool,
    pub reason: String,
    pub message: String,
}

impl Event {
    pub fn normal(reason: &str, message: impl Into<String>) -> Self {
        Event {
            warning: false,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }

    pub fn warning(reason: &str, message: impl Into<String>) -> Self {
        Event {
            warning: true,
            reason: reason.to_owned(),
            message: message.into(),
        }
    }
}

/// What the reconciler should do next.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Nothing to do until something changes.
    Idle,
    /// Write the (mutated) status, then record these events.
    Status(Vec<Event>),
    /// Write the (mutated) spec: `active: false`.
    Deactivate,
    /// Nothing to do before this time.
    WakeAt(Timestamp),
}

/// Decides the next step and applies it to `wl`.
pub fn step(wl: &mut Workload, ctx: &Context) -> Step {
    if super::is_finished(wl) || wl.metadata.deletion_timestamp.is_some() {
        return Step::Idle;
    }
    let generation = wl.metadata.generation;
    let now = ctx.now.clone();
    if super::is_active(wl) {
        let status = wl.status.get_or_insert_with(WorkloadStatus::default);
        if conditions::is_true(&status.conditions, cond::DEACTIVATION_TARGET) {
            wl.spec.active = Some(false);
            return Step::Deactivate;
        }
        if let Some(step) = check_based_eviction(status, generation, &now) {
            return step;
        }
    } else {
        let status = wl.status.get_or_insert_with(WorkloadStatus::default);
        if let Some(step) = deactivate(status, generation, &now) {
            return step;
        }
    }

    let status = wl.status.get_or_insert_with(WorkloadStatus::default);
    if !ctx.owned_by_job
        && let Some(events) =
            release_quota_after_eviction(status, generation, &now, ctx.observability)
    {
        return Step::Status(events);
    }

    let reserved = conditions::is_true(&status.conditions, cond::QUOTA_RESERVED);
    if super::is_active(wl) && !reserved {
        let status = wl.status.get_or_insert_with(WorkloadStatus::default);
        if let Some(at) = status
            .requeue_state
            .as_ref()
            .and_then(|r| r.requeue_at.clone())
        {
            if at.0 > now.0 {
                return Step::WakeAt(at.0);
            }
            if let Some(state) = status.requeue_state.as_mut() {
                state.requeue_at = None;
            }
            return Step::Status(vec![]);
        }
        if let Some(c) = conditions::find(&status.conditions, cond::REQUEUED)
            && c.status == "False"
        {
            let next = if c.reason.starts_with(reason::DEACTIVATED) {
                Some((reason::REACTIVATED, "The workload was reactivated"))
            } else if c.reason == reason::ADMISSION_CHECK || c.reason == reason::PODS_READY_TIMEOUT
            {
                Some((
                    reason::BACKOFF_FINISHED,
                    "The workload backoff was finished",
                ))
            } else {
                None
            };
            if let Some((r, m)) = next {
                set(status, generation, cond::REQUEUED, true, r, m, &now);
                return Step::Status(vec![]);
            }
        }
    }

    if let Some(cq) = ctx.cluster_queue {
        let required = checks::required_for(wl, &cq.spec);
        let status = wl.status.get_or_insert_with(WorkloadStatus::default);
        if checks::sync(&mut status.admission_checks, &required, &now) {
            return Step::Status(vec![]);
        }
    }

    if !super::is_admitted(wl) {
        let active = super::is_active(wl);
        let queue_name = wl.spec.queue_name.clone().unwrap_or_default();
        let all_ready = super::all_checks_ready(wl);
        let status = wl.status.get_or_insert_with(WorkloadStatus::default);
        let mut changed = false;
        if !reserved {
            changed |=
                sync_quota_reserved_false(status, generation, &now, ctx, active, &queue_name);
        }
        changed |= sync_admitted(status, generation, &now, all_ready, ctx.observability);
        if changed {
            let mut events = vec![];
            if conditions::is_true(&status.conditions, cond::ADMITTED) {
                events.push(admitted_event(status, &now));
            }
            return Step::Status(events);
        }
    }
    Step::Idle
}

/// Rejected checks mark the workload for deactivation; Retry checks evict it.
fn check_based_eviction(
    status: &mut WorkloadStatus,
    generation: Option<i64>,
    now: &Time,
) -> Option<Step> {
    let reserved = conditions::is_true(&status.conditions, cond::QUOTA_RESERVED);
    if !reserved || conditions::is_true(&status.conditions, cond::EVICTED) {
        return None;
    }
    let states = &status.admission_checks;
    if states.iter().any(|s| s.state == CheckState::Rejected) {
        let message = checks::checks_message(states, CheckState::Rejected);
        set(
            status,
            generation,
            cond::DEACTIVATION_TARGET,
            true,
            reason::ADMISSION_CHECK,
            &message,
            now,
        );
        return Some(Step::Status(vec![Event::warning(
            reason::ADMISSION_CHECK_REJECTED_EVENT,
            format!("Deactivated due to {message}"),
        )]));
    }
    if states.iter().any(|s| s.state == CheckState::Retry) {
        let message = format!(
            "Evicted due to {}",
            checks::checks_message(states, CheckState::Retry)
        );
        if let Some(at) = checks::max_retry_time(states) {
            let state = status.requeue_state.get_or_insert_with(Default::default);
            if state.requeue_at.as_ref().is_none_or(|t| t.0 < at) {
                state.requeue_at = Some(Time(at));
            }
        }
        evict(status, generation, now, reason::ADMISSION_CHECK, &message);
        return Some(Step::Status(vec![Event::normal(
            reason::EVICTED_DUE_TO_ADMISSION_CHECK_EVENT,
            message,
        )]));
    }
    None
}

/// An inactive workload is evicted (once), its DeactivationTarget and requeue state cleared.
fn deactivate(status: &mut WorkloadStatus, generation: Option<i64>, now: &Time) -> Option<Step> {
    if conditions::is_true(&status.conditions, cond::EVICTED) {
        if status.requeue_state.take().is_some() {
            return Some(Step::Status(vec![]));
        }
        return None;
    }
    let target = conditions::find(&status.conditions, cond::DEACTIVATION_TARGET).cloned();
    let (eviction_reason, message) = match &target {
        Some(t) => (
            format!("{}{DUE_TO}{}", reason::DEACTIVATED, t.reason),
            format!("The workload is deactivated due to {}", t.message),
        ),
        None => (
            reason::DEACTIVATED.to_owned(),
            "The workload is deactivated".to_owned(),
        ),
    };
    conditions::remove(&mut status.conditions, cond::DEACTIVATION_TARGET);
    status.requeue_state = None;
    let had_admission = status.admission.is_some();
    evict(status, generation, now, &eviction_reason, &message);
    let events = if had_admission {
        vec![Event::normal(
            &format!("EvictedDueTo{eviction_reason}"),
            message,
        )]
    } else {
        vec![]
    };
    Some(Step::Status(events))
}

/// Sets Evicted, resets the admission checks and counts the eviction in
/// `status.schedulingStats.evictions`, as Kueue's eviction does.
pub fn evict(
    status: &mut WorkloadStatus,
    generation: Option<i64>,
    now: &Time,
    eviction_reason: &str,
    message: &str,
) {
    let (counted_reason, underlying_cause) = eviction_stats_key(status, eviction_reason);
    count_eviction(status, counted_reason, &underlying_cause);
    set(
        status,
        generation,
        cond::EVICTED,
        true,
        eviction_reason,
        message,
        now,
    );
    status.cluster_name = None;
    status.nominated_cluster_names.clear();
    checks::reset_on_eviction(&mut status.admission_checks, now);
}

/// Kueue joins a deactivation's reason and its cause: `DeactivatedDueToAdmissionCheck`.
const DUE_TO: &str = "DueTo";

/// The cause of a deactivation's Evicted reason (`EvictedOnManagerCluster` from
/// `DeactivatedDueToEvictedOnManagerCluster`); `None` for any other reason.
pub fn deactivation_cause(eviction_reason: &str) -> Option<&str> {
    eviction_reason
        .strip_prefix(reason::DEACTIVATED)
        .and_then(|rest| rest.strip_prefix(DUE_TO))
}

/// The (reason, underlyingCause) Kueue counts an eviction under, read from the Evicted reason
/// written for it: a deactivation with a cause is written `Deactivated` + `DueTo` + cause and
/// counted as (`Deactivated`, cause); a PodsReady timeout is counted with the PodsReady
/// condition's wait (`WaitForStart` or `WaitForRecovery`), as Kueue's timeout passes it;
/// every other reason has no underlying cause.
fn eviction_stats_key<'r>(status: &WorkloadStatus, eviction_reason: &'r str) -> (&'r str, String) {
    if let Some(cause) = deactivation_cause(eviction_reason) {
        return (reason::DEACTIVATED, cause.to_owned());
    }
    if eviction_reason == reason::PODS_READY_TIMEOUT {
        let recovering = conditions::find(&status.conditions, cond::PODS_READY)
            .is_some_and(|c| c.reason == WAIT_FOR_RECOVERY);
        let wait = if recovering {
            WAIT_FOR_RECOVERY
        } else {
            WAIT_FOR_START
        };
        return (eviction_reason, wait.to_owned());
    }
    (eviction_reason, String::new())
}

/// PodsReady=False reasons: the pods never were all ready since admission, or one failed since.
const WAIT_FOR_START: &str = "WaitForStart";
const WAIT_FOR_RECOVERY: &str = "WaitForRecovery";

/// One more eviction for (reason, underlyingCause): its counter goes up, or a new counter is
/// appended after the others, as Kueue's `workloadEvictionStateInc` keeps them.
fn count_eviction(status: &mut WorkloadStatus, eviction_reason: &str, underlying_cause: &str) {
    let evictions = &mut status
        .scheduling_stats
        .get_or_insert_with(SchedulingStats::default)
        .evictions;
    match evictions
        .iter_mut()
        .find(|e| e.reason == eviction_reason && e.underlying_cause == underlying_cause)
    {
        Some(counter) => counter.count += 1,
        None => evictions.push(WorkloadSchedulingStatsEviction {
            reason: eviction_reason.to_owned(),
            underlying_cause: underlying_cause.to_owned(),
            count: 1,
        }),
    }
}

/// After an eviction, once nothing runs: clears the reservation and records why the workload
/// waits (Requeued). Returns the events, or `None` if there is nothing to release.
pub fn release_quota_after_eviction(
    status: &mut WorkloadStatus,
    generation: Option<i64>,
    now: &Time,
    observability: bool,
) -> Option<Vec<Event>> {
    let evicted = conditions::find(&status.conditions, cond::EVICTED)
        .filter(|c| c.status == "True")
        .cloned()?;
    if !conditions::is_true(&status.conditions, cond::QUOTA_RESERVED) {
        return None;
    }
    let requeued = evicted.reason == reason::PREEMPTED;
    set(
        status,
        generation,
        cond::REQUEUED,
        requeued,
        &evicted.reason,
        &evicted.message,
        now,
    );
    let pending = if observability {
        reason::PENDING_EVALUATION
    } else {
        reason::PENDING
    };
    unset_quota_reservation(
        status,
        generation,
        now,
        pending,
        &evicted.message,
        observability,
    );
    Some(vec![])
}

/// QuotaReserved=False with this reason and message, the admission cleared and Admitted synced.
pub fn unset_quota_reservation(
    status: &mut WorkloadStatus,
    generation: Option<i64>,
    now: &Time,
    why: &str,
    message: &str,
    observability: bool,
) -> bool {
    let mut changed = set(
        status,
        generation,
        cond::QUOTA_RESERVED,
        false,
        why,
        message,
        now,
    );
    if status.admission.take().is_some() {
        changed = true;
    }
    let all_ready = status
        .admission_checks
        .iter()
        .all(|c| c.state == CheckState::Ready);
    changed |= sync_admitted(status, generation, now, all_ready, observability);
    changed
}

/// Keeps Admitted equal to "quota reserved and every check Ready", with Kueue's reasons.
pub fn sync_admitted(
    status: &mut WorkloadStatus,
    generation: Option<i64>,
    now: &Time,
    all_checks_ready: bool,
    observability: bool,
) -> bool {
    let reserved = conditions::is_true(&status.conditions, cond::QUOTA_RESERVED);
    let admitted = conditions::is_true(&status.conditions, cond::ADMITTED);
    if observability {
        if conditions::find(&status.conditions, cond::QUOTA_RESERVED).is_none()
            && conditions::find(&status.conditions, cond::ADMITTED).is_none()
        {
            return false;
        }
    } else if admitted == (reserved && all_checks_ready) {
        return false;
    }
    let (ok, why, message) = match (reserved, all_checks_ready) {
        (true, true) => (true, reason::ADMITTED, "The workload is admitted"),
        (false, false) if !observability => (
            false,
            "NoReservationUnsatisfiedChecks",
            "The workload has no reservation and not all checks ready",
        ),
        (false, _) => (
            false,
            reason::NO_RESERVATION,
            "The workload has no reservation",
        ),
        (true, false) => (
            false,
            if observability {
                reason::UNSATISFIED_ADMISSION_CHECKS
            } else {
                "UnsatisfiedChecks"
            },
            "The workload has not all checks ready",
        ),
    };
    set(status, generation, cond::ADMITTED, ok, why, message, now)
}

/// Why an unreserved workload cannot be scheduled, when the reason is its queues or its own
/// deactivation. The scheduler's own reasons (waiting for quota, ...) are kept.
fn sync_quota_reserved_false(
    status: &mut WorkloadStatus,
    generation: Option<i64>,
    now: &Time,
    ctx: &Context,
    active: bool,
    queue_name: &str,
) -> bool {
    let lq_stopped = ctx
        .local_queue
        .is_some_and(|lq| lq.spec.stop_policy.unwrap_or_default() != StopPolicy::None);
    let blocker: Option<(&str, String)> = if !active {
        ctx.observability.then(|| {
            (
                reason::DEACTIVATED,
                "The workload is deactivated".to_owned(),
            )
        })
    } else if ctx.local_queue.is_none() {
        Some((
            reason::MISCONFIGURED,
            format!("LocalQueue {queue_name} doesn't exist"),
        ))
    } else if lq_stopped {
        Some((
            reason::SUSPENDED,
            format!("LocalQueue {queue_name} is inactive"),
        ))
    } else if let Some(lq) = ctx.local_queue
        && ctx.cluster_queue.is_none()
    {
        Some((
            reason::MISCONFIGURED,
            format!("ClusterQueue {} doesn't exist", lq.spec.cluster_queue),
        ))
    } else if let Some(cq) = ctx.cluster_queue
        && !ctx.cluster_queue_active
    {
        Some((
            reason::SUSPENDED,
            format!(
                "ClusterQueue {} is inactive",
                cq.metadata.name.as_deref().unwrap_or_default()
            ),
        ))
    } else {
        None
    };
    match blocker {
        Some((why, message)) => {
            let why = if ctx.observability {
                why
            } else {
                reason::INADMISSIBLE
            };
            set(
                status,
                generation,
                cond::QUOTA_RESERVED,
                false,
                why,
                &message,
                now,
            )
        }
        None => false,
    }
}

/// The `Admitted` event, with the wait since the reservation in whole seconds.
fn admitted_event(status: &WorkloadStatus, now: &Time) -> Event {
    let cq = status
        .admission
        .as_ref()
        .map(|a| a.cluster_queue.as_str())
        .unwrap_or_default();
    let since = conditions::find(&status.conditions, cond::QUOTA_RESERVED)
        .map(|c| now.0.duration_since(c.last_transition_time.0).as_secs_f64())
        .unwrap_or(0.0);
    Event::normal(
        reason::ADMITTED_EVENT,
        format!("Admitted by ClusterQueue {cq}, wait time since reservation was {since:.0}s"),
    )
}

/// Sets a condition stamped with the workload's generation.
pub fn set(
    status: &mut WorkloadStatus,
    generation: Option<i64>,
    type_: &str,
    value: bool,
    why: &str,
    message: &str,
    now: &Time,
) -> bool {
    let mut c = conditions::new(type_, value, why, message, now);
    c.observed_generation = generation;
    conditions::set(&mut status.conditions, c)
}

#[cfg(test)]
#[path = "lifecycle_tests.rs"]
mod tests;
