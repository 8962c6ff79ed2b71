//! The fake job runner: in an embedded world nothing runs pods, so this component plays the Job
//! controller and the kubelet for batch/v1 Jobs. An unsuspended Job becomes active (all its pods
//! running), and after its run time succeeds or fails, as the Job controller would report it.
//! Suspending a Job makes it inactive again, and a later start runs it from the beginning.
//!
//! Per Job, the annotations `tollgate.dev/run-duration` (e.g. `90s`) and
//! `tollgate.dev/run-outcome` (`Succeeded` or `Failed`) set what happens; the component's
//! configuration sets the default duration (`{duration: 30s}`).

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::ResourceExt;
use kube::api::{Api, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;

use crate::env::{Component, ComponentContext};
use crate::scenario::duration::VirtualDuration;

/// How long a Job runs.
pub const DURATION_ANNOTATION: &str = "tollgate.dev/run-duration";
/// How a Job ends: `Succeeded` (default) or `Failed`.
pub const OUTCOME_ANNOTATION: &str = "tollgate.dev/run-outcome";

pub struct JobRunner {
    default_duration: Duration,
}

impl Default for JobRunner {
    fn default() -> Self {
        JobRunner {
            default_duration: Duration::from_secs(60),
        }
    }
}

impl JobRunner {
    pub fn new(default_duration: Duration) -> Self {
        JobRunner { default_duration }
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
                    other => return Err(format!("unknown field `{other}` (known: duration)")),
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
        let default_duration = self.default_duration;
        Box::pin(async move { run(ctx, default_duration).await })
    }
}

async fn run(ctx: ComponentContext, default_duration: Duration) -> Result<(), String> {
    let clock = controller::Clock::anchored(ctx.start_wall, ctx.start);
    let api: Api<Job> = Api::all(ctx.client.clone());
    let mut events = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut jobs: BTreeMap<String, Job> = BTreeMap::new();
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
        let mut take = |e: Option<Result<Event<Job>, watcher::Error>>,
                        jobs: &mut BTreeMap<String, Job>|
         -> Result<(), String> {
            match e {
                None => Err("the Job watch ended".to_string()),
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "job runner watch");
                    Ok(())
                }
                Some(Ok(Event::Apply(job) | Event::InitApply(job))) => {
                    let key = key(&job);
                    changed.push(key.clone());
                    jobs.insert(key, job);
                    Ok(())
                }
                Some(Ok(Event::Delete(job))) => {
                    jobs.remove(&key(&job));
                    Ok(())
                }
                Some(Ok(_)) => Ok(()),
            }
        };
        if let Some(e) = event {
            take(e, &mut jobs)?;
        }
        while let Some(e) = events.next().now_or_never() {
            take(e, &mut jobs)?;
        }
        let now = tokio::time::Instant::now();
        let due: Vec<String> = ends
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        changed.extend(due);
        changed.sort();
        changed.dedup();
        for key in changed {
            ends.remove(&key);
            let Some(job) = jobs.get(&key).cloned() else {
                continue;
            };
            let wall = clock.now();
            match next_status(&job, wall, default_duration) {
                Next::Nothing => {}
                Next::EndAt(at) => {
                    ends.insert(key, clock.instant_of(at));
                }
                Next::Write(status) => {
                    let mut next = job.clone();
                    next.status = Some(status);
                    let api: Api<Job> =
                        Api::namespaced(ctx.client.clone(), &job.namespace().unwrap_or_default());
                    match api
                        .replace_status(&job.name_any(), &PostParams::default(), &next)
                        .await
                    {
                        Ok(new) => {
                            jobs.insert(key.clone(), new.clone());
                            if let Next::EndAt(at) = next_status(&new, wall, default_duration) {
                                ends.insert(key, clock.instant_of(at));
                            }
                        }
                        // A newer version is on its way through the watch.
                        Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => {}
                        Err(e) => return Err(format!("updating the status of Job {key}: {e}")),
                    }
                }
            }
        }
    }
}

fn key(job: &Job) -> String {
    format!("{}/{}", job.namespace().unwrap_or_default(), job.name_any())
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
    let t = Time(controller::clock::truncate_seconds(now));
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
