//! What the MultiKueue tests share: embedded fake API servers on one virtual clock, a controller
//! running against one, the in-process [`Connector`] that takes the manager to its workers, and
//! the objects a MultiKueue set-up is made of.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use controller::admissionchecks::multikueue::connect::{Connector, WorkerAccess};
use fake_apiserver::{ChangeFeed, FakeApiServer};
use futures::future::BoxFuture;
use kube::Client;
use kube::api::{
    Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::config::Kubeconfig;
use serde_json::{Value, json};

pub const START: &str = "2026-01-01T00:00:00Z";
/// Kueue's own namespace: the manager's kubeconfig Secrets live there.
pub const NAMESPACE: &str = "kueue-system";
pub const ORIGIN: &str = "kueue.x-k8s.io/multikueue-origin";
pub const PREBUILT: &str = "kueue.x-k8s.io/prebuilt-workload-name";
/// A token and CA data that must never appear in a condition or an event.
pub const TOKEN: &str = "s3cr3t-t0ken-never-shown";
pub const CA_DATA: &str = "Q0EtREFUQS1ORVZFUi1TSE9XTg==";

/// A server with Kueue's CRDs whose clock starts at [`START`].
pub fn server() -> FakeApiServer {
    let mut builder = FakeApiServer::builder().start_time(START.parse().expect("time"));
    for (file, yaml) in api::CHECKED_IN_CRDS {
        builder = builder.crds_yaml(file, yaml);
    }
    builder.build().expect("server starts")
}

/// A controller's options, its clock the one of the `server` it runs against.
pub fn options(
    server: &FakeApiServer,
    config: api::config::Configuration,
    workers: WorkerAccess,
) -> controller::Options {
    let (wall, at) = server.clock().anchor();
    controller::Options {
        config,
        clock: controller::Clock::anchored(wall, at),
        metrics: Default::default(),
        workers,
    }
}

/// Runs the controller until the task is aborted; an error ends the test's controller loudly.
pub fn spawn_controller(
    client: Client,
    options: controller::Options,
) -> tokio::task::JoinHandle<()> {
    let run = controller::manager::run(client, options);
    tokio::spawn(async move {
        if let Err(e) = run.await {
            panic!("the controller stopped: {e}");
        }
    })
}

/// One cluster: a server, a client of it, and its controller, which stops when this is dropped.
pub struct Cluster {
    pub server: FakeApiServer,
    pub client: Client,
    /// Every change of the cluster's objects, as committed.
    pub feed: Mutex<ChangeFeed>,
    controller: tokio::task::JoinHandle<()>,
}

impl Cluster {
    pub fn start(config: api::config::Configuration, workers: WorkerAccess) -> Cluster {
        let server = server();
        let client = server.client();
        let feed = Mutex::new(server.observe());
        let controller = spawn_controller(client.clone(), options(&server, config, workers));
        Cluster {
            server,
            client,
            feed,
            controller,
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.controller.abort();
    }
}

/// The host a worker's kubeconfig names.
pub fn host_of(worker: &str) -> String {
    format!("{worker}.clusters.example")
}

/// A kubeconfig for the worker at `host`, with `extra` lines in its cluster.
pub fn kubeconfig_for(host: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: worker\n  cluster:\n    server: https://{host}:6443\n    certificate-authority-data: {CA_DATA}\n{extra}\
         users:\n- name: manager\n  user:\n    token: {TOKEN}\n\
         contexts:\n- name: worker\n  context:\n    cluster: worker\n    user: manager\ncurrent-context: worker\n"
    )
}

/// Resolves a kubeconfig's server host to a worker's in-process client, as the e2e harness does.
pub struct InProcess {
    by_host: BTreeMap<String, Client>,
}

impl InProcess {
    /// The manager's way to the `workers` (by name, each at [`host_of`] its name), with
    /// kubeconfig files allowed under `kubeconfig_dir`.
    pub fn access(
        workers: impl IntoIterator<Item = (String, Client)>,
        kubeconfig_dir: PathBuf,
    ) -> WorkerAccess {
        let by_host = workers
            .into_iter()
            .map(|(name, client)| (host_of(&name), client))
            .collect();
        WorkerAccess {
            connector: Arc::new(InProcess { by_host }),
            kubeconfig_dir,
        }
    }
}

impl Connector for InProcess {
    fn connect(&self, config: Kubeconfig) -> BoxFuture<'static, Result<Client, String>> {
        let server = config
            .current_context
            .as_ref()
            .and_then(|name| config.contexts.iter().find(|c| &c.name == name))
            .and_then(|c| c.context.as_ref())
            .and_then(|c| config.clusters.iter().find(|n| n.name == c.cluster))
            .and_then(|n| n.cluster.as_ref()?.server.clone())
            .unwrap_or_default();
        let host = server
            .split("://")
            .nth(1)
            .and_then(|rest| rest.split([':', '/']).next())
            .unwrap_or_default();
        let client = self
            .by_host
            .get(host)
            .cloned()
            .ok_or_else(|| "dial tcp: lookup failed: no such host".to_owned());
        Box::pin(async move { client })
    }
}

pub async fn namespace(client: &Client, name: &str) {
    create(
        client,
        "v1",
        "Namespace",
        json!({"metadata": {"name": name}}),
    )
    .await;
}

/// A Secret in Kueue's namespace holding `text` as its kubeconfig (applied: created or changed).
pub async fn secret(client: &Client, name: &str, text: &str) {
    let secret = json!({"metadata": {"name": name, "namespace": NAMESPACE},
                        "stringData": {"kubeconfig": text}});
    apply(client, "v1", "Secret", secret).await;
}

/// A MultiKueueCluster reaching its worker through the kubeconfig at `location`.
pub async fn multikueue_cluster(client: &Client, name: &str, location: &str, location_type: &str) {
    let cluster = json!({"metadata": {"name": name}, "spec": {"clusterSource": {"kubeConfig": {
        "location": location, "locationType": location_type}}}});
    create(
        client,
        "kueue.x-k8s.io/v1beta2",
        "MultiKueueCluster",
        cluster,
    )
    .await;
}

/// An AdmissionCheck `name` of MultiKueue with a MultiKueueConfig of the same name.
pub async fn multikueue_check(client: &Client, name: &str, clusters: &[&str]) {
    let config = json!({"metadata": {"name": name}, "spec": {"clusters": clusters}});
    create(client, "kueue.x-k8s.io/v1beta2", "MultiKueueConfig", config).await;
    admission_check(client, name, name).await;
}

/// An AdmissionCheck `name` of MultiKueue whose parameters are the MultiKueueConfig `config`.
pub async fn admission_check(client: &Client, name: &str, config: &str) {
    let check = json!({"metadata": {"name": name}, "spec": {
        "controllerName": "kueue.x-k8s.io/multikueue",
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": config}}});
    create(client, "kueue.x-k8s.io/v1beta2", "AdmissionCheck", check).await;
}

/// A ResourceFlavor `default`, a ClusterQueue `cq` with 4 CPUs and `checks`, and the LocalQueue
/// `local_queue` (namespace, name) on it if any.
pub async fn queues(client: &Client, checks: &[&str], local_queue: Option<(&str, &str)>) {
    create(
        client,
        "kueue.x-k8s.io/v1beta2",
        "ResourceFlavor",
        json!({"metadata": {"name": "default"}}),
    )
    .await;
    let checks: Vec<Value> = checks.iter().map(|c| json!({"name": c})).collect();
    create(
        client,
        "kueue.x-k8s.io/v1beta2",
        "ClusterQueue",
        json!({
        "metadata": {"name": "cq"},
        "spec": {"namespaceSelector": {}, "admissionChecksStrategy": {"admissionChecks": checks},
                 "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [{"name": "default",
                     "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}}),
    )
    .await;
    if let Some((namespace, name)) = local_queue {
        create(
            client,
            "kueue.x-k8s.io/v1beta2",
            "LocalQueue",
            json!({
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": "cq"}}),
        )
        .await;
    }
}

/// Creates `obj` as a `kind`; it must not exist yet.
pub async fn create(client: &Client, api_version: &str, kind: &str, mut obj: Value) {
    obj["apiVersion"] = api_version.into();
    obj["kind"] = kind.into();
    let ns = obj["metadata"]["namespace"].as_str().map(str::to_owned);
    dynamic(client, api_version, kind, ns.as_deref())
        .create(
            &PostParams::default(),
            &serde_json::from_value(obj).expect("an object"),
        )
        .await
        .unwrap_or_else(|e| panic!("create {kind}: {e}"));
}

/// Applies `obj` as a `kind` (server-side, forced): creates it or changes it.
pub async fn apply(client: &Client, api_version: &str, kind: &str, mut obj: Value) {
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
    let resource = ApiResource::from_gvk_with_plural(&gvk, &plural(kind));
    match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &resource),
        None => Api::all_with(client.clone(), &resource),
    }
}

/// The resource of `kind`: every kind these tests make takes an `s`.
fn plural(kind: &str) -> String {
    format!("{}s", kind.to_lowercase())
}
