//! What the black-box tests share: the fake autoscaler's binary, a process killed with the test,
//! and a wait for discovery.
// Each test binary compiles this module and uses part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

/// A child process, killed when the test ends however it ends.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fake autoscaler's binary, built beside this package's by `cargo test --workspace`.
pub fn fake_autoscaler_binary() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_conformance")).with_file_name("fake-autoscaler");
    assert!(
        path.exists(),
        "{} is missing: build it first (`cargo build -p fake-autoscaler`; `cargo test --workspace` does)",
        path.display()
    );
    path
}

/// Waits until kube-apiserver serves `plural` in `api_version` (discovery may trail Established).
pub async fn until_served(client: &kube::Client, api_version: &str, plural: &str) {
    let served = async {
        loop {
            let list = client.list_api_group_resources(api_version).await;
            if list.is_ok_and(|l| l.resources.iter().any(|r| r.name == plural)) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), served)
        .await
        .unwrap_or_else(|_| panic!("{plural} in {api_version} is served within 30s"));
}
