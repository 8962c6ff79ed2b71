//! The MultiKueue harness: worker clusters in a `TestEnv`, the kubeconfig Secrets the manager
//! reaches them by, the in-process network behind those kubeconfigs (refused, hanging and slow
//! links), and scenario steps that address a cluster by name.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use controller::admissionchecks::multikueue::connect::{Connector, WorkerAccess};
use e2e::harness::{ControllerComponent, Cut, JobRunner};
use e2e::scenario::{Registry, parse, run};
use e2e::{Component, ComponentContext, EnvError, TestEnv};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, PostParams};
use kube::config::Kubeconfig;

fn controller() -> Arc<dyn Component> {
    Arc::new(ControllerComponent::new(Default::default()))
}

async fn two_workers() -> TestEnv {
    TestEnv::builder()
        .component(controller())
        .worker("worker-1", [controller(), job_runner()])
        .worker("worker-2", [controller(), job_runner()])
        .start()
        .await
        .expect("the environment starts")
}

fn job_runner() -> Arc<dyn Component> {
    Arc::new(JobRunner::new(Duration::from_secs(60)))
}

/// The kubeconfig the manager's Secret for `worker` holds.
async fn kubeconfig_of(env: &TestEnv, worker: &str) -> Kubeconfig {
    let secrets: Api<Secret> = Api::namespaced(env.client(), env.secrets_namespace());
    let secret = secrets
        .get(worker)
        .await
        .expect("the worker's Secret exists");
    let data = secret.data.expect("the Secret has data");
    let text = String::from_utf8(data["kubeconfig"].0.clone()).expect("the kubeconfig is text");
    Kubeconfig::from_yaml(&text).expect("kube reads the kubeconfig")
}

fn config_map(name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm
}

async fn create(client: kube::Client, name: &str) -> Result<ConfigMap, kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &config_map(name)).await
}

async fn exists(client: kube::Client, name: &str) -> bool {
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.get_opt(name)
        .await
        .expect("reading a ConfigMap")
        .is_some()
}

/// A client of the worker as the manager reaches it: its kubeconfig, through the network.
async fn through_network(env: &TestEnv, worker: &str) -> kube::Client {
    env.network()
        .connect(kubeconfig_of(env, worker).await)
        .await
        .expect("the kubeconfig resolves")
}

#[tokio::test(start_paused = true)]
async fn each_worker_has_a_secret_whose_kubeconfig_reaches_that_worker() {
    let env = two_workers().await;
    assert_eq!(env.secrets_namespace(), "kueue-system");
    for (worker, other) in [("worker-1", "worker-2"), ("worker-2", "worker-1")] {
        let kubeconfig = kubeconfig_of(&env, worker).await;
        let server = kubeconfig.clusters[0]
            .cluster
            .as_ref()
            .and_then(|c| c.server.clone());
        assert_eq!(server, Some(format!("https://{worker}.tollgate.invalid")));
        // kube builds a whole client configuration from it, CA and token included.
        let config = kube::Config::from_custom_kubeconfig(kubeconfig.clone(), &Default::default())
            .await
            .expect("kube accepts the kubeconfig");
        assert!(config.root_cert.is_some_and(|c| !c.is_empty()));

        let client = env
            .network()
            .connect(kubeconfig)
            .await
            .expect("the kubeconfig resolves");
        create(client, &format!("from-manager-to-{worker}"))
            .await
            .expect("the manager writes on the worker");
        let name = format!("from-manager-to-{worker}");
        assert!(exists(env.worker_client(worker).expect("a worker"), &name).await);
        assert!(!exists(env.worker_client(other).expect("a worker"), &name).await);
        assert!(!exists(env.client(), &name).await);
    }
}

#[tokio::test(start_paused = true)]
async fn a_host_that_names_no_worker_is_refused() {
    let env = two_workers().await;
    let mut kubeconfig = kubeconfig_of(&env, "worker-1").await;
    if let Some(cluster) = kubeconfig.clusters[0].cluster.as_mut() {
        cluster.server = Some("https://worker-9.tollgate.invalid".into());
    }
    // As with kube over the network, the client is made; its requests fail.
    let client = env
        .network()
        .connect(kubeconfig)
        .await
        .expect("a client is made");
    let error = create(client, "lost").await.expect_err("nothing answers");
    assert!(error.to_string().contains("connection refused"), "{error}");
}

#[tokio::test(start_paused = true)]
async fn a_refused_link_fails_the_manager_until_healed_while_the_worker_runs_on() {
    let env = two_workers().await;
    let client = through_network(&env, "worker-1").await;
    let link = env.link("worker-1").expect("a link");

    link.partition(Cut::Refuse, None);
    let error = create(client.clone(), "during").await.expect_err("refused");
    assert!(error.to_string().contains("connection refused"), "{error}");
    // Inside the worker nothing changed.
    create(env.worker_client("worker-1").expect("a worker"), "inside")
        .await
        .expect("the worker's own clients still reach it");

    link.heal();
    create(client, "after")
        .await
        .expect("the manager reaches the worker again");
}

#[tokio::test(start_paused = true)]
async fn a_timed_partition_ends_by_itself() {
    let env = two_workers().await;
    let client = through_network(&env, "worker-2").await;
    let link = env.link("worker-2").expect("a link");
    link.partition(Cut::Refuse, Some(Duration::from_secs(60)));
    env.advance(Duration::from_secs(59)).await;
    assert!(create(client.clone(), "early").await.is_err());
    env.advance(Duration::from_secs(2)).await;
    assert_eq!(link.cut(), None);
    create(client, "late").await.expect("the partition is over");
}

#[tokio::test(start_paused = true)]
async fn a_hanging_link_holds_requests_until_healed() {
    let env = two_workers().await;
    let client = through_network(&env, "worker-1").await;
    let link = env.link("worker-1").expect("a link").clone();
    link.partition(Cut::Hang, None);

    let pending = tokio::spawn(create(client, "held"));
    env.advance(Duration::from_secs(3600)).await;
    assert!(
        !pending.is_finished(),
        "an hour later there is still no answer"
    );
    assert!(!exists(env.worker_client("worker-1").expect("a worker"), "held").await);

    let healed_at = tokio::time::Instant::now();
    link.heal();
    pending
        .await
        .expect("the request task")
        .expect("once healed, the request goes through");
    assert_eq!(tokio::time::Instant::now(), healed_at);
    assert!(exists(env.worker_client("worker-1").expect("a worker"), "held").await);
}

#[tokio::test(start_paused = true)]
async fn a_slow_link_delays_each_request() {
    let env = two_workers().await;
    let client = through_network(&env, "worker-1").await;
    env.link("worker-1")
        .expect("a link")
        .set_latency(Duration::from_secs(2));
    let before = tokio::time::Instant::now();
    create(client, "slow").await.expect("it goes through");
    assert_eq!(before.elapsed(), Duration::from_secs(2));
}

#[tokio::test(start_paused = true)]
async fn a_refused_link_resets_open_watches() {
    use futures::StreamExt;
    use kube::runtime::watcher;

    let env = two_workers().await;
    let client = through_network(&env, "worker-1").await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let mut stream = watcher(api, watcher::Config::default()).boxed();
    // The initial list.
    while let Some(event) = stream.next().await {
        if matches!(event, Ok(watcher::Event::InitDone)) {
            break;
        }
    }
    env.link("worker-1")
        .expect("a link")
        .partition(Cut::Refuse, None);
    let next = stream.next().await.expect("the stream goes on");
    assert!(next.is_err(), "the watch is cut: {next:?}");
}

/// A component that, once running, writes on worker-1 through the client its `WorkerAccess`
/// makes of worker-1's kubeconfig.
struct Probe {
    wrote: Arc<Mutex<Option<Result<(), String>>>>,
}

impl Component for Probe {
    fn name(&self) -> &str {
        "probe"
    }

    fn run(&self, _: ComponentContext) -> BoxFuture<'static, Result<(), String>> {
        Box::pin(async { Err("run without workers".to_string()) })
    }

    fn run_with_workers(
        &self,
        ctx: ComponentContext,
        workers: WorkerAccess,
    ) -> BoxFuture<'static, Result<(), String>> {
        let wrote = self.wrote.clone();
        Box::pin(async move {
            let _ = ctx;
            let result = async {
                let text = e2e::harness::kubeconfig::kubeconfig("worker-1");
                let kubeconfig = Kubeconfig::from_yaml(&text).map_err(|e| e.to_string())?;
                let client = workers.connector.connect(kubeconfig).await?;
                create(client, "probe").await.map_err(|e| e.to_string())?;
                Ok(())
            }
            .await;
            *wrote.lock().unwrap_or_else(|p| p.into_inner()) = Some(result);
            std::future::pending().await
        })
    }
}

#[tokio::test(start_paused = true)]
async fn manager_components_reach_workers_and_workers_reach_nothing() {
    let manager_probe = Arc::new(Mutex::new(None));
    let worker_probe = Arc::new(Mutex::new(None));
    let env = TestEnv::builder()
        .component(Arc::new(Probe {
            wrote: manager_probe.clone(),
        }))
        .worker(
            "worker-1",
            [Arc::new(Probe {
                wrote: worker_probe.clone(),
            }) as Arc<dyn Component>],
        )
        .start()
        .await
        .expect("the environment starts");
    env.advance(Duration::from_secs(1)).await;
    let result =
        |m: &Mutex<Option<Result<(), String>>>| m.lock().unwrap_or_else(|p| p.into_inner()).clone();
    assert_eq!(result(&manager_probe), Some(Ok(())));
    assert!(exists(env.worker_client("worker-1").expect("a worker"), "probe").await);
    // A worker's components reach no other cluster.
    assert!(
        matches!(result(&worker_probe), Some(Err(e)) if e.contains("connection refused")),
        "{:?}",
        result(&worker_probe)
    );
}

#[tokio::test(start_paused = true)]
async fn workers_are_addressed_by_name_and_errors_say_which() {
    let env = two_workers().await;
    assert_eq!(env.worker_names(), ["worker-1", "worker-2"]);
    let unknown = env.worker("worker-3").err().map(|e| e.to_string());
    assert_eq!(
        unknown.as_deref(),
        Some("no worker cluster named `worker-3` (workers: worker-1, worker-2)")
    );
    let worker = env.worker("worker-2").expect("a worker");
    worker
        .restart("controller")
        .await
        .expect("a worker's controller restarts");
    assert!(worker.is_running("controller"));
    let error = worker
        .stop("autoscaler")
        .await
        .expect_err("no such component");
    assert_eq!(
        error.to_string(),
        "worker worker-2: no component named `autoscaler` (running: controller, job-runner)"
    );
    env.restart("controller")
        .await
        .expect("the manager's controller restarts");

    // All clusters share the one virtual clock.
    env.advance(Duration::from_secs(90)).await;
    let manager_now = env.server().clock().now();
    for name in env.worker_names() {
        let worker = env.worker(&name).expect("a worker");
        assert_eq!(worker.server().clock().now(), manager_now);
    }
}

#[tokio::test(start_paused = true)]
async fn worlds_with_workers_are_started_not_built() {
    let built = TestEnv::builder().worker("worker-1", []).build();
    assert!(matches!(built, Err(EnvError::WorkersNeedStart)));
    let bad = TestEnv::builder().worker("Worker_1", []).start().await;
    assert!(
        bad.err()
            .is_some_and(|e| e.to_string().contains("cannot name a worker cluster"))
    );
    let twice = TestEnv::builder()
        .worker("manager", [])
        .start()
        .await
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        twice.as_deref(),
        Some("two clusters are named `manager` (`manager` is the manager's)")
    );
}

#[tokio::test(start_paused = true)]
async fn a_kubeconfig_directory_gets_each_workers_kubeconfig() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let env = TestEnv::builder()
        .worker("worker-1", [])
        .kubeconfig_dir(dir.path())
        .start()
        .await
        .expect("the environment starts");
    let kubeconfig =
        Kubeconfig::read_from(dir.path().join("worker-1")).expect("the file is a kubeconfig");
    let client = env
        .network()
        .connect(kubeconfig)
        .await
        .expect("it resolves");
    create(client, "via-path")
        .await
        .expect("it reaches worker-1");
    assert!(exists(env.worker_client("worker-1").expect("a worker"), "via-path").await);
}

const SCENARIO: &str = r#"
name: multikueue-harness-inline
description: objects on workers, addressed by name; a cut link leaves the worker reachable to steps
workers:
  worker-1: {}
  worker-2: {components: {fake-autoscaler: {}}}
trace: [ConfigMap]
steps:
  - create:
      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {on: worker-1}}
    cluster: worker-1
  - create:
      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {on: manager}}
  - partition: {worker: worker-1, mode: hang}
  - assert:
      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {on: worker-1}}
    cluster: worker-1
  - absent:
      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
    cluster: worker-2
  - heal: worker-1
  - assert:
      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {on: manager}}
    cluster: manager
  - fault: {fail: {code: 500, verb: create, times: 1}}
    cluster: worker-2
  - error:
      create:
        object: {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}
      code: 500
    cluster: worker-2
  - create:
      object: {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}
  - restart: fake-autoscaler
    cluster: worker-2
"#;

#[tokio::test(start_paused = true)]
async fn scenario_steps_address_clusters_and_the_trace_names_workers() {
    let scenario = parse("inline.yaml", SCENARIO, Path::new(".")).expect("the scenario parses");
    let outcome = run(&scenario, &Registry::standard())
        .await
        .expect("the scenario runs");
    assert!(outcome.failure.is_none(), "{:?}", outcome.failure);
    let added: Vec<(Option<&str>, &str)> = outcome
        .trace
        .entries
        .iter()
        .filter_map(|e| Some((e.cluster.as_deref(), e.added.as_deref()?)))
        .collect();
    assert_eq!(
        added,
        [
            (Some("worker-1"), "ConfigMap default/a"),
            (None, "ConfigMap default/a"),
            (None, "ConfigMap default/b"),
        ]
    );
    let steps: Vec<&str> = outcome
        .trace
        .entries
        .iter()
        .filter_map(|e| e.step.as_deref())
        .collect();
    assert_eq!(steps[0], "1 create ConfigMap a on worker-1");
    assert_eq!(steps[2], "3 partition worker-1 (hanging)");
}

#[tokio::test(start_paused = true)]
async fn a_scenario_naming_a_missing_worker_component_says_where() {
    let text = SCENARIO.replace("fake-autoscaler: {}", "nope: {}");
    let scenario = parse("inline.yaml", &text, Path::new(".")).expect("the scenario parses");
    let error = run(&scenario, &Registry::standard())
        .await
        .expect_err("no such component");
    assert!(
        error
            .starts_with("inline.yaml: workers.worker-2.components.nope: unknown component `nope`"),
        "{error}"
    );
}
