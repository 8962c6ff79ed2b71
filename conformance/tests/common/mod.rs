//! What the black-box tests share: the fake autoscaler's binary, a process killed with the test,
//! a wait for discovery, and a ServiceAccount with exactly the suite's documented rights.
// Each test binary compiles this module and uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

/// A child process, killed when the test ends however it ends.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fake autoscaler's binary, built beside this package's by `cargo test --workspace`.
pub fn fake_autoscaler_binary() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_conformance")).with_file_name("fake-autoscaler");
    assert!(
        path.exists(),
        "{} is missing: build it first (`cargo build -p fake-autoscaler`; `cargo test --workspace` does)",
        path.display()
    );
    path
}

/// Waits until kube-apiserver serves `plural` in `api_version` (discovery may trail Established).
pub async fn until_served(client: &kube::Client, api_version: &str, plural: &str) {
    let served = async {
        loop {
            let list = client.list_api_group_resources(api_version).await;
            if list.is_ok_and(|l| l.resources.iter().any(|r| r.name == plural)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), served)
        .await
        .unwrap_or_else(|_| panic!("{plural} in {api_version} is served within 30s"));
}

/// A kubeconfig for ServiceAccount `account` of `namespace` (both made if missing), with a token
/// from the TokenRequest API.
pub async fn account_kubeconfig(
    cp: &control_plane::ControlPlane,
    admin: &kube::Client,
    dir: &Path,
    namespace: &str,
    account: &str,
) -> String {
    use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
    use kube::Api;
    use kube::api::{Patch, PatchParams, PostParams};
    let apply = PatchParams::apply("conformance-tests").force();
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": namespace}}))
            .expect("namespace");
    namespaces
        .patch(namespace, &apply, &Patch::Apply(&ns))
        .await
        .expect("namespace");
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), namespace);
    let sa: ServiceAccount =
        serde_json::from_value(serde_json::json!({"metadata": {"name": account}}))
            .expect("account");
    accounts
        .patch(account, &apply, &Patch::Apply(&sa))
        .await
        .expect("account");
    let token = accounts
        .create_token_request(account, &PostParams::default(), &Default::default())
        .await
        .expect("TokenRequest")
        .status
        .and_then(|s| s.token)
        .expect("a token");
    let path = dir.join(format!("{account}.kubeconfig"));
    cp.write_token_kubeconfig(&path, &token)
        .expect("kubeconfig");
    path.display().to_string()
}

/// Applies the suite's own ClusterRole from conformance/rbac.yaml (`tollgate-conformance`, what
/// every run needs) and binds it, and only it, to the ServiceAccount.
pub async fn bind_suite_role(admin: &kube::Client, binding: &str, namespace: &str, account: &str) {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    use kube::Api;
    use kube::api::{Patch, PatchParams};
    use serde::Deserialize;
    let rbac = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("rbac.yaml"))
        .expect("rbac.yaml");
    let role = serde_yaml::Deserializer::from_str(&rbac)
        .map(|doc| ClusterRole::deserialize(doc).expect("a ClusterRole"))
        .find(|r| r.metadata.name.as_deref() == Some("tollgate-conformance"))
        .expect("the suite's role");
    let apply = PatchParams::apply("conformance-tests").force();
    Api::<ClusterRole>::all(admin.clone())
        .patch("tollgate-conformance", &apply, &Patch::Apply(&role))
        .await
        .expect("role");
    let bound: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": binding},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "tollgate-conformance"},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }))
    .expect("binding");
    Api::<ClusterRoleBinding>::all(admin.clone())
        .patch(binding, &apply, &Patch::Apply(&bound))
        .await
        .expect("binding");
}

/// Waits until the kubeconfig's identity may `verb` `resource` (RBAC takes effect shortly after a
/// binding).
pub async fn until_allowed(kubeconfig: &str, verb: &str, resource: &str) {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    };
    use kube::Api;
    use kube::api::PostParams;
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
