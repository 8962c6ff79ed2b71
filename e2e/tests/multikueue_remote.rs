//! MultiKueue out of process, as a user would run it: a manager and two workers, each its own
//! reference control plane with Tollgate's controller (and on the workers the job runner) as
//! processes. The manager's controller reaches the workers over TLS on loopback with the
//! kubeconfigs their control planes wrote, from Secrets in its namespace. Without the control
//! plane's binaries this says why and passes, unless `TOLLGATE_REQUIRE_CONTROL_PLANE` is set (CI).

use std::path::Path;

use e2e::backend::{Backend, RealOutcome, Session};
use e2e::scenario::parse;

/// The manager reads worker-1's kubeconfig from a Secret and worker-2's from a file under its
/// `--multikueue-kubeconfig-dir` (`KUBECONFIG_DIR`, filled in by the test). A Job handed to
/// MultiKueue on the manager runs on worker-1, the only worker with a LocalQueue
/// for it, and never on worker-2; the Job's success comes back to the manager's Job and Workload,
/// and worker-1's copy is removed once it finished.
const SCENARIO: &str = r#"
name: multikueue-remote-two-workers
description: A Job dispatched to two workers runs on the one that admits it, out of process.
tags: [multikueue]
components:
  controller: {}
workers:
  worker-1:
    components:
      controller: {}
      job-runner: {duration: 8s}
  worker-2:
    components:
      controller: {}
      job-runner: {duration: 8s}
trace: [Job, Workload]
steps:
  - name: worker-1 has a queue with room
    cluster: worker-1
    apply:
      objects:
        - {apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: default}}
        - apiVersion: kueue.x-k8s.io/v1beta2
          kind: ClusterQueue
          metadata: {name: team}
          spec:
            resourceGroups:
              - coveredResources: [cpu]
                flavors: [{name: default, resources: [{name: cpu, nominalQuota: "4"}]}]
        - apiVersion: kueue.x-k8s.io/v1beta2
          kind: LocalQueue
          metadata: {name: main}
          spec: {clusterQueue: team}
  - name: worker-2 has no LocalQueue, so its copy waits
    cluster: worker-2
    apply:
      objects:
        - {apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: default}}
        - apiVersion: kueue.x-k8s.io/v1beta2
          kind: ClusterQueue
          metadata: {name: team}
          spec:
            resourceGroups:
              - coveredResources: [cpu]
                flavors: [{name: default, resources: [{name: cpu, nominalQuota: "4"}]}]
  - name: the manager knows both workers and queues through the MultiKueue check
    apply:
      objects:
        - apiVersion: kueue.x-k8s.io/v1beta2
          kind: MultiKueueCluster
          metadata: {name: worker-1}
          spec: {clusterSource: {kubeConfig: {locationType: Secret, location: worker-1}}}
        - apiVersion: kueue.x-k8s.io/v1beta2
          kind: MultiKueueCluster
          metadata: {name: worker-2}
          spec: {clusterSource: {kubeConfig: {locationType: Path, location: KUBECONFIG_DIR/worker-2}}}
        - apiVersion: kueue.x-k8s.io/v1beta2
          kind: MultiKueueConfig
          metadata: {name: mk}
          spec: {clusters: [worker-1, worker-2]}
        - apiVersion: kueue.x-k8s.io/v1beta2
          kind: AdmissionCheck
          metadata: {name: mk}
          spec:
            controllerName: kueue.x-k8s.io/multikueue
            parameters: {apiGroup: kueue.x-k8s.io, kind: MultiKueueConfig, name: mk}
        - {apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: default}}
        - apiVersion: kueue.x-k8s.io/v1beta2
          kind: ClusterQueue
          metadata: {name: team}
          spec:
            admissionChecksStrategy: {admissionChecks: [{name: mk}]}
            resourceGroups:
              - coveredResources: [cpu]
                flavors: [{name: default, resources: [{name: cpu, nominalQuota: "4"}]}]
        - apiVersion: kueue.x-k8s.io/v1beta2
          kind: LocalQueue
          metadata: {name: main}
          spec: {clusterQueue: team}
  - name: the manager reaches worker-1 over the network
    assert:
      object:
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: MultiKueueCluster
        metadata: {name: worker-1}
        status: {conditions: [{type: Active, status: "True", reason: Active}]}
  - assert:
      object:
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: MultiKueueCluster
        metadata: {name: worker-2}
        status: {conditions: [{type: Active, status: "True", reason: Active}]}
  - assert:
      object:
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: AdmissionCheck
        metadata: {name: mk}
        status: {conditions: [{type: Active, status: "True"}]}
  - name: a Job for MultiKueue on the manager
    create:
      object:
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: sample
          labels: {kueue.x-k8s.io/queue-name: main}
        spec:
          managedBy: kueue.x-k8s.io/multikueue
          suspend: true
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: work
                  image: busybox
                  resources: {requests: {cpu: "1"}}
  - name: it runs on worker-1, as the manager's copy with the manager's origin
    cluster: worker-1
    assert:
      object:
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: sample
          labels: {kueue.x-k8s.io/multikueue-origin: multikueue}
        spec: {suspend: false}
        status: {active: 1}
  - name: worker-2 never has the Job
    cluster: worker-2
    absent:
      object: {apiVersion: batch/v1, kind: Job, metadata: {name: sample}}
  - name: the success comes back to the manager's Job
    assert:
      object:
        apiVersion: batch/v1
        kind: Job
        metadata: {name: sample}
        status:
          succeeded: 1
          conditions: [{type: Complete, status: "True"}]
  - name: the manager's Workload finished on worker-1
    assert:
      object:
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: Workload
        status:
          clusterName: worker-1
          conditions: [{type: Finished, status: "True"}]
  - name: once it finished, worker-1's copy goes
    cluster: worker-1
    absent:
      object: {apiVersion: batch/v1, kind: Job, metadata: {name: sample}}
"#;

/// Which backend runs which two-worker scenario out of process, and why not.
#[rstest::rstest]
#[case::plain_on_the_control_plane(Backend::ControlPlane, "", None)]
#[case::partition_is_a_fault(
    Backend::ControlPlane,
    "  - partition: {worker: worker-1, mode: refuse}\n",
    Some("line 8: it injects faults")
)]
#[case::long_waits_need_virtual_time(
    Backend::ControlPlane,
    "  - advance: 2m\n",
    Some("line 8: it advances 2m0s on virtual time; a real cluster waits at most 30s")
)]
#[case::workers_need_control_planes(
    Backend::Kubeconfig("kubeconfig".into()),
    "",
    Some(
        "it declares worker clusters, which run out of process only on the control-plane \
         backend (each worker its own reference control plane)"
    )
)]
fn which_worker_scenarios_run_out_of_process(
    #[case] backend: Backend,
    #[case] step: &str,
    #[case] blocker: Option<&str>,
) {
    let text = format!(
        "name: s\ndescription: d\nworkers:\n  worker-1: {{}}\n  worker-2: {{}}\nsteps:\n  - advance: 1s\n{step}"
    );
    let scenario = parse("s.yaml", &text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let dir = tempfile::tempdir().expect("tempdir");
    let session = Session::start(backend, dir.path()).expect("session");
    assert_eq!(session.blocker(&scenario).as_deref(), blocker);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

#[test]
fn a_job_runs_on_the_worker_that_admits_it_out_of_process() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Where the run writes the manager's kubeconfig files: `<run dir>/<scenario>/kubeconfigs`.
    let kubeconfigs = dir.path().join("multikueue-remote-two-workers/kubeconfigs");
    let text = SCENARIO.replace("KUBECONFIG_DIR", &kubeconfigs.display().to_string());
    let scenario =
        parse("multikueue-remote.yaml", &text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"));
    let session = Session::start(Backend::ControlPlane, dir.path()).expect("session");
    // Runs on the control-plane backend, whatever the scenario file format says of workers.
    assert_eq!(session.blocker(&scenario), None);
    if !control_plane::testing::available(&control_plane::Binaries::locate()) {
        return;
    }
    let wall = std::time::Instant::now();
    let result = runtime().block_on(session.run(&scenario));
    eprintln!("ran in {:.1} s", wall.elapsed().as_secs_f64());
    match result {
        Ok(RealOutcome::Ran { outcome, dir }) => {
            if let Some(failure) = &outcome.failure {
                panic!(
                    "{failure}\ntrace:\n{}\n{}",
                    outcome.trace.to_yaml(),
                    log_tails(&dir)
                );
            }
        }
        Ok(RealOutcome::Skipped(reason)) => panic!("skipped: {reason}"),
        Err(e) => panic!("{e}"),
    }
    session.finish().expect("finish");
}

/// The end of every component's log, the manager's and each worker's.
fn log_tails(dir: &Path) -> String {
    let mut out = String::new();
    for sub in ["", "worker-1", "worker-2"] {
        for f in ["controller.log", "job-runner.log"] {
            let path = dir.join(sub).join(f);
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let tail: Vec<&str> = text.lines().rev().take(30).collect();
            out.push_str(&format!(
                "--- {} (end)\n{}\n",
                path.display(),
                tail.into_iter().rev().collect::<Vec<_>>().join("\n")
            ));
        }
    }
    out
}
