//! Credentials without the rights the suite needs get one line naming what is missing, exit
//! status 2 and no report, on kube-apiserver's real RBAC.
//!
//! Skips (saying why) without the control plane's binaries, unless
//! `TOLLGATE_REQUIRE_CONTROL_PLANE` is set.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

mod common;

use common::{account_kubeconfig, bind_suite_role, until_allowed, until_served};

const NAMESPACE: &str = "preflight-rbac";
const ACCOUNT: &str = "no-rights";

const OPTIONS: &str = r#"
className: check-capacity.autoscaling.x-k8s.io
podTemplates:
  fits: {count: 1, template: {spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "3"}}}]}}}
  doesNotFit: {count: 1, template: {spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "1000"}}}]}}}
"#;

async fn conformance(dir: &Path, kubeconfig: &str, extra: &[&str]) -> Output {
    let options = dir.join("options.yaml");
    std::fs::write(&options, OPTIONS).expect("options");
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args(["--kubeconfig", kubeconfig, "--options"])
        .arg(&options)
        .arg("--report-dir")
        .arg(dir.join("reports"))
        .args(extra)
        .env_remove("RUST_LOG")
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("conformance stops within a minute, before any test")
        .expect("conformance runs")
}

/// Exit status 2, one line on stderr, no report.
fn no_verdict(dir: &Path, out: &Output) -> String {
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert_eq!(said.trim_end().lines().count(), 1, "one line: {said}");
    assert!(!dir.join("reports").exists(), "no report without a verdict");
    said
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_without_the_rights_get_one_line_naming_what_is_missing() {
    let Some(cp) = control_plane::testing::shared().await else {
        return;
    };
    let admin = cp.client().await.expect("admin client");
    control_plane::install_crds(&admin, &api::CHECKED_IN_CRDS, Duration::from_secs(60))
        .await
        .expect("CRDs install");
    until_served(&admin, "autoscaling.x-k8s.io/v1", "provisioningrequests").await;
    until_served(&admin, "kueue.x-k8s.io/v1beta2", "workloads").await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = account_kubeconfig(cp, &admin, dir.path(), NAMESPACE, ACCOUNT).await;

    // No rights at all.
    let out = conformance(dir.path(), &kubeconfig, &[]).await;
    let said = no_verdict(dir.path(), &out);
    for missing in [
        "the credentials cannot:",
        "create/get/list/watch/delete namespaces",
        "provisioningrequests.autoscaling.x-k8s.io",
        "conformance/rbac.yaml",
    ] {
        assert!(said.contains(missing), "{missing}: {said}");
    }
    assert!(
        !said.contains("kueue.x-k8s.io"),
        "no kueue profile, no Kueue rights: {said}"
    );

    // The role of conformance/rbac.yaml for every run, bound: the kueue profile still lacks its own.
    bind_suite_role(&admin, "preflight-rbac-no-rights", NAMESPACE, ACCOUNT).await;
    until_allowed(&kubeconfig, "create", "namespaces").await;
    let out = conformance(dir.path(), &kubeconfig, &["--kueue"]).await;
    let said = no_verdict(dir.path(), &out);
    assert!(said.contains("workloads.kueue.x-k8s.io"), "{said}");
    assert!(
        !said.contains(" namespaces"),
        "the bound role grants namespaces: {said}"
    );
}
