//! `TestEnv`: one fake API server with the project's CRDs, and the components a test asks for,
//! in this process. Under a paused tokio runtime every wait is virtual and two runs are identical.
//!
//! ```no_run
//! # async fn demo() -> Result<(), e2e::EnvError> {
//! use std::time::Duration;
//!
//! // In a `#[tokio::test(start_paused = true)]`:
//! let env = e2e::TestEnv::builder().build()?;
//! let client = env.client(); // a kube::Client in-process
//! env.advance(Duration::from_secs(30 * 60)).await; // instant under a paused runtime
//! # Ok(()) }
//! ```
//!
//! A MultiKueue world adds worker clusters by name, each a fake API server of its own with its
//! own components, all on the one virtual clock. The manager (the environment's own cluster)
//! reaches them through kubeconfig Secrets that resolve in process (see
//! [`crate::harness::network`]):
//!
//! ```no_run
//! # use std::sync::Arc;
//! # async fn demo() -> Result<(), e2e::EnvError> {
//! use e2e::harness::ControllerComponent;
//! let controller = || Arc::new(ControllerComponent::new(Default::default())) as Arc<dyn e2e::Component>;
//! let env = e2e::TestEnv::builder()
//!     .component(controller())
//!     .worker("worker-1", [controller()])
//!     .worker("worker-2", [controller()])
//!     .start()
//!     .await?;
//! let worker = env.worker_client("worker-1")?;
//! env.link("worker-2")?.partition(e2e::harness::Cut::Hang, None);
//! # Ok(()) }
//! ```

pub(crate) mod bootstrap;
mod members;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use controller::admissionchecks::multikueue::connect::WorkerAccess;
use fake_apiserver::{FakeApiServer, Faults};
use futures::future::BoxFuture;
use jiff::Timestamp;

use crate::cluster::Cluster;
use crate::harness::kubeconfig::check_worker_name;
use crate::harness::{InProcessNetwork, Link};

pub use members::ClusterEnv;

/// Where virtual time starts unless a test says otherwise: fixed, so traces are byte-identical.
pub const DEFAULT_START: &str = "2026-01-01T00:00:00Z";
/// Seed of the fake API server's uids and generated names.
pub const DEFAULT_SEED: u64 = 1;
/// What steps may call the manager's cluster when they name it; no worker may be called so.
pub const MANAGER: &str = "manager";

/// Something that runs beside the API server as an ordinary client: the controller, the fake
/// autoscaler, a fake worker cluster. `run` works until it is stopped (its task aborted) or fails.
pub trait Component: Send + Sync {
    fn name(&self) -> &str;
    fn run(&self, ctx: ComponentContext) -> BoxFuture<'static, Result<(), String>>;

    /// `run`, for a component that may reach worker clusters (a MultiKueue manager): `workers` is
    /// how, in process in an embedded world. The environment starts every component this way;
    /// those that never reach another cluster ignore it.
    fn run_with_workers(
        &self,
        ctx: ComponentContext,
        workers: WorkerAccess,
    ) -> BoxFuture<'static, Result<(), String>> {
        let _ = workers;
        self.run(ctx)
    }

    /// The namespace this component reads worker kubeconfig Secrets from, if it manages workers
    /// (the controller's Configuration `namespace`). The environment writes them there.
    fn secrets_namespace(&self) -> Option<String> {
        None
    }
}

/// What a component is given to run: a client, and the world's clock (wall time `start_wall` at
/// tokio instant `start`), so its timestamps and timers follow the same virtual time as the server.
#[derive(Clone)]
pub struct ComponentContext {
    pub client: kube::Client,
    pub start_wall: Timestamp,
    pub start: tokio::time::Instant,
}

#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error("starting the fake API server: {0}")]
    Server(#[from] fake_apiserver::StartError),
    #[error("no component named `{name}` (running: {known})")]
    UnknownComponent { name: String, known: String },
    #[error("two components are named `{0}`")]
    DuplicateComponent(String),
    #[error("component `{name}` {state}")]
    ComponentState { name: String, state: &'static str },
    #[error("component `{name}` failed: {error}")]
    ComponentFailed { name: String, error: String },
    #[error("no worker cluster named `{name}` (workers: {known})")]
    UnknownWorker { name: String, known: String },
    #[error("{0}")]
    BadWorker(String),
    #[error("worker {worker}: {error}")]
    OnWorker {
        worker: String,
        error: Box<EnvError>,
    },
    #[error(
        "worker clusters need `TestEnvBuilder::start().await`: their kubeconfig Secrets are \
         written through the manager's API before its components start"
    )]
    WorkersNeedStart,
    #[error("setting up the workers' kubeconfigs: {0}")]
    Kubeconfigs(String),
}

/// Configures a [`TestEnv`].
pub struct TestEnvBuilder {
    start: Timestamp,
    seed: u64,
    crds: bool,
    components: Vec<Arc<dyn Component>>,
    workers: Vec<(String, Vec<Arc<dyn Component>>)>,
    kubeconfig_dir: Option<PathBuf>,
}

impl TestEnvBuilder {
    /// Where the virtual clock starts.
    pub fn start_time(mut self, start: Timestamp) -> Self {
        self.start = start;
        self
    }

    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Leave out the project's CRDs (they are installed by default).
    pub fn without_crds(mut self) -> Self {
        self.crds = false;
        self
    }

    /// Start this component with the environment, against the manager's cluster.
    pub fn component(mut self, component: Arc<dyn Component>) -> Self {
        self.components.push(component);
        self
    }

    /// A worker cluster called `name` (a DNS label), with its own API server (same start time,
    /// CRDs, and a seed derived from the environment's and its name) and these components.
    pub fn worker(
        mut self,
        name: &str,
        components: impl IntoIterator<Item = Arc<dyn Component>>,
    ) -> Self {
        self.workers
            .push((name.to_string(), components.into_iter().collect()));
        self
    }

    /// Also write each worker's kubeconfig to `dir/<worker>`, and let the manager read
    /// `locationType: Path` kubeconfigs from `dir`.
    pub fn kubeconfig_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.kubeconfig_dir = Some(dir.into());
        self
    }

    /// Start the API server and the components. Needs a tokio runtime; for virtual time, a paused
    /// one (`#[tokio::test(start_paused = true)]`). Worlds with workers use [`Self::start`].
    pub fn build(self) -> Result<TestEnv, EnvError> {
        if !self.workers.is_empty() {
            return Err(EnvError::WorkersNeedStart);
        }
        let env = self.assemble()?;
        env.start_components()?;
        Ok(env)
    }

    /// Start the API servers, write each worker's kubeconfig Secret into the manager's cluster,
    /// then start the components (the workers' first). Needs a tokio runtime, as [`Self::build`].
    pub async fn start(self) -> Result<TestEnv, EnvError> {
        let dir = self.kubeconfig_dir.clone();
        let env = self.assemble()?;
        let workers = env.worker_names();
        if !workers.is_empty() {
            bootstrap::write_secrets(&env.client(), &env.secrets_namespace, &workers)
                .await
                .map_err(EnvError::Kubeconfigs)?;
            if let Some(dir) = dir {
                bootstrap::write_files(&dir, &workers).map_err(EnvError::Kubeconfigs)?;
            }
        }
        env.start_components()?;
        Ok(env)
    }

    fn server(&self, seed: u64) -> Result<FakeApiServer, EnvError> {
        let mut server = FakeApiServer::builder().start_time(self.start).seed(seed);
        if self.crds {
            for (file, yaml) in api::CHECKED_IN_CRDS {
                server = server.crds_yaml(file, yaml);
            }
        }
        Ok(server.build()?)
    }

    /// Every cluster, with nothing started. The servers are built without awaiting, so their
    /// clocks share one anchor.
    fn assemble(self) -> Result<TestEnv, EnvError> {
        let network = InProcessNetwork::default();
        let mut links = BTreeMap::new();
        let mut workers = BTreeMap::new();
        for (name, components) in &self.workers {
            check_worker_name(name).map_err(EnvError::BadWorker)?;
            if name == MANAGER || workers.contains_key(name) {
                return Err(EnvError::BadWorker(format!(
                    "two clusters are named `{name}` (`{MANAGER}` is the manager's)"
                )));
            }
            let server = self.server(worker_seed(self.seed, name))?;
            let link = Link::default();
            network.add_worker(name, server.clone(), link.clone());
            links.insert(name.clone(), link);
            // A worker reaches no other cluster: its controller's MultiKueue finds nothing.
            let reach = self.access(InProcessNetwork::default());
            let member = ClusterEnv::new(
                Some(name.clone()),
                self.start,
                server,
                reach,
                components.clone(),
            )
            .map_err(|e| EnvError::OnWorker {
                worker: name.clone(),
                error: Box::new(e),
            })?;
            workers.insert(name.clone(), member);
        }
        let secrets_namespace = self
            .components
            .iter()
            .find_map(|c| c.secrets_namespace())
            .unwrap_or_else(|| api::config::Configuration::default().namespace);
        let manager = ClusterEnv::new(
            None,
            self.start,
            self.server(self.seed)?,
            self.access(network.clone()),
            self.components,
        )?;
        Ok(TestEnv {
            start: self.start,
            manager,
            workers,
            links,
            network,
            secrets_namespace,
        })
    }

    fn access(&self, network: InProcessNetwork) -> WorkerAccess {
        let mut access = WorkerAccess {
            connector: Arc::new(network),
            ..WorkerAccess::default()
        };
        if let Some(dir) = &self.kubeconfig_dir {
            access.kubeconfig_dir = dir.clone();
        }
        access
    }
}

/// A worker's seed: the environment's mixed with the worker's name (FNV-1a), so that clusters do
/// not hand out the same uids and a worker's uids do not change when another worker is added.
fn worker_seed(seed: u64, name: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash ^ seed
}

/// An embedded world: the manager's cluster and components, and its worker clusters. Dropping it
/// stops every component.
pub struct TestEnv {
    start: Timestamp,
    manager: ClusterEnv,
    workers: BTreeMap<String, ClusterEnv>,
    links: BTreeMap<String, Link>,
    network: InProcessNetwork,
    secrets_namespace: String,
}

impl TestEnv {
    pub fn builder() -> TestEnvBuilder {
        TestEnvBuilder {
            start: DEFAULT_START.parse().unwrap_or_default(),
            seed: DEFAULT_SEED,
            crds: true,
            components: Vec::new(),
            workers: Vec::new(),
            kubeconfig_dir: None,
        }
    }

    pub fn client(&self) -> kube::Client {
        self.manager.client()
    }

    pub fn cluster(&self) -> Arc<dyn Cluster> {
        self.manager.cluster()
    }

    pub fn server(&self) -> &FakeApiServer {
        self.manager.server()
    }

    pub fn faults(&self) -> &Faults {
        self.manager.faults()
    }

    /// When the environment started, on the virtual clock.
    pub fn start_time(&self) -> Timestamp {
        self.start
    }

    /// Virtual time since the environment started.
    pub fn elapsed(&self) -> Duration {
        let now = self.manager.cluster().now();
        now.duration_since(self.start).unsigned_abs()
    }

    /// Let `duration` of virtual time pass. Every timer due in between (controllers' requeues,
    /// backoffs, watch bookmarks) fires in order; under a paused runtime no real time passes.
    pub async fn advance(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }

    /// The manager's components.
    pub fn component_names(&self) -> Vec<String> {
        self.manager.component_names()
    }

    pub fn is_running(&self, name: &str) -> bool {
        self.manager.is_running(name)
    }

    /// Start a stopped component of the manager.
    pub fn start(&self, name: &str) -> Result<(), EnvError> {
        self.manager.start(name)
    }

    /// Stop a running component of the manager, as if its process were killed.
    pub async fn stop(&self, name: &str) -> Result<(), EnvError> {
        self.manager.stop(name).await
    }

    /// Stop and start a component of the manager: its in-memory state is lost, as in a real
    /// restart.
    pub async fn restart(&self, name: &str) -> Result<(), EnvError> {
        self.manager.restart(name).await
    }

    /// An error for the first component, of any cluster, whose run ended with a failure.
    pub fn check_components(&self) -> Result<(), EnvError> {
        self.manager.check_components()?;
        self.workers
            .values()
            .try_for_each(ClusterEnv::check_components)
    }

    /// The worker clusters, by name.
    pub fn worker_names(&self) -> Vec<String> {
        self.workers.keys().cloned().collect()
    }

    /// A worker cluster: its API server, faults and components.
    pub fn worker(&self, name: &str) -> Result<&ClusterEnv, EnvError> {
        self.workers
            .get(name)
            .ok_or_else(|| self.unknown_worker(name))
    }

    /// A client of a worker's API server, as its own components have (not through the manager's
    /// link to it).
    pub fn worker_client(&self, name: &str) -> Result<kube::Client, EnvError> {
        Ok(self.worker(name)?.client())
    }

    /// Faults of a worker's API server.
    pub fn worker_faults(&self, name: &str) -> Result<&Faults, EnvError> {
        Ok(self.worker(name)?.faults())
    }

    /// The manager's link to a worker: cut it, heal it, slow it down.
    pub fn link(&self, worker: &str) -> Result<&Link, EnvError> {
        self.links
            .get(worker)
            .ok_or_else(|| self.unknown_worker(worker))
    }

    /// How the manager's components reach the workers (what its controller is given).
    pub fn network(&self) -> &InProcessNetwork {
        &self.network
    }

    /// The namespace of the workers' kubeconfig Secrets in the manager's cluster.
    pub fn secrets_namespace(&self) -> &str {
        &self.secrets_namespace
    }

    fn start_components(&self) -> Result<(), EnvError> {
        for worker in self.workers.values() {
            worker.start_all()?;
        }
        self.manager.start_all()
    }

    fn unknown_worker(&self, name: &str) -> EnvError {
        EnvError::UnknownWorker {
            name: name.into(),
            known: if self.workers.is_empty() {
                "none".into()
            } else {
                self.worker_names().join(", ")
            },
        }
    }
}

/// A poisoned lock only means a component panicked; its data is still usable.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
