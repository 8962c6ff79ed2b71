//! Running a scenario: each step's `try` operations in order through a `kube::Client`, `catch` when
//! one fails, `finally` always, while a recorder writes the trace.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, ListParams, Patch as KubePatch, PatchParams,
    PostParams,
};
use kube::discovery::{ApiCapabilities, Scope};
use serde_json::Value;

use super::components::Registry;
use super::duration::format_duration;
use super::load::{Action, FaultAction, Op, Scenario, Step, WriteKind, WriteOp};
use super::model::{Dump, ExpectedEvent, PatchType, PropagationPolicy, Watch};
use super::watches::ScenarioWatch;
use crate::cluster::{Changes, Cluster};
use crate::env::TestEnv;
use crate::json::{ListKeys, partial_match, render_diff};
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
    /// Virtual time the scenario took.
    pub elapsed: Duration,
}

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
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .map_err(|e| format!("starting a tokio runtime: {e}"))?;
    runtime.block_on(run(scenario, registry))
}

/// Run a scenario in a fresh embedded environment. Call it inside a paused runtime for virtual time.
pub async fn run(scenario: &Scenario, registry: &Registry) -> Result<Outcome, String> {
    let mut builder = TestEnv::builder();
    for (name, config) in &scenario.components {
        let component = registry
            .build(name, config)
            .map_err(|e| format!("{}: components.{name}: {e}", scenario.file))?;
        builder = builder.component(component);
    }
    let env = builder.build().map_err(|e| e.to_string())?;
    Ok(run_in(&env, scenario).await)
}

/// Run a scenario's steps against an environment that is already up.
pub async fn run_in(env: &dyn World, scenario: &Scenario) -> Outcome {
    let cluster = env.cluster();
    let feed = cluster.observe();
    let mut recorder = Recorder::new(feed, scenario.trace.clone(), env.start_time());
    let start = cluster.now();
    let mut runner = Runner {
        env,
        cluster: cluster.clone(),
        scenario,
        kinds: HashMap::new(),
        watches: Vec::new(),
    };
    let mut failure = None;
    if !cluster.virtual_time()
        && let Err(message) = runner.watch_traced_kinds().await
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
        recorder.step(&label, cluster.now());
        if let Err(f) = runner.step(&label, step).await {
            failure = Some(f);
            break;
        }
    }
    let elapsed = cluster.now().duration_since(start).unsigned_abs();
    // Let everything already under way land (watch deliveries, the last writes of components)
    // before the trace is read: one tick of the clock, or with watches open, long enough for a
    // watch cut by a fault to come back.
    let settle = if runner.watches.is_empty() {
        Duration::from_millis(1)
    } else {
        WATCH_SETTLE
    };
    tokio::time::sleep(settle).await;
    for watch in &runner.watches {
        recorder.watch_log(&watch.name, watch.seen(), cluster.now());
    }
    Outcome {
        name: scenario.name.clone(),
        trace: recorder.finish(),
        failure,
        elapsed,
    }
}

fn step_label(index: usize, step: &Step) -> String {
    let name = step.name.clone().or_else(|| {
        let op = step.try_.first()?;
        Some(describe(op))
    });
    match name {
        Some(name) => format!("{} {name}", index + 1),
        None => format!("{}", index + 1),
    }
}

/// A one-line description of an operation, for step labels.
fn describe(op: &Op) -> String {
    let objects = |objs: &[Value]| objs.iter().map(object_label).collect::<Vec<_>>().join(", ");
    match &op.action {
        Action::Write(w) => format!("{} {}", w.kind.verb(), objects(&w.objects)),
        Action::Assert { objects: o, .. } => format!("assert {}", objects(o)),
        Action::Absent { objects: o, .. } => format!("absent {}", objects(o)),
        Action::Error { write, .. } => format!(
            "{} {} is refused",
            write.kind.verb(),
            objects(&write.objects)
        ),
        Action::Advance(d) => format!("advance {}", format_duration(*d)),
        Action::Fault(f) => format!("fault {}", fault_label(f)),
        Action::Events { .. } => "events".into(),
        Action::Dump(d) => format!("dump {}", d.kind),
        Action::Watch(w) => format!("watch {} {}", w.kind, w.name),
        Action::Stop(c) => format!("stop {c}"),
        Action::Start(c) => format!("start {c}"),
        Action::Restart(c) => format!("restart {c}"),
    }
}

fn fault_label(f: &FaultAction) -> String {
    match f {
        FaultAction::Fail { code, .. } => format!("fail {code}"),
        FaultAction::Delay { duration, .. } => format!("delay {}", format_duration(*duration)),
        FaultAction::CloseWatches => "closeWatches".into(),
        FaultAction::Partition(d) => format!("partition {}", format_duration(*d)),
        FaultAction::Heal => "heal".into(),
        FaultAction::Clear => "clear".into(),
    }
}

/// `Kind namespace/name`, or `Kind name` for objects without a namespace.
pub fn object_label(obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap_or("?");
    let meta = &obj["metadata"];
    let name = meta["name"]
        .as_str()
        .map(String::from)
        .or_else(|| meta["generateName"].as_str().map(|g| format!("{g}*")))
        .unwrap_or_else(|| "*".into());
    match meta["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{kind} {ns}/{name}"),
        _ => format!("{kind} {name}"),
    }
}

struct Runner<'a> {
    env: &'a dyn World,
    cluster: Arc<dyn Cluster>,
    scenario: &'a Scenario,
    kinds: HashMap<(String, String), (ApiResource, ApiCapabilities)>,
    watches: Vec<ScenarioWatch>,
}

/// Why an operation failed: the message, and what a `catch` collected.
type OpResult = Result<(), String>;

impl Runner<'_> {
    async fn step(&mut self, label: &str, step: &Step) -> Result<(), Failure> {
        let mut failed: Option<(&Op, String)> = None;
        for op in &step.try_ {
            if let Err(message) = self.op(op).await {
                failed = Some((op, message));
                break;
            }
        }
        let mut dumps = Vec::new();
        if failed.is_some() {
            for op in &step.catch {
                match &op.action {
                    Action::Dump(d) => dumps.push(self.dump(d).await.unwrap_or_else(|e| e)),
                    _ => {
                        if let Err(e) = self.op(op).await {
                            dumps.push(format!("catch line {}: {e}", op.line));
                        }
                    }
                }
            }
        }
        for op in &step.finally {
            if let Err(message) = self.op(op).await
                && failed.is_none()
            {
                failed = Some((op, format!("in finally: {message}")));
            }
        }
        match failed {
            None => Ok(()),
            Some((op, message)) => Err(Failure {
                file: self.scenario.file.clone(),
                line: op.line,
                step: format!("step {label}"),
                verb: op.action.verb(),
                message,
                dumps,
            }),
        }
    }

    async fn op(&mut self, op: &Op) -> OpResult {
        let result = match &op.action {
            Action::Write(w) => self.write_all(w).await,
            Action::Assert {
                objects,
                timeout,
                list_keys,
            } => self.assert(objects, *timeout, list_keys).await,
            Action::Error {
                write,
                code,
                reason,
                message,
            } => {
                self.expect_error(write, *code, reason.as_deref(), message.as_deref())
                    .await
            }
            Action::Absent {
                objects,
                timeout,
                consistently,
            } => self.absent(objects, *timeout, *consistently).await,
            Action::Advance(d) => {
                tokio::time::sleep(*d).await;
                Ok(())
            }
            Action::Fault(f) => self.fault(f),
            Action::Events { expect, timeout } => self.events(expect, *timeout).await,
            Action::Dump(d) => self.dump(d).await.map(|_| ()),
            Action::Watch(w) => self.watch(w).await,
            Action::Stop(c) => self.env.stop(c).await.map_err(|e| e.to_string()),
            Action::Start(c) => self.env.start(c).map_err(|e| e.to_string()),
            Action::Restart(c) => self.env.restart(c).await.map_err(|e| e.to_string()),
        };
        result?;
        self.env.check_components().map_err(|e| e.to_string())
    }

    /// The API resource of an object's kind, from discovery (cached).
    async fn resource(&mut self, obj: &Value) -> Result<(ApiResource, ApiCapabilities), String> {
        let api_version = obj["apiVersion"].as_str().unwrap_or_default().to_string();
        let kind = obj["kind"].as_str().unwrap_or_default().to_string();
        let key = (api_version.clone(), kind.clone());
        if let Some(found) = self.kinds.get(&key) {
            return Ok(found.clone());
        }
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api_version.clone()),
        };
        let gvk = kube::api::GroupVersionKind::gvk(&group, &version, &kind);
        let found = kube::discovery::pinned_kind(&self.cluster.client(), &gvk)
            .await
            .map_err(|e| format!("the cluster does not serve {api_version} {kind}: {e}"))?;
        self.kinds.insert(key, found.clone());
        Ok(found)
    }

    /// An `Api` for the object's kind and namespace (the scenario's namespace when it names none),
    /// and the object with that namespace filled in.
    async fn api_for(&mut self, obj: &Value) -> Result<(Api<DynamicObject>, Value), String> {
        let (ar, caps) = self.resource(obj).await?;
        let client = self.cluster.client();
        let mut obj = obj.clone();
        if caps.scope == Scope::Cluster {
            return Ok((Api::all_with(client, &ar), obj));
        }
        let ns = obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or(&self.scenario.namespace)
            .to_string();
        obj["metadata"]["namespace"] = Value::String(ns.clone());
        Ok((Api::namespaced_with(client, &ns, &ar), obj))
    }

    async fn write_all(&mut self, w: &WriteOp) -> OpResult {
        for obj in &w.objects {
            self.write(w, obj).await.map_err(|e| {
                format!(
                    "{} {}: {}",
                    w.kind.verb(),
                    object_label(obj),
                    api_error_text(&e)
                )
            })?;
        }
        Ok(())
    }

    async fn write(&mut self, w: &WriteOp, obj: &Value) -> Result<(), WriteError> {
        let (api, mut obj) = self.api_for(obj).await.map_err(WriteError::Other)?;
        self.fill_owner_uids(&mut obj)
            .await
            .map_err(WriteError::Other)?;
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let dynamic: DynamicObject =
            serde_json::from_value(obj.clone()).map_err(|e| WriteError::Other(e.to_string()))?;
        match &w.kind {
            WriteKind::Apply => {
                let pp = PatchParams::apply(&w.field_manager).force();
                let patch = KubePatch::Apply(&obj);
                if w.status {
                    api.patch_status(&name, &pp, &patch).await?;
                } else {
                    api.patch(&name, &pp, &patch).await?;
                }
            }
            WriteKind::Create => {
                let pp = PostParams {
                    field_manager: Some(w.field_manager.clone()),
                    ..PostParams::default()
                };
                api.create(&pp, &dynamic).await?;
            }
            WriteKind::Update => {
                let mut dynamic = dynamic;
                if dynamic.metadata.resource_version.is_none() {
                    // Like `kubectl replace`: update whatever version is there now.
                    let current = api.get(&name).await?;
                    dynamic.metadata.resource_version = current.metadata.resource_version;
                }
                let pp = PostParams {
                    field_manager: Some(w.field_manager.clone()),
                    ..PostParams::default()
                };
                if w.status {
                    api.replace_status(&name, &pp, &dynamic).await?;
                } else {
                    api.replace(&name, &pp, &dynamic).await?;
                }
            }
            WriteKind::Patch { patch_type, ops } => {
                let pp = PatchParams {
                    field_manager: Some(w.field_manager.clone()),
                    ..PatchParams::default()
                };
                let ops: json_patch::Patch = match ops {
                    Some(ops) => serde_json::from_value(Value::Array(ops.clone()))
                        .map_err(|e| WriteError::Other(format!("ops: {e}")))?,
                    None => json_patch::Patch(Vec::new()),
                };
                let patch = match patch_type {
                    PatchType::Merge => KubePatch::Merge(obj.clone()),
                    PatchType::Strategic => KubePatch::Strategic(obj.clone()),
                    PatchType::Json => KubePatch::Json::<Value>(ops),
                };
                if w.status {
                    api.patch_status(&name, &pp, &patch).await?;
                } else {
                    api.patch(&name, &pp, &patch).await?;
                }
            }
            WriteKind::Delete { propagation } => {
                let dp = DeleteParams {
                    propagation_policy: propagation.map(|p| match p {
                        PropagationPolicy::Background => kube::api::PropagationPolicy::Background,
                        PropagationPolicy::Foreground => kube::api::PropagationPolicy::Foreground,
                        PropagationPolicy::Orphan => kube::api::PropagationPolicy::Orphan,
                    }),
                    ..DeleteParams::default()
                };
                api.delete(&name, &dp).await?;
            }
        }
        Ok(())
    }

    /// Scenarios cannot know uids in advance: an ownerReference without one gets the uid of the
    /// owner it names, looked up in the object's namespace.
    async fn fill_owner_uids(&mut self, obj: &mut Value) -> Result<(), String> {
        let namespace = obj["metadata"]["namespace"].clone();
        let refs = obj
            .get_mut("metadata")
            .and_then(|m| m.get_mut("ownerReferences"))
            .and_then(Value::as_array_mut);
        let Some(refs) = refs else {
            return Ok(());
        };
        for owner_ref in refs.iter_mut().filter(|r| r.get("uid").is_none()) {
            let mut owner = serde_json::json!({
                "apiVersion": owner_ref["apiVersion"],
                "kind": owner_ref["kind"],
                "metadata": {"name": owner_ref["name"]},
            });
            if namespace.is_string() {
                owner["metadata"]["namespace"] = namespace.clone();
            }
            let (api, owner) = self.api_for(&owner).await?;
            let name = owner["metadata"]["name"].as_str().unwrap_or_default();
            let found = api
                .get_opt(name)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| {
                    format!(
                        "ownerReferences: the owner {} does not exist, so its uid is unknown",
                        object_label(&owner)
                    )
                })?;
            owner_ref["uid"] = found.metadata.uid.map(Value::String).unwrap_or(Value::Null);
        }
        Ok(())
    }

    async fn expect_error(
        &mut self,
        w: &WriteOp,
        code: Option<u16>,
        reason: Option<&str>,
        message: Option<&str>,
    ) -> OpResult {
        let obj = w.objects.first().ok_or("no object")?;
        let label = format!("{} {}", w.kind.verb(), object_label(obj));
        let status = match self.write(w, obj).await {
            Ok(()) => {
                return Err(format!(
                    "{label} succeeded, but it should have been refused"
                ));
            }
            Err(WriteError::Api(status)) => status,
            Err(WriteError::Other(e)) => return Err(format!("{label}: {e}")),
        };
        let mut wrong = Vec::new();
        if let Some(code) = code
            && status.code != code
        {
            wrong.push(format!("code: expected {code}, got {}", status.code));
        }
        if let Some(reason) = reason
            && status.reason != reason
        {
            wrong.push(format!("reason: expected {reason}, got {}", status.reason));
        }
        if let Some(message) = message
            && !status.message.contains(message)
        {
            wrong.push(format!("message: expected it to contain {message:?}"));
        }
        if wrong.is_empty() {
            return Ok(());
        }
        Err(format!(
            "{label} was refused, but not as expected:\n  {}\nthe server answered {} {}: {}",
            wrong.join("\n  "),
            status.code,
            status.reason,
            status.message
        ))
    }

    async fn assert(&mut self, objects: &[Value], timeout: Duration, keys: &ListKeys) -> OpResult {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut changes = Changes::new(self.cluster.as_ref());
        loop {
            changes.mark();
            let mut problems = Vec::new();
            for expected in objects {
                if let Err(p) = self.matches(expected, keys).await {
                    problems.push(p);
                }
            }
            if problems.is_empty() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "not matched within {}:\n{}",
                    format_duration(timeout),
                    problems.join("\n")
                ));
            }
            changes.wait(deadline).await;
        }
    }

    /// Whether an object matching `expected` exists; if not, what the cluster held instead.
    async fn matches(&mut self, expected: &Value, keys: &ListKeys) -> Result<(), String> {
        let (expected, candidates) = self.find(expected).await?;
        if candidates.is_empty() {
            let label = object_label(&expected);
            return Err(match expected["metadata"]["name"].as_str() {
                Some(_) => format!("{label}: not found"),
                None => format!("{label}: there are none"),
            });
        }
        // The closest candidate explains the failure best.
        let mut best: Option<(usize, &Value, Vec<String>)> = None;
        for actual in &candidates {
            let mismatches = partial_match(&expected, actual, keys);
            if mismatches.is_empty() {
                return Ok(());
            }
            if best.as_ref().is_none_or(|(n, ..)| mismatches.len() < *n) {
                let lines = mismatches.iter().map(|m| m.to_string()).collect();
                best = Some((mismatches.len(), actual, lines));
            }
        }
        let Some((_, actual, lines)) = best else {
            return Err(format!("{}: no candidates", object_label(&expected)));
        };
        let mut out = format!("{}:\n", object_label(actual));
        for l in lines {
            out.push_str(&format!("  {l}\n"));
        }
        out.push_str("  diff (- expected, + found):\n");
        for l in render_diff(&expected, actual, keys).lines() {
            out.push_str(&format!("    {l}\n"));
        }
        out.push_str("  the cluster held:\n");
        for l in to_yaml(&without_noise(actual)).lines() {
            out.push_str(&format!("    {l}\n"));
        }
        Err(out.trim_end().to_string())
    }

    async fn absent(
        &mut self,
        objects: &[Value],
        timeout: Duration,
        consistently: Option<Duration>,
    ) -> OpResult {
        let window = consistently.unwrap_or(timeout);
        let deadline = tokio::time::Instant::now() + window;
        let start = tokio::time::Instant::now();
        let mut changes = Changes::new(self.cluster.as_ref());
        // On real time, a named object deleted and made again (a new uid) between two looks is
        // gone: the cluster can do both before the next poll. Virtual time shows each change, and
        // objects matched by labels must all go.
        let named_uids_only = consistently.is_none() && !self.cluster.virtual_time();
        let mut first: Option<Vec<String>> = None;
        loop {
            changes.mark();
            let mut found = Vec::new();
            for obj in objects {
                let named = obj["metadata"]["name"].is_string();
                found.extend(
                    self.present(obj)
                        .await?
                        .into_iter()
                        .map(|(label, uid)| (label, uid, named)),
                );
            }
            let first_uids =
                first.get_or_insert_with(|| found.iter().map(|(_, u, _)| u.clone()).collect());
            let present: Vec<String> = found
                .into_iter()
                .filter(|(_, uid, named)| !(named_uids_only && *named) || first_uids.contains(uid))
                .map(|(label, _, _)| label)
                .collect();
            let now = tokio::time::Instant::now();
            match (consistently.is_some(), present.is_empty()) {
                (false, true) => return Ok(()),
                (true, false) => {
                    return Err(format!(
                        "expected absent for {}, but after {} the cluster holds {}",
                        format_duration(window),
                        format_duration(now - start),
                        present.join(", ")
                    ));
                }
                (false, false) if now >= deadline => {
                    return Err(format!(
                        "still present after {}: {}",
                        format_duration(timeout),
                        present.join(", ")
                    ));
                }
                (true, true) if now >= deadline => return Ok(()),
                _ => changes.wait(deadline).await,
            }
        }
    }

    /// Labels and uids of the objects matching `obj` (by name, or by kind and labels) that exist.
    async fn present(&mut self, obj: &Value) -> Result<Vec<(String, String)>, String> {
        let (_, found) = self.find(obj).await?;
        Ok(found
            .iter()
            .map(|o| {
                let uid = o["metadata"]["uid"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                (object_label(o), uid)
            })
            .collect())
    }

    /// The objects `obj` names: the one called `metadata.name`, or without a name every object of
    /// its kind that has its labels. Also returns `obj` with its namespace filled in.
    async fn find(&mut self, obj: &Value) -> Result<(Value, Vec<Value>), String> {
        let (api, obj) = self.api_for(obj).await?;
        let found = match obj["metadata"]["name"].as_str() {
            Some(name) => api
                .get_opt(name)
                .await
                .map_err(|e| e.to_string())?
                .iter()
                .map(to_value)
                .collect(),
            None => api
                .list(&label_selector(&obj))
                .await
                .map_err(|e| e.to_string())?
                .items
                .iter()
                .map(to_value)
                .collect(),
        };
        Ok((obj, found))
    }

    fn fault(&self, f: &FaultAction) -> OpResult {
        use fake_apiserver::FaultRule;
        let faults = self.cluster.faults().ok_or_else(|| {
            format!(
                "the {} backend cannot inject faults; run this scenario embedded",
                self.cluster.backend()
            )
        })?;
        let target = |mut rule: FaultRule, t: &super::load::FaultTarget| {
            if let Some(v) = t.verb {
                rule = rule.verb(v);
            }
            if let Some(r) = &t.resource {
                rule = rule.resource(r.clone());
            }
            if let Some(n) = &t.namespace {
                rule = rule.namespace(n.clone());
            }
            if let Some(n) = &t.name {
                rule = rule.name(n.clone());
            }
            if let Some(n) = t.times {
                rule = rule.times(n);
            }
            rule
        };
        match f {
            FaultAction::Fail { code, rule } => {
                faults.inject(target(FaultRule::fail(*code), rule));
            }
            FaultAction::Delay { duration, rule } => {
                faults.inject(target(FaultRule::delay(*duration), rule));
            }
            FaultAction::CloseWatches => faults.close_watches(),
            FaultAction::Partition(d) => faults.partition(*d),
            FaultAction::Heal => faults.heal(),
            FaultAction::Clear => faults.clear(),
        }
        Ok(())
    }

    async fn events(&mut self, expect: &[ExpectedEvent], timeout: Duration) -> OpResult {
        let deadline = tokio::time::Instant::now() + timeout;
        let api: Api<k8s_openapi::api::events::v1::Event> = Api::all(self.cluster.client());
        let mut changes = Changes::new(self.cluster.as_ref());
        loop {
            changes.mark();
            let events = api
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?
                .items;
            let missing: Vec<&ExpectedEvent> = expect
                .iter()
                .filter(|want| !events.iter().any(|e| event_matches(want, e)))
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                let seen: Vec<String> = events.iter().map(event_line).collect();
                return Err(format!(
                    "no matching Event within {} for:\n  {}\nEvents recorded:\n  {}",
                    format_duration(timeout),
                    missing
                        .iter()
                        .map(|m| expected_event_line(m))
                        .collect::<Vec<_>>()
                        .join("\n  "),
                    if seen.is_empty() {
                        "(none)".to_string()
                    } else {
                        seen.join("\n  ")
                    }
                ));
            }
            changes.wait(deadline).await;
        }
    }

    async fn watch(&mut self, w: &Watch) -> OpResult {
        if self.watches.iter().any(|x| x.name == w.name) {
            return Err(format!("a watch named {} is already running", w.name));
        }
        let (ar, caps) = self.resource(&kind_probe(&w.api_version, &w.kind)).await?;
        let client = self.cluster.client();
        let api = match (&w.namespace, caps.scope) {
            (Some(ns), Scope::Namespaced) => Api::namespaced_with(client, ns, &ar),
            _ => Api::all_with(client, &ar),
        };
        self.watches
            .push(ScenarioWatch::start(w.name.clone(), ar.kind.clone(), api).await?);
        Ok(())
    }

    /// Without a change feed (a real cluster), the trace is what a watch of each traced kind saw.
    /// Kinds named without an apiVersion are found through discovery.
    async fn watch_traced_kinds(&mut self) -> OpResult {
        let discovery = kube::Discovery::new(self.cluster.client())
            .run()
            .await
            .map_err(|e| format!("discovery: {e}"))?;
        let mut watched = Vec::new();
        for kind in &self.scenario.trace {
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
            self.watch(&Watch {
                name,
                api_version,
                kind: kind.kind.clone(),
                namespace: None,
            })
            .await?;
        }
        Ok(())
    }

    /// The objects a `dump` names, as YAML.
    async fn dump(&mut self, d: &Dump) -> Result<String, String> {
        let mut probe = kind_probe(&d.api_version, &d.kind);
        if let Some(ns) = &d.namespace {
            probe["metadata"]["namespace"] = Value::String(ns.clone());
        }
        if let Some(name) = &d.name {
            probe["metadata"]["name"] = Value::String(name.clone());
        }
        let (_, objects) = self.find(&probe).await?;
        if objects.is_empty() {
            return Ok(format!("{} {}: none", d.api_version, d.kind));
        }
        Ok(objects
            .iter()
            .map(|o| to_yaml(&without_noise(o)))
            .collect::<Vec<_>>()
            .join("---\n"))
    }
}

/// A failed write: the API's refusal, or a problem before the request was sent.
#[derive(Debug)]
enum WriteError {
    Api(Box<kube::core::Status>),
    Other(String),
}

impl From<kube::Error> for WriteError {
    fn from(e: kube::Error) -> Self {
        match e {
            kube::Error::Api(status) => WriteError::Api(status),
            other => WriteError::Other(other.to_string()),
        }
    }
}

fn api_error_text(e: &WriteError) -> String {
    match e {
        WriteError::Api(s) => format!(
            "the server refused it: {} {}: {}",
            s.code, s.reason, s.message
        ),
        WriteError::Other(e) => e.clone(),
    }
}

/// An object naming only a kind, to look the kind up or to fill in before `find`.
fn kind_probe(api_version: &str, kind: &str) -> Value {
    serde_json::json!({"apiVersion": api_version, "kind": kind, "metadata": {}})
}

fn label_selector(obj: &Value) -> ListParams {
    let labels = obj["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    if labels.is_empty() {
        ListParams::default()
    } else {
        ListParams::default().labels(&labels)
    }
}

fn to_value(obj: &DynamicObject) -> Value {
    serde_json::to_value(obj).unwrap_or(Value::Null)
}

/// The object without the bookkeeping nobody asserts on.
fn without_noise(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(meta) = obj["metadata"].as_object_mut() {
        meta.remove("managedFields");
    }
    obj
}

fn to_yaml(v: &Value) -> String {
    serde_yaml::to_string(v).unwrap_or_else(|e| format!("(cannot show as YAML: {e})"))
}

fn event_matches(want: &ExpectedEvent, e: &k8s_openapi::api::events::v1::Event) -> bool {
    let eq = |want: &Option<String>, have: Option<&String>| {
        want.as_ref().is_none_or(|w| have.is_some_and(|h| h == w))
    };
    let note_ok = want
        .message
        .as_ref()
        .is_none_or(|m| e.note.as_ref().is_some_and(|n| n.contains(m.as_str())));
    let regarding_ok = want.regarding.as_ref().is_none_or(|r| {
        let have = e.regarding.as_ref();
        eq(&r.kind, have.and_then(|h| h.kind.as_ref()))
            && eq(&r.name, have.and_then(|h| h.name.as_ref()))
            && eq(&r.namespace, have.and_then(|h| h.namespace.as_ref()))
    });
    eq(&want.event_type, e.type_.as_ref())
        && eq(&want.reason, e.reason.as_ref())
        && note_ok
        && regarding_ok
}

fn event_line(e: &k8s_openapi::api::events::v1::Event) -> String {
    let r = e.regarding.as_ref();
    format!(
        "{} {} {} {}/{}: {}",
        e.type_.as_deref().unwrap_or("?"),
        e.reason.as_deref().unwrap_or("?"),
        r.and_then(|r| r.kind.as_deref()).unwrap_or("?"),
        r.and_then(|r| r.namespace.as_deref()).unwrap_or(""),
        r.and_then(|r| r.name.as_deref()).unwrap_or("?"),
        e.note.as_deref().unwrap_or("")
    )
}

fn expected_event_line(e: &ExpectedEvent) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &e.event_type {
        parts.push(format!("type={t}"));
    }
    if let Some(r) = &e.reason {
        parts.push(format!("reason={r}"));
    }
    if let Some(m) = &e.message {
        parts.push(format!("message contains {m:?}"));
    }
    if let Some(r) = &e.regarding {
        let part = |k: &str, v: &Option<String>| v.as_ref().map(|v| format!("{k}={v}"));
        let fields: Vec<String> = [
            part("kind", &r.kind),
            part("namespace", &r.namespace),
            part("name", &r.name),
        ]
        .into_iter()
        .flatten()
        .collect();
        parts.push(format!("regarding {}", fields.join(",")));
    }
    parts.join(" ")
}
