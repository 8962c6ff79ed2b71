//! The manager's workloads: carries out what [`super::plan`] decides (remote copies, the winner,
//! the job on the winner, check states), and remembers between passes what the API server does
//! not say (Incremental rounds, deleted workloads still to clean up, excluded workers).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use api::constants::{finalizer, workload_condition as cond};
use api::kueue::{AdmissionCheckState, CheckState, Workload, WorkloadStatus};
use futures::future::BoxFuture;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};

use super::adapter::{self, JobAdapter, Managed, SyncRequest, Synced};
use super::clusters::Setup;
use super::dispatch::Dispatcher;
use super::workers::{RemoteChange, Worker, Workers};
use crate::admissionchecks::Ctx;
use crate::error::Error;
use crate::state::{Key, World, key_of};
use crate::workload::{self, conditions, lifecycle};
use crate::writer::{FIELD_MANAGER, Written};

use super::plan::*;

/// How long a workload waits after an API error before it is looked at again.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(10);
/// How soon a deferred job status copy is tried again (the local job is about to start).
const SYNC_DEFERRED_AFTER: Duration = Duration::from_secs(2);
/// How long one request to a worker may take. The pass runs on the manager's one loop: a
/// worker that hangs must not hold up every other workload.
pub(super) const REMOTE_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// The manager's MultiKueue workloads: what changed since the last pass, and what this
/// controller remembers of them between passes.
#[derive(Default)]
pub struct WorkloadsPass {
    /// Workloads to look at again.
    dirty: BTreeSet<Key>,
    /// Look at every workload (a worker connected or was lost).
    all: bool,
    /// Workloads deleted from the API server whose remote objects may still exist.
    gone: BTreeMap<Key, Arc<Workload>>,
    /// Incremental: when each workload's current round started.
    rounds: BTreeMap<Key, Timestamp>,
    /// Workers a workload may not use: a same-named job there is not ours.
    excluded: BTreeMap<Key, BTreeSet<String>>,
    /// Copies asked to evict (by uid, per worker) whose worker's watch does not show it yet: a
    /// lagging watch must not let such a copy win the next admission.
    asked: BTreeMap<Key, BTreeMap<String, String>>,
    /// Workers found unreachable that the cluster controller gave no loss time (never
    /// connected, or removed): from when this controller first noticed.
    unavailable_since: BTreeMap<String, Timestamp>,
    /// When to run again for deleted workloads whose clean-up failed.
    retry_at: Option<Timestamp>,
    /// The checks and their workers as of the last pass: when they change (a MultiKueueConfig
    /// edited, a check added), every workload is looked at again.
    setup: Setup,
}

/// Why a workload's plan stopped.
enum Failure {
    /// The manager's API server refused or failed.
    Local(Error),
    /// A worker failed or did not answer in time.
    Remote { cluster: String, error: Error },
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Local(e)
    }
}

/// What carrying out one action came to.
enum Done {
    /// Go on with the next action.
    Next,
    /// Stop here; the change it waits for brings the workload back (or the wake set).
    Stop,
}

impl WorkloadsPass {
    pub fn workload_changed(
        &mut self,
        _world: &World,
        old: Option<&Workload>,
        new: Option<&Workload>,
    ) {
        let Some(any) = new.or(old) else { return };
        let key = key_of(any);
        match (old, new) {
            (Some(old), None) => {
                self.gone.insert(key.clone(), Arc::new(old.clone()));
            }
            (_, Some(_)) => {
                self.gone.remove(&key);
            }
            (None, None) => {}
        }
        self.dirty.insert(key);
    }

    pub fn remote_changed(&mut self, change: &RemoteChange) {
        self.dirty.insert(change.workload.clone());
    }

    pub fn worker_changed(&mut self, _cluster: &str) {
        self.all = true;
    }

    pub fn workload_due(&mut self, key: &Key) {
        self.dirty.insert(key.clone());
    }

    pub fn run<'a>(
        &'a mut self,
        ctx: &'a mut Ctx<'_>,
        workers: &'a Workers,
        setup: &'a Setup,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(self.pass(ctx, workers, setup))
    }

    pub fn next_wake(&self) -> Option<Timestamp> {
        self.retry_at
    }

    async fn pass(
        &mut self,
        ctx: &mut Ctx<'_>,
        workers: &Workers,
        setup: &Setup,
    ) -> Result<bool, Error> {
        let now = ctx.options.clock.now();
        self.retry_at = self.retry_at.filter(|at| *at > now);
        let mut keys = std::mem::take(&mut self.dirty);
        if self.setup != *setup {
            self.setup = setup.clone();
            self.all = true;
        }
        if std::mem::take(&mut self.all) {
            keys.extend(ctx.world.workloads.keys().cloned());
        }
        keys.extend(self.gone.keys().cloned());
        // Workers that failed during this pass: their workloads wait for the retry instead of
        // each waiting out the same timeout.
        let mut failed: BTreeSet<String> = BTreeSet::new();
        let mut progressed = false;
        for key in keys {
            match self.sync(ctx, workers, setup, &key, &mut failed).await {
                Ok(p) => progressed |= p,
                Err(Failure::Remote { cluster, error }) => {
                    tracing::warn!(workload = %key, cluster = %cluster, error = %error, "MultiKueue worker, retrying in 10s");
                    if is_unreachable(&error) {
                        failed.insert(cluster);
                    }
                    self.retry_later(ctx, &key, now);
                }
                Err(Failure::Local(Error::Api(e))) => {
                    tracing::warn!(workload = %key, error = %e, "MultiKueue workload, retrying in 10s");
                    self.retry_later(ctx, &key, now);
                }
                Err(Failure::Local(e)) => return Err(e),
            }
        }
        Ok(progressed)
    }

    fn retry_later(&mut self, ctx: &mut Ctx<'_>, key: &Key, now: Timestamp) {
        let at = now.checked_add(RETRY_AFTER_ERROR).unwrap_or(now);
        if ctx.world.workloads.get(key).is_some() {
            ctx.wake_at(key, at);
        } else {
            self.retry_at = Some(self.retry_at.map_or(at, |r| r.min(at)));
        }
    }

    async fn sync(
        &mut self,
        ctx: &mut Ctx<'_>,
        workers: &Workers,
        setup: &Setup,
        key: &Key,
        failed: &mut BTreeSet<String>,
    ) -> Result<bool, Failure> {
        let now = ctx.options.clock.now();
        let (wl, deleted) = match ctx.world.workloads.get_shared(key) {
            Some(wl) => {
                let deleting = wl.metadata.deletion_timestamp.is_some();
                (wl, deleting)
            }
            None => match self.gone.get(key) {
                Some(old) => (old.clone(), true),
                None => return Ok(false),
            },
        };
        let Some(check) = multikueue_check(&wl, setup).cloned() else {
            self.forget(key);
            return Ok(false);
        };
        // A Rejected check is left alone, as in Kueue: the workload is on its way out of the
        // queue, and its eviction brings the check back to Pending.
        if check.state == CheckState::Rejected && !deleted {
            return Ok(false);
        }
        let reserved = workload::has_quota_reservation(&wl) && !workload::is_finished(&wl);
        if !reserved || deleted {
            self.rounds.remove(key);
            self.excluded.remove(key);
        }
        let found = adapter::adapter_of(&wl);
        let owner = match &found {
            Err(message) => Owner::Unmanaged(message.clone()),
            Ok(_) if deleted => Owner::Managed,
            Ok((adapter, owner)) => match adapter.check_managed(ctx.world, owner) {
                Managed::Yes => Owner::Managed,
                Managed::No(message) => Owner::Unmanaged(message),
                Managed::Unknown => Owner::Unknown,
            },
        };
        let owner_key = found.as_ref().ok().map(|(_, k)| k.clone());
        let clusters = setup.clusters_of(&check.name);
        let config = &ctx.options.config.multi_kueue;
        let origin = config.origin.clone();

        // Every worker that matters: the check's, and any holding our objects.
        let mut names: BTreeSet<&str> =
            clusters.into_iter().flatten().map(String::as_str).collect();
        for (name, worker) in &workers.by_name {
            if worker.workloads.get(key).is_some()
                || remote_job_of(worker, &wl, owner_key.as_ref()).is_some()
            {
                names.insert(name);
            }
        }
        if names.iter().any(|n| failed.contains(*n)) {
            self.retry_later(ctx, key, now);
            return Ok(false);
        }
        let mut remotes = BTreeMap::new();
        for name in names {
            let worker = workers.by_name.get(name);
            let active = worker.is_some_and(is_usable);
            let lost_since = if active {
                self.unavailable_since.remove(name);
                None
            } else {
                let noticed = *self.unavailable_since.entry(name.to_owned()).or_insert(now);
                Some(worker.and_then(|w| w.lost_since).unwrap_or(noticed))
            };
            let copy = worker
                .and_then(|w| w.workloads.get(key))
                .filter(|c| has_origin(&c.metadata, &origin));
            let job = worker.is_some_and(|w| remote_job_of(w, &wl, owner_key.as_ref()).is_some());
            let asked = self.asked_to_evict(key, name, copy);
            remotes.insert(
                name.to_owned(),
                Remote {
                    active,
                    lost_since,
                    copy,
                    job,
                    asked_to_evict: asked,
                },
            );
        }
        let no_exclusions = BTreeSet::new();
        let facts = Facts {
            local: &wl,
            check: &check,
            deleted,
            owner: owner.clone(),
            clusters,
            remotes,
            excluded: self.excluded.get(key).unwrap_or(&no_exclusions),
            dispatcher: Dispatcher::from_name(&config.dispatcher_name),
            round_start: self.rounds.get(key).copied(),
            now,
            worker_lost_timeout: config.worker_lost_timeout.get(),
        };
        let decided = plan(&facts);
        if !decided.actions.is_empty() {
            tracing::debug!(workload = %key, actions = ?decided.actions, "MultiKueue plan");
        }
        drop(facts);
        if owner == Owner::Unknown && !deleted {
            self.retry_later(ctx, key, now);
        }
        if let Some(at) = decided.wake_at {
            if deleted {
                self.retry_at = Some(self.retry_at.map_or(at, |r| r.min(at)));
            } else {
                ctx.wake_at(key, at);
            }
        }
        let mut progressed = false;
        // A round counts once its nomination is written.
        let mut round_written = !decided
            .actions
            .iter()
            .any(|a| matches!(a, Action::Nominate(_)));
        let run = Run {
            workers,
            key,
            wl: &wl,
            check: &check.name,
            adapter: found.as_ref().ok().map(|(a, _)| *a),
            owner: owner_key.as_ref(),
            origin: &origin,
        };
        // A copy one worker refuses (its namespace is missing, say) does not hold up the
        // others; the workload is retried for it. A job is never created after a failed job
        // removal: the plan only syncs a job once no other worker holds one.
        let mut refused = None;
        for action in decided.actions {
            let nominates = matches!(action, Action::Nominate(_));
            let per_worker = matches!(
                action,
                Action::Create { .. } | Action::Remove { .. } | Action::UpdatePriority { .. }
            );
            let done = match self.act(ctx, &run, action).await {
                Ok(done) => done,
                Err(failure @ Failure::Remote { .. }) if per_worker => {
                    refused.get_or_insert(failure);
                    continue;
                }
                Err(failure) => return Err(failure),
            };
            progressed = true;
            match done {
                Done::Next => round_written |= nominates,
                Done::Stop => break,
            }
        }
        if decided.round_started && round_written {
            self.rounds.insert(key.clone(), now);
        }
        if let Some(failure) = refused {
            return Err(failure);
        }
        if deleted && ctx.world.workloads.get(key).is_none() {
            // Whatever unreachable workers still hold, the garbage collector removes.
            self.gone.remove(key);
        }
        Ok(progressed)
    }

    /// Whether the manager asked `copy` to evict: its worker's watch shows it, or this
    /// controller wrote it and the watch has not caught up. The memory of a write goes once the
    /// watch shows it, or shows another copy (or none).
    fn asked_to_evict(&mut self, key: &Key, cluster: &str, copy: Option<&Workload>) -> bool {
        let shown = copy.is_some_and(asked_to_evict);
        let Some(asked) = self.asked.get_mut(key) else {
            return shown;
        };
        let unseen = !shown
            && asked.get(cluster).is_some_and(|uid| {
                copy.is_some_and(|c| c.metadata.uid.as_deref() == Some(uid.as_str()))
            });
        if !unseen {
            asked.remove(cluster);
            if asked.is_empty() {
                self.asked.remove(key);
            }
        }
        shown || unseen
    }

    /// Forgets a workload that is not (or no longer) MultiKueue's.
    fn forget(&mut self, key: &Key) {
        self.asked.remove(key);
        self.gone.remove(key);
        self.rounds.remove(key);
        self.excluded.remove(key);
    }

    async fn act(
        &mut self,
        ctx: &mut Ctx<'_>,
        run: &Run<'_>,
        action: Action,
    ) -> Result<Done, Failure> {
        match action {
            Action::Remove { cluster, job, copy } => {
                let client = run.client(&cluster)?;
                if job {
                    run.delete_job(&cluster, client).await?;
                }
                if copy && let Some(found) = run.copy(&cluster) {
                    remote(&cluster, remove_copy(client, found)).await?;
                }
                Ok(Done::Next)
            }
            Action::Create { cluster } => {
                let client = run.client(&cluster)?;
                let copy = remote_copy(run.wl, run.origin);
                remote(&cluster, create_copy(client, &copy)).await?;
                Ok(Done::Next)
            }
            Action::UpdatePriority { cluster } => {
                let client = run.client(&cluster)?;
                if let Some(found) = run.copy(&cluster) {
                    let mut next = found.clone();
                    next.spec.priority = run.wl.spec.priority;
                    next.spec.priority_class_ref = run.wl.spec.priority_class_ref.clone();
                    remote(&cluster, replace_copy(client, &next)).await?;
                }
                Ok(Done::Next)
            }
            Action::EvictRemote { cluster, message } => {
                let client = run.client(&cluster)?;
                if let Some(found) = run.copy(&cluster) {
                    let mut next = found.clone();
                    let status = next.status.get_or_insert_with(WorkloadStatus::default);
                    let generation = found.metadata.generation;
                    lifecycle::set(
                        status,
                        generation,
                        cond::DEACTIVATION_TARGET,
                        true,
                        EVICTED_ON_MANAGER_CLUSTER,
                        &message,
                        &ctx.options.clock.now_time(),
                    );
                    remote(&cluster, replace_copy_status(client, &next)).await?;
                    if let Some(uid) = found.metadata.uid.clone() {
                        self.asked
                            .entry(run.key.clone())
                            .or_default()
                            .insert(cluster, uid);
                    }
                }
                Ok(Done::Stop)
            }
            Action::SyncJob { cluster, winner } => self.sync_job(ctx, run, &cluster, winner).await,
            Action::Finish { reason, message } => {
                let mut next = run.wl.clone();
                let status = next.status.get_or_insert_with(WorkloadStatus::default);
                lifecycle::set(
                    status,
                    run.wl.metadata.generation,
                    cond::FINISHED,
                    true,
                    &reason,
                    &message,
                    &ctx.options.clock.now_time(),
                );
                write_status(ctx, &next, None).await
            }
            Action::SetCheck {
                state,
                message,
                note,
            } => {
                let mut next = run.wl.clone();
                set_check_state(
                    &mut next,
                    run.check,
                    state,
                    &message,
                    &ctx.options.clock.now_time(),
                );
                write_status(ctx, &next, note).await
            }
            Action::Admitted { cluster } => {
                let mut next = run.wl.clone();
                let message = admitted_message(&cluster);
                set_check_state(
                    &mut next,
                    run.check,
                    CheckState::Ready,
                    &message,
                    &ctx.options.clock.now_time(),
                );
                let status = next.status.get_or_insert_with(WorkloadStatus::default);
                status.cluster_name.get_or_insert(cluster);
                status.nominated_cluster_names.clear();
                let note = Note {
                    warning: false,
                    message,
                };
                write_status(ctx, &next, Some(note)).await
            }
            Action::Nominate(list) => {
                let mut next = run.wl.clone();
                next.status
                    .get_or_insert_with(WorkloadStatus::default)
                    .nominated_cluster_names = list;
                write_status(ctx, &next, None).await
            }
        }
    }

    async fn sync_job(
        &mut self,
        ctx: &mut Ctx<'_>,
        run: &Run<'_>,
        cluster: &str,
        winner: bool,
    ) -> Result<Done, Failure> {
        let now = ctx.options.clock.now();
        let (Some(adapter), Some(owner)) = (run.adapter, run.owner) else {
            return Ok(Done::Next);
        };
        let client = run.client(cluster)?;
        let wl_name = run.wl.name_any();
        let synced = remote(
            cluster,
            adapter.sync(
                ctx.writer,
                client,
                ctx.world,
                SyncRequest {
                    owner,
                    workload: &wl_name,
                    origin: run.origin,
                    create: winner,
                },
            ),
        )
        .await?;
        tracing::debug!(workload = %run.key, cluster, ?synced, "MultiKueue job sync");
        let soon = |after: Duration| now.checked_add(after).unwrap_or(now);
        match synced {
            Synced::Created | Synced::StatusCopied | Synced::UpToDate => Ok(Done::Next),
            Synced::Deferred => {
                ctx.wake_at(run.key, soon(SYNC_DEFERRED_AFTER));
                Ok(Done::Next)
            }
            Synced::Stale => {
                // Not before the status is copied: a workload finished first would leave the
                // manager's job without its final status (#5613).
                ctx.wake_at(run.key, soon(SYNC_DEFERRED_AFTER));
                Ok(Done::Stop)
            }
            Synced::RemoteMissing => {
                // Only the winner's job is created. Any other's status is copied before the
                // workload finishes or stops, and a job gone meanwhile (our own removal, which
                // the worker's watch has not shown yet) ends the plan: the next pass sees why.
                ctx.wake_at(run.key, soon(SYNC_DEFERRED_AFTER));
                Ok(Done::Stop)
            }
            Synced::LocalMissing => {
                ctx.wake_at(run.key, soon(RETRY_AFTER_ERROR));
                Ok(if winner { Done::Stop } else { Done::Next })
            }
            Synced::NotOurs if winner => {
                // Never touch the worker's own job: give that worker up for this workload, and
                // let the others compete again.
                self.excluded
                    .entry(run.key.clone())
                    .or_default()
                    .insert(cluster.to_owned());
                if let Some(found) = run.copy(cluster) {
                    remote(cluster, remove_copy(client, found)).await?;
                }
                let message = foreign_job_message(cluster, owner);
                ctx.writer.event(run.wl, true, EVENT_REASON, &message).await;
                ctx.wake_at(run.key, now);
                Ok(Done::Stop)
            }
            Synced::NotOurs => Ok(Done::Next),
        }
    }
}

/// What carrying out one workload's plan needs.
struct Run<'r> {
    workers: &'r Workers,
    key: &'r Key,
    wl: &'r Workload,
    check: &'r str,
    adapter: Option<&'static dyn JobAdapter>,
    /// The local job (`namespace/name`); the worker's job has the same name.
    owner: Option<&'r Key>,
    origin: &'r str,
}

impl Run<'_> {
    fn client(&self, cluster: &str) -> Result<&Client, Failure> {
        self.workers
            .by_name
            .get(cluster)
            .and_then(|w| w.client.as_ref())
            .ok_or_else(|| Failure::Remote {
                cluster: cluster.to_owned(),
                error: Error::Api(kube::Error::Service("not connected".into())),
            })
    }

    fn copy(&self, cluster: &str) -> Option<&Workload> {
        self.workers
            .by_name
            .get(cluster)?
            .workloads
            .get(self.key)
            .filter(|c| has_origin(&c.metadata, self.origin))
    }

    /// Deletes the worker's job for the workload, only if it carries our origin.
    async fn delete_job(&self, cluster: &str, client: &Client) -> Result<(), Failure> {
        let worker = self.workers.by_name.get(cluster);
        let seen = worker.and_then(|w| remote_job_of(w, self.wl, self.owner));
        let (adapter, key) = match (seen, self.adapter, self.owner) {
            (Some(job), _, _) => (adapter::adapter_for("batch/v1", "Job"), key_of(job)),
            (None, Some(adapter), Some(owner)) => (Some(adapter), owner.clone()),
            _ => return Ok(()),
        };
        let Some(adapter) = adapter else {
            return Ok(());
        };
        remote(cluster, adapter.delete_remote(client, &key, self.origin)).await?;
        Ok(())
    }
}

/// A worker is usable once connected and its watches have listed: before that, a missing copy
/// may just not have been seen yet.
fn is_usable(worker: &Worker) -> bool {
    worker.is_active() && worker.workloads.is_synced() && worker.jobs.is_synced()
}

/// Our job for the workload on a worker, as its watch shows it: the local job's name, labelled
/// with the workload's name.
pub(super) fn remote_job_of<'w>(
    worker: &'w Worker,
    wl: &Workload,
    owner: Option<&Key>,
) -> Option<&'w Job> {
    let name = wl.name_any();
    let belongs = |job: &&Job| crate::jobs::prebuilt_workload_name(&job.metadata) == Some(&name);
    match owner {
        Some(owner) => worker.jobs.get(owner).filter(belongs),
        None => {
            let ns = wl.namespace();
            worker
                .jobs
                .values()
                .filter(|j| j.namespace() == ns)
                .find(belongs)
        }
    }
}

/// The workload's MultiKueue check: the first of its checks whose AdmissionCheck is
/// MultiKueue's.
pub fn multikueue_check<'w>(wl: &'w Workload, setup: &Setup) -> Option<&'w AdmissionCheckState> {
    wl.status
        .as_ref()?
        .admission_checks
        .iter()
        .find(|c| setup.is_multikueue(&c.name))
}

/// Sets a check's state and message; the transition time moves only with the state.
fn set_check_state(wl: &mut Workload, check: &str, state: CheckState, message: &str, now: &Time) {
    let status = wl.status.get_or_insert_with(WorkloadStatus::default);
    if let Some(c) = status.admission_checks.iter_mut().find(|c| c.name == check) {
        if c.state != state {
            c.state = state;
            c.last_transition_time = now.clone();
        }
        c.message = conditions::truncate_message(message);
    }
}

/// Writes the workload's status and records the note on it; stops the plan when someone wrote
/// first (the newer version brings the workload back).
async fn write_status(
    ctx: &mut Ctx<'_>,
    next: &Workload,
    note: Option<Note>,
) -> Result<Done, Failure> {
    match ctx.writer.replace_status(next).await.map_err(Error::Api)? {
        Written::Ok(written) => {
            if let Some(note) = note {
                ctx.writer
                    .event(&written, note.warning, EVENT_REASON, &note.message)
                    .await;
            }
            ctx.written_workload(written);
            Ok(Done::Next)
        }
        Written::Stale => Ok(Done::Stop),
    }
}

// ---------------------------------------------------------------------------------------------
// Writes to workers. Each is bounded by REMOTE_CALL_TIMEOUT; a 404 or 409 means the watch will
// bring what changed.

/// Runs one request to a worker, bounded in time.
pub(super) async fn timed<T>(
    call: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Error> {
    match tokio::time::timeout(REMOTE_CALL_TIMEOUT, call).await {
        Ok(result) => result,
        Err(_) => Err(Error::Api(kube::Error::Service(
            "the worker did not answer in time".into(),
        ))),
    }
}

/// Whether a worker's failure is about reaching it (rather than its answer about one object).
pub(super) fn is_unreachable(error: &Error) -> bool {
    !matches!(error, Error::Api(kube::Error::Api(_)))
}

/// [`timed`], its failure the worker's.
async fn remote<T>(
    cluster: &str,
    call: impl std::future::Future<Output = Result<T, Error>>,
) -> Result<T, Failure> {
    timed(call).await.map_err(|error| Failure::Remote {
        cluster: cluster.to_owned(),
        error,
    })
}

fn post_params() -> PostParams {
    PostParams {
        field_manager: Some(FIELD_MANAGER.to_owned()),
        ..PostParams::default()
    }
}

fn workloads_api(client: &Client, wl: &Workload) -> Api<Workload> {
    Api::namespaced(client.clone(), &wl.namespace().unwrap_or_default())
}

/// Tolerates what the watch will catch up with.
fn settled<T>(result: Result<T, kube::Error>) -> Result<(), Error> {
    match result {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(e) => Err(Error::Api(e)),
    }
}

/// Creates a copy; one already there is fine (the watch brings it). A missing namespace is an
/// error: the worker is not set up for the workload.
async fn create_copy(client: &Client, copy: &Workload) -> Result<(), Error> {
    match workloads_api(client, copy)
        .create(&post_params(), copy)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        Err(e) => Err(Error::Api(e)),
    }
}

async fn replace_copy(client: &Client, copy: &Workload) -> Result<(), Error> {
    let name = copy.name_any();
    settled(
        workloads_api(client, copy)
            .replace(&name, &post_params(), copy)
            .await,
    )
}

async fn replace_copy_status(client: &Client, copy: &Workload) -> Result<(), Error> {
    let name = copy.name_any();
    settled(
        workloads_api(client, copy)
            .replace_status(&name, &post_params(), copy)
            .await,
    )
}

/// Removes a copy: its finalizer first, so that the worker lets it go at once (the worker's
/// Kueue holds it while it has quota), then the object.
pub(super) async fn remove_copy(client: &Client, copy: &Workload) -> Result<(), Error> {
    let api = workloads_api(client, copy);
    let name = copy.name_any();
    if copy
        .finalizers()
        .iter()
        .any(|f| f == finalizer::RESOURCE_IN_USE)
    {
        let mut next = copy.clone();
        next.metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .retain(|f| f != finalizer::RESOURCE_IN_USE);
        settled(api.replace(&name, &post_params(), &next).await)?;
    }
    if copy.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    settled(api.delete(&name, &DeleteParams::background()).await)
}
