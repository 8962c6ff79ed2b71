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

/// The file name `go build -o DIR/` gives a package's executable: its last path element, or the
/// one before a major-version suffix (`go.etcd.io/etcd/server/v3` gives `server`).
fn go_output_name(package: &str) -> &str {
    let mut elems = package.rsplit('/');
    let last = elems.next().unwrap_or(package);
    let is_major_suffix =
        last.len() > 1 && last.starts_with('v') && last[1..].bytes().all(|b| b.is_ascii_digit());
    match elems.next() {
        Some(before) if is_major_suffix => before,
        _ => last,
    }
}

/// Build every component into `out` (envtest's layout: one directory of executables).
///
/// One go command builds all four: it compiles the packages they share once and keeps both cores
/// busy (four builds one after another took about 12 minutes cold on 2 cores, one about 10). The
/// executables land in a staging directory and are moved into place only when all were built, so
/// a failed build leaves the previous binaries as they were.
pub fn build(out: &Path) -> Result<(), Error> {
    if !have_go() {
        return Err(Error::NoGo);
    }
    let staging = out.join(".building");
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
    }
    std::fs::create_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
    let version = kubernetes_version()?;
    let packages = Component::ALL.map(package);
    eprintln!("building {} ({})", binaries_named(), packages.join(" "));
    let status = Command::new("go")
        .current_dir(module_dir())
        .args(["build", "-trimpath", "-ldflags"])
        .arg(ldflags(&version))
        .arg("-o")
        // The trailing separator makes `-o` a directory for several packages.
        .arg(format!("{}/", staging.display()))
        .args(packages)
        .status()
        .map_err(|source| Error::Spawn {
            binary: "go".into(),
            source,
        })?;
    if !status.success() {
        return Err(Error::Build {
            binary: binaries_named(),
            status: status.to_string(),
        });
    }
    for component in Component::ALL {
        let built = staging.join(go_output_name(package(component)));
        let target = out.join(component.binary());
        std::fs::rename(&built, &target).map_err(|e| Error::io(&built, e))?;
    }
    std::fs::remove_dir(&staging).map_err(|e| Error::io(&staging, e))
}

/// The components' executable names, for messages.
fn binaries_named() -> String {
    Component::ALL.map(Component::binary).join(", ")
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
    fn go_names_each_executable_after_its_package() {
        let names = Component::ALL.map(|c| go_output_name(package(c)));
        assert_eq!(
            names,
            [
                "server",
                "kube-apiserver",
                "kube-controller-manager",
                "kube-scheduler"
            ]
        );
        assert_eq!(go_output_name("example.com/tool/v10"), "tool");
        assert_eq!(go_output_name("example.com/v"), "v");
    }

    #[test]
    fn version_flags_name_major_and_minor() {
        let flags = ldflags("v1.37.2");
        assert!(flags.contains("-X k8s.io/component-base/version.gitVersion=v1.37.2"));
        assert!(flags.contains("-X k8s.io/component-base/version.gitMinor=37"));
        assert!(flags.contains("-X k8s.io/client-go/pkg/version.gitMajor=1"));
    }
}
