//! The job runner against a fake API server whose watches can be cut and whose history is short,
//! so that a cut watch comes back through a re-list.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use fake_apiserver::{FakeApiServer, FaultRule, Verb};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::json;

use super::JobRunner;
use crate::env::{Component, ComponentContext};

/// A Ready node with room for one pod of one CPU.
fn node() -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": "n"},
        "status": {
            "allocatable": {"cpu": "1", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }))
    .unwrap()
}

/// An unsuspended Job of one pod that needs the whole node.
fn job(name: &str) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "parallelism": 1,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox",
                                "resources": {"requests": {"cpu": "1"}}}],
            }},
        },
    }))
    .unwrap()
}

/// Lets virtual time pass, a second at a time, until `done` holds; fails after a minute.
async fn within_a_minute<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    for _ in 0..60 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    panic!("{what}: not within a minute of virtual time");
}

/// A fake API server and a job runner (with pods) against it, its Jobs running for `duration`.
fn serve_with_runner(
    duration: Duration,
) -> (FakeApiServer, tokio::task::JoinHandle<Result<(), String>>) {
    let server = FakeApiServer::builder()
        .start_time("2026-01-01T00:00:00Z".parse().unwrap())
        .build()
        .unwrap();
    let (start_wall, start) = server.clock().anchor();
    let ctx = ComponentContext {
        client: server.client(),
        start_wall,
        start,
    };
    let running = tokio::spawn(JobRunner::new(duration).with_pods().run(ctx));
    (server, running)
}

async fn started(jobs: &Api<Job>, name: &str) -> bool {
    let job = jobs.get(name).await.unwrap();
    job.status.and_then(|s| s.start_time).is_some()
}

#[tokio::test(start_paused = true)]
async fn a_pod_deleted_while_the_watch_was_down_frees_its_node() {
    // A history of one change: a watch cut for longer than that must re-list.
    let server = FakeApiServer::builder()
        .start_time("2026-01-01T00:00:00Z".parse().unwrap())
        .history_limit(1)
        .build()
        .unwrap();
    let client = server.client();
    let (start_wall, start) = server.clock().anchor();
    let runner = JobRunner::new(Duration::from_secs(3600)).with_pods();
    let ctx = ComponentContext {
        client: client.clone(),
        start_wall,
        start,
    };
    let running = tokio::spawn(runner.run(ctx));

    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let post = PostParams::default();
    Api::<Node>::all(client.clone())
        .create(&post, &node())
        .await
        .unwrap();
    jobs.create(&post, &job("first")).await.unwrap();
    within_a_minute("the first Job starts", || started(&jobs, "first")).await;

    // The runner's pod watch goes down and cannot come back; meanwhile the first Job's pod is
    // deleted and a second Job asks for the node.
    let down = server
        .faults()
        .inject(FaultRule::fail(500).verb(Verb::Watch).resource("pods"));
    server.faults().close_watches();
    let now = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    pods.delete("first-0", &now).await.unwrap();
    within_a_minute("the first pod is gone", || async {
        pods.get_opt("first-0").await.unwrap().is_none()
    })
    .await;
    jobs.create(&post, &job("second")).await.unwrap();
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(
        !started(&jobs, "second").await,
        "the runner cannot know the node is free yet"
    );

    // The watch comes back too late to resume: the re-list shows the pod gone.
    server.faults().remove(down);
    within_a_minute("the second Job starts on the freed node", || {
        started(&jobs, "second")
    })
    .await;
    let placed: BTreeMap<String, Option<String>> = pods
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| (p.metadata.name.unwrap(), p.spec.and_then(|s| s.node_name)))
        .collect();
    assert_eq!(
        placed,
        BTreeMap::from([("second-0".to_owned(), Some("n".to_owned()))])
    );
    assert!(!running.is_finished(), "the runner stopped");
}

/// A Job of one pod of one CPU, unsuspended, with `spec.managedBy` set or not.
fn managed_job(name: &str, managed_by: Option<&str>) -> Job {
    let mut job = job(name);
    job.spec.as_mut().unwrap().managed_by = managed_by.map(str::to_owned);
    job
}

/// Whether the Job got a status (beyond the API server's empty one), and the names of its pods.
async fn traces(client: &kube::Client, name: &str) -> (bool, Vec<String>) {
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let status = jobs.get(name).await.unwrap().status.unwrap_or_default();
    let has_status = status != Default::default();
    let pods: Vec<String> = Api::<Pod>::namespaced(client.clone(), "default")
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .filter(|n| n.starts_with(&format!("{name}-")))
        .collect();
    (has_status, pods)
}

#[rstest::rstest]
#[case::multikueue(Some("kueue.x-k8s.io/multikueue"), false)]
#[case::another_controller(Some("example.com/other"), false)]
#[case::the_job_controller(Some("kubernetes.io/job-controller"), true)]
#[case::unset(None, true)]
#[tokio::test(start_paused = true)]
async fn runs_only_the_jobs_the_job_controller_manages(
    #[case] managed_by: Option<&str>,
    #[case] runs: bool,
) {
    let (server, running) = serve_with_runner(Duration::from_secs(30));
    let client = server.client();
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let post = PostParams::default();
    let mut room = node();
    room.status
        .as_mut()
        .unwrap()
        .allocatable
        .as_mut()
        .unwrap()
        .insert(
            "cpu".to_owned(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("2".to_owned()),
        );
    Api::<Node>::all(client.clone())
        .create(&post, &room)
        .await
        .unwrap();

    jobs.create(&post, &managed_job("job", managed_by))
        .await
        .unwrap();
    // A Job created after it, which the runner surely runs: once it has completed, the runner
    // has long seen the first one.
    jobs.create(&post, &job("witness")).await.unwrap();
    within_a_minute("the witness completes", || async {
        let witness = jobs.get("witness").await.unwrap();
        super::ended(&witness) == Some("Succeeded")
    })
    .await;

    let (has_status, pods) = traces(&client, "job").await;
    if runs {
        assert!(has_status, "the Job controller's Job ran");
        assert_eq!(pods, vec!["job-0".to_owned()]);
    } else {
        assert!(!has_status, "another controller's Job got a status");
        assert!(
            pods.is_empty(),
            "another controller's Job got pods: {pods:?}"
        );
    }
    assert!(!running.is_finished(), "the runner stopped");
}

#[tokio::test(start_paused = true)]
async fn failed_writes_are_tried_again_and_the_job_still_runs_and_ends() {
    let (server, running) = serve_with_runner(Duration::from_secs(30));
    let client = server.client();
    let post = PostParams::default();
    Api::<Node>::all(client.clone())
        .create(&post, &node())
        .await
        .unwrap();
    // The pod's create is served but its answer lost; the first report of it running, the
    // first start and the first end of the Job fail.
    server.faults().inject(
        FaultRule::drop_connection(fake_apiserver::DropWhen::Answer)
            .verb(Verb::Create)
            .resource("pods")
            .times(1),
    );
    server
        .faults()
        .inject(FaultRule::fail(500).verb(Verb::Update).times(3));
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    jobs.create(&post, &job("flaky")).await.unwrap();
    within_a_minute("the Job starts", || started(&jobs, "flaky")).await;
    within_a_minute("the Job ends", || async {
        let job = jobs.get("flaky").await.unwrap();
        job.status.and_then(|s| s.succeeded) == Some(1)
    })
    .await;
    let pod = Api::<Pod>::namespaced(client.clone(), "default")
        .get("flaky-0")
        .await
        .unwrap();
    assert_eq!(
        pod.status.and_then(|s| s.phase).as_deref(),
        Some("Succeeded")
    );
    assert!(!running.is_finished(), "the runner is still running");
}
