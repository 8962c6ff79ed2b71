//! The `--kubeconfig` path, black box: a served fake API server, the `fake-autoscaler` binary as a
//! separate process, and the `conformance` binary against them on real time, with short timings
//! on both sides so that it takes seconds.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use fake_apiserver::{FakeApiServer, TcpServer};

mod common;

use common::{Killed, fake_autoscaler_binary};

const AUTOSCALER: &str = r#"
nodeGroups:
  - {name: cpu, machine: {cpu: "4", memory: 16Gi}, minSize: 1, maxSize: 1}
  - name: gpu
    machine: {cpu: "16", nvidia.com/gpu: "4"}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    maxSize: 2
    scaleUpDelay: 1s
# Booking ends before collection, as upstream (10 minutes, 7 days).
timing: {bookingTime: 8s, garbageCollection: 12s, retryInitial: 1s, retryMax: 2s}
"#;

const OPTIONS: &str = r#"
className: check-capacity.autoscaling.x-k8s.io
podTemplates:
  fits:
    count: 1
    template:
      spec:
        containers: [{name: c, image: registry.k8s.io/pause:3.10, resources: {requests: {cpu: "3"}}}]
  doesNotFit:
    count: 3
    template:
      spec:
        containers: [{name: c, image: registry.k8s.io/pause:3.10, resources: {requests: {nvidia.com/gpu: "4"}, limits: {nvidia.com/gpu: "4"}}}]
        tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
features: [noRetry, AtomicScaleUp, BookingExpiry, GarbageCollection]
timeouts: {accepted: 30s, provisioned: 30s, progress: 30s, retry: 5s, hold: 25s, scaleUp: 5s, booking: 8s, bookingExpiry: 30s, garbageCollection: 30s, cleanup: 30s}
implementation: {organization: Tollgate, project: fake-autoscaler, version: test}
"#;

/// A served fake API server and the fake autoscaler against it; both live as long as the tuple.
async fn world(dir: &Path, broken: Option<&str>) -> ((FakeApiServer, TcpServer), PathBuf, Killed) {
    let mut builder = FakeApiServer::builder();
    for (file, yaml) in api::CHECKED_IN_CRDS {
        builder = builder.crds_yaml(file, yaml);
    }
    let server = builder.build().expect("server");
    let tcp = server
        .serve_tcp("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve");
    let kubeconfig = dir.join("kubeconfig");
    tcp.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let config = dir.join("autoscaler.yaml");
    std::fs::write(&config, AUTOSCALER).expect("config");
    let mut cmd = Command::new(fake_autoscaler_binary());
    cmd.arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--config")
        .arg(&config);
    if let Some(b) = broken {
        cmd.args(["--broken", b]);
    }
    let child = cmd.stderr(Stdio::null()).spawn().expect("fake-autoscaler");
    // The world is ready once the autoscaler has made its node group's minimum.
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(server.client());
    let node = kube::runtime::wait::await_condition(
        nodes,
        "cpu-0",
        |n: Option<&k8s_openapi::api::core::v1::Node>| n.is_some(),
    );
    tokio::time::timeout(std::time::Duration::from_secs(60), node)
        .await
        .expect("the autoscaler's first node within a minute")
        .expect("watch");
    ((server, tcp), kubeconfig, Killed(child))
}

async fn conformance(dir: &Path, kubeconfig: &Path, extra: &[&str]) -> std::process::Output {
    let options = dir.join("options.yaml");
    std::fs::write(&options, OPTIONS).expect("options");
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_conformance"));
    cmd.arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--options")
        .arg(&options)
        .arg("--report-dir")
        .arg(dir.join("reports"))
        .args(extra);
    cmd.output().await.expect("conformance")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_class_passes_through_a_kubeconfig() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_server, kubeconfig, _autoscaler) = world(dir.path(), None).await;
    let out = conformance(dir.path(), &kubeconfig, &[]).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = std::fs::read_to_string(
        dir.path()
            .join("reports/check-capacity.autoscaling.x-k8s.io/report.yaml"),
    )
    .expect("report");
    assert!(report.contains("mode: cluster"), "{report}");
    assert!(report.contains("result: success"), "{report}");
    assert!(!report.contains("result: failure"), "{report}");
    assert!(
        report.contains("--kubeconfig <your kubeconfig>"),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_autoscaler_fails_with_the_rule_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_server, kubeconfig, _autoscaler) = world(dir.path(), Some("snake-case-reasons")).await;
    let out = conformance(dir.path(), &kubeconfig, &["--run-test", "request-answered"]).await;
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("condition reasons are CamelCase"),
        "{stdout}"
    );
    let junit = std::fs::read_to_string(
        dir.path()
            .join("reports/check-capacity.autoscaling.x-k8s.io/junit.xml"),
    )
    .expect("junit");
    assert!(
        junit.contains("<failure message=\"broken rule: condition reasons are CamelCase"),
        "{junit}"
    );
    assert!(
        dir.path()
            .join("reports/check-capacity.autoscaling.x-k8s.io/diagnostics/request-answered.yaml")
            .exists()
    );
}
