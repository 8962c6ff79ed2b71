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

/// Run the `conformance` binary against `class`; its options as a vendor would write them.
async fn conformance(
    cp: &control_plane::ControlPlane,
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
        .arg(cp.kubeconfig())
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

/// One test: the classes share the control plane's Nodes, so they run one after another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_classes_pass_core_and_extended_on_kube_apiserver_and_a_broken_one_fails() {
    let Some(cp) = control_plane::testing::shared().await else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    for class in ReferenceClass::ALL {
        // One autoscaler at a time: they share the control plane's Nodes.
        let _autoscaler = world(cp, dir.path(), collection_after(class), None).await;
        let (out, report) = conformance(cp, dir.path(), class, &[]).await;
        assert!(
            out.status.success(),
            "{}: {}",
            class.class_name(),
            said(&out)
        );
        assert!(report.contains("mode: cluster"), "{report}");
        assert!(!report.contains("result: failure"), "{report}");
        assert!(!report.contains("result: partial"), "{report}");
        // Both of the class's profiles ran and passed, and so did the installation's check.
        assert_eq!(report.matches("result: success").count(), 3, "{report}");
    }
    // A broken variant is caught on the real server too, with the rule named.
    let _broken = world(cp, dir.path(), 6, Some("snake-case-reasons")).await;
    let (out, _) = conformance(
        cp,
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
