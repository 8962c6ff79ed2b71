//! A served endpoint's doors: HTTPS with the cluster's CA, bearer tokens (the endpoint's own and
//! the ServiceAccount tokens the server issued), the kubeconfig's permissions, and the binary's
//! refusal to listen beyond loopback unless told.

use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::tcp::{Served, client_from, kubectl, run_kubectl};

/// A client of the locked endpoint's kubeconfig with its token replaced (or removed).
async fn client_with_token(served: &Served, token: Option<&str>) -> kube::Client {
    let mut kc = Kubeconfig::read_from(served.kubeconfig()).expect("kubeconfig");
    for user in &mut kc.auth_infos {
        if let Some(info) = user.auth_info.as_mut() {
            info.token = token.map(|t| t.to_string().into());
        }
    }
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    kube::Client::try_from(config).expect("client")
}

async fn list_secrets(client: kube::Client) -> Result<usize, kube::Error> {
    let secrets: Api<Secret> = Api::all(client);
    secrets
        .list(&ListParams::default())
        .await
        .map(|l| l.items.len())
}

fn assert_unauthorized(result: Result<usize, kube::Error>) {
    match result {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 401, "{status:?}");
            assert_eq!(status.reason, "Unauthorized");
            assert_eq!(status.message, "Unauthorized");
        }
        other => panic!("expected 401 Unauthorized, got {other:?}"),
    }
}

#[tokio::test]
async fn a_locked_endpoint_serves_https_and_refuses_requests_without_its_token() {
    let served = Served::start_locked().await;
    let text = std::fs::read_to_string(served.kubeconfig()).expect("kubeconfig");
    assert!(text.contains("server: https://127.0.0.1:"), "{text}");
    assert!(text.contains("certificate-authority-data: "), "{text}");
    let mode = std::fs::metadata(served.kubeconfig())
        .expect("kubeconfig")
        .permissions()
        .mode();
    assert_eq!(
        mode & 0o777,
        0o600,
        "the kubeconfig holds a token: owner only"
    );

    let admin = client_from(&served.kubeconfig()).await;
    list_secrets(admin.clone()).await.expect("the admin lists");
    assert_unauthorized(list_secrets(client_with_token(&served, None).await).await);
    assert_unauthorized(list_secrets(client_with_token(&served, Some("guess")).await).await);
    // Not even a cluster-admin binding can be made without the token.
    let ns: Api<Namespace> = Api::all(client_with_token(&served, Some("x")).await);
    let made = ns
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "intruder"}}))
                .expect("namespace"),
        )
        .await;
    assert!(
        matches!(made, Err(kube::Error::Api(ref s)) if s.code == 401),
        "{made:?}"
    );
    let namespaces: Api<Namespace> = Api::all(admin);
    assert!(namespaces.get_opt("intruder").await.expect("get").is_none());
}

#[tokio::test]
async fn service_account_tokens_the_server_issued_are_accepted_until_their_account_goes() {
    let served = Served::start_locked().await;
    let admin = client_from(&served.kubeconfig()).await;
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    let sa: ServiceAccount =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "robot"}})).expect("sa");
    accounts
        .create(&PostParams::default(), &sa)
        .await
        .expect("sa created");
    let request = serde_json::json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let issue = |accounts: Api<ServiceAccount>| {
        let request = request.clone();
        async move {
            let issued: serde_json::Value = accounts
                .create_subresource("token", "robot", &PostParams::default(), &request)
                .await
                .expect("token issued");
            issued["status"]["token"]
                .as_str()
                .expect("a token")
                .to_string()
        }
    };
    let token = issue(accounts.clone()).await;
    let robot = client_with_token(&served, Some(&token)).await;
    // Accepted, as the account: it may do what RBAC grants it, and nothing yet.
    match list_secrets(robot.clone()).await {
        Err(kube::Error::Api(status)) => assert_eq!(
            (status.code, status.message.as_str()),
            (
                403,
                "secrets is forbidden: User \"system:serviceaccount:default:robot\" cannot list resource \"secrets\" in API group \"\" at the cluster scope"
            )
        ),
        other => panic!("expected 403 Forbidden, got {other:?}"),
    }
    let bindings: Api<ClusterRoleBinding> = Api::all(admin.clone());
    let view: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "robot-is-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}],
    }))
    .expect("a binding");
    bindings
        .create(&PostParams::default(), &view)
        .await
        .expect("binding created");
    list_secrets(robot.clone())
        .await
        .expect("an issued token is accepted, and its account now bound");

    // A token signed by another server (with its own keys) is not.
    let other = Served::start_locked().await;
    let other_admin = client_from(&other.kubeconfig()).await;
    let other_accounts: Api<ServiceAccount> = Api::namespaced(other_admin, "default");
    other_accounts
        .create(&PostParams::default(), &sa)
        .await
        .expect("sa created");
    let foreign = issue(other_accounts).await;
    assert_unauthorized(list_secrets(client_with_token(&served, Some(&foreign)).await).await);

    accounts
        .delete("robot", &DeleteParams::default())
        .await
        .expect("sa deleted");
    assert_unauthorized(list_secrets(robot).await);
}

// kubectl runs blocking: the server needs a worker of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_uses_the_locked_kubeconfig_and_fails_with_a_wrong_token() {
    let Some(_) = kubectl() else { return };
    let served = Served::start_locked().await;
    let out = run_kubectl(&served.kubeconfig(), &["get", "namespaces", "-o", "name"]);
    assert!(out.contains("namespace/default"), "{out}");
    let text = std::fs::read_to_string(served.kubeconfig()).expect("kubeconfig");
    // A wrong token (with none at all kubectl would prompt for a password).
    let token = served.token().expect("a token");
    let wrong = text.replace(token, "wrong");
    let path = served.kubeconfig().with_file_name("wrong-token");
    std::fs::write(&path, wrong).expect("write");
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&path)
        .args(["get", "secrets", "-A"])
        .output()
        .expect("kubectl runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("Unauthorized"), "{err}");
}

#[test]
fn the_binary_listens_beyond_loopback_only_when_told_and_then_warns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let out = Command::new(env!("CARGO_BIN_EXE_fake-apiserver"))
        .args(["--listen", "0.0.0.0:0", "--kubeconfig-out"])
        .arg(&kubeconfig)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("binary runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("refusing to listen on 0.0.0.0:0") && err.contains("--allow-remote"),
        "{err}"
    );
    assert!(!kubeconfig.exists(), "nothing is written when refused");
}
