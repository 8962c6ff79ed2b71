//! The fake job runner: in an embedded world nothing runs pods, so this component plays the Job
//! controller and the kubelet for batch/v1 Jobs. An unsuspended Job becomes active (all its pods
//! running), and after its run time succeeds or fails, as the Job controller would report it.
//! Suspending a Job makes it inactive again, and a later start runs it from the beginning.
//!
//! Per Job, the annotations `tollgate.dev/run-duration` (e.g. `90s`) and
//! `tollgate.dev/run-outcome` (`Succeeded` or `Failed`) set what happens; the component's
//! configuration sets the default duration (`{duration: 30s}`).
//!
//! Like the Job controller, it leaves alone a Job whose `spec.managedBy` names another controller
//! (MultiKueue's jobs on the manager, whose pods run on a worker): it neither runs it nor writes
//! its status.
//!
//! With `{pods: true}` it also plays the scheduler ([`super::pods`]): a Job's pods are created on
//! the Nodes that can take them, and the Job starts only once all of them have a node.
//!
//! What it watches it keeps in [`Mirror`]s, so a re-list after its watch was down drops the objects
//! deleted meanwhile: a Job gone stops running, and a Pod gone frees its node.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use support::mirror::{Mirror, key_of};

use super::pods;
use crate::env::{Component, ComponentContext};
use crate::scenario::duration::VirtualDuration;

/// How long a Job runs.
pub const DURATION_ANNOTATION: &str = "tollgate.dev/run-duration";
/// How a Job ends: `Succeeded` (default) or `Failed`.
pub const OUTCOME_ANNOTATION: &str = "tollgate.dev/run-outcome";
/// The Job controller's own `spec.managedBy` value.
pub const JOB_CONTROLLER: &str = "kubernetes.io/job-controller";

pub struct JobRunner {
    default_duration: Duration,
    pods: bool,
}

impl Default for JobRunner {
    fn default() -> Self {
        JobRunner {
            default_duration: Duration::from_secs(60),
            pods: false,
        }
    }
}

impl JobRunner {
    pub fn new(default_duration: Duration) -> Self {
        JobRunner {
            default_duration,
            pods: false,
        }
    }

    /// Also creates each Job's pods on Nodes that can take them (`pods: true`).
    pub fn with_pods(mut self) -> Self {
        self.pods = true;
        self
    }

    /// From a scenario's `components.job-runner`: `{}` or `{duration: 30s}`.
    pub fn from_value(value: &Value) -> Result<Self, String> {
        let mut runner = JobRunner::default();
        if let Some(map) = value.as_object() {
            for (k, v) in map {
                match k.as_str() {
                    "duration" => {
                        let text = v.as_str().ok_or("duration: expected a string like 30s")?;
                        runner.default_duration = VirtualDuration::parse(text)
                            .map_err(|e| format!("duration: {e}"))?
                            .0;
                    }
                    "pods" => {
                        runner.pods = v.as_bool().ok_or("pods: expected true or false")?;
                    }
                    other => {
                        return Err(format!("unknown field `{other}` (known: duration, pods)"));
                    }
                }
            }
        }
        Ok(runner)
    }
}

impl Component for JobRunner {
    fn name(&self) -> &str {
        "job-runner"
    }

    fn run(&self, ctx: ComponentContext) -> BoxFuture<'static, Result<(), String>> {
        let (default_duration, pods) = (self.default_duration, self.pods);
        Box::pin(async move { run(ctx, default_duration, pods).await })
    }
}

/// One change from the runner's watches.
enum Change {
    Job(Box<Event<Job>>),
    Node(Box<Event<Node>>),
    Pod(Box<Event<Pod>>),
}

async fn run(
    ctx: ComponentContext,
    default_duration: Duration,
    with_pods: bool,
) -> Result<(), String> {
    let clock = support::Clock::anchored(ctx.start_wall, ctx.start);
    let watch = |client: &kube::Client| {
        let jobs = watcher::watcher(Api::<Job>::all(client.clone()), watcher::Config::default())
            .backoff(support::backoff::WatchBackoff::default())
            .map(|e| e.map(|e| Change::Job(Box::new(e))))
            .boxed();
        let mut streams = vec![jobs];
        if with_pods {
            streams.push(
                watcher::watcher(Api::<Node>::all(client.clone()), watcher::Config::default())
                    .backoff(support::backoff::WatchBackoff::default())
                    .map(|e| e.map(|e| Change::Node(Box::new(e))))
                    .boxed(),
            );
            streams.push(
                watcher::watcher(Api::<Pod>::all(client.clone()), watcher::Config::default())
                    .backoff(support::backoff::WatchBackoff::default())
                    .map(|e| e.map(|e| Change::Pod(Box::new(e))))
                    .boxed(),
            );
        }
        futures::stream::select_all(streams)
    };
    let mut events = watch(&ctx.client);
    let mut jobs: Mirror<Job> = Mirror::default();
    let mut cluster = pods::Cluster::default();
    // When each running job ends.
    let mut ends: BTreeMap<String, tokio::time::Instant> = BTreeMap::new();
    loop {
        let next_end = ends.values().min().copied();
        let event = match next_end {
            Some(at) => tokio::select! {
                biased;
                e = events.next() => Some(e),
                _ = tokio::time::sleep_until(at) => None,
            },
            None => Some(events.next().await),
        };
        let mut changed: Vec<String> = vec![];
        let mut capacity_changed = false;
        let mut take = |e: Option<Result<Change, watcher::Error>>,
                        jobs: &mut Mirror<Job>,
                        cluster: &mut pods::Cluster|
         -> Result<(), String> {
            let change = match e {
                None => return Err("the job runner's watch ended".to_string()),
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "job runner watch");
                    return Ok(());
                }
                Some(Ok(change)) => change,
            };
            match change {
                Change::Job(e) => {
                    // What changed only: a late or echoed version is no news, and a Job gone
                    // during a re-list is reported so that its end is forgotten.
                    for (old, new) in jobs.apply_event(*e) {
                        changed.extend(new.or(old).map(|job| key_of(job.as_ref())));
                    }
                }
                Change::Node(e) => capacity_changed |= apply_room(&mut cluster.nodes, *e),
                Change::Pod(e) => capacity_changed |= apply_room(&mut cluster.pods, *e),
            }
            Ok(())
        };
        if let Some(e) = event {
            take(e, &mut jobs, &mut cluster)?;
        }
        while let Some(e) = events.next().now_or_never() {
            take(e, &mut jobs, &mut cluster)?;
        }
        let now = tokio::time::Instant::now();
        let due: Vec<String> = ends
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        changed.extend(due);
        if capacity_changed {
            // Jobs waiting for room for their pods may fit now.
            changed.extend(
                jobs.iter()
                    .filter(|(_, j)| waits_for_pods(j))
                    .map(|(k, _)| k.clone()),
            );
        }
        changed.sort();
        changed.dedup();
        for key in changed {
            ends.remove(&key);
            let Some(job) = jobs.get(&key).cloned() else {
                continue;
            };
            if !ours(&job) {
                continue;
            }
            let tended = tend(
                &ctx.client,
                &job,
                &clock,
                default_duration,
                with_pods,
                &mut jobs,
                &mut cluster,
            )
            .await;
            match tended {
                Ok(Some(at)) => {
                    ends.insert(key, at);
                }
                Ok(None) => {}
                // As the Job controller and the kubelet do, try again: a failed request is no
                // reason to stop running Jobs.
                Err(error) => {
                    tracing::warn!(job = %key, %error, "job runner: trying again in 1s");
                    ends.insert(key, tokio::time::Instant::now() + RETRY_AFTER);
                }
            }
        }
    }
}

/// How long after a failed request the runner looks at the Job again.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Moves one Job on (its pods, its status); when to look at it again, if at a set time.
async fn tend(
    client: &kube::Client,
    job: &Job,
    clock: &support::Clock,
    default_duration: Duration,
    with_pods: bool,
    jobs: &mut Mirror<Job>,
    cluster: &mut pods::Cluster,
) -> Result<Option<tokio::time::Instant>, String> {
    let key = key_of(job);
    if with_pods {
        if suspended(job) {
            pods::stop(client, job, cluster).await?;
        } else if let Some(phase) = ended(job) {
            // Pods an earlier try failed to end.
            pods::finish(client, job, phase, cluster).await?;
        } else if waits_for_pods(job) && !pods::start(client, job, cluster).await? {
            return Ok(None);
        }
    }
    let wall = clock.now();
    match next_status(job, wall, default_duration) {
        Next::Nothing => Ok(None),
        Next::EndAt(at) => Ok(Some(clock.instant_of(at))),
        Next::Write(status) => {
            let mut next = job.clone();
            next.status = Some(status);
            let api: Api<Job> =
                Api::namespaced(client.clone(), &job.namespace().unwrap_or_default());
            match api
                .replace_status(&job.name_any(), &PostParams::default(), &next)
                .await
            {
                Ok(new) => {
                    jobs.apply(new.clone());
                    if with_pods && let Some(phase) = ended(&new) {
                        pods::finish(client, &new, phase, cluster).await?;
                    }
                    match next_status(&new, wall, default_duration) {
                        Next::EndAt(at) => Ok(Some(clock.instant_of(at))),
                        _ => Ok(None),
                    }
                }
                // A newer version is on its way through the watch.
                Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => Ok(None),
                Err(e) => Err(format!("updating the status of Job {key}: {e}")),
            }
        }
    }
}

/// Applies a node or pod event; returns whether the room for Jobs' pods may have changed. Every
/// live event counts, even the echo of the runner's own pod writes: that echo is how the room a
/// finished Job freed reaches the Jobs waiting for it. A re-list counts once done, if it changed
/// anything.
fn apply_room<K: kube::Resource + Clone>(mirror: &mut Mirror<K>, event: Event<K>) -> bool {
    let live = matches!(event, Event::Apply(_) | Event::Delete(_));
    let changed = !mirror.apply_event(event).is_empty();
    live || changed
}

/// Whether the Job controller runs the Job: `spec.managedBy` unset or its own (another value is
/// immutable, so such a Job is never ours).
fn ours(job: &Job) -> bool {
    job.spec
        .as_ref()
        .and_then(|s| s.managed_by.as_deref())
        .is_none_or(|m| m == JOB_CONTROLLER)
}

fn suspended(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend).unwrap_or(false)
}

/// Ours, unsuspended, not started and not finished: its pods are still to be placed.
fn waits_for_pods(job: &Job) -> bool {
    let status = job.status.clone().unwrap_or_default();
    ours(job) && !suspended(job) && status.start_time.is_none() && ended(job).is_none()
}

/// How the Job ended, as its pods' phase: `Succeeded` or `Failed`.
fn ended(job: &Job) -> Option<&'static str> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    let is = |t: &str| {
        conditions
            .iter()
            .any(|c| c.type_ == t && c.status == "True")
    };
    if is("Complete") {
        Some("Succeeded")
    } else if is("Failed") {
        Some("Failed")
    } else {
        None
    }
}

enum Next {
    Nothing,
    EndAt(Timestamp),
    Write(JobStatus),
}

/// What the Job controller would do next with this Job.
fn next_status(job: &Job, now: Timestamp, default_duration: Duration) -> Next {
    let status = job.status.clone().unwrap_or_default();
    let finished = status
        .conditions
        .iter()
        .flatten()
        .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True");
    if finished {
        return Next::Nothing;
    }
    let spec = job.spec.clone().unwrap_or_default();
    let pods = spec.parallelism.unwrap_or(1);
    let t = Time(support::clock::truncate_seconds(now));
    if spec.suspend.unwrap_or(false) {
        if status.active.unwrap_or(0) == 0 && status.start_time.is_none() {
            return Next::Nothing;
        }
        let mut s = status;
        s.active = Some(0);
        s.ready = Some(0);
        s.start_time = None;
        set_condition(
            &mut s,
            "Suspended",
            "True",
            "JobSuspended",
            "Job suspended",
            &t,
        );
        return Next::Write(s);
    }
    let Some(started) = status.start_time.clone() else {
        let mut s = status;
        s.start_time = Some(t.clone());
        s.active = Some(pods);
        s.ready = Some(pods);
        if s.conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == "Suspended")
        {
            set_condition(
                &mut s,
                "Suspended",
                "False",
                "JobResumed",
                "Job resumed",
                &t,
            );
        }
        return Next::Write(s);
    };
    let duration = job
        .annotations()
        .get(DURATION_ANNOTATION)
        .and_then(|d| VirtualDuration::parse(d).ok())
        .map(|d| d.0)
        .unwrap_or(default_duration);
    let end = started.0 + jiff::SignedDuration::try_from(duration).unwrap_or_default();
    if now < end {
        return Next::EndAt(end);
    }
    let mut s = status;
    s.active = Some(0);
    s.ready = Some(0);
    s.completion_time = Some(t.clone());
    if job
        .annotations()
        .get(OUTCOME_ANNOTATION)
        .map(String::as_str)
        == Some("Failed")
    {
        s.failed = Some(pods);
        set_condition(
            &mut s,
            "FailureTarget",
            "True",
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
            &t,
        );
        set_condition(
            &mut s,
            "Failed",
            "True",
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
            &t,
        );
        s.completion_time = None;
    } else {
        s.succeeded = Some(spec.completions.unwrap_or(pods));
        set_condition(
            &mut s,
            "SuccessCriteriaMet",
            "True",
            "CompletionsReached",
            "Reached expected number of succeeded pods",
            &t,
        );
        set_condition(
            &mut s,
            "Complete",
            "True",
            "CompletionsReached",
            "Reached expected number of succeeded pods",
            &t,
        );
    }
    Next::Write(s)
}

fn set_condition(
    s: &mut JobStatus,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    t: &Time,
) {
    let conds = s.conditions.get_or_insert_with(Vec::new);
    let new = JobCondition {
        type_: type_.into(),
        status: status.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_probe_time: Some(t.clone()),
        last_transition_time: Some(t.clone()),
    };
    match conds.iter_mut().find(|c| c.type_ == type_) {
        Some(c) => {
            if c.status == status {
                return;
            }
            *c = new;
        }
        None => conds.push(new),
    }
}

#[cfg(test)]
#[path = "job_runner_tests.rs"]
mod tests;
