//! Running a scenario: each step's `try` operations in order through a `kube::Client`, `catch` when
//! one fails, `finally` always, while a recorder writes the trace. What each operation does is
//! its own (`ops`); this module only sequences them, each on the cluster it addresses.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::BoxFuture;

use super::components::Registry;
use super::context::Context;
use super::load::{Op, Scenario, Step};
use super::ops::OpResult;
use crate::env::TestEnv;
use crate::harness::controller::configuration_document;
use crate::invariant::{Invariant, Rules, Violation, WorkerAccess};
use crate::trace::{Recorder, Trace};
use crate::world::World;

/// How long the end of a scenario with watches waits for them to catch up (virtual time).
const WATCH_SETTLE: Duration = Duration::from_secs(5);

/// What running a scenario gave.
#[derive(Debug)]
pub struct Outcome {
    pub name: String,
    pub trace: Trace,
    pub failure: Option<Failure>,
    /// Steps that failed and were passed over ([`OnStepFailure::GoOn`]).
    pub passed_over: Vec<Failure>,
    /// Virtual time the scenario took.
    pub elapsed: Duration,
}

/// What a failed step does to the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnStepFailure {
    /// The run ends there: a scenario's own test.
    Stop,
    /// Under chaos, where the components are slowed by faults: a failed operation is tried again
    /// every second for up to [`PATIENCE`] (the scenario waits for the world to catch up), and a
    /// step that still fails is passed over; what counts is where the run ends. Asserts compare
    /// no instants ([`Context::any_instant`]). A broken invariant still ends it.
    GoOn,
}

/// How long an operation is tried again under [`OnStepFailure::GoOn`] (virtual time).
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Why a scenario failed, and where.
#[derive(Debug, Clone)]
pub struct Failure {
    pub file: String,
    pub line: u64,
    /// `step 3 "name"` or `step 3`.
    pub step: String,
    pub verb: &'static str,
    pub message: String,
    /// What `catch` collected.
    pub dumps: Vec<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{}:{}: {}, {}:",
            self.file, self.line, self.step, self.verb
        )?;
        for line in self.message.lines() {
            writeln!(f, "  {line}")?;
        }
        for dump in &self.dumps {
            writeln!(f, "  collected by catch:")?;
            for line in dump.lines() {
                writeln!(f, "    {line}")?;
            }
        }
        Ok(())
    }
}

/// Run a scenario in a fresh embedded environment on a paused (virtual-time) runtime of its own.
pub fn run_blocking(scenario: &Scenario, registry: &Registry) -> Result<Outcome, String> {
    on_virtual_time(&scenario.file, run(scenario, registry))?
}

/// Run `work` (for the scenario in `file`) on a paused (virtual-time) runtime of its own, with a
/// watchdog on the wall clock.
pub fn on_virtual_time<F: std::future::Future>(file: &str, work: F) -> Result<F::Output, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|e| format!("starting a tokio runtime: {e}"))?;
    let _watchdog = Watchdog::start(file);
    Ok(runtime.block_on(work))
}

/// Ends the process when a run outlasts [`WALL_LIMIT`]. Scenarios take milliseconds of wall time;
/// one that does not end has a task that never waits, which stops virtual time (it moves only
/// when every task waits), so nothing within the run can time out. Dropping it disarms it.
struct Watchdog {
    _done: std::sync::mpsc::Sender<()>,
}

/// How long a scenario may run on the wall clock.
const WALL_LIMIT: std::time::Duration = std::time::Duration::from_secs(300);

impl Watchdog {
    fn start(file: &str) -> Watchdog {
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let file = file.to_string();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                finished.recv_timeout(WALL_LIMIT)
            {
                eprintln!(
                    "{file}: still running after {} s of wall time; virtual time has stopped \
                     (a task that never waits)",
                    WALL_LIMIT.as_secs()
                );
                std::process::exit(101);
            }
        });
        Watchdog { _done: done }
    }
}

/// Run a scenario in a fresh embedded environment. Call it inside a paused runtime for virtual time.
pub async fn run(scenario: &Scenario, registry: &Registry) -> Result<Outcome, String> {
    let env = start_env(scenario, registry).await?;
    Ok(run_in(&env, scenario).await)
}

/// A fresh embedded environment with the scenario's components (and workers) running.
pub async fn start_env(scenario: &Scenario, registry: &Registry) -> Result<TestEnv, String> {
    let mut builder = TestEnv::builder();
    for (name, config) in &scenario.components {
        let component = registry
            .build(name, config)
            .map_err(|e| format!("{}: components.{name}: {e}", scenario.file))?;
        builder = builder.component(component);
    }
    for (worker, components) in &scenario.workers {
        let mut built = Vec::new();
        for (name, config) in components {
            built.push(registry.build(name, config).map_err(|e| {
                format!("{}: workers.{worker}.components.{name}: {e}", scenario.file)
            })?);
        }
        builder = builder.worker(worker, built);
    }
    builder.start().await.map_err(|e| e.to_string())
}

/// Run a scenario's steps against an environment that is already up.
pub async fn run_in(env: &dyn World, scenario: &Scenario) -> Outcome {
    run_in_with(env, scenario, OnStepFailure::Stop, &mut |_| {
        Box::pin(std::future::ready(Ok(())))
    })
    .await
}

/// What is done to the world before each step, by the step's index (chaos's crash-only
/// restarts); an error ends the run.
pub type BeforeStep<'a> = dyn FnMut(usize) -> BoxFuture<'a, Result<(), String>> + Send + 'a;

/// [`run_in`], saying what a failed step does, and doing `before_step` before each.
pub async fn run_in_with(
    env: &dyn World,
    scenario: &Scenario,
    on_failure: OnStepFailure,
    before_step: &mut BeforeStep<'_>,
) -> Outcome {
    let mut cx = Context::new(env, &scenario.namespace);
    cx.any_instant = on_failure == OnStepFailure::GoOn;
    let cluster = cx.cluster.clone();
    let feed = cluster.observe();
    let mut recorder = Recorder::new(feed, scenario.trace.clone(), env.start_time());
    for worker in env.worker_names() {
        match env.worker(&worker) {
            Ok(w) => recorder.add_worker(&worker, w.cluster().observe()),
            Err(e) => tracing::warn!(worker, error = %e, "not traced"),
        }
    }
    let start = cluster.now();
    let mut failure = None;
    let mut passed_over = Vec::new();
    let mut invariant = multikueue_invariant(env, scenario);
    if !cluster.virtual_time()
        && let Err(message) = watch_traced_kinds(&mut cx, scenario).await
    {
        failure = Some(Failure {
            file: scenario.file.clone(),
            line: 0,
            step: "start".into(),
            verb: "watch",
            message,
            dumps: Vec::new(),
        });
    }
    for (index, step) in scenario.steps.iter().enumerate() {
        if failure.is_some() {
            break;
        }
        let label = step_label(index, step);
        if let Err(message) = before_step(index).await {
            failure = Some(Failure {
                file: scenario.file.clone(),
                line: step.line,
                step: format!("step {label}"),
                verb: "before the step",
                message,
                dumps: Vec::new(),
            });
            break;
        }
        recorder.step(&label, cluster.now());
        if let Err(f) = run_step(&mut cx, &scenario.file, &label, step, on_failure).await {
            match on_failure {
                OnStepFailure::Stop => {
                    failure = Some(f);
                    break;
                }
                OnStepFailure::GoOn => passed_over.push(f),
            }
        }
        if let Some(invariant) = invariant.as_mut()
            && let Err(violation) = check_invariant(env, invariant).await
        {
            failure = Some(Failure {
                file: scenario.file.clone(),
                line: step.line,
                step: format!("step {label}"),
                verb: "invariant",
                message: violation.to_string(),
                dumps: Vec::new(),
            });
            break;
        }
    }
    let elapsed = cluster.now().duration_since(start).unsigned_abs();
    // Let everything already under way land (watch deliveries, the last writes of components)
    // before the trace is read: one tick of the clock, or with watches open, long enough for a
    // watch cut by a fault to come back.
    let settle = if cx.watches.is_empty() {
        Duration::from_millis(1)
    } else {
        WATCH_SETTLE
    };
    tokio::time::sleep(settle).await;
    for watch in &cx.watches {
        recorder.watch_log(&watch.name, watch.seen(), cluster.now());
    }
    Outcome {
        name: scenario.name.clone(),
        trace: recorder.finish(),
        failure,
        passed_over,
        elapsed,
    }
}

/// For a scenario with workers, MultiKueue's invariant under the manager controller's settings.
fn multikueue_invariant(env: &dyn World, scenario: &Scenario) -> Option<Invariant> {
    if env.worker_names().is_empty() {
        return None;
    }
    let config = scenario
        .components
        .get("controller")
        .and_then(configuration_document)
        .and_then(|c| serde_json::to_string(&c).ok())
        .and_then(|text| controller::config::parse(&text).ok())
        .unwrap_or_default();
    Some(Invariant::new(Rules::from_config(&config)))
}

/// Check MultiKueue's invariant on the world as it is now.
async fn check_invariant(env: &dyn World, invariant: &mut Invariant) -> Result<(), Violation> {
    let mut workers = BTreeMap::new();
    for name in env.worker_names() {
        let worker = env
            .worker(&name)
            .map_err(|e| Violation(format!("worker {name}: {e}")))?;
        let link_up = env.link(&name).map(|l| l.cut().is_none()).unwrap_or(true);
        workers.insert(
            name,
            WorkerAccess {
                client: worker.cluster().client(),
                link_up,
            },
        );
    }
    let cluster = env.cluster();
    invariant
        .check(cluster.now(), &cluster.client(), &workers)
        .await
}

fn step_label(index: usize, step: &Step) -> String {
    let name = step
        .name
        .clone()
        .or_else(|| Some(step.try_.first()?.action.describe()));
    let on = step
        .try_
        .first()
        .and_then(|op| op.cluster.as_deref())
        .filter(|_| step.name.is_none())
        .map(|worker| format!(" on {worker}"))
        .unwrap_or_default();
    match name {
        Some(name) => format!("{} {name}{on}", index + 1),
        None => format!("{}", index + 1),
    }
}

/// Run a step: its `try` operations until one fails, then `catch` if one did, then `finally`.
async fn run_step(
    cx: &mut Context<'_>,
    file: &str,
    label: &str,
    step: &Step,
    on_failure: OnStepFailure,
) -> Result<(), Failure> {
    let mut failed: Option<(&Op, String)> = None;
    for op in &step.try_ {
        let mut result = run_op(cx, op).await;
        if on_failure == OnStepFailure::GoOn {
            let deadline = tokio::time::Instant::now() + PATIENCE;
            while result.is_err() && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_secs(1)).await;
                result = run_op(cx, op).await;
            }
        }
        if let Err(message) = result {
            failed = Some((op, message));
            break;
        }
    }
    let mut dumps = Vec::new();
    if failed.is_some() {
        for op in &step.catch {
            if let Err(e) = cx.target(op.cluster.as_deref()) {
                dumps.push(format!("catch line {}: {e}", op.line));
                continue;
            }
            let collected = op.action.collect(cx).await;
            let _ = cx.target(None);
            match collected {
                Some(collected) => dumps.push(collected.unwrap_or_else(|e| e)),
                None => {
                    if let Err(e) = run_op(cx, op).await {
                        dumps.push(format!("catch line {}: {e}", op.line));
                    }
                }
            }
        }
    }
    for op in &step.finally {
        if let Err(message) = run_op(cx, op).await
            && failed.is_none()
        {
            failed = Some((op, format!("in finally: {message}")));
        }
    }
    match failed {
        None => Ok(()),
        Some((op, message)) => Err(Failure {
            file: file.to_string(),
            line: op.line,
            step: format!("step {label}"),
            verb: op.action.verb(),
            message,
            dumps,
        }),
    }
}

/// Run one operation on the cluster it addresses; then a component (of any cluster) that ended on
/// its own fails it.
async fn run_op(cx: &mut Context<'_>, op: &Op) -> OpResult {
    cx.target(op.cluster.as_deref())?;
    let result = op.action.run(cx).await;
    cx.target(None)?;
    result?;
    cx.env.check_components().map_err(|e| e.to_string())
}

/// Without a change feed (a real cluster), the trace is what a watch of each traced kind saw.
/// Kinds named without an apiVersion are found through discovery.
async fn watch_traced_kinds(cx: &mut Context<'_>, scenario: &Scenario) -> OpResult {
    let discovery = kube::Discovery::new(cx.cluster.client())
        .run()
        .await
        .map_err(|e| format!("discovery: {e}"))?;
    let mut watched = Vec::new();
    for kind in &scenario.trace {
        let api_version = if kind.api_version.is_empty() {
            discovery
                .groups()
                .flat_map(|g| g.recommended_resources())
                .find(|(ar, _)| ar.kind == kind.kind)
                .map(|(ar, _)| ar.api_version)
                .ok_or_else(|| format!("trace: the cluster serves no kind {}", kind.kind))?
        } else {
            kind.api_version.clone()
        };
        let name = format!("trace {api_version} {}", kind.kind);
        if watched.contains(&name) {
            continue;
        }
        watched.push(name.clone());
        cx.start_watch(&name, &api_version, &kind.kind, None)
            .await?;
    }
    Ok(())
}
