//! Honest verdicts from the `conformance` binary: where the suite cannot give one (the cluster does
//! not answer, lacks the CRDs, there is no cluster at all), one line on stderr, exit status 2 and
//! no report; and without a cluster flag it tests the cluster kubectl would, saying which.

use std::path::Path;
use std::process::Output;

use fake_apiserver::{FakeApiServer, TcpServer};

/// A complete options file, so that only the cluster stands between it and a run.
const OPTIONS: &str = r#"
className: check-capacity.autoscaling.x-k8s.io
podTemplates:
  fits: {count: 1, template: {spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "3"}}}]}}}
  doesNotFit: {count: 1, template: {spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "1000"}}}]}}}
"#;

const PODS: &str = r#"{count: 1, template: {spec: {containers: [{name: c, image: pause}]}}}"#;

/// Runs `conformance` with `args`, its report directory in `dir`, HOME in `dir` and no KUBECONFIG
/// (so that the machine's own kubeconfig never answers).
async fn conformance(dir: &Path, args: &[&str]) -> Output {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_conformance"))
        .args(args)
        .arg("--report-dir")
        .arg(dir.join("reports"))
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", dir)
        .kill_on_drop(true)
        .output();
    // Every case here stops before any test: a run that goes on is the failure.
    tokio::time::timeout(std::time::Duration::from_secs(60), run)
        .await
        .expect("conformance stops within a minute, before any test")
        .expect("conformance runs")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Exit status 2, one line on stderr, and no report: no verdict.
fn no_verdict(dir: &Path, out: &Output) -> String {
    let said = stderr(out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert_eq!(said.trim_end().lines().count(), 1, "one line: {said}");
    let report = walk(&dir.join("reports"))
        .into_iter()
        .find(|p| p.ends_with("report.yaml"));
    assert!(report.is_none(), "no report without a verdict: {report:?}");
    said
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return vec![];
    };
    entries
        .flatten()
        .flat_map(|e| {
            let path = e.path();
            if path.is_dir() {
                walk(&path)
            } else {
                vec![path]
            }
        })
        .collect()
}

/// Runs `conformance` against the kubeconfig at `kubeconfig` with the complete options file.
async fn against(dir: &Path, kubeconfig: &Path, extra: &[&str]) -> Output {
    let options = dir.join("options.yaml");
    std::fs::write(&options, OPTIONS).expect("options");
    let (kubeconfig, options) = (
        kubeconfig.display().to_string(),
        options.display().to_string(),
    );
    let mut args = vec!["--kubeconfig", &kubeconfig, "--options", &options];
    args.extend_from_slice(extra);
    conformance(dir, &args).await
}

/// A served fake API server with the CRDs in `crds` (files of `api::CHECKED_IN_CRDS`).
async fn served(crds: &[&str]) -> (FakeApiServer, TcpServer) {
    let mut builder = FakeApiServer::builder();
    for (file, yaml) in api::CHECKED_IN_CRDS {
        if crds.contains(&file) {
            builder = builder.crds_yaml(file, yaml);
        }
    }
    let server = builder.build().expect("server");
    let tcp = server
        .serve_tcp("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve");
    (server, tcp)
}

#[tokio::test]
async fn an_unreachable_cluster_gets_one_line_naming_its_server_and_no_verdict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1', \
         insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: \
         [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n",
    )
    .expect("kubeconfig");
    let out = against(dir.path(), &kubeconfig, &[]).await;
    let said = no_verdict(dir.path(), &out);
    assert!(
        said.contains("cannot reach the cluster at https://127.0.0.1:1"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_without_the_provisioning_request_crd_gets_no_verdict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_server, tcp) = served(&[]).await;
    let kubeconfig = dir.path().join("kubeconfig");
    tcp.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let out = against(dir.path(), &kubeconfig, &[]).await;
    let said = no_verdict(dir.path(), &out);
    assert!(
        said.contains("does not serve")
            && said.contains("provisioningrequests.autoscaling.x-k8s.io"),
        "{said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kueue_profile_needs_kueues_crds_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_server, tcp) = served(&["provisioningrequests.autoscaling.x-k8s.io.yaml"]).await;
    let kubeconfig = dir.path().join("kubeconfig");
    tcp.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let out = against(dir.path(), &kubeconfig, &["--kueue"]).await;
    let said = no_verdict(dir.path(), &out);
    assert!(said.contains("workloads.kueue.x-k8s.io"), "{said}");
    assert!(!said.contains("provisioningrequests.autoscaling"), "{said}");
}

#[tokio::test]
async fn a_class_without_any_kubeconfig_is_refused_not_run_elsewhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = conformance(dir.path(), &["--class", "queued.example.com"]).await;
    let said = no_verdict(dir.path(), &out);
    assert!(said.contains("no cluster to test"), "{said}");
    assert!(said.contains("--kubeconfig"), "{said}");
    assert!(said.contains("cargo xtask conformance"), "{said}");
}

/// Without a cluster flag, the current context of ~/.kube/config, named on stderr; here a cluster
/// without the CRD, so no verdict follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_cluster_flag_the_current_context_is_tested_and_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_server, tcp) = served(&[]).await;
    let kubeconfig = dir.path().join(".kube").join("config");
    tcp.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let pods = dir.path().join("pods.yaml");
    std::fs::write(&pods, PODS).expect("pods");
    let pods = pods.display().to_string();
    let out = conformance(
        dir.path(),
        &[
            "--class",
            "queued.example.com",
            "--fits",
            &pods,
            "--does-not-fit",
            &pods,
        ],
    )
    .await;
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    let first = said.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        format!(
            "testing on context `tollgate` (server {}) of {}, the current context, as kubectl would",
            tcp.url().trim_end_matches('/'),
            kubeconfig.display()
        ),
        "{said}"
    );
    assert!(
        said.contains("provisioningrequests.autoscaling.x-k8s.io"),
        "{said}"
    );
}
