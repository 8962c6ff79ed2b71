//! The scheduling cycle: take the head of every ClusterQueue, assign flavors against a snapshot of
//! quota, and reserve quota for what fits, preempt for what could fit, and tell the rest why not.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use api::constants::{workload_condition as cond, workload_reason as reason};
use api::kueue::{Admission, Workload, WorkloadStatus};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::PodSpec;
use kube::ResourceExt;

use super::workloads::queued_wait;
use super::{Reconciler, kept_to_its_object};
use crate::error::Error;
use crate::options::Options;
use crate::resources;
use crate::resources::Transformer;
use crate::scheduler::cycle_backoff::CycleBackoff;
use crate::scheduler::queue::Parked;
use crate::scheduler::queue::{Entry, Queues};
use crate::scheduler::{
    Assignment, ClusterQueueSnapshot, Mode, PendingWorkload, PodSetRequest, ReservedWorkload,
    Snapshot, Target, find_targets, preemption_message,
};
use crate::state::{Key, World};
use crate::workload::{self, checks, conditions, lifecycle};
use crate::writer::Written;

/// The scheduler's state between cycles.
pub(super) struct SchedulerPass {
    /// Resource transformations, from the configuration.
    pub transformer: Transformer,
    pub queues: Queues,
    /// ClusterQueues whose queues must be tried again ("" for all).
    pub requeue: BTreeSet<String>,
    /// Queued workloads per LocalQueue.
    pub lq_pending: BTreeMap<Key, BTreeSet<Key>>,
    /// The LocalQueue each queued workload waits in.
    pub lq_of: BTreeMap<Key, Key>,
    /// Unfinished workloads holding quota, per ClusterQueue.
    pub reserving: BTreeMap<String, BTreeSet<Key>>,
    /// The SchedulingEquivalenceHashing gate.
    pub equivalence_hashing: bool,
    /// The scheduler loop's pause after cycles that admitted nothing, and when it ends.
    pub cycle_backoff: CycleBackoff,
    pub not_before: Option<Timestamp>,
    /// What scheduling cycles rebuild their quota snapshot from.
    pub snapshots: SnapshotCache,
}

impl SchedulerPass {
    pub fn new(options: &Options) -> Self {
        // The configuration was validated at load, transformations included.
        let transformer = Transformer::new(options.config.resources.as_ref()).unwrap_or_default();
        SchedulerPass {
            transformer,
            queues: Queues::default(),
            requeue: BTreeSet::new(),
            lq_pending: BTreeMap::new(),
            lq_of: BTreeMap::new(),
            reserving: BTreeMap::new(),
            equivalence_hashing: crate::config::gate(
                &options.config,
                "SchedulingEquivalenceHashing",
            ),
            cycle_backoff: CycleBackoff::default(),
            not_before: None,
            snapshots: SnapshotCache::default(),
        }
    }
}

impl Reconciler {
    pub(super) async fn schedule(&mut self, world: &mut World) -> Result<bool, Error> {
        let now = self.options.clock.now();
        if self.scheduler.not_before.is_some_and(|t| now < t) {
            return Ok(false);
        }
        self.scheduler.not_before = None;
        let requeue = std::mem::take(&mut self.scheduler.requeue);
        if requeue.contains("") {
            let all: Vec<String> = world.cluster_queues.keys().cloned().collect();
            self.scheduler
                .queues
                .requeue(all.iter().map(String::as_str));
        } else {
            self.scheduler
                .queues
                .requeue(requeue.iter().map(String::as_str));
        }
        let mut progressed = false;
        let mut snapshot: Option<Snapshot> = None;
        loop {
            let heads = self.scheduler.queues.heads();
            if heads.is_empty() {
                break;
            }
            let (cache, reserving) = (&mut self.scheduler.snapshots, &self.scheduler.reserving);
            let snap = snapshot.get_or_insert_with(|| cache.build(world, reserving));
            // Order the heads as Kueue does: those within nominal quota first, then priority,
            // then age.
            let mut entries = vec![];
            for (cq, entry) in heads {
                let Some(wl) = world.workloads.get_shared(&entry.key) else {
                    self.scheduler.queues.remove(&entry.key);
                    continue;
                };
                let pending = self.pending_workload(&wl);
                let assignment = crate::scheduler::assign_flavors(snap, &cq, &pending);
                entries.push((assignment.borrows, entry, cq, wl, pending));
            }
            entries.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
            // The heads were taken out of their queues; a failed write must not lose them.
            let taken: Vec<(String, Entry)> = entries
                .iter()
                .map(|(_, entry, cq, _, _)| (cq.clone(), entry.clone()))
                .collect();
            let admitted = match self.try_heads(world, snap, entries).await {
                Ok((wrote, admitted)) => {
                    progressed |= wrote;
                    admitted
                }
                Err(e) => {
                    for (cq, entry) in taken {
                        self.scheduler.queues.put_back(&cq, entry);
                    }
                    return Err(e);
                }
            };
            let pause = self.scheduler.cycle_backoff.after_cycle(admitted);
            if !pause.is_zero() {
                self.scheduler.not_before = now.checked_add(pause).ok();
                break;
            }
        }
        Ok(progressed)
    }

    /// One cycle's heads, in order: admitted, preempted for, or parked. Whether it wrote
    /// anything, and whether it admitted anything.
    async fn try_heads(
        &mut self,
        world: &mut World,
        snap: &mut Snapshot,
        entries: Vec<(bool, Entry, String, Arc<Workload>, PendingWorkload)>,
    ) -> Result<(bool, bool), Error> {
        let mut progressed = false;
        let mut preempted: BTreeSet<String> = BTreeSet::new();
        let mut admitted = false;
        for (_, entry, cq, wl, pending) in entries {
            let assignment = crate::scheduler::assign_flavors(snap, &cq, &pending);
            tracing::debug!(
                workload = %entry.key,
                cluster_queue = %cq,
                mode = ?assignment.mode,
                borrows = assignment.borrows,
                "attempting to schedule"
            );
            self.options.metrics.attempt(assignment.mode == Mode::Fit);
            match assignment.mode {
                Mode::Fit => {
                    // A reservation refused for good leaves the workload parked, as Kueue
                    // requeues only the workload whose admission failed.
                    let reserved = self.reserve(world, &cq, &wl, &assignment).await;
                    if let Some(reserved) =
                        kept_to_its_object(reserved, "Workload", &entry.key)?.flatten()
                    {
                        snap.add_workload(&cq, reserved);
                        self.scheduler.queues.admitted(&entry.key);
                        progressed = true;
                        admitted = true;
                    } else {
                        self.scheduler.queues.park(&cq, entry, Parked::Other);
                    }
                }
                Mode::Preempt => {
                    let targets = find_targets(snap, &cq, &pending, &assignment);
                    let overlapping = targets.iter().any(|t| preempted.contains(&t.key));
                    tracing::debug!(
                        workload = %entry.key,
                        targets = ?targets.iter().map(|t| t.key.as_str()).collect::<Vec<_>>(),
                        overlapping,
                        "preemption targets"
                    );
                    let why = if targets.is_empty() {
                        Parked::NoFit
                    } else {
                        Parked::Other
                    };
                    let message = if targets.is_empty() || overlapping {
                        assignment.message()
                    } else {
                        let (mut issued, mut failed) = (0, 0);
                        for t in &targets {
                            preempted.insert(t.key.clone());
                            match self.preempt(world, snap, &wl, &cq, t).await {
                                Ok(()) => issued += 1,
                                Err(e) => {
                                    tracing::warn!(victim = %t.key, error = %e, "preemption failed");
                                    failed += 1;
                                }
                            }
                        }
                        if issued > 0 {
                            // As in Kueue, the victims hold their quota until it is
                            // released and the preemptor's share is set aside on top, so
                            // nothing else in the cohort takes the room in this cycle.
                            snap.set_aside(&cq, &assignment.usage);
                            progressed = true;
                            format!(
                                "{}. Pending the preemption of {issued} workload(s)",
                                assignment.message(),
                            )
                        } else {
                            // Tried again at the next cycle, as Kueue requeues an entry
                            // whose preemptions all failed (PreemptionFailed).
                            self.scheduler.requeue.insert(cq.clone());
                            format!(
                                "{}. Preempting {failed} workload(s) failed, will retry.",
                                assignment.message(),
                            )
                        }
                    };
                    let written = self
                        .still_pending(world, &wl, reason::WAITING_FOR_QUOTA, &message)
                        .await;
                    progressed |=
                        kept_to_its_object(written, "Workload", &entry.key)?.unwrap_or(false);
                    self.scheduler.queues.park(&cq, entry, why);
                }
                Mode::NoFit => {
                    let why = no_fit_reason(&assignment);
                    let written = self
                        .still_pending(world, &wl, why, &assignment.message())
                        .await;
                    progressed |=
                        kept_to_its_object(written, "Workload", &entry.key)?.unwrap_or(false);
                    self.scheduler.queues.park(&cq, entry, Parked::NoFit);
                }
            }
        }
        Ok((progressed, admitted))
    }

    /// What the scheduler needs to know of a workload: its requests after transformations.
    pub(super) fn pending_workload(&self, wl: &Workload) -> PendingWorkload {
        let podsets = wl
            .spec
            .pod_sets
            .iter()
            .map(|ps| {
                let spec = pod_spec(ps);
                let per_pod =
                    resources::podset_requests(spec, ps.count, &self.scheduler.transformer)
                        .map(|r| r.per_pod)
                        .unwrap_or_default();
                let affinity = spec
                    .affinity
                    .as_ref()
                    .and_then(|a| a.node_affinity.as_ref())
                    .and_then(|a| {
                        a.required_during_scheduling_ignored_during_execution
                            .clone()
                    });
                PodSetRequest {
                    name: ps.name.clone(),
                    count: ps.count,
                    per_pod,
                    node_selector: spec.node_selector.clone().unwrap_or_default(),
                    required_affinity: affinity,
                    tolerations: spec.tolerations.clone().unwrap_or_default(),
                }
            })
            .collect();
        PendingWorkload {
            key: workload::key(wl),
            uid: wl.uid().unwrap_or_default(),
            priority: workload::priority(wl),
            queue_order_time: workload::queue_order_time(wl),
            podsets,
        }
    }

    /// Writes the quota reservation. Returns the workload as the snapshot should count it.
    async fn reserve(
        &mut self,
        world: &mut World,
        cq: &str,
        wl: &Workload,
        assignment: &Assignment,
    ) -> Result<Option<ReservedWorkload>, Error> {
        let now = self.options.clock.now_time();
        let generation = wl.metadata.generation;
        let mut next = wl.clone();
        let status = next.status.get_or_insert_with(WorkloadStatus::default);
        status.admission = Some(Admission {
            cluster_queue: cq.to_owned(),
            pod_set_assignments: assignment.to_api(),
        });
        // The admission's resourceUsage supersedes the pending requests, as in Kueue.
        status.resource_requests.clear();
        let message = format!("Quota reserved in ClusterQueue {cq}");
        lifecycle::set(
            status,
            generation,
            cond::QUOTA_RESERVED,
            true,
            reason::QUOTA_RESERVED,
            &message,
            &now,
        );
        for type_ in [cond::EVICTED, cond::PREEMPTED] {
            if let Some(prev) =
                conditions::find(&status.conditions, type_).filter(|c| c.status == "True")
            {
                let previously = format!("Previously: {}", prev.message);
                lifecycle::set(
                    status,
                    generation,
                    type_,
                    false,
                    reason::QUOTA_RESERVED,
                    &previously,
                    &now,
                );
            }
        }
        let has_all_checks = world.cluster_queues.get(cq).is_none_or(|c| {
            let required = checks::required_for(&next, &c.spec);
            let present: BTreeSet<String> = next
                .status
                .iter()
                .flat_map(|s| s.admission_checks.iter().map(|a| a.name.clone()))
                .collect();
            required.is_subset(&present)
        });
        let status = next.status.get_or_insert_with(WorkloadStatus::default);
        if has_all_checks {
            let ready = status
                .admission_checks
                .iter()
                .all(|c| c.state == api::kueue::CheckState::Ready);
            lifecycle::sync_admitted(status, generation, &now, ready, self.observability());
        }
        let Written::Ok(new) = self.writer.replace_status(&next).await? else {
            return Ok(None);
        };
        let waited = queued_wait(wl, self.options.clock.now());
        self.options
            .metrics
            .quota_reserved(cq, waited.as_secs_f64());
        self.writer
            .event(
                &new,
                false,
                reason::QUOTA_RESERVED_EVENT,
                &format!(
                    "Quota reserved in ClusterQueue {cq}, wait time since queued was {:.0}s",
                    waited.as_secs_f64()
                ),
            )
            .await;
        if workload::is_admitted(&new) {
            self.options.metrics.admitted(cq, waited.as_secs_f64(), 0.0);
            self.writer
                .event(
                    &new,
                    false,
                    reason::ADMITTED_EVENT,
                    &format!("Admitted by ClusterQueue {cq}, wait time since reservation was 0s"),
                )
                .await;
        }
        let reserved = reserved_workload(&new);
        self.written_workload(world, new);
        Ok(Some(reserved))
    }

    /// Evicts a preemption victim. A refused write is the caller's to report; a victim changed
    /// or gone meanwhile (409, 404) counts as preempted, and the next cycle decides again.
    async fn preempt(
        &mut self,
        world: &mut World,
        snapshot: &Snapshot,
        preemptor: &Workload,
        preemptor_cq: &str,
        target: &Target,
    ) -> Result<(), kube::Error> {
        let Some(victim) = world.workloads.get_shared(&target.key) else {
            return Ok(());
        };
        // A victim already on its way out (an earlier preemption whose quota is not yet
        // released) is counted as preempted, as Kueue does: no second write, no second event.
        if workload::is_evicted(&victim) {
            return Ok(());
        }
        let now = self.options.clock.now_time();
        let message = preemption_message(
            &preemptor.uid().unwrap_or_default(),
            preemptor
                .labels()
                .get("kueue.x-k8s.io/job-uid")
                .map(String::as_str),
            target.reason,
            &snapshot.cq_path(preemptor_cq),
            &snapshot.cq_path(&target.cluster_queue),
        );
        let mut next = Workload::clone(&victim);
        let generation = victim.metadata.generation;
        let status = next.status.get_or_insert_with(WorkloadStatus::default);
        lifecycle::set(
            status,
            generation,
            cond::PREEMPTED,
            true,
            target.reason.as_str(),
            &message,
            &now,
        );
        lifecycle::evict(status, generation, &now, reason::PREEMPTED, &message);
        if let Written::Ok(new) = self.writer.replace_status(&next).await? {
            self.options
                .metrics
                .preempted(&target.cluster_queue, target.reason.as_str());
            self.writer
                .event(
                    &new,
                    false,
                    &format!("EvictedDueTo{}", reason::PREEMPTED),
                    &message,
                )
                .await;
            // Both sides' priorities, as Kueue appends them (kueue#9120): on the victim's
            // `Preempted` event, and on a `PreemptedWorkload` event for the preemptor.
            let boost_gate = crate::config::gate(&self.options.config, "PriorityBoost");
            let priorities = format!(
                "preemptor effective priority: {}; preemptee effective priority: {}",
                workload::EffectivePriority::of(preemptor, boost_gate),
                workload::EffectivePriority::of(&victim, boost_gate),
            );
            // On the victim as the scheduler saw it, before the eviction was written.
            self.writer
                .event(
                    victim.as_ref(),
                    false,
                    reason::PREEMPTED,
                    &format!("{message}; {priorities}"),
                )
                .await;
            self.writer
                .event(
                    preemptor,
                    false,
                    "PreemptedWorkload",
                    &format!(
                        "Preempted workload {} (UID: {}) in ClusterQueue {}; {priorities}",
                        workload::key(&victim),
                        victim.uid().unwrap_or_default(),
                        target.cluster_queue,
                    ),
                )
                .await;
            self.written_workload(world, new);
        }
        Ok(())
    }

    /// Tells a workload why it is still pending (if that changed), with its transformed requests.
    async fn still_pending(
        &mut self,
        world: &mut World,
        wl: &Workload,
        why: &str,
        message: &str,
    ) -> Result<bool, Error> {
        let now = self.options.clock.now_time();
        let generation = wl.metadata.generation;
        let observability = self.observability();
        let requests = self.resource_requests(wl);
        // Most cycles leave a pending workload as it was: decide on its status alone, and copy
        // the whole workload only for a write.
        let mut status = wl.status.clone().unwrap_or_default();
        let why = if observability { why } else { reason::PENDING };
        let mut changed = lifecycle::unset_quota_reservation(
            &mut status,
            generation,
            &now,
            why,
            message,
            observability,
        );
        if status.resource_requests != requests {
            status.resource_requests = requests;
            changed = true;
        }
        if !changed {
            return Ok(false);
        }
        let next = Workload {
            metadata: wl.metadata.clone(),
            spec: wl.spec.clone(),
            status: Some(status),
        };
        let Written::Ok(new) = self.writer.replace_status(&next).await? else {
            return Ok(false);
        };
        self.writer.event(&new, true, why, message).await;
        self.written_workload(world, new);
        Ok(true)
    }

    /// `status.resourceRequests`: each podset's total after transformations.
    fn resource_requests(&self, wl: &Workload) -> Vec<api::kueue::PodSetRequest> {
        wl.spec
            .pod_sets
            .iter()
            .map(|ps| {
                let spec = pod_spec(ps);
                let resources =
                    resources::podset_requests(spec, ps.count, &self.scheduler.transformer)
                        .map(|r| r.to_quantities())
                        .unwrap_or_default();
                api::kueue::PodSetRequest {
                    name: ps.name.clone(),
                    resources,
                }
            })
            .collect()
    }
}

/// A pod set's pod spec; a template without one requests nothing.
fn pod_spec(ps: &api::kueue::PodSet) -> &PodSpec {
    static NONE: std::sync::LazyLock<PodSpec> = std::sync::LazyLock::new(PodSpec::default);
    ps.template.spec.as_ref().unwrap_or(&NONE)
}

/// What each cycle's snapshot of quota is built from, kept between cycles: the ClusterQueues and
/// flavors (rebuilt when one of them changes) and each reserving workload's entry (recomputed when
/// the workload changes). With many queues, a cycle runs after almost every change.
#[derive(Default)]
pub(super) struct SnapshotCache {
    queues: Option<Snapshot>,
    /// By workload key: the resourceVersion the entry was computed from, and the entry.
    reserved: HashMap<Key, (Option<String>, ReservedWorkload)>,
}

impl SnapshotCache {
    /// A ClusterQueue or flavor changed.
    pub(super) fn forget_queues(&mut self) {
        self.queues = None;
    }

    /// The snapshot of quota: every ClusterQueue and the workloads holding quota in it
    /// (`reserving`, the reconciler's index, so a cycle does not scan every workload).
    fn build(&mut self, world: &World, reserving: &BTreeMap<String, BTreeSet<Key>>) -> Snapshot {
        let mut snapshot = self
            .queues
            .get_or_insert_with(|| queues_snapshot(world))
            .clone();
        let mut fresh = HashMap::with_capacity(self.reserved.len());
        for (cq, keys) in reserving {
            for (key, wl) in keys
                .iter()
                .filter_map(|k| world.workloads.get(k).map(|wl| (k, wl)))
            {
                let rv = wl.metadata.resource_version.clone();
                let reserved = match self.reserved.remove(key) {
                    Some((seen, reserved)) if seen == rv => reserved,
                    _ => reserved_workload(wl),
                };
                snapshot.add_workload(cq, reserved.clone());
                fresh.insert(key.clone(), (rv, reserved));
            }
        }
        self.reserved = fresh;
        snapshot
    }
}

/// Every ClusterQueue and flavor, without workloads.
fn queues_snapshot(world: &World) -> Snapshot {
    let mut snapshot = Snapshot {
        flavors: world
            .flavors
            .iter()
            .map(|(k, f)| (k.clone(), f.spec.clone()))
            .collect(),
        ..Default::default()
    };
    for (name, cq) in world.cluster_queues.iter() {
        match ClusterQueueSnapshot::new(name.clone(), cq.spec.clone(), |r, q| {
            resources::Amount::from_quantity(q).map(|a| resources::to_units(r, &a))
        }) {
            Ok(s) => snapshot.insert_cluster_queue(s),
            Err(e) => tracing::warn!(cluster_queue = %name, error = %e, "skipping ClusterQueue"),
        }
    }
    snapshot
}

fn reserved_workload(wl: &Workload) -> ReservedWorkload {
    let status = wl.status.as_ref();
    let reserved_at = status
        .and_then(|s| conditions::find(&s.conditions, cond::QUOTA_RESERVED))
        .map(|c| c.last_transition_time.0.as_second())
        .unwrap_or(0);
    ReservedWorkload {
        key: workload::key(wl),
        uid: wl.uid().unwrap_or_default(),
        priority: workload::priority(wl),
        reserved_at,
        queue_order_time: workload::queue_order_time(wl),
        evicted: workload::is_evicted(wl),
        usage: crate::status::admission_usage(wl),
    }
}

/// The QuotaReserved=False reason of a workload that fits nowhere: no flavor matches at all,
/// more than the queue could ever give, or not enough unused quota now.
fn no_fit_reason(assignment: &Assignment) -> &'static str {
    let reasons: Vec<&String> = assignment.podsets.iter().flat_map(|p| &p.reasons).collect();
    if reasons
        .iter()
        .any(|r| r.starts_with("insufficient unused quota"))
    {
        reason::WAITING_FOR_QUOTA
    } else if reasons.iter().any(|r| r.starts_with("insufficient quota")) {
        reason::EXCEEDS_MAX_QUOTA
    } else if reasons.is_empty() {
        reason::WAITING_FOR_QUOTA
    } else {
        reason::NO_MATCHING_FLAVOR
    }
}
