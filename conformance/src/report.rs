//! The results as a vendor publishes them: a `ConformanceReport` YAML (after Gateway API's), JUnit
//! XML for CI systems, and a summary table for the terminal.

use std::fmt::Write as _;
use std::time::Duration;

use api::config::GoDuration;
use serde::Serialize;

use crate::options::{Feature, Implementation, Options, Timeouts};
use crate::runner::{Outcome, TestResult};
use crate::suite::Profile;

/// This suite's version, written into every report.
pub const SUITE_VERSION: &str = env!("CARGO_PKG_VERSION");

#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConformanceReport {
    pub api_version: String,
    pub kind: String,
    pub implementation: Implementation,
    pub date: String,
    pub suite_version: String,
    /// `embedded` (fake API server, virtual time) or `cluster`.
    pub mode: String,
    pub provisioning_class_name: String,
    /// The class's verdict, by profile.
    pub profiles: Vec<ProfileReport>,
    /// Checks of the cluster's installation (its CRDs), not of the class: apart from its verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub installation: Option<ProfileReport>,
    /// Every timeout the run used.
    pub timeouts: Timeouts,
    /// How fast the class answered, and how long the suite watched for broken rules.
    pub pace: PaceReport,
    /// How to run it again.
    pub reproduce: String,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PaceReport {
    /// The longest the class took to give a request its first condition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slowest_answer: Option<GoDuration>,
    /// The shortest window a test watched to its end for a change that must not come.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shortest_hold: Option<GoDuration>,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProfileReport {
    pub name: String,
    /// `success`, `partial` (a test skipped that the profile needs) or `failure`.
    pub result: String,
    pub statistics: Statistics,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed_tests: Vec<Named>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped_tests: Vec<Named>,
    /// Tests that passed with settings too short to see their rule broken.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub limited_tests: Vec<Named>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsupported_features: Option<Vec<String>>,
}

#[derive(Serialize, Debug, Clone, PartialEq, Default)]
pub struct Statistics {
    pub passed: usize,
    pub skipped: usize,
    pub failed: usize,
}

#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct Named {
    pub name: String,
    pub reason: String,
}

impl ConformanceReport {
    pub fn new(
        options: &Options,
        results: &[TestResult],
        date: String,
        mode: &str,
        reproduce: String,
    ) -> Self {
        let mut kinds = vec![Profile::Core, Profile::Extended];
        if options.kueue {
            kinds.push(Profile::Kueue);
        }
        let slowest_answer = results.iter().filter_map(|r| r.slowest_answer).max();
        let profiles = kinds
            .into_iter()
            .map(|p| profile(p, options, results, slowest_answer))
            .collect();
        let installation = results
            .iter()
            .any(|r| r.profile == Profile::Installation)
            .then(|| profile(Profile::Installation, options, results, slowest_answer));
        ConformanceReport {
            api_version: "tollgate.dev/v1alpha1".into(),
            kind: "ConformanceReport".into(),
            implementation: options.implementation.clone(),
            date,
            suite_version: SUITE_VERSION.into(),
            mode: mode.into(),
            provisioning_class_name: options.class_name.clone(),
            profiles,
            installation,
            timeouts: options.timeouts.clone(),
            pace: PaceReport {
                // Milliseconds are precision enough for a reader.
                slowest_answer: slowest_answer
                    .map(|d| GoDuration(Duration::from_millis(d.as_millis() as u64))),
                shortest_hold: results
                    .iter()
                    .filter_map(|r| r.shortest_hold)
                    .min()
                    .map(GoDuration),
            },
            reproduce,
        }
    }

    /// Whether the class passed: every profile of its verdict succeeded (no failure, nothing
    /// needed skipped, nothing watched too briefly). The installation's checks are not the class's.
    pub fn passed(&self) -> bool {
        self.profiles.iter().all(|p| p.result == "success")
    }

    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).unwrap_or_default()
    }
}

fn profile(
    profile: Profile,
    options: &Options,
    results: &[TestResult],
    slowest_answer: Option<Duration>,
) -> ProfileReport {
    let mut report = ProfileReport {
        name: profile.name().into(),
        result: String::new(),
        statistics: Statistics::default(),
        failed_tests: vec![],
        skipped_tests: vec![],
        limited_tests: vec![],
        supported_features: None,
        unsupported_features: None,
    };
    let mut partial = false;
    for r in results.iter().filter(|r| r.profile == profile) {
        match &r.outcome {
            Outcome::Passed => {
                report.statistics.passed += 1;
                if let Some(reason) = too_brief(r, slowest_answer) {
                    partial = true;
                    report.limited_tests.push(Named {
                        name: r.name.into(),
                        reason,
                    });
                }
            }
            Outcome::Failed(f) => {
                report.statistics.failed += 1;
                report.failed_tests.push(Named {
                    name: r.name.into(),
                    reason: f.to_string(),
                });
            }
            Outcome::Skipped { reason, unclaimed } => {
                report.statistics.skipped += 1;
                // A feature the class does not claim is not a gap; anything else skipped is.
                partial |= !unclaimed;
                report.skipped_tests.push(Named {
                    name: r.name.into(),
                    reason: reason.clone(),
                });
            }
        }
    }
    report.result = if report.statistics.failed > 0 {
        "failure"
    } else if partial {
        "partial"
    } else {
        "success"
    }
    .into();
    if profile == Profile::Extended {
        let (supported, unsupported): (Vec<Feature>, Vec<Feature>) =
            Feature::ALL.into_iter().partition(|f| options.claims(*f));
        report.supported_features = Some(supported.iter().map(|f| f.name().into()).collect());
        report.unsupported_features = Some(unsupported.iter().map(|f| f.name().into()).collect());
    }
    report
}

/// Why a passed test proves less than it says: it watched for a broken rule for less than twice
/// the slowest answer the class gave in the run (known only once the run is over), so a class
/// that breaks the rule on its next turn could have passed.
fn too_brief(result: &TestResult, slowest_answer: Option<Duration>) -> Option<String> {
    let (hold, slowest) = (result.shortest_hold?, slowest_answer?);
    (hold < 2 * slowest).then(|| {
        format!(
            "watched {} for a broken rule, less than twice the slowest answer the class gave in \
             this run ({}): a class that breaks the rule on its next turn could pass; run again \
             with --timeout hold={}",
            GoDuration(hold),
            GoDuration(whole_seconds(slowest)),
            GoDuration(whole_seconds(2 * slowest))
        )
    })
}

/// A duration rounded up to whole seconds, as a user would type it.
fn whole_seconds(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}

/// JUnit XML: one `testsuite` per profile.
pub fn junit(results: &[TestResult], class: &str) -> String {
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    for profile in [
        Profile::Installation,
        Profile::Core,
        Profile::Extended,
        Profile::Kueue,
    ] {
        let tests: Vec<&TestResult> = results.iter().filter(|r| r.profile == profile).collect();
        if tests.is_empty() {
            continue;
        }
        let failures = tests
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Failed(_)))
            .count();
        let skipped = tests
            .iter()
            .filter(|r| matches!(r.outcome, Outcome::Skipped { .. }))
            .count();
        let _ = writeln!(
            xml,
            "  <testsuite name=\"{}/{}\" tests=\"{}\" failures=\"{failures}\" skipped=\"{skipped}\">",
            escape(class),
            profile.name(),
            tests.len()
        );
        for r in tests {
            let _ = write!(
                xml,
                "    <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
                r.name,
                profile.name(),
                r.took.as_secs_f64()
            );
            match &r.outcome {
                Outcome::Passed => xml.push_str("/>\n"),
                Outcome::Failed(f) => {
                    let _ = writeln!(
                        xml,
                        ">\n      <failure message=\"{}\"/>",
                        escape(&f.to_string())
                    );
                    if let Some(d) = &r.diagnostics {
                        let _ = writeln!(xml, "      <system-out>{}</system-out>", escape(d));
                    }
                    xml.push_str("    </testcase>\n");
                }
                Outcome::Skipped { reason, .. } => {
                    let _ = writeln!(
                        xml,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                        escape(reason)
                    );
                }
            }
        }
        xml.push_str("  </testsuite>\n");
    }
    xml.push_str("</testsuites>\n");
    xml
}

/// Text as an XML attribute or element: markup escaped, line breaks kept as character
/// references, and characters XML 1.0 cannot hold dropped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 => {}
            c => out.push(c),
        }
    }
    out
}

/// The terminal summary: one line per test, then one per profile.
pub fn summary(report: &ConformanceReport, results: &[TestResult]) -> String {
    let mut out = format!(
        "{} ({})\n{:<34} {:<12} {:<8} {}\n",
        report.provisioning_class_name, report.mode, "TEST", "PROFILE", "RESULT", "DETAIL"
    );
    for r in results {
        let (result, detail) = match &r.outcome {
            Outcome::Passed => ("passed", String::new()),
            Outcome::Failed(f) => ("FAILED", f.to_string()),
            Outcome::Skipped { reason, .. } => ("skipped", reason.clone()),
        };
        let _ = writeln!(
            out,
            "{:<34} {:<12} {:<8} {detail}",
            r.name,
            r.profile.name(),
            result
        );
    }
    for p in report.installation.iter().chain(&report.profiles) {
        let _ = writeln!(
            out,
            "profile {:<12} {:<8} passed {}, failed {}, skipped {}",
            p.name, p.result, p.statistics.passed, p.statistics.failed, p.statistics.skipped
        );
        for limited in &p.limited_tests {
            let _ = writeln!(out, "  {}: {}", limited.name, limited.reason);
        }
    }
    if report
        .installation
        .as_ref()
        .is_some_and(|i| i.result != "success")
    {
        out.push_str(
            "the cluster's installation failed a check: that is not the class's verdict, but \
             fix it before publishing\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(
        name: &'static str,
        profile: Profile,
        outcome: Outcome,
        answer: u64,
        hold: Option<u64>,
    ) -> TestResult {
        TestResult {
            name,
            description: "",
            profile,
            outcome,
            took: Duration::ZERO,
            diagnostics: None,
            slowest_answer: Some(Duration::from_secs(answer)),
            shortest_hold: hold.map(Duration::from_secs),
        }
    }

    fn report(results: &[TestResult]) -> ConformanceReport {
        ConformanceReport::new(
            &Options::default(),
            results,
            "2026-11-24".into(),
            "cluster",
            "conformance".into(),
        )
    }

    #[test]
    fn a_watch_shorter_than_twice_the_slowest_answer_makes_the_profile_partial() {
        // The slow answer came in another test, after this one's watch had ended.
        let results = [
            result("watched", Profile::Core, Outcome::Passed, 1, Some(30)),
            result("slow", Profile::Extended, Outcome::Passed, 20, None),
        ];
        let r = report(&results);
        assert!(!r.passed());
        let core = &r.profiles[0];
        assert_eq!(core.result, "partial");
        assert_eq!(core.limited_tests[0].name, "watched");
        assert!(
            core.limited_tests[0]
                .reason
                .starts_with("watched 30s for a broken rule, less than twice the slowest answer"),
            "{:?}",
            core.limited_tests
        );
        assert!(core.limited_tests[0].reason.ends_with("--timeout hold=40s"));
        assert_eq!(r.profiles[1].result, "success");
        assert_eq!(
            r.pace.slowest_answer,
            Some(GoDuration(Duration::from_secs(20)))
        );
        assert_eq!(
            r.pace.shortest_hold,
            Some(GoDuration(Duration::from_secs(30)))
        );
        // Suggested in whole seconds, rounded up.
        let results = [
            result("watched", Profile::Core, Outcome::Passed, 1, Some(20)),
            TestResult {
                slowest_answer: Some(Duration::from_millis(10_006)),
                ..result("slow", Profile::Extended, Outcome::Passed, 0, None)
            },
        ];
        let reason = &report(&results).profiles[0].limited_tests[0].reason;
        assert!(
            reason.contains("(11s)") && reason.ends_with("hold=21s"),
            "{reason}"
        );
        // Long enough: no limit.
        let results = [
            result("watched", Profile::Core, Outcome::Passed, 1, Some(40)),
            result("slow", Profile::Extended, Outcome::Passed, 20, None),
        ];
        assert!(report(&results).passed());
    }

    #[test]
    fn the_installation_is_reported_apart_from_the_class_verdict() {
        let failed = Outcome::Failed(crate::suite::Failure::other("accepted"));
        let results = [
            result("spec-immutable", Profile::Installation, failed, 1, None),
            result("fits", Profile::Core, Outcome::Passed, 1, None),
        ];
        let r = report(&results);
        assert!(r.passed(), "the class passed");
        assert_eq!(
            r.installation.as_ref().map(|i| i.result.as_str()),
            Some("failure")
        );
        assert!(r.profiles.iter().all(|p| p.name != "installation"));
        let yaml = r.to_yaml();
        assert!(yaml.contains("timeouts:\n  accepted: 2m0s"), "{yaml}");
        assert!(summary(&r, &results).contains("installation failed a check"));
    }

    #[test]
    fn xml_text_keeps_lines_and_drops_what_xml_cannot_hold() {
        assert_eq!(
            escape("a <b> & \"c\"\nd\u{1}e"),
            "a &lt;b&gt; &amp; &quot;c&quot;&#10;de"
        );
    }
}
