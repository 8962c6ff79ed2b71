//! Choosing which reserving workloads to evict so that a pending workload fits: upstream Kueue's
//! classical preemption (`pkg/scheduler/preemption`, `classical/`) for one-level cohorts.
//!
//! Candidates are workloads using a flavor/resource the assignment needs preemption for, allowed
//! by the preemptor's ClusterQueue policies: `withinClusterQueue` for its own queue, and
//! `reclaimWithinCohort` for cohort members that are borrowing. They are ordered (evicted first,
//! other queues before the own queue, lowest priority, most recently reserved), removed one by one
//! until the workload fits, and then those not needed are put back, last removed first. If
//! nothing makes it fit, there are no targets.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use api::kueue::PreemptionPolicy;

use super::common::{Assignment, PendingWorkload};
use super::snapshot::{
    ClusterQueueSnapshot, FlavorResource, Quotas, ReservedWorkload, SimulatedUsage, Snapshot, Usage,
};

/// Why a workload is preempted: the `Preempted` condition's reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PreemptionReason {
    /// To admit a higher-priority workload of the same ClusterQueue.
    InClusterQueue,
    /// To give back quota its ClusterQueue borrowed from the preemptor's.
    InCohortReclamation,
}

impl PreemptionReason {
    /// The condition reason.
    pub fn as_str(self) -> &'static str {
        match self {
            PreemptionReason::InClusterQueue => "InClusterQueue",
            PreemptionReason::InCohortReclamation => "InCohortReclamation",
        }
    }

    /// The phrase used in the eviction message.
    pub fn human(self) -> &'static str {
        match self {
            PreemptionReason::InClusterQueue => "prioritization in the ClusterQueue",
            PreemptionReason::InCohortReclamation => "reclamation within the cohort",
        }
    }
}

/// A workload to evict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `namespace/name`.
    pub key: String,
    /// The ClusterQueue it reserves quota in.
    pub cluster_queue: String,
    /// Why it is preempted.
    pub reason: PreemptionReason,
}

/// The message of the preempted workload's `Evicted` and `Preempted` conditions. Empty UIDs and
/// paths read `UNKNOWN`, as upstream writes them; paths come from [`Snapshot::cq_path`].
pub fn preemption_message(
    preemptor_uid: &str,
    job_uid: Option<&str>,
    reason: PreemptionReason,
    preemptor_path: &str,
    preemptee_path: &str,
) -> String {
    let or_unknown = |s: &str| {
        if s.is_empty() {
            "UNKNOWN".to_string()
        } else {
            s.to_string()
        }
    };
    format!(
        "Preempted to accommodate a workload (UID: {}, JobUID: {}) due to {}; preemptor path: {}; preemptee path: {}",
        or_unknown(preemptor_uid),
        or_unknown(job_uid.unwrap_or("")),
        reason.human(),
        or_unknown(preemptor_path),
        or_unknown(preemptee_path),
    )
}

/// The workloads to evict so that `wl`, assigned as `assignment`, fits in `cq`. Only flavor/
/// resources the assignment marks for preemption are contested. Empty when preemption cannot
/// make the workload fit (or nothing needs preemption).
pub fn find_targets(
    snapshot: &Snapshot,
    cq: &str,
    wl: &PendingWorkload,
    assignment: &Assignment,
) -> Vec<Target> {
    let Some(queue) = snapshot.cluster_queues.get(cq) else {
        return Vec::new();
    };
    let frs = assignment.preempt_flavor_resources();
    classical_targets(snapshot, queue, wl, &frs, &assignment.usage)
}

/// The queue and workload a target names.
pub(crate) fn lookup<'a>(
    snapshot: &'a Snapshot,
    target: &Target,
) -> Option<(&'a ClusterQueueSnapshot, &'a ReservedWorkload)> {
    let queue = snapshot.cluster_queues.get(&target.cluster_queue)?;
    let wl = queue.workloads.get(&target.key)?;
    Some((queue, wl))
}

/// A workload that may be evicted, and why.
struct Candidate<'a> {
    queue: &'a ClusterQueueSnapshot,
    wl: &'a ReservedWorkload,
    reason: PreemptionReason,
}

/// The preemption search for the workload usage `usage` (every flavor/resource it would
/// reserve), contesting `frs`. Also used by flavor assignment to simulate preemption for one
/// flavor/resource.
///
/// Upstream distinguishes reclaiming with a "hierarchical advantage" (the workload fits in the
/// preemptor's nominal quota, so it may keep borrowing) from reclaiming without borrowing. In a
/// one-level cohort both end the same way: with the advantage the workload fits within nominal
/// anyway, so borrowing is never needed. This search therefore only reclaims while the preemptor
/// would not borrow afterwards, and first tries without borrowing when other members can be
/// reclaimed from, as upstream does (there is no `borrowWithinCohort` in the API).
pub(crate) fn classical_targets(
    snapshot: &Snapshot,
    cq: &ClusterQueueSnapshot,
    wl: &PendingWorkload,
    frs: &BTreeSet<FlavorResource>,
    usage: &Usage,
) -> Vec<Target> {
    let search = Search {
        snapshot,
        cq,
        wl,
        frs,
        usage,
    };
    let (reclaim, same_queue) = search.candidates();
    // Reclaiming only makes sense while the preemptor queue is under its nominal quota.
    let attempts: &[bool] = if reclaim.is_empty() || !search.under_nominal() {
        &[true]
    } else {
        &[false, true]
    };
    let ordered = order_candidates(reclaim, same_queue);
    attempts
        .iter()
        .find_map(|&allow_borrowing| search.minimal_set(&ordered, allow_borrowing))
        .unwrap_or_default()
}

struct Search<'a> {
    snapshot: &'a Snapshot,
    cq: &'a ClusterQueueSnapshot,
    wl: &'a PendingWorkload,
    frs: &'a BTreeSet<FlavorResource>,
    usage: &'a Usage,
}

impl<'a> Search<'a> {
    /// Candidates in other cohort members (only members borrowing in a contested flavor/
    /// resource), and in the preemptor's own queue.
    fn candidates(&self) -> (Vec<Candidate<'a>>, Vec<Candidate<'a>>) {
        let policies = self.cq.preemption();
        let mut same_queue = Vec::new();
        if policies.within_cluster_queue != PreemptionPolicy::Never {
            same_queue = self
                .eligible(self.cq, policies.within_cluster_queue)
                .map(|wl| Candidate {
                    queue: self.cq,
                    wl,
                    reason: PreemptionReason::InClusterQueue,
                })
                .collect();
        }
        let mut reclaim = Vec::new();
        let Some(cohort) = self.cq.cohort() else {
            return (reclaim, same_queue);
        };
        if policies.reclaim_within_cohort == PreemptionPolicy::Never {
            return (reclaim, same_queue);
        }
        let recorded = self.snapshot.recorded();
        for member in self.snapshot.cohort_members(cohort) {
            if member.name == self.cq.name || recorded.within_nominal(member, self.frs) {
                continue;
            }
            reclaim.extend(
                self.eligible(member, policies.reclaim_within_cohort)
                    .map(|wl| Candidate {
                        queue: member,
                        wl,
                        reason: PreemptionReason::InCohortReclamation,
                    }),
            );
        }
        (reclaim, same_queue)
    }

    /// Workloads of `queue` using a contested flavor/resource that `policy` lets the preemptor
    /// evict.
    fn eligible(
        &self,
        queue: &'a ClusterQueueSnapshot,
        policy: PreemptionPolicy,
    ) -> impl Iterator<Item = &'a ReservedWorkload> + 'a {
        let frs = self.frs;
        let (priority, created) = (self.wl.priority, self.wl.queue_order_time);
        queue
            .workloads
            .values()
            .filter(move |wl| wl.uses_any(frs) && policy_allows(policy, priority, created, wl))
    }

    /// Whether the preemptor queue uses strictly less than its nominal quota in every contested
    /// flavor/resource.
    fn under_nominal(&self) -> bool {
        self.frs
            .iter()
            .all(|fr| self.cq.usage_of(fr) < self.cq.quota(fr).nominal)
    }

    /// Removes candidates in order until the workload fits, then puts back (last removed first)
    /// those it still fits without. `None` when removing every valid candidate is not enough.
    fn minimal_set(&self, ordered: &[Candidate<'a>], allow_borrowing: bool) -> Option<Vec<Target>> {
        let mut simulated = SimulatedUsage::default();
        let mut removed: Vec<&Candidate<'a>> = Vec::new();
        for candidate in ordered {
            if !self.still_valid(candidate, allow_borrowing, &simulated) {
                continue;
            }
            simulated.remove(candidate.queue, candidate.wl);
            removed.push(candidate);
            if self.fits(&simulated, allow_borrowing) {
                self.put_back(&mut removed, &mut simulated, allow_borrowing);
                return Some(
                    removed
                        .iter()
                        .map(|c| Target {
                            key: c.wl.key.clone(),
                            cluster_queue: c.queue.name.clone(),
                            reason: c.reason,
                        })
                        .collect(),
                );
            }
        }
        None
    }

    /// Puts back every removed candidate but the last, newest first, keeping it removed only if
    /// the workload no longer fits without removing it. Mirrors upstream's swap-removal, so the
    /// targets come out in the same order.
    fn put_back(
        &self,
        removed: &mut Vec<&Candidate<'a>>,
        simulated: &mut SimulatedUsage,
        allow_borrowing: bool,
    ) {
        for i in (0..removed.len().saturating_sub(1)).rev() {
            let Some(candidate) = removed.get(i).copied() else {
                continue;
            };
            simulated.add(candidate.queue, candidate.wl);
            if self.fits(simulated, allow_borrowing) {
                removed.swap_remove(i);
            } else {
                simulated.remove(candidate.queue, candidate.wl);
            }
        }
    }

    /// Whether a candidate may still be taken: own-queue candidates always; another member's
    /// only when the preemptor must not borrow, and while that member still borrows in a
    /// contested flavor/resource.
    fn still_valid(
        &self,
        candidate: &Candidate<'_>,
        allow_borrowing: bool,
        simulated: &SimulatedUsage,
    ) -> bool {
        if candidate.queue.name == self.cq.name {
            return true;
        }
        if allow_borrowing {
            return false;
        }
        let quotas = Quotas {
            snapshot: self.snapshot,
            source: simulated,
        };
        !quotas.within_nominal(candidate.queue, self.frs)
    }

    /// Whether the whole workload fits now (without borrowing when `allow_borrowing` is false).
    fn fits(&self, simulated: &SimulatedUsage, allow_borrowing: bool) -> bool {
        let quotas = Quotas {
            snapshot: self.snapshot,
            source: simulated,
        };
        self.usage.iter().all(|(fr, value)| {
            (allow_borrowing || !quotas.borrowing_with(self.cq, fr, *value))
                && *value <= quotas.available(self.cq, fr)
        })
    }
}

/// Whether `policy` lets a workload of priority `priority`, created at `created`, preempt `wl`.
fn policy_allows(
    policy: PreemptionPolicy,
    priority: i32,
    created: i64,
    wl: &ReservedWorkload,
) -> bool {
    let lower = priority > wl.priority;
    match policy {
        PreemptionPolicy::Never => false,
        PreemptionPolicy::LowerPriority => lower,
        PreemptionPolicy::LowerOrNewerEqualPriority => {
            lower || (priority == wl.priority && created < wl.queue_order_time)
        }
        PreemptionPolicy::Any => true,
    }
}

/// Upstream's candidate order within one kind of candidate: lower priority first, most recently
/// reserved first, then by UID (and key) for determinism. Upstream's other criteria, evicted
/// first and other queues before the preemptor's, are applied by [`order_candidates`] (the
/// queue criterion never decides within one kind).
fn compare(a: &Candidate<'_>, b: &Candidate<'_>) -> Ordering {
    a.wl.priority
        .cmp(&b.wl.priority)
        .then_with(|| b.wl.reserved_at.cmp(&a.wl.reserved_at))
        .then_with(|| a.wl.uid.cmp(&b.wl.uid))
        .then_with(|| a.wl.key.cmp(&b.wl.key))
}

/// Sorts each kind, then lists the evicted of every kind before the rest, other members'
/// workloads before the own queue's.
fn order_candidates<'a>(
    reclaim: Vec<Candidate<'a>>,
    same_queue: Vec<Candidate<'a>>,
) -> Vec<Candidate<'a>> {
    let mut kinds = [reclaim, same_queue];
    for kind in &mut kinds {
        kind.sort_by(compare);
    }
    let (evicted, active): (Vec<Vec<Candidate<'a>>>, Vec<Vec<Candidate<'a>>>) = kinds
        .into_iter()
        .map(|kind| kind.into_iter().partition(|c| c.wl.evicted))
        .unzip();
    evicted.into_iter().chain(active).flatten().collect()
}

#[cfg(test)]
#[path = "preemption_tests.rs"]
mod tests;
