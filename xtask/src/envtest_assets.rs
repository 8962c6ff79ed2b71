//! `cargo xtask envtest-assets`: a `KUBEBUILDER_ASSETS` folder whose `kube-apiserver` and `etcd`
//! are the fake API server. envtest starts the programs of that folder by name; the binary reads
//! its name and takes their flags (fake-apiserver's `envtest` module).

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// The names envtest starts, each a link to the fake's binary.
const PROGRAMS: [&str; 2] = ["kube-apiserver", "etcd"];

pub fn run(cargo: Command, out: Option<PathBuf>, profile: &str) -> Result<()> {
    let out = build_and_link(cargo, out, profile)?;
    eprintln!(
        "envtest's kube-apiserver and etcd in {} are the fake API server; set:",
        out.display()
    );
    println!("KUBEBUILDER_ASSETS={}", out.display());
    Ok(())
}

/// Builds the fake's binary and makes the assets folder (`out`, or envtest-assets/ in the target
/// directory); returns the folder's absolute path.
pub fn build_and_link(mut cargo: Command, out: Option<PathBuf>, profile: &str) -> Result<PathBuf> {
    cargo.args([
        "build",
        "--package",
        "fake-apiserver",
        "--bin",
        "fake-apiserver",
        "--profile",
        profile,
        "--message-format=json-render-diagnostics",
    ]);
    let binary = built_executable(cargo)?;
    let out = match out {
        Some(dir) => dir,
        // <target>/<profile>/fake-apiserver → <target>/envtest-assets
        None => binary
            .parent()
            .and_then(Path::parent)
            .context("the binary's path has no target directory")?
            .join("envtest-assets"),
    };
    link_assets(&binary, &out)?;
    out.canonicalize()
        .with_context(|| format!("resolving {}", out.display()))
}

/// Runs the build and reads the binary's path from cargo's JSON messages.
fn built_executable(mut cargo: Command) -> Result<PathBuf> {
    let mut child = cargo
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {cargo:?}"))?;
    let stdout = child.stdout.take().context("cargo's stdout")?;
    let mut executable = None;
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.context("reading cargo's messages")?;
        if let Some(path) = executable_of(&line) {
            executable = Some(path);
        }
    }
    let status = child.wait().context("waiting for cargo")?;
    if !status.success() {
        bail!("building the fake API server failed: {status}");
    }
    executable.context("cargo built no fake-apiserver executable")
}

/// The executable a `compiler-artifact` message of the fake's binary names.
fn executable_of(message: &str) -> Option<PathBuf> {
    let msg: serde_json::Value = serde_json::from_str(message).ok()?;
    (msg["reason"] == "compiler-artifact" && msg["target"]["name"] == "fake-apiserver")
        .then(|| msg["executable"].as_str().map(PathBuf::from))
        .flatten()
}

/// Makes `out` with a link per program to `binary`, replacing links (or files) already there.
fn link_assets(binary: &Path, out: &Path) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("making {}", out.display()))?;
    for name in PROGRAMS {
        let link = out.join(name);
        match std::fs::remove_file(&link) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("replacing {}", link.display())),
        }
        std::os::unix::fs::symlink(binary, &link)
            .with_context(|| format!("linking {} to {}", link.display(), binary.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binary_is_read_from_cargos_messages() {
        let artifact = r#"{"reason":"compiler-artifact","target":{"name":"fake-apiserver"},"executable":"/t/debug/fake-apiserver"}"#;
        assert_eq!(
            executable_of(artifact),
            Some(PathBuf::from("/t/debug/fake-apiserver"))
        );
        let library = r#"{"reason":"compiler-artifact","target":{"name":"fake_apiserver"},"executable":null}"#;
        assert_eq!(executable_of(library), None);
        assert_eq!(executable_of(r#"{"reason":"build-finished"}"#), None);
        assert_eq!(executable_of("not json"), None);
    }

    #[test]
    fn links_are_made_and_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("assets");
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "").unwrap();
        std::fs::write(&b, "").unwrap();
        link_assets(&a, &out).unwrap();
        link_assets(&b, &out).unwrap();
        for name in PROGRAMS {
            assert_eq!(std::fs::read_link(out.join(name)).unwrap(), b);
        }
    }
}
