//! MultiKueue's worker clusters as a user sees them: the MultiKueueCluster's `Active` condition
//! and its MultiKueue AdmissionCheck's, with the manager and each worker an embedded fake API
//! server on one virtual clock. The manager reaches a worker through the kubeconfig it is given
//! (a Secret or a file), which [`InProcess`] resolves to that worker's in-process client.

use std::collections::BTreeMap;
use std::time::Duration;

use api::kueue::{AdmissionCheck, MultiKueueCluster};
use controller::admissionchecks::multikueue::kubeconfig;
use fake_apiserver::{FakeApiServer, Observed};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Api;
use kube::api::DeleteParams;
use serde_json::Value;

use crate::common::{
    CA_DATA, InProcess, NAMESPACE, TOKEN, admission_check, host_of, kubeconfig_for,
    multikueue_check, multikueue_cluster, namespace, options, secret, server, spawn_controller,
};

/// A manager and its workers, the manager's controller running.
struct World {
    _manager: FakeApiServer,
    workers: BTreeMap<String, FakeApiServer>,
    client: kube::Client,
    controller: Option<tokio::task::JoinHandle<()>>,
    options: controller::Options,
    /// Every change of the manager's objects, as committed.
    feed: fake_apiserver::ChangeFeed,
    seen: Vec<Observed>,
    _dir: tempfile::TempDir,
}

impl World {
    async fn new(workers: &[&str]) -> World {
        let manager = server();
        let feed = manager.observe();
        let workers: BTreeMap<String, FakeApiServer> =
            workers.iter().map(|w| (w.to_string(), server())).collect();
        let dir = tempfile::tempdir().expect("tempdir");
        let access = InProcess::access(
            workers.iter().map(|(name, s)| (name.clone(), s.client())),
            dir.path().to_path_buf(),
        );
        let options = options(&manager, Default::default(), access);
        assert_eq!(options.config.namespace, NAMESPACE);
        let client = manager.client();
        namespace(&client, NAMESPACE).await;
        let mut world = World {
            _manager: manager,
            workers,
            client,
            controller: None,
            options,
            feed,
            seen: Vec::new(),
            _dir: dir,
        };
        world.start();
        world
    }

    fn start(&mut self) {
        self.controller = Some(spawn_controller(self.client.clone(), self.options.clone()));
    }

    /// Ends the controller as a crashed process would end.
    async fn stop(&mut self) {
        if let Some(task) = self.controller.take() {
            task.abort();
            let _ = task.await;
        }
    }

    fn worker(&self, name: &str) -> &FakeApiServer {
        self.workers.get(name).expect("a worker of this world")
    }

    fn kubeconfig_dir(&self) -> std::path::PathBuf {
        self.options.workers.kubeconfig_dir.clone()
    }

    /// The cluster `name` of the worker `name`, through a Secret holding a good kubeconfig.
    async fn connect(&self, name: &str) {
        self.secret(name, &kubeconfig_for(&host_of(name), "")).await;
        self.cluster(name, name, "Secret").await;
    }

    /// Cuts the worker off for an hour.
    fn partition(&self, name: &str) {
        self.worker(name)
            .faults()
            .partition(Duration::from_secs(3600));
    }

    /// A Secret holding `text` as its kubeconfig.
    async fn secret(&self, name: &str, text: &str) {
        secret(&self.client, name, text).await;
    }

    async fn cluster(&self, name: &str, location: &str, location_type: &str) {
        multikueue_cluster(&self.client, name, location, location_type).await;
    }

    /// An AdmissionCheck `name` of MultiKueue with a MultiKueueConfig of the same name.
    async fn check(&self, name: &str, clusters: &[&str]) {
        multikueue_check(&self.client, name, clusters).await;
    }

    /// Lets `d` of virtual time pass, with everything that happens meanwhile.
    async fn pass(&mut self, d: Duration) {
        tokio::time::sleep(d).await;
        self.seen.extend(self.feed.drain());
    }

    async fn active_of_cluster(&self, name: &str) -> Option<Active> {
        let api: Api<MultiKueueCluster> = Api::all(self.client.clone());
        let cluster = api.get(name).await.expect("the cluster");
        Active::among(cluster.status.map(|s| s.conditions))
    }

    async fn active_of_check(&self, name: &str) -> Option<Active> {
        let api: Api<AdmissionCheck> = Api::all(self.client.clone());
        let check = api.get(name).await.expect("the check");
        Active::among(check.status.map(|s| s.conditions))
    }

    /// Every `Active` condition `name` (a MultiKueueCluster) was given, with when.
    fn cluster_history(&self, name: &str) -> Vec<(Timestamp, Active)> {
        let mut out: Vec<(Timestamp, Active)> = Vec::new();
        for o in &self.seen {
            if o.object["kind"] != "MultiKueueCluster" || o.object["metadata"]["name"] != name {
                continue;
            }
            let Some(c) = o.object["status"]["conditions"]
                .as_array()
                .and_then(|cs| cs.iter().find(|c| c["type"] == "Active"))
            else {
                continue;
            };
            let now = Active::from_json(c);
            if out.last().map(|(_, a)| a) != Some(&now) {
                out.push((o.time, now));
            }
        }
        out
    }
}

/// An `Active` condition as a user reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Active {
    status: String,
    reason: String,
    message: String,
}

impl Active {
    /// The `Active` one of an object's `conditions`, if any.
    fn among(conditions: Option<Vec<Condition>>) -> Option<Active> {
        let c = conditions?.into_iter().find(|c| c.type_ == "Active")?;
        Some(Active {
            status: c.status,
            reason: c.reason,
            message: c.message,
        })
    }

    fn from_json(c: &Value) -> Active {
        let s = |f: &str| c[f].as_str().unwrap_or_default().to_owned();
        Active {
            status: s("status"),
            reason: s("reason"),
            message: s("message"),
        }
    }
}

fn active(status: &str, reason: &str, message: &str) -> Option<Active> {
    Some(Active {
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
    })
}

/// Refused for `why`, as the manager says of a kubeconfig it cannot use.
fn refused(reason: &str, why: &str) -> Option<Active> {
    active(
        "False",
        reason,
        &format!("load client config failed: {why}"),
    )
}

/// A cluster line that turns TLS verification off, and what the manager says of it.
const INSECURE_SKIP_TLS_VERIFY: &str = "    insecure-skip-tls-verify: true\n";
const INSECURE: &str = "insecure TLS verification is not allowed for cluster worker";

/// A check some of whose clusters are active, as `message` says which are not.
fn some_active_clusters(message: &str) -> Option<Active> {
    active("True", "SomeActiveClusters", message)
}

/// A check none of whose clusters is active, as `message` says.
fn no_usable_clusters(message: &str) -> Option<Active> {
    active("False", "NoUsableClusters", message)
}

fn check_active() -> Option<Active> {
    active("True", "Active", "The admission check is active")
}

fn connected() -> Option<Active> {
    active("True", "Active", "Connected")
}

#[tokio::test(start_paused = true)]
async fn a_cluster_whose_secret_holds_a_good_kubeconfig_is_active() {
    let mut world = World::new(&["worker-1"]).await;
    world.connect("worker-1").await;
    world.pass(Duration::from_secs(1)).await;

    assert_eq!(world.active_of_cluster("worker-1").await, connected());
    // Its watches run on the worker: the link is up.
    assert!(world.worker("worker-1").watcher_count() >= 2);
}

#[tokio::test(start_paused = true)]
async fn a_cluster_whose_file_is_under_the_kubeconfig_directory_is_active() {
    let mut world = World::new(&["worker-1", "worker-2"]).await;
    let dir = world.kubeconfig_dir();
    std::fs::write(
        dir.join("worker-1.yaml"),
        kubeconfig_for(&host_of("worker-1"), ""),
    )
    .expect("write");
    let outside = tempfile::tempdir().expect("tempdir");
    let elsewhere = outside.path().join("worker-2.yaml");
    std::fs::write(&elsewhere, kubeconfig_for(&host_of("worker-2"), "")).expect("write");

    let inside = dir.join("worker-1.yaml");
    world
        .cluster("worker-1", &inside.to_string_lossy(), "Path")
        .await;
    world
        .cluster("worker-2", &elsewhere.to_string_lossy(), "Path")
        .await;
    world.pass(Duration::from_secs(1)).await;

    assert_eq!(world.active_of_cluster("worker-1").await, connected());
    let resolved = std::fs::canonicalize(&elsewhere).expect("canonical");
    let allowed = std::fs::canonicalize(&dir).expect("canonical");
    assert_eq!(
        world.active_of_cluster("worker-2").await,
        refused(
            "BadKubeConfig",
            &format!(
                "kubeconfig path is not under the allowed prefix: {:?} is not under {:?}",
                resolved.to_string_lossy(),
                allowed.to_string_lossy()
            )
        )
    );

    // The file changes to an insecure kubeconfig: it is read again, and refused.
    std::fs::write(
        dir.join("worker-1.yaml"),
        kubeconfig_for(&host_of("worker-1"), INSECURE_SKIP_TLS_VERIFY),
    )
    .expect("write");
    world.pass(Duration::from_secs(31)).await;
    assert_eq!(
        world.active_of_cluster("worker-1").await,
        refused("InsecureKubeConfig", INSECURE)
    );
}

thread_local! {
    /// Where this thread's log lines go while a `CapturedLogs` lives on it.
    static CAPTURE: std::cell::RefCell<Option<std::sync::Arc<std::sync::Mutex<Vec<u8>>>>> =
        const { std::cell::RefCell::new(None) };
}

/// Everything logged, at every level, while it lives (on this thread: the test's runtime).
///
/// A process-wide subscriber decides per event whether its thread captures. A subscriber set
/// with `set_default` would not do: tracing caches a callsite's interest from whichever thread
/// reaches it first, so a line another test's thread logged first is never seen here.
struct CapturedLogs {
    text: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
}

impl CapturedLogs {
    fn start() -> Self {
        use tracing_subscriber::Layer;
        use tracing_subscriber::layer::SubscriberExt;
        struct Sink;
        impl std::io::Write for Sink {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                CAPTURE.with_borrow(|capture| {
                    if let Some(text) = capture {
                        text.lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .extend_from_slice(buf);
                    }
                });
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        static INSTALL: std::sync::Once = std::sync::Once::new();
        INSTALL.call_once(|| {
            // Dynamic, so that it is asked at every event rather than once per callsite.
            let capturing = tracing_subscriber::filter::dynamic_filter_fn(|_, _| {
                CAPTURE.with_borrow(|capture| capture.is_some())
            });
            let layer = tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(|| Sink)
                .with_filter(capturing);
            tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
                .expect("no other test sets a global subscriber");
        });
        let text = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        CAPTURE.set(Some(text.clone()));
        CapturedLogs { text }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.text.lock().unwrap_or_else(|p| p.into_inner())).into_owned()
    }
}

impl Drop for CapturedLogs {
    fn drop(&mut self) {
        CAPTURE.set(None);
    }
}

#[tokio::test(start_paused = true)]
async fn kubeconfigs_that_cannot_be_used_are_refused_until_their_secret_is_fixed() {
    let logs = CapturedLogs::start();
    let mut world = World::new(&["worker-1"]).await;
    let host = host_of("worker-1");
    world.cluster("worker-1", "worker-1", "Secret").await;
    world.pass(Duration::from_secs(1)).await;
    assert_eq!(
        world.active_of_cluster("worker-1").await,
        refused("BadKubeConfig", "secrets \"worker-1\" not found")
    );

    let unusable = [
        (kubeconfig_for(&host, INSECURE_SKIP_TLS_VERIFY), INSECURE),
        (
            kubeconfig_for(&host, "").replace("    token:", "    tokenFile: /t\n    token:"),
            "tokenFile is not allowed",
        ),
        (
            kubeconfig_for("worker_1.clusters.example", ""),
            "untrusted server endpoint",
        ),
        (
            format!("clusters: {TOKEN}\n"),
            "failed to parse kubeconfig(apiconfig): not a kubeconfig (line 1, column 11)",
        ),
    ];
    for (text, why) in unusable {
        world.secret("worker-1", &text).await;
        world.pass(Duration::from_secs(1)).await;
        assert_eq!(
            world.active_of_cluster("worker-1").await,
            refused("InsecureKubeConfig", why),
        );
    }

    // Fixed: the Secret's change is enough, nothing waits for a backoff.
    world.secret("worker-1", &kubeconfig_for(&host, "")).await;
    world.pass(Duration::from_secs(1)).await;
    assert_eq!(world.active_of_cluster("worker-1").await, connected());
    no_secret_in_conditions_or_events(&world);
    // Nor in anything logged, at any level, by the manager, the clients or the servers.
    let logged = logs.text();
    assert!(logged.contains("worker-1"), "the logs were captured");
    for secret in [TOKEN, CA_DATA] {
        assert!(
            !logged.contains(secret),
            "a kubeconfig's contents in the logs: {}",
            logged
                .lines()
                .find(|l| l.contains(secret))
                .unwrap_or_default()
        );
    }
}

/// What a `ClientConnectionFailed` message says of the attempts made and the next one, relative to
/// `since`.
fn attempts(message: &str, since: Timestamp) -> Option<(u32, i64)> {
    let (_, tail) = message.split_once("; connection attempts: ")?;
    let (n, next) = tail.split_once(", next connection attempt: ")?;
    let next: Timestamp = next.parse().ok()?;
    Some((n.parse().ok()?, next.duration_since(since).as_secs()))
}

#[tokio::test(start_paused = true)]
async fn a_partitioned_worker_is_retried_with_backoff_and_active_again_once_healed() {
    let mut world = World::new(&["worker-1"]).await;
    world.connect("worker-1").await;
    world.pass(Duration::from_secs(1)).await;
    let lost = world.options.clock.now();
    world.partition("worker-1");
    world.pass(Duration::from_secs(30)).await;

    let history = world.cluster_history("worker-1");
    let failures: Vec<(String, Option<(u32, i64)>)> = history
        .iter()
        .filter(|(_, a)| a.status == "False")
        .map(|(_, a)| (a.reason.clone(), attempts(&a.message, lost)))
        .collect();
    let reason = "ClientConnectionFailed".to_owned();
    // Attempts at 0s, 5s and 15s; the next ones 5s, 10s and 20s later.
    assert_eq!(
        failures,
        vec![
            (reason.clone(), Some((1, 5))),
            (reason.clone(), Some((2, 15))),
            (reason.clone(), Some((3, 35))),
        ]
    );
    // Each was written when the attempt failed.
    let written: Vec<i64> = history
        .iter()
        .filter(|(_, a)| a.status == "False")
        .map(|(t, _)| t.duration_since(lost).as_secs())
        .collect();
    assert_eq!(written, vec![0, 5, 15]);
    let last = world
        .active_of_cluster("worker-1")
        .await
        .expect("a condition");
    // The transport's error (the fake's refused connection), then the attempts.
    assert_eq!(
        last.message,
        "ServiceError: partitioned by a fault; connection attempts: 3, \
         next connection attempt: 2026-01-01T00:00:36Z"
    );

    world.worker("worker-1").faults().heal();
    // The next attempt is at 35s: the cluster is connected again then, not before.
    world.pass(Duration::from_secs(1)).await;
    assert_eq!(world.active_of_cluster("worker-1").await, Some(last));
    world.pass(Duration::from_secs(30)).await;
    assert_eq!(world.active_of_cluster("worker-1").await, connected());
    no_secret_in_conditions_or_events(&world);
}

#[tokio::test(start_paused = true)]
async fn a_kubeconfig_refused_after_failed_attempts_keeps_their_count_and_waits_for_a_fix() {
    let mut world = World::new(&["worker-1"]).await;
    let host = host_of("worker-1");
    world.connect("worker-1").await;
    world.pass(Duration::from_secs(1)).await;
    world.partition("worker-1");
    world.pass(Duration::from_secs(1)).await;
    world
        .secret("worker-1", &kubeconfig_for(&host, INSECURE_SKIP_TLS_VERIFY))
        .await;
    // Long past the next attempt: nothing is attempted with a kubeconfig that is refused.
    world.pass(Duration::from_secs(600)).await;
    assert_eq!(
        world.active_of_cluster("worker-1").await,
        refused(
            "InsecureKubeConfig",
            &format!(
                "{INSECURE}; connection attempts: 1, next connection attempt: 2026-01-01T00:00:06Z"
            )
        )
    );

    world.worker("worker-1").faults().heal();
    world.secret("worker-1", &kubeconfig_for(&host, "")).await;
    world.pass(Duration::from_secs(1)).await;
    assert_eq!(world.active_of_cluster("worker-1").await, connected());
}

#[tokio::test(start_paused = true)]
async fn a_worker_that_stops_answering_counts_as_lost() {
    let mut world = World::new(&["worker-1"]).await;
    world.connect("worker-1").await;
    world.pass(Duration::from_secs(1)).await;
    let worker = world.worker("worker-1");
    // Every request waits a day; open watches are cut, so the link has to ask again.
    let hang = worker
        .faults()
        .inject(fake_apiserver::FaultRule::delay(Duration::from_secs(86400)));
    worker.faults().close_watches();
    let hung = world.options.clock.now();
    world.pass(Duration::from_secs(200)).await;

    let history = world.cluster_history("worker-1");
    let (at, first) = history
        .iter()
        .find(|(_, a)| a.status == "False")
        .expect("the worker was noticed to hang");
    assert_eq!(first.reason, "ClientConnectionFailed");
    assert!(
        first
            .message
            .starts_with("watch establishment timed out; connection attempts: 1"),
        "{}",
        first.message
    );
    // Reopening the watch waits a minute; so does the next attempt's list.
    assert_eq!(at.duration_since(hung).as_secs(), 120);

    world.worker("worker-1").faults().remove(hang);
    world.pass(Duration::from_secs(600)).await;
    assert_eq!(world.active_of_cluster("worker-1").await, connected());
}

#[tokio::test(start_paused = true)]
async fn a_check_is_active_while_one_of_its_clusters_is() {
    let mut world = World::new(&["worker-1", "worker-2"]).await;
    for w in ["worker-1", "worker-2"] {
        world.connect(w).await;
    }
    world
        .check("multikueue", &["worker-1", "worker-2", "worker-3"])
        .await;
    world.check("pair", &["worker-1", "worker-2"]).await;
    world.pass(Duration::from_secs(1)).await;
    assert_eq!(
        world.active_of_check("multikueue").await,
        some_active_clusters("Missing clusters: [worker-3]")
    );
    assert_eq!(world.active_of_check("pair").await, check_active());

    world.partition("worker-2");
    world.pass(Duration::from_secs(1)).await;
    assert_eq!(
        world.active_of_check("pair").await,
        some_active_clusters("Inactive clusters: [worker-2]")
    );
    world.partition("worker-1");
    world.pass(Duration::from_secs(1)).await;
    assert_eq!(
        world.active_of_check("pair").await,
        no_usable_clusters("Inactive clusters: [worker-1 worker-2]")
    );
    assert_eq!(
        world.active_of_check("multikueue").await,
        no_usable_clusters("Missing clusters: [worker-3], Inactive clusters: [worker-1 worker-2]")
    );

    for w in ["worker-1", "worker-2"] {
        world.worker(w).faults().heal();
    }
    world.pass(Duration::from_secs(60)).await;
    assert_eq!(world.active_of_check("pair").await, check_active());

    // A deleted cluster is a missing one; its worker's watches end.
    let clusters: Api<MultiKueueCluster> = Api::all(world.client.clone());
    clusters
        .delete("worker-2", &DeleteParams::default())
        .await
        .expect("delete");
    world.pass(Duration::from_secs(1)).await;
    assert_eq!(
        world.active_of_check("pair").await,
        some_active_clusters("Missing clusters: [worker-2]")
    );
    assert_eq!(world.worker("worker-2").watcher_count(), 0);
    assert!(world.worker("worker-1").watcher_count() >= 2);
}

#[tokio::test(start_paused = true)]
async fn a_check_whose_config_is_missing_is_a_bad_config() {
    let mut world = World::new(&[]).await;
    admission_check(&world.client, "multikueue", "gone").await;
    world.pass(Duration::from_secs(1)).await;
    assert_eq!(
        world.active_of_check("multikueue").await,
        active(
            "False",
            "BadConfig",
            "Cannot load the AdmissionChecks parameters: multikueueconfigs.kueue.x-k8s.io \"gone\" not found"
        )
    );
}

#[tokio::test(start_paused = true)]
async fn a_stopped_manager_leaves_no_watch_on_its_workers_and_reconnects_when_started() {
    let mut world = World::new(&["worker-1"]).await;
    world.connect("worker-1").await;
    world.pass(Duration::from_secs(1)).await;
    assert!(world.worker("worker-1").watcher_count() >= 2);

    world.stop().await;
    world.pass(Duration::from_secs(1)).await;
    assert_eq!(world.worker("worker-1").watcher_count(), 0);

    world.start();
    world.pass(Duration::from_secs(1)).await;
    assert!(world.worker("worker-1").watcher_count() >= 2);
    assert_eq!(world.active_of_cluster("worker-1").await, connected());
}

/// Neither the token nor the CA data of any kubeconfig in a Secret appears in anything the
/// manager's objects recorded: conditions, Events.
fn no_secret_in_conditions_or_events(world: &World) {
    let mut looked = 0;
    for o in &world.seen {
        if o.object["kind"] == "Secret" {
            continue;
        }
        looked += 1;
        let text = o.object.to_string();
        for secret in [TOKEN, CA_DATA] {
            assert!(
                !text.contains(secret),
                "a kubeconfig's contents in a {}: {text}",
                o.object["kind"]
            );
        }
    }
    assert!(looked > 0, "nothing was recorded");
    // And the refusals were written at all: there was something to leak into.
    assert!(
        world
            .seen
            .iter()
            .any(|o| o.object["kind"] == "MultiKueueCluster")
    );
}

#[test]
fn the_test_kubeconfig_is_one_the_manager_accepts() {
    kubeconfig::check(kubeconfig_for(&host_of("worker-1"), "").as_bytes()).expect("accepted");
}
