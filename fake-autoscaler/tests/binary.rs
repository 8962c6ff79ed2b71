//! The `fake-autoscaler` binary as a user runs it: against a served fake API server through a
//! kubeconfig, as it would run against kind. Real time here, so waits are on conditions with a
//! generous deadline, never sleeps.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use api::autoscaling::ProvisioningRequest;
use fake_apiserver::FakeApiServer;
use k8s_openapi::api::core::v1::{Node, PodTemplate};
use kube::api::{Api, PostParams};
use kube::runtime::wait::await_condition;

struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const CONFIG: &str = r#"
nodeGroups:
  - {name: cpu, machine: {cpu: "4", memory: 16Gi}, minSize: 1, maxSize: 1}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provisions_through_a_kubeconfig() {
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
    let config = dir.path().join("autoscaler.yaml");
    std::fs::write(&config, CONFIG).expect("config");

    let mut child = Command::new(env!("CARGO_BIN_EXE_fake-autoscaler"))
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--config")
        .arg(&config)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the fake autoscaler");
    let stderr = child.stderr.take().expect("stderr");
    let _child = Killed(child);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            eprintln!("fake-autoscaler: {line}");
        }
    });

    let client = server.client();
    // Its node group's minimum: one Node, created in the API server.
    let nodes: Api<Node> = Api::all(client.clone());
    let node = await_condition(nodes, "cpu-0", |n: Option<&Node>| n.is_some());
    tokio::time::timeout(Duration::from_secs(60), node)
        .await
        .expect("the node within a minute")
        .expect("watch");

    let templates: Api<PodTemplate> = Api::namespaced(client.clone(), "default");
    let template: PodTemplate = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "pods"},
        "template": {"spec": {"containers": [{"name": "c", "image": "busybox",
            "resources": {"requests": {"cpu": "3"}}}]}}
    }))
    .expect("template");
    templates
        .create(&PostParams::default(), &template)
        .await
        .expect("create template");
    let requests: Api<ProvisioningRequest> = Api::namespaced(client.clone(), "default");
    for (name, count) in [("fits", 1), ("too-big", 2)] {
        let request: ProvisioningRequest = serde_json::from_value(serde_json::json!({
            "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
            "metadata": {"name": name},
            "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
                "podSets": [{"podTemplateRef": {"name": "pods"}, "count": count}]}
        }))
        .expect("request");
        requests
            .create(&PostParams::default(), &request)
            .await
            .expect("create request");
    }
    for (name, status, reason) in [
        ("fits", "True", "CapacityIsFound"),
        ("too-big", "False", "CapacityIsNotFound"),
    ] {
        let answered =
            await_condition(requests.clone(), name, |r: Option<&ProvisioningRequest>| {
                r.and_then(|r| r.status.as_ref())
                    .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Provisioned"))
                    .is_some_and(|c| c.status == status && c.reason == reason)
            });
        tokio::time::timeout(Duration::from_secs(60), answered)
            .await
            .unwrap_or_else(|_| panic!("{name}: Provisioned={status} {reason} within a minute"))
            .expect("watch");
    }
}

#[test]
fn a_bad_configuration_is_refused_with_the_field_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("autoscaler.yaml");
    std::fs::write(
        &config,
        "nodeGroups: [{name: a, machine: {}, minSize: 2, maxSize: 1}]",
    )
    .expect("config");
    let output = Command::new(env!("CARGO_BIN_EXE_fake-autoscaler"))
        .arg("--config")
        .arg(&config)
        .output()
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("nodeGroups[0].minSize: is larger than maxSize"),
        "{stderr}"
    );
}

#[test]
fn lists_the_broken_variants_with_their_rules() {
    let output = Command::new(env!("CARGO_BIN_EXE_fake-autoscaler"))
        .arg("--list-broken")
        .output()
        .expect("run");
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.lines().count(), fake_autoscaler::Broken::ALL.len());
    assert!(
        stdout.contains("provisioned-and-failed") && stdout.contains("never both set"),
        "{stdout}"
    );
}
