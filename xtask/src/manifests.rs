//! `cargo xtask manifests`: writes the YAML that installs the controller on a cluster. What goes
//! in it, RBAC included, is the controller crate's (`controller::install`, from the rules table in
//! `controller::rbac`), so that the manifests say what the controller's code does.

use std::path::PathBuf;

use crate::workspace_root;
use anyhow::{Context, Result};

/// Where the files go by default, relative to the workspace root.
pub const DEFAULT_OUT: &str = "target/manifests";

/// Writes the manifests into `out` (default: `target/manifests/` in the workspace).
pub fn run(out: Option<PathBuf>, image: Option<String>) -> Result<()> {
    let dir = match out {
        Some(dir) => dir,
        None => workspace_root()?.join(DEFAULT_OUT),
    };
    let mut install = controller::install::Install::default();
    if let Some(image) = image {
        install.image = image;
    }
    let written = install
        .write(&dir)
        .with_context(|| format!("writing the manifests into {}", dir.display()))?;
    for path in &written {
        println!("{}", path.display());
    }
    eprintln!(
        "install with: kubectl apply --server-side -f {}",
        dir.display()
    );
    if install.image == controller::install::PLACEHOLDER_IMAGE {
        eprintln!(
            "the Deployment's image is a placeholder: pass --image or edit 50-deployment.yaml"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_file_with_the_image_given() {
        let dir = tempfile::tempdir().expect("tempdir");
        run(
            Some(dir.path().to_path_buf()),
            Some("example.org/controller:v1".into()),
        )
        .expect("run");
        let deployment =
            std::fs::read_to_string(dir.path().join("50-deployment.yaml")).expect("deployment");
        assert!(deployment.contains("image: example.org/controller:v1\n"));
        for file in [
            "00-namespace.yaml",
            "20-serviceaccount.yaml",
            "30-rbac.yaml",
            "40-config.yaml",
        ] {
            assert!(dir.path().join(file).exists(), "{file}");
        }
    }
}
