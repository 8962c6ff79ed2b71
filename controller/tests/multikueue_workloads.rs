//! MultiKueue's workload controller as a user sees it: a manager and two workers, each an
//! embedded fake API server with its own controller, on one virtual clock. The manager reaches
//! the workers through kubeconfig Secrets that a test [`Connector`] resolves to each worker's
//! in-process client.
//!
//! Each test sets its workers up for the users' namespace ([`WorkerSetup`]); by default `w1` has
//! the LocalQueue `queue` with room and `w2` has none, so its copy waits there and `w1` admits
//! first. When both can admit, both do in the same second and the first by name wins.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use api::kueue::Workload;
use controller::admissionchecks::multikueue::connect::{Connector, WorkerAccess};
use fake_apiserver::FakeApiServer;
use futures::future::BoxFuture;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::config::Kubeconfig;
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

const START: &str = "2026-01-01T00:00:00Z";
const NAMESPACE: &str = "kueue-system";
const ORIGIN: &str = "kueue.x-k8s.io/multikueue-origin";
const PREBUILT: &str = "kueue.x-k8s.io/prebuilt-workload-name";
/// The users' namespace.
const NS: &str = "team";
/// Virtual time the controllers get to do what a step waits for.
const PATIENCE: Duration = Duration::from_secs(30);

/// Resolves a kubeconfig's server host (`<worker>.clusters.example`) to that worker's client.
struct InProcess {
    by_host: BTreeMap<String, Client>,
}

impl Connector for InProcess {
    fn connect(&self, config: Kubeconfig) -> BoxFuture<'static, Result<Client, String>> {
        let server = config
            .clusters
            .first()
            .and_then(|c| c.cluster.as_ref()?.server.clone())
            .unwrap_or_default();
        let host = server
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split([':', '/']).next())
            .unwrap_or_default()
            .to_owned();
        let client = self
            .by_host
            .get(&host)
            .cloned()
            .ok_or_else(|| "dial tcp: lookup failed: no such host".to_owned());
        Box::pin(async move { client })
    }
}

fn kubeconfig_for(worker: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: worker\n  cluster:\n    \
         server: https://{worker}.clusters.example:6443\n    \
         certificate-authority-data: Q0E=\nusers:\n- name: manager\n  user:\n    token: t\n\
         contexts:\n- name: worker\n  context:\n    cluster: worker\n    user: manager\n\
         current-context: worker\n"
    )
}

fn server(start: Timestamp) -> FakeApiServer {
    let mut builder = FakeApiServer::builder().start_time(start);
    for (file, yaml) in api::CHECKED_IN_CRDS {
        builder = builder.crds_yaml(file, yaml);
    }
    builder.build().expect("server starts")
}

/// One cluster: its server, a client, and its controller.
struct Cluster {
    _server: FakeApiServer,
    client: Client,
    /// Every change of the cluster's objects, as committed.
    feed: std::sync::Mutex<fake_apiserver::ChangeFeed>,
    controller: tokio::task::JoinHandle<()>,
}

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

impl Drop for Cluster {
    fn drop(&mut self) {
        self.controller.abort();
    }
}

fn start(server: FakeApiServer, options: controller::Options) -> Cluster {
    let client = server.client();
    let feed = std::sync::Mutex::new(server.observe());
    let run = controller::manager::run(client.clone(), options);
    let controller = tokio::spawn(async move {
        if let Err(e) = run.await {
            panic!("a controller stopped: {e}");
        }
    });
    Cluster {
        _server: server,
        client,
        feed,
        controller,
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
        let start_at: Timestamp = START.parse().expect("time");
        let options =
            |config: api::config::Configuration, access: WorkerAccess| controller::Options {
                config,
                clock: controller::Clock::anchored(start_at, tokio::time::Instant::now()),
                metrics: Default::default(),
                workers: access,
            };
        let mut workers = BTreeMap::new();
        let mut faults = BTreeMap::new();
        let mut by_host = BTreeMap::new();
        for (name, setup) in workers_ {
            let s = server(start_at);
            by_host.insert(format!("{name}.clusters.example"), s.client());
            faults.insert(name.to_string(), s.faults().clone());
            let worker = start(s, options(Default::default(), Default::default()));
            if *setup != NoNamespace {
                create(
                    &worker.client,
                    "v1",
                    "Namespace",
                    json!({"metadata": {"name": NS}}),
                )
                .await;
            }
            queues(&worker.client, &[], *setup == Ready).await;
            workers.insert(name.to_string(), worker);
        }
        let access = WorkerAccess {
            connector: Arc::new(InProcess { by_host }),
            kubeconfig_dir: std::env::temp_dir(),
        };
        let manager = start(server(start_at), options(config, access));
        let m = &manager.client;
        create(
            m,
            "v1",
            "Namespace",
            json!({"metadata": {"name": NAMESPACE}}),
        )
        .await;
        for name in ["w1", "w2"] {
            create(
                m,
                "v1",
                "Secret",
                json!({
                "metadata": {"name": name, "namespace": NAMESPACE},
                "stringData": {"kubeconfig": kubeconfig_for(name)}}),
            )
            .await;
            create(m, "kueue.x-k8s.io/v1beta2", "MultiKueueCluster", json!({
                "metadata": {"name": name},
                "spec": {"clusterSource": {"kubeConfig": {"location": name, "locationType": "Secret"}}}}))
            .await;
        }
        create(
            m,
            "kueue.x-k8s.io/v1beta2",
            "MultiKueueConfig",
            json!({"metadata": {"name": "mk"}, "spec": {"clusters": ["w1", "w2"]}}),
        )
        .await;
        create(m, "kueue.x-k8s.io/v1beta2", "AdmissionCheck", json!({
            "metadata": {"name": "mk"},
            "spec": {"controllerName": "kueue.x-k8s.io/multikueue",
                     "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "mk"}}}))
        .await;
        create(m, "v1", "Namespace", json!({"metadata": {"name": NS}})).await;
        queues(m, &["mk"], true).await;
        tokio::time::sleep(PATIENCE).await;
        World {
            manager,
            workers,
            faults,
        }
    }

    fn worker(&self, name: &str) -> &Client {
        &self.workers.get(name).expect("a worker").client
    }

    async fn workload(&self, client: &Client) -> Option<Workload> {
        let api: Api<Workload> = Api::namespaced(client.clone(), NS);
        let list = api.list(&Default::default()).await.expect("workloads");
        list.items.into_iter().next()
    }

    async fn job(&self, client: &Client) -> Option<Job> {
        let api: Api<Job> = Api::namespaced(client.clone(), NS);
        api.get_opt("a").await.expect("job")
    }

    /// The manager's Job `a`, handed to MultiKueue.
    async fn submit(&self) {
        create(
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

/// A ResourceFlavor, a ClusterQueue `cq` with 4 CPUs and `checks`, and (if `local_queue`) the
/// LocalQueue `queue` in the users' namespace.
async fn queues(client: &Client, checks: &[&str], local_queue: bool) {
    create(
        client,
        "kueue.x-k8s.io/v1beta2",
        "ResourceFlavor",
        json!({"metadata": {"name": "default"}}),
    )
    .await;
    create(
        client,
        "kueue.x-k8s.io/v1beta2",
        "ClusterQueue",
        json!({
        "metadata": {"name": "cq"},
        "spec": {"namespaceSelector": {}, "admissionChecksStrategy": {"admissionChecks": checks.iter().map(|c| json!({"name": c})).collect::<Vec<_>>()},
                 "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default",
                     "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}}),
    )
    .await;
    if local_queue {
        create(
            client,
            "kueue.x-k8s.io/v1beta2",
            "LocalQueue",
            json!({
            "metadata": {"name": "queue", "namespace": NS},
            "spec": {"clusterQueue": "cq"}}),
        )
        .await;
    }
}

async fn create(client: &Client, api_version: &str, kind: &str, mut obj: Value) {
    obj["apiVersion"] = api_version.into();
    obj["kind"] = kind.into();
    let ns = obj["metadata"]["namespace"].as_str().map(str::to_owned);
    let name = obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    dynamic(client, api_version, kind, ns.as_deref())
        .patch(
            &name,
            &PatchParams::apply("test").force(),
            &Patch::Apply(&obj),
        )
        .await
        .unwrap_or_else(|e| panic!("apply {kind}: {e}"));
}

fn dynamic(client: &Client, api_version: &str, kind: &str, ns: Option<&str>) -> Api<DynamicObject> {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = GroupVersionKind::gvk(group, version, kind);
    let resource = kube::api::ApiResource::from_gvk_with_plural(&gvk, &plural(kind));
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

fn plural(kind: &str) -> String {
    match kind {
        "ClusterQueue" => "clusterqueues".into(),
        "LocalQueue" => "localqueues".into(),
        "ResourceFlavor" => "resourceflavors".into(),
        "AdmissionCheck" => "admissionchecks".into(),
        "MultiKueueConfig" => "multikueueconfigs".into(),
        "MultiKueueCluster" => "multikueueclusters".into(),
        "Workload" => "workloads".into(),
        other => format!("{}s", other.to_lowercase()),
    }
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

    let wl = world
        .workload(&world.manager.client)
        .await
        .expect("the manager's workload");
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
    assert!(
        world.workload(world.worker("w2")).await.is_none(),
        "w2's copy removed"
    );
    assert!(
        world.job(world.worker("w2")).await.is_none(),
        "no job on w2"
    );

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

    let wl = world
        .workload(&world.manager.client)
        .await
        .expect("the manager's workload");
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
    assert!(
        world.workload(world.worker("w1")).await.is_none(),
        "w1's copy removed"
    );
    assert!(
        world.job(world.worker("w1")).await.is_none(),
        "w1's job removed"
    );
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
    assert!(
        world.workload(world.worker("w1")).await.is_none(),
        "w1's copy removed"
    );
    assert!(
        world.job(world.worker("w1")).await.is_none(),
        "w1's job removed"
    );
}

#[tokio::test(start_paused = true)]
async fn the_garbage_collector_removes_what_has_no_workload_on_the_manager() {
    let world = World::new(Default::default()).await;
    let w1 = world.worker("w1");
    // Left behind by an earlier life of the manager: a copy and its job, and a job alone.
    create(
        w1,
        "kueue.x-k8s.io/v1beta2",
        "Workload",
        json!({
        "metadata": {"name": "orphan", "namespace": NS, "labels": {ORIGIN: "multikueue"}},
        "spec": {"queueName": "nowhere", "podSets": [{"name": "main", "count": 1, "template": {
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}}),
    )
    .await;
    for (job, wl) in [("a", "orphan"), ("b", "gone")] {
        create(
            w1,
            "batch/v1",
            "Job",
            json!({
            "metadata": {"name": job, "namespace": NS,
                         "labels": {ORIGIN: "multikueue", PREBUILT: wl}},
            "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox"}]}}}}),
        )
        .await;
    }
    // A worker's own job of the same kind is never touched.
    create(
        w1,
        "batch/v1",
        "Job",
        json!({
        "metadata": {"name": "mine", "namespace": NS, "labels": {PREBUILT: "gone"}},
        "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
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
    create(
        w1,
        "kueue.x-k8s.io/v1beta2",
        "Workload",
        json!({
        "metadata": {"name": "orphan", "namespace": NS, "labels": {ORIGIN: "multikueue"}},
        "spec": {"queueName": "nowhere", "podSets": [{"name": "main", "count": 1, "template": {
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}]}}),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(600)).await;
    assert!(world.workload(w1).await.is_some());
}

/// The manager's workload as a user follows it: its check and the cluster it runs on.
async fn placement(world: &World) -> ((String, String), Option<String>) {
    let wl = world
        .workload(&world.manager.client)
        .await
        .expect("the manager's workload");
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
    let world = World::with_queues(Default::default(), &[("w1", Ready), ("w2", Ready)]).await;
    world.submit().await;
    assert_eq!(placement(&world).await, running_on("w1"));

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
    let world = World::with_queues(Default::default(), &[("w1", Ready), ("w2", Ready)]).await;
    world.submit().await;
    assert_eq!(placement(&world).await, running_on("w1"));

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
    assert!(
        world.workload(world.worker("w1")).await.is_none(),
        "w1's copy removed"
    );
    assert!(
        world.job(world.worker("w1")).await.is_none(),
        "w1's job removed"
    );
}

#[tokio::test(start_paused = true)]
async fn an_eviction_on_the_running_worker_dispatches_the_workload_again() {
    let world = World::with_queues(Default::default(), &[("w1", Ready), ("w2", Ready)]).await;
    world.submit().await;
    assert_eq!(placement(&world).await, running_on("w1"));
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

    let wl = world
        .workload(&world.manager.client)
        .await
        .expect("the manager's workload");
    let api: Api<Workload> = Api::namespaced(world.manager.client.clone(), NS);
    api.patch(
        &wl.name_any(),
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"active": false}})),
    )
    .await
    .expect("deactivated");
    tokio::time::sleep(PATIENCE).await;

    let wl = world
        .workload(&world.manager.client)
        .await
        .expect("the manager's workload");
    assert_eq!(
        condition(&wl, "QuotaReserved").map(|c| c.0),
        Some("False".into())
    );
    assert!(
        world.workload(world.worker("w1")).await.is_none(),
        "w1's copy removed"
    );
    assert!(
        world.job(world.worker("w1")).await.is_none(),
        "w1's job removed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_worker_without_the_namespace_does_not_hold_up_the_others() {
    let world = World::with_queues(Default::default(), &[("w1", NoNamespace), ("w2", Ready)]).await;
    world.submit().await;
    assert_eq!(placement(&world).await, running_on("w2"));
    assert!(world.job(world.worker("w2")).await.is_some());
}
