//! MultiKueue under chaos: a manager and its workers on virtual time, a few Jobs, and at random
//! steps (from a seeded ChaCha RNG) partitions that refuse or hang, heals, slow links, restarts of
//! the manager's or a worker's controller, and evictions on a worker (its copy deactivated, or
//! its Job deleted). After every step the invariant is checked; at the end every link heals,
//! time passes beyond `workerLostTimeout` and a GC interval, and every Job must have finished,
//! once, with nothing of it left on any worker.
//!
//! Each worker has room for one Job, so the Jobs spread over the workers and an eviction has
//! somewhere else to go; `workerLostTimeout` is [`WORKER_LOST_TIMEOUT`], shorter than a storm, so
//! lost workers are given up on and come back within a run. The invariant is checked right after
//! each step and every [`CHECK_EVERY`] of virtual time: it learns when a worker is lost and back
//! from the checks that see it.
//!
//! A run is a function of its seed: the same seed gives the same steps and the same trace (what
//! each step saw), so a failing seed is replayed with `cargo xtask chaos --multikueue --seed S`.
//!
//! [`world`] sets up the MultiKueue objects on a manager and its workers; the MultiKueue benchmark
//! (`e2e/benches/multikueue.rs`) builds its world with it too.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use api::kueue::Workload;
use futures::FutureExt;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams,
};
use kube::{Client, ResourceExt};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use crate::env::{Component, TestEnv};
use crate::harness::{ControllerComponent, Cut, JobRunner};
use crate::invariant::{Invariant, Rules, WorkerAccess, gather};

/// The MultiKueue AdmissionCheck (and MultiKueueConfig) of a [`world`].
pub const CHECK: &str = "multikueue";
/// The users' namespace of a [`world`]: its LocalQueue is [`QUEUE`].
pub const NAMESPACE: &str = "team";
pub const QUEUE: &str = "queue";
const ORIGIN: &str = api::constants::label::MULTIKUEUE_ORIGIN;
const MANAGED_BY: &str = "kueue.x-k8s.io/multikueue";

/// The shape of a world: its workers and what each can hold.
#[derive(Clone, Debug)]
pub struct Shape {
    pub workers: usize,
    /// CPUs of each worker's ClusterQueue (each Job asks for one).
    pub worker_cpus: u32,
    /// How long a Job runs once started.
    pub job_duration: Duration,
    pub config: api::config::Configuration,
}

/// `worker-1` .. `worker-n`.
pub fn worker_names(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("worker-{i}")).collect()
}

/// A manager and `shape.workers` workers, each with its controller (the workers' with a job
/// runner), the manager's MultiKueueClusters, MultiKueueConfig and AdmissionCheck, and on every
/// cluster the ClusterQueue `cq` (the manager's with the check) and the LocalQueue [`QUEUE`] in
/// [`NAMESPACE`]. Run on a paused runtime.
pub async fn world(shape: &Shape) -> Result<TestEnv, String> {
    let names = worker_names(shape.workers);
    let controller = |config: api::config::Configuration| {
        Arc::new(ControllerComponent::new(config)) as Arc<dyn Component>
    };
    let mut builder = TestEnv::builder().component(controller(shape.config.clone()));
    for name in &names {
        let runner = Arc::new(JobRunner::new(shape.job_duration)) as Arc<dyn Component>;
        builder = builder.worker(name, [controller(Default::default()), runner]);
    }
    let env = builder.start().await.map_err(|e| e.to_string())?;
    for name in &names {
        let worker = env.worker_client(name).map_err(|e| e.to_string())?;
        queues(&worker, &[], shape.worker_cpus).await?;
    }
    let manager = env.client();
    for name in &names {
        apply(
            &manager,
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueCluster",
                   "metadata": {"name": name},
                   "spec": {"clusterSource": {"kubeConfig": {"location": name, "locationType": "Secret"}}}}),
        )
        .await?;
    }
    apply(
        &manager,
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "MultiKueueConfig",
               "metadata": {"name": CHECK}, "spec": {"clusters": names}}),
    )
    .await?;
    apply(
        &manager,
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
               "metadata": {"name": CHECK},
               "spec": {"controllerName": MANAGED_BY,
                        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": CHECK}}}),
    )
    .await?;
    // The manager's quota lets every Job through: the workers decide.
    queues(&manager, &[CHECK], 100_000).await?;
    Ok(env)
}

/// The namespace, a flavor, the ClusterQueue `cq` with `cpus` and `checks`, and the LocalQueue.
async fn queues(client: &Client, checks: &[&str], cpus: u32) -> Result<(), String> {
    let checks: Vec<Value> = checks.iter().map(|c| json!({"name": c})).collect();
    for object in [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
               "metadata": {"name": "default"}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
               "metadata": {"name": "cq"},
               "spec": {"namespaceSelector": {},
                        "admissionChecksStrategy": {"admissionChecks": checks},
                        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default",
                            "resources": [{"name": "cpu", "nominalQuota": cpus.to_string()}]}]}]}}),
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
               "metadata": {"name": QUEUE, "namespace": NAMESPACE},
               "spec": {"clusterQueue": "cq"}}),
    ] {
        apply(client, object).await?;
    }
    Ok(())
}

/// A Job on the manager for MultiKueue: one pod asking for one CPU.
pub fn job(name: &str) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": name, "namespace": NAMESPACE,
                        "labels": {"kueue.x-k8s.io/queue-name": QUEUE}},
           "spec": {"managedBy": MANAGED_BY, "template": {"spec": {
               "restartPolicy": "Never",
               "containers": [{"name": "c", "image": "busybox",
                               "resources": {"requests": {"cpu": "1"}}}]}}}})
}

/// Server-side apply of one object given as JSON.
pub async fn apply(client: &Client, object: Value) -> Result<(), String> {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let (api_version, kind) = (s(&object["apiVersion"]), s(&object["kind"]));
    let name = s(&object["metadata"]["name"]);
    let namespace = object["metadata"]["namespace"].as_str().map(str::to_owned);
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", &api_version));
    let gvk = GroupVersionKind::gvk(group, version, &kind);
    let resource = ApiResource::from_gvk_with_plural(&gvk, &format!("{}s", kind.to_lowercase()));
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), &ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    };
    api.patch(
        &name,
        &PatchParams::apply("chaos").force(),
        &Patch::Apply(&object),
    )
    .await
    .map(|_| ())
    .map_err(|e| format!("applying {kind} {name}: {e}"))
}

/// The chaos runs' `workerLostTimeout` (the default is 15 minutes).
pub const WORKER_LOST_TIMEOUT: Duration = Duration::from_secs(180);

/// How long after the final heal every Job must have finished: far more than a lost worker's
/// timeout, the longest reconnect backoff (320 s), a GC interval, requeueing backoffs and a Job's
/// run again.
const SETTLE_FOR: Duration = Duration::from_secs(3600);

/// Virtual time between two checks of the invariant during a step's pause.
const CHECK_EVERY: Duration = Duration::from_secs(30);

/// How big a run is.
#[derive(Clone, Debug)]
pub struct Plan {
    pub workers: usize,
    pub jobs: usize,
    pub steps: usize,
    /// Virtual time between two steps: uniform in this range, in seconds.
    pub pause_seconds: (u64, u64),
    pub job_duration: Duration,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            workers: 3,
            jobs: 3,
            steps: 8,
            pause_seconds: (5, 120),
            job_duration: Duration::from_secs(300),
        }
    }
}

/// One chaos step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Submit(String),
    Partition(String, Cut),
    Heal(String),
    Slow(String, Duration),
    RestartManager,
    RestartWorker(String),
    /// The admins of the worker running a job deactivate its copy of the job's workload: its
    /// Kueue evicts it.
    Deactivate(String),
    /// The admins of the worker running a job delete it there.
    DeleteJob(String),
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Submit(job) => write!(f, "submit {job}"),
            Action::Partition(w, Cut::Refuse) => write!(f, "partition {w} (refused)"),
            Action::Partition(w, Cut::Hang) => write!(f, "partition {w} (hanging)"),
            Action::Heal(w) => write!(f, "heal {w}"),
            Action::Slow(w, d) => write!(f, "slow {w} by {}s", d.as_secs()),
            Action::RestartManager => write!(f, "restart the manager's controller"),
            Action::RestartWorker(w) => write!(f, "restart {w}'s controller"),
            Action::Deactivate(job) => write!(f, "deactivate {job}'s copy where it runs"),
            Action::DeleteJob(job) => write!(f, "delete {job} where it runs"),
        }
    }
}

/// What a run did and saw.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub seed: u64,
    /// Each step, with the virtual time it was taken at.
    pub steps: Vec<String>,
    /// After each step, what the world looked like (for the determinism check).
    pub trace: Vec<String>,
    pub failure: Option<String>,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            None => writeln!(f, "seed {}: ok", self.seed)?,
            Some(why) => writeln!(f, "seed {} FAILED: {why}", self.seed)?,
        }
        for (i, step) in self.steps.iter().enumerate() {
            writeln!(f, "  {:>2}. {step}", i + 1)?;
        }
        write!(
            f,
            "  replay: cargo xtask chaos --multikueue --seed {}",
            self.seed
        )
    }
}

/// The steps of a seed, drawn before the world starts: which action, and the pause after it.
pub fn draw(seed: u64, plan: &Plan) -> Vec<(Action, Duration)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let workers = worker_names(plan.workers);
    let jobs: Vec<String> = (1..=plan.jobs).map(|i| format!("job-{i}")).collect();
    let mut to_submit = jobs.iter();
    let mut steps = vec![];
    for i in 0..plan.steps {
        let w = workers[rng.random_range(0..workers.len())].clone();
        let job = jobs[rng.random_range(0..jobs.len())].clone();
        // Submissions come early, one of the first steps each, among the faults.
        let action = match (i % 2 == 0).then(|| to_submit.next()).flatten() {
            Some(job) => Action::Submit(job.clone()),
            None => match rng.random_range(0..10) {
                0 => Action::Partition(w, Cut::Refuse),
                1 => Action::Partition(w, Cut::Hang),
                2 | 3 => Action::Heal(w),
                4 => Action::Slow(w, Duration::from_secs(rng.random_range(1..=5))),
                5 => Action::RestartManager,
                6 => Action::RestartWorker(w),
                7 => Action::Deactivate(job),
                _ => Action::DeleteJob(job),
            },
        };
        let pause = rng.random_range(plan.pause_seconds.0..=plan.pause_seconds.1);
        steps.push((action, Duration::from_secs(pause)));
    }
    // Jobs the steps had no room for are submitted at the end.
    for job in to_submit {
        steps.push((Action::Submit(job.clone()), Duration::from_secs(1)));
    }
    steps
}

/// Run one seed. Needs a paused runtime of its own (see [`run_seed`]).
pub async fn run(seed: u64, plan: &Plan) -> Outcome {
    let mut outcome = Outcome {
        seed,
        steps: vec![],
        trace: vec![],
        failure: None,
    };
    let mut config = api::config::Configuration::default();
    // Short enough that storms outlast it: lost workers are given up on within a run.
    config.multi_kueue.worker_lost_timeout = api::config::GoDuration(WORKER_LOST_TIMEOUT);
    let gc = config.multi_kueue.gc_interval.0;
    let shape = Shape {
        workers: plan.workers,
        worker_cpus: 1,
        job_duration: plan.job_duration,
        config,
    };
    let env = match world(&shape).await {
        Ok(env) => env,
        Err(e) => {
            outcome.failure = Some(format!("setting up: {e}"));
            return outcome;
        }
    };
    let mut watch = Watch::new(&shape.config);
    env.advance(Duration::from_secs(30)).await;
    for (action, pause) in draw(seed, plan) {
        let at = env.elapsed().as_secs();
        outcome.steps.push(format!("{at:>5}s {action}"));
        let result = async {
            let found = take(&env, &action).await?;
            if let Some(step) = outcome.steps.last_mut() {
                step.push_str(&found);
            }
            // The invariant counts a worker's loss and return from the checks that see them:
            // one right after the step and one every CHECK_EVERY keep that close to when they
            // happened (a pause later the manager may rightly have given up on the worker).
            watch.check(&env).await?;
            let mut left = pause;
            while !left.is_zero() {
                let chunk = left.min(CHECK_EVERY);
                env.advance(chunk).await;
                left -= chunk;
                env.check_components().map_err(|e| e.to_string())?;
                watch.check(&env).await?;
            }
            watch.check(&env).await
        }
        .await;
        match result {
            Ok(seen) => outcome.trace.push(seen),
            Err(why) => {
                outcome.failure = Some(format!("after step {}: {why}", outcome.steps.len()));
                return outcome;
            }
        }
    }
    // Everything heals; the manager gets past a worker's loss and a GC interval, and the jobs
    // run to their end.
    let at = env.elapsed().as_secs();
    outcome
        .steps
        .push(format!("{at:>5}s heal everything and wait"));
    for w in env.worker_names() {
        if let Ok(link) = env.link(&w) {
            link.heal();
            link.set_latency(Duration::ZERO);
        }
    }
    // The longest reconnect backoff is 320 s. Once every job has finished and the workers hold
    // nothing of ours, nothing is left to check.
    let settle = SETTLE_FOR;
    let mut waited = Duration::ZERO;
    let mut last = Err(String::new());
    while waited < settle {
        env.advance(gc).await;
        waited += gc;
        if let Err(why) = watch.check(&env).await {
            outcome.failure = Some(format!("after healing: {why}"));
            return outcome;
        }
        last = finished_once(&env, plan).await;
        if last.is_ok() {
            break;
        }
    }
    match last {
        Ok(seen) => outcome.trace.push(seen),
        Err(why) => outcome.failure = Some(format!("at the end: {why}")),
    }
    outcome
}

/// Run one seed on a paused runtime of its own; a panic is a failure of the seed.
pub fn run_seed(seed: u64, plan: &Plan) -> Outcome {
    let failed = |why: String| Outcome {
        seed,
        steps: draw(seed, plan)
            .into_iter()
            .map(|(a, _)| a.to_string())
            .collect(),
        trace: vec![],
        failure: Some(why),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
    {
        Ok(r) => r,
        Err(e) => return failed(format!("no runtime: {e}")),
    };
    let result = runtime.block_on(async {
        std::panic::AssertUnwindSafe(run(seed, plan))
            .catch_unwind()
            .await
    });
    result.unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        failed(format!("panicked: {why}"))
    })
}

/// Run `seeds` on `threads` threads; outcomes in seed order.
pub fn run_seeds(seeds: &[u64], plan: &Plan, threads: usize) -> Vec<Outcome> {
    let threads = threads.max(1);
    let mut outcomes: Vec<Outcome> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let mine: Vec<u64> = seeds.iter().copied().skip(t).step_by(threads).collect();
                scope.spawn(move || {
                    mine.into_iter()
                        .map(|seed| run_seed(seed, plan))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    outcomes.sort_by_key(|o| o.seed);
    outcomes
}

/// Take a step; returns what it found, for the step list (empty for most).
async fn take(env: &TestEnv, action: &Action) -> Result<String, String> {
    let e = |e: crate::EnvError| e.to_string();
    match action {
        Action::Submit(job_name) => apply(&env.client(), job(job_name))
            .await
            .map(|()| String::new()),
        Action::Partition(w, cut) => {
            env.link(w).map_err(e)?.partition(*cut, None);
            Ok(String::new())
        }
        Action::Heal(w) => {
            env.link(w).map_err(e)?.heal();
            Ok(String::new())
        }
        Action::Slow(w, d) => {
            env.link(w).map_err(e)?.set_latency(*d);
            Ok(String::new())
        }
        Action::RestartManager => env
            .restart("controller")
            .await
            .map_err(e)
            .map(|()| String::new()),
        Action::RestartWorker(w) => env
            .worker(w)
            .map_err(e)?
            .restart("controller")
            .await
            .map_err(e)
            .map(|()| String::new()),
        Action::Deactivate(job) => {
            let Some(w) = running_on(env, job).await? else {
                return Ok(" (it runs nowhere)".into());
            };
            let client = env.worker_client(&w).map_err(e)?;
            let Some(copy) = copy_of(&client, job).await? else {
                return Ok(format!(" (no copy on {w})"));
            };
            let api: Api<Workload> = Api::namespaced(client, NAMESPACE);
            let patch = Patch::Merge(json!({"spec": {"active": false}}));
            api.patch(&copy, &PatchParams::default(), &patch)
                .await
                .map(|_| format!(": on {w}"))
                .or_else(|e| not_found(e).map(|()| format!(" (gone from {w})")))
        }
        Action::DeleteJob(job) => {
            let Some(w) = running_on(env, job).await? else {
                return Ok(" (it runs nowhere)".into());
            };
            let api: Api<Job> = Api::namespaced(env.worker_client(&w).map_err(e)?, NAMESPACE);
            api.delete(job, &DeleteParams::background())
                .await
                .map(|_| format!(": on {w}"))
                .or_else(|e| not_found(e).map(|()| format!(" (gone from {w})")))
        }
    }
}

/// The first worker, by name, where `job` runs (seen from inside the worker).
async fn running_on(env: &TestEnv, job: &str) -> Result<Option<String>, String> {
    for w in env.worker_names() {
        let client = env.worker_client(&w).map_err(|e| e.to_string())?;
        let api: Api<Job> = Api::namespaced(client, NAMESPACE);
        let found = api.get_opt(job).await.map_err(|e| e.to_string())?;
        if found.is_some_and(|j| j.labels().contains_key(ORIGIN) && running(&j)) {
            return Ok(Some(w));
        }
    }
    Ok(None)
}

/// Whether a Job has started and not ended.
fn running(job: &Job) -> bool {
    let suspended = job.spec.as_ref().and_then(|s| s.suspend).unwrap_or(false);
    let ended = job
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
        });
    !suspended && !ended
}

fn not_found(e: kube::Error) -> Result<(), String> {
    match e {
        kube::Error::Api(r) if r.code == 404 => Ok(()),
        e => Err(e.to_string()),
    }
}

/// The worker's copy of the manager's workload of `job`, by name.
async fn copy_of(worker: &Client, job: &str) -> Result<Option<String>, String> {
    let api: Api<Workload> = Api::namespaced(worker.clone(), NAMESPACE);
    let list = api
        .list(&Default::default())
        .await
        .map_err(|e| e.to_string())?;
    Ok(list
        .items
        .into_iter()
        .filter(|w| w.labels().contains_key(ORIGIN))
        .map(|w| w.name_any())
        .find(|name| owned_by(name, job)))
}

/// Whether a workload name is that of `job`'s workload (`job-<name>-<hash>`).
fn owned_by(workload: &str, job: &str) -> bool {
    workload
        .strip_prefix("job-")
        .and_then(|rest| rest.strip_prefix(job))
        .is_some_and(|rest| rest.starts_with('-') && !rest[1..].contains('-'))
}

/// The invariant ([`crate::invariant`]) across steps, and what each check saw, for the trace.
struct Watch {
    invariant: Invariant,
}

impl Watch {
    fn new(config: &api::config::Configuration) -> Watch {
        Watch {
            invariant: Invariant::new(Rules::from_config(config)),
        }
    }

    /// Check the invariant now; returns what the world looks like: per worker whether the
    /// manager reaches it and its objects of ours (`+`: a running Job).
    async fn check(&mut self, env: &TestEnv) -> Result<String, String> {
        let mut workers = BTreeMap::new();
        for w in env.worker_names() {
            let access = WorkerAccess {
                client: env.worker_client(&w).map_err(|e| e.to_string())?,
                link_up: env.link(&w).map_err(|e| e.to_string())?.cut().is_none(),
            };
            workers.insert(w, access);
        }
        let snapshot = gather(&env.client(), &workers, &self.invariant.rules().origin)
            .await
            .map_err(|e| format!("reading the clusters: {e}"))?;
        let now = env.cluster().now();
        self.invariant
            .observe(now, &snapshot)
            .map_err(|v| v.to_string())?;
        let mut seen = vec![];
        for (w, view) in &snapshot.workers {
            let objects: Vec<String> = view
                .objects
                .iter()
                .map(|o| format!("{}:{}{}", o.kind, o.key, if o.running { "+" } else { "" }))
                .collect();
            let state = if view.connected { "up" } else { "down" };
            seen.push(format!("{w}({state})[{}]", objects.join(",")));
        }
        Ok(format!("{}s {}", env.elapsed().as_secs(), seen.join(" ")))
    }
}

/// What a user expects once the storm is over: each Job complete on the manager, with one
/// `Complete` condition and one success, its workload Finished; nothing of it left on workers.
async fn finished_once(env: &TestEnv, plan: &Plan) -> Result<String, String> {
    let jobs: Api<Job> = Api::namespaced(env.client(), NAMESPACE);
    let workloads: Api<Workload> = Api::namespaced(env.client(), NAMESPACE);
    let workloads = workloads
        .list(&Default::default())
        .await
        .map_err(|e| e.to_string())?
        .items;
    let mut seen = vec![];
    for i in 1..=plan.jobs {
        let name = format!("job-{i}");
        let job = jobs
            .get_opt(&name)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{name} is gone from the manager"))?;
        let status = job.status.clone().unwrap_or_default();
        let conditions = status.conditions.unwrap_or_default();
        let complete = conditions
            .iter()
            .filter(|c| c.type_ == "Complete" && c.status == "True")
            .count();
        let wl = workloads
            .iter()
            .find(|w| owned_by(&w.name_any(), &name))
            .ok_or_else(|| format!("{name} has no workload on the manager"))?;
        if complete != 1 || status.succeeded != Some(1) {
            let cluster = wl.status.as_ref().and_then(|s| s.cluster_name.clone());
            let there = match cluster.as_deref().map(|c| env.worker_client(c)) {
                Some(Ok(client)) => holds(&client).await?,
                _ => String::new(),
            };
            return Err(format!(
                "{name} did not finish once: {complete} Complete conditions, succeeded {:?}; \
                 its workload: {}; its cluster holds: {there}",
                status.succeeded,
                describe(wl)
            ));
        }
        let finished = wl.status.as_ref().is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Finished" && c.status == "True")
        });
        if !finished {
            return Err(format!("{name}'s workload is not Finished"));
        }
        let cluster = wl.status.as_ref().and_then(|s| s.cluster_name.clone());
        seen.push(format!("{name}@{}", cluster.unwrap_or_default()));
    }
    for w in env.worker_names() {
        let client = env.worker_client(&w).map_err(|e| e.to_string())?;
        let jobs: Api<Job> = Api::namespaced(client.clone(), NAMESPACE);
        let left: Vec<String> = jobs
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .iter()
            .map(|j| j.name_any())
            .collect();
        let copies: Api<Workload> = Api::namespaced(client, NAMESPACE);
        let copies = copies
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .len();
        if !left.is_empty() || copies > 0 {
            return Err(format!(
                "{w} still has jobs {left:?} and {copies} workloads after every job finished"
            ));
        }
    }
    Ok(seen.join(" "))
}

/// A manager workload as a user reads it: its MultiKueue check, cluster and true conditions.
fn describe(wl: &Workload) -> String {
    let Some(status) = &wl.status else {
        return "no status".into();
    };
    let checks: Vec<String> = status
        .admission_checks
        .iter()
        .map(|c| format!("check {} {} \"{}\"", c.name, c.state, c.message))
        .collect();
    let conditions: Vec<String> = status
        .conditions
        .iter()
        .filter(|c| c.status == "True")
        .map(|c| format!("{} ({}: {})", c.type_, c.reason, c.message))
        .collect();
    format!(
        "{}; cluster {:?}; active {:?}; {}",
        checks.join(", "),
        status.cluster_name,
        wl.spec.active,
        conditions.join(", ")
    )
}

/// A worker's Jobs and Workloads in the users' namespace, by name.
async fn holds(worker: &Client) -> Result<String, String> {
    let jobs: Api<Job> = Api::namespaced(worker.clone(), NAMESPACE);
    let copies: Api<Workload> = Api::namespaced(worker.clone(), NAMESPACE);
    let mut names: Vec<String> = jobs
        .list(&Default::default())
        .await
        .map_err(|e| e.to_string())?
        .items
        .iter()
        .map(|j| {
            format!(
                "Job {} (uid {}, status {}{}{})",
                j.name_any(),
                j.uid().unwrap_or_default(),
                serde_json::to_string(&j.status).unwrap_or_default(),
                if running(j) { ", running" } else { "" },
                if j.spec.as_ref().and_then(|s| s.suspend) == Some(true) {
                    ", suspended"
                } else {
                    ""
                }
            )
        })
        .collect();
    // What a stuck job's owner needs to know: who controls each copy and where it stands.
    names.extend(
        copies
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .iter()
            .map(|w| {
                let owners: Vec<String> = w
                    .owner_references()
                    .iter()
                    .map(|o| format!("{} {}", o.kind, o.uid))
                    .collect();
                let conditions: Vec<String> = w
                    .status
                    .iter()
                    .flat_map(|s| &s.conditions)
                    .filter(|c| c.status == "True")
                    .map(|c| format!("{} {}: {}", c.type_, c.reason, c.message))
                    .collect();
                format!(
                    "Workload {} (owners [{}], true: [{}])",
                    w.name_any(),
                    owners.join(", "),
                    conditions.join(", ")
                )
            }),
    );
    Ok(if names.is_empty() {
        "nothing".into()
    } else {
        names.join(", ")
    })
}
