//! Cargo started from inside `cargo xtask`, without the variables the outer cargo set for xtask.
//!
//! `cargo run` hands the program it runs its package's variables (`CARGO_MANIFEST_DIR`,
//! `CARGO_PKG_NAME`, ...), and a cargo started from there inherits them. Build scripts that read
//! them with `rerun-if-env-changed` (ring's does) then see them change between this cargo and one
//! started from a shell, and rebuild in place under the same file names: a `cargo test` beside
//! it (CI runs the runners beside the tests) found `libcontroller-….rlib` deleted under its
//! doctests, and every run after rebuilt rustls and all above it again.

use std::ffi::{OsStr, OsString};
use std::process::Command as Process;

/// Variables cargo sets for the crate it builds or runs, which no cargo reads from its own
/// environment for any other purpose.
fn set_for_the_crate(name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_")
        || matches!(
            name,
            "CARGO_MANIFEST_DIR"
                | "CARGO_MANIFEST_PATH"
                | "CARGO_MANIFEST_LINKS"
                | "CARGO_CRATE_NAME"
                | "CARGO_PRIMARY_PACKAGE"
                | "CARGO_TARGET_TMPDIR"
                | "CARGO_RUSTC_CURRENT_DIR"
                | "OUT_DIR"
        )
}

/// The names among `vars` that a cargo started from here must not inherit.
fn inherited<I: IntoIterator<Item = (OsString, OsString)>>(vars: I) -> Vec<OsString> {
    vars.into_iter()
        .map(|(name, _)| name)
        .filter(|name| set_for_the_crate(name))
        .collect()
}

/// `program` (a cargo: `$CARGO`, or rustup's `cargo` proxy when a `+toolchain` follows) with the
/// variables cargo set for xtask removed.
pub fn command(program: impl AsRef<OsStr>) -> Process {
    let mut cmd = Process::new(program);
    for name in inherited(std::env::vars_os()) {
        cmd.env_remove(name);
    }
    cmd
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(vars: &[(&str, &str)]) -> Vec<String> {
        inherited(vars.iter().map(|(n, v)| (n.into(), v.into())))
            .into_iter()
            .map(|n| n.into_string().unwrap())
            .collect()
    }

    #[test]
    fn the_crates_variables_go_and_cargos_own_settings_stay() {
        let vars = [
            ("CARGO_MANIFEST_DIR", "/src/xtask"),
            ("CARGO_PKG_NAME", "xtask"),
            ("CARGO_PKG_VERSION_MAJOR", "0"),
            ("CARGO_BIN_EXE_xtask", "/t/xtask"),
            ("CARGO_CRATE_NAME", "xtask"),
            ("CARGO", "/bin/cargo"),
            ("CARGO_HOME", "/c"),
            ("CARGO_TARGET_DIR", "/t"),
            ("CARGO_PROFILE_DEV_OPT_LEVEL", "1"),
            ("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER", "/r"),
            ("PATH", "/bin"),
        ];
        assert_eq!(
            names(&vars),
            [
                "CARGO_MANIFEST_DIR",
                "CARGO_PKG_NAME",
                "CARGO_PKG_VERSION_MAJOR",
                "CARGO_BIN_EXE_xtask",
                "CARGO_CRATE_NAME",
            ]
        );
    }

    // This test runs under `cargo test`, which sets CARGO_MANIFEST_DIR for it as `cargo run`
    // does for xtask: the command built here must not pass it on.
    #[test]
    fn a_cargo_started_from_a_cargo_run_does_not_inherit_the_manifest_dir() {
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let cmd = command("cargo");
        let removed: Vec<_> = cmd
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name.to_owned())
            .collect();
        assert!(removed.contains(&OsString::from("CARGO_MANIFEST_DIR")));
        assert!(removed.contains(&OsString::from("CARGO_PKG_NAME")));
    }
}
