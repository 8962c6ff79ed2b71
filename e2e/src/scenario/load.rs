//! Reading a scenario file: parse it, then check what serde cannot (one operation per step,
//! blocks that do not nest, and each operation's own checks), so that a bad file is refused
//! before anything runs, with its file, line and field.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use serde_saphyr::Spanned;

use super::check::Checker;
use super::model::{Need, RawStep, ScenarioFile, WorkerFile};
use super::naming::KindRef;
use super::ops::{self, Operation, RawOperation};
use crate::env::MANAGER;
use crate::harness::kubeconfig::check_worker_name;

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
    /// Worker clusters by name, each with its components (MultiKueue).
    pub workers: BTreeMap<String, BTreeMap<String, Value>>,
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
        if !self.workers.is_empty() {
            return Some(
                "it declares worker clusters, which only the embedded backend runs".into(),
            );
        }
        if self.needs.contains(&Need::Faults) {
            return Some("it declares that it needs fault injection".into());
        }
        if self.needs.contains(&Need::VirtualTime) {
            return Some("it declares that it needs virtual time".into());
        }
        for op in self.operations() {
            if op.action.injects_faults() {
                return Some(format!("line {}: it injects faults", op.line));
            }
            if let Some((verb, d)) = op.action.wait()
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

    /// Every operation of every step: `try`, then `catch`, then `finally`, step by step.
    pub fn operations(&self) -> impl Iterator<Item = &Op> {
        self.steps
            .iter()
            .flat_map(|s| s.try_.iter().chain(&s.catch).chain(&s.finally))
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
    /// The worker cluster it runs on; `None` for the manager (the scenario's own cluster).
    pub cluster: Option<String>,
    pub action: Arc<dyn Operation>,
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
    let workers = raw
        .workers
        .as_ref()
        .map(|w| w.value.keys().cloned().collect())
        .unwrap_or_default();
    Loader {
        file,
        checker: Checker::new(dir),
        workers,
    }
    .scenario(raw)
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

/// Checks the file's structure, and each operation with the operation's own check.
struct Loader<'a> {
    file: &'a str,
    checker: Checker<'a>,
    /// The worker clusters the file declares.
    workers: Vec<String>,
}

impl Loader<'_> {
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
        let workers = match raw.workers {
            Some(section) => self.workers_section(section.referenced.line(), section.value)?,
            None => BTreeMap::new(),
        };
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
        let mut scenario = Scenario {
            name,
            description: raw.description,
            tags: raw.tags,
            file: self.file.to_string(),
            components: raw.components,
            workers,
            trace,
            namespace: raw.namespace.unwrap_or_else(|| "default".into()),
            needs: raw.needs,
            steps,
        };
        if scenario.trace.is_empty() {
            scenario.trace = kinds_named(&scenario);
        }
        Ok(scenario)
    }

    fn workers_section(
        &self,
        line: u64,
        section: BTreeMap<String, WorkerFile>,
    ) -> Result<BTreeMap<String, BTreeMap<String, Value>>, LoadError> {
        let mut workers = BTreeMap::new();
        for (name, worker) in section {
            check_worker_name(&name).map_err(|m| self.err(line, format!("workers: {m}")))?;
            if name == MANAGER {
                return Err(self.err(
                    line,
                    format!("workers: `{MANAGER}` names the scenario's own cluster; call the worker otherwise"),
                ));
            }
            workers.insert(name, worker.components);
        }
        Ok(workers)
    }

    /// Every cluster a step may name, for errors.
    fn clusters(&self) -> String {
        std::iter::once(MANAGER.to_string())
            .chain(self.workers.iter().cloned())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The worker a step's `cluster` names (`None`: the manager).
    fn cluster(
        &self,
        at: &str,
        line: u64,
        cluster: Option<String>,
    ) -> Result<Option<String>, LoadError> {
        match cluster {
            None => Ok(None),
            Some(c) if c == MANAGER => Ok(None),
            Some(c) if self.workers.contains(&c) => Ok(Some(c)),
            Some(c) => Err(self.err(
                line,
                format!(
                    "{at}.cluster: no cluster named `{c}` (clusters: {})",
                    self.clusters()
                ),
            )),
        }
    }

    fn step(&self, at: &str, raw: Spanned<RawStep>) -> Result<Step, LoadError> {
        let line = raw.referenced.line();
        let raw = raw.value;
        let has_operation = !raw.operations.is_empty();
        match raw.try_ {
            Some(ops) => {
                if has_operation {
                    return Err(self.err(
                        line,
                        format!("{at}: a step has either `try` or one operation, not both"),
                    ));
                }
                if raw.cluster.is_some() {
                    return Err(self.err(
                        line,
                        format!("{at}: put `cluster` on the operations inside `try`"),
                    ));
                }
                if ops.is_empty() {
                    return Err(self.err(line, format!("{at}.try: needs at least one operation")));
                }
                Ok(Step {
                    name: raw.name,
                    line,
                    try_: self.ops(&format!("{at}.try"), ops)?,
                    catch: self.ops(&format!("{at}.catch"), raw.catch.unwrap_or_default())?,
                    finally: self.ops(&format!("{at}.finally"), raw.finally.unwrap_or_default())?,
                })
            }
            None => {
                if raw.catch.is_some() || raw.finally.is_some() {
                    return Err(self.err(
                        line,
                        format!("{at}: `catch` and `finally` belong to a step with `try`"),
                    ));
                }
                let op = self.op(at, line, raw.name.clone(), raw.cluster, raw.operations)?;
                Ok(Step {
                    name: raw.name,
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
                let r = r.value;
                if r.try_.is_some() || r.catch.is_some() || r.finally.is_some() {
                    return Err(self.err(
                        line,
                        format!("{at}: `try`, `catch` and `finally` do not nest"),
                    ));
                }
                self.op(&at, line, r.name, r.cluster, r.operations)
            })
            .collect()
    }

    fn op(
        &self,
        at: &str,
        line: u64,
        name: Option<String>,
        cluster: Option<String>,
        mut operations: Vec<RawOperation>,
    ) -> Result<Op, LoadError> {
        if operations.len() != 1 {
            return Err(self.err(
                line,
                format!(
                    "{at}: needs exactly one operation ({}), found {}",
                    ops::KEYS.join(", "),
                    operations.len()
                ),
            ));
        }
        let RawOperation { key, fields } = operations.remove(0);
        let action = fields
            .check(&self.checker)
            .map_err(|m| self.err(line, format!("{at}.{key}: {m}")))?;
        if let Some(worker) = action.worker() {
            if cluster.is_some() {
                return Err(self.err(
                    line,
                    format!("{at}: `{key}` names its worker itself; leave out `cluster`"),
                ));
            }
            if !self.workers.iter().any(|w| w == worker) {
                return Err(self.err(
                    line,
                    format!(
                        "{at}.{key}: no worker cluster named `{worker}` (workers: {})",
                        if self.workers.is_empty() {
                            "none; declare them under `workers`".to_string()
                        } else {
                            self.workers.join(", ")
                        }
                    ),
                ));
            }
        }
        let cluster = self.cluster(at, line, cluster)?;
        Ok(Op {
            name,
            line,
            cluster,
            action: Arc::from(action),
        })
    }
}

/// Every kind the operations' objects name, in order of first mention.
fn kinds_named(scenario: &Scenario) -> Vec<KindRef> {
    let mut seen = Vec::new();
    for obj in scenario.operations().flat_map(|op| op.action.objects()) {
        let kind = KindRef::of(obj);
        if !seen.contains(&kind) {
            seen.push(kind);
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "name: s\ndescription: d\nsteps:\n";

    fn refused(steps: &str) -> String {
        match parse("s.yaml", &format!("{HEAD}{steps}"), Path::new(".")) {
            Ok(_) => panic!("the scenario was accepted"),
            Err(e) => e.to_string(),
        }
    }

    fn blocker(steps: &str) -> Option<String> {
        parse("s.yaml", &format!("{HEAD}{steps}"), Path::new("."))
            .unwrap()
            .real_time_blocker()
    }

    #[test]
    fn a_step_without_an_operation_lists_every_operation() {
        let message = refused("  - name: nothing\n");
        assert!(
            message.contains(
                "s.yaml:4:0: steps[0]: needs exactly one operation (apply, create, update, \
                 patch, delete, assert, error, absent, advance, fault, events, dump, watch, \
                 stop, start, restart, partition, heal, slow), found 0"
            ),
            "{message}"
        );
    }

    #[test]
    fn a_misspelt_operation_lists_what_a_step_may_hold() {
        let message = refused("  - advanc: 1m\n");
        assert!(
            message.contains(
                "s.yaml:4:5: unknown field `advanc`, expected one of name, cluster, try, catch, \
                 finally, apply, create, update, patch, delete, assert, error, absent, advance, \
                 fault, events, dump, watch, stop, start, restart, partition, heal, slow"
            ),
            "{message}"
        );
    }

    #[test]
    fn an_operation_in_a_block_is_named_by_its_path() {
        let message = refused(
            "  - try:\n      - advance: 1s\n    finally:\n      - delete:\n          object: {apiVersion: v1, kind: Pod}\n",
        );
        assert!(
            message.contains(
                "s.yaml:7:0: steps[0].finally[0].delete: objects[0]: `metadata.name` is missing"
            ),
            "{message}"
        );
    }

    const WORKERS: &str = "name: s\ndescription: d\nworkers:\n  worker-1: {}\n  worker-2:\n    components: {job-runner: {}}\nsteps:\n";

    fn refused_with_workers(steps: &str) -> String {
        match parse("s.yaml", &format!("{WORKERS}{steps}"), Path::new(".")) {
            Ok(_) => panic!("the scenario was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn steps_address_clusters_by_name() {
        let scenario = parse(
            "s.yaml",
            &format!(
                "{WORKERS}  - advance: 1s\n    cluster: worker-2\n  - advance: 1s\n    cluster: manager\n  - partition: {{worker: worker-1, mode: hang, for: 1m}}\n  - heal: worker-1\n"
            ),
            Path::new("."),
        )
        .expect("the scenario is accepted");
        let clusters: Vec<Option<&str>> = scenario
            .operations()
            .map(|op| op.cluster.as_deref())
            .collect();
        assert_eq!(clusters, [Some("worker-2"), None, None, None]);
        assert_eq!(
            scenario.workers["worker-2"].keys().collect::<Vec<_>>(),
            ["job-runner"]
        );
        assert_eq!(
            scenario.operations().nth(2).map(|op| op.action.describe()),
            Some("partition worker-1 (hanging for 1m0s)".to_string())
        );
        assert_eq!(
            scenario.real_time_blocker().as_deref(),
            Some("it declares worker clusters, which only the embedded backend runs")
        );
    }

    #[test]
    fn an_unknown_cluster_is_refused_with_the_clusters_there_are() {
        let cases = [
            (
                refused_with_workers("  - advance: 1s\n    cluster: worker-3\n"),
                "s.yaml:8:0: steps[0].cluster: no cluster named `worker-3` (clusters: manager, \
                 worker-1, worker-2)",
            ),
            (
                refused("  - heal: worker-1\n"),
                "steps[0].heal: no worker cluster named `worker-1` (workers: none; declare them \
                 under `workers`)",
            ),
            (
                refused_with_workers("  - heal: worker-1\n    cluster: worker-1\n"),
                "steps[0]: `heal` names its worker itself; leave out `cluster`",
            ),
            (
                refused_with_workers("  - try:\n      - advance: 1s\n    cluster: worker-1\n"),
                "steps[0]: put `cluster` on the operations inside `try`",
            ),
        ];
        for (message, expected) in cases {
            assert!(message.contains(expected), "{message}");
        }
    }

    #[test]
    fn workers_are_named_as_hosts_and_not_manager() {
        let bad = |name: &str| match parse(
            "s.yaml",
            &format!(
                "name: s\ndescription: d\nworkers:\n  {name}: {{}}\nsteps:\n  - advance: 1s\n"
            ),
            Path::new("."),
        ) {
            Ok(_) => panic!("`{name}` was accepted"),
            Err(e) => e.to_string(),
        };
        let message = bad("Worker_1");
        assert!(
            message.starts_with("s.yaml:4:0: workers: `Worker_1` cannot name a worker cluster"),
            "{message}"
        );
        let message = bad("manager");
        assert!(
            message.contains("`manager` names the scenario's own cluster"),
            "{message}"
        );
    }

    #[test]
    fn real_clusters_are_refused_faults_and_long_waits_with_the_line() {
        assert_eq!(blocker("  - advance: 30s\n"), None);
        assert_eq!(
            blocker("  - advance: 1s\n  - fault: heal\n").as_deref(),
            Some("line 5: it injects faults")
        );
        assert_eq!(
            blocker("  - advance: 45m\n").as_deref(),
            Some("line 4: it advances 45m0s on virtual time; a real cluster waits at most 30s")
        );
        let absent =
            "  - absent:\n      object: {apiVersion: v1, kind: Pod}\n      consistently: 2m\n";
        assert_eq!(
            blocker(absent).as_deref(),
            Some("line 4: it waits 2m0s on virtual time; a real cluster waits at most 30s")
        );
    }

    mod properties {
        use proptest::prelude::*;

        use super::*;

        /// A scenario that loads: every mutation of it below must load or be refused with a place.
        const GOOD: &str = include_str!("../../scenarios/try-catch-finally.yaml");

        /// Refused with the file's name and a line that is in the text (0: no line applies).
        fn located(text: &str) -> Result<(), String> {
            match parse("f.yaml", text, Path::new(".")) {
                Ok(_) => Ok(()),
                Err(e) => {
                    // YAML breaks lines at `\r` too.
                    let lines = text.replace("\r\n", "\n").matches(['\n', '\r']).count() as u64 + 1;
                    let shown = e.to_string();
                    if !shown.starts_with("f.yaml:") || e.line > lines + 1 || e.message.is_empty() {
                        return Err(shown);
                    }
                    Ok(())
                }
            }
        }

        #[test]
        fn the_scenario_mutated_below_loads() {
            parse("f.yaml", GOOD, Path::new(".")).expect("it loads");
        }

        proptest! {
            #[test]
            fn any_text_loads_or_is_refused_with_its_place(text in "\\PC{0,80}") {
                prop_assert_eq!(located(&text), Ok(()));
            }

            #[test]
            fn a_scenario_cut_short_or_missing_a_line_is_refused_with_its_place(
                cut in 0..GOOD.len(),
                dropped in 0..GOOD.lines().count(),
            ) {
                let end = (0..=cut).rev().find(|i| GOOD.is_char_boundary(*i)).unwrap_or(0);
                prop_assert_eq!(located(&GOOD[..end]), Ok(()));
                let without: Vec<&str> = GOOD
                    .lines()
                    .enumerate()
                    .filter_map(|(i, l)| (i != dropped).then_some(l))
                    .collect();
                prop_assert_eq!(located(&without.join("\n")), Ok(()));
            }

            /// A step that holds no operation is refused on its own line, after any number of
            /// good ones.
            #[test]
            fn a_bad_step_is_refused_on_its_line(good in 0usize..20, key in "[a-z]{3,8}") {
                prop_assume!(!["advance", "fault", "assert", "apply", "create", "update", "patch", "delete", "error", "absent", "events", "dump", "watch", "stop", "start", "restart", "partition", "heal", "slow", "name", "cluster", "try", "catch", "finally"].contains(&key.as_str()));
                let steps = format!("{}  - {key}: x\n", "  - advance: 1s\n".repeat(good));
                let e = parse("s.yaml", &format!("{HEAD}{steps}"), Path::new(".")).expect_err("refused");
                prop_assert_eq!(e.line, 4 + good as u64, "{}", e);
            }
        }
    }
}
