//! The MultiKueueCluster controller: connections to workers and their `Active` condition, as
//! Kueue's `clustersReconciler` keeps them.
//!
//! For each cluster the pass reads and checks its kubeconfig ([`super::kubeconfig`]) and, when
//! it is usable and changed (or the cluster is disconnected and its backoff is over), starts a
//! *link*: one spawned task that connects ([`super::connect::Connector`]), lists and watches the
//! worker's Workloads and batch/v1 Jobs that carry our origin label, and reports everything to
//! the manager's loop through one channel ([`Report`]). The worker counts as connected once
//! both lists arrived and both watches are open. A watch that fails, a request that does not
//! answer in time, or a kubeconfig that becomes unusable disconnects it; the first loss time is
//! kept until it is connected again (`workerLostTimeout` counts from there). Reconnects back
//! off as Kueue's do: 5s, 10s, ... 320s.
//!
//! Only the loop's task touches [`Workers`]; links only send. Each link carries an epoch, so
//! what an older link reports after it was replaced is ignored. Links are aborted when their
//! cluster goes or the controller is dropped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::constants::controller_name;
use api::constants::label;
use api::constants::multikueue::{
    MESSAGE_CONNECTED, REASON_ACTIVE, REASON_CLIENT_CONNECTION_FAILED,
};
use api::kueue::{LocationType, MultiKueueCluster, MultiKueueConfig, Workload};
use futures::StreamExt;
use futures::stream::BoxStream;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher::Event;
use kube::{Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use support::mirror::Mirror;
use tokio::sync::mpsc;

use super::active::{self, ACTIVE};
use super::connect::Connector;
use super::kubeconfig::{self, Refusal, Source};
use super::workers::{RemoteChange, Worker, Workers};
use super::workloads::WorkloadsPass;
use crate::Clock;
use crate::admissionchecks::Ctx;
use crate::error::Error;
use crate::lean::Lean;
use crate::options::Options;
use crate::state::World;
use crate::watch::{AnyEvent, Delivery, Watch, take};
use crate::workload::conditions;

/// The MultiKueue AdmissionChecks and the clusters each may use.
#[derive(Default, Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    /// Every AdmissionCheck of MultiKueue's controller, with its MultiKueueConfig's clusters
    /// in config order (`None`: its parameters cannot be loaded).
    checks: BTreeMap<String, Option<Vec<String>>>,
}

impl Setup {
    /// From the AdmissionChecks of the world and the MultiKueueConfigs.
    pub fn build(world: &World, configs: &Mirror<MultiKueueConfig>) -> Setup {
        let checks = world
            .admission_checks
            .values()
            .filter(|ac| ac.spec.controller_name == controller_name::MULTIKUEUE)
            .map(|ac| {
                let clusters = active::config_name(ac.spec.parameters.as_ref())
                    .ok()
                    .and_then(|name| configs.get(name))
                    .map(|c| c.spec.clusters.clone());
                (ac.name_any(), clusters)
            })
            .collect();
        Setup { checks }
    }

    /// The clusters of a MultiKueue check, in its MultiKueueConfig's order: all of them,
    /// connected or not ([`Worker::is_active`] says which may be used now). `None` when the check
    /// is not MultiKueue's or its config cannot be loaded.
    pub fn clusters_of(&self, check: &str) -> Option<&[String]> {
        self.checks.get(check)?.as_deref()
    }

    pub fn is_multikueue(&self, check: &str) -> bool {
        self.checks.contains_key(check)
    }

    /// The MultiKueue checks, by name.
    pub fn checks(&self) -> impl Iterator<Item = &str> {
        self.checks.keys().map(String::as_str)
    }
}

/// How long to wait before connection attempt `failed + 1`: Kueue's `retryAfter`, 5s doubling
/// up to 320s (0 before any failure).
pub fn retry_after(failed: u32) -> Duration {
    const INCREMENT: Duration = Duration::from_secs(5);
    const MAX_STEPS: u32 = 7;
    if failed == 0 {
        return Duration::ZERO;
    }
    INCREMENT * (1 << (failed.min(MAX_STEPS) - 1))
}

/// How long a connection attempt may take before the worker counts as unresponsive: Kueue's
/// watch establishment bound, 1 minute doubling with each failed attempt up to 10 minutes. A
/// link's later requests (a watch reopened after its server-side timeout) get the first value.
pub fn establish_timeout(failed: u32) -> Duration {
    const INITIAL: Duration = Duration::from_secs(60);
    const MAX: Duration = Duration::from_secs(600);
    INITIAL
        .checked_mul(1 << failed.min(4))
        .map_or(MAX, |t| t.min(MAX))
}

/// Kueue's message for a connection that failed, with the attempts made and the next one.
pub fn failure_message(message: &str, attempts: u32, next: Timestamp) -> String {
    if attempts == 0 {
        return message.to_owned();
    }
    format!(
        "{message}; connection attempts: {attempts}, next connection attempt: {}",
        next.strftime("%Y-%m-%dT%H:%M:%SZ")
    )
}

/// Kueue's message when a remote watch cannot be opened in time.
pub const ESTABLISH_TIMED_OUT: &str = "watch establishment timed out";

/// How often a `locationType: Path` kubeconfig is read again (Kueue watches the file).
const PATH_POLL: Duration = Duration::from_secs(30);

/// How long a failed status write waits before it is tried again.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(10);

/// What a link tells the loop.
pub struct Report {
    cluster: String,
    epoch: u64,
    what: What,
}

enum What {
    /// The first delivery of the channel's stream, so the manager counts it as listed.
    Ready,
    Workload(Box<Event<Workload>>),
    Job(Box<Event<Job>>),
    /// Both lists delivered, both watches open.
    Connected(Client),
    /// The link ended: why, in a line safe to show.
    Failed(String),
}

/// The resource name the channel of remote watch events goes by in the manager's watch list.
pub const REMOTE_EVENTS: &str = "multikueue-remote-watches";

/// A spawned task, aborted when dropped.
struct Task(tokio::task::JoinHandle<()>);

impl Drop for Task {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LinkState {
    Idle,
    Connecting,
    Connected,
}

/// One cluster's connection.
struct Link {
    /// The kubeconfig the current or last link was started with.
    kubeconfig: Option<Vec<u8>>,
    epoch: u64,
    task: Option<Task>,
    state: LinkState,
    /// Failed connection attempts since the last success or kubeconfig change.
    attempts: u32,
    next_attempt: Option<Timestamp>,
    /// Why the last attempt failed.
    failure: Option<String>,
    /// When a Path kubeconfig is read again.
    next_poll: Option<Timestamp>,
    /// The kubeconfig cannot be used: nothing to reconnect with until it changes.
    refused: bool,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            kubeconfig: None,
            epoch: 0,
            task: None,
            state: LinkState::Idle,
            attempts: 0,
            next_attempt: None,
            failure: None,
            next_poll: None,
            refused: false,
        }
    }
}

impl Link {
    /// A reconnect is waiting for its time.
    fn reconnect_at(&self) -> Option<Timestamp> {
        self.next_attempt
            .filter(|_| self.state == LinkState::Idle && !self.refused)
    }

    /// Ends the link's task; whatever it sent and the loop has not read yet is ignored.
    fn stop(&mut self) {
        self.task = None;
        self.state = LinkState::Idle;
        // Links are numbered from 1.
        self.epoch = 0;
    }
}

/// The condition a cluster should have; `None`: leave it as it is (a link is on its way).
type Wanted = Option<(bool, &'static str, String)>;

/// The cluster controller's state.
pub struct Clusters {
    pub(super) clusters: Mirror<MultiKueueCluster>,
    secrets: Mirror<Secret>,
    links: BTreeMap<String, Link>,
    /// Clusters to look at again.
    dirty: BTreeSet<String>,
    /// Some cluster's `Active` condition may have changed, or a cluster came or went.
    activity_changed: bool,
    next_epoch: u64,
    retry_at: Option<Timestamp>,
    reports: mpsc::UnboundedSender<Report>,
    receiver: Mutex<Option<mpsc::UnboundedReceiver<Report>>>,
    clock: Clock,
    connector: Arc<dyn Connector>,
    kubeconfig_dir: PathBuf,
    namespace: String,
    origin: String,
}

impl Clusters {
    pub fn new(options: &Options) -> Self {
        let (reports, receiver) = mpsc::unbounded_channel();
        Clusters {
            clusters: Mirror::default(),
            secrets: Mirror::default(),
            links: BTreeMap::new(),
            dirty: BTreeSet::new(),
            activity_changed: false,
            next_epoch: 0,
            retry_at: None,
            reports,
            receiver: Mutex::new(Some(receiver)),
            clock: options.clock,
            connector: options.workers.connector.clone(),
            kubeconfig_dir: options.workers.kubeconfig_dir.clone(),
            namespace: options.config.namespace.clone(),
            origin: options.config.multi_kueue.origin.clone(),
        }
    }

    /// MultiKueueClusters, the Secrets of the controller's namespace, and what the links
    /// report.
    pub fn watches(&self, client: &Client) -> Vec<Watch> {
        vec![
            crate::watch::watch::<MultiKueueCluster>(client, Default::default()),
            secrets_watch(client, &self.namespace),
            self.reports_watch(),
        ]
    }

    /// The channel's stream (once; a second call gets one that only says it is ready).
    fn reports_watch(&self) -> Watch {
        let receiver = self
            .receiver
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        let ready = Report {
            cluster: String::new(),
            epoch: 0,
            what: What::Ready,
        };
        let first = futures::stream::iter([Delivery {
            event: Box::new(ready) as AnyEvent,
            init_done: true,
        }]);
        let rest: BoxStream<'static, Delivery> = match receiver {
            Some(rx) => futures::stream::unfold(rx, |mut rx| async move {
                let report = rx.recv().await?;
                let delivery = Delivery {
                    event: Box::new(report) as AnyEvent,
                    init_done: false,
                };
                Some((delivery, rx))
            })
            .boxed(),
            None => futures::stream::pending().boxed(),
        };
        Watch {
            group: String::new(),
            resource: REMOTE_EVENTS.into(),
            stream: first.chain(rest).boxed(),
        }
    }

    /// An event of one of its watches; hands back an event that is not one.
    pub fn apply(
        &mut self,
        event: AnyEvent,
        workers: &mut Workers,
        workloads: &mut WorkloadsPass,
    ) -> Result<(), AnyEvent> {
        let event = match take(&mut self.clusters, event) {
            Ok(changes) => {
                for (old, new) in changes {
                    if let Some(c) = new.as_ref().or(old.as_ref()) {
                        self.dirty.insert(c.name_any());
                    }
                    let active = |c: &Option<Arc<MultiKueueCluster>>| {
                        c.as_ref().map(|c| active_condition(c).cloned())
                    };
                    if active(&old) != active(&new) {
                        self.activity_changed = true;
                    }
                }
                return Ok(());
            }
            Err(event) => event,
        };
        let event = match take(&mut self.secrets, event) {
            Ok(changes) => {
                for (old, new) in changes {
                    if let Some(s) = new.or(old) {
                        self.secret_changed(&s.name_any());
                    }
                }
                return Ok(());
            }
            Err(event) => event,
        };
        let report = event.downcast::<Report>()?;
        self.report(*report, workers, workloads);
        Ok(())
    }

    fn secret_changed(&mut self, name: &str) {
        let users = self.clusters.values().filter(|c| {
            c.spec
                .cluster_source
                .kube_config
                .as_ref()
                .is_some_and(|k| k.location_type == LocationType::Secret && k.location == name)
        });
        let users: Vec<String> = users.map(|c| c.name_any()).collect();
        self.dirty.extend(users);
    }

    fn report(&mut self, report: Report, workers: &mut Workers, workloads: &mut WorkloadsPass) {
        let Report {
            cluster,
            epoch,
            what,
        } = report;
        let Some(link) = self.links.get_mut(&cluster).filter(|l| l.epoch == epoch) else {
            return;
        };
        let Some(worker) = workers.by_name.get_mut(&cluster) else {
            return;
        };
        match what {
            What::Ready => {}
            What::Workload(event) => {
                for (old, new) in worker.workloads.apply_event(*event) {
                    if let Some(wl) = new.or(old) {
                        workloads.remote_changed(&RemoteChange {
                            cluster: cluster.clone(),
                            workload: crate::state::key_of(wl.as_ref()),
                        });
                    }
                }
            }
            What::Job(event) => {
                for (old, new) in worker.jobs.apply_event(*event) {
                    let Some(job) = new.or(old) else { continue };
                    // A remote job belongs to the workload it was created for.
                    let Some(wl) = job.labels().get(label::PREBUILT_WORKLOAD_NAME) else {
                        continue;
                    };
                    workloads.remote_changed(&RemoteChange {
                        cluster: cluster.clone(),
                        workload: format!("{}/{wl}", job.namespace().unwrap_or_default()),
                    });
                }
            }
            What::Connected(client) => {
                tracing::info!(cluster = %cluster, "worker cluster connected");
                link.state = LinkState::Connected;
                link.attempts = 0;
                link.next_attempt = None;
                link.failure = None;
                worker.client = Some(client);
                worker.lost_since = None;
                workloads.worker_changed(&cluster);
                self.dirty.insert(cluster);
            }
            What::Failed(why) => {
                let now = self.clock.now();
                let was_connected = link.state == LinkState::Connected;
                link.stop();
                if was_connected {
                    // A dropped watch: reconnect at once, as Kueue does.
                    tracing::warn!(cluster = %cluster, error = %why, "worker cluster lost");
                } else {
                    link.attempts += 1;
                    let wait = retry_after(link.attempts);
                    let next = now.checked_add(wait).unwrap_or(now);
                    tracing::debug!(cluster = %cluster, attempts = link.attempts, %now, %next, error = %why, "worker cluster connection failed");
                    link.next_attempt = Some(next);
                    link.failure = Some(why);
                }
                disconnect(worker, now);
                if was_connected {
                    workloads.worker_changed(&cluster);
                }
                self.dirty.insert(cluster);
            }
        }
    }

    /// Whether some cluster's `Active` condition may have changed since the last call.
    pub fn take_activity_changed(&mut self) -> bool {
        std::mem::take(&mut self.activity_changed)
    }

    /// The cluster's state for its AdmissionChecks, from its `Active` condition.
    pub fn state_of(&self, name: &str) -> active::ClusterState {
        match self.clusters.get(name) {
            None => active::ClusterState::Missing,
            Some(c) if active_condition(c).is_some_and(|c| c.status == "True") => {
                active::ClusterState::Active
            }
            Some(_) => active::ClusterState::Inactive,
        }
    }

    /// When the pass must run again: a reconnect, a Path kubeconfig to read again, a status
    /// write to retry.
    pub fn next_wake(&self) -> Option<Timestamp> {
        self.links
            .values()
            .flat_map(|l| [l.reconnect_at(), l.next_poll])
            .flatten()
            .chain(self.retry_at)
            .min()
    }

    /// Brings every cluster that changed, or whose timer is due, up to date. Whether it wrote.
    pub async fn sync(
        &mut self,
        ctx: &mut Ctx<'_>,
        workers: &mut Workers,
        workloads: &mut WorkloadsPass,
    ) -> Result<bool, Error> {
        let now = ctx.options.clock.now();
        if self.retry_at.is_some_and(|at| at <= now) {
            self.retry_at = None;
        }
        for (name, link) in &self.links {
            let due = |at: Option<Timestamp>| at.is_some_and(|at| at <= now);
            if due(link.reconnect_at()) || due(link.next_poll) {
                self.dirty.insert(name.clone());
            }
        }
        let mut progressed = false;
        for name in std::mem::take(&mut self.dirty) {
            let Some(cluster) = self.clusters.get_shared(&name) else {
                self.remove(&name, workers, workloads);
                continue;
            };
            if cluster.metadata.deletion_timestamp.is_some() {
                self.remove(&name, workers, workloads);
                continue;
            }
            let wanted = self.reconcile(&cluster, now, workers, workloads);
            match self.write_status(ctx, &cluster, wanted).await {
                Ok(wrote) => progressed |= wrote,
                Err(Error::Api(e)) => {
                    tracing::warn!(cluster = %name, error = %e, "MultiKueueCluster status, retrying in 10s");
                    self.dirty.insert(name);
                    self.retry_at = Some(now.checked_add(RETRY_AFTER_ERROR).unwrap_or(now));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(progressed)
    }

    /// A cluster deleted: its worker goes, with its link.
    fn remove(&mut self, name: &str, workers: &mut Workers, workloads: &mut WorkloadsPass) {
        let had_link = self.links.remove(name).is_some();
        if workers.by_name.remove(name).is_some() || had_link {
            tracing::info!(cluster = %name, "worker cluster removed");
            workloads.worker_changed(name);
            self.activity_changed = true;
        }
    }

    /// Loads the cluster's kubeconfig, starts a link if one is due, and says which condition the
    /// cluster should have.
    fn reconcile(
        &mut self,
        cluster: &MultiKueueCluster,
        now: Timestamp,
        workers: &mut Workers,
        workloads: &mut WorkloadsPass,
    ) -> Wanted {
        let name = cluster.name_any();
        // A worker exists from the moment its cluster does, disconnected until a link says
        // otherwise: a worker that cannot be reached after a manager restart counts as lost
        // from then.
        let worker = workers
            .by_name
            .entry(name.clone())
            .or_insert_with(|| Worker {
                lost_since: Some(now),
                ..Default::default()
            });
        let link = self.links.entry(name.clone()).or_default();
        let kube_config = cluster.spec.cluster_source.kube_config.as_ref();
        let source = match kube_config {
            Some(k) if k.location_type == LocationType::Secret => Source::Secret {
                name: &k.location,
                secret: self
                    .secrets
                    .get(&format!("{}/{}", self.namespace, k.location)),
            },
            Some(k) => Source::Path {
                location: &k.location,
                dir: &self.kubeconfig_dir,
            },
            None if cluster.spec.cluster_source.cluster_profile_ref.is_some() => {
                Source::ClusterProfile
            }
            None => Source::Missing,
        };
        let is_path = kube_config.is_some_and(|k| k.location_type == LocationType::Path);
        link.next_poll = is_path.then(|| now.checked_add(PATH_POLL).unwrap_or(now));
        let loaded =
            kubeconfig::read(source).and_then(|bytes| Ok((kubeconfig::check(&bytes)?, bytes)));
        let (config, bytes) = match loaded {
            Err(Refusal { reason, message }) => {
                let was_active = worker.is_active();
                link.stop();
                link.refused = true;
                disconnect(worker, now);
                if was_active {
                    workloads.worker_changed(&name);
                }
                let next = link.next_attempt.unwrap_or(now);
                return Some((
                    false,
                    reason,
                    failure_message(&message, link.attempts, next),
                ));
            }
            Ok(loaded) => loaded,
        };
        link.refused = false;
        if link.kubeconfig.as_ref() != Some(&bytes) {
            // A new kubeconfig starts afresh.
            link.kubeconfig = Some(bytes);
            link.attempts = 0;
            link.next_attempt = None;
            link.failure = None;
            link.stop();
            let was_active = worker.is_active();
            disconnect(worker, now);
            if was_active {
                workloads.worker_changed(&name);
            }
        }
        match link.state {
            LinkState::Connected => Some((true, REASON_ACTIVE, MESSAGE_CONNECTED.into())),
            LinkState::Connecting => None,
            LinkState::Idle if link.next_attempt.is_some_and(|at| at > now) => {
                let why = link.failure.clone().unwrap_or_default();
                let next = link.next_attempt.unwrap_or(now);
                Some((
                    false,
                    REASON_CLIENT_CONNECTION_FAILED,
                    failure_message(&why, link.attempts, next),
                ))
            }
            LinkState::Idle => {
                self.next_epoch += 1;
                link.epoch = self.next_epoch;
                link.state = LinkState::Connecting;
                let target = Target {
                    cluster: name,
                    epoch: link.epoch,
                    origin: self.origin.clone(),
                    timeout: establish_timeout(link.attempts),
                    reports: self.reports.clone(),
                };
                tracing::debug!(cluster = %target.cluster, %now, timeout = ?target.timeout, "worker cluster connecting");
                let connect = self.connector.connect(config);
                link.task = Some(Task(tokio::spawn(run_link(target, connect))));
                None
            }
        }
    }

    /// Writes the cluster's `Active` condition when its status, reason or message differ, as
    /// Kueue does. Whether it wrote.
    async fn write_status(
        &mut self,
        ctx: &mut Ctx<'_>,
        cluster: &MultiKueueCluster,
        wanted: Wanted,
    ) -> Result<bool, Error> {
        let Some((active, reason, message)) = wanted else {
            return Ok(false);
        };
        let status = if active { "True" } else { "False" };
        if active_condition(cluster)
            .is_some_and(|c| c.status == status && c.reason == reason && c.message == message)
        {
            return Ok(false);
        }
        let mut condition = conditions::new(
            ACTIVE,
            active,
            reason,
            &message,
            &ctx.options.clock.now_time(),
        );
        condition.observed_generation = cluster.metadata.generation;
        let mut next = cluster.clone();
        conditions::set(
            &mut next.status.get_or_insert_with(Default::default).conditions,
            condition,
        );
        crate::rbac::check::<MultiKueueCluster>(Some("status"), "update");
        let api: Api<Lean<MultiKueueCluster>> = Api::all(ctx.writer.client().clone());
        let pp = PostParams {
            field_manager: Some(crate::writer::FIELD_MANAGER.into()),
            ..Default::default()
        };
        match api
            .replace_status(&cluster.name_any(), &pp, Lean::of(&next))
            .await
        {
            Ok(Lean(written)) => {
                self.clusters.apply(written);
                self.activity_changed = true;
                Ok(true)
            }
            // Someone wrote first (or it is gone): its new version brings this pass back.
            Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => Ok(true),
            Err(e) => Err(e.into()),
        }
    }
}

/// The worker is not usable now; its loss time is the first one.
fn disconnect(worker: &mut Worker, now: Timestamp) {
    worker.client = None;
    worker.lost_since.get_or_insert(now);
}

fn active_condition(
    cluster: &MultiKueueCluster,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    conditions::find(&cluster.status.as_ref()?.conditions, ACTIVE)
}

/// The Secrets of the controller's namespace (its RBAC allows no more).
fn secrets_watch(client: &Client, namespace: &str) -> Watch {
    use kube::runtime::{WatchStreamExt, watcher};
    crate::rbac::check::<Secret>(None, "list");
    crate::rbac::check::<Secret>(None, "watch");
    let api: Api<Lean<Secret>> = Api::namespaced(client.clone(), namespace);
    let stream = watcher::watcher(api, watcher::Config::default())
        .backoff(support::backoff::WatchBackoff::default())
        .filter_map(|ev| {
            let out = match ev {
                Ok(ev) => {
                    let ev = match ev {
                        Event::Apply(Lean(s)) => Event::Apply(s),
                        Event::Delete(Lean(s)) => Event::Delete(s),
                        Event::Init => Event::Init,
                        Event::InitApply(Lean(s)) => Event::InitApply(s),
                        Event::InitDone => Event::InitDone,
                    };
                    Some(Delivery {
                        init_done: matches!(ev, Event::InitDone),
                        event: Box::new(ev) as AnyEvent,
                    })
                }
                // Never the error's details: they could quote a Secret.
                Err(_) => {
                    tracing::warn!(kind = "Secret", "watch error");
                    None
                }
            };
            futures::future::ready(out)
        })
        .boxed();
    Watch {
        group: String::new(),
        resource: "secrets".into(),
        stream,
    }
}

// The link: one task per connection attempt, alive as long as the connection.

/// Who a link reports to, and for what.
struct Target {
    cluster: String,
    epoch: u64,
    origin: String,
    /// How long connecting, listing or opening a watch may take.
    timeout: Duration,
    reports: mpsc::UnboundedSender<Report>,
}

impl Target {
    fn send(&self, what: What) {
        // The loop is gone only when the controller is, and then so is this task.
        let _ = self.reports.send(Report {
            cluster: self.cluster.clone(),
            epoch: self.epoch,
            what,
        });
    }
}

async fn run_link(
    target: Target,
    connect: futures::future::BoxFuture<'static, Result<Client, String>>,
) {
    if let Err(why) = link(&target, connect).await {
        target.send(What::Failed(why));
    }
}

async fn link(
    target: &Target,
    connect: futures::future::BoxFuture<'static, Result<Client, String>>,
) -> Result<(), String> {
    let client = tokio::time::timeout(target.timeout, connect)
        .await
        .map_err(|_| ESTABLISH_TIMED_OUT.to_owned())??;
    let selector = format!("{}={}", label::MULTIKUEUE_ORIGIN, target.origin);
    let workloads = Remote::<Workload>::open(&client, &selector, target.timeout).await?;
    let jobs = Remote::<Job>::open(&client, &selector, target.timeout).await?;
    workloads.deliver_list(target, workload_event);
    jobs.deliver_list(target, job_event);
    target.send(What::Connected(client));
    // Later watches get the first bound: a worker that stops answering is lost within it.
    let timeout = establish_timeout(0);
    let workloads = workloads.follow(target, timeout, workload_event);
    let jobs = jobs.follow(target, timeout, job_event);
    futures::pin_mut!(workloads, jobs);
    match futures::future::select(workloads, jobs).await {
        futures::future::Either::Left((r, _)) | futures::future::Either::Right((r, _)) => r,
    }
}

fn workload_event(event: Event<Workload>) -> What {
    What::Workload(Box::new(event))
}

fn job_event(event: Event<Job>) -> What {
    What::Job(Box::new(event))
}

/// How long the worker keeps a watch open before it ends it and the link opens another (below
/// kube-rs's limit of 295s).
const WATCH_SECONDS: u32 = 290;

/// One kind on a worker: what was listed, and the open watch.
struct Remote<K: Clone> {
    api: Api<Lean<K>>,
    selector: String,
    listed: Vec<K>,
    version: String,
    events: BoxStream<'static, Result<WatchEvent<Lean<K>>, kube::Error>>,
}

impl<K> Remote<K>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    /// Lists the kind's objects that carry our origin label and opens a watch from there.
    async fn open(client: &Client, selector: &str, timeout: Duration) -> Result<Self, String> {
        let api: Api<Lean<K>> = Api::all(client.clone());
        let list = bounded(timeout, api.list(&ListParams::default().labels(selector))).await?;
        let version = list.metadata.resource_version.clone().unwrap_or_default();
        let events = watch_from(&api, selector, &version, timeout).await?;
        Ok(Remote {
            api,
            selector: selector.to_owned(),
            listed: list.items.into_iter().map(|Lean(k)| k).collect(),
            version,
            events,
        })
    }

    fn deliver_list(&self, target: &Target, wrap: fn(Event<K>) -> What) {
        target.send(wrap(Event::Init));
        for obj in &self.listed {
            target.send(wrap(Event::InitApply(obj.clone())));
        }
        target.send(wrap(Event::InitDone));
    }

    /// Hands on the watch's events; opens the watch again when the worker ends it. Returns why
    /// it could not go on.
    async fn follow(
        mut self,
        target: &Target,
        timeout: Duration,
        wrap: fn(Event<K>) -> What,
    ) -> Result<(), String> {
        self.listed = Vec::new();
        loop {
            let Some(event) = self.events.next().await else {
                self.events = watch_from(&self.api, &self.selector, &self.version, timeout).await?;
                continue;
            };
            let event = event.map_err(|e| e.to_string())?;
            match event {
                WatchEvent::Added(Lean(obj)) | WatchEvent::Modified(Lean(obj)) => {
                    self.seen(&obj);
                    target.send(wrap(Event::Apply(obj)));
                }
                WatchEvent::Deleted(Lean(obj)) => {
                    self.seen(&obj);
                    target.send(wrap(Event::Delete(obj)));
                }
                WatchEvent::Bookmark(b) => self.version = b.metadata.resource_version,
                // Too old a version, or another refusal: the link ends and a new one lists.
                WatchEvent::Error(e) => return Err(e.message),
            }
        }
    }

    fn seen(&mut self, obj: &K) {
        if let Some(v) = obj.meta().resource_version.clone() {
            self.version = v;
        }
    }
}

async fn watch_from<K>(
    api: &Api<Lean<K>>,
    selector: &str,
    version: &str,
    timeout: Duration,
) -> Result<BoxStream<'static, Result<WatchEvent<Lean<K>>, kube::Error>>, String>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    let wp = WatchParams::default()
        .labels(selector)
        .timeout(WATCH_SECONDS);
    let events = bounded(timeout, api.watch(&wp, version)).await?;
    Ok(events.boxed())
}

/// A remote request that must answer within `timeout`; its error as one line.
async fn bounded<T>(
    timeout: Duration,
    request: impl Future<Output = Result<T, kube::Error>>,
) -> Result<T, String> {
    match tokio::time::timeout(timeout, request).await {
        Ok(Ok(t)) => Ok(t),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(ESTABLISH_TIMED_OUT.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case(0, 0)]
    #[case(1, 5)]
    #[case(2, 10)]
    #[case(3, 20)]
    #[case(4, 40)]
    #[case(5, 80)]
    #[case(6, 160)]
    #[case(7, 320)]
    #[case(8, 320)]
    #[case(1000, 320)]
    fn reconnects_back_off_from_5s_to_320s(#[case] failed: u32, #[case] seconds: u64) {
        assert_eq!(retry_after(failed), Duration::from_secs(seconds));
    }

    #[rstest]
    #[case(0, 60)]
    #[case(1, 120)]
    #[case(2, 240)]
    #[case(3, 480)]
    #[case(4, 600)]
    #[case(40, 600)]
    fn an_unresponsive_worker_gets_longer_each_attempt(#[case] failed: u32, #[case] seconds: u64) {
        assert_eq!(establish_timeout(failed), Duration::from_secs(seconds));
    }

    #[rstest]
    #[case::no_attempt_yet("bad", 0, "bad")]
    #[case::after_attempts(
        "connection refused",
        3,
        "connection refused; connection attempts: 3, next connection attempt: 2026-01-01T00:00:20Z"
    )]
    fn a_failed_connection_says_when_it_is_tried_again(
        #[case] why: &str,
        #[case] attempts: u32,
        #[case] message: &str,
    ) {
        let next: Timestamp = "2026-01-01T00:00:20.75Z".parse().expect("time");
        assert_eq!(failure_message(why, attempts, next), message);
    }
}
