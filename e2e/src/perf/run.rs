//! One benchmark run: an embedded fake API server, Tollgate's controller, and this task playing
//! Kueue's test runner. It creates the ClusterQueues, then each Workload at its planned virtual
//! time, watches Workloads as the runner's recorder does, and marks each admitted
//! Workload `Finished` once its runtime has passed since it was seen admitted.

use std::collections::{BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::time::Duration;

use api::constants::workload_condition::{FINISHED, PREEMPTED};
use api::kueue::{ClusterQueue, Workload};
use controller::lean::Lean;
use controller::workload::conditions;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;
use support::mirror::{Mirror, key_of};
use support::quantity::{Amount, to_units};
use tokio::time::Instant;

use super::config::{FLAVOR, Plan, QueuePlan, WorkloadPlan};
use super::recorder::{Recorder, Summary, Transition, WorkloadState};
use crate::env::TestEnv;
use crate::harness::ControllerComponent;

/// Labels Kueue's generator puts on each Workload.
pub const RUNNING_TIME_LABEL: &str = "kueue.x-k8s.io/performance-scheduler-running-ms";
pub const CLASS_LABEL: &str = "kueue.x-k8s.io/performance-scheduler-class";

/// The condition the runner sets, as Kueue's runner words it.
const FINISHED_REASON: &str = "ByTest";
const FINISHED_MESSAGE: &str = "By test runner";

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Env(#[from] crate::env::EnvError),
    #[error("{action}: {error}")]
    Api { action: String, error: kube::Error },
    #[error("a watch ended: {0}")]
    Watch(String),
    #[error(
        "{changes} workload changes at {at:?} of virtual time without time passing: the \
         controller is not settling (e.g. preempting and readmitting in a loop)"
    )]
    Livelock { at: Duration, changes: usize },
    #[error(
        "after {limit:?} of virtual time only {finished} of {total} workloads had finished \
         ({running} running, {waiting} waiting)"
    )]
    TimedOut {
        limit: Duration,
        finished: usize,
        total: usize,
        running: usize,
        waiting: usize,
    },
}

fn api_error(action: impl Into<String>) -> impl FnOnce(kube::Error) -> RunError {
    let action = action.into();
    move |error| RunError::Api { action, error }
}

/// What a run measured.
pub struct RunReport {
    pub summary: Summary,
    /// The world as the run left it. Dropping it stops the controller and frees every object
    /// (about a second after the baseline); a benchmark about to exit can skip that.
    pub world: TestEnv,
}

/// Where a run is, reported every [`PROGRESS_EVERY`] of virtual time.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Virtual time since the start.
    pub at: Duration,
    pub created: usize,
    pub finished: usize,
    pub running: usize,
    pub waiting: usize,
}

pub const PROGRESS_EVERY: Duration = Duration::from_secs(10);

/// Runs `plan` to completion on the current runtime. Under a paused runtime every wait is
/// virtual; `limit` is how much virtual time the run may take before it is called stuck.
pub async fn run(plan: &Plan, limit: Duration) -> Result<RunReport, RunError> {
    run_with_progress(plan, limit, |_| {}).await
}

/// [`run`], calling `progress` as virtual time passes.
pub async fn run_with_progress(
    plan: &Plan,
    limit: Duration,
    mut progress: impl FnMut(Progress),
) -> Result<RunReport, RunError> {
    let env = TestEnv::builder()
        .component(Arc::new(ControllerComponent::new(
            api::config::Configuration::default(),
        )))
        .build()?;
    let client = env.client();
    let start = Instant::now();
    let since_start = move || Instant::now().saturating_duration_since(start);

    let mut recorder = Recorder::default();
    create_queues(&client, &plan.queues, &mut recorder).await?;

    // Lean, as the controller reads them: the runner has no use for managedFields either.
    let workloads =
        controller::lean::watcher::<Workload>(client.clone(), Default::default()).default_backoff();
    let mut events = workloads.boxed();

    let (start_wall, anchor) = env.server().clock().anchor();
    let mut runner = Runner {
        client: client.clone(),
        clock: support::Clock::anchored(start_wall, anchor),
        workloads: Mirror::default(),
        ends: BTreeSet::new(),
        end_of: HashMap::new(),
    };
    let mut next = 0;
    let deadline = start + limit;
    let mut next_progress = PROGRESS_EVERY;
    // Workload changes seen at one instant of virtual time: a controller that never settles
    // would otherwise spin forever without the clock moving.
    let livelock_after = (plan.workloads.len() * 20).max(10_000);
    let mut instant = (Duration::ZERO, 0usize);
    while recorder.finished() < plan.workloads.len() {
        if since_start() >= next_progress {
            let (running, waiting) = recorder.running_and_waiting();
            progress(Progress {
                at: since_start(),
                created: recorder.created_count(),
                finished: recorder.finished(),
                running,
                waiting,
            });
            next_progress = since_start() + PROGRESS_EVERY;
        }
        let next_create = plan.workloads.get(next).map(|w| start + w.at);
        let next_end = runner.ends.first().map(|(at, _)| *at);
        let wake = [next_create, next_end].into_iter().flatten().min();
        let event = tokio::select! {
            biased;
            e = events.next() => Some(e),
            _ = sleep_until_some(wake) => None,
            _ = tokio::time::sleep_until(deadline) => {
                let (running, waiting) = recorder.running_and_waiting();
                return Err(RunError::TimedOut {
                    limit,
                    finished: recorder.finished(),
                    total: plan.workloads.len(),
                    running,
                    waiting,
                });
            }
        };
        let mut seen = usize::from(event.is_some());
        if let Some(e) = event {
            runner.take(e, since_start(), &mut recorder)?;
        }
        while let Some(e) = events.next().now_or_never() {
            runner.take(e, since_start(), &mut recorder)?;
            seen += 1;
        }
        let now = since_start();
        instant = if instant.0 == now {
            (now, instant.1 + seen)
        } else {
            (now, seen)
        };
        if instant.1 > livelock_after {
            return Err(RunError::Livelock {
                at: now,
                changes: instant.1,
            });
        }
        // Everything due at this instant goes out at once, as Kueue's runner creates and
        // finishes workloads from concurrent goroutines: the controller sees them together.
        let mut due = vec![];
        while let Some(w) = plan
            .workloads
            .get(next)
            .filter(|w| start + w.at <= Instant::now())
        {
            let key = format!("{}/{}", w.queue, w.name);
            recorder.created(
                &key,
                &w.queue,
                &w.class,
                cpu_milli(&w.request),
                since_start(),
            );
            due.push(w);
            next += 1;
        }
        let creates =
            futures::future::try_join_all(due.iter().map(|w| create_workload(&client, w)));
        futures::future::try_join(creates, runner.finish_due()).await?;
        env.check_components()?;
    }
    Ok(RunReport {
        summary: recorder.summary(),
        world: env,
    })
}

async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

type Observed = Result<Event<Workload>, watcher::Error>;

/// The runner's side: the running workloads as its watch shows them, and when each one ends.
struct Runner {
    client: Client,
    clock: support::Clock,
    workloads: Mirror<Workload>,
    ends: BTreeSet<(Instant, String)>,
    end_of: HashMap<String, Instant>,
}

impl Runner {
    fn take(
        &mut self,
        event: Option<Observed>,
        at: Duration,
        recorder: &mut Recorder,
    ) -> Result<(), RunError> {
        let event = match event {
            None => return Err(RunError::Watch("the event stream ended".into())),
            Some(Err(e)) => {
                tracing::warn!(error = %e, "benchmark watch");
                return Ok(());
            }
            Some(Ok(event)) => event,
        };
        for (old, new) in self.workloads.apply_event(event) {
            match (old, new) {
                (_, Some(wl)) => {
                    self.observe(&wl, at, recorder);
                    // Only running workloads are finished later; keeping the 15,000 others
                    // cost 140 MiB and a sixth of the run's time.
                    if !self.end_of.contains_key(&key_of(wl.as_ref())) {
                        self.workloads.delete(&wl);
                    }
                }
                // Deleted, possibly while the watch was down: nothing left to finish.
                (Some(old), None) => self.cancel(&key_of(old.as_ref())),
                (None, None) => {}
            }
        }
        Ok(())
    }

    /// A new version of a workload: starts its run when it is newly admitted, stops it when it
    /// no longer is.
    fn observe(&mut self, wl: &Workload, at: Duration, recorder: &mut Recorder) {
        let key = key_of(wl);
        match recorder.observe_workload(&key, at, state_of(wl)) {
            Transition::Admitted => {
                let runtime = wl
                    .labels()
                    .get(RUNNING_TIME_LABEL)
                    .and_then(|ms| ms.parse().ok())
                    .map(Duration::from_millis)
                    .unwrap_or_default();
                let end = Instant::now() + runtime;
                self.ends.insert((end, key.clone()));
                self.end_of.insert(key, end);
            }
            Transition::Unadmitted => self.cancel(&key),
            Transition::None => {}
        }
    }

    fn cancel(&mut self, key: &str) {
        if let Some(end) = self.end_of.remove(key) {
            self.ends.remove(&(end, key.to_string()));
        }
    }

    /// Marks every workload whose runtime has passed `Finished`, as Kueue's runner does.
    async fn finish_due(&mut self) -> Result<(), RunError> {
        let now = Instant::now();
        let mut due = vec![];
        while let Some((at, key)) = self.ends.first().cloned() {
            if at > now {
                break;
            }
            self.cancel(&key);
            due.extend(self.workloads.get(&key).cloned());
        }
        futures::future::try_join_all(due.into_iter().map(|wl| self.finish(wl))).await?;
        Ok(())
    }

    async fn finish(&self, mut wl: Workload) -> Result<(), RunError> {
        let ns = wl.namespace().unwrap_or_default();
        let name = wl.name_any();
        let api: Api<Lean<Workload>> = Api::namespaced(self.client.clone(), &ns);
        // A conflict means the controller wrote in between: finish the newer version if it is
        // still admitted, as the runner's update would be retried.
        for _ in 0..5 {
            let now = self.clock.now_time();
            let mut status = wl.status.clone().unwrap_or_default();
            let mut finished =
                conditions::new(FINISHED, true, FINISHED_REASON, FINISHED_MESSAGE, &now);
            finished.observed_generation = wl.metadata.generation;
            conditions::set(&mut status.conditions, finished);
            wl.status = Some(status);
            match api
                .replace_status(&name, &PostParams::default(), Lean::of(&wl))
                .await
            {
                Ok(_) => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
                Err(kube::Error::Api(s)) if s.code == 409 => {
                    wl = api
                        .get(&name)
                        .await
                        .map_err(api_error(format!("reading Workload {ns}/{name}")))?
                        .0;
                    if !controller::workload::is_admitted(&wl) {
                        return Ok(());
                    }
                }
                Err(e) => return Err(api_error(format!("finishing Workload {ns}/{name}"))(e)),
            }
        }
        Ok(())
    }
}

fn state_of(wl: &Workload) -> WorkloadState {
    WorkloadState {
        admitted: controller::workload::is_admitted(wl),
        evicted: controller::workload::is_evicted(wl),
        finished: controller::workload::is_finished(wl),
        preempted: preemption_fingerprint(wl),
    }
}

/// A hash of the workload's `Preempted` condition while it is True; each preemption written
/// changes its time or its message (which names the preemptor).
fn preemption_fingerprint(wl: &Workload) -> Option<u64> {
    let c = wl
        .status
        .as_ref()
        .and_then(|s| conditions::find(&s.conditions, PREEMPTED))
        .filter(|c| c.status == "True")?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (c.last_transition_time.0, &c.message).hash(&mut h);
    Some(h.finish())
}

/// A quantity in milli-CPU (the plan's quantities were checked when it was read).
fn cpu_milli(quantity: &str) -> i64 {
    Amount::parse(quantity)
        .map(|a| to_units("cpu", &a))
        .unwrap_or(0)
}

fn object<K: DeserializeOwned>(value: serde_json::Value) -> K {
    serde_json::from_value(value).expect("a well-formed object literal")
}

async fn create<K>(api: Api<Lean<K>>, obj: K) -> Result<(), RunError>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::Serialize + DeserializeOwned,
    K: std::fmt::Debug,
{
    let what = format!("creating {} {}", K::kind(&()), obj.name_any());
    api.create(&PostParams::default(), Lean::of(&obj))
        .await
        .map(|_| ())
        .map_err(api_error(what))
}

async fn create_queues(
    client: &Client,
    queues: &[QueuePlan],
    recorder: &mut Recorder,
) -> Result<(), RunError> {
    create::<api::kueue::ResourceFlavor>(
        Api::all(client.clone()),
        object(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": FLAVOR}, "spec": {},
        })),
    )
    .await?;
    for q in queues {
        let mut cpu = json!({"name": "cpu", "nominalQuota": q.nominal_quota});
        if let Some(limit) = &q.borrowing_limit {
            cpu["borrowingLimit"] = json!(limit);
        }
        create::<ClusterQueue>(
            Api::all(client.clone()),
            object(json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                "metadata": {"name": q.name, "labels": {CLASS_LABEL: q.class}},
                "spec": {
                    "cohortName": q.cohort,
                    "resourceGroups": [{
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": FLAVOR, "resources": [cpu]}],
                    }],
                    "preemption": {
                        "reclaimWithinCohort": q.reclaim_within_cohort,
                        "withinClusterQueue": q.within_cluster_queue,
                    },
                },
            })),
        )
        .await?;
        create::<Namespace>(
            Api::all(client.clone()),
            object(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": q.name}})),
        )
        .await?;
        create::<api::kueue::LocalQueue>(
            Api::namespaced(client.clone(), &q.name),
            object(json!({
                "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
                "metadata": {"name": q.name, "namespace": q.name},
                "spec": {"clusterQueue": q.name},
            })),
        )
        .await?;
        recorder.add_queue(&q.name, &q.class, cpu_milli(&q.nominal_quota));
    }
    Ok(())
}

async fn create_workload(client: &Client, w: &WorkloadPlan) -> Result<(), RunError> {
    create::<Workload>(
        Api::namespaced(client.clone(), &w.queue),
        object(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {
                "name": w.name, "namespace": w.queue,
                "labels": {
                    RUNNING_TIME_LABEL: w.runtime.as_millis().to_string(),
                    CLASS_LABEL: w.class,
                },
            },
            "spec": {
                "queueName": w.queue,
                "priority": w.priority,
                "podSets": [{
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {
                        "restartPolicy": "Never",
                        "containers": [{
                            "name": "c",
                            "resources": {"requests": {"cpu": w.request}},
                        }],
                    }},
                }],
            },
        })),
    )
    .await
}
