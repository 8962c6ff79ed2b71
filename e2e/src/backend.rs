//! Running scenarios on real clusters: the reference control plane (a fresh one per scenario,
//! started and stopped by the run), any cluster through a kubeconfig, or kind. On the control
//! plane, a MultiKueue scenario's workers are fresh control planes too, each with its own
//! components as processes; the manager's controller reaches them over the network (TLS on
//! loopback) with the kubeconfigs their control planes wrote, given to it as an operator would:
//! Secrets in its namespace and files under its `--multikueue-kubeconfig-dir`. Time is real there:
//! a scenario that needs virtual time or faults is skipped with the reason, the components run as
//! processes, the trace is what watches saw, and the scenario's assertions decide. Snapshots are
//! compared only on the embedded backend.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DynamicObject, ListParams};

use crate::cluster::Cluster;
use crate::remote::{ProcessEnv, RemoteCluster, process_spec};
use crate::scenario::{Outcome, Scenario, run_in};

/// Which real cluster.
#[derive(Clone, Debug)]
pub enum Backend {
    /// The reference control plane (`cargo xtask control-plane build`), one per scenario.
    ControlPlane,
    /// A cluster that is already there.
    Kubeconfig(PathBuf),
    /// A kind cluster made for the run (see [`crate::kind`]).
    Kind(crate::kind::KindOptions),
}

impl Backend {
    pub fn name(&self) -> &'static str {
        match self {
            Backend::ControlPlane => "control-plane",
            Backend::Kubeconfig(_) => "kubeconfig",
            Backend::Kind(_) => "kind",
        }
    }
}

/// What one scenario gave on a real backend.
#[derive(Debug)]
pub enum RealOutcome {
    /// It ran; its trace and the components' logs are in `dir`.
    Ran { outcome: Box<Outcome>, dir: PathBuf },
    /// It cannot run on real time, and why.
    Skipped(String),
}

/// How long CRDs may take to be served.
const CRD_TIMEOUT: Duration = Duration::from_secs(60);

/// A run on one backend: kind's cluster lives as long as this; the control plane is made anew for
/// each scenario, so that no scenario sees another's objects.
pub struct Session {
    backend: Backend,
    dir: PathBuf,
    kind: Option<crate::kind::KindCluster>,
}

impl Session {
    /// Prepare a run writing into `dir` (kind: create the cluster).
    pub fn start(backend: Backend, dir: &Path) -> Result<Self, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let kind = match &backend {
            Backend::Kind(options) => Some(crate::kind::KindCluster::create(options, dir)?),
            _ => None,
        };
        Ok(Session {
            backend,
            dir: dir.to_path_buf(),
            kind,
        })
    }

    /// Collect what the run leaves behind (kind: logs, then delete the cluster unless kept).
    pub fn finish(self) -> Result<(), String> {
        match self.kind {
            Some(kind) => kind.finish(),
            None => Ok(()),
        }
    }

    /// Check before the first scenario that the cluster answers (a kubeconfig or kind backend),
    /// so that a wrong kubeconfig is one error, not one per scenario.
    pub async fn check(&self) -> Result<(), String> {
        let kubeconfig = match (&self.backend, &self.kind) {
            (Backend::Kubeconfig(path), _) => path.clone(),
            (_, Some(kind)) => kind.kubeconfig().to_path_buf(),
            _ => return Ok(()),
        };
        let cluster = RemoteCluster::connect(self.backend.name(), &kubeconfig).await?;
        let version = cluster.client().apiserver_version().await.map_err(|e| {
            format!(
                "the cluster of {} does not answer: {e}",
                kubeconfig.display()
            )
        })?;
        tracing::info!(version = %version.git_version, "cluster answers");
        Ok(())
    }

    /// Why `scenario` cannot run on this backend, if it cannot.
    pub fn blocker(&self, scenario: &Scenario) -> Option<String> {
        blocker(&self.backend, scenario)
    }

    /// Run one scenario (or say why it cannot run here).
    pub async fn run(&self, scenario: &Scenario) -> Result<RealOutcome, String> {
        if let Some(reason) = self.blocker(scenario) {
            return Ok(RealOutcome::Skipped(reason));
        }
        let dir = self.dir.join(&scenario.name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        // The manager's control plane and each worker's, started side by side.
        let (control_plane, workers) = match self.backend {
            Backend::ControlPlane => {
                let mut dirs = vec![dir.join("control-plane")];
                dirs.extend(
                    scenario
                        .workers
                        .keys()
                        .map(|w| dir.join(w).join("control-plane")),
                );
                let mut started =
                    futures::future::try_join_all(dirs.into_iter().map(start_control_plane))
                        .await
                        .map_err(|e| e.to_string())?
                        .into_iter();
                let manager = started.next();
                (
                    manager,
                    scenario.workers.keys().cloned().zip(started).collect(),
                )
            }
            _ => (None, Vec::new()),
        };
        let kubeconfig = match (&self.backend, &control_plane, &self.kind) {
            (_, Some(cp), _) => cp.kubeconfig().to_path_buf(),
            (Backend::Kubeconfig(path), _, _) => path.clone(),
            (_, _, Some(kind)) => kind.kubeconfig().to_path_buf(),
            _ => return Err("the backend has no cluster".into()),
        };
        let cluster = Arc::new(RemoteCluster::connect(self.backend.name(), &kubeconfig).await?);
        if control_plane.is_none() {
            control_plane::install_crds(&cluster.client(), &api::CHECKED_IN_CRDS, CRD_TIMEOUT)
                .await
                .map_err(|e| e.to_string())?;
        }
        // Workers first, so that they are up when the manager's controller first reaches them.
        let mut worker_envs = BTreeMap::new();
        for (name, cp) in &workers {
            worker_envs.insert(
                name.clone(),
                worker_env(scenario, name, cp, &dir.join(name)).await?,
            );
        }
        let mut specs = BTreeMap::new();
        for (name, config) in &scenario.components {
            let mut spec = process_spec(name, config, &kubeconfig, &dir)?;
            if name == "controller" && !workers.is_empty() {
                let kubeconfigs = dir.join("kubeconfigs");
                let namespace = secrets_namespace(config)?;
                introduce_workers(&cluster.client(), &namespace, &kubeconfigs, &workers).await?;
                spec.args.extend([
                    "--multikueue-kubeconfig-dir".into(),
                    kubeconfigs.display().to_string(),
                ]);
            }
            specs.insert(name.clone(), spec);
        }
        let env = ProcessEnv::start_all(cluster.clone(), specs, &dir)
            .map_err(|e| e.to_string())?
            .with_workers(worker_envs);
        let outcome = run_in(&env, scenario).await;
        write(&dir.join("trace.yaml"), &outcome.trace.to_yaml());
        write(&dir.join("events.yaml"), &events(&cluster.client()).await);
        for (name, cp) in &workers {
            if let Ok(client) = cp.client().await {
                write(&dir.join(name).join("events.yaml"), &events(&client).await);
            }
        }
        if control_plane.is_none() {
            // A shared cluster: take away what the scenario made while the controller still runs
            // to remove its finalizers.
            clean_up(&cluster.client(), scenario).await;
        }
        // The components before the clusters they talk to.
        drop(env);
        drop(workers);
        drop(control_plane);
        Ok(RealOutcome::Ran {
            outcome: Box::new(outcome),
            dir,
        })
    }
}

/// A fresh reference control plane with the CRDs, for Nodes without kubelets.
async fn start_control_plane(
    dir: PathBuf,
) -> Result<control_plane::ControlPlane, control_plane::Error> {
    control_plane::ControlPlane::start(
        &control_plane::Binaries::locate(),
        control_plane::Options {
            crds: api::CHECKED_IN_CRDS
                .iter()
                .map(|(o, y)| (o.to_string(), y.to_string()))
                .collect(),
            ..control_plane::Options::new(dir).for_fake_nodes()
        },
    )
    .await
}

/// A worker cluster with its own components as processes, their files and logs in `dir`.
async fn worker_env(
    scenario: &Scenario,
    worker: &str,
    cp: &control_plane::ControlPlane,
    dir: &Path,
) -> Result<ProcessEnv, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let cluster = Arc::new(RemoteCluster::connect("control-plane", cp.kubeconfig()).await?);
    let mut specs = BTreeMap::new();
    for (name, config) in scenario.workers.get(worker).into_iter().flatten() {
        let spec = process_spec(name, config, cp.kubeconfig(), dir)
            .map_err(|e| format!("workers.{worker}.components.{name}: {e}"))?;
        specs.insert(name.clone(), spec);
    }
    ProcessEnv::start_all(cluster, specs, dir).map_err(|e| format!("worker {worker}: {e}"))
}

/// The namespace a controller component reads worker kubeconfig Secrets from: its
/// Configuration's `namespace`.
fn secrets_namespace(config: &serde_json::Value) -> Result<String, String> {
    use crate::env::Component;
    let component = crate::harness::ControllerComponent::from_value(config)?;
    Ok(component
        .secrets_namespace()
        .unwrap_or_else(|| api::config::Configuration::default().namespace))
}

/// What an operator does before starting a MultiKueue manager: for each worker, a Secret named
/// after it in the controller's namespace holding the worker's kubeconfig under `kubeconfig`
/// (for `locationType: Secret`), and the same kubeconfig as `<kubeconfigs>/<worker>` (for
/// `locationType: Path`). See [`manager_kubeconfig`] for what the kubeconfig holds.
async fn introduce_workers(
    client: &kube::Client,
    namespace: &str,
    kubeconfigs: &Path,
    workers: &[(String, control_plane::ControlPlane)],
) -> Result<(), String> {
    std::fs::create_dir_all(kubeconfigs).map_err(|e| format!("{}: {e}", kubeconfigs.display()))?;
    let mut secrets = Vec::new();
    for (worker, cp) in workers {
        let file = kubeconfigs.join(worker);
        manager_kubeconfig(cp, &file)
            .await
            .map_err(|e| format!("worker {worker}: the manager's kubeconfig: {e}"))?;
        let bytes = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        secrets.push(crate::harness::kubeconfig::secret_holding(
            worker, namespace, bytes,
        ));
    }
    crate::env::bootstrap::create_secrets(client, namespace, &secrets).await
}

/// The ServiceAccount the manager acts as on a worker, in the worker's `kueue-system`.
const MANAGER_ACCOUNT: (&str, &str) = ("kueue-system", "multikueue-sa");

/// What the manager may do on a worker: the role Kueue's MultiKueue setup guide gives it for
/// batch/v1 Jobs, nothing more, so that a manager needing more fails here as it would for users.
const MANAGER_ROLE_RULES: &str = r#"
- {apiGroups: [batch], resources: [jobs], verbs: [create, delete, get, list, watch]}
- {apiGroups: [batch], resources: [jobs/status], verbs: [get]}
- {apiGroups: [kueue.x-k8s.io], resources: [workloads], verbs: [create, delete, get, list, watch]}
- {apiGroups: [kueue.x-k8s.io], resources: [workloads/status], verbs: [get, patch, update]}
"#;

/// Set a worker up for its manager as Kueue's guide does, and write the manager's kubeconfig for
/// it to `path`: a ServiceAccount bound to [`MANAGER_ROLE_RULES`], and a kubeconfig with the
/// worker's server (TLS on loopback, the CA as data) and a token of that account. MultiKueue's
/// checks accept it; the worker's RBAC decides what the manager may do.
async fn manager_kubeconfig(cp: &control_plane::ControlPlane, path: &Path) -> Result<(), String> {
    use k8s_openapi::api::authentication::v1::{TokenRequest, TokenRequestSpec};
    use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};
    use kube::api::PostParams;
    let client = cp.client().await.map_err(|e| e.to_string())?;
    let (namespace, account) = MANAGER_ACCOUNT;
    let rules: Vec<PolicyRule> =
        serde_yaml::from_str(MANAGER_ROLE_RULES).map_err(|e| e.to_string())?;
    let objects = serde_json::json!([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": account, "namespace": namespace}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": format!("{account}-role")}, "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": format!("{account}-crb")},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": format!("{account}-role")},
         "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}]},
    ]);
    let pp = PostParams::default();
    let parse = |i: usize| objects[i].clone();
    let created = async {
        let ns: Namespace = serde_json::from_value(parse(0))?;
        Api::<Namespace>::all(client.clone())
            .create(&pp, &ns)
            .await
            .map(drop)
            .or_else(exists)?;
        let sa: ServiceAccount = serde_json::from_value(parse(1))?;
        Api::<ServiceAccount>::namespaced(client.clone(), namespace)
            .create(&pp, &sa)
            .await?;
        let role: ClusterRole = serde_json::from_value(parse(2))?;
        Api::<ClusterRole>::all(client.clone())
            .create(&pp, &role)
            .await?;
        let binding: ClusterRoleBinding = serde_json::from_value(parse(3))?;
        Api::<ClusterRoleBinding>::all(client.clone())
            .create(&pp, &binding)
            .await?;
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
    };
    created.await.map_err(|e| e.to_string())?;
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            // A day: longer than any run.
            expiration_seconds: Some(86_400),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    let token = Api::<ServiceAccount>::namespaced(client, namespace)
        .create_token_request(account, &pp, &request)
        .await
        .map_err(|e| format!("a token for {namespace}/{account}: {e}"))?
        .status
        .and_then(|s| s.token)
        .ok_or("the TokenRequest came back without a token")?;
    cp.write_token_kubeconfig(path, &token)
        .map_err(|e| e.to_string())
}

/// An object that is already there is as good as created.
fn exists(e: kube::Error) -> Result<(), kube::Error> {
    match e {
        kube::Error::Api(s) if s.code == 409 => Ok(()),
        e => Err(e),
    }
}

fn write(path: &Path, text: &str) {
    if let Err(e) = std::fs::write(path, text) {
        tracing::warn!(path = %path.display(), error = %e, "could not write");
    }
}

/// Every Kubernetes Event in the cluster, as YAML, for the run's folder.
async fn events(client: &kube::Client) -> String {
    let api: Api<k8s_openapi::api::events::v1::Event> = Api::all(client.clone());
    match api.list(&ListParams::default()).await {
        Ok(list) => list
            .items
            .iter()
            .map(|e| {
                format!(
                    "- {{type: {}, reason: {}, regarding: {}/{}, note: {:?}}}\n",
                    e.type_.as_deref().unwrap_or(""),
                    e.reason.as_deref().unwrap_or(""),
                    e.regarding
                        .as_ref()
                        .and_then(|r| r.kind.as_deref())
                        .unwrap_or(""),
                    e.regarding
                        .as_ref()
                        .and_then(|r| r.name.as_deref())
                        .unwrap_or(""),
                    e.note.as_deref().unwrap_or("")
                )
            })
            .collect(),
        Err(e) => format!("# listing events failed: {e}\n"),
    }
}

/// Why `scenario` cannot run on `backend`, if it cannot.
pub fn blocker(backend: &Backend, scenario: &Scenario) -> Option<String> {
    if !scenario.workers.is_empty() && !matches!(backend, Backend::ControlPlane) {
        return Some(
            "it declares worker clusters, which run out of process only on the control-plane \
             backend (each worker its own reference control plane)"
                .into(),
        );
    }
    // Worker clusters are reference control planes of their own here: what else blocks is
    // the scenario's (its waits, its faults; a partition is a fault).
    let without_workers = Scenario {
        workers: BTreeMap::new(),
        ..scenario.clone()
    };
    without_workers.real_time_blocker()
}

/// Delete, last first, every object the scenario's steps name, with their dependents: the next
/// scenario on a shared cluster must not find them. What the components made without an owner
/// (the fake autoscaler's Nodes) stays.
async fn clean_up(client: &kube::Client, scenario: &Scenario) {
    let discovery = match kube::Discovery::new(client.clone()).run().await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(error = %e, "cleaning up: discovery failed");
            return;
        }
    };
    let mut objects: Vec<&serde_json::Value> = scenario
        .steps
        .iter()
        .flat_map(|s| s.try_.iter().chain(&s.finally))
        .flat_map(|op| op.action.written())
        .collect();
    objects.reverse();
    for obj in objects {
        let (Some(api_version), Some(kind), Some(name)) = (
            obj["apiVersion"].as_str(),
            obj["kind"].as_str(),
            obj["metadata"]["name"].as_str(),
        ) else {
            continue;
        };
        // A name pattern names a generated object, which goes with its owner.
        if crate::scenario::naming::is_pattern(name) {
            continue;
        }
        let Some((ar, caps)) = discovery
            .groups()
            .flat_map(|g| g.recommended_resources())
            .find(|(ar, _)| ar.api_version == api_version && ar.kind == kind)
        else {
            continue;
        };
        let api: Api<DynamicObject> = match caps.scope {
            kube::discovery::Scope::Cluster => Api::all_with(client.clone(), &ar),
            kube::discovery::Scope::Namespaced => Api::namespaced_with(
                client.clone(),
                obj["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or(&scenario.namespace),
                &ar,
            ),
        };
        // Background, so that a Job's Workload and pods go with it (batch/v1 orphans by default).
        let dp = kube::api::DeleteParams::background();
        let _ = api.delete(name, &dp).await;
    }
}
