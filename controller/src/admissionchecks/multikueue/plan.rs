//! The manager workload controller's decisions, without IO: given the manager's workload, what
//! the workers' watches show and whether they are reachable, what happens next ([`plan`]), in
//! Kueue's order (`reconcileGroup`): a deleted, finished or unreserved workload loses its remote
//! objects; a workload nothing can dispatch is Rejected; a remote that finished finishes it; an
//! eviction on the worker that runs it sends the check to Retry; copies whose spec drifted are
//! removed; the first copy Admitted wins, the others go, the job is created on the winner and the
//! check becomes Ready; a lost winner is given `workerLostTimeout`; otherwise the dispatcher
//! ([`super::dispatch`]) says which workers hold a copy. Where Kueue has a known bug this does the
//! right thing (see [`plan`]).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use api::constants::{label, workload_condition as cond};
use api::kueue::{AdmissionCheckState, CheckState, Workload};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::ResourceExt;

use super::dispatch::{self, Dispatcher};
use crate::workload::{self, conditions, lifecycle};

/// The reason of the Events MultiKueue records on workloads.
pub const EVENT_REASON: &str = "MultiKueue";
/// A remote Finished reason: the worker's workload no longer matches its job (not a completion).
pub const FINISHED_OUT_OF_SYNC: &str = crate::jobs::OUT_OF_SYNC_REASON;
/// The DeactivationTarget reason asking a worker to evict its copy.
pub const EVICTED_ON_MANAGER_CLUSTER: &str = "EvictedOnManagerCluster";

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
    /// The manager asked the copy to evict (its DeactivationTarget, as its watch shows it or as
    /// this controller wrote it before the watch caught up).
    pub asked_to_evict: bool,
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
    /// Adds an action; removals from one worker become one (what either removes).
    fn push(&mut self, action: Action) {
        if let Action::Remove { cluster, job, copy } = &action
            && let Some(Action::Remove {
                job: j, copy: c, ..
            }) = self
                .actions
                .iter_mut()
                .find(|a| matches!(a, Action::Remove { cluster: other, .. } if other == cluster))
        {
            *j |= *job;
            *c |= *copy;
            return;
        }
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
///   holds a same-named job MultiKueue did not create (#12404);
/// - a copy asked to evict with the manager's workload is replaced once quota is reserved again,
///   even when the release of the quota went unseen (Kueue would let it, still Admitted, win the
///   next admission, and lose it when its worker evicts it).
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
        // A copy the manager asked to evict belongs to an earlier admission: once quota is
        // reserved again it goes, as it would have had the release of the quota been seen.
        if !local_evicted && (remote.asked_to_evict || deactivated_for_the_manager(copy)) {
            p.push(Action::Remove {
                cluster: cluster.clone(),
                job: remote.job,
                copy: true,
            });
            removed.insert(cluster);
            continue;
        }
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
        None => {
            // No worker holds the workload: a job left from an earlier admission (its copy was
            // evicted, deleted or requeued there) goes, so that it cannot run beside the next
            // winner's.
            for (cluster, _) in f.remotes.iter().filter(|(_, r)| r.active && r.job) {
                if !local_evicted && !removed.contains(cluster.as_str()) {
                    p.push(Action::Remove {
                        cluster: cluster.clone(),
                        job: true,
                        copy: false,
                    });
                }
            }
        }
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
                let remote = &f.remotes[winner];
                let targeted = remote
                    .copy
                    .and_then(|c| workload::true_condition(c, cond::DEACTIVATION_TARGET))
                    .is_some();
                if !remote.asked_to_evict && !targeted {
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
    // its eviction follows. A copy evicted on its worker (preempted, say) is Admitted until the
    // worker releases its quota; it must not win again meanwhile (#9338).
    let keep = |c: &str, copy: &Workload| {
        eligible(c)
            && (cluster_name.is_some() || (is_running_copy(copy) && !workload::is_evicted(copy)))
    };
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

/// Whether a copy's DeactivationTarget is the manager's request to evict it.
pub fn asked_to_evict(copy: &Workload) -> bool {
    workload::true_condition(copy, cond::DEACTIVATION_TARGET)
        .is_some_and(|c| c.reason == EVICTED_ON_MANAGER_CLUSTER)
}

/// Whether a copy's worker deactivated it because the manager asked.
fn deactivated_for_the_manager(copy: &Workload) -> bool {
    !workload::is_active(copy)
        && workload::true_condition(copy, cond::EVICTED)
            .and_then(|c| lifecycle::deactivation_cause(&c.reason))
            == Some(EVICTED_ON_MANAGER_CLUSTER)
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

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
