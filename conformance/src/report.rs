//! The results as a vendor publishes them: a `ConformanceReport` YAML (after Gateway API's), JUnit
//! XML for CI systems, and a summary table for the terminal.

use std::fmt::Write as _;

use serde::Serialize;

use crate::options::{Feature, Implementation, Options};
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
    pub profiles: Vec<ProfileReport>,
    /// How to run it again.
    pub reproduce: String,
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
        let profiles = kinds
            .into_iter()
            .map(|p| profile(p, options, results))
            .collect();
        ConformanceReport {
            api_version: "tollgate.dev/v1alpha1".into(),
            kind: "ConformanceReport".into(),
            implementation: options.implementation.clone(),
            date,
            suite_version: SUITE_VERSION.into(),
            mode: mode.into(),
            provisioning_class_name: options.class_name.clone(),
            profiles,
            reproduce,
        }
    }

    /// Whether every profile succeeded (no failure, nothing needed skipped).
    pub fn passed(&self) -> bool {
        self.profiles.iter().all(|p| p.result == "success")
    }

    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).unwrap_or_default()
    }
}

fn profile(profile: Profile, options: &Options, results: &[TestResult]) -> ProfileReport {
    let mut report = ProfileReport {
        name: profile.name().into(),
        result: String::new(),
        statistics: Statistics::default(),
        failed_tests: vec![],
        skipped_tests: vec![],
        supported_features: None,
        unsupported_features: None,
    };
    let mut partial = false;
    for r in results.iter().filter(|r| r.profile == profile) {
        match &r.outcome {
            Outcome::Passed => report.statistics.passed += 1,
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

/// JUnit XML: one `testsuite` per profile.
pub fn junit(results: &[TestResult], class: &str) -> String {
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    for profile in [Profile::Core, Profile::Extended, Profile::Kueue] {
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
        "{} ({})\n{:<34} {:<9} {:<8} {}\n",
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
            "{:<34} {:<9} {:<8} {detail}",
            r.name,
            r.profile.name(),
            result
        );
    }
    for p in &report.profiles {
        let _ = writeln!(
            out,
            "profile {:<9} {:<8} passed {}, failed {}, skipped {}",
            p.name, p.result, p.statistics.passed, p.statistics.failed, p.statistics.skipped
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_text_keeps_lines_and_drops_what_xml_cannot_hold() {
        assert_eq!(
            escape("a <b> & \"c\"\nd\u{1}e"),
            "a &lt;b&gt; &amp; &quot;c&quot;&#10;de"
        );
    }
}
