//! What a vendor does, on the real kube-apiserver: the reference control plane, Kueue's CRDs
//! applied, the `fake-autoscaler` binary serving the reference classes as a separate process,
//! and the `conformance` binary run through a kubeconfig against each class, core and extended.
//!
//! Skips (saying why) without the control plane's binaries, unless
//! `TOLLGATE_REQUIRE_CONTROL_PLANE` is set.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use conformance::options::Timeouts;
use conformance::reference::ReferenceClass;
use k8s_openapi::api::core::v1::Node;

mod common;

use common::{Killed, fake_autoscaler_binary, until_served};

// `common::` below: the ServiceAccount helpers.

/// The embedded world's node groups and classes, with timings short enough for real time:
/// scale-ups in a second, the vendor class queued for two, bookings of twenty, and collection
/// after `{gc}` seconds.
const AUTOSCALER: &str = r#"
nodeGroups:
  - {name: cpu, machine: {cpu: "4", memory: 16Gi}, minSize: 1, maxSize: 1}
  - name: gpu
    machine: {cpu: "16", nvidia.com/gpu: "4"}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    maxSize: 2
    scaleUpDelay: 1s
classes:
  - {name: check-capacity.autoscaling.x-k8s.io, behaviour: check-capacity}
  - {name: best-effort-atomic-scale-up.autoscaling.x-k8s.io, behaviour: atomic-scale-up}
  - name: queued-provisioning.tollgate.dev
    behaviour: vendor
    queueDelay: 2s
    provisioningClassDetails: {NodePoolName: "{nodeGroup}", ResizeRequestName: "{request}-resize"}
timing: {bookingTime: 20s, garbageCollection: {gc}s, retryInitial: 1s, retryMax: 2s}
"#;

/// Collection must come after every rule a test waits for, or a collected request would pass a
/// test it should fail: the vendor class gets a minute for `ValidUntilSeconds` and
/// `maxRunDurationSeconds`, so its requests are collected later.
fn collection_after(class: ReferenceClass) -> u64 {
    match class {
        ReferenceClass::Queued => 75,
        // After the 20-second booking ends.
        _ => 30,
    }
}

/// Timeouts suited to those timings: each wait is several times what the class needs, `hold`
/// is more than twice the class's slowest answer (a request without its PodTemplates is failed
/// after 10 seconds), and `retry` ends before a booking would (the suite refuses it otherwise).
fn timeouts(class: ReferenceClass) -> Timeouts {
    let s = |n| api::config::GoDuration(Duration::from_secs(n));
    Timeouts {
        accepted: s(30),
        provisioned: s(30),
        progress: s(30),
        retry: s(10),
        hold: s(25),
        scale_up: s(5),
        booking: s(20),
        booking_expiry: s(30),
        garbage_collection: s(collection_after(class) + 30),
        cleanup: s(60),
    }
}

/// The control plane with Kueue's CRDs and the fake autoscaler (a broken variant, if named).
async fn world(
    cp: &control_plane::ControlPlane,
    dir: &Path,
    collect_after: u64,
    broken: Option<&str>,
) -> Killed {
    let client = cp.client().await.expect("admin client");
    control_plane::install_crds(&client, &api::CHECKED_IN_CRDS, Duration::from_secs(60))
        .await
        .expect("Kueue's and the autoscaler's CRDs install");
    // The suite's preflight reads discovery, which may trail Established.
    until_served(&client, "autoscaling.x-k8s.io/v1", "provisioningrequests").await;
    let config = dir.join("autoscaler.yaml");
    std::fs::write(
        &config,
        AUTOSCALER.replace("{gc}", &collect_after.to_string()),
    )
    .expect("config");
    let mut cmd = Command::new(fake_autoscaler_binary());
    cmd.arg("--kubeconfig")
        .arg(cp.kubeconfig())
        .arg("--config")
        .arg(&config);
    if let Some(b) = broken {
        cmd.args(["--broken", b]);
    }
    let log = std::fs::File::create(dir.join("fake-autoscaler.log")).expect("log");
    let child = Killed(
        cmd.stderr(log)
            .stdout(Stdio::null())
            .spawn()
            .expect("fake-autoscaler"),
    );
    let nodes: kube::Api<Node> = kube::Api::all(client);
    let node = kube::runtime::wait::await_condition(nodes, "cpu-0", |n: Option<&Node>| n.is_some());
    tokio::time::timeout(Duration::from_secs(60), node)
        .await
        .expect("the autoscaler's first node within a minute")
        .expect("watch");
    child
}

/// Run the `conformance` binary against `class` with `kubeconfig`'s credentials; its options as
/// a vendor would write them.
async fn conformance(
    kubeconfig: &Path,
    dir: &Path,
    class: ReferenceClass,
    extra: &[&str],
) -> (std::process::Output, String) {
    let mut options = class.options();
    // The kueue profile needs pods to run, and no kubelet runs here.
    options.kueue = false;
    options.timeouts = timeouts(class);
    let file = dir.join(format!("{}.options.yaml", class.class_name()));
    std::fs::write(&file, serde_yaml::to_string(&options).expect("yaml")).expect("options");
    let reports = dir.join("reports");
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_conformance"))
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--options")
        .arg(&file)
        .arg("--report-dir")
        .arg(&reports)
        .args(extra)
        .output()
        .await
        .expect("conformance runs");
    let report = std::fs::read_to_string(reports.join(class.class_name()).join("report.yaml"))
        .unwrap_or_default();
    (out, report)
}

fn said(out: &std::process::Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every reference class passes both of its profiles, each class on a control plane of its own
/// (an autoscaler's Nodes are the cluster's, so two classes cannot share one). A class's run is
/// mostly waiting on real time (holds, bookings, collection), so the three run side by side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_classes_pass_core_and_extended_on_kube_apiserver() {
    let runs = ReferenceClass::ALL.map(|class| async move {
        let cp = control_plane::testing::private().await?;
        let dir = tempfile::tempdir().expect("tempdir");
        let _autoscaler = world(&cp, dir.path(), collection_after(class), None).await;
        let (out, report) = conformance(cp.kubeconfig(), dir.path(), class, &[]).await;
        Some((class, out, report))
    });
    for (class, out, report) in futures::future::join_all(runs).await.into_iter().flatten() {
        let name = class.class_name();
        assert!(out.status.success(), "{name}: {}", said(&out));
        assert!(report.contains("mode: cluster"), "{name}: {report}");
        assert!(!report.contains("result: failure"), "{name}: {report}");
        assert!(!report.contains("result: partial"), "{name}: {report}");
        // Both of the class's profiles ran and passed, and so did the installation's check.
        assert_eq!(
            report.matches("result: success").count(),
            3,
            "{name}: {report}"
        );
    }
}

/// A broken variant is caught on the real server too, with the rule named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_variant_fails_on_kube_apiserver_with_the_rule_named() {
    let Some(cp) = control_plane::testing::private().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let _broken = world(&cp, dir.path(), 6, Some("snake-case-reasons")).await;
    let (out, _) = conformance(
        cp.kubeconfig(),
        dir.path(),
        ReferenceClass::CheckCapacity,
        &["--run-test", "request-answered"],
    )
    .await;
    assert!(!out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains("condition reasons are CamelCase"),
        "{}",
        said(&out)
    );
}

/// Objects the suite did not make: a namespace with a PodTemplate, a ProvisioningRequest of
/// another class and a suspended Job, and a Node of another node pool.
const FOREIGN: &[(&str, &str, &str)] = &[
    ("v1", "Namespace", r#"{"metadata": {"name": "foreign"}}"#),
    (
        "v1",
        "PodTemplate",
        r#"{"metadata": {"name": "foreign-template", "namespace": "foreign"}, "template": {"spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1"}}}]}}}"#,
    ),
    (
        "autoscaling.x-k8s.io/v1",
        "ProvisioningRequest",
        r#"{"metadata": {"name": "foreign-request", "namespace": "foreign"}, "spec": {"provisioningClassName": "queued-provisioning.gke.io", "podSets": [{"podTemplateRef": {"name": "foreign-template"}, "count": 1}]}}"#,
    ),
    (
        "batch/v1",
        "Job",
        r#"{"metadata": {"name": "foreign-job", "namespace": "foreign"}, "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "pause"}]}}}}"#,
    ),
    (
        "v1",
        "Node",
        r#"{"metadata": {"name": "foreign-node", "labels": {"cloud.google.com/gke-nodepool": "other"}}, "status": {"capacity": {"cpu": "8"}, "allocatable": {"cpu": "8"}}}"#,
    ),
];

/// Each foreign object as the server holds it, byte for byte.
async fn snapshot(
    client: &kube::Client,
    objects: &[(kube::api::ApiResource, String, Option<String>)],
) -> Vec<String> {
    let mut held = Vec::new();
    for (resource, name, namespace) in objects {
        let api: kube::Api<kube::api::DynamicObject> = match namespace {
            Some(ns) => kube::Api::namespaced_with(client.clone(), ns, resource),
            None => kube::Api::all_with(client.clone(), resource),
        };
        let object = api.get(name).await.expect("a foreign object");
        held.push(serde_json::to_string(&object).expect("json"));
    }
    held
}

/// The suite, run with exactly the rights conformance/rbac.yaml documents (bound to a
/// ServiceAccount, nothing else), passes; and every object it did not make is byte for byte as it
/// was, resourceVersion included (the Node: but for what kube-controller-manager writes to it):
/// it edited and deleted nothing of anyone else's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_only_its_documented_rights_the_suite_passes_and_leaves_foreign_objects_untouched() {
    // A control plane of its own: its autoscaler must not meet the other test's.
    let Some(cp) = control_plane::testing::private().await else {
        return;
    };
    let admin = cp.client().await.expect("admin client");
    let dir = tempfile::tempdir().expect("tempdir");
    let class = ReferenceClass::CheckCapacity;
    let _autoscaler = world(&cp, dir.path(), collection_after(class), None).await;

    let mut foreign = Vec::new();
    for (api_version, kind, json) in FOREIGN {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        let discovered = kube::discovery::pinned_kind(&admin, &gvk)
            .await
            .expect("the kind is served");
        let (resource, caps) = discovered;
        let value: serde_json::Value = serde_json::from_str(json).expect("json");
        let mut object: kube::api::DynamicObject =
            serde_json::from_value(value).expect("an object");
        object.types = Some(kube::api::TypeMeta {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        });
        let namespace = object.metadata.namespace.clone();
        let api: kube::Api<kube::api::DynamicObject> = match (&namespace, caps.scope) {
            (Some(ns), kube::discovery::Scope::Namespaced) => {
                kube::Api::namespaced_with(admin.clone(), ns, &resource)
            }
            _ => kube::Api::all_with(admin.clone(), &resource),
        };
        api.create(&kube::api::PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("creating the foreign {kind}: {e}"));
        let name = object.metadata.name.clone().expect("a name");
        foreign.push((resource, name, namespace));
    }
    let before = snapshot(&admin, &foreign).await;

    let kubeconfig =
        common::account_kubeconfig(&cp, &admin, dir.path(), "vendor", "conformance").await;
    common::bind_suite_role(&admin, "vendor-conformance", "vendor", "conformance").await;
    common::until_allowed(&kubeconfig, "create", "namespaces").await;
    let (out, _) = conformance(Path::new(&kubeconfig), dir.path(), class, &[]).await;
    assert!(out.status.success(), "{}", said(&out));

    let after = snapshot(&admin, &foreign).await;
    for ((resource, name, _), (was, is)) in foreign.iter().zip(before.iter().zip(&after)) {
        if resource.kind == "Node" {
            // kube-controller-manager annotates a new Node at its own pace: the Node must be
            // unchanged apart from what it wrote.
            let (was, is): (serde_json::Value, serde_json::Value) = (
                serde_json::from_str(was).expect("json"),
                serde_json::from_str(is).expect("json"),
            );
            for field in ["/spec", "/status", "/metadata/labels"] {
                assert_eq!(
                    was.pointer(field),
                    is.pointer(field),
                    "the suite changed {field} of Node {name}"
                );
            }
            let managers = |v: &serde_json::Value| -> Vec<String> {
                v["metadata"]["managedFields"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|m| m["manager"].as_str().map(String::from))
                    .collect()
            };
            let known = managers(&was);
            for manager in managers(&is) {
                assert!(
                    known.contains(&manager) || manager == "kube-controller-manager",
                    "{manager} wrote to Node {name}"
                );
            }
            continue;
        }
        assert_eq!(was, is, "the suite changed {} {name}", resource.kind);
    }
}
