//! The scenarios on real clusters: every scenario that needs neither virtual time nor faults
//! passes on the reference control plane (a fresh one each, the components as processes; a
//! MultiKueue scenario's workers each a control plane of their own), and the
//! kind backend drives the kind CLI, here a stand-in on PATH that hands back the reference
//! control plane. Without the control plane's binaries these say why and pass, unless
//! `TOLLGATE_REQUIRE_CONTROL_PLANE` is set.
//!
//! The scenarios run side by side, as many as libtest runs at once (`RUST_TEST_THREADS`, CI: 4):
//! each has control planes of its own, whose start and waits are mostly idle time, and a
//! scenario's waits allow 30 s for what takes well under one.

use std::path::{Path, PathBuf};

use e2e::backend::{Backend, RealOutcome, Session, blocker};
use e2e::scenario::load;
use rstest::rstest;

/// Held by each test that runs a scenario on the shared control plane. Scenarios name their
/// cluster-scoped objects plainly (ResourceFlavor `spot` is in several), so two on one cluster at
/// once take each other's objects away when they clean up, as they would for two users of one
/// cluster. (A CI run failed so: the kind test's clean-up deleted the flavor `update-conflict` had
/// just made.)
static ONE_SCENARIO_AT_A_TIME_ON_THE_SHARED_CLUSTER: std::sync::Mutex<()> =
    std::sync::Mutex::new(());

fn shared_cluster_turn() -> std::sync::MutexGuard<'static, ()> {
    // A test that panicked while holding it has cleaned up what it could; the next may go on.
    ONE_SCENARIO_AT_A_TIME_ON_THE_SHARED_CLUSTER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

fn available() -> bool {
    control_plane::testing::available(&control_plane::Binaries::locate())
}

#[rstest]
fn on_the_reference_control_plane(#[files("scenarios/*.yaml")] path: PathBuf) {
    let scenario = load(&path).unwrap_or_else(|e| panic!("{e}"));
    if let Some(reason) = blocker(&Backend::ControlPlane, &scenario) {
        eprintln!("{} runs only embedded: {reason}", scenario.name);
        return;
    }
    if !available() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let session = Session::start(Backend::ControlPlane, dir.path()).expect("session");
    let result = runtime().block_on(session.run(&scenario));
    match result {
        Ok(RealOutcome::Ran { outcome, dir }) => {
            if let Some(failure) = &outcome.failure {
                let logs: String = ["controller.log", "fake-autoscaler.log", "job-runner.log"]
                    .iter()
                    .filter_map(|f| {
                        let text = std::fs::read_to_string(dir.join(f)).ok()?;
                        let tail: Vec<&str> = text.lines().rev().take(20).collect();
                        Some(format!(
                            "--- {f} (end)\n{}\n",
                            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                        ))
                    })
                    .collect();
                panic!("{failure}\ntrace:\n{}\n{logs}", outcome.trace.to_yaml());
            }
            // The trace is what watches saw: a watch of each traced kind the scenario writes saw
            // an object of that kind.
            let trace = outcome.trace.to_yaml();
            let written: Vec<String> = scenario
                .steps
                .iter()
                .flat_map(|s| &s.try_)
                .flat_map(|op| op.action.written())
                .filter_map(|o| o["kind"].as_str().map(str::to_string))
                .collect();
            for kind in scenario.trace.iter().filter(|k| written.contains(&k.kind)) {
                let seen = [
                    format!("applied {} ", kind.kind),
                    format!("listed {} ", kind.kind),
                ];
                assert!(
                    seen.iter().any(|s| trace.contains(s.as_str())),
                    "the watch of {kind} saw nothing:\n{trace}"
                );
            }
        }
        Ok(RealOutcome::Skipped(reason)) => panic!("skipped after all: {reason}"),
        Err(e) => panic!("{e}"),
    }
    session.finish().expect("finish");
}

#[test]
fn enough_scenarios_run_on_real_clusters() {
    // A guard against the subset quietly shrinking: a scenario's waits decide whether it runs.
    let dir = e2e::snapshot::scenarios_dir();
    let files = e2e::snapshot::scenario_files(&dir, None).expect("scenarios");
    let runnable = files
        .iter()
        .map(|f| load(f).unwrap_or_else(|e| panic!("{e}")))
        .filter(|s| blocker(&Backend::ControlPlane, s).is_none())
        .count();
    assert!(
        runnable >= 36,
        "only {runnable} scenarios run on real clusters"
    );
}

/// A `kind` that records its arguments and, for `create cluster`, writes the kubeconfig it was
/// given in `KIND_STANDIN_KUBECONFIG` where kind would.
const STAND_IN: &str = r#"#!/bin/sh
echo "$@" >> "$KIND_STANDIN_LOG"
case "$1 $2" in
  "create cluster")
    while [ $# -gt 0 ]; do
      if [ "$1" = "--kubeconfig" ]; then cp "$KIND_STANDIN_KUBECONFIG" "$2"; fi
      shift
    done ;;
  "export logs")
    mkdir -p "$3" && echo "stand-in kind logs" > "$3/kind.log" ;;
esac
"#;

fn stand_in(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("bin");
    let kind = bin.join("kind");
    std::fs::write(&kind, STAND_IN).expect("stand-in");
    std::fs::set_permissions(&kind, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    bin
}

#[test]
fn the_kind_backend_creates_runs_collects_and_deletes() {
    let cp = {
        let rt = runtime();
        let Some(cp) = rt.block_on(control_plane::testing::shared()) else {
            return;
        };
        cp
    };
    let _turn = shared_cluster_turn();
    let tmp = tempfile::tempdir().expect("tempdir");
    let bin = stand_in(tmp.path());
    let log = tmp.path().join("kind-args.log");
    let run_dir = tmp.path().join("runs");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scenarios"))
        .args(["--kind", "--run-dir"])
        .arg(&run_dir)
        .arg("admission-flavor-order")
        .env("PATH", path)
        .env("KIND_STANDIN_LOG", &log)
        .env("KIND_STANDIN_KUBECONFIG", cp.kubeconfig())
        .output()
        .expect("scenarios runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(said.contains("ok   admission-flavor-order"), "{said}");
    assert!(said.contains("1 passed, 0 failed"), "{said}");

    let dir = run_dir.join("kind");
    let calls = std::fs::read_to_string(&log).expect("kind was called");
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(
        calls,
        [
            format!(
                "create cluster --name tollgate-e2e --config {0}/kind-config.yaml --kubeconfig {0}/kubeconfig --wait 5m",
                dir.display()
            ),
            format!(
                "export logs {}/kind-logs --name tollgate-e2e",
                dir.display()
            ),
            "delete cluster --name tollgate-e2e".to_string(),
        ]
    );
    let config = std::fs::read_to_string(dir.join("kind-config.yaml")).expect("config");
    assert!(
        config.contains("*,-job-controller,-node-lifecycle-controller"),
        "{config}"
    );
    assert!(config.contains("TaintNodesByCondition"), "{config}");
    // The run's folder has kind's logs, and the scenario's trace, events and controller log.
    assert!(dir.join("kind-logs/kind.log").is_file());
    for file in ["trace.yaml", "events.yaml", "controller.log"] {
        assert!(
            dir.join("admission-flavor-order").join(file).is_file(),
            "{file} is missing"
        );
    }
}

#[test]
fn the_kubeconfig_backend_runs_on_a_cluster_and_takes_away_what_it_made() {
    let rt = runtime();
    let Some(cp) = rt.block_on(control_plane::testing::shared()) else {
        return;
    };
    let _turn = shared_cluster_turn();
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scenarios"))
        .arg("--kubeconfig")
        .arg(cp.kubeconfig())
        .arg("--run-dir")
        .arg(tmp.path())
        .arg("update-conflict")
        .output()
        .expect("scenarios runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("1 scenarios on kubeconfig, 1 passed, 0 failed"),
        "{said}"
    );
    assert!(
        tmp.path()
            .join("kubeconfig/update-conflict/trace.yaml")
            .is_file()
    );
    // The cluster is shared: the ResourceFlavor the scenario made is gone again.
    rt.block_on(async {
        let client = cp.client().await.expect("client");
        let flavors: kube::Api<api::kueue::ResourceFlavor> = kube::Api::all(client);
        let gone = kube::runtime::wait::await_condition(
            flavors,
            "spot",
            |f: Option<&api::kueue::ResourceFlavor>| f.is_none(),
        );
        tokio::time::timeout(std::time::Duration::from_secs(30), gone)
            .await
            .expect("the scenario's ResourceFlavor is deleted after the run")
            .expect("watch");
    });
}

#[test]
fn a_kubeconfig_that_does_not_work_is_one_error_before_any_scenario() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let missing = tmp.path().join("missing-kubeconfig");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scenarios"))
        .arg("--kubeconfig")
        .arg(&missing)
        .arg("--run-dir")
        .arg(tmp.path())
        .output()
        .expect("scenarios runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success());
    assert_eq!(said.trim().lines().count(), 1, "{said}");
    assert!(said.contains(&missing.display().to_string()), "{said}");
    assert!(!said.contains("FAIL"), "{said}");
}
