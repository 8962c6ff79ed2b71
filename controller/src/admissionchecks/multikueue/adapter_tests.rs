#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use api::kueue::Workload;
use fake_apiserver::FakeApiServer;
use k8s_openapi::api::batch::v1::{Job, JobStatus};
use kube::api::{Api, PostParams};
use kube::{Client, ResourceExt};
use rstest::rstest;
use serde_json::{Value, json};

use super::*;
use crate::Clock;
use crate::state::World;
use crate::writer::Writer;

const ORIGIN: &str = "mk";

/// The manager's job: handed to MultiKueue, as the API server stores it (uid, selector and the
/// Job controller's template labels).
fn local_job(suspend: bool) -> Job {
    serde_json::from_value(json!({
        "metadata": {
            "name": "demo", "namespace": "ns", "uid": "manager-uid", "resourceVersion": "7",
            "labels": {"kueue.x-k8s.io/queue-name": "lq", "team": "a"},
            "annotations": {"note": "x"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u"}],
        },
        "spec": {
            "suspend": suspend, "parallelism": 2, "managedBy": "kueue.x-k8s.io/multikueue",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "manager-uid"}},
            "template": {
                "metadata": {"labels": {
                    "app": "demo",
                    "controller-uid": "manager-uid",
                    "batch.kubernetes.io/controller-uid": "manager-uid",
                    "job-name": "demo",
                    "batch.kubernetes.io/job-name": "demo",
                }},
                "spec": {"restartPolicy": "Never",
                         "containers": [{"name": "c", "image": "busybox"}]},
            },
        },
        "status": {"active": 0},
    }))
    .unwrap()
}

fn labels(job: &Job) -> BTreeMap<String, String> {
    job.metadata.labels.clone().unwrap_or_default()
}

// ---------- the remote job ----------

#[test]
fn the_remote_job_is_a_suspended_copy_for_the_worker_to_run() {
    let remote = remote_job(&local_job(false), "job-demo-abcde", ORIGIN);
    assert_eq!(remote.metadata.name.as_deref(), Some("demo"));
    assert_eq!(remote.metadata.namespace.as_deref(), Some("ns"));
    assert_eq!(
        labels(&remote),
        BTreeMap::from([
            ("kueue.x-k8s.io/queue-name".to_owned(), "lq".to_owned()),
            ("team".to_owned(), "a".to_owned()),
            (
                "kueue.x-k8s.io/multikueue-origin".to_owned(),
                ORIGIN.to_owned()
            ),
            (
                "kueue.x-k8s.io/prebuilt-workload-name".to_owned(),
                "job-demo-abcde".to_owned()
            ),
        ])
    );
    assert_eq!(
        remote.metadata.annotations,
        Some(BTreeMap::from([("note".to_owned(), "x".to_owned())]))
    );
    // Nothing of the manager's instance: the worker makes its own.
    assert_eq!(remote.metadata.uid, None);
    assert_eq!(remote.metadata.resource_version, None);
    assert_eq!(remote.metadata.owner_references, None);
    assert_eq!(remote.status, None);
    let spec = remote.spec.unwrap();
    assert_eq!(spec.selector, None);
    assert_eq!(spec.managed_by, None, "the worker's Job controller runs it");
    assert_eq!(spec.suspend, Some(true), "the worker's Kueue starts it");
    assert_eq!(spec.parallelism, Some(2));
    let template_labels = spec.template.metadata.unwrap().labels.unwrap();
    assert_eq!(
        template_labels.keys().collect::<Vec<_>>(),
        ["app", "batch.kubernetes.io/job-name"]
    );
}

#[test]
fn a_workload_name_too_long_for_a_label_goes_in_an_annotation() {
    let long = format!("job-{}-abcde", "d".repeat(80));
    let remote = remote_job(&local_job(true), &long, ORIGIN);
    assert!(!labels(&remote).contains_key("kueue.x-k8s.io/prebuilt-workload-name"));
    assert_eq!(
        remote
            .metadata
            .annotations
            .as_ref()
            .unwrap()
            .get("kueue.x-k8s.io/prebuilt-workload-name"),
        Some(&long)
    );
    assert_eq!(
        workload_of_remote(&remote.metadata),
        Some(format!("ns/{long}"))
    );
}

// ---------- which status is copied ----------

fn with_status(mut job: Job, suspend: bool, status: Value) -> Job {
    job.spec.as_mut().unwrap().suspend = Some(suspend);
    job.status = Some(serde_json::from_value(status).unwrap());
    job
}

fn running() -> Value {
    json!({"active": 2, "ready": 2, "startTime": "2026-01-01T00:00:00Z"})
}

fn complete() -> Value {
    json!({"succeeded": 2, "startTime": "2026-01-01T00:00:00Z",
           "completionTime": "2026-01-01T00:01:00Z",
           "conditions": [{"type": "Complete", "status": "True"}]})
}

#[rstest]
#[case::local_runs(false, true, running(), true)]
#[case::both_suspended(true, true, json!({"active": 0}), true)]
#[case::remote_finished_while_local_suspended(true, false, complete(), true)]
#[case::remote_runs_while_local_suspended(true, false, running(), false)]
fn the_status_is_copied_unless_the_local_job_waits_to_start(
    #[case] local_suspended: bool,
    #[case] remote_suspended: bool,
    #[case] remote_status: Value,
    #[case] copied: bool,
) {
    let local = with_status(local_job(true), local_suspended, json!({}));
    let remote = with_status(local_job(true), remote_suspended, remote_status);
    let want = copied.then(|| remote.status.clone().unwrap());
    assert_eq!(status_to_copy(&local, &remote), want);
}

#[rstest]
#[case::running_here_keeps_it(false, json!({"active": 0}), Some("2026-01-01T00:00:00Z"))]
#[case::suspended_here_takes_the_remotes(true, json!({"active": 0}), None)]
#[case::a_later_start_there_keeps_the_first(
    false,
    json!({"active": 1, "startTime": "2026-01-01T00:05:00Z"}),
    Some("2026-01-01T00:00:00Z")
)]
fn a_running_jobs_start_time_never_changes(
    #[case] local_suspended: bool,
    #[case] remote_status: Value,
    #[case] want: Option<&str>,
) {
    let local = with_status(local_job(true), local_suspended, running());
    let remote = with_status(local_job(true), true, remote_status);
    let copied = status_to_copy(&local, &remote).unwrap();
    assert_eq!(
        copied.start_time.map(|t| t.0.to_string()),
        want.map(str::to_owned)
    );
}

// ---------- managed, adapters ----------

#[rstest]
#[case::multikueue(Some("kueue.x-k8s.io/multikueue"), None)]
#[case::unset(
    None,
    Some(r#"The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not """#)
)]
#[case::the_job_controller(
    Some("kubernetes.io/job-controller"),
    Some(r#"The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not "kubernetes.io/job-controller""#)
)]
fn only_jobs_handed_to_multikueue_are_dispatched(
    #[case] managed_by: Option<&str>,
    #[case] rejected: Option<&str>,
) {
    let mut job = local_job(true);
    job.spec.as_mut().unwrap().managed_by = managed_by.map(str::to_owned);
    let mut world = World::default();
    assert_eq!(
        BatchJob.check_managed(&world, &"ns/demo".to_owned()),
        Managed::Unknown
    );
    world.jobs.apply(job);
    let want = rejected.map_or(Managed::Yes, |m| Managed::No(m.to_owned()));
    assert_eq!(BatchJob.check_managed(&world, &"ns/demo".to_owned()), want);
}

fn owned_by(owner: Option<(&str, &str)>) -> Workload {
    let mut wl: Workload = serde_json::from_value(json!({
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": {"podSets": []},
    }))
    .unwrap();
    if let Some((api_version, kind)) = owner {
        wl.metadata.owner_references = Some(vec![
            serde_json::from_value(json!({"apiVersion": api_version, "kind": kind,
                                          "name": "demo", "uid": "u", "controller": true}))
            .unwrap(),
        ]);
    }
    wl
}

#[rstest]
#[case::job(Some(("batch/v1", "Job")), Ok("ns/demo"))]
#[case::no_owner(None, Err("No multikueue adapter found"))]
#[case::jobset(
    Some(("jobset.x-k8s.io/v1alpha2", "JobSet")),
    Err(r#"No multikueue adapter found for owner kind "jobset.x-k8s.io/v1alpha2, Kind=JobSet""#)
)]
#[case::core_group(
    Some(("v1", "Pod")),
    Err(r#"No multikueue adapter found for owner kind "/v1, Kind=Pod""#)
)]
#[case::another_job_version(
    Some(("batch/v2", "Job")),
    Err(r#"No multikueue adapter found for owner kind "batch/v2, Kind=Job""#)
)]
fn a_workload_finds_the_adapter_of_its_owner(
    #[case] owner: Option<(&str, &str)>,
    #[case] want: Result<&str, &str>,
) {
    let found = adapter_of(&owned_by(owner)).map(|(a, key)| {
        assert_eq!((a.api_version(), a.kind()), ("batch/v1", "Job"));
        key
    });
    assert_eq!(found.as_deref().map_err(String::as_str), want);
}

// ---------- against two API servers ----------

fn server() -> FakeApiServer {
    FakeApiServer::builder()
        .start_time("2026-01-01T00:00:00Z".parse().unwrap())
        .build()
        .unwrap()
}

/// A manager's job as a user creates it: handed to MultiKueue, suspended by Kueue.
fn user_job(name: &str) -> Job {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default",
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"suspend": true, "parallelism": 2, "managedBy": "kueue.x-k8s.io/multikueue",
                 "template": {"spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "c", "image": "busybox"}]}}},
    }))
    .unwrap()
}

/// The manager's side: its client, its writer, and its world's jobs read back from it.
struct Manager {
    client: Client,
    writer: Writer,
    world: World,
}

impl Manager {
    fn new(server: &FakeApiServer) -> Self {
        let (wall, at) = server.clock().anchor();
        Manager {
            client: server.client(),
            writer: Writer::new(server.client(), Clock::anchored(wall, at)),
            world: World::default(),
        }
    }

    fn jobs(&self) -> Api<Job> {
        Api::namespaced(self.client.clone(), "default")
    }

    /// The world's view of the job, as the watch would bring it.
    async fn refresh(&mut self, name: &str) -> Job {
        let job = self.jobs().get(name).await.unwrap();
        self.world.jobs.apply(job.clone());
        job
    }

    async fn sync(&mut self, worker: &Client, name: &str) -> Synced {
        self.sync_creating(worker, name, true).await
    }

    async fn sync_creating(&mut self, worker: &Client, name: &str, create: bool) -> Synced {
        self.refresh(name).await;
        let owner = format!("default/{name}");
        BatchJob
            .sync(
                &self.writer,
                worker,
                &self.world,
                SyncRequest {
                    owner: &owner,
                    workload: "wl",
                    origin: ORIGIN,
                    create,
                },
            )
            .await
            .unwrap()
    }
}

/// Writes a job's status on the worker, as its Job controller would.
async fn worker_status(worker: &Api<Job>, name: &str, suspend: bool, status: Value) -> Job {
    let mut job = worker.get(name).await.unwrap();
    if job.spec.as_ref().unwrap().suspend != Some(suspend) {
        job.spec.as_mut().unwrap().suspend = Some(suspend);
        job = worker
            .replace(name, &PostParams::default(), &job)
            .await
            .unwrap();
    }
    job.status = Some(serde_json::from_value::<JobStatus>(status).unwrap());
    worker
        .replace_status(name, &PostParams::default(), &job)
        .await
        .unwrap()
}

fn status_of(job: &Job) -> JobStatus {
    job.status.clone().unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn a_job_is_created_on_the_worker_and_its_status_copied_back() {
    let (manager_server, worker_server) = (server(), server());
    let mut manager = Manager::new(&manager_server);
    let worker = worker_server.client();
    let on_worker: Api<Job> = Api::namespaced(worker.clone(), "default");
    manager
        .jobs()
        .create(&PostParams::default(), &user_job("demo"))
        .await
        .unwrap();

    assert_eq!(manager.sync(&worker, "demo").await, Synced::Created);
    let remote = on_worker.get("demo").await.unwrap();
    assert_eq!(labels(&remote)["kueue.x-k8s.io/multikueue-origin"], ORIGIN);
    assert_eq!(
        labels(&remote)["kueue.x-k8s.io/prebuilt-workload-name"],
        "wl"
    );
    let spec = remote.spec.clone().unwrap();
    assert_eq!((spec.suspend, spec.managed_by), (Some(true), None));

    // The worker starts it while the manager's job still waits for its admission: deferred.
    let running = worker_status(&on_worker, "demo", false, running()).await;
    assert_eq!(manager.sync(&worker, "demo").await, Synced::Deferred);
    assert_eq!(
        status_of(&manager.refresh("demo").await),
        JobStatus::default()
    );

    // Admitted on the manager, the local job starts: the worker's status is copied.
    let mut local = manager.refresh("demo").await;
    local.spec.as_mut().unwrap().suspend = Some(false);
    manager
        .jobs()
        .replace("demo", &PostParams::default(), &local)
        .await
        .unwrap();
    assert_eq!(manager.sync(&worker, "demo").await, Synced::StatusCopied);
    assert_eq!(
        status_of(&manager.refresh("demo").await),
        status_of(&running)
    );
    assert_eq!(manager.sync(&worker, "demo").await, Synced::UpToDate);

    // It completes on the worker; the manager's job shows it.
    let done = worker_status(&on_worker, "demo", false, complete()).await;
    assert_eq!(manager.sync(&worker, "demo").await, Synced::StatusCopied);
    let local = manager.refresh("demo").await;
    assert_eq!(status_of(&local), status_of(&done));
    assert!(crate::jobs::finished(&local).is_some());

    // Our job is deleted from the worker.
    assert_eq!(
        BatchJob
            .delete_remote(&worker, &"default/demo".to_owned(), ORIGIN)
            .await
            .unwrap(),
        Deleted::Deleted
    );
    assert!(on_worker.get_opt("demo").await.unwrap().is_none());
    assert_eq!(
        BatchJob
            .delete_remote(&worker, &"default/demo".to_owned(), ORIGIN)
            .await
            .unwrap(),
        Deleted::Absent
    );
}

#[tokio::test(start_paused = true)]
async fn a_workers_own_job_of_the_same_name_is_never_touched() {
    let (manager_server, worker_server) = (server(), server());
    let mut manager = Manager::new(&manager_server);
    let worker = worker_server.client();
    let on_worker: Api<Job> = Api::namespaced(worker.clone(), "default");
    manager
        .jobs()
        .create(&PostParams::default(), &user_job("demo"))
        .await
        .unwrap();
    // The worker's users run a job of the same name, without our origin (or another origin's).
    for (name, origin) in [("demo", None), ("other", Some("another-manager"))] {
        let mut theirs = user_job(name);
        theirs.spec.as_mut().unwrap().managed_by = None;
        theirs.spec.as_mut().unwrap().suspend = Some(false);
        if let Some(origin) = origin {
            theirs.metadata.labels.as_mut().unwrap().insert(
                "kueue.x-k8s.io/multikueue-origin".to_owned(),
                origin.to_owned(),
            );
        }
        on_worker
            .create(&PostParams::default(), &theirs)
            .await
            .unwrap();
    }
    let theirs = worker_status(&on_worker, "demo", false, running()).await;

    assert_eq!(manager.sync(&worker, "demo").await, Synced::NotOurs);
    assert_eq!(
        status_of(&manager.refresh("demo").await),
        JobStatus::default(),
        "their status is not ours"
    );
    for name in ["demo", "other"] {
        assert_eq!(
            BatchJob
                .delete_remote(&worker, &format!("default/{name}"), ORIGIN)
                .await
                .unwrap(),
            Deleted::NotOurs
        );
        assert!(
            on_worker.get_opt(name).await.unwrap().is_some(),
            "{name} kept"
        );
    }
    assert_eq!(
        on_worker.get("demo").await.unwrap().resource_version(),
        theirs.resource_version(),
        "their job is untouched"
    );
}

/// A worker that did not admit the workload never gets its job: its status is only copied
/// back, and a job gone from it is reported, not made again.
#[tokio::test(start_paused = true)]
async fn a_job_is_created_only_where_asked() {
    let (manager_server, worker_server) = (server(), server());
    let mut manager = Manager::new(&manager_server);
    let worker = worker_server.client();
    let on_worker: Api<Job> = Api::namespaced(worker.clone(), "default");
    manager
        .jobs()
        .create(&PostParams::default(), &user_job("demo"))
        .await
        .unwrap();

    assert_eq!(
        manager.sync_creating(&worker, "demo", false).await,
        Synced::RemoteMissing
    );
    assert!(on_worker.get_opt("demo").await.unwrap().is_none());
    assert_eq!(
        manager.sync_creating(&worker, "demo", true).await,
        Synced::Created
    );
    assert!(on_worker.get_opt("demo").await.unwrap().is_some());
}
