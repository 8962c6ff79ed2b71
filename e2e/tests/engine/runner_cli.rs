//! The `scenarios` binary behind `cargo xtask scenarios`: its summary, its exit code, and
//! accepting new snapshots.

use std::process::{Command, Output};

fn scenarios(dir: &std::path::Path, update: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_scenarios"))
        .arg("--dir")
        .arg(dir)
        .args(args)
        .env("INSTA_UPDATE", update)
        .env_remove("CI")
        .output()
        .expect("running the scenarios binary")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

const SCENARIO: &str = "name: tiny\ndescription: one ConfigMap\nsteps:\n  - apply:\n      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {k: v}}\n";

#[test]
fn a_new_scenario_fails_until_accepted_then_passes_and_a_changed_trace_fails_again() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.yaml"), SCENARIO).unwrap();

    let first = scenarios(dir.path(), "no", &[]);
    assert!(!first.status.success());
    assert!(
        stdout(&first).contains("FAIL tiny: the trace differs from the snapshot"),
        "{}",
        stdout(&first)
    );
    assert!(stdout(&first).contains("cargo xtask scenarios --accept"));

    let accepted = scenarios(dir.path(), "always", &[]);
    assert!(accepted.status.success(), "{}", stdout(&accepted));
    let snap = std::fs::read_to_string(dir.path().join("snapshots/tiny.snap")).unwrap();
    assert!(snap.contains("added: ConfigMap default/a"), "{snap}");

    let again = scenarios(dir.path(), "no", &[]);
    assert!(again.status.success(), "{}", stdout(&again));
    let out = stdout(&again);
    assert!(out.contains("ok   tiny ("), "{out}");
    assert!(out.contains("1 scenarios, 1 passed, 0 failed"), "{out}");

    std::fs::write(
        dir.path().join("tiny.yaml"),
        SCENARIO.replace("k: v", "k: w"),
    )
    .unwrap();
    let changed = scenarios(dir.path(), "no", &[]);
    assert!(!changed.status.success());
    assert!(
        stderr_or_stdout(&changed).contains("k: w"),
        "the diff shows the new value"
    );
}

fn stderr_or_stdout(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stderr), stdout(o))
}

#[test]
fn a_bad_file_stops_the_run_before_anything_runs_and_a_filter_selects() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("tiny.yaml"), SCENARIO).unwrap();
    std::fs::write(
        dir.path().join("zbad.yaml"),
        "name: zbad\ndescription: x\nsteps:\n  - advance: soon\n",
    )
    .unwrap();
    let out = scenarios(dir.path(), "no", &[]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("zbad.yaml:4:14:") && err.contains("invalid duration `soon`"),
        "{err}"
    );
    assert!(
        !stdout(&out).contains("tiny"),
        "nothing ran: {}",
        stdout(&out)
    );

    let only = scenarios(dir.path(), "always", &["tiny"]);
    assert!(only.status.success(), "{}", stdout(&only));
    let none = scenarios(dir.path(), "no", &["nothing-matches"]);
    assert!(!none.status.success());
    assert!(String::from_utf8_lossy(&none.stderr).contains("no scenarios in"));
}

#[test]
fn a_failing_scenario_is_reported_with_its_step() {
    let dir = tempfile::tempdir().unwrap();
    let failing = format!("{SCENARIO}  - assert:\n      timeout: 5s\n      object: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: a}}, data: {{k: x}}}}\n")
        .replace("name: tiny", "name: failing");
    std::fs::write(dir.path().join("failing.yaml"), failing).unwrap();
    let out = scenarios(dir.path(), "no", &[]);
    assert!(!out.status.success());
    let text = stdout(&out);
    assert!(text.contains("FAIL failing"), "{text}");
    assert!(
        text.contains("failing.yaml:6: step 2 assert ConfigMap a, assert:"),
        "{text}"
    );
    assert!(
        text.contains(r#"data.k: expected "x", found "v""#),
        "{text}"
    );
}
