//! What the black-box tests share: the fake autoscaler's binary, and a process killed with the test.

use std::path::{Path, PathBuf};
use std::process::Child;

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
