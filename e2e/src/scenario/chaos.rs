//! Scenarios under chaos (`cargo xtask chaos --scenarios`): a scenario with components runs once
//! without faults, then once per seed with [`Noise`] on its components' own requests, and every
//! run must end where the fault-free one did.
//!
//! Only the components' requests fail (they carry [`COMPONENT_USER_AGENT`]); the scenario's own
//! writes always land, so each run is given the same work. An operation that fails under faults
//! (a check that missed its moment) is tried again, then its step passed over, and asserts
//! compare no instants ([`OnStepFailure::GoOn`]); MultiKueue's invariant is still checked after
//! every step and ends the run when broken. After the steps the noise stops and the world
//! settles for [`SETTLE`] of virtual time, then what each cluster holds is compared, with what
//! depends on timing blanked (times, resourceVersions, uids, and names derived from uids, such as
//! a Job's Workload's, which follow the order of creations), together with how often each object was created and each Workload
//! admitted: a duplicate ProvisioningRequest, a leaked PodTemplate, a Workload admitted twice are
//! all differences. Which worker a MultiKueue Workload ends on may differ (the first to admit
//! wins): the workers' Jobs and Workloads are compared as one pool ([`pooled`]).
//!
//! Crash-only runs use the same comparison without faults: the controller and the fake autoscaler
//! are killed on every cluster just before one step and started afresh ([`Disturbance`]), once per
//! step, and each run must end where the uninterrupted one does.
//!
//! Faults draw from per-cluster generators seeded by the seed, and time is virtual, so a run is an
//! exact replay, in this process or another: the same requests draw the same faults
//! (`RUST_LOG=fake_apiserver::faults=trace` lists them; test `a_seed_replays_exactly`).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use fake_apiserver::faults::{FaultId, Judgement};
use fake_apiserver::{ChangeFeed, ChangeType, DropWhen, FaultRule, Faults};
use futures::future::BoxFuture;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::components::Registry;
use super::load::Scenario;
use super::run::{Failure, OnStepFailure, on_virtual_time, run_in_with, start_env};
use crate::cluster::COMPONENT_USER_AGENT;
use crate::env::{MANAGER, TestEnv};
use crate::json::diff;

/// How long the world runs without faults after the steps, before its state is read: far beyond
/// the components' back-offs (the controller's tops out at 32 s, a watch's at 30 s), and long
/// enough for every Job of the scenarios (the longest runs an hour) to finish: what is compared
/// is where the world comes to rest.
pub const SETTLE: Duration = Duration::from_secs(2 * 3600);

/// The seeds `cargo test` runs for every scenario with components: a quick look, in a debug
/// build. `.ci/run` runs 10 in an optimised build (`cargo xtask chaos --scenarios --seeds 10`),
/// and `cargo xtask chaos --scenarios` 200 by default.
pub const TEST_SEEDS: u64 = 3;

/// Kinds left out of the comparison: their count and content record how a run went (each
/// retry's Event, each renewal of a Lease), not where it ended.
const UNCOMPARED_KINDS: [&str; 2] = ["Event", "Lease"];

/// The components crash-only runs kill and start again: the product's, not the harness's (the
/// job runner plays Kubernetes' own controllers and the kubelet).
pub const RESTARTED: [&str; 2] = ["controller", "fake-autoscaler"];

/// Whether chaos applies: a scenario without components makes every request itself.
pub fn applies(scenario: &Scenario) -> bool {
    !scenario.components.is_empty() || !scenario.workers.is_empty()
}

/// Whether crash-only runs apply: the scenario runs a component of [`RESTARTED`], on the manager
/// or on a worker.
pub fn restarts_apply(scenario: &Scenario) -> bool {
    let runs = |components: &BTreeMap<String, Value>| {
        RESTARTED.iter().any(|name| components.contains_key(*name))
    };
    runs(&scenario.components) || scenario.workers.values().any(runs)
}

/// What a run does to the world beyond the scenario's own steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disturbance {
    /// Nothing: the fault-free run the others are compared with.
    Nothing,
    /// [`Noise`] drawn from this seed, on the components' requests.
    Noise(u64),
    /// Every running component of [`RESTARTED`], on every cluster, killed (its task aborted
    /// wherever it is) and started afresh just before this step, by index; the number of steps
    /// means after the last, before the world settles.
    RestartBefore(usize),
}

impl fmt::Display for Disturbance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Disturbance::Nothing => write!(f, "no faults"),
            Disturbance::Noise(seed) => write!(f, "seed {seed}"),
            Disturbance::RestartBefore(index) => write!(f, "restart before step {}", index + 1),
        }
    }
}

/// The restarts `cargo test` runs: before every [`TEST_RESTART_STRIDE`]th step (from the first),
/// and after the last. `cargo xtask chaos --scenarios` (and so `.ci/run`) restarts before every
/// step, in an optimised build.
pub const TEST_RESTART_STRIDE: usize = 4;

/// A crash-only run before every `stride`th step of `scenario` from the first (1: before each),
/// and one after the last.
pub fn restarts(scenario: &Scenario, stride: usize) -> Vec<Disturbance> {
    let last = scenario.steps.len();
    (0..last)
        .step_by(stride.max(1))
        .chain([last])
        .map(Disturbance::RestartBefore)
        .collect()
}

/// Kill and start again every running component of [`RESTARTED`] on every cluster of `env`.
async fn restart_all(env: &TestEnv) -> Result<(), String> {
    for name in RESTARTED {
        if env.is_running(name) {
            env.restart(name).await.map_err(|e| e.to_string())?;
        }
    }
    for worker in env.worker_names() {
        let worker = env.worker(&worker).map_err(|e| e.to_string())?;
        for name in RESTARTED {
            if worker.is_running(name) {
                worker.restart(name).await.map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}

/// The faults of one chaos run on every cluster of a world, limited to its components' requests:
/// of those, 4% fail with 500, 3% with 429 and `Retry-After: 1`, 1.5% have their connection
/// dropped before they are served and 1.5% after (served, but the client cannot tell), about
/// 10% in all; 10% wait 200 ms first; and every 10 to 60 s one cluster closes all its watches.
struct Noise {
    /// Each cluster's faults, with the rules the noise put there.
    clusters: Vec<(Faults, Vec<FaultId>)>,
    closer: tokio::task::JoinHandle<()>,
}

impl Noise {
    fn start(clusters: &[Faults], seed: u64) -> Noise {
        let noisy = clusters
            .iter()
            .enumerate()
            .map(|(index, faults)| {
                faults.reseed(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ index as u64);
                faults.keep_journal();
                let rules = [
                    FaultRule::fail(500).fraction(0.04),
                    FaultRule::throttle(1).fraction(0.03),
                    FaultRule::drop_connection(DropWhen::Request).fraction(0.015),
                    FaultRule::drop_connection(DropWhen::Answer).fraction(0.015),
                    FaultRule::delay(Duration::from_millis(200)).fraction(0.10),
                ]
                .map(|rule| faults.inject(rule.user_agent(COMPONENT_USER_AGENT).lasting()));
                (faults.clone(), rules.to_vec())
            })
            .collect();
        let closed = clusters.to_vec();
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let closer = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(rng.random_range(10..=60))).await;
                closed[rng.random_range(0..closed.len())].close_watches();
            }
        });
        Noise {
            clusters: noisy,
            closer,
        }
    }

    /// Stop it; how many faults it injected (a request both delayed and failed counts twice),
    /// and every cluster's judgements in the order that cluster drew them.
    fn stop(self) -> (u64, Vec<Vec<Judgement>>) {
        self.closer.abort();
        let mut fired = 0;
        let mut journals = Vec::new();
        for (faults, rules) in self.clusters {
            for id in rules {
                fired += faults.fired(id);
                faults.remove(id);
            }
            journals.push(faults.take_journal());
        }
        (fired, journals)
    }
}

/// Where a run ended: every object of every cluster (blanked of what depends on timing), how many
/// times each was created, and how many times each Workload became admitted.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Ending {
    /// `cluster kind namespace/name` -> the object.
    pub objects: BTreeMap<String, Value>,
    pub creations: BTreeMap<String, u32>,
    pub admissions: BTreeMap<String, u32>,
}

/// Follows every cluster's change feed into an [`Ending`].
struct Ledger {
    feeds: Vec<(String, ChangeFeed)>,
    ending: Ending,
    /// Names the server generated, or derived from uids -> what they stand for.
    generated: BTreeMap<String, String>,
}

impl Ledger {
    fn follow(env: &TestEnv) -> Result<Ledger, String> {
        let mut feeds = vec![(MANAGER.to_string(), env.server().observe())];
        for name in env.worker_names() {
            let worker = env.worker(&name).map_err(|e| e.to_string())?;
            feeds.push((name, worker.server().observe()));
        }
        Ok(Ledger {
            feeds,
            ending: Ending::default(),
            generated: BTreeMap::new(),
        })
    }

    fn take(&mut self) {
        for (cluster, feed) in &mut self.feeds {
            for change in feed.drain() {
                let kind = change.object["kind"].as_str().unwrap_or_default();
                if UNCOMPARED_KINDS.contains(&kind) {
                    continue;
                }
                let key = format!("{cluster} {}", super::naming::object_label(&change.object));
                match change.change {
                    ChangeType::Added => {
                        *self.ending.creations.entry(key.clone()).or_default() += 1;
                        if let Some((name, stands_for)) = generated_name(&change.object) {
                            self.generated.insert(name, stands_for);
                        }
                    }
                    ChangeType::Modified => {}
                    ChangeType::Deleted => {
                        self.ending.objects.remove(&key);
                        continue;
                    }
                }
                let old = change.old.as_ref().is_some_and(admitted);
                if kind == "Workload" && admitted(&change.object) && !old {
                    *self.ending.admissions.entry(key.clone()).or_default() += 1;
                }
                self.ending.objects.insert(key, blank(change.object));
            }
        }
    }

    /// The ending, with every generated name replaced by what it stands for.
    fn finish(mut self) -> Ending {
        self.take();
        placements_pooled(rename(&self.ending, &self.generated))
    }
}

/// `ending` with the nodes a Job's pods were bound to as one sorted list, beside the Job, in
/// place of each pod's own `spec.nodeName`: which of a Job's identical pods the scheduler put
/// on which node follows the order the nodes came up in, a matter of timing; which nodes the
/// Job's pods took is not.
fn placements_pooled(mut ending: Ending) -> Ending {
    let mut placements: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (key, object) in ending.objects.iter_mut() {
        if object["kind"] != "Pod" {
            continue;
        }
        let Some(owner) = object["metadata"]["ownerReferences"]
            .as_array()
            .and_then(|owners| owners.iter().find(|o| o["controller"] == true))
            .and_then(|o| Some(format!("{} {}", o["kind"].as_str()?, o["name"].as_str()?)))
        else {
            continue;
        };
        let Some(node) = object
            .get_mut("spec")
            .and_then(Value::as_object_mut)
            .and_then(|spec| spec.remove("nodeName"))
        else {
            continue;
        };
        let cluster = key.split(' ').next().unwrap_or_default();
        let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
        placements
            .entry(format!(
                "{cluster} nodes of the pods of {owner} in {namespace}"
            ))
            .or_default()
            .push(node);
    }
    for (key, mut nodes) in placements {
        nodes.sort_by_key(Value::to_string);
        ending.objects.insert(key, Value::Array(nodes));
    }
    ending
}

/// A name the server generated (`generateName`), or one a controller derived from its owner's
/// uid (a Job's Workload, `job-{job}-{hash}`), and what it stands for: the prefix and `*`.
fn generated_name(object: &Value) -> Option<(String, String)> {
    let meta = &object["metadata"];
    let name = meta["name"].as_str()?;
    if let Some(prefix) = meta["generateName"].as_str().filter(|p| !p.is_empty()) {
        return Some((name.to_string(), format!("{prefix}*")));
    }
    let owned = meta["ownerReferences"]
        .as_array()
        .is_some_and(|owners| owners.iter().any(|o| o["controller"] == true));
    let (prefix, hash) = name.rsplit_once('-')?;
    let hashed = hash.len() == 5 && hash.bytes().all(|b| b.is_ascii_alphanumeric());
    (object["kind"] == "Workload" && owned && hashed)
        .then(|| (name.to_string(), format!("{prefix}-*")))
}

/// `ending` with each name of `names` replaced by its value, in keys and in strings.
fn rename(ending: &Ending, names: &BTreeMap<String, String>) -> Ending {
    // Longest first, so that a name is never replaced inside a longer one.
    let mut pairs: Vec<(&String, &String)> = names.iter().collect();
    pairs.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    // Through placeholders, so that swapped names (worker-1 <-> worker-2) do not collide.
    let replace = |text: &str| {
        let mut out = text.to_string();
        for (i, (name, _)) in pairs.iter().enumerate() {
            out = out.replace(name.as_str(), &format!("\u{1}{i}\u{1}"));
        }
        for (i, (_, stands_for)) in pairs.iter().enumerate() {
            out = out.replace(&format!("\u{1}{i}\u{1}"), stands_for);
        }
        out
    };
    let keys = |map: &BTreeMap<String, u32>| {
        let mut out = BTreeMap::new();
        for (key, count) in map {
            *out.entry(replace(key)).or_default() += count;
        }
        out
    };
    Ending {
        objects: ending
            .objects
            .iter()
            .map(|(key, object)| (replace(key), map_strings(object, &replace)))
            .collect(),
        creations: keys(&ending.creations),
        admissions: keys(&ending.admissions),
    }
}

fn map_strings(value: &Value, f: &impl Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(f(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| map_strings(v, f)).collect()),
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(k, v)| (f(k), map_strings(v, f)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// Whether a Workload's `Admitted` condition is true.
fn admitted(workload: &Value) -> bool {
    workload["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Admitted" && c["status"] == "True")
}

/// The object without what depends on timing: metadata the server assigns, and any time or uid
/// (a Job's selector and labels carry its uid).
fn blank(mut object: Value) -> Value {
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
        ] {
            meta.remove(field);
        }
    }
    if object["kind"] == "Workload"
        && let Some(status) = object.get_mut("status")
    {
        forget_history(status);
    }
    // A Job suspended and resumed again (a preemption) shows `Suspended: False` only if the Job
    // controller saw it suspended: a suspension that faults kept it from seeing leaves none.
    if object["kind"] == "Job"
        && let Some(conditions) = object
            .pointer_mut("/status/conditions")
            .and_then(Value::as_array_mut)
    {
        conditions.retain(|c| !(c["type"] == "Suspended" && c["status"] == "False"));
    }
    blank_values(&mut object);
    object
}

/// A Workload's record of how it got where it is, which faults lengthen: retries, requeues and
/// evictions along the way (`False` Evicted, Requeued and Preempted conditions, whose messages
/// say what happened before), and each condition's generation.
fn forget_history(status: &mut Value) {
    let Some(status) = status.as_object_mut() else {
        return;
    };
    status.remove("schedulingStats");
    status.remove("requeueState");
    for check in status
        .get_mut("admissionChecks")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(check) = check.as_object_mut() {
            check.remove("retryCount");
            check.remove("requeueAfterSeconds");
        }
    }
    if let Some(conditions) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        conditions.retain(|c| {
            let history =
                ["Evicted", "Requeued", "Preempted"].contains(&c["type"].as_str().unwrap_or(""));
            !(history && c["status"] == "False")
        });
        for condition in conditions.iter_mut().filter_map(Value::as_object_mut) {
            condition.remove("observedGeneration");
        }
    }
}

fn blank_values(value: &mut Value) {
    match value {
        Value::String(s) if crate::json::is_instant(s) => *s = "<time>".into(),
        Value::String(s) => *s = blank_uids(s),
        Value::Array(items) => items.iter_mut().for_each(blank_values),
        Value::Object(fields) => fields.values_mut().for_each(blank_values),
        _ => {}
    }
}

/// `s` with every uid in it (`8-4-4-4-12` hexadecimal digits) replaced by `<uid>`, and the
/// suffix a Pod's token volume takes from its uid by `*`.
fn blank_uids(s: &str) -> String {
    const UID_LEN: usize = 36;
    let is_uid = |w: &[u8]| {
        w.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
    };
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < bytes.len() {
        if i + UID_LEN <= bytes.len() && is_uid(&bytes[i..i + UID_LEN]) {
            out.push_str("<uid>");
            i += UID_LEN;
            continue;
        }
        let c = s[i..].chars().next().unwrap_or_default();
        out.push(c);
        i += c.len_utf8().max(1);
    }
    match out.strip_prefix("kube-api-access-") {
        Some(suffix) if suffix.len() == 5 => "kube-api-access-*".into(),
        _ => out,
    }
}

/// One run's result.
#[derive(Debug)]
pub struct Run {
    pub ending: Ending,
    /// A broken invariant, or a run that could not start.
    pub failure: Option<Failure>,
    pub passed_over: Vec<Failure>,
    /// Faults injected: requests failed, dropped or delayed.
    pub faults: u64,
    /// Under noise, each cluster's judgements (the manager's first), in the order drawn: a
    /// seed replays exactly when these are the same.
    pub judged: Vec<Vec<Judgement>>,
    /// What the run's steps saw (the scenario's traced kinds).
    pub trace: crate::trace::Trace,
}

/// Run a scenario once under `disturbance`, on virtual time.
pub fn run_once(
    scenario: &Scenario,
    registry: &Registry,
    disturbance: Disturbance,
) -> Result<Run, String> {
    on_virtual_time(
        &scenario.file,
        run_once_async(scenario, registry, disturbance),
    )?
}

async fn run_once_async(
    scenario: &Scenario,
    registry: &Registry,
    disturbance: Disturbance,
) -> Result<Run, String> {
    let env = start_env(scenario, registry).await?;
    let ledger = Ledger::follow(&env)?;
    let mut clusters = vec![env.faults().clone()];
    for name in env.worker_names() {
        clusters.push(env.worker_faults(&name).map_err(|e| e.to_string())?.clone());
    }
    let noise = match disturbance {
        Disturbance::Noise(seed) => Some(Noise::start(&clusters, seed)),
        _ => None,
    };
    let restart_before = match disturbance {
        Disturbance::RestartBefore(index) => Some(index),
        _ => None,
    };
    let env_ref = &env;
    let mut before_step = move |index: usize| -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            if restart_before == Some(index) {
                restart_all(env_ref).await
            } else {
                Ok(())
            }
        })
    };
    let mut outcome = run_in_with(&env, scenario, OnStepFailure::GoOn, &mut before_step).await;
    if restart_before == Some(scenario.steps.len())
        && outcome.failure.is_none()
        && let Err(message) = restart_all(&env).await
    {
        outcome.failure = Some(Failure {
            file: scenario.file.clone(),
            line: 0,
            step: "after the last step".into(),
            verb: "restart",
            message,
            dumps: Vec::new(),
        });
    }
    let (faults, judged) = noise.map_or((0, Vec::new()), Noise::stop);
    tokio::time::sleep(SETTLE).await;
    Ok(Run {
        ending: ledger.finish(),
        failure: outcome.failure,
        passed_over: outcome.passed_over,
        faults,
        judged,
        trace: outcome.trace,
    })
}

/// How a run under faults ended differently from the fault-free one.
#[derive(Debug, Default)]
pub struct Divergence {
    pub lines: Vec<String>,
}

impl Divergence {
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

/// `ending` as it is compared when the world has `workers`: which worker ran a MultiKueue Job is
/// the first to admit it, a matter of timing. So the workers' Jobs and Workloads are pooled (the
/// copies of one object on any worker, as one list), the manager's objects name no particular
/// worker, and creations and admissions are counted on the manager only (a worker's copy is
/// made again whenever the manager dispatches again, which a flaky link may well cause).
pub fn pooled(ending: &Ending, workers: &[String]) -> Ending {
    if workers.is_empty() {
        return ending.clone();
    }
    let mut objects = BTreeMap::new();
    let mut pools: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (key, object) in &ending.objects {
        let (cluster, rest) = key.split_once(' ').unwrap_or(("", key));
        let kind = rest.split(' ').next().unwrap_or_default();
        if cluster == MANAGER {
            let object = if workers.len() > 1 {
                map_strings(object, &|text: &str| {
                    workers
                        .iter()
                        .fold(text.to_string(), |t, w| t.replace(w.as_str(), "<worker>"))
                })
            } else {
                object.clone()
            };
            objects.insert(key.clone(), object);
        } else if kind == "Job" || kind == "Workload" {
            pools
                .entry(format!("workers {rest}"))
                .or_default()
                .push(object.clone());
        } else {
            objects.insert(key.clone(), object.clone());
        }
    }
    for (key, mut copies) in pools {
        copies.sort_by_key(|c| c.to_string());
        objects.insert(key, Value::Array(copies));
    }
    let on_manager = |counts: &BTreeMap<String, u32>| {
        counts
            .iter()
            .filter(|(key, _)| key.starts_with(&format!("{MANAGER} ")))
            .map(|(key, count)| (key.clone(), *count))
            .collect()
    };
    Ending {
        objects,
        creations: on_manager(&ending.creations),
        admissions: on_manager(&ending.admissions),
    }
}

/// What differs between the fault-free ending and one under faults.
pub fn compare(expected: &Ending, actual: &Ending) -> Divergence {
    let mut lines = Vec::new();
    for (key, want) in &expected.objects {
        match actual.objects.get(key) {
            None => lines.push(format!("{key}: missing")),
            Some(got) => {
                for change in diff(want, got) {
                    lines.push(format!("{key}: {change}"));
                }
            }
        }
    }
    for key in actual.objects.keys() {
        if !expected.objects.contains_key(key) {
            lines.push(format!("{key}: left over"));
        }
    }
    count_lines(
        &mut lines,
        "created",
        &expected.creations,
        &actual.creations,
    );
    count_lines(
        &mut lines,
        "admitted",
        &expected.admissions,
        &actual.admissions,
    );
    Divergence { lines }
}

fn count_lines(
    lines: &mut Vec<String>,
    what: &str,
    expected: &BTreeMap<String, u32>,
    actual: &BTreeMap<String, u32>,
) {
    // Fewer is no fault of its own: a MultiKueue copy the first worker's admission made
    // unnecessary is never made; what matters then is where the run ends.
    for (key, got) in actual {
        let want = expected.get(key).copied().unwrap_or(0);
        if *got > want {
            lines.push(format!("{key}: {what} {got} times, without faults {want}"));
        }
    }
}

/// A scenario's disturbed runs, against its fault-free run.
#[derive(Debug)]
pub struct Report {
    pub name: String,
    pub runs: usize,
    /// Runs that failed or diverged, and how, with the run's trace.
    pub failed: Vec<(Disturbance, String, crate::trace::Trace)>,
    /// Faults injected over all runs.
    pub faults: u64,
}

/// Run `scenario` without faults, then under each disturbance, and compare.
pub fn check(
    scenario: &Scenario,
    registry: &Registry,
    disturbances: &[Disturbance],
) -> Result<Report, String> {
    let baseline = run_once(scenario, registry, Disturbance::Nothing)?;
    let workers: Vec<String> = scenario.workers.keys().cloned().collect();
    if let Some(failure) = baseline.failure.as_ref().or(baseline.passed_over.first()) {
        return Err(format!("without faults the scenario fails:\n{failure}"));
    }
    let mut report = Report {
        name: scenario.name.clone(),
        runs: disturbances.len(),
        failed: Vec::new(),
        faults: 0,
    };
    for &disturbance in disturbances {
        let run = run_once(scenario, registry, disturbance)?;
        report.faults += run.faults;
        let why = match &run.failure {
            Some(failure) => Some(failure.to_string()),
            None => {
                let divergence = compare(
                    &pooled(&baseline.ending, &workers),
                    &pooled(&run.ending, &workers),
                );
                (!divergence.is_empty()).then(|| {
                    let mut why = format!("ended differently:\n{divergence}");
                    for failure in &run.passed_over {
                        why.push_str(&format!("passed over: {}", failure.step));
                        why.push_str(&format!(
                            " ({})\n",
                            failure.message.lines().next().unwrap_or("")
                        ));
                    }
                    why
                })
            }
        };
        if let Some(why) = why {
            report.failed.push((disturbance, why, run.trace));
        }
    }
    Ok(report)
}

/// [`check`] under the noise of each seed.
pub fn check_seeds(
    scenario: &Scenario,
    registry: &Registry,
    seeds: &[u64],
) -> Result<Report, String> {
    let noise: Vec<Disturbance> = seeds.iter().copied().map(Disturbance::Noise).collect();
    check(scenario, registry, &noise)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn timing_is_blanked_and_the_rest_kept() {
        let object = json!({
            "kind": "Job",
            "metadata": {"name": "j", "uid": "x", "resourceVersion": "7",
                "labels": {"batch.kubernetes.io/controller-uid": "0b3a1c2d-1111-4a2b-8c3d-0123456789ab"}},
            "status": {"startTime": "2026-01-01T00:00:05Z", "succeeded": 1, "note": "2026",
                "conditions": [{"type": "Suspended", "status": "False", "reason": "JobResumed"},
                               {"type": "Complete", "status": "True"}]},
        });
        assert_eq!(
            blank(object),
            json!({
                "kind": "Job",
                "metadata": {"name": "j",
                    "labels": {"batch.kubernetes.io/controller-uid": "<uid>"}},
                "status": {"startTime": "<time>", "succeeded": 1, "note": "2026",
                    "conditions": [{"type": "Complete", "status": "True"}]},
            })
        );
        // A Job still suspended is where it rests, not history.
        let suspended = json!({"kind": "Job", "status": {"conditions": [
            {"type": "Suspended", "status": "True", "reason": "JobSuspended"}]}});
        assert_eq!(blank(suspended.clone()), suspended);
    }

    #[test]
    fn generated_names_and_the_winning_worker_are_not_divergences() {
        let ending = |workload: &str, worker: &str| {
            let mut ending = Ending::default();
            let names = BTreeMap::from([(workload.to_string(), "job-a-*".to_string())]);
            let remote = format!("{worker} Workload ns/{workload}");
            let local = format!("manager Workload ns/{workload}");
            ending
                .objects
                .insert(remote.clone(), json!({"spec": {"active": true}}));
            ending
                .objects
                .insert(local.clone(), json!({"status": {"clusterName": worker}}));
            ending.creations.insert(remote, 1);
            ending.creations.insert(local, 1);
            rename(&ending, &names)
        };
        let workers = ["worker-1".to_string(), "worker-2".to_string()];
        let expected = ending("job-a-1b2c3", "worker-1");
        let other = ending("job-a-9z8y7", "worker-2");
        assert!(!compare(&expected, &other).is_empty());
        assert!(compare(&pooled(&expected, &workers), &pooled(&other, &workers)).is_empty());
        let mut twice = other.clone();
        twice.objects.insert(
            "worker-1 Workload ns/job-a-*".into(),
            json!({"spec": {"active": true}}),
        );
        assert_eq!(
            compare(&pooled(&expected, &workers), &pooled(&twice, &workers)).lines,
            [
                r#"workers Workload ns/job-a-*: ~ .: [{"spec":{"active":true}}] -> [{"spec":{"active":true}},{"spec":{"active":true}}]"#
            ]
        );
        assert_eq!(
            blank(json!({"note": "Preempted (UID: 0b3a1c2d-1111-4a2b-8c3d-0123456789ab)"})),
            json!({"note": "Preempted (UID: <uid>)"})
        );
        let job_workload = json!({"kind": "Workload", "metadata": {"name": "job-a-1b2c3",
            "ownerReferences": [{"kind": "Job", "name": "a", "controller": true}]}});
        assert_eq!(
            generated_name(&job_workload),
            Some(("job-a-1b2c3".into(), "job-a-*".into()))
        );
    }

    #[test]
    fn which_pod_took_which_node_is_not_a_divergence_but_which_nodes_are() {
        let ending = |nodes: [&str; 2]| {
            let mut ending = Ending::default();
            for (index, node) in nodes.iter().enumerate() {
                ending.objects.insert(
                    format!("manager Pod ns/train-{index}"),
                    json!({"kind": "Pod",
                        "metadata": {"name": format!("train-{index}"), "namespace": "ns",
                            "ownerReferences": [{"kind": "Job", "name": "train", "controller": true}]},
                        "spec": {"nodeName": node}}),
                );
            }
            placements_pooled(ending)
        };
        let expected = ending(["gpu-0", "gpu-1"]);
        assert!(compare(&expected, &ending(["gpu-1", "gpu-0"])).is_empty());
        assert_eq!(
            compare(&expected, &ending(["gpu-0", "cpu-0"])).lines,
            [
                r#"manager nodes of the pods of Job train in ns: ~ [0]: "gpu-0" -> "cpu-0""#,
                r#"manager nodes of the pods of Job train in ns: ~ [1]: "gpu-1" -> "gpu-0""#
            ]
        );
    }

    #[test]
    fn an_extra_creation_or_admission_is_a_divergence() {
        let mut expected = Ending::default();
        expected
            .objects
            .insert("manager Workload ns/w".into(), json!({"spec": {}}));
        expected.creations.insert("manager Workload ns/w".into(), 1);
        expected
            .admissions
            .insert("manager Workload ns/w".into(), 1);
        assert!(compare(&expected, &expected.clone()).is_empty());
        let mut twice = expected.clone();
        twice.admissions.insert("manager Workload ns/w".into(), 2);
        twice
            .creations
            .insert("manager PodTemplate ns/w-main".into(), 1);
        twice
            .objects
            .insert("manager PodTemplate ns/w-main".into(), json!({}));
        let lines = compare(&expected, &twice).lines;
        assert_eq!(
            lines,
            [
                "manager PodTemplate ns/w-main: left over",
                "manager PodTemplate ns/w-main: created 1 times, without faults 0",
                "manager Workload ns/w: admitted 2 times, without faults 1",
            ]
        );
    }
}
