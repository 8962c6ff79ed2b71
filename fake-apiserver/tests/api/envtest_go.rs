//! controller-runtime's envtest itself, on the fake and on the reference control plane: the Go
//! test of `tools/envtest/` (Start(), a CRD, a mutating webhook served by controller-runtime, a
//! manager's controller, a protobuf clientset) is built once and run with `KUBEBUILDER_ASSETS`
//! naming the fake's links and then the real kube-apiserver and etcd. It passes on both.
//!
//! It needs Go and the reference control plane's binaries; without them it says why and passes,
//! unless `TOLLGATE_REQUIRE_CONTROL_PLANE` is set (as in CI).

use std::path::{Path, PathBuf};
use std::process::Command;

use control_plane::binaries::{Binaries, Component, workspace_root};

use crate::envtest::fake_assets;

/// The real binaries' folder, or `None` when they (or Go) are missing and not required.
fn real_assets() -> Option<PathBuf> {
    if !control_plane::testing::available(&Binaries::locate()) {
        return None;
    }
    let go = Command::new("go").arg("version").output();
    if !go.is_ok_and(|o| o.status.success()) {
        assert!(
            std::env::var_os(control_plane::testing::REQUIRE_VAR).is_none(),
            "Go is required to build tools/envtest ({} is set)",
            control_plane::testing::REQUIRE_VAR
        );
        eprintln!("skipping: the go command is missing");
        return None;
    }
    let apiserver = Binaries::locate()
        .path(Component::ApiServer)
        .expect("available");
    Some(apiserver.parent().expect("a folder").to_path_buf())
}

/// `go test -c` of tools/envtest into `dir`.
fn build_go_test(dir: &Path) -> PathBuf {
    let binary = dir.join("envtest.test");
    let out = Command::new("go")
        .args(["test", "-c", "-o"])
        .arg(&binary)
        .arg(".")
        .current_dir(workspace_root().join("tools/envtest"))
        .output()
        .expect("go runs");
    assert!(
        out.status.success(),
        "go test -c in tools/envtest failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    binary
}

/// Runs the Go test with `assets` as `KUBEBUILDER_ASSETS`; returns how long Start() took, in ms.
fn run_go_test(binary: &Path, assets: &Path, report: &Path) -> f64 {
    let out = Command::new(binary)
        .arg("-test.v")
        .env("KUBEBUILDER_ASSETS", assets)
        .env("ENVTEST_REPORT", report)
        // The test's own output, not the control plane's.
        .env_remove("KUBEBUILDER_ATTACH_CONTROL_PLANE_OUTPUT")
        .output()
        .expect("the Go test runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.contains("--- PASS: TestEnvtestStartsAndHostsAController"),
        "envtest with KUBEBUILDER_ASSETS={}:\n{said}",
        assets.display()
    );
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report).expect("report")).expect("report JSON");
    report["start_micros"].as_f64().expect("start_micros") / 1000.0
}

#[test]
fn envtest_starts_the_fake_and_hosts_a_go_controller_as_on_kube_apiserver() {
    let Some(real) = real_assets() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let binary = build_go_test(dir.path());
    let fake = fake_assets(dir.path());
    let on_fake = run_go_test(&binary, &fake, &dir.path().join("fake.json"));
    let on_real = run_go_test(&binary, &real, &dir.path().join("real.json"));
    // Timings are for BENCHMARKS.md, not asserted.
    eprintln!(
        "envtest Start(): {on_fake:.0} ms on the fake, {on_real:.0} ms on kube-apiserver and etcd"
    );
}
