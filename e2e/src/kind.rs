//! The kind backend: the kind CLI, driven through `duct`. A run creates one cluster with
//! Tollgate's configuration, applies the CRDs, runs the scenarios, exports kind's logs into the
//! run's folder and deletes the cluster (unless kept).
//!
//! The configuration leaves off what would fight the fake Nodes and the job runner, as the
//! reference control plane does: the Job and node lifecycle controllers, and the
//! `TaintNodesByCondition` admission plugin.

use std::path::{Path, PathBuf};

/// How to make the cluster.
#[derive(Clone, Debug)]
pub struct KindOptions {
    /// The cluster's name (`kind create cluster --name`).
    pub name: String,
    /// The kind executable (default: `kind` on PATH).
    pub binary: PathBuf,
    /// A node image (`--image`), e.g. `kindest/node:v1.37.2`; default: kind's own.
    pub image: Option<String>,
    /// Leave the cluster running after the run.
    pub keep: bool,
}

impl Default for KindOptions {
    fn default() -> Self {
        KindOptions {
            name: "tollgate-e2e".into(),
            binary: PathBuf::from("kind"),
            image: None,
            keep: false,
        }
    }
}

/// kind's cluster configuration for Tollgate's worlds (kubeadm v1beta4 patches).
pub fn cluster_config() -> String {
    let controllers = format!(
        "*,{}",
        control_plane::FAKE_NODES_DISABLED_CONTROLLERS
            .iter()
            .map(|c| format!("-{c}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let plugins = control_plane::FAKE_NODES_DISABLED_ADMISSION_PLUGINS.join(",");
    format!(
        r#"kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
  - role: control-plane
kubeadmConfigPatches:
  - |
    kind: ClusterConfiguration
    apiServer:
      extraArgs:
        - name: disable-admission-plugins
          value: "{plugins}"
    controllerManager:
      extraArgs:
        - name: controllers
          value: "{controllers}"
"#
    )
}

/// A kind cluster made for a run.
pub struct KindCluster {
    options: KindOptions,
    dir: PathBuf,
    kubeconfig: PathBuf,
}

impl KindCluster {
    /// `kind create cluster` with Tollgate's configuration, its kubeconfig written into `dir`.
    pub fn create(options: &KindOptions, dir: &Path) -> Result<Self, String> {
        let config = dir.join("kind-config.yaml");
        std::fs::write(&config, cluster_config())
            .map_err(|e| format!("{}: {e}", config.display()))?;
        let kubeconfig = dir.join("kubeconfig");
        let mut args: Vec<std::ffi::OsString> = vec![
            "create".into(),
            "cluster".into(),
            "--name".into(),
            options.name.clone().into(),
            "--config".into(),
            config.into(),
            "--kubeconfig".into(),
            kubeconfig.clone().into(),
            "--wait".into(),
            "5m".into(),
        ];
        if let Some(image) = &options.image {
            args.extend(["--image".into(), image.into()]);
        }
        kind(options, args, "creating the kind cluster")?;
        if !kubeconfig.is_file() {
            return Err(format!(
                "kind created cluster {} but wrote no kubeconfig at {}",
                options.name,
                kubeconfig.display()
            ));
        }
        Ok(KindCluster {
            options: options.clone(),
            dir: dir.to_path_buf(),
            kubeconfig,
        })
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// Export kind's logs into the run's folder, then delete the cluster unless it is kept.
    pub fn finish(self) -> Result<(), String> {
        let logs = self.dir.join("kind-logs");
        let exported = kind(
            &self.options,
            vec![
                "export".into(),
                "logs".into(),
                logs.into(),
                "--name".into(),
                self.options.name.clone().into(),
            ],
            "exporting kind's logs",
        );
        if self.options.keep {
            eprintln!(
                "kept kind cluster {} (kubeconfig: {}); delete it with: kind delete cluster --name {}",
                self.options.name,
                self.kubeconfig.display(),
                self.options.name
            );
            return exported;
        }
        let deleted = kind(
            &self.options,
            vec![
                "delete".into(),
                "cluster".into(),
                "--name".into(),
                self.options.name.clone().into(),
            ],
            "deleting the kind cluster",
        );
        exported.and(deleted)
    }
}

/// Run kind; a missing binary or a failure is one sentence with what kind said.
fn kind(options: &KindOptions, args: Vec<std::ffi::OsString>, doing: &str) -> Result<(), String> {
    // As an OsStr, not a Path: duct runs a relative Path as `./kind` instead of looking on PATH.
    let out = duct::cmd(options.binary.as_os_str(), args)
        .stderr_to_stdout()
        .stdout_capture()
        .unchecked()
        .run()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "{doing}: `{}` was not found: install kind (it needs Docker), or run `cargo xtask e2e --control-plane` instead",
                    options.binary.display()
                )
            } else {
                format!("{doing}: {e}")
            }
        })?;
    if !out.status.success() {
        return Err(format!(
            "{doing}: kind exited with {}:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout).trim_end()
        ));
    }
    Ok(())
}
