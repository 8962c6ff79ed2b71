//! Where the control plane's binaries are: envtest's layout, a directory of plain executables.
//!
//! `KUBEBUILDER_ASSETS` wins, as in the Go world (setup-envtest fills such a directory with `etcd`,
//! `kube-apiserver` and `kubectl`); otherwise `target/control-plane/bin/`, where
//! `cargo xtask control-plane build` puts what it builds from `tools/control-plane/`.

use std::path::{Path, PathBuf};

use crate::Error;

/// The environment variable envtest reads.
pub const ASSETS_VAR: &str = "KUBEBUILDER_ASSETS";

/// One binary of the control plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    Etcd,
    ApiServer,
    ControllerManager,
    Scheduler,
}

impl Component {
    pub const ALL: [Component; 4] = [
        Component::Etcd,
        Component::ApiServer,
        Component::ControllerManager,
        Component::Scheduler,
    ];

    /// The executable's file name, as envtest and upstream's release tarballs name it.
    pub fn binary(self) -> &'static str {
        match self {
            Component::Etcd => "etcd",
            Component::ApiServer => "kube-apiserver",
            Component::ControllerManager => "kube-controller-manager",
            Component::Scheduler => "kube-scheduler",
        }
    }
}

/// The workspace's root: this crate sits one level below it.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate lives inside the workspace")
        .to_path_buf()
}

/// Where `cargo xtask control-plane build` puts the binaries.
pub fn build_dir() -> PathBuf {
    workspace_root().join("target/control-plane/bin")
}

/// The directories searched, in order: `KUBEBUILDER_ASSETS` (when set), then the build directory.
pub fn search_path() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(assets) = std::env::var_os(ASSETS_VAR).filter(|v| !v.is_empty()) {
        dirs.push(PathBuf::from(assets));
    }
    dirs.push(build_dir());
    dirs
}

/// Paths to the binaries a control plane needs.
#[derive(Clone, Debug)]
pub struct Binaries {
    dirs: Vec<PathBuf>,
}

impl Binaries {
    /// Look in the usual places (see [`search_path`]).
    pub fn locate() -> Self {
        Binaries {
            dirs: search_path(),
        }
    }

    /// Look only in `dir`.
    pub fn in_dir(dir: impl Into<PathBuf>) -> Self {
        Binaries {
            dirs: vec![dir.into()],
        }
    }

    /// The first directory that has `component`, or an error saying what to run.
    pub fn path(&self, component: Component) -> Result<PathBuf, Error> {
        self.dirs
            .iter()
            .map(|d| d.join(component.binary()))
            .find(|p| p.is_file())
            .ok_or_else(|| Error::MissingBinary {
                binary: component.binary(),
                searched: self
                    .dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// Whether every binary of `components` is there.
    pub fn has_all(&self, components: &[Component]) -> bool {
        components.iter().all(|c| self.path(*c).is_ok())
    }
}
