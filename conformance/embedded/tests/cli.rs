//! `cargo xtask conformance` (the `conformance-embedded` binary) without a cluster flag: `--class`
//! picks one of the reference classes and never relabels them as a vendor's class.

use std::process::Output;

fn embedded(args: &[&str]) -> Output {
    // Neither a refusal nor --list writes a report.
    std::process::Command::new(env!("CARGO_BIN_EXE_conformance-embedded"))
        .args(args)
        .env_remove("RUST_LOG")
        .output()
        .expect("conformance-embedded runs")
}

#[test]
fn a_class_that_is_not_a_reference_class_is_refused() {
    let out = embedded(&["--class", "queued.example.com"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("`queued.example.com` is not one of the reference classes"),
        "{said}"
    );
    assert!(
        said.contains("check-capacity.autoscaling.x-k8s.io"),
        "{said}"
    );
    assert!(said.contains("--kubeconfig"), "{said}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_reference_class_runs_alone() {
    let out = embedded(&["--class", "check-capacity.autoscaling.x-k8s.io", "--list"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // One heading per class listed: `<class>:` at the start of a line.
    let classes: Vec<&str> = listed.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(
        classes,
        ["check-capacity.autoscaling.x-k8s.io:"],
        "{listed}"
    );
}

#[test]
fn timeouts_that_would_blind_a_test_are_refused_before_any_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let reports = dir.path().join("reports");
    let out = embedded(&[
        "--timeout",
        "retry=15m",
        "--report-dir",
        reports.to_str().expect("utf-8 path"),
    ]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(
        said.contains("timeouts.retry (15m0s) must be shorter than timeouts.booking (10m0s)"),
        "{said}"
    );
    assert!(!reports.exists(), "no verdict, no report");
}
