//! One cluster of a [`super::TestEnv`] and the components that run against it: the manager's, or
//! a worker's. Components are tasks; stopping one aborts it, as killing its process would.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use controller::admissionchecks::multikueue::connect::WorkerAccess;
use fake_apiserver::{FakeApiServer, Faults};
use futures::future::BoxFuture;
use jiff::Timestamp;

use super::{Component, ComponentContext, EnvError, lock};
use crate::cluster::{Cluster, EmbeddedCluster};
use crate::world::World;

struct Running {
    component: Arc<dyn Component>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// Why the last run ended on its own, if it did.
    failure: Arc<Mutex<Option<String>>>,
}

/// A cluster (its fake API server) and its components.
pub struct ClusterEnv {
    /// `None` for the manager, the environment's own cluster.
    worker: Option<String>,
    start: Timestamp,
    cluster: Arc<EmbeddedCluster>,
    /// How its components reach worker clusters.
    reach: WorkerAccess,
    components: Mutex<BTreeMap<String, Running>>,
}

impl ClusterEnv {
    pub(super) fn new(
        worker: Option<String>,
        start: Timestamp,
        server: FakeApiServer,
        reach: WorkerAccess,
        components: Vec<Arc<dyn Component>>,
    ) -> Result<Self, EnvError> {
        let mut running = BTreeMap::new();
        for component in components {
            let name = component.name().to_string();
            if running.contains_key(&name) {
                return Err(EnvError::DuplicateComponent(name));
            }
            running.insert(
                name,
                Running {
                    component,
                    task: None,
                    failure: Arc::new(Mutex::new(None)),
                },
            );
        }
        Ok(ClusterEnv {
            worker,
            start,
            cluster: Arc::new(EmbeddedCluster::new(server)),
            reach,
            components: Mutex::new(running),
        })
    }

    /// The worker's name; `None` for the manager.
    pub fn worker_name(&self) -> Option<&str> {
        self.worker.as_deref()
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

    /// Faults of this cluster's API server: every client of it sees them, its own components too.
    pub fn faults(&self) -> &Faults {
        self.cluster.server().faults()
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
        self.start_inner(name).map_err(|e| self.on_worker(e))
    }

    fn start_inner(&self, name: &str) -> Result<(), EnvError> {
        let client = self.cluster.component_client(name);
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
        let ctx = ComponentContext {
            client,
            start_wall,
            start,
        };
        let run = running.component.run_with_workers(ctx, self.reach.clone());
        running.task = Some(tokio::spawn(async move {
            if let Err(e) = run.await {
                *lock(&failure) = Some(e);
            }
        }));
        Ok(())
    }

    /// Start every component, in name order.
    pub(super) fn start_all(&self) -> Result<(), EnvError> {
        for name in self.component_names() {
            self.start(&name)?;
        }
        Ok(())
    }

    /// Stop a running component, as if its process were killed.
    pub async fn stop(&self, name: &str) -> Result<(), EnvError> {
        let task = {
            let mut components = self.lock();
            let running = named(&mut components, name).map_err(|e| self.on_worker(e))?;
            running.task.take().ok_or_else(|| {
                self.on_worker(EnvError::ComponentState {
                    name: name.into(),
                    state: "is not running",
                })
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
                return Err(self.on_worker(EnvError::ComponentFailed {
                    name: name.clone(),
                    error,
                }));
            }
        }
        Ok(())
    }

    /// A worker's errors say which worker.
    fn on_worker(&self, error: EnvError) -> EnvError {
        match &self.worker {
            Some(worker) => EnvError::OnWorker {
                worker: worker.clone(),
                error: Box::new(error),
            },
            None => error,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Running>> {
        lock(&self.components)
    }
}

impl Drop for ClusterEnv {
    fn drop(&mut self) {
        for running in self.lock().values_mut() {
            if let Some(task) = running.task.take() {
                task.abort();
            }
        }
    }
}

/// A worker is a world of its own for the steps that address it.
impl World for ClusterEnv {
    fn cluster(&self) -> Arc<dyn Cluster> {
        ClusterEnv::cluster(self)
    }
    fn start_time(&self) -> Timestamp {
        self.start
    }
    fn stop<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), EnvError>> {
        Box::pin(ClusterEnv::stop(self, name))
    }
    fn start(&self, name: &str) -> Result<(), EnvError> {
        ClusterEnv::start(self, name)
    }
    fn check_components(&self) -> Result<(), EnvError> {
        ClusterEnv::check_components(self)
    }
}

/// The component called `name`, or an error listing the ones there are.
fn named<'a>(
    components: &'a mut BTreeMap<String, Running>,
    name: &str,
) -> Result<&'a mut Running, EnvError> {
    let known = if components.is_empty() {
        "none".to_string()
    } else {
        components.keys().cloned().collect::<Vec<_>>().join(", ")
    };
    components
        .get_mut(name)
        .ok_or_else(|| EnvError::UnknownComponent {
            name: name.into(),
            known,
        })
}
