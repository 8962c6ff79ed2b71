//! Real clusters for the scenario engine: a [`RemoteCluster`] reached through a kubeconfig, on
//! real time and without faults, and a [`ProcessEnv`] that runs the scenario's components as
//! separate processes, each from its own binary, as a user would run them against that cluster.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use fake_apiserver::{ChangeFeed, Faults};
use futures::future::BoxFuture;
use jiff::Timestamp;
use serde_json::Value;

use crate::cluster::Cluster;
use crate::env::{EnvError, lock};
use crate::world::World;

/// A cluster reached through a kubeconfig: the reference control plane, kind, or any other.
pub struct RemoteCluster {
    backend: &'static str,
    kubeconfig: PathBuf,
    client: kube::Client,
}

impl RemoteCluster {
    /// A client for `kubeconfig`'s current context.
    pub async fn connect(backend: &'static str, kubeconfig: &Path) -> Result<Self, String> {
        let client = controller::connect(Some(kubeconfig), None)
            .await
            .map_err(|e| format!("connecting with {}: {e}", kubeconfig.display()))?;
        Ok(RemoteCluster {
            backend,
            kubeconfig: kubeconfig.to_path_buf(),
            client,
        })
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }
}

impl Cluster for RemoteCluster {
    fn backend(&self) -> &'static str {
        self.backend
    }
    fn client(&self) -> kube::Client {
        self.client.clone()
    }
    fn virtual_time(&self) -> bool {
        false
    }
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
    fn faults(&self) -> Option<&Faults> {
        None
    }
    fn observe(&self) -> Option<ChangeFeed> {
        None
    }
}

/// How to run one component as a process.
#[derive(Clone, Debug)]
pub struct ProcessSpec {
    pub program: PathBuf,
    pub args: Vec<String>,
}

/// Where the components' binaries are: beside this executable (`target/<profile>/`), or one
/// level up from a test binary in `deps/`.
pub fn component_binary(name: &str) -> Result<PathBuf, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = exe.parent().ok_or("the executable has no directory")?;
    [dir.join(name), dir.join("..").join(name)]
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| {
            format!(
                "the `{name}` binary is not built beside {}: run `cargo build --bins -p controller -p fake-autoscaler -p e2e` (cargo xtask e2e does)",
                dir.display()
            )
        })
}

/// The process for a scenario's `components.<name>` entry: its configuration goes to a file in
/// `dir`, and the binary reads it with `--config`, as a user would start it.
pub fn process_spec(
    name: &str,
    config: &Value,
    kubeconfig: &Path,
    dir: &Path,
) -> Result<ProcessSpec, String> {
    let write = |file: &str, value: &Value| -> Result<PathBuf, String> {
        let path = dir.join(file);
        let yaml = serde_yaml::to_string(value).map_err(|e| e.to_string())?;
        std::fs::write(&path, yaml).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(path)
    };
    let mut args = vec!["--kubeconfig".to_string(), kubeconfig.display().to_string()];
    let program = match name {
        "controller" => {
            // Checked as the embedded component would, so a bad one fails before anything runs.
            crate::harness::ControllerComponent::from_value(config)?;
            if let Some(c) = crate::harness::controller::configuration_document(config) {
                let path = write("controller-config.yaml", &c)?;
                args.extend(["--config".into(), path.display().to_string()]);
            }
            // Several runs may share the machine: any free port.
            args.extend(["--metrics-bind-address".into(), "127.0.0.1:0".into()]);
            component_binary("controller")?
        }
        "fake-autoscaler" => {
            let path = write("fake-autoscaler.yaml", config)?;
            args.extend(["--config".into(), path.display().to_string()]);
            component_binary("fake-autoscaler")?
        }
        "job-runner" => {
            crate::harness::JobRunner::from_value(config)?;
            let path = write("job-runner.yaml", config)?;
            args.extend(["--config".into(), path.display().to_string()]);
            component_binary("job-runner")?
        }
        other => {
            return Err(format!(
                "no binary runs component `{other}` on a real cluster"
            ));
        }
    };
    Ok(ProcessSpec { program, args })
}

struct Running {
    spec: ProcessSpec,
    log: PathBuf,
    child: Option<tokio::process::Child>,
}

/// A real cluster and the scenario's components as processes, and, for MultiKueue, its worker
/// clusters, each a `ProcessEnv` of its own. Dropping it kills them all.
pub struct ProcessEnv {
    cluster: Arc<RemoteCluster>,
    start: Timestamp,
    components: Mutex<BTreeMap<String, Running>>,
    workers: BTreeMap<String, ProcessEnv>,
}

impl ProcessEnv {
    /// Start every component; their output goes to `<logs>/<name>.log`.
    pub fn start_all(
        cluster: Arc<RemoteCluster>,
        specs: BTreeMap<String, ProcessSpec>,
        logs: &Path,
    ) -> Result<Self, EnvError> {
        let components = specs
            .into_iter()
            .map(|(name, spec)| {
                let log = logs.join(format!("{name}.log"));
                (
                    name,
                    Running {
                        spec,
                        log,
                        child: None,
                    },
                )
            })
            .collect();
        let env = ProcessEnv {
            cluster,
            start: Timestamp::now(),
            components: Mutex::new(components),
            workers: BTreeMap::new(),
        };
        let names: Vec<String> = lock(&env.components).keys().cloned().collect();
        for name in names {
            World::start(&env, &name)?;
        }
        Ok(env)
    }

    /// The worker clusters the scenario's `cluster:` steps address (their components already
    /// started).
    pub fn with_workers(mut self, workers: BTreeMap<String, ProcessEnv>) -> Self {
        self.workers = workers;
        self
    }

    /// Each component's log file.
    pub fn logs(&self) -> Vec<(String, PathBuf)> {
        lock(&self.components)
            .iter()
            .map(|(n, r)| (n.clone(), r.log.clone()))
            .collect()
    }
}

fn unknown(components: &BTreeMap<String, Running>, name: &str) -> EnvError {
    EnvError::UnknownComponent {
        name: name.into(),
        known: components.keys().cloned().collect::<Vec<_>>().join(", "),
    }
}

fn known_workers(workers: &BTreeMap<String, ProcessEnv>) -> String {
    if workers.is_empty() {
        return "none".into();
    }
    workers.keys().cloned().collect::<Vec<_>>().join(", ")
}

impl World for ProcessEnv {
    fn cluster(&self) -> Arc<dyn Cluster> {
        self.cluster.clone()
    }

    fn start_time(&self) -> Timestamp {
        self.start
    }

    fn stop<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), EnvError>> {
        Box::pin(async move {
            let child = {
                let mut components = lock(&self.components);
                if !components.contains_key(name) {
                    return Err(unknown(&components, name));
                }
                let running = components.get_mut(name).expect("checked above");
                running
                    .child
                    .take()
                    .ok_or_else(|| EnvError::ComponentState {
                        name: name.into(),
                        state: "is not running",
                    })?
            };
            // As if the process were killed: no chance to clean up.
            let mut child = child;
            let _ = child.kill().await;
            Ok(())
        })
    }

    fn start(&self, name: &str) -> Result<(), EnvError> {
        let mut components = lock(&self.components);
        let Some(running) = components.get_mut(name) else {
            return Err(unknown(&components, name));
        };
        if running.child.is_some() {
            return Err(EnvError::ComponentState {
                name: name.into(),
                state: "is already running",
            });
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&running.log)
            .map_err(|e| EnvError::ComponentFailed {
                name: name.into(),
                error: format!("{}: {e}", running.log.display()),
            })?;
        let err = log.try_clone().map_err(|e| EnvError::ComponentFailed {
            name: name.into(),
            error: e.to_string(),
        })?;
        let child = tokio::process::Command::new(&running.spec.program)
            .args(&running.spec.args)
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(err)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| EnvError::ComponentFailed {
                name: name.into(),
                error: format!("starting {}: {e}", running.spec.program.display()),
            })?;
        running.child = Some(child);
        Ok(())
    }

    fn worker_names(&self) -> Vec<String> {
        self.workers.keys().cloned().collect()
    }

    fn worker(&self, name: &str) -> Result<&dyn World, EnvError> {
        match self.workers.get(name) {
            Some(w) => Ok(w),
            None => Err(EnvError::UnknownWorker {
                name: name.into(),
                known: known_workers(&self.workers),
            }),
        }
    }

    /// Every cluster's components: a worker's that ended fails the step as the manager's would.
    fn check_components(&self) -> Result<(), EnvError> {
        for (worker, env) in &self.workers {
            env.check_components().map_err(|error| EnvError::OnWorker {
                worker: worker.clone(),
                error: Box::new(error),
            })?;
        }
        for (name, running) in lock(&self.components).iter_mut() {
            if let Some(child) = &mut running.child
                && let Ok(Some(status)) = child.try_wait()
            {
                let log = std::fs::read_to_string(&running.log).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(10).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                return Err(EnvError::ComponentFailed {
                    name: name.clone(),
                    error: format!(
                        "exited ({status}); the end of its log:\n{}",
                        tail.join("\n")
                    ),
                });
            }
        }
        Ok(())
    }
}
