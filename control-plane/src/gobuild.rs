//! `cargo xtask control-plane build`: the binaries, built with the go command from the module in
//! `tools/control-plane/`, whose `go.mod` and `go.sum` pin every upstream module. Nothing but the
//! go command fetches anything, and it reuses the machine's module and build caches.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::Error;
use crate::binaries::{Component, workspace_root};

/// The Go module that pins the upstream versions.
pub fn module_dir() -> PathBuf {
    workspace_root().join("tools/control-plane")
}

/// The package each binary is built from.
pub fn package(component: Component) -> &'static str {
    match component {
        Component::Etcd => "go.etcd.io/etcd/server/v3",
        Component::ApiServer => "k8s.io/kubernetes/cmd/kube-apiserver",
        Component::ControllerManager => "k8s.io/kubernetes/cmd/kube-controller-manager",
        Component::Scheduler => "k8s.io/kubernetes/cmd/kube-scheduler",
    }
}

/// The version of a module `go.mod` requires (`require k8s.io/kubernetes v1.37.2`).
pub fn required_version(go_mod: &str, module: &str) -> Option<String> {
    go_mod.lines().find_map(|line| {
        let mut words = line.trim().trim_start_matches("require").split_whitespace();
        (words.next() == Some(module))
            .then(|| words.next().map(str::to_string))
            .flatten()
    })
}

/// The Kubernetes version the module pins.
pub fn kubernetes_version() -> Result<String, Error> {
    let path = module_dir().join("go.mod");
    let go_mod = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    required_version(&go_mod, "k8s.io/kubernetes").ok_or_else(|| {
        Error::io(
            &path,
            std::io::Error::other("it requires no k8s.io/kubernetes version"),
        )
    })
}

/// The linker flags upstream's build sets, so that `/version` and `--version` tell the truth.
fn ldflags(version: &str) -> String {
    let (major, minor) = {
        let mut parts = version.trim_start_matches('v').split('.');
        (
            parts.next().unwrap_or("0").to_string(),
            parts.next().unwrap_or("0").to_string(),
        )
    };
    let mut flags = vec!["-s".to_string(), "-w".to_string()];
    for pkg in [
        "k8s.io/component-base/version",
        "k8s.io/client-go/pkg/version",
    ] {
        flags.push(format!("-X {pkg}.gitVersion={version}"));
        flags.push(format!("-X {pkg}.gitMajor={major}"));
        flags.push(format!("-X {pkg}.gitMinor={minor}"));
        flags.push(format!("-X {pkg}.gitTreeState=clean"));
    }
    flags.join(" ")
}

/// Whether the go command is on PATH.
pub fn have_go() -> bool {
    Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Build every component into `out` (envtest's layout: one directory of executables).
pub fn build(out: &Path) -> Result<(), Error> {
    if !have_go() {
        return Err(Error::NoGo);
    }
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let version = kubernetes_version()?;
    for component in Component::ALL {
        let target = out.join(component.binary());
        eprintln!("building {} ({})", component.binary(), package(component));
        let status = Command::new("go")
            .current_dir(module_dir())
            .args(["build", "-trimpath", "-ldflags"])
            .arg(ldflags(&version))
            .arg("-o")
            .arg(&target)
            .arg(package(component))
            .status()
            .map_err(|source| Error::Spawn {
                binary: "go".into(),
                source,
            })?;
        if !status.success() {
            return Err(Error::Build {
                binary: component.binary().into(),
                status: status.to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pinned_kubernetes_version_is_read_from_go_mod() {
        let go_mod = "module x\n\nrequire k8s.io/kubernetes v1.37.2\n\nrequire (\n\tgo.etcd.io/etcd/server/v3 v3.7.0\n)\n";
        assert_eq!(
            required_version(go_mod, "k8s.io/kubernetes").as_deref(),
            Some("v1.37.2")
        );
        assert_eq!(
            required_version(go_mod, "go.etcd.io/etcd/server/v3").as_deref(),
            Some("v3.7.0")
        );
        assert_eq!(required_version(go_mod, "k8s.io/api"), None);
    }

    #[test]
    fn the_checked_in_module_pins_a_1_37_kubernetes() {
        let v = kubernetes_version().expect("tools/control-plane/go.mod");
        assert!(v.starts_with("v1.37."), "{v}");
    }

    #[test]
    fn version_flags_name_major_and_minor() {
        let flags = ldflags("v1.37.2");
        assert!(flags.contains("-X k8s.io/component-base/version.gitVersion=v1.37.2"));
        assert!(flags.contains("-X k8s.io/component-base/version.gitMinor=37"));
        assert!(flags.contains("-X k8s.io/client-go/pkg/version.gitMajor=1"));
    }
}
