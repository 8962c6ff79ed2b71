//! A suite run's specs, read from ginkgo's JSON report, and the comparison of the backends.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::Duration;

use anyhow::{Context, Result, bail};

/// One spec's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Spec {
    /// Ginkgo's full text: the containers' texts and the spec's, joined by spaces.
    pub name: String,
    /// Where the spec is declared (`file:line`): two specs of a suite may share a full text.
    pub location: String,
    /// Ginkgo's state: passed, failed, skipped, pending, panicked, timedout, interrupted, aborted.
    pub state: String,
    /// Where it failed and why, for the summary.
    pub failure: Option<String>,
}

impl Spec {
    fn passed(&self) -> bool {
        self.state == "passed"
    }

    /// Whether it failed, as opposed to passing or not running (left out by a focus, pending).
    fn failed(&self) -> bool {
        !matches!(self.state.as_str(), "passed" | "skipped" | "pending")
    }

    /// The spec's identity across runs: its text and where it is declared.
    fn key(&self) -> (&str, &str) {
        (&self.name, &self.location)
    }
}

/// One suite on one backend.
#[derive(Debug)]
pub struct SuiteRun {
    pub suite: &'static str,
    pub backend: &'static str,
    pub specs: Vec<Spec>,
    /// A failure outside the specs (BeforeSuite, AfterSuite), or a run that left no report.
    pub suite_failure: Option<String>,
    pub wall: Duration,
    pub peak_kib: Option<u64>,
    pub log: PathBuf,
}

impl SuiteRun {
    pub fn read(
        suite: &'static str,
        backend: &'static str,
        json: &Path,
        log: &Path,
        status: ExitStatus,
        wall: Duration,
        peak_kib: Option<u64>,
    ) -> Result<SuiteRun> {
        let mut run = SuiteRun {
            suite,
            backend,
            specs: Vec::new(),
            suite_failure: None,
            wall,
            peak_kib,
            log: log.to_path_buf(),
        };
        let text = match std::fs::read_to_string(json) {
            Ok(text) => text,
            Err(_) => {
                run.suite_failure = Some(format!("it left no report ({status})"));
                return Ok(run);
            }
        };
        match parse(&text) {
            Ok((specs, failure)) => {
                run.specs = specs;
                run.suite_failure = failure;
            }
            Err(e) => {
                run.suite_failure =
                    Some(format!("its report {} is unreadable: {e}", json.display()));
            }
        }
        // A run that failed with every node passed (an interrupt, a timeout before the report's
        // end, a crash in a report hook) is a failure of the suite, not a pass.
        if run.suite_failure.is_none() && !status.success() && !run.specs.iter().any(Spec::failed) {
            run.suite_failure = Some(format!("it exited {status} with no failed spec"));
        }
        Ok(run)
    }

    fn passed(&self) -> usize {
        self.specs.iter().filter(|s| s.passed()).count()
    }

    pub fn one_line(&self) -> String {
        format!(
            "{} on the {}: {} of {} specs passed in {}{}",
            self.suite,
            self.backend,
            self.passed(),
            self.specs.len(),
            minutes(self.wall),
            self.suite_failure
                .as_ref()
                .map(|f| format!("; the suite failed: {f}"))
                .unwrap_or_default()
        )
    }
}

/// The specs of a ginkgo JSON report, and the first failure of a node that is not a spec.
fn parse(text: &str) -> Result<(Vec<Spec>, Option<String>)> {
    let reports: Vec<serde_json::Value> = serde_json::from_str(text)?;
    let mut specs = Vec::new();
    let mut suite_failure = None;
    for report in &reports {
        let nodes = report["SpecReports"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        for node in nodes {
            let state = node["State"].as_str().unwrap_or("unknown").to_string();
            let failed = !matches!(state.as_str(), "passed" | "skipped" | "pending");
            let failure = failed.then(|| failure_of(node));
            if node["LeafNodeType"] == "It" {
                let mut words: Vec<&str> = node["ContainerHierarchyTexts"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|t| t.as_str()).collect())
                    .unwrap_or_default();
                words.push(node["LeafNodeText"].as_str().unwrap_or_default());
                let at = &node["LeafNodeLocation"];
                specs.push(Spec {
                    name: words.join(" "),
                    location: format!(
                        "{}:{}",
                        at["FileName"].as_str().unwrap_or("?"),
                        at["LineNumber"]
                    ),
                    state,
                    failure,
                });
            } else if let Some(failure) = failure {
                suite_failure.get_or_insert(format!(
                    "{} {state}: {failure}",
                    node["LeafNodeType"].as_str().unwrap_or("a node")
                ));
            }
        }
    }
    if suite_failure.is_none()
        && reports.iter().any(|r| r["SuiteSucceeded"] == false)
        && !specs.iter().any(Spec::failed)
    {
        suite_failure = Some("ginkgo reports the suite failed, though no spec did".into());
    }
    Ok((specs, suite_failure))
}

fn failure_of(node: &serde_json::Value) -> String {
    let failure = &node["Failure"];
    let location = &failure["Location"];
    let message = failure["Message"].as_str().unwrap_or("no message");
    let first_line = message.lines().next().unwrap_or_default();
    format!(
        "{}:{}: {first_line}",
        location["FileName"]
            .as_str()
            .and_then(|f| f.rsplit("/test/").next())
            .unwrap_or("?"),
        location["LineNumber"]
    )
}

/// Specs known to differ on the fake, each with its reason: tools/kueue-suites/known.txt, lines
/// of `suite | spec's full text | reason`.
pub struct Known(BTreeMap<(String, String), String>);

impl Known {
    pub fn load(path: &Path) -> Result<Known> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        Known::parse(&text).with_context(|| format!("in {}", path.display()))
    }

    fn parse(text: &str) -> Result<Known> {
        let mut known = BTreeMap::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&str> = line.splitn(3, '|').map(str::trim).collect();
            match fields[..] {
                [suite, spec, reason]
                    if !suite.is_empty() && !spec.is_empty() && !reason.is_empty() =>
                {
                    known.insert((suite.to_string(), spec.to_string()), reason.to_string());
                }
                _ => bail!(
                    "line {}: expected `suite | spec | reason`, found {line:?}",
                    n + 1
                ),
            }
        }
        Ok(Known(known))
    }

    fn reason(&self, suite: &str, spec: &str) -> Option<&str> {
        self.0
            .get(&(suite.to_string(), spec.to_string()))
            .map(String::as_str)
    }
}

/// Every suite's runs side by side, and what differs.
pub struct Comparison<'a> {
    runs: &'a [SuiteRun],
    /// Specs that passed on the reference and not on the fake, not listed as known: suite, the
    /// spec, and the line that says so.
    differences: Vec<(&'static str, Spec, String)>,
    /// Differences that passed when the fake ran them again.
    flaky: Vec<String>,
    /// Listed ones, with their reasons.
    known: Vec<String>,
    /// Specs that failed on the reference itself, and suites that could not run.
    trouble: Vec<String>,
    /// Listed ones that passed on the fake after all.
    stale: Vec<String>,
}

impl<'a> Comparison<'a> {
    pub fn new(runs: &'a [SuiteRun], known: &Known) -> Comparison<'a> {
        let mut comparison = Comparison {
            runs,
            differences: Vec::new(),
            flaky: Vec::new(),
            known: Vec::new(),
            trouble: Vec::new(),
            stale: Vec::new(),
        };
        for run in runs {
            if let Some(failure) = &run.suite_failure {
                comparison.trouble.push(format!(
                    "{} on the {}: {failure} (log: {})",
                    run.suite,
                    run.backend,
                    run.log.display()
                ));
            }
        }
        // A failure on the reference is reported, not held against the fake.
        for run in runs.iter().filter(|r| r.backend == "reference") {
            for spec in run.specs.iter().filter(|s| s.failed()) {
                comparison.trouble.push(format!(
                    "{}: {:?} {} on the reference: {}",
                    run.suite,
                    spec.name,
                    spec.state,
                    spec.failure.as_deref().unwrap_or("")
                ));
            }
        }
        let reference = |suite: &str| {
            runs.iter()
                .find(|r| r.suite == suite && r.backend == "reference")
        };
        for fake in runs.iter().filter(|r| r.backend == "fake") {
            let Some(reference) = reference(fake.suite) else {
                // The fake alone: no spec may fail.
                for spec in fake.specs.iter().filter(|s| s.failed()) {
                    comparison.note_fake_miss(known, fake, spec);
                }
                continue;
            };
            let on_fake: BTreeMap<(&str, &str), &Spec> =
                fake.specs.iter().map(|s| (s.key(), s)).collect();
            for spec in reference.specs.iter().filter(|s| s.passed()) {
                match on_fake.get(&spec.key()) {
                    Some(s) if s.passed() => {
                        if known.reason(fake.suite, &s.name).is_some() {
                            comparison
                                .stale
                                .push(format!("{}: {:?}", fake.suite, s.name));
                        }
                    }
                    Some(s) => comparison.note_fake_miss(known, fake, s),
                    None => comparison.note_fake_miss(
                        known,
                        fake,
                        &Spec {
                            state: "not run".into(),
                            failure: None,
                            ..spec.clone()
                        },
                    ),
                }
            }
        }
        comparison
    }

    fn note_fake_miss(&mut self, known: &Known, run: &SuiteRun, spec: &Spec) {
        let line = format!(
            "{}: {:?} {} on the fake{}",
            run.suite,
            spec.name,
            spec.state,
            spec.failure
                .as_ref()
                .map(|f| format!(": {f}"))
                .unwrap_or_default()
        );
        match known.reason(run.suite, &spec.name) {
            Some(reason) => self.known.push(format!("{line} (known: {reason})")),
            None => self.differences.push((run.suite, spec.clone(), line)),
        }
    }

    /// The full texts of `suite`'s specs that differ, to run again.
    pub fn differing(&self, suite: &str) -> Vec<&str> {
        self.differences
            .iter()
            .filter(|(s, _, _)| *s == suite)
            .map(|(_, spec, _)| spec.name.as_str())
            .collect()
    }

    /// Takes in the fake's second run of `rerun.suite`'s differing specs: one that passed there
    /// is flaky on the fake, reported but not held against it.
    pub fn retried(&mut self, rerun: &SuiteRun) {
        let passed: Vec<(&str, &str)> = rerun
            .specs
            .iter()
            .filter(|s| s.passed())
            .map(Spec::key)
            .collect();
        let (flaky, still): (Vec<_>, Vec<_>) = std::mem::take(&mut self.differences)
            .into_iter()
            .partition(|(suite, spec, _)| *suite == rerun.suite && passed.contains(&spec.key()));
        self.differences = still;
        self.flaky.extend(
            flaky
                .into_iter()
                .map(|(_, _, line)| format!("{line}; passed when run again")),
        );
    }

    /// The table of suites and backends, then every difference.
    pub fn markdown(&self) -> String {
        let mut suites: Vec<&str> = Vec::new();
        for run in self.runs {
            if !suites.contains(&run.suite) {
                suites.push(run.suite);
            }
        }
        let mut out = String::from(
            "| suite | backend | specs passed | wall time | servers' peak memory |\n| --- | --- | --- | --- | --- |\n",
        );
        for suite in suites {
            for run in self.runs.iter().filter(|r| r.suite == suite) {
                out.push_str(&format!(
                    "| {} | {} | {} of {} | {} | {} |\n",
                    run.suite,
                    run.backend,
                    run.passed(),
                    run.specs.len(),
                    minutes(run.wall),
                    run.peak_kib
                        .map(|k| format!("{} MiB", k / 1024))
                        .unwrap_or_else(|| "-".into())
                ));
            }
        }
        for backend in ["reference", "fake"] {
            let runs: Vec<&SuiteRun> = self.runs.iter().filter(|r| r.backend == backend).collect();
            if runs.len() > 1 {
                let wall: Duration = runs.iter().map(|r| r.wall).sum();
                let passed: usize = runs.iter().map(|r| r.passed()).sum();
                let specs: usize = runs.iter().map(|r| r.specs.len()).sum();
                out.push_str(&format!(
                    "| all | {backend} | {passed} of {specs} | {} | |\n",
                    minutes(wall)
                ));
            }
        }
        let differences: Vec<String> = self.differences.iter().map(|(_, _, l)| l.clone()).collect();
        for (title, lines) in [
            ("Passed on the reference, not on the fake", &differences),
            (
                "Failed on the fake, passed when run again (flaky)",
                &self.flaky,
            ),
            (
                "Known differences (tools/kueue-suites/known.txt)",
                &self.known,
            ),
            (
                "Failures on the reference, and suites that did not run",
                &self.trouble,
            ),
            (
                "Listed in known.txt, but passed on the fake this time",
                &self.stale,
            ),
        ] {
            if !lines.is_empty() {
                out.push_str(&format!("\n{title}:\n"));
                for line in lines {
                    out.push_str(&format!("- {line}\n"));
                }
            }
        }
        out
    }

    /// Fails on any unlisted difference and on any suite that could not run.
    pub fn verdict(&self) -> Result<()> {
        let broken = self
            .runs
            .iter()
            .filter(|r| r.suite_failure.is_some())
            .count();
        if !self.differences.is_empty() || broken > 0 {
            bail!(
                "{} spec(s) passed on the reference and not on the fake, and {broken} suite run(s) failed outside their specs (above)",
                self.differences.len()
            );
        }
        Ok(())
    }
}

fn minutes(d: Duration) -> String {
    let s = d.as_secs();
    format!("{}:{:02}", s / 60, s % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(specs: &[(&str, &str)], before_suite: &str) -> String {
        let mut nodes = vec![serde_json::json!({
            "LeafNodeType": "BeforeSuite", "State": before_suite, "ContainerHierarchyTexts": null,
            "LeafNodeText": "",
            "Failure": {"Message": "unable to install webhooks\nmore", "Location": {"FileName": "/k/test/integration/framework/framework.go", "LineNumber": 126}}
        })];
        for (name, state) in specs {
            // Declared on a line of its own; a second spec of the same text is marked `#2`.
            let (name, line) = match name.strip_suffix(" #2") {
                Some(text) => (text, 1000 + text.len()),
                None => (*name, name.len()),
            };
            nodes.push(serde_json::json!({
                "LeafNodeType": "It", "State": state, "ContainerHierarchyTexts": ["Provisioning", "when a class"],
                "LeafNodeText": name,
                "LeafNodeLocation": {"FileName": "/k/test/integration/x/x_test.go", "LineNumber": line},
                "Failure": {"Message": "Timed out after 10s.\nExpected", "Location": {"FileName": "/k/test/integration/x/x_test.go", "LineNumber": 7}}
            }));
        }
        serde_json::json!([{"SuiteDescription": "s", "SpecReports": nodes}]).to_string()
    }

    fn run(backend: &'static str, specs: &[(&str, &str)]) -> SuiteRun {
        let (specs, suite_failure) = parse(&report(specs, "passed")).unwrap();
        SuiteRun {
            suite: "provisioning",
            backend,
            specs,
            suite_failure,
            wall: Duration::from_secs(75),
            peak_kib: Some(2048),
            log: PathBuf::from("x.log"),
        }
    }

    #[test]
    fn specs_are_named_by_their_full_text_and_a_before_suite_failure_is_the_suites() {
        let (specs, failure) = parse(&report(
            &[("admits", "passed"), ("waits", "failed")],
            "failed",
        ))
        .unwrap();
        assert_eq!(specs[0].name, "Provisioning when a class admits");
        assert!(specs[0].passed() && !specs[1].passed());
        assert_eq!(
            specs[1].failure.as_deref(),
            Some("integration/x/x_test.go:7: Timed out after 10s.")
        );
        assert_eq!(
            failure.as_deref(),
            Some(
                "BeforeSuite failed: integration/framework/framework.go:126: unable to install webhooks"
            )
        );
    }

    #[test]
    fn a_spec_that_passes_only_on_the_reference_fails_the_run_unless_known() {
        let runs = [
            run(
                "reference",
                &[
                    ("admits", "passed"),
                    ("waits", "passed"),
                    ("flakes", "failed"),
                ],
            ),
            run(
                "fake",
                &[
                    ("admits", "passed"),
                    ("waits", "failed"),
                    ("flakes", "failed"),
                ],
            ),
        ];
        let none = Known::parse("").unwrap();
        let comparison = Comparison::new(&runs, &none);
        assert!(comparison.verdict().is_err());
        let text = comparison.markdown();
        assert!(
            text.contains("| provisioning | fake | 1 of 3 | 1:15 | 2 MiB |"),
            "{text}"
        );
        assert!(text.contains("- provisioning: \"Provisioning when a class waits\" failed on the fake: integration/x/x_test.go:7: Timed out after 10s."), "{text}");
        // A failure on the reference is reported, not held against the fake.
        assert!(
            text.contains("\"Provisioning when a class flakes\" failed on the reference"),
            "{text}"
        );

        let known = Known::parse(
            "# why\nprovisioning | Provisioning when a class waits | needs a kubelet\n",
        )
        .unwrap();
        let comparison = Comparison::new(&runs, &known);
        assert!(comparison.verdict().is_ok());
        assert!(comparison.markdown().contains("(known: needs a kubelet)"));

        // A listed spec that passes is pointed out, so the list does not outlive its reason.
        let known =
            Known::parse("provisioning | Provisioning when a class admits | was slow\n").unwrap();
        let text = Comparison::new(&runs, &known).markdown();
        assert!(text.contains("but passed on the fake this time:\n- provisioning: \"Provisioning when a class admits\""), "{text}");
    }

    #[test]
    fn a_difference_that_passes_when_run_again_is_flaky_not_a_failure() {
        let runs = [
            run("reference", &[("admits", "passed"), ("waits", "passed")]),
            run("fake", &[("admits", "failed"), ("waits", "failed")]),
        ];
        let mut comparison = Comparison::new(&runs, &Known::parse("").unwrap());
        assert_eq!(
            comparison.differing("provisioning"),
            [
                "Provisioning when a class admits",
                "Provisioning when a class waits"
            ]
        );
        comparison.retried(&run("fake", &[("admits", "passed"), ("waits", "failed")]));
        assert_eq!(
            comparison.differing("provisioning"),
            ["Provisioning when a class waits"]
        );
        let text = comparison.markdown();
        assert!(
            text.contains(
                "(flaky):\n- provisioning: \"Provisioning when a class admits\" failed on the fake"
            ),
            "{text}"
        );
        assert!(comparison.verdict().is_err());
        comparison.retried(&run("fake", &[("waits", "passed")]));
        assert!(comparison.verdict().is_ok());
    }

    #[test]
    fn on_the_fake_alone_a_failure_counts_and_a_spec_left_out_by_a_focus_does_not() {
        let runs = [run("fake", &[("admits", "passed"), ("waits", "skipped")])];
        assert!(
            Comparison::new(&runs, &Known::parse("").unwrap())
                .verdict()
                .is_ok()
        );
        let runs = [run("fake", &[("admits", "failed"), ("waits", "skipped")])];
        assert!(
            Comparison::new(&runs, &Known::parse("").unwrap())
                .verdict()
                .is_err()
        );
    }

    #[test]
    fn specs_of_one_text_are_told_apart_by_where_they_are_declared() {
        let runs = [
            run(
                "reference",
                &[("admits", "passed"), ("admits #2", "passed")],
            ),
            run("fake", &[("admits", "failed"), ("admits #2", "passed")]),
        ];
        let comparison = Comparison::new(&runs, &Known::parse("").unwrap());
        assert!(comparison.verdict().is_err());
        assert_eq!(
            comparison.differing("provisioning"),
            ["Provisioning when a class admits"]
        );
    }

    #[test]
    fn a_run_that_exits_badly_or_says_it_failed_with_no_failed_spec_is_a_suite_failure() {
        let dir = tempfile::tempdir().unwrap();
        let json = dir.path().join("r.json");
        std::fs::write(&json, report(&[("admits", "passed")], "passed")).unwrap();
        let exit = |code: i32| std::os::unix::process::ExitStatusExt::from_raw(code << 8);
        let read = |status| {
            SuiteRun::read("core", "fake", &json, &json, status, Duration::ZERO, None).unwrap()
        };
        assert_eq!(read(exit(0)).suite_failure, None);
        let failure = read(exit(1)).suite_failure.unwrap();
        assert!(failure.contains("no failed spec"), "{failure}");

        let said = serde_json::json!([{"SuiteSucceeded": false, "SpecReports": []}]).to_string();
        let (_, failure) = parse(&said).unwrap();
        assert!(failure.unwrap().contains("ginkgo reports the suite failed"));

        std::fs::write(&json, "not json").unwrap();
        let failure = read(exit(1)).suite_failure.unwrap();
        assert!(failure.contains("is unreadable"), "{failure}");
    }

    #[test]
    fn a_spec_missing_on_the_fake_is_a_difference() {
        let runs = [run("reference", &[("admits", "passed")]), run("fake", &[])];
        let comparison = Comparison::new(&runs, &Known::parse("").unwrap());
        assert!(comparison.verdict().is_err());
        assert!(comparison.markdown().contains("not run on the fake"));
    }

    #[test]
    fn a_known_line_needs_three_fields() {
        let err = Known::parse("provisioning | a spec\n")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("line 1"), "{err}");
    }
}
