//! Running scenarios on real clusters: the reference control plane (a fresh one per scenario,
//! started and stopped by the run), any cluster through a kubeconfig, or kind. Time is real there:
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
    Ran { outcome: Outcome, dir: PathBuf },
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

    /// Run one scenario (or say why it cannot run here).
    pub async fn run(&self, scenario: &Scenario) -> Result<RealOutcome, String> {
        if let Some(reason) = scenario.real_time_blocker() {
            return Ok(RealOutcome::Skipped(reason));
        }
        let dir = self.dir.join(&scenario.name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let control_plane = match self.backend {
            Backend::ControlPlane => Some(
                control_plane::ControlPlane::start(
                    &control_plane::Binaries::locate(),
                    control_plane::Options {
                        crds: api::CHECKED_IN_CRDS
                            .iter()
                            .map(|(o, y)| (o.to_string(), y.to_string()))
                            .collect(),
                        ..control_plane::Options::new(dir.join("control-plane")).for_fake_nodes()
                    },
                )
                .await
                .map_err(|e| e.to_string())?,
            ),
            _ => None,
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
        let mut specs = BTreeMap::new();
        for (name, config) in &scenario.components {
            specs.insert(name.clone(), process_spec(name, config, &kubeconfig, &dir)?);
        }
        let env = ProcessEnv::start_all(cluster.clone(), specs, &dir).map_err(|e| e.to_string())?;
        let outcome = run_in(&env, scenario).await;
        write(&dir.join("trace.yaml"), &outcome.trace.to_yaml());
        write(&dir.join("events.yaml"), &events(&cluster.client()).await);
        if control_plane.is_none() {
            // A shared cluster: take away what the scenario made while the controller still runs
            // to remove its finalizers.
            clean_up(&cluster.client(), scenario).await;
        }
        drop(env);
        drop(control_plane);
        Ok(RealOutcome::Ran { outcome, dir })
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
