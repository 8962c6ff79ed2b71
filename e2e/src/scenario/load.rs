//! Reading a scenario file: parse it, then check what serde cannot (one action per step, objects
//! that name their kind, files that exist), so that a bad file is refused before anything runs,
//! with its file, line and field.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use serde_saphyr::Spanned;

use super::duration::VirtualDuration;
use super::model::{
    Absent, Assert, Delete, Dump, Events, ExpectError, ExpectedEvent, Fault, Need, Patch,
    PatchType, PropagationPolicy, RawStep, ScenarioFile, Subresource, Watch, Write,
};

/// How long `assert`, `absent` and `events` wait by default (virtual time on the embedded cluster).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The field manager of the scenario's own writes.
pub const DEFAULT_FIELD_MANAGER: &str = "tollgate-scenario";

/// Why a scenario file was refused. `Display` starts with `file:line:column`.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}:{column}: {message}")]
pub struct LoadError {
    pub file: String,
    pub line: u64,
    pub column: u64,
    pub message: String,
}

/// A scenario, checked and ready to run.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    /// The file it came from, as given to [`load`].
    pub file: String,
    pub components: BTreeMap<String, Value>,
    /// The kinds the trace records.
    pub trace: Vec<KindRef>,
    pub namespace: String,
    /// What it declares it needs of the embedded world.
    pub needs: Vec<Need>,
    pub steps: Vec<Step>,
}

/// The longest wait (`advance`, or an assertion's timeout) a real backend runs; a scenario that
/// waits longer needs virtual time.
pub const REAL_TIME_LIMIT: Duration = Duration::from_secs(30);

impl Scenario {
    /// Why this scenario cannot run on a real cluster (real time, no faults), if it cannot.
    pub fn real_time_blocker(&self) -> Option<String> {
        if self.needs.contains(&Need::Faults) {
            return Some("it declares that it needs fault injection".into());
        }
        if self.needs.contains(&Need::VirtualTime) {
            return Some("it declares that it needs virtual time".into());
        }
        let ops = self
            .steps
            .iter()
            .flat_map(|s| s.try_.iter().chain(&s.catch).chain(&s.finally));
        for op in ops {
            let wait = match &op.action {
                Action::Fault(_) => {
                    return Some(format!("line {}: it injects faults", op.line));
                }
                Action::Advance(d) => Some(("advances", *d)),
                Action::Assert { timeout, .. } | Action::Events { timeout, .. } => {
                    Some(("waits", *timeout))
                }
                Action::Absent {
                    timeout,
                    consistently,
                    ..
                } => Some(("waits", consistently.unwrap_or(*timeout))),
                _ => None,
            };
            if let Some((verb, d)) = wait
                && d > REAL_TIME_LIMIT
            {
                return Some(format!(
                    "line {}: it {verb} {} on virtual time; a real cluster waits at most {}",
                    op.line,
                    super::duration::format_duration(d),
                    super::duration::format_duration(REAL_TIME_LIMIT)
                ));
            }
        }
        None
    }
}

/// A kind as a scenario names it: `apiVersion` may be empty when only the kind was given.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KindRef {
    pub api_version: String,
    pub kind: String,
}

impl KindRef {
    fn parse(text: &str) -> Result<Self, String> {
        let (api_version, kind) = match text.rsplit_once('/') {
            Some((av, kind)) => (av.to_string(), kind.to_string()),
            None => (String::new(), text.to_string()),
        };
        let bad = kind.is_empty() || !kind.starts_with(|c: char| c.is_ascii_uppercase());
        if bad {
            return Err(format!(
                "`{text}` is not a kind: write `Kind`, `v1/Kind` or `group/version/Kind`"
            ));
        }
        Ok(KindRef { api_version, kind })
    }
}

impl std::fmt::Display for KindRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.api_version.as_str() {
            "" => f.write_str(&self.kind),
            av => write!(f, "{av}/{}", self.kind),
        }
    }
}

/// One step: a `try` block with what to do on failure and afterwards.
#[derive(Debug, Clone)]
pub struct Step {
    pub name: Option<String>,
    pub line: u64,
    pub try_: Vec<Op>,
    pub catch: Vec<Op>,
    pub finally: Vec<Op>,
}

/// One operation and where it is written.
#[derive(Debug, Clone)]
pub struct Op {
    pub name: Option<String>,
    pub line: u64,
    pub action: Action,
}

#[derive(Debug, Clone)]
pub enum Action {
    Write(WriteOp),
    Assert {
        objects: Vec<Value>,
        timeout: Duration,
        list_keys: BTreeMap<String, String>,
    },
    Error {
        write: WriteOp,
        code: Option<u16>,
        reason: Option<String>,
        message: Option<String>,
    },
    Absent {
        objects: Vec<Value>,
        timeout: Duration,
        /// Absent now and for this long, instead of "gone within the timeout".
        consistently: Option<Duration>,
    },
    Advance(Duration),
    Fault(FaultAction),
    Events {
        expect: Vec<ExpectedEvent>,
        timeout: Duration,
    },
    Dump(Dump),
    Watch(Watch),
    Stop(String),
    Start(String),
    Restart(String),
}

impl Action {
    /// The verb a report uses for the operation.
    pub fn verb(&self) -> &'static str {
        match self {
            Action::Write(w) => w.kind.verb(),
            Action::Assert { .. } => "assert",
            Action::Error { .. } => "error",
            Action::Absent { .. } => "absent",
            Action::Advance(_) => "advance",
            Action::Fault(_) => "fault",
            Action::Events { .. } => "events",
            Action::Dump(_) => "dump",
            Action::Watch(_) => "watch",
            Action::Stop(_) => "stop",
            Action::Start(_) => "start",
            Action::Restart(_) => "restart",
        }
    }
}

/// A write the scenario sends: apply, create, update, patch or delete, on one or more objects.
#[derive(Debug, Clone)]
pub struct WriteOp {
    pub kind: WriteKind,
    pub objects: Vec<Value>,
    pub status: bool,
    pub field_manager: String,
}

#[derive(Debug, Clone)]
pub enum WriteKind {
    Apply,
    Create,
    Update,
    Patch {
        patch_type: PatchType,
        ops: Option<Vec<Value>>,
    },
    Delete {
        propagation: Option<PropagationPolicy>,
    },
}

impl WriteKind {
    pub fn verb(&self) -> &'static str {
        match self {
            WriteKind::Apply => "apply",
            WriteKind::Create => "create",
            WriteKind::Update => "update",
            WriteKind::Patch { .. } => "patch",
            WriteKind::Delete { .. } => "delete",
        }
    }
}

/// The fault step, checked.
#[derive(Debug, Clone)]
pub enum FaultAction {
    Fail {
        code: u16,
        rule: FaultTarget,
    },
    Delay {
        duration: Duration,
        rule: FaultTarget,
    },
    CloseWatches,
    Partition(Duration),
    Heal,
    Clear,
}

/// Which requests a fault applies to.
#[derive(Debug, Clone, Default)]
pub struct FaultTarget {
    pub verb: Option<fake_apiserver::Verb>,
    pub resource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub times: Option<u32>,
}

/// Read and check a scenario file.
pub fn load(path: &Path) -> Result<Scenario, LoadError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| LoadError {
        file: file.clone(),
        line: 0,
        column: 0,
        message: format!("cannot read it: {e}"),
    })?;
    parse(&file, &text, path.parent().unwrap_or(Path::new(".")))
}

/// Check a scenario given as text. `file` names it in errors; `dir` is where `file:` references
/// are read from.
pub fn parse(file: &str, text: &str, dir: &Path) -> Result<Scenario, LoadError> {
    let raw: ScenarioFile = serde_saphyr::from_str(text).map_err(|e| yaml_error(file, &e))?;
    Checker { file, dir }.scenario(raw)
}

fn yaml_error(file: &str, e: &serde_saphyr::Error) -> LoadError {
    let (line, column) = e
        .location()
        .map(|l| (l.line(), l.column()))
        .unwrap_or((0, 0));
    // The library's message starts with its own position and shows the lines around it as coming
    // from `<input>`: keep the explanation and the snippet, named after the real file.
    let text = e.to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    let prefix = format!("line {line} column {column}: ");
    let text = text.strip_prefix(&prefix).unwrap_or(text);
    LoadError {
        file: file.to_string(),
        line,
        column,
        message: text.replace("<input>", file),
    }
}

struct Checker<'a> {
    file: &'a str,
    dir: &'a Path,
}

impl Checker<'_> {
    fn err(&self, line: u64, message: impl Into<String>) -> LoadError {
        LoadError {
            file: self.file.to_string(),
            line,
            column: 0,
            message: message.into(),
        }
    }

    fn scenario(&self, raw: ScenarioFile) -> Result<Scenario, LoadError> {
        let name = raw.name.value.clone();
        let name_ok = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !name.starts_with('-')
            && !name.ends_with('-');
        if !name_ok {
            return Err(self.err(
                raw.name.referenced.line(),
                format!("name: `{name}` must be lower-case letters, digits and `-` (it names the snapshot)"),
            ));
        }
        if raw.steps.is_empty() {
            return Err(self.err(0, "steps: a scenario needs at least one step"));
        }
        let mut steps = Vec::new();
        for (i, step) in raw.steps.into_iter().enumerate() {
            steps.push(self.step(&format!("steps[{i}]"), step)?);
        }
        let mut trace = Vec::new();
        for kind in &raw.trace {
            let parsed = KindRef::parse(&kind.value)
                .map_err(|m| self.err(kind.referenced.line(), format!("trace: {m}")))?;
            trace.push(parsed);
        }
        if trace.is_empty() {
            trace = kinds_named(&steps);
        }
        Ok(Scenario {
            name,
            description: raw.description,
            tags: raw.tags,
            file: self.file.to_string(),
            components: raw.components,
            trace,
            namespace: raw.namespace.unwrap_or_else(|| "default".into()),
            needs: raw.needs,
            steps,
        })
    }

    fn step(&self, at: &str, raw: Spanned<RawStep>) -> Result<Step, LoadError> {
        let line = raw.referenced.line();
        let mut raw = raw.value;
        let name = raw.name.take();
        let blocks = [raw.try_.take(), raw.catch.take(), raw.finally.take()];
        let has_action = action_fields(&raw) > 0;
        let [try_, catch, finally] = blocks;
        match try_ {
            Some(ops) => {
                if has_action {
                    return Err(self.err(
                        line,
                        format!("{at}: a step has either `try` or one operation, not both"),
                    ));
                }
                if ops.is_empty() {
                    return Err(self.err(line, format!("{at}.try: needs at least one operation")));
                }
                Ok(Step {
                    name,
                    line,
                    try_: self.ops(&format!("{at}.try"), ops)?,
                    catch: self.ops(&format!("{at}.catch"), catch.unwrap_or_default())?,
                    finally: self.ops(&format!("{at}.finally"), finally.unwrap_or_default())?,
                })
            }
            None => {
                if catch.is_some() || finally.is_some() {
                    return Err(self.err(
                        line,
                        format!("{at}: `catch` and `finally` belong to a step with `try`"),
                    ));
                }
                let op = self.op(at, line, name.clone(), raw)?;
                Ok(Step {
                    name,
                    line,
                    try_: vec![op],
                    catch: Vec::new(),
                    finally: Vec::new(),
                })
            }
        }
    }

    fn ops(&self, at: &str, raw: Vec<Spanned<RawStep>>) -> Result<Vec<Op>, LoadError> {
        raw.into_iter()
            .enumerate()
            .map(|(i, r)| {
                let at = format!("{at}[{i}]");
                let line = r.referenced.line();
                let mut r = r.value;
                if r.try_.is_some() || r.catch.is_some() || r.finally.is_some() {
                    return Err(self.err(
                        line,
                        format!("{at}: `try`, `catch` and `finally` do not nest"),
                    ));
                }
                let name = r.name.take();
                self.op(&at, line, name, r)
            })
            .collect()
    }

    fn op(&self, at: &str, line: u64, name: Option<String>, raw: RawStep) -> Result<Op, LoadError> {
        let count = action_fields(&raw);
        if count != 1 {
            return Err(self.err(
                line,
                format!(
                    "{at}: needs exactly one operation ({}), found {count}",
                    OPERATIONS.join(", ")
                ),
            ));
        }
        let e = |m: String| self.err(line, format!("{at}.{m}"));
        let writes = Writes {
            apply: raw.apply,
            create: raw.create,
            update: raw.update,
            patch: raw.patch,
            delete: raw.delete,
        };
        let action = if let Some((verb, w)) = self.one_write(writes) {
            Action::Write(w.map_err(|m| e(format!("{verb}: {m}")))?)
        } else if let Some(a) = raw.assert {
            self.assert(a).map_err(|m| e(format!("assert: {m}")))?
        } else if let Some(x) = raw.error {
            self.expect_error(x).map_err(|m| e(format!("error: {m}")))?
        } else if let Some(a) = raw.absent {
            self.absent(a).map_err(|m| e(format!("absent: {m}")))?
        } else if let Some(d) = raw.advance {
            Action::Advance(d.0)
        } else if let Some(f) = raw.fault {
            Action::Fault(fault(f))
        } else if let Some(ev) = raw.events {
            events(ev).map_err(|m| e(format!("events: {m}")))?
        } else if let Some(d) = raw.dump {
            Action::Dump(d)
        } else if let Some(w) = raw.watch {
            Action::Watch(w)
        } else if let Some(c) = raw.stop {
            Action::Stop(c)
        } else if let Some(c) = raw.start {
            Action::Start(c)
        } else if let Some(c) = raw.restart {
            Action::Restart(c)
        } else {
            return Err(e("no operation".into()));
        };
        Ok(Op { name, line, action })
    }

    /// The objects of an operation: exactly one of `object`, `objects` and `file`, each naming its
    /// apiVersion and kind, and a name unless `name_optional`.
    fn objects(
        &self,
        object: Option<Value>,
        objects: Option<Vec<Value>>,
        file: Option<String>,
        name_rule: NameRule,
    ) -> Result<Vec<Value>, String> {
        let list = match (object, objects, file) {
            (Some(o), None, None) => vec![o],
            (None, Some(list), None) if !list.is_empty() => list,
            (None, Some(_), None) => return Err("objects: the list is empty".into()),
            (None, None, Some(f)) => self.read_objects(&f)?,
            (None, None, None) => return Err("needs one of `object`, `objects` or `file`".into()),
            _ => return Err("give only one of `object`, `objects` and `file`".into()),
        };
        for (i, obj) in list.iter().enumerate() {
            check_object(obj, name_rule).map_err(|m| format!("objects[{i}]: {m}"))?;
        }
        Ok(list)
    }

    fn read_objects(&self, file: &str) -> Result<Vec<Value>, String> {
        let path = self.dir.join(file);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("file: cannot read {}: {e}", path.display()))?;
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text)
            .map_err(|e| format!("file: {}: {e}", path.display()))?;
        let docs: Vec<Value> = docs.into_iter().filter(|d| !d.is_null()).collect();
        if docs.is_empty() {
            return Err(format!("file: {} holds no objects", path.display()));
        }
        Ok(docs)
    }

    fn write(&self, kind: WriteKind, w: Write) -> Result<WriteOp, String> {
        let rule = match kind {
            WriteKind::Create => NameRule::NameOrGenerateName,
            _ => NameRule::Required,
        };
        Ok(WriteOp {
            objects: self.objects(w.object, w.objects, w.file, rule)?,
            kind,
            status: w.subresource == Some(Subresource::Status),
            field_manager: w
                .field_manager
                .unwrap_or_else(|| DEFAULT_FIELD_MANAGER.into()),
        })
    }

    fn patch(&self, p: Patch) -> Result<WriteOp, String> {
        match (p.patch_type, &p.ops) {
            (PatchType::Json, None) => return Err("`type: json` needs `ops`".into()),
            (PatchType::Merge | PatchType::Strategic, Some(_)) => {
                return Err(
                    "`ops` is for `type: json`; a merge or strategic patch is the object itself"
                        .into(),
                );
            }
            _ => {}
        }
        Ok(WriteOp {
            objects: self.objects(p.object, p.objects, p.file, NameRule::Required)?,
            kind: WriteKind::Patch {
                patch_type: p.patch_type,
                ops: p.ops,
            },
            status: p.subresource == Some(Subresource::Status),
            field_manager: p
                .field_manager
                .unwrap_or_else(|| DEFAULT_FIELD_MANAGER.into()),
        })
    }

    fn delete(&self, d: Delete) -> Result<WriteOp, String> {
        Ok(WriteOp {
            objects: self.objects(d.object, d.objects, d.file, NameRule::Required)?,
            kind: WriteKind::Delete {
                propagation: d.propagation_policy,
            },
            status: false,
            field_manager: DEFAULT_FIELD_MANAGER.into(),
        })
    }

    fn assert(&self, a: Assert) -> Result<Action, String> {
        Ok(Action::Assert {
            objects: self.objects(a.object, a.objects, a.file, NameRule::Optional)?,
            timeout: a.timeout.map_or(DEFAULT_TIMEOUT, |d| d.0),
            list_keys: a.list_keys,
        })
    }

    fn absent(&self, a: Absent) -> Result<Action, String> {
        if a.timeout.is_some() && a.consistently.is_some() {
            return Err(
                "give `timeout` (gone within) or `consistently` (absent throughout), not both"
                    .into(),
            );
        }
        Ok(Action::Absent {
            objects: self.objects(a.object, a.objects, a.file, NameRule::Optional)?,
            timeout: a.timeout.map_or(DEFAULT_TIMEOUT, |d| d.0),
            consistently: a.consistently.map(|d| d.0),
        })
    }

    /// The write that is set (the first, when a caller has not checked there is one), checked,
    /// with its verb for messages.
    fn one_write(&self, w: Writes) -> Option<(&'static str, Result<WriteOp, String>)> {
        if let Some(w) = w.apply {
            Some(("apply", self.write(WriteKind::Apply, w)))
        } else if let Some(w) = w.create {
            Some(("create", self.write(WriteKind::Create, w)))
        } else if let Some(w) = w.update {
            Some(("update", self.write(WriteKind::Update, w)))
        } else if let Some(p) = w.patch {
            Some(("patch", self.patch(p)))
        } else {
            w.delete.map(|d| ("delete", self.delete(d)))
        }
    }

    fn expect_error(&self, x: ExpectError) -> Result<Action, String> {
        let writes = Writes {
            apply: x.apply,
            create: x.create,
            update: x.update,
            patch: x.patch,
            delete: x.delete,
        };
        if writes.count() != 1 {
            return Err("needs exactly one of apply, create, update, patch or delete: the request that must be refused".into());
        }
        if x.code.is_none() && x.reason.is_none() && x.message.is_none() {
            return Err("say what the refusal looks like: `code`, `reason` or `message`".into());
        }
        let (_, write) = self.one_write(writes).ok_or("no request")?;
        let write = write?;
        if write.objects.len() != 1 {
            return Err("the refused request must be about one object".into());
        }
        Ok(Action::Error {
            write,
            code: x.code,
            reason: x.reason,
            message: x.message,
        })
    }
}

/// The write fields a step or an `error` may hold.
struct Writes {
    apply: Option<Write>,
    create: Option<Write>,
    update: Option<Write>,
    patch: Option<Patch>,
    delete: Option<Delete>,
}

impl Writes {
    fn count(&self) -> usize {
        [
            self.apply.is_some(),
            self.create.is_some(),
            self.update.is_some(),
            self.patch.is_some(),
            self.delete.is_some(),
        ]
        .into_iter()
        .filter(|set| *set)
        .count()
    }
}

fn events(ev: Events) -> Result<Action, String> {
    if ev.expect.is_empty() {
        return Err("expect: list at least one event".into());
    }
    Ok(Action::Events {
        expect: ev.expect,
        timeout: ev.timeout.map_or(DEFAULT_TIMEOUT, |d| d.0),
    })
}

fn fault(f: Fault) -> FaultAction {
    match f {
        Fault::Fail(f) => FaultAction::Fail {
            code: f.code,
            rule: FaultTarget {
                verb: f.verb,
                resource: f.resource,
                namespace: f.namespace,
                name: f.name,
                times: f.times,
            },
        },
        Fault::Delay(d) => FaultAction::Delay {
            duration: d.duration.0,
            rule: FaultTarget {
                verb: d.verb,
                resource: d.resource,
                namespace: d.namespace,
                name: d.name,
                times: d.times,
            },
        },
        Fault::CloseWatches => FaultAction::CloseWatches,
        Fault::Partition(VirtualDuration(d)) => FaultAction::Partition(d),
        Fault::Heal => FaultAction::Heal,
        Fault::Clear => FaultAction::Clear,
    }
}

const OPERATIONS: [&str; 16] = [
    "apply", "create", "update", "patch", "delete", "assert", "error", "absent", "advance",
    "fault", "events", "dump", "watch", "stop", "start", "restart",
];

fn action_fields(r: &RawStep) -> usize {
    [
        r.apply.is_some(),
        r.create.is_some(),
        r.update.is_some(),
        r.patch.is_some(),
        r.delete.is_some(),
        r.assert.is_some(),
        r.error.is_some(),
        r.absent.is_some(),
        r.advance.is_some(),
        r.fault.is_some(),
        r.events.is_some(),
        r.dump.is_some(),
        r.watch.is_some(),
        r.stop.is_some(),
        r.start.is_some(),
        r.restart.is_some(),
    ]
    .into_iter()
    .filter(|set| *set)
    .count()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameRule {
    Required,
    NameOrGenerateName,
    /// Assertions without a name match any object of the kind.
    Optional,
}

fn check_object(obj: &Value, rule: NameRule) -> Result<(), String> {
    if !obj.is_object() {
        return Err("must be a mapping (a Kubernetes object)".into());
    }
    for field in ["apiVersion", "kind"] {
        if obj[field].as_str().is_none_or(str::is_empty) {
            return Err(format!("`{field}` is missing: every object names its kind"));
        }
    }
    let has = |f: &str| obj["metadata"][f].as_str().is_some_and(|s| !s.is_empty());
    match rule {
        NameRule::Required if !has("name") => Err("`metadata.name` is missing".into()),
        NameRule::NameOrGenerateName if !has("name") && !has("generateName") => {
            Err("`metadata.name` or `metadata.generateName` is missing".into())
        }
        _ => Ok(()),
    }
}

/// Every kind the steps' objects name, in order of first mention.
fn kinds_named(steps: &[Step]) -> Vec<KindRef> {
    let mut seen = Vec::new();
    let mut note = |obj: &Value| {
        let k = KindRef {
            api_version: obj["apiVersion"].as_str().unwrap_or_default().to_string(),
            kind: obj["kind"].as_str().unwrap_or_default().to_string(),
        };
        if !seen.contains(&k) {
            seen.push(k);
        }
    };
    for op in steps
        .iter()
        .flat_map(|s| s.try_.iter().chain(&s.catch).chain(&s.finally))
    {
        match &op.action {
            Action::Write(w) | Action::Error { write: w, .. } => {
                w.objects.iter().for_each(&mut note)
            }
            Action::Assert { objects, .. } | Action::Absent { objects, .. } => {
                objects.iter().for_each(&mut note)
            }
            _ => {}
        }
    }
    seen
}
