//! Kueue's module made ready to test, as its Makefile would: a writable copy of the module the
//! go command downloads (the module cache is read-only), the CRDs with their webhook patches
//! (`compile-crd-manifests`), the CRDs of the job frameworks (`dep-crds`), and a test binary per
//! suite. The go command reuses its module and build caches, so a second run mostly links.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use super::Suite;

/// Kueue's module, prepared.
pub struct Prepared {
    /// Where the runs' reports and logs go.
    pub work: PathBuf,
    /// The writable copy of Kueue's module.
    pub module: PathBuf,
    bin: PathBuf,
}

impl Prepared {
    pub fn binary(&self, suite: &Suite) -> PathBuf {
        self.bin.join(format!("{}.test", suite.name))
    }
}

/// The file in the copy that says which version it is a copy of.
const COPIED_FROM: &str = ".tollgate-copied-from";

pub fn prepare(tools: &Path, work: &Path, suites: &[Suite]) -> Result<Prepared> {
    std::fs::create_dir_all(work).with_context(|| format!("making {}", work.display()))?;
    let work = work
        .canonicalize()
        .with_context(|| format!("resolving {}", work.display()))?;
    let bin = work.join("bin");
    std::fs::create_dir_all(&bin).with_context(|| format!("making {}", bin.display()))?;

    let (source, version) = downloaded_module(tools)?;
    let module = work.join("kueue");
    let copied = std::fs::read_to_string(module.join(COPIED_FROM)).ok();
    if copied.as_deref() != Some(version.as_str()) {
        eprintln!(
            "copying sigs.k8s.io/kueue@{version} from {}",
            source.display()
        );
        if module.exists() {
            std::fs::remove_dir_all(&module)
                .with_context(|| format!("removing {}", module.display()))?;
        }
        copy_writable(&source, &module)?;
        std::fs::write(module.join(COPIED_FROM), &version)?;
    }

    // kustomize at the version tools/kueue-suites/go.mod pins (Kueue's own pin lives in its
    // hack/tools module, which its module zip leaves out).
    let kustomize = bin.join("kustomize");
    go(tools)
        .args(["build", "-o"])
        .arg(&kustomize)
        .arg("sigs.k8s.io/kustomize/kustomize/v5")
        .quiet("building kustomize")?;

    // Kueue's own targets. `-o` takes `manifests` (controller-gen regenerating the CRD bases the
    // module already holds) and `kustomize` (an install from hack/tools) as done.
    Command::new("make")
        .current_dir(&module)
        .args(["-o", "manifests", "-o", "kustomize"])
        .arg(format!("KUSTOMIZE={}", kustomize.display()))
        .args(["compile-crd-manifests", "dep-crds"])
        .quiet("making Kueue's CRDs and dep-crds (make compile-crd-manifests dep-crds)")?;

    for suite in suites {
        eprintln!(
            "building the {} suite (test/integration/{})",
            suite.name, suite.package
        );
        go(&module)
            .args(["test", "-c", "-o"])
            .arg(bin.join(format!("{}.test", suite.name)))
            .arg(format!("./test/integration/{}", suite.package))
            .quiet(&format!("building the {} suite", suite.name))?;
    }
    Ok(Prepared { work, module, bin })
}

/// The go command, in `dir`.
fn go(dir: &Path) -> Command {
    let mut go = Command::new("go");
    go.current_dir(dir);
    go
}

/// Where the go command put the pinned Kueue module, and its version.
fn downloaded_module(tools: &Path) -> Result<(PathBuf, String)> {
    let output = go(tools)
        .args(["mod", "download", "-json", "sigs.k8s.io/kueue"])
        .output()
        .context("starting `go mod download` (Kueue's suites need Go)")?;
    if !output.status.success() {
        bail!(
            "go mod download sigs.k8s.io/kueue in {} failed: {}",
            tools.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    module_of(&output.stdout)
}

fn module_of(json: &[u8]) -> Result<(PathBuf, String)> {
    let info: serde_json::Value =
        serde_json::from_slice(json).context("reading `go mod download -json`")?;
    if let Some(error) = info["Error"].as_str() {
        bail!("go mod download sigs.k8s.io/kueue: {error}");
    }
    let dir = info["Dir"]
        .as_str()
        .context("`go mod download -json` named no Dir")?;
    let version = info["Version"]
        .as_str()
        .context("`go mod download -json` named no Version")?;
    Ok((PathBuf::from(dir), version.to_string()))
}

/// Copies `from` to `to`, every file and folder writable by its owner (the suites and the
/// Makefile write into the module; the module cache's files are read-only).
fn copy_writable(from: &Path, to: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(to).with_context(|| format!("making {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_writable(&src, &dst)?;
        } else if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(&src)?, &dst)?;
        } else {
            std::fs::copy(&src, &dst)
                .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
        }
        if !kind.is_symlink() {
            let mut mode = std::fs::metadata(&dst)?.permissions();
            mode.set_mode(mode.mode() | 0o200);
            std::fs::set_permissions(&dst, mode)?;
        }
    }
    Ok(())
}

/// Runs a command whose output matters only when it fails.
trait Quiet {
    fn quiet(&mut self, what: &str) -> Result<()>;
}

impl Quiet for Command {
    fn quiet(&mut self, what: &str) -> Result<()> {
        let output = self
            .output()
            .with_context(|| format!("{what}: starting {self:?}"))?;
        if !output.status.success() {
            bail!(
                "{what} failed ({}):\n{}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_module_is_read_from_go_mod_download() {
        let json = br#"{"Path":"sigs.k8s.io/kueue","Version":"v0.17.0","Dir":"/m/sigs.k8s.io/kueue@v0.17.0"}"#;
        let (dir, version) = module_of(json).unwrap();
        assert_eq!(dir, PathBuf::from("/m/sigs.k8s.io/kueue@v0.17.0"));
        assert_eq!(version, "v0.17.0");
        let refused = br#"{"Path":"sigs.k8s.io/kueue","Version":"v0.17.0","Error":"not found"}"#;
        let err = module_of(refused).unwrap_err().to_string();
        assert!(err.contains("not found"), "{err}");
    }

    #[test]
    fn the_copy_is_writable() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let from = dir.path().join("from");
        std::fs::create_dir_all(from.join("sub")).unwrap();
        std::fs::write(from.join("sub/file"), "x").unwrap();
        for p in [from.join("sub/file"), from.join("sub")] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
        let to = dir.path().join("to");
        copy_writable(&from, &to).unwrap();
        assert_eq!(std::fs::read_to_string(to.join("sub/file")).unwrap(), "x");
        // Modes, not writes: root (CI's user) may write anything.
        for p in [to.join("sub/file"), to.join("sub")] {
            let mode = std::fs::metadata(&p).unwrap().permissions().mode();
            assert_ne!(
                mode & 0o200,
                0,
                "{} is not writable by its owner",
                p.display()
            );
        }
        std::fs::set_permissions(from.join("sub"), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}
