//! For tests that need the reference control plane: one per test binary, started on first use.
//!
//! On a machine without the binaries these tests say why and skip, unless
//! `TOLLGATE_REQUIRE_CONTROL_PLANE` is set (CI sets it), as the kubectl tests do with
//! `TOLLGATE_REQUIRE_KUBECTL`.
//!
//! ```no_run
//! #[tokio::test]
//! async fn on_kube_apiserver() {
//!     let Some(cp) = control_plane::testing::shared().await else { return };
//!     let client = cp.client().await.unwrap();
//!     // ...
//! }
//! ```

use std::path::PathBuf;

use tokio::sync::OnceCell;

use crate::binaries::{Binaries, workspace_root};
use crate::{ControlPlane, Error, Options};

/// Set to make a missing control plane a failure instead of a skip.
pub const REQUIRE_VAR: &str = "TOLLGATE_REQUIRE_CONTROL_PLANE";

/// Whether the binaries are there; if not, either panic (required) or print why and say no.
pub fn available(binaries: &Binaries) -> bool {
    let missing = crate::Component::ALL
        .iter()
        .find_map(|c| binaries.path(*c).err());
    match missing {
        None => true,
        Some(e) if std::env::var_os(REQUIRE_VAR).is_some() => {
            panic!("the reference control plane is required ({REQUIRE_VAR} is set): {e}")
        }
        Some(e) => {
            eprintln!("skipping: {e} (set {REQUIRE_VAR} to make this a failure)");
            false
        }
    }
}

/// The control plane shared by this test binary's tests, set up for fake Nodes
/// ([`Options::for_fake_nodes`]), or `None` (after saying why) when its
/// binaries are missing and not required. Tests share it: give each its own namespace and names.
pub async fn shared() -> Option<&'static ControlPlane> {
    static SHARED: OnceCell<Option<ControlPlane>> = OnceCell::const_new();
    SHARED.get_or_init(private).await.as_ref()
}

/// A control plane of its own, for a test that must not share (it is stopped when dropped).
pub async fn private() -> Option<ControlPlane> {
    let binaries = Binaries::locate();
    if !available(&binaries) {
        return None;
    }
    let started = match run_dir() {
        Ok(dir) => ControlPlane::start(&binaries, Options::new(dir).for_fake_nodes()).await,
        Err(e) => Err(e),
    };
    match started {
        Ok(cp) => Some(cp),
        Err(e) => panic!("the reference control plane did not start: {e}"),
    }
}

/// `target/control-plane/test-runs/<binary>-<pid>-<n>`. Directories of test processes that have
/// ended are removed first, so that runs do not pile up.
fn run_dir() -> Result<PathBuf, Error> {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let root = workspace_root().join("target/control-plane/test-runs");
    std::fs::create_dir_all(&root).map_err(|e| Error::io(&root, e))?;
    if let Ok(entries) = std::fs::read_dir(&root) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let pid = name.rsplit('-').nth(1).and_then(|p| p.parse::<i32>().ok());
            if let Some(pid) = pid
                && !crate::process::alive(nix::unistd::Pid::from_raw(pid))
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "test".into());
    let dir = root.join(format!(
        "{exe}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    Ok(dir)
}
