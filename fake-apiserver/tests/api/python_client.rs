//! The official Kubernetes Python client against the served fake: its watches and forced applies
//! send `watch=True` and `force=True`, which the real server reads as true.
//!
//! The client runs from a virtualenv in the workspace's target directory:
//!
//! ```text
//! python3 -m venv target/python-client
//! target/python-client/bin/pip install -r tools/python-client/requirements.txt
//! ```
//!
//! Without it the test prints those commands and passes, unless `TOLLGATE_REQUIRE_PYTHON_CLIENT`
//! is set.

use std::path::PathBuf;
use std::process::Command;

use crate::tcp::Served;

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate is in the workspace")
        .to_path_buf()
}

/// The virtualenv's interpreter, or None (with how to make it printed) when it is absent and not
/// required.
fn python() -> Option<PathBuf> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|t| {
            if t.is_relative() {
                workspace().join(t)
            } else {
                t
            }
        })
        .unwrap_or_else(|| workspace().join("target"));
    let venv = target.join("python-client");
    let python = venv.join("bin").join("python");
    if python.exists() {
        return Some(python);
    }
    let how = format!(
        "python3 -m venv {} && {}/bin/pip install -r {}",
        venv.display(),
        venv.display(),
        workspace()
            .join("tools/python-client/requirements.txt")
            .display()
    );
    if std::env::var_os("TOLLGATE_REQUIRE_PYTHON_CLIENT").is_some() {
        panic!(
            "the Python client is required (TOLLGATE_REQUIRE_PYTHON_CLIENT is set) but {} is missing; create it with: {how}",
            python.display()
        );
    }
    eprintln!(
        "skipping: the Python client's virtualenv is missing (set TOLLGATE_REQUIRE_PYTHON_CLIENT to make this a failure); create it with: {how}"
    );
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_watches_and_force_applies() {
    python_client_against(Served::start().await).await;
}

/// The same over HTTPS with a bearer token: the client takes the CA and the token from the
/// kubeconfig.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_works_over_tls_with_a_token() {
    python_client_against(Served::start_locked().await).await;
}

async fn python_client_against(served: Served) {
    let Some(python) = python() else { return };
    let kubeconfig = served.kubeconfig();
    let script = workspace().join("tools/python-client/watch_and_apply.py");
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .output()
            .expect("the Python client runs")
    })
    .await
    .expect("the Python client's thread");
    assert!(
        out.status.success(),
        "the Python client failed against the fake:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
