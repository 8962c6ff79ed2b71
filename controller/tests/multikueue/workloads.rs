//! MultiKueue's workload controller as a user sees it: a manager and two workers, each an
//! embedded fake API server with its own controller, on one virtual clock. The manager reaches
//! the workers through kubeconfig Secrets that [`InProcess`] resolves to each worker's in-process
//! client.
//!
//! Each test sets its workers up for the users' namespace ([`WorkerSetup`]); by default `w1` has
//! the LocalQueue `queue` with room and `w2` has none, so its copy waits there and `w1` admits
//! first. When both can admit, both do in the same second and the first by name wins.

use std::collections::BTreeMap;
use std::time::Duration;

use api::kueue::Workload;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::common::{
    Cluster, InProcess, NAMESPACE, ORIGIN, PREBUILT, START, apply, host_of, kubeconfig_for,
    multikueue_check, multikueue_cluster, namespace, queues, secret,
};

/// The users' namespace.
const NS: &str = "team";
/// Virtual time the controllers get to do what a step waits for.
const PATIENCE: Duration = Duration::from_secs(30);

impl Cluster {
    /// The MultiKueue check's (state, message) as the manager's workload went through them.
    fn check_history(&self) -> Vec<(String, String)> {
        let mut feed = self.feed.lock().expect("the feed");
        let mut out: Vec<(String, String)> = vec![];
        for o in feed.drain() {
            let Some(checks) = o.object["status"]["admissionChecks"].as_array() else {
                continue;
            };
            let Some(c) = checks.iter().find(|c| c["name"] == "mk") else {
                continue;
            };
            let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            let now = (s(&c["state"]), s(&c["message"]));
            if out.last() != Some(&now) {
                out.push(now);
            }
        }
        out
    }

    /// The changes of Workloads and Jobs since the last call: (kind, change, name).
    fn changes(&self) -> Vec<(String, String, String)> {
        let mut feed = self.feed.lock().expect("the feed");
        feed.drain()
            .into_iter()
            .filter(|o| o.object["kind"] == "Workload" || o.object["kind"] == "Job")
            .map(|o| {
                let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
                let change = format!("{:?}", o.change);
                (
                    s(&o.object["kind"]),
                    change,
                    s(&o.object["metadata"]["name"]),
                )
            })
            .collect()
    }
}

struct World {
    manager: Cluster,
    workers: BTreeMap<String, Cluster>,
    /// Each worker's fault controls.
    faults: BTreeMap<String, fake_apiserver::Faults>,
}

impl World {
    /// `w1` with its LocalQueue, `w2` without: `w1` admits first.
    async fn new(config: api::config::Configuration) -> World {
        World::with_queues(config, &[("w1", Ready), ("w2", NoQueue)]).await
    }

    /// Workers by name, each with or without the LocalQueue `queue`.
    async fn with_queues(
        config: api::config::Configuration,
        workers_: &[(&str, WorkerSetup)],
    ) -> World {
        let mut workers = BTreeMap::new();
        let mut faults = BTreeMap::new();
        for (name, setup) in workers_ {
            let worker = Cluster::start(Default::default(), Default::default());
            faults.insert(name.to_string(), worker.server.faults().clone());
            if *setup != NoNamespace {
                namespace(&worker.client, NS).await;
            }
            let local_queue = (*setup == Ready).then_some((NS, "queue"));
            queues(&worker.client, &[], local_queue).await;
            workers.insert(name.to_string(), worker);
        }
        let access = InProcess::access(
            workers
                .iter()
                .map(|(name, w)| (name.clone(), w.client.clone())),
            std::env::temp_dir(),
        );
        let manager = Cluster::start(config, access);
        let m = &manager.client;
        namespace(m, NAMESPACE).await;
        for name in ["w1", "w2"] {
            secret(m, name, &kubeconfig_for(&host_of(name), "")).await;
            multikueue_cluster(m, name, name, "Secret").await;
        }
        multikueue_check(m, "mk", &["w1", "w2"]).await;
        namespace(m, NS).await;
        queues(m, &["mk"], Some((NS, "queue"))).await;
        tokio::time::sleep(PATIENCE).await;
        World {
            manager,
            workers,
            faults,
        }
    }

    /// Both workers ready, the job submitted and running on `w1`.
    async fn running_on_w1_with_w2_ready() -> World {
        let world = World::with_queues(Default::default(), &[("w1", Ready), ("w2", Ready)]).await;
        world.submit().await;
        assert_eq!(placement(&world).await, running_on("w1"));
        world
    }

    fn worker(&self, name: &str) -> &Client {
        &self.workers.get(name).expect("a worker").client
    }

    async fn workload(&self, client: &Client) -> Option<Workload> {
        let api: Api<Workload> = Api::namespaced(client.clone(), NS);
        let list = api.list(&Default::default()).await.expect("workloads");
        list.items.into_iter().next()
    }

    async fn managers_workload(&self) -> Workload {
        self.workload(&self.manager.client)
            .await
            .expect("the manager's workload")
    }

    /// Neither a copy nor a job is left on the worker.
    async fn nothing_left_on(&self, worker: &str) {
        let client = self.worker(worker);
        assert!(
            self.workload(client).await.is_none(),
            "{worker}'s copy removed"
        );
        assert!(self.job(client).await.is_none(), "{worker}'s job removed");
    }

    async fn job(&self, client: &Client) -> Option<Job> {
        let api: Api<Job> = Api::namespaced(client.clone(), NS);
        api.get_opt("a").await.expect("job")
    }

    /// The manager's Job `a`, handed to MultiKueue.
    async fn submit(&self) {
        apply(
            &self.manager.client,
            "batch/v1",
            "Job",
            json!({
            "metadata": {"name": "a", "namespace": NS,
                         "labels": {"kueue.x-k8s.io/queue-name": "queue"}},
            "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox",
                                "resources": {"requests": {"cpu": "1"}}}]}}}}),
        )
        .await;
        tokio::time::sleep(PATIENCE).await;
    }
}

/// How a worker is set up for the users' namespace.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum WorkerSetup {
    /// The namespace and the LocalQueue `queue`, with room.
    Ready,
    /// The namespace only: copies wait there.
    NoQueue,
    /// Not even the namespace: copies cannot be created.
    NoNamespace,
}
use WorkerSetup::{NoNamespace, NoQueue, Ready};

/// A copy left on a worker with no workload on the manager.
async fn orphan_copy(client: &Client) {
    apply(
        client,
        "kueue.x-k8s.io/v1beta2",
        "Workload",
        json!({
        "metadata": {"name": "orphan", "namespace": NS, "labels": {ORIGIN: "multikueue"}},
        "spec": {"queueName": "nowhere", "podSets": [{"name": "main", "count": 1, "template": {
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}}),
    )
    .await;
}

/// A suspended Job `name` on a worker with `labels`.
async fn suspended_job(client: &Client, name: &str, labels: Value) {
    apply(
        client,
        "batch/v1",
        "Job",
        json!({
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
}

/// The MultiKueue check of a manager workload: state, message.
fn check_of(wl: &Workload) -> (String, String) {
    let c = wl
        .status
        .as_ref()
        .and_then(|s| s.admission_checks.iter().find(|c| c.name == "mk"))
        .expect("the check");
    (c.state.to_string(), c.message.clone())
}

fn condition(wl: &Workload, type_: &str) -> Option<(String, String, String)> {
    wl.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

#[tokio::test(start_paused = true)]
async fn the_first_worker_to_admit_runs_the_job_and_its_completion_comes_back() {
    let world = World::new(Default::default()).await;
    world.submit().await;
    // The job was created once, on w1 only; w2's copy came and went.
    let jobs_created = |worker: &str| {
        world.workers[worker]
            .changes()
            .into_iter()
            .filter(|(kind, change, _)| kind == "Job" && change == "Added")
            .count()
    };
    assert_eq!((jobs_created("w1"), jobs_created("w2")), (1, 0));

    let wl = world.managers_workload().await;
    assert_eq!(
        check_of(&wl),
        ("Ready".into(), "The workload was admitted on \"w1\"".into())
    );
    let status = wl.status.clone().expect("a status");
    assert_eq!(status.cluster_name.as_deref(), Some("w1"));
    assert!(status.nominated_cluster_names.is_empty());
    assert_eq!(condition(&wl, "Admitted").map(|c| c.0), Some("True".into()));

    // The winner has the copy and the job; the other copy is gone.
    let copy = world.workload(world.worker("w1")).await.expect("w1's copy");
    assert_eq!(copy.name_any(), wl.name_any());
    assert_eq!(copy.spec, wl.spec);
    assert_eq!(
        copy.labels().get(ORIGIN).map(String::as_str),
        Some("multikueue")
    );
    let job = world.job(world.worker("w1")).await.expect("the job on w1");
    assert_eq!(job.labels().get(PREBUILT), Some(&wl.name_any()));
    assert_eq!(
        job.labels().get(ORIGIN).map(String::as_str),
        Some("multikueue")
    );
    assert_eq!(job.spec.as_ref().and_then(|s| s.managed_by.clone()), None);
    world.nothing_left_on("w2").await;

    // The job completes on w1: the manager's job gets its status, the manager's workload
    // finishes as w1's did, and w1's objects go.
    let jobs: Api<Job> = Api::namespaced(world.worker("w1").clone(), NS);
    let mut done = jobs.get("a").await.expect("the job");
    done.status = Some(
        serde_json::from_value(json!({
            "succeeded": 1,
            "startTime": START, "completionTime": START,
            "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": START},
                {"type": "Complete", "status": "True", "message": "Reached expected number of succeeded pods", "lastTransitionTime": START}]}))
        .expect("a status"),
    );
    jobs.replace_status("a", &Default::default(), &done)
        .await
        .expect("completed");
    tokio::time::sleep(PATIENCE).await;

    let wl = world.managers_workload().await;
    assert_eq!(
        condition(&wl, "Finished"),
        Some((
            "True".into(),
            "Succeeded".into(),
            "Reached expected number of succeeded pods".into()
        ))
    );
    let local = world
        .job(&world.manager.client)
        .await
        .expect("the manager's job");
    let complete = local
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .any(|c| c.type_ == "Complete" && c.status == "True");
    assert!(complete, "the manager's job shows the completion");
    world.nothing_left_on("w1").await;
}

#[tokio::test(start_paused = true)]
async fn deleting_the_managers_job_removes_everything_on_the_workers() {
    let world = World::new(Default::default()).await;
    world.submit().await;
    assert!(
        world.job(world.worker("w1")).await.is_some(),
        "running on w1"
    );

    let jobs: Api<Job> = Api::namespaced(world.manager.client.clone(), NS);
    jobs.delete("a", &DeleteParams::background())
        .await
        .expect("deleted");
    tokio::time::sleep(PATIENCE).await;

    assert!(world.workload(&world.manager.client).await.is_none());
    world.nothing_left_on("w1").await;
}

#[tokio::test(start_paused = true)]
async fn the_garbage_collector_removes_what_has_no_workload_on_the_manager() {
    let world = World::new(Default::default()).await;
    let w1 = world.worker("w1");
    // Left behind by an earlier life of the manager: a copy and its job, and a job alone.
    orphan_copy(w1).await;
    for (job, wl) in [("a", "orphan"), ("b", "gone")] {
        suspended_job(w1, job, json!({ORIGIN: "multikueue", PREBUILT: wl})).await;
    }
    // A worker's own job of the same kind is never touched.
    suspended_job(w1, "mine", json!({PREBUILT: "gone"})).await;
    let jobs: Api<Job> = Api::namespaced(w1.clone(), NS);
    let names = |list: Vec<Job>| list.iter().map(|j| j.name_any()).collect::<Vec<_>>();

    // The default interval is a minute.
    tokio::time::sleep(Duration::from_secs(61)).await;
    assert!(
        world.workload(w1).await.is_none(),
        "the orphan copy is collected"
    );
    let left = names(jobs.list(&Default::default()).await.expect("jobs").items);
    assert_eq!(left, vec!["mine".to_owned()]);
}

#[tokio::test(start_paused = true)]
async fn with_collection_disabled_orphans_stay() {
    let mut config = api::config::Configuration::default();
    config.multi_kueue.gc_interval = api::config::GoDuration(Duration::ZERO);
    let world = World::new(config).await;
    let w1 = world.worker("w1");
    orphan_copy(w1).await;
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(world.workload(w1).await.is_some());
}

/// The manager's workload as a user follows it: its check and the cluster it runs on.
async fn placement(world: &World) -> ((String, String), Option<String>) {
    let wl = world.managers_workload().await;
    let cluster = wl.status.as_ref().and_then(|s| s.cluster_name.clone());
    (check_of(&wl), cluster)
}

fn running_on(cluster: &str) -> ((String, String), Option<String>) {
    (
        (
            "Ready".into(),
            format!("The workload was admitted on \"{cluster}\""),
        ),
        Some(cluster.into()),
    )
}

#[tokio::test(start_paused = true)]
async fn a_loss_shorter_than_the_timeout_does_not_evict() {
    let world = World::running_on_w1_with_w2_ready().await;

    // Unreachable for 10 of the 15 minutes, then back.
    world.faults["w1"].partition(Duration::from_secs(600));
    tokio::time::sleep(Duration::from_secs(14 * 60)).await;
    assert_eq!(placement(&world).await, running_on("w1"));
    tokio::time::sleep(Duration::from_secs(10 * 60)).await;
    assert_eq!(placement(&world).await, running_on("w1"));
    assert!(world.job(world.worker("w1")).await.is_some());
    assert!(world.workload(world.worker("w2")).await.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_loss_longer_than_the_timeout_moves_the_workload_and_the_lost_copy_goes_on_return() {
    let world = World::running_on_w1_with_w2_ready().await;

    world.faults["w1"].partition(Duration::from_secs(3600));
    tokio::time::sleep(Duration::from_secs(14 * 60)).await;
    assert_eq!(placement(&world).await, running_on("w1"), "not yet");
    world.manager.check_history();
    tokio::time::sleep(Duration::from_secs(10 * 60)).await;
    assert_eq!(placement(&world).await, running_on("w2"));
    assert_eq!(
        world.manager.check_history(),
        [
            ("Retry", "Admitting remote lost, Previously: \"Ready\""),
            (
                "Pending",
                "Reset to Pending after eviction. Previously: Retry"
            ),
            ("Ready", "The workload was admitted on \"w2\""),
        ]
        .map(|(s, m)| (s.to_owned(), m.to_owned()))
    );
    assert!(world.job(world.worker("w2")).await.is_some());

    // w1 comes back with its old copy and job: both go, the workload stays on w2.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(!world.faults["w1"].is_partitioned());
    assert_eq!(placement(&world).await, running_on("w2"));
    world.nothing_left_on("w1").await;
}

#[tokio::test(start_paused = true)]
async fn an_eviction_on_the_running_worker_dispatches_the_workload_again() {
    let world = World::running_on_w1_with_w2_ready().await;
    world.manager.check_history();

    // w1's admins deactivate its copy: w1's Kueue evicts it.
    let copies: Api<Workload> = Api::namespaced(world.worker("w1").clone(), NS);
    let copy = world.workload(world.worker("w1")).await.expect("w1's copy");
    copies
        .patch(
            &copy.name_any(),
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"active": false}})),
        )
        .await
        .expect("deactivated");
    tokio::time::sleep(Duration::from_secs(5 * 60)).await;

    let history = world.manager.check_history();
    assert_eq!(
        history.first().cloned(),
        Some((
            "Retry".to_owned(),
            "Workload evicted on worker cluster: \"w1\", resetting for re-admission. Previously: \"Ready\""
                .to_owned()
        )),
        "{history:?}"
    );
    let (check, cluster) = placement(&world).await;
    assert_eq!(check.0, "Ready", "admitted again: {history:?}");
    let cluster = cluster.expect("a cluster");
    assert!(world.job(world.worker(&cluster)).await.is_some());
    let other = if cluster == "w1" { "w2" } else { "w1" };
    assert!(world.job(world.worker(other)).await.is_none());
}

#[tokio::test(start_paused = true)]
async fn deactivating_the_managers_workload_stops_the_job_on_the_worker() {
    let world = World::new(Default::default()).await;
    world.submit().await;
    assert_eq!(placement(&world).await, running_on("w1"));

    let wl = world.managers_workload().await;
    let api: Api<Workload> = Api::namespaced(world.manager.client.clone(), NS);
    api.patch(
        &wl.name_any(),
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"active": false}})),
    )
    .await
    .expect("deactivated");
    tokio::time::sleep(PATIENCE).await;

    let wl = world.managers_workload().await;
    assert_eq!(
        condition(&wl, "QuotaReserved").map(|c| c.0),
        Some("False".into())
    );
    world.nothing_left_on("w1").await;
}

#[tokio::test(start_paused = true)]
async fn a_worker_without_the_namespace_does_not_hold_up_the_others() {
    let world = World::with_queues(Default::default(), &[("w1", NoNamespace), ("w2", Ready)]).await;
    world.submit().await;
    assert_eq!(placement(&world).await, running_on("w2"));
    assert!(world.job(world.worker("w2")).await.is_some());
}
