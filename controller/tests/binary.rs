//! The `controller` binary as a user runs it: against a served fake API server through a
//! kubeconfig, with its metrics endpoint. Real time here, so waits are on conditions with a
//! generous deadline, never sleeps.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use api::kueue::Workload;
use fake_apiserver::FakeApiServer;
use kube::api::{Api, PostParams};
use kube::runtime::wait::await_condition;

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn objects() -> Vec<serde_json::Value> {
    let yaml = r#"
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: ResourceFlavor
  metadata: {name: default-flavor}
  spec: {}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: ClusterQueue
  metadata: {name: team}
  spec:
    resourceGroups:
      - coveredResources: [cpu]
        flavors: [{name: default-flavor, resources: [{name: cpu, nominalQuota: "2"}]}]
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: LocalQueue
  metadata: {name: main, namespace: default}
  spec: {clusterQueue: team}
"#;
    serde_yaml::from_str(yaml).expect("objects")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admits_through_a_kubeconfig_and_reports_metrics() {
    let mut builder = FakeApiServer::builder();
    for (file, yaml) in api::CHECKED_IN_CRDS {
        builder = builder.crds_yaml(file, yaml);
    }
    let server = builder.build().expect("server");
    let tcp = server
        .serve_tcp("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    tcp.write_kubeconfig(&kubeconfig).expect("kubeconfig");

    let mut child = Command::new(env!("CARGO_BIN_EXE_controller"))
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--metrics-bind-address", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the controller");
    let stderr = child.stderr.take().expect("stderr");
    let _child = Killed(child);
    let mut lines = BufReader::new(stderr).lines();
    let metrics_url = loop {
        let line = lines
            .next()
            .expect("the controller exited")
            .expect("stderr");
        if let Some(url) = line.strip_prefix("serving metrics on ") {
            break url.to_owned();
        }
    };
    // Keep reading stderr so the child never blocks on a full pipe.
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            eprintln!("controller: {line}");
        }
    });

    let client = server.client();
    for obj in objects() {
        let dynamic: kube::api::DynamicObject = serde_json::from_value(obj).expect("object");
        let gvk = kube::api::GroupVersionKind::try_from(dynamic.types.as_ref().expect("types"))
            .expect("gvk");
        let (ar, _) = kube::discovery::pinned_kind(&client, &gvk)
            .await
            .expect("discovery");
        let api: Api<kube::api::DynamicObject> = match &dynamic.metadata.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
            None => Api::all_with(client.clone(), &ar),
        };
        api.create(&PostParams::default(), &dynamic)
            .await
            .expect("create");
    }
    let workloads: Api<Workload> = Api::namespaced(client.clone(), "default");
    let wl: Workload = serde_json::from_value(serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"queueName": "main", "podSets": [{"name": "main", "count": 2, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}
    }))
    .expect("workload");
    workloads
        .create(&PostParams::default(), &wl)
        .await
        .expect("create workload");
    let admitted = await_condition(workloads.clone(), "w", |wl: Option<&Workload>| {
        wl.is_some_and(controller::workload::is_admitted)
    });
    tokio::time::timeout(Duration::from_secs(60), admitted)
        .await
        .expect("admitted within a minute")
        .expect("watch");

    // The queue's status is written after the admission is counted: once it shows the
    // admission, so do the metrics.
    let queues: Api<api::kueue::ClusterQueue> = Api::all(client.clone());
    let counted = await_condition(queues, "team", |cq: Option<&api::kueue::ClusterQueue>| {
        cq.and_then(|cq| cq.status.as_ref())
            .is_some_and(|s| s.admitted_workloads == 1)
    });
    tokio::time::timeout(Duration::from_secs(60), counted)
        .await
        .expect("counted within a minute")
        .expect("watch");
    let text = tokio::task::spawn_blocking(move || http_get(&metrics_url))
        .await
        .expect("join");
    assert!(
        text.contains("kueue_admitted_workloads_total{cluster_queue=\"team\"} 1"),
        "{text}"
    );
}

#[test]
fn a_bad_configuration_file_stops_it_with_the_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nfeatureGates:\n  NoSuchGate: true\n",
    )
    .expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_controller"))
        .arg("--config")
        .arg(&config)
        .output()
        .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("featureGates: Invalid value: \"NoSuchGate\": unrecognized feature gate"),
        "{stderr}"
    );
}

/// A plain HTTP/1.0 GET, enough for the metrics endpoint.
fn http_get(url: &str) -> String {
    let rest = url.strip_prefix("http://").expect("http url");
    let (host, path) = rest.split_once('/').expect("path");
    let mut stream = std::net::TcpStream::connect(host).expect("connect");
    write!(stream, "GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n").expect("request");
    let mut body = String::new();
    stream.read_to_string(&mut body).expect("response");
    body
}
