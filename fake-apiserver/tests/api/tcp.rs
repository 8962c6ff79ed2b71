//! The same server over TCP: kube-rs from the written kubeconfig, kubectl, and the binary.

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

pub(crate) async fn client_from(path: &Path) -> kube::Client {
    let kc = Kubeconfig::read_from(path).expect("kubeconfig readable");
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    kube::Client::try_from(config).expect("client")
}

/// A server on real time, served on loopback with its kubeconfig written to a temporary directory.
pub(crate) struct Served {
    pub(crate) server: fake_apiserver::FakeApiServer,
    tcp: fake_apiserver::TcpServer,
    dir: tempfile::TempDir,
}

impl Served {
    pub(crate) async fn start() -> Self {
        Self::start_with(fake_apiserver::Security::default()).await
    }

    /// Served over HTTPS with a bearer token (both in the kubeconfig).
    pub(crate) async fn start_locked() -> Self {
        Self::start_with(fake_apiserver::Security::locked().expect("a token")).await
    }

    pub(crate) async fn start_with(security: fake_apiserver::Security) -> Self {
        let server = fake_apiserver::FakeApiServer::builder()
            .build()
            .expect("server");
        let tcp = server
            .serve("127.0.0.1:0".parse().expect("addr"), security)
            .await
            .expect("serve");
        let dir = tempfile::tempdir().expect("tempdir");
        tcp.write_kubeconfig(&dir.path().join("kubeconfig"))
            .expect("write kubeconfig");
        Served { server, tcp, dir }
    }

    pub(crate) fn token(&self) -> Option<&str> {
        self.tcp.token()
    }

    pub(crate) fn kubeconfig(&self) -> std::path::PathBuf {
        self.dir.path().join("kubeconfig")
    }
}

/// kubectl, or None (with the reason printed) when it is absent and not required.
pub(crate) fn kubectl() -> Option<&'static str> {
    let found = Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return Some("kubectl");
    }
    if std::env::var_os("TOLLGATE_REQUIRE_KUBECTL").is_some() {
        panic!("kubectl is required (TOLLGATE_REQUIRE_KUBECTL is set) but was not found on PATH");
    }
    eprintln!(
        "skipping the kubectl part: kubectl is not on PATH (set TOLLGATE_REQUIRE_KUBECTL to make this a failure)"
    );
    None
}

pub(crate) fn run_kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn kube_rs_and_kubectl_use_the_served_kubeconfig() {
    let served = Served::start().await;
    let kubeconfig = served.kubeconfig();

    let client = client_from(&kubeconfig).await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("over-tcp".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    cms.create(&PostParams::default(), &cm)
        .await
        .expect("create over TCP");
    let namespaces: Api<Namespace> = Api::all(client);
    assert_eq!(
        namespaces
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len(),
        4
    );

    let Some(_) = kubectl() else { return };
    let kc = kubeconfig.clone();
    let (resources, names, labelled) = tokio::task::spawn_blocking(move || {
        let resources = run_kubectl(&kc, &["api-resources", "--no-headers"]);
        let names = run_kubectl(
            &kc,
            &[
                "get",
                "namespaces",
                "-o",
                "jsonpath={.items[*].metadata.name}",
            ],
        );
        run_kubectl(&kc, &["label", "configmap", "over-tcp", "team=tollgate"]);
        let labelled = run_kubectl(
            &kc,
            &["get", "configmaps", "-l", "team=tollgate", "-o", "name"],
        );
        (resources, names, labelled)
    })
    .await
    .expect("kubectl thread");
    for expected in [
        "pods ",
        "configmaps ",
        "jobs ",
        "leases ",
        "customresourcedefinitions ",
        "events ",
    ] {
        assert!(
            resources.lines().any(|l| l.starts_with(expected)),
            "api-resources lists {expected}: {resources}"
        );
    }
    assert!(
        resources
            .lines()
            .any(|l| l.starts_with("pods") && l.contains(" po ")),
        "short names shown"
    );
    assert_eq!(
        names.trim(),
        "default kube-node-lease kube-public kube-system"
    );
    assert_eq!(labelled.trim(), "configmap/over-tcp");
}

#[tokio::test]
async fn the_binary_prints_its_address_writes_a_kubeconfig_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("nested").join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-apiserver"))
        .args(["--listen", "127.0.0.1:0", "--kubeconfig-out"])
        .arg(&kubeconfig)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("binary starts");
    let stdout = child.stdout.take().expect("stdout");
    let addr = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .expect("address line");
        line.trim().to_string()
    })
    .await
    .expect("reader");
    assert!(
        addr.starts_with("127.0.0.1:"),
        "prints the bound address: {addr:?}"
    );
    let text = std::fs::read_to_string(&kubeconfig).expect("kubeconfig written");
    assert!(text.contains(&format!("server: http://{addr}")));

    let client = client_from(&kubeconfig).await;
    let info = client.apiserver_version().await.expect("version");
    assert_eq!(info.major, "1");

    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .expect("waiter")
        .expect("exit status");
    assert!(status.success(), "exits cleanly on SIGTERM: {status}");
}

#[test]
fn the_binary_refuses_a_bad_crd_directory_with_a_clear_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("bad.yaml"), "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: nope}\nspec: {group: g.io}\n")
        .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_fake-apiserver"))
        .args(["--kubeconfig-out", "/dev/null", "--crds"])
        .arg(dir.path())
        .output()
        .expect("binary runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.yaml: document 0 (nope) was refused")
            && err.contains("spec.names.plural"),
        "{err}"
    );
}

#[tokio::test]
async fn a_partition_drops_tcp_clients_until_it_heals() {
    let served = Served::start().await;
    let (server, kubeconfig) = (&served.server, served.kubeconfig());
    let namespaces: Api<Namespace> = Api::all(client_from(&kubeconfig).await);
    namespaces
        .get("default")
        .await
        .expect("served before the partition");

    server
        .faults()
        .partition(std::time::Duration::from_secs(3600));
    let err = namespaces
        .get("default")
        .await
        .expect_err("refused during the partition");
    assert!(
        !matches!(err, kube::Error::Api(_)),
        "a connection failure, not an API answer: {err:?}"
    );
    server.faults().heal();
    namespaces
        .get("default")
        .await
        .expect("served again after healing");
}
