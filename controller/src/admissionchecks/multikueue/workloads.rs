//! The manager's workloads: remote copies, the winner, the job on the winner.
//!
//! For each workload with a MultiKueue check, in Kueue's order (`reconcileGroup`): a deleted,
//! finished or unreserved workload loses its remote objects; a workload nothing can dispatch is
//! Rejected; a remote that finished finishes it; an eviction on the worker that runs it sends the
//! check to Retry; copies whose spec drifted are removed; the first copy Admitted wins, the
//! others go, the job is created on the winner and the check becomes Ready; a lost winner is
//! given `workerLostTimeout`; otherwise the dispatcher ([`super::dispatch`]) says which workers
//! hold a copy.
//!
//! [`plan`] decides without IO from the workload and what the workers' watches show; the
//! [`WorkloadsPass`] carries the plan out. Where Kueue has a known bug this does the right thing
//! (see [`plan`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use api::constants::{finalizer, label, workload_condition as cond};
use api::kueue::{AdmissionCheckState, CheckState, Workload, WorkloadStatus};
use futures::future::BoxFuture;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, ResourceExt};

use super::adapter::{self, JobAdapter, Managed, Synced};
use super::clusters::Setup;
use super::dispatch::{self, Dispatcher};
use super::workers::{RemoteChange, Worker, Workers};
use crate::admissionchecks::Ctx;
use crate::error::Error;
use crate::state::{Key, World, key_of};
use crate::workload::{self, conditions, lifecycle};
use crate::writer::{FIELD_MANAGER, Written};

/// The reason of the Events MultiKueue records on workloads.
pub const EVENT_REASON: &str = "MultiKueue";
/// A remote Finished reason: the worker's workload no longer matches its job (not a completion).
pub const FINISHED_OUT_OF_SYNC: &str = crate::jobs::OUT_OF_SYNC_REASON;
/// The DeactivationTarget reason asking a worker to evict its copy.
pub const EVICTED_ON_MANAGER_CLUSTER: &str = "EvictedOnManagerCluster";

/// How long a workload waits after an API error before it is looked at again.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(10);
/// How soon a deferred job status copy is tried again (the local job is about to start).
const SYNC_DEFERRED_AFTER: Duration = Duration::from_secs(2);
/// How long one request to a worker may take. The pass runs on the manager's one loop: a
/// worker that hangs must not hold up every other workload.
pub(super) const REMOTE_CALL_TIMEOUT: Duration = Duration::from_secs(10);

// ---------------------------------------------------------------------------------------------
// Messages, as Kueue writes them.

/// Kueue appends the state the check leaves to every message it sets.
pub fn previously(message: &str, state: CheckState) -> String {
    conditions::truncate_message(&format!("{message}, Previously: \"{state}\""))
}

pub fn admitted_message(cluster: &str) -> String {
    format!("The workload was admitted on \"{cluster}\"")
}

pub fn evicted_on_worker_message(cluster: &str, state: CheckState) -> String {
    format!(
        "Workload evicted on worker cluster: \"{cluster}\", resetting for re-admission. \
         Previously: \"{state}\""
    )
}

pub fn out_of_sync_message(cluster: &str) -> String {
    format!(
        "Remote workload on worker cluster \"{cluster}\" is out of sync with its user job, \
         resetting for re-dispatch"
    )
}

pub const ADMITTING_REMOTE_LOST: &str = "Admitting remote lost";
pub const ADMITTING_REMOTE_GONE: &str = "Admitting remote no longer exists";
pub const NO_ADMITTING_CLUSTER: &str = "Admission check is Ready but no admitting cluster is \
                                        recorded; this is unexpected, please report it";

/// A worker holds a job of the same name that MultiKueue did not create: that worker cannot
/// run this workload (Tollgate's own message; upstream keeps retrying, #12404).
pub fn foreign_job_message(cluster: &str, job: &str) -> String {
    format!(
        "Worker cluster \"{cluster}\" has a job \"{job}\" not created by MultiKueue; \
         dispatching elsewhere"
    )
}

// ---------------------------------------------------------------------------------------------
// The decision.

/// One worker cluster as a workload's decision sees it.
#[derive(Debug, Clone, Default)]
pub struct Remote<'a> {
    /// Connected, with its watches listed: its objects can be read and written.
    pub active: bool,
    /// While not active: since when it is unreachable.
    pub lost_since: Option<Timestamp>,
    /// Our copy of the workload there, as its watch shows it.
    pub copy: Option<&'a Workload>,
    /// Whether its watch shows our job for the workload.
    pub job: bool,
}

/// Whether the local job may be dispatched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    Managed,
    /// The check's Rejected message (before Kueue's "Previously" suffix).
    Unmanaged(String),
    /// The local job is not known yet.
    Unknown,
}

/// What a workload's plan is decided from.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    pub local: &'a Workload,
    /// The workload's MultiKueue check.
    pub check: &'a AdmissionCheckState,
    /// Gone from the API server, or being deleted.
    pub deleted: bool,
    pub owner: Owner,
    /// The check's workers in its MultiKueueConfig's order; `None` while that cannot be read.
    pub clusters: Option<&'a [String]>,
    /// The check's workers and every other worker holding our objects for the workload.
    pub remotes: BTreeMap<String, Remote<'a>>,
    /// Workers this workload may not use (a same-named job there is not ours).
    pub excluded: &'a BTreeSet<String>,
    pub dispatcher: Dispatcher,
    /// Incremental: when the current round started.
    pub round_start: Option<Timestamp>,
    pub now: Timestamp,
    pub worker_lost_timeout: Duration,
}

/// An Event to record on the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub warning: bool,
    pub message: String,
}

/// One step of a plan, carried out in order; a step that cannot be done ends the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Remove our objects for the workload from a worker: the job first (only if it carries our
    /// origin), then the copy.
    Remove {
        cluster: String,
        job: bool,
        copy: bool,
    },
    /// Create the copy on a worker.
    Create { cluster: String },
    /// Give the worker's copy the workload's priority.
    UpdatePriority { cluster: String },
    /// Ask the worker to evict its copy: the workload was evicted on the manager.
    EvictRemote { cluster: String, message: String },
    /// Create the job on the worker, or copy its status back. `winner`: the worker that admitted
    /// the workload, the check follows the outcome.
    SyncJob { cluster: String, winner: bool },
    /// Finish the manager's workload as the worker's finished.
    Finish { reason: String, message: String },
    /// Set the check's state and message.
    SetCheck {
        state: CheckState,
        message: String,
        note: Option<Note>,
    },
    /// The check Ready on `cluster`, `status.clusterName` set and nominations cleared.
    Admitted { cluster: String },
    /// Write `status.nominatedClusterNames`.
    Nominate(Vec<String>),
}

/// What to do for one workload now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub actions: Vec<Action>,
    /// Look at the workload again then, even if nothing changes.
    pub wake_at: Option<Timestamp>,
    /// Incremental: a round starts with this plan.
    pub round_started: bool,
}

impl Plan {
    fn push(&mut self, action: Action) {
        self.actions.push(action);
    }

    fn wake(&mut self, at: Timestamp) {
        self.wake_at = Some(self.wake_at.map_or(at, |w| w.min(at)));
    }

    fn set_check(&mut self, state: CheckState, message: String, note: Option<Note>) {
        self.push(Action::SetCheck {
            state,
            message,
            note,
        });
    }
}

/// Decides what to do for one workload. Kueue's order, with these differences where Kueue
/// has a bug:
/// - once `status.clusterName` is set only that worker's copy can win (Kueue would let an older
///   copy on a worker that comes back win, and then fail on the immutable field);
/// - a worker's eviction counts only on the worker that runs the job; a copy elsewhere being
///   evicted is that worker's business;
/// - a copy its worker deactivated (its check there Rejected it) is not "out of sync": it stays,
///   out of the race, instead of being deleted and recreated over and over;
/// - the job is created only when no other worker is known to hold a job of the workload (a
///   worker lost for longer than `workerLostTimeout` is given up, as the KEP says);
/// - nothing is dispatched while the workload is evicted on the manager, or to a worker that
///   holds a same-named job MultiKueue did not create (#12404).
pub fn plan(f: &Facts) -> Plan {
    let mut p = Plan::default();
    let status = f.local.status.as_ref();
    let cluster_name = status.and_then(|s| s.cluster_name.as_deref());
    let state = f.check.state;

    if f.deleted {
        remove_all(f, &mut p);
        return p;
    }
    if let Owner::Unmanaged(message) = &f.owner {
        p.set_check(CheckState::Rejected, previously(message, state), None);
        return p;
    }
    if workload::is_finished(f.local) || !workload::has_quota_reservation(f.local) {
        remove_all(f, &mut p);
        return p;
    }
    let (Owner::Managed, Some(clusters)) = (&f.owner, f.clusters) else {
        return p;
    };
    let local_evicted = workload::is_evicted(f.local);

    // A remote that finished finishes the workload (its job status copied first), unless it
    // finished because it no longer matched its job: then the workload is dispatched again.
    if let Some((cluster, finished)) = earliest(f, cond::FINISHED, |_, _| true) {
        if finished.reason == FINISHED_OUT_OF_SYNC {
            if state == CheckState::Ready {
                let note = Note {
                    warning: true,
                    message: previously(&out_of_sync_message(cluster), state),
                };
                p.set_check(CheckState::Retry, note.message.clone(), Some(note));
            }
            return p;
        }
        if f.remotes.get(cluster).is_some_and(|r| r.job) {
            p.push(Action::SyncJob {
                cluster: cluster.to_owned(),
                winner: false,
            });
        }
        p.push(Action::Finish {
            reason: finished.reason.clone(),
            message: finished.message.clone(),
        });
        return p;
    }

    // An eviction on the worker that runs the job.
    let runner = cluster_name.map(str::to_owned).or_else(|| {
        f.remotes
            .iter()
            .find(|(_, r)| r.active && r.job)
            .map(|(c, _)| c.clone())
    });
    if let Some(runner) = &runner
        && let Some(remote) = f.remotes.get(runner).filter(|r| r.active)
        && remote.copy.is_some_and(workload::is_evicted)
    {
        if local_evicted {
            // Evicted on the manager too: the worker's stopped job reports back, so that the
            // manager's job stops and the quota is released.
            if remote.job {
                p.push(Action::SyncJob {
                    cluster: runner.clone(),
                    winner: false,
                });
            }
            return p;
        }
        if state == CheckState::Ready {
            let message = evicted_on_worker_message(cluster_name.unwrap_or(runner), state);
            let note = Note {
                warning: false,
                message: message.clone(),
            };
            p.set_check(CheckState::Retry, message, Some(note));
            return p;
        }
    }

    // Copies whose spec drifted from the workload's are removed (a priority change is passed on).
    let mut removed: BTreeSet<&str> = BTreeSet::new();
    for (cluster, remote) in f.remotes.iter().filter(|(_, r)| r.active) {
        let Some(copy) = remote.copy.filter(|c| !is_terminating(c)) else {
            continue;
        };
        match drift(f.local, copy) {
            Drift::None => {}
            Drift::Priority => p.push(Action::UpdatePriority {
                cluster: cluster.clone(),
            }),
            Drift::Spec => {
                p.push(Action::Remove {
                    cluster: cluster.clone(),
                    job: remote.job,
                    copy: true,
                });
                removed.insert(cluster);
            }
        }
    }

    match winner(f, cluster_name, clusters, &removed) {
        None if state == CheckState::Ready => {
            admitting_remote_missing(f, cluster_name, clusters, &mut p);
            return p;
        }
        None => {}
        Some(winner) => {
            for (cluster, remote) in &f.remotes {
                let holds = remote.copy.is_some() || remote.job;
                if cluster != winner
                    && remote.active
                    && holds
                    && !removed.contains(cluster.as_str())
                {
                    p.push(Action::Remove {
                        cluster: cluster.clone(),
                        job: remote.job,
                        copy: remote.copy.is_some(),
                    });
                }
            }
            if local_evicted {
                // Evicted on the manager: the worker evicts its copy, so that the job stops
                // there and its status reports back (#7350).
                let asked = f.remotes[winner]
                    .copy
                    .and_then(|c| c.status.as_ref())
                    .is_some_and(|s| conditions::is_true(&s.conditions, cond::DEACTIVATION_TARGET));
                if !asked {
                    let message = status
                        .and_then(|s| conditions::find(&s.conditions, cond::EVICTED))
                        .map(|c| c.message.as_str())
                        .unwrap_or_default();
                    p.push(Action::EvictRemote {
                        cluster: winner.to_owned(),
                        message: conditions::truncate_message(&format!(
                            "Evicted on manager: {message}"
                        )),
                    });
                }
                return p;
            }
            if matches!(state, CheckState::Retry | CheckState::Rejected) {
                return p;
            }
            // A job never exists on two workers: wait until every other job is gone.
            let mut blocked = false;
            for (cluster, remote) in &f.remotes {
                if cluster == winner || !remote.job {
                    continue;
                }
                if remote.active {
                    blocked = true;
                } else if let Some(deadline) = lost_deadline(f, remote)
                    && f.now < deadline
                {
                    blocked = true;
                    p.wake(deadline);
                }
            }
            if blocked {
                return p;
            }
            p.push(Action::SyncJob {
                cluster: winner.to_owned(),
                winner: true,
            });
            let nominated = status.is_some_and(|s| !s.nominated_cluster_names.is_empty());
            if state != CheckState::Ready || cluster_name.is_none() || nominated {
                p.push(Action::Admitted {
                    cluster: winner.to_owned(),
                });
            }
            return p;
        }
    }

    // Dispatching: only for a pending check, before a worker is chosen, while the workload
    // holds quota unevicted and once every other check is Ready.
    if state != CheckState::Pending || cluster_name.is_some() || local_evicted {
        return p;
    }
    let others_ready = status.is_none_or(|s| {
        s.admission_checks
            .iter()
            .all(|c| c.name == f.check.name || c.state == CheckState::Ready)
    });
    if !others_ready {
        return p;
    }
    let active: BTreeSet<String> = f
        .remotes
        .iter()
        .filter(|(_, r)| r.active)
        .map(|(c, _)| c.clone())
        .collect();
    let usable: BTreeSet<String> = active.difference(f.excluded).cloned().collect();
    let stored = status.map_or(&[][..], |s| &s.nominated_cluster_names[..]);
    let nomination = dispatch::nominate(
        f.dispatcher,
        &dispatch::Facts {
            nominated: stored,
            clusters,
            active: &usable,
            round_start: f.round_start,
            now: f.now,
        },
    );
    if let Some(list) = nomination.write.clone() {
        p.push(Action::Nominate(list));
    }
    p.round_started = nomination.round_started;
    if let Some(at) = nomination.wake_at {
        p.wake(at);
    }
    let wanted: Vec<String> = nomination
        .nominated
        .into_iter()
        .filter(|c| !f.excluded.contains(c) && clusters.contains(c))
        .collect();
    let holders: BTreeSet<String> = f
        .remotes
        .iter()
        .filter(|(c, r)| r.copy.is_some() && !removed.contains(c.as_str()))
        .map(|(c, _)| c.clone())
        .collect();
    let changes = dispatch::copy_changes(&wanted, &holders, &active);
    for cluster in changes.remove {
        let job = f.remotes.get(&cluster).is_some_and(|r| r.job);
        p.push(Action::Remove {
            cluster,
            job,
            copy: true,
        });
    }
    for cluster in changes.create {
        p.push(Action::Create { cluster });
    }
    p
}

/// Every reachable worker's objects for the workload go.
fn remove_all(f: &Facts, p: &mut Plan) {
    let cluster_name = f
        .local
        .status
        .as_ref()
        .and_then(|s| s.cluster_name.as_deref());
    for (cluster, remote) in f.remotes.iter().filter(|(_, r)| r.active) {
        // The admitting worker may hold a job its watch has not shown yet.
        let job = remote.job || cluster_name == Some(cluster.as_str());
        if job || remote.copy.is_some() {
            p.push(Action::Remove {
                cluster: cluster.clone(),
                job,
                copy: remote.copy.is_some(),
            });
        }
    }
}

/// The check is Ready but no copy is admitted: the admitting worker is unreachable (given
/// `workerLostTimeout` from when it was lost), unknown, or no longer has it.
fn admitting_remote_missing(
    f: &Facts,
    cluster_name: Option<&str>,
    clusters: &[String],
    p: &mut Plan,
) {
    let state = f.check.state;
    let Some(admitting) = cluster_name else {
        p.set_check(
            CheckState::Retry,
            previously(NO_ADMITTING_CLUSTER, state),
            None,
        );
        return;
    };
    let unreachable = f.remotes.get(admitting).filter(|r| !r.active);
    if clusters.iter().any(|c| c == admitting)
        && let Some(remote) = unreachable
    {
        if let Some(deadline) = lost_deadline(f, remote)
            && f.now < deadline
        {
            p.wake(deadline);
            return;
        }
        p.set_check(
            CheckState::Retry,
            previously(ADMITTING_REMOTE_LOST, state),
            None,
        );
        return;
    }
    p.set_check(
        CheckState::Retry,
        previously(ADMITTING_REMOTE_GONE, state),
        None,
    );
}

/// When an unreachable worker is given up.
fn lost_deadline(f: &Facts, remote: &Remote) -> Option<Timestamp> {
    let since = remote.lost_since.unwrap_or(f.now);
    since.checked_add(f.worker_lost_timeout).ok()
}

/// The copy that won: the first Admitted among the reachable, in-sync copies on the check's
/// workers, or only the `status.clusterName` worker's once that is set. Ties go by name.
fn winner<'f>(
    f: &'f Facts,
    cluster_name: Option<&str>,
    clusters: &[String],
    removed: &BTreeSet<&str>,
) -> Option<&'f str> {
    let eligible = |cluster: &str| {
        clusters.iter().any(|c| c == cluster)
            && !removed.contains(cluster)
            && !f.excluded.contains(cluster)
            && cluster_name.is_none_or(|n| n == cluster)
    };
    // A copy its worker deactivated is out of the race, unless it is the one running the job:
    // its eviction follows.
    let keep =
        |c: &str, copy: &Workload| eligible(c) && (cluster_name.is_some() || is_running_copy(copy));
    earliest(f, cond::ADMITTED, keep).map(|(c, _)| c)
}

/// The reachable copy whose `condition` became True first (ties by name), with that condition.
fn earliest<'f>(
    f: &'f Facts,
    condition: &str,
    keep: impl Fn(&str, &Workload) -> bool,
) -> Option<(&'f str, &'f Condition)> {
    f.remotes
        .iter()
        .filter(|(_, r)| r.active)
        .filter_map(|(c, r)| {
            let copy = r.copy.filter(|w| !is_terminating(w) && keep(c, w))?;
            let found = copy
                .status
                .as_ref()
                .and_then(|s| conditions::find(&s.conditions, condition))
                .filter(|c| c.status == "True")?;
            Some((c.as_str(), found))
        })
        .min_by_key(|(_, c)| c.last_transition_time.0)
}

/// A copy its worker has not deactivated.
fn is_running_copy(copy: &Workload) -> bool {
    workload::is_active(copy) || workload::is_finished(copy)
}

fn is_terminating(copy: &Workload) -> bool {
    copy.metadata.deletion_timestamp.is_some()
}

/// How a copy's spec differs from the workload's.
#[derive(Debug, PartialEq, Eq)]
enum Drift {
    None,
    /// Only the priority: passed on to the copy.
    Priority,
    Spec,
}

fn drift(local: &Workload, copy: &Workload) -> Drift {
    let mut a = local.spec.clone();
    let mut b = copy.spec.clone();
    // A worker deactivates a copy its check rejected; that is not a difference to repair.
    a.active = None;
    b.active = None;
    if a == b {
        return Drift::None;
    }
    b.priority = a.priority;
    b.priority_class_ref = a.priority_class_ref.clone();
    if a == b { Drift::Priority } else { Drift::Spec }
}

/// The copy created on a worker: the workload's name, namespace, labels, annotations and spec,
/// labelled with our origin (the worker's job integration sets its own job-uid label).
pub fn remote_copy(local: &Workload, origin: &str) -> Workload {
    let mut copy = Workload::new(&local.name_any(), local.spec.clone());
    copy.metadata.namespace = local.metadata.namespace.clone();
    copy.metadata.annotations = local.metadata.annotations.clone();
    let mut labels = local.metadata.labels.clone().unwrap_or_default();
    // The worker's job integration sets its own job's.
    labels.remove(crate::jobs::JOB_UID_LABEL);
    labels.insert(label::MULTIKUEUE_ORIGIN.to_owned(), origin.to_owned());
    copy.metadata.labels = Some(labels);
    copy
}

/// Whether a remote object carries our origin label.
pub fn has_origin(meta: &ObjectMeta, origin: &str) -> bool {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(label::MULTIKUEUE_ORIGIN))
        .is_some_and(|o| o == origin)
}

// ---------------------------------------------------------------------------------------------
// The pass.

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
            remotes.insert(
                name.to_owned(),
                Remote {
                    active,
                    lost_since,
                    copy,
                    job,
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

    /// Forgets a workload that is not (or no longer) MultiKueue's.
    fn forget(&mut self, key: &Key) {
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
            adapter.sync(ctx.writer, client, ctx.world, owner, &wl_name, run.origin),
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

#[cfg(test)]
#[path = "workloads_tests.rs"]
mod tests;
