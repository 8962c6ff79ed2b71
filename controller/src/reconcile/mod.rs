//! The reconcilers: thin glue between the [`World`], the pure decisions and the [`Writer`].
//!
//! Change handlers only mark what needs another look; [`Reconciler::reconcile`] then runs the
//! passes (jobs, workloads, scheduler, each admission check's, queue status) until nothing is
//! left to do.

mod jobs;
mod queues;
mod schedule;
mod workloads;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use api::kueue::{AdmissionCheck, ClusterQueue, LocalQueue, ResourceFlavor, Workload};
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};

use crate::admissionchecks::{AdmissionCheckController, CoreWrite, Ctx};
use crate::clock::Clock;
use crate::error::Error;
use crate::options::Options;
use crate::scheduler::queue::{Entry, equivalence_hash};
use crate::state::{Key, World, key_of};
use crate::watch::{AnyEvent, Watch, take, watch};
use crate::workload;
use crate::writer::Writer;
use support::mirror::Mirror;

/// Passes per reconcile before yielding to the watch streams again.
const MAX_ROUNDS: usize = 64;

/// How long queue status waits after a workload changes, so that a burst of changes makes one
/// write: Kueue's `UpdatesBatchPeriod`. Changes to the queues themselves are written at once.
const STATUS_BATCH_PERIOD: jiff::SignedDuration = jiff::SignedDuration::from_secs(1);

/// The core controllers' loop state: each pass's own, plus what they share (the writer, the
/// options, workload timers). The admission checks keep theirs in their own modules.
pub struct Reconciler {
    writer: Writer,
    options: Options,
    /// Workloads to look at again at a time (backoffs, retries), by every pass.
    wake: BTreeMap<Key, Timestamp>,
    jobs: jobs::JobsPass,
    workloads: workloads::WorkloadsPass,
    scheduler: schedule::SchedulerPass,
    status: queues::StatusPass,
    /// What the admission checks have not heard of yet: workload and AdmissionCheck changes,
    /// and workload timers that came due.
    for_checks: Vec<ForChecks>,
}

/// Keeps a refusal that no retry cures to the object it concerns, as Kueue requeues only that
/// object: logged, and `None`; the object is looked at again on its next change. Failing the
/// pass would fail it again and again and hold back every other object. Any other error is
/// the pass's, which is tried again over everything after a pause.
fn kept_to_its_object<T>(
    result: Result<T, impl Into<Error>>,
    kind: &str,
    key: &str,
) -> Result<Option<T>, Error> {
    match result.map_err(Into::into) {
        Ok(value) => Ok(Some(value)),
        Err(Error::Api(kube::Error::Api(status))) if refused_for_good(status.code) => {
            tracing::warn!(kind, object = %key, code = status.code, reason = %status.message, "a write was refused; the object waits for its next change");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Whether an API refusal is one that trying the same write again cannot cure: a client error
/// other than a conflict (409: a newer version brings the object back), a timeout (408) or
/// throttling (429).
fn refused_for_good(code: u16) -> bool {
    (400..500).contains(&code) && ![408, 409, 429].contains(&code)
}

impl Reconciler {
    pub fn new(writer: Writer, options: Options) -> Self {
        let scheduler = schedule::SchedulerPass::new(&options);
        Reconciler {
            writer,
            options,
            wake: BTreeMap::new(),
            jobs: Default::default(),
            workloads: Default::default(),
            scheduler,
            status: Default::default(),
            for_checks: Vec::new(),
        }
    }

    pub fn clock(&self) -> &Clock {
        &self.options.clock
    }

    /// When the loop must wake even if nothing changes.
    pub fn next_wake(&self) -> Option<Timestamp> {
        let status = self
            .status
            .cq_due
            .values()
            .chain(self.status.lq_due.values());
        self.wake
            .values()
            .chain(status)
            .chain(self.scheduler.not_before.as_ref())
            .min()
            .copied()
    }

    /// Marks the workloads whose time has come.
    pub fn timers_due(&mut self) {
        let now = self.options.clock.now();
        let due: Vec<Key> = self
            .wake
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.wake.remove(&key);
            self.workloads.dirty.insert(key.clone());
            self.for_checks.push(ForChecks::Due(key));
        }
        let due = |map: &mut BTreeMap<String, Timestamp>| {
            let (due, later) = std::mem::take(map)
                .into_iter()
                .partition(|(_, t)| *t <= now);
            *map = later;
            due.into_keys().collect::<Vec<String>>()
        };
        self.status
            .dirty_cluster_queues
            .extend(due(&mut self.status.cq_due));
        self.status
            .dirty_local_queues
            .extend(due(&mut self.status.lq_due));
    }

    /// Queue status after a workload change: written once the batch period has passed.
    fn queue_status_soon(&mut self, cq: Option<String>, lq: Option<Key>) {
        let at = self
            .options
            .clock
            .now()
            .saturating_add(STATUS_BATCH_PERIOD)
            .unwrap_or_else(|_| self.options.clock.now());
        if let Some(cq) = cq {
            self.status.cq_due.entry(cq).or_insert(at);
        }
        if let Some(lq) = lq {
            self.status.lq_due.entry(lq).or_insert(at);
        }
    }

    /// Runs the passes until nothing changes (or [`MAX_ROUNDS`]).
    pub async fn reconcile(&mut self, world: &mut World, checks: &mut Checks) -> Result<(), Error> {
        for _ in 0..MAX_ROUNDS {
            let mut progressed = false;
            progressed |= self.jobs_pass(world).await?;
            progressed |= self.workloads_pass(world).await?;
            progressed |= self.schedule(world).await?;
            for i in 0..checks.len() {
                self.tell_checks(world, checks);
                let mut ctx = Ctx::new(world, &self.writer, &self.options, &mut self.wake);
                progressed |= checks[i].run(&mut ctx).await?;
                for written in ctx.into_written() {
                    match written {
                        CoreWrite::Workload((old, new)) => {
                            self.workload_changed(world, old.as_ref(), new.as_ref())
                        }
                        CoreWrite::AdmissionCheck((old, new)) => {
                            self.check_changed(world, old.as_ref(), new.as_ref())
                        }
                    }
                }
            }
            progressed |= self.status_pass(world).await?;
            if !progressed {
                break;
            }
        }
        self.tell_checks(world, checks);
        Ok(())
    }

    /// Hands the admission checks what changed since they last heard.
    pub fn tell_checks(&mut self, world: &World, checks: &mut Checks) {
        for note in std::mem::take(&mut self.for_checks) {
            for check in checks.iter_mut() {
                match &note {
                    ForChecks::Workload(old, new) => {
                        check.workload_changed(world, old.as_deref(), new.as_deref())
                    }
                    ForChecks::Check(old, new) => {
                        check.admission_check_changed(world, old.as_deref(), new.as_deref())
                    }
                    ForChecks::Due(key) => check.workload_due(key),
                }
            }
        }
    }

    /// Applies a core watch's event to the world and marks what it touches.
    pub fn apply(&mut self, world: &mut World, event: AnyEvent) {
        let unrouted = Some(event)
            .and_then(|e| self.route(world, e, |w| &mut w.flavors, Self::flavor_changed))
            .and_then(|e| {
                self.route(
                    world,
                    e,
                    |w| &mut w.cluster_queues,
                    Self::cluster_queue_changed,
                )
            })
            .and_then(|e| self.route(world, e, |w| &mut w.local_queues, Self::local_queue_changed))
            .and_then(|e| self.route(world, e, |w| &mut w.admission_checks, Self::check_changed))
            .and_then(|e| self.route(world, e, |w| &mut w.workloads, Self::workload_changed))
            .and_then(|e| self.route(world, e, |w| &mut w.jobs, Self::job_changed));
        if unrouted.is_some() {
            tracing::error!("the core got an event of a kind it does not watch");
        }
    }

    /// Applies `event` to one kind's objects if it is of that kind, and runs its handler on each
    /// change; hands the event back otherwise.
    fn route<K: Resource + Clone + Send + 'static>(
        &mut self,
        world: &mut World,
        event: AnyEvent,
        objects: fn(&mut World) -> &mut Mirror<K>,
        changed: Handler<K>,
    ) -> Option<AnyEvent> {
        match take(objects(world), event) {
            Ok(changes) => {
                for (old, new) in changes {
                    changed(self, world, old.as_ref(), new.as_ref());
                }
                None
            }
            Err(event) => Some(event),
        }
    }

    fn observability(&self) -> bool {
        crate::config::gate(&self.options.config, "UnadmittedWorkloadsObservability")
    }

    /// ClusterQueues sharing quota with `cq` (its cohort), including itself.
    fn cohort_of(&self, world: &World, cq: &str) -> Vec<String> {
        let cohort = world
            .cluster_queues
            .get(cq)
            .and_then(|c| c.spec.cohort_name.clone());
        match cohort {
            None => vec![cq.to_owned()],
            Some(cohort) => world
                .cluster_queues
                .values()
                .filter(|c| c.spec.cohort_name.as_deref() == Some(cohort.as_str()))
                .map(|c| c.name_any())
                .collect(),
        }
    }

    /// After a pass that failed part-way: whatever it had taken up may be half done, so the
    /// next pass looks at everything again, as a resync would. Passes work from the state they
    /// find, so what already happened is not done twice.
    pub fn resync(&mut self, world: &World) {
        self.jobs.dirty.extend(world.jobs.keys().cloned());
        self.workloads.dirty.extend(world.workloads.keys().cloned());
        self.for_checks
            .extend(world.workloads.keys().cloned().map(ForChecks::Due));
        self.flavor_changed(world, None, None);
    }

    fn flavor_changed(
        &mut self,
        world: &World,
        _old: Option<&Arc<ResourceFlavor>>,
        _new: Option<&Arc<ResourceFlavor>>,
    ) {
        // Flavors affect every queue: whether it is active, and its taints and labels.
        self.scheduler.requeue.insert(String::new());
        self.scheduler.snapshots.forget_queues();
        self.status
            .dirty_cluster_queues
            .extend(world.cluster_queues.keys().cloned());
        self.dirty_local_queues_of(world, None);
    }

    fn cluster_queue_changed(
        &mut self,
        world: &World,
        old: Option<&Arc<ClusterQueue>>,
        new: Option<&Arc<ClusterQueue>>,
    ) {
        let old = old.map(Arc::as_ref);
        let new = new.map(Arc::as_ref);
        let Some(cq) = new.or(old) else { return };
        let name = cq.name_any();
        self.status.dirty_cluster_queues.insert(name.clone());
        if let Some(new) = new {
            self.scheduler
                .queues
                .set_strategy(&name, new.spec.queueing_strategy);
        }
        let spec_changed = old.map(|o| &o.spec) != new.map(|n| &n.spec)
            || old.map(|o| o.metadata.deletion_timestamp.is_some())
                != new.map(|n| n.metadata.deletion_timestamp.is_some());
        if spec_changed {
            self.scheduler.snapshots.forget_queues();
            self.scheduler.requeue.insert(name.clone());
            self.scheduler.requeue.extend(self.cohort_of(world, &name));
            // Queue membership, checks and blockers of every workload of this queue may change.
            self.dirty_local_queues_of(world, Some(&name));
            if let Some(keys) = self.scheduler.reserving.get(&name) {
                self.workloads.dirty.extend(keys.iter().cloned());
            }
        }
    }

    fn local_queue_changed(
        &mut self,
        world: &World,
        old: Option<&Arc<LocalQueue>>,
        new: Option<&Arc<LocalQueue>>,
    ) {
        let old = old.map(Arc::as_ref);
        let new = new.map(Arc::as_ref);
        let Some(lq) = new.or(old) else { return };
        let key = key_of(lq);
        self.status.dirty_local_queues.insert(key.clone());
        if old.map(|o| &o.spec) != new.map(|n| &n.spec) {
            self.dirty_workloads_of(world, &BTreeSet::from([key]));
        }
    }

    /// Marks the LocalQueues of a ClusterQueue (or all, with `None`) and their workloads.
    fn dirty_local_queues_of(&mut self, world: &World, cq: Option<&str>) {
        let lqs: BTreeSet<Key> = world
            .local_queues
            .iter()
            .filter(|(_, lq)| cq.is_none_or(|cq| lq.spec.cluster_queue == cq))
            .map(|(k, _)| k.clone())
            .collect();
        self.status.dirty_local_queues.extend(lqs.iter().cloned());
        self.dirty_workloads_of(world, &lqs);
    }

    /// Marks the workloads submitted to these LocalQueues, in one pass over the workloads.
    fn dirty_workloads_of(&mut self, world: &World, lqs: &BTreeSet<Key>) {
        if lqs.is_empty() {
            return;
        }
        for (key, wl) in world.workloads.iter() {
            let (Some(ns), Some(q)) = (wl.namespace(), wl.spec.queue_name.as_deref()) else {
                continue;
            };
            if lqs.contains(&format!("{ns}/{q}")) {
                self.workloads.dirty.insert(key.clone());
            }
        }
    }

    fn check_changed(
        &mut self,
        world: &World,
        old: Option<&Arc<AdmissionCheck>>,
        new: Option<&Arc<AdmissionCheck>>,
    ) {
        let (old_arc, new_arc) = (old.cloned(), new.cloned());
        let old = old.map(Arc::as_ref);
        let new = new.map(Arc::as_ref);
        let Some(ac) = new.or(old) else { return };
        let name = ac.name_any();
        self.for_checks.push(ForChecks::Check(old_arc, new_arc));
        let users: Vec<String> = world
            .cluster_queues
            .values()
            .filter(|cq| workload::checks::cluster_queue_checks(&cq.spec).contains_key(&name))
            .map(|cq| cq.name_any())
            .collect();
        for cq in users {
            self.status.dirty_cluster_queues.insert(cq.clone());
            self.scheduler.requeue.insert(cq.clone());
            // Whether the queue is active may have changed, and with it where its workloads wait.
            self.dirty_local_queues_of(world, Some(&cq));
        }
    }

    fn workload_changed(
        &mut self,
        world: &World,
        old: Option<&Arc<Workload>>,
        new: Option<&Arc<Workload>>,
    ) {
        let (old_arc, new_arc) = (old.cloned(), new.cloned());
        let old = old.map(Arc::as_ref);
        let new = new.map(Arc::as_ref);
        let Some(any) = new.or(old) else { return };
        let key = key_of(any);
        self.workloads.dirty.insert(key.clone());
        self.for_checks.push(ForChecks::Workload(old_arc, new_arc));
        // Which job owns it.
        for wl in [old, new].into_iter().flatten() {
            if let Some(owner) = job_owner(wl) {
                if new.is_some() {
                    self.jobs.workload_of.insert(owner.uid.clone(), key.clone());
                } else {
                    self.jobs.workload_of.remove(&owner.uid);
                }
                if let Some(ns) = wl.namespace() {
                    self.jobs.dirty.insert(format!("{ns}/{}", owner.name));
                }
            }
        }
        // Status of the queues it was and is counted in.
        for wl in [old, new].into_iter().flatten() {
            let lq = (wl.namespace().zip(wl.spec.queue_name.as_deref()))
                .map(|(ns, q)| format!("{ns}/{q}"));
            self.queue_status_soon(world.cluster_queue_name_of(wl), lq);
        }
        // Quota held.
        let holds =
            |wl: &Workload| workload::has_quota_reservation(wl) && !workload::is_finished(wl);
        for set in self.scheduler.reserving.values_mut() {
            set.remove(&key);
        }
        if let Some(wl) = new.filter(|wl| holds(wl))
            && let Some(cq) = world.cluster_queue_name_of(wl)
        {
            self.scheduler
                .reserving
                .entry(cq)
                .or_default()
                .insert(key.clone());
        }
        if let Some(wl) = old.filter(|wl| holds(wl))
            && !new.is_some_and(holds)
            && let Some(cq) = world.cluster_queue_name_of(wl)
        {
            self.scheduler.requeue.extend(self.cohort_of(world, &cq));
        }
        self.place(world, &key, new);
    }

    /// Puts a workload in its queue, or takes it out.
    fn place(&mut self, world: &World, key: &str, wl: Option<&Workload>) {
        if let Some(lq) = self.scheduler.lq_of.remove(key)
            && let Some(set) = self.scheduler.lq_pending.get_mut(&lq)
        {
            set.remove(key);
        }
        let now = self.options.clock.now();
        let place = wl.and_then(|wl| {
            if !workload::is_queueable(wl, now) {
                return None;
            }
            let lq = world.local_queue_of(wl)?;
            if lq.spec.stop_policy.unwrap_or_default() != api::kueue::StopPolicy::None {
                return None;
            }
            let cq = world.cluster_queues.get(&lq.spec.cluster_queue)?;
            if !crate::status::cluster_queue_active(cq, world).0 {
                return None;
            }
            Some((
                key_of(lq),
                (
                    lq.spec.cluster_queue.clone(),
                    Entry {
                        priority: std::cmp::Reverse(workload::priority(wl)),
                        timestamp: workload::queue_order_time(wl),
                        key: key.to_owned(),
                        shape: self
                            .scheduler
                            .equivalence_hashing
                            .then(|| equivalence_hash(&self.pending_workload(wl))),
                    },
                ),
            ))
        });
        match place {
            Some((lq, place)) => {
                self.scheduler
                    .lq_pending
                    .entry(lq.clone())
                    .or_default()
                    .insert(key.to_owned());
                self.scheduler.lq_of.insert(key.to_owned(), lq);
                self.scheduler.queues.update(key, Some(place));
            }
            None => self.scheduler.queues.update(key, None),
        }
    }

    fn job_changed(&mut self, _world: &World, old: Option<&Arc<Job>>, new: Option<&Arc<Job>>) {
        if let Some(job) = new.or(old) {
            self.jobs.dirty.insert(key_of(job.as_ref()));
        }
    }

    /// Applies a written workload to the world as if watched.
    fn written_workload(&mut self, world: &mut World, wl: Workload) {
        let old = world.workloads.get_shared(&key_of(&wl));
        let wl = Arc::new(wl);
        if world.workloads.apply_shared(wl.clone()) {
            self.workload_changed(world, old.as_ref(), Some(&wl));
        }
    }

    fn written_job(&mut self, world: &mut World, job: Job) {
        let old = world.jobs.get_shared(&key_of(&job));
        let job = Arc::new(job);
        if world.jobs.apply_shared(job.clone()) {
            self.job_changed(world, old.as_ref(), Some(&job));
        }
    }
}

/// The admission check controllers, in the order their passes run.
pub type Checks = Vec<Box<dyn AdmissionCheckController>>;

/// What the core does when an object of a kind it watches changes (old and new version).
type Handler<K> = fn(&mut Reconciler, &World, Option<&Arc<K>>, Option<&Arc<K>>);

/// A change the admission checks are told of at their next pass.
enum ForChecks {
    Workload(Option<Arc<Workload>>, Option<Arc<Workload>>),
    Check(Option<Arc<AdmissionCheck>>, Option<Arc<AdmissionCheck>>),
    Due(Key),
}

/// The core's watches: the kinds the scheduler, the workload and job controllers and queue
/// status read. Admission checks add their own.
pub fn watches(client: &Client) -> Vec<Watch> {
    let all = watcher::Config::default;
    vec![
        watch::<ResourceFlavor>(client, all()),
        watch::<ClusterQueue>(client, all()),
        watch::<LocalQueue>(client, all()),
        watch::<AdmissionCheck>(client, all()),
        watch::<Workload>(client, all()),
        watch::<Job>(client, all()),
    ]
}

/// The Job that controls a workload.
fn job_owner(
    wl: &Workload,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    wl.meta()
        .owner_references
        .as_ref()?
        .iter()
        .find(|o| o.kind == "Job" && o.api_version == "batch/v1" && o.controller == Some(true))
}
