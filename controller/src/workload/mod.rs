//! Workload facts and decisions, kept pure as Kueue keeps `pkg/workload`: what state a workload is
//! in, and what its lifecycle asks for next (admission checks, eviction, requeueing).

pub mod checks;
pub mod conditions;
pub mod lifecycle;

use api::constants::{workload_condition as cond, workload_reason as reason};
use api::kueue::{CheckState, Workload};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

/// `namespace/name`, the key Kueue logs and messages use.
pub fn key(wl: &Workload) -> String {
    format!(
        "{}/{}",
        wl.metadata.namespace.as_deref().unwrap_or_default(),
        wl.metadata.name.as_deref().unwrap_or_default()
    )
}

pub fn has_quota_reservation(wl: &Workload) -> bool {
    status_true(wl, cond::QUOTA_RESERVED)
}

pub fn is_admitted(wl: &Workload) -> bool {
    status_true(wl, cond::ADMITTED)
}

pub fn is_finished(wl: &Workload) -> bool {
    status_true(wl, cond::FINISHED)
}

pub fn is_evicted(wl: &Workload) -> bool {
    status_true(wl, cond::EVICTED)
}

/// `spec.active` defaults to true.
pub fn is_active(wl: &Workload) -> bool {
    wl.spec.active.unwrap_or(true)
}

pub fn priority(wl: &Workload) -> i32 {
    wl.spec.priority.unwrap_or(0)
}

/// A workload's priority as preemption events report it: the base (`spec.priority`), the boost
/// from its `kueue.x-k8s.io/priority-boost` annotation (read only under the PriorityBoost gate; a
/// value that does not parse counts as none, as Kueue falls back to the base), and their sum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EffectivePriority {
    pub base: i32,
    pub boost: i32,
}

impl EffectivePriority {
    pub fn of(wl: &Workload, boost_gate: bool) -> Self {
        let boost = boost_gate
            .then(|| {
                wl.metadata
                    .annotations
                    .as_ref()?
                    .get(api::constants::annotation::PRIORITY_BOOST)?
                    .parse::<i32>()
                    .ok()
            })
            .flatten()
            .unwrap_or(0);
        EffectivePriority {
            base: priority(wl),
            boost,
        }
    }

    pub fn effective(&self) -> i64 {
        i64::from(self.base) + i64::from(self.boost)
    }
}

/// `P (base: B, boost: X)`, as Kueue's preemption events write it.
impl std::fmt::Display for EffectivePriority {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (base: {}, boost: {})",
            self.effective(),
            self.base,
            self.boost
        )
    }
}

/// The timestamp that orders a queue: creation, in seconds.
pub fn queue_order_time(wl: &Workload) -> i64 {
    wl.metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.as_second())
        .unwrap_or(0)
}

pub fn all_checks_ready(wl: &Workload) -> bool {
    wl.status.as_ref().is_none_or(|s| {
        s.admission_checks
            .iter()
            .all(|c| c.state == CheckState::Ready)
    })
}

/// Whether the workload may be considered by the scheduler: active, unfinished, holding no quota,
/// and not waiting out a backoff or a stop.
pub fn is_queueable(wl: &Workload, now: jiff::Timestamp) -> bool {
    if !is_active(wl) || is_finished(wl) || has_quota_reservation(wl) {
        return false;
    }
    if wl.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let Some(status) = &wl.status else {
        return true;
    };
    if let Some(at) = status
        .requeue_state
        .as_ref()
        .and_then(|r| r.requeue_at.as_ref())
        && at.0 > now
    {
        return false;
    }
    match conditions::find(&status.conditions, cond::REQUEUED) {
        Some(c) if c.status == "False" => {
            !matches!(
                c.reason.as_str(),
                reason::ADMISSION_CHECK
                    | reason::PODS_READY_TIMEOUT
                    | reason::CLUSTER_QUEUE_STOPPED
                    | reason::LOCAL_QUEUE_STOPPED
            ) && !c.reason.starts_with("Deactivated")
        }
        _ => true,
    }
}

fn status_true(wl: &Workload, type_: &str) -> bool {
    true_condition(wl, type_).is_some()
}

/// The workload's condition of this type, if it is True.
pub fn true_condition<'a>(wl: &'a Workload, type_: &str) -> Option<&'a Condition> {
    wl.status
        .as_ref()
        .and_then(|s| conditions::find(&s.conditions, type_))
        .filter(|c| c.status == "True")
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use api::kueue::Workload;

    use super::EffectivePriority;

    fn workload(priority: i32, boost: Option<&str>) -> Workload {
        let mut wl = Workload::new("w", Default::default());
        wl.spec.priority = Some(priority);
        wl.metadata.annotations = boost.map(|b| {
            BTreeMap::from([(
                api::constants::annotation::PRIORITY_BOOST.to_string(),
                b.to_string(),
            )])
        });
        wl
    }

    #[test]
    fn the_boost_counts_only_under_its_gate_and_only_when_it_parses() {
        let boosted = workload(100, Some("-30"));
        assert_eq!(
            EffectivePriority::of(&boosted, true).to_string(),
            "70 (base: 100, boost: -30)"
        );
        assert_eq!(
            EffectivePriority::of(&boosted, false).to_string(),
            "100 (base: 100, boost: 0)"
        );
        assert_eq!(
            EffectivePriority::of(&workload(5, Some("lots")), true).to_string(),
            "5 (base: 5, boost: 0)"
        );
    }
}
