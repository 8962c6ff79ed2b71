//! Credentials without the rights the suite needs get one line naming what is missing, exit
//! status 2 and no report, on kube-apiserver's real RBAC (the fake API server allows everything).
//!
//! Skips (saying why) without the control plane's binaries, unless
//! `TOLLGATE_REQUIRE_CONTROL_PLANE` is set.

use std::path::Path;
use std::process::Output;
use std::time::Duration;

use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use serde::Deserialize;

mod common;

use common::until_served;

const NAMESPACE: &str = "preflight-rbac";
const ACCOUNT: &str = "no-rights";

const OPTIONS: &str = r#"
className: check-capacity.autoscaling.x-k8s.io
podTemplates:
  fits: {count: 1, template: {spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "3"}}}]}}}
  doesNotFit: {count: 1, template: {spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "1000"}}}]}}}
"#;

/// The ServiceAccount's kubeconfig: a token from the TokenRequest API.
async fn account_kubeconfig(
    cp: &control_plane::ControlPlane,
    admin: &kube::Client,
    dir: &Path,
) -> String {
    let apply = PatchParams::apply("preflight-rbac-test").force();
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": NAMESPACE}}))
            .expect("namespace");
    namespaces
        .patch(NAMESPACE, &apply, &Patch::Apply(&ns))
        .await
        .expect("namespace");
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), NAMESPACE);
    let account: ServiceAccount =
        serde_json::from_value(serde_json::json!({"metadata": {"name": ACCOUNT}}))
            .expect("account");
    accounts
        .patch(ACCOUNT, &apply, &Patch::Apply(&account))
        .await
        .expect("account");
    let token = accounts
        .create_token_request(ACCOUNT, &PostParams::default(), &Default::default())
        .await
        .expect("TokenRequest")
        .status
        .and_then(|s| s.token)
        .expect("a token");
    let path = dir.join("no-rights.kubeconfig");
    cp.write_token_kubeconfig(&path, &token)
        .expect("kubeconfig");
    path.display().to_string()
}

/// Waits until the account may `verb` `resource` (RBAC takes effect shortly after a binding).
async fn until_allowed(kubeconfig: &str, verb: &str, resource: &str) {
    let client = control_plane::client_for(Path::new(kubeconfig))
        .await
        .expect("client");
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client);
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some(verb.into()),
                resource: Some(resource.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let allowed = async {
        loop {
            let answer = reviews.create(&PostParams::default(), &review).await;
            if answer.is_ok_and(|a| a.status.is_some_and(|s| s.allowed)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), allowed)
        .await
        .unwrap_or_else(|_| panic!("{verb} {resource} is allowed within 30s of the binding"));
}

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
    let kubeconfig = account_kubeconfig(cp, &admin, dir.path()).await;

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
    let rbac = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("rbac.yaml"))
        .expect("rbac.yaml");
    let role = serde_yaml::Deserializer::from_str(&rbac)
        .map(|doc| ClusterRole::deserialize(doc).expect("a ClusterRole"))
        .find(|r| r.metadata.name.as_deref() == Some("tollgate-conformance"))
        .expect("the suite's role");
    let apply = PatchParams::apply("preflight-rbac-test").force();
    Api::<ClusterRole>::all(admin.clone())
        .patch("tollgate-conformance", &apply, &Patch::Apply(&role))
        .await
        .expect("role");
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "preflight-rbac-no-rights"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tollgate-conformance"},
        "subjects": [{"kind": "ServiceAccount", "name": ACCOUNT, "namespace": NAMESPACE}],
    }))
    .expect("binding");
    Api::<ClusterRoleBinding>::all(admin.clone())
        .patch("preflight-rbac-no-rights", &apply, &Patch::Apply(&binding))
        .await
        .expect("binding");
    until_allowed(&kubeconfig, "create", "namespaces").await;
    let out = conformance(dir.path(), &kubeconfig, &["--kueue"]).await;
    let said = no_verdict(dir.path(), &out);
    assert!(said.contains("workloads.kueue.x-k8s.io"), "{said}");
    assert!(
        !said.contains(" namespaces"),
        "the bound role grants namespaces: {said}"
    );
}
