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

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fake_apiserver::{FakeApiServer, Faults};
use futures::future::BoxFuture;
use jiff::Timestamp;

use crate::cluster::{Cluster, EmbeddedCluster};

/// Where virtual time starts unless a test says otherwise: fixed, so traces are byte-identical.
pub const DEFAULT_START: &str = "2026-01-01T00:00:00Z";
/// Seed of the fake API server's uids and generated names.
pub const DEFAULT_SEED: u64 = 1;

/// Something that runs beside the API server as an ordinary client: the controller, the fake
/// autoscaler, a fake worker cluster. `run` works until it is stopped (its task aborted) or fails.
pub trait Component: Send + Sync {
    fn name(&self) -> &str;
    fn run(&self, ctx: ComponentContext) -> BoxFuture<'static, Result<(), String>>;
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
}

/// Configures a [`TestEnv`].
pub struct TestEnvBuilder {
    start: Timestamp,
    seed: u64,
    crds: bool,
    components: Vec<Arc<dyn Component>>,
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

    /// Start this component with the environment.
    pub fn component(mut self, component: Arc<dyn Component>) -> Self {
        self.components.push(component);
        self
    }

    /// Start the API server and the components. Needs a tokio runtime; for virtual time, a paused
    /// one (`#[tokio::test(start_paused = true)]`).
    pub fn build(self) -> Result<TestEnv, EnvError> {
        let mut server = FakeApiServer::builder()
            .start_time(self.start)
            .seed(self.seed);
        if self.crds {
            for (file, yaml) in api::CHECKED_IN_CRDS {
                server = server.crds_yaml(file, yaml);
            }
        }
        let cluster = Arc::new(EmbeddedCluster::new(server.build()?));
        let mut components = BTreeMap::new();
        for component in self.components {
            let name = component.name().to_string();
            if components.contains_key(&name) {
                return Err(EnvError::DuplicateComponent(name));
            }
            components.insert(name, Running::new(component));
        }
        let env = TestEnv {
            start: self.start,
            cluster,
            components: Mutex::new(components),
        };
        for name in env.component_names() {
            env.start(&name)?;
        }
        Ok(env)
    }
}

struct Running {
    component: Arc<dyn Component>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// Why the last run ended on its own, if it did.
    failure: Arc<Mutex<Option<String>>>,
}

impl Running {
    fn new(component: Arc<dyn Component>) -> Self {
        Running {
            component,
            task: None,
            failure: Arc::new(Mutex::new(None)),
        }
    }
}

/// An embedded cluster and its components. Dropping it stops them.
pub struct TestEnv {
    start: Timestamp,
    cluster: Arc<EmbeddedCluster>,
    components: Mutex<BTreeMap<String, Running>>,
}

impl TestEnv {
    pub fn builder() -> TestEnvBuilder {
        TestEnvBuilder {
            start: DEFAULT_START.parse().unwrap_or_default(),
            seed: DEFAULT_SEED,
            crds: true,
            components: Vec::new(),
        }
    }

    pub fn client(&self) -> kube::Client {
        self.cluster.client()
    }

    pub fn cluster(&self) -> Arc<dyn Cluster> {
        self.cluster.clone()
    }

    pub fn server(&self) -> &FakeApiServer {
        self.cluster.server()
    }

    pub fn faults(&self) -> &Faults {
        self.cluster.server().faults()
    }

    /// When the environment started, on the virtual clock.
    pub fn start_time(&self) -> Timestamp {
        self.start
    }

    /// Virtual time since the environment started.
    pub fn elapsed(&self) -> Duration {
        let now = self.cluster.now();
        now.duration_since(self.start).unsigned_abs()
    }

    /// Let `duration` of virtual time pass. Every timer due in between (controllers' requeues,
    /// backoffs, watch bookmarks) fires in order; under a paused runtime no real time passes.
    pub async fn advance(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }

    pub fn component_names(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    pub fn is_running(&self, name: &str) -> bool {
        self.lock()
            .get(name)
            .and_then(|r| r.task.as_ref())
            .is_some_and(|t| !t.is_finished())
    }

    /// Start a stopped component.
    pub fn start(&self, name: &str) -> Result<(), EnvError> {
        let client = self.client();
        let mut components = self.lock();
        let running = named(&mut components, name)?;
        if running.task.as_ref().is_some_and(|t| !t.is_finished()) {
            return Err(EnvError::ComponentState {
                name: name.into(),
                state: "is already running",
            });
        }
        *lock(&running.failure) = None;
        let failure = running.failure.clone();
        let (start_wall, start) = self.cluster.server().clock().anchor();
        let run = running.component.run(ComponentContext {
            client,
            start_wall,
            start,
        });
        running.task = Some(tokio::spawn(async move {
            if let Err(e) = run.await {
                *lock(&failure) = Some(e);
            }
        }));
        Ok(())
    }

    /// Stop a running component, as if its process were killed.
    pub async fn stop(&self, name: &str) -> Result<(), EnvError> {
        let task = {
            let mut components = self.lock();
            let running = named(&mut components, name)?;
            running
                .task
                .take()
                .ok_or_else(|| EnvError::ComponentState {
                    name: name.into(),
                    state: "is not running",
                })?
        };
        task.abort();
        let _ = task.await;
        Ok(())
    }

    /// Stop and start a component: its in-memory state is lost, as in a real restart.
    pub async fn restart(&self, name: &str) -> Result<(), EnvError> {
        self.stop(name).await?;
        self.start(name)
    }

    /// An error for the first component whose run ended with a failure.
    pub fn check_components(&self) -> Result<(), EnvError> {
        for (name, running) in self.lock().iter() {
            if let Some(error) = lock(&running.failure).clone() {
                return Err(EnvError::ComponentFailed {
                    name: name.clone(),
                    error,
                });
            }
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Running>> {
        lock(&self.components)
    }
}

impl Drop for TestEnv {
    fn drop(&mut self) {
        for running in self.lock().values_mut() {
            if let Some(task) = running.task.take() {
                task.abort();
            }
        }
    }
}

/// A poisoned lock only means a component panicked; its data is still usable.
pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The component called `name`, or an error listing the ones there are.
fn named<'a>(
    components: &'a mut BTreeMap<String, Running>,
    name: &str,
) -> Result<&'a mut Running, EnvError> {
    let known = known(components);
    components
        .get_mut(name)
        .ok_or_else(|| EnvError::UnknownComponent {
            name: name.into(),
            known,
        })
}

fn known(components: &BTreeMap<String, Running>) -> String {
    if components.is_empty() {
        return "none".into();
    }
    components.keys().cloned().collect::<Vec<_>>().join(", ")
}
