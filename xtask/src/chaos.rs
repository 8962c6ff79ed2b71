//! `cargo xtask chaos`: the long runs under faults and load, in an optimised build (`--profile`
//! names another).
//! - `--multikueue`: many seeds of the MultiKueue chaos run (e2e/src/chaos.rs), the `many_seeds`
//!   test of e2e/tests/multikueue_chaos.rs, ignored in ordinary test runs; it prints the summary
//!   and each failing seed with its steps.
//! - `--scenarios`: every scenario with components under faults (e2e/src/scenario/chaos.rs), the
//!   `scenarios_chaos` test with more seeds than `cargo test` runs, and with the controller and
//!   the fake autoscaler killed and started again before every step (`cargo test`: every fourth).
//! - `--apiserver`: the load tests of fake-apiserver/tests/api/load.rs at full size.

use std::process::Command as Process;

use anyhow::bail;

/// Which seeds: `seed` alone, else `seeds` of them from `first`.
pub struct Seeds {
    pub seeds: u64,
    pub first: u64,
    pub seed: Option<u64>,
}

/// The command that runs them.
pub fn command(cargo: Process, seeds: &Seeds, profile: &str) -> Process {
    let mut cargo = profile_test(cargo, profile, "e2e", "multikueue_chaos");
    cargo.args(["many_seeds", "--exact", "--ignored", "--nocapture"]);
    with_seeds(cargo, seeds)
}

/// `cargo test` of one test target built with `profile`, quietly, up to its own arguments.
fn profile_test(mut cargo: Process, profile: &str, package: &str, test: &str) -> Process {
    cargo.args(["test", "--profile", profile]);
    cargo.args(["--quiet", "--package", package, "--test", test, "--"]);
    cargo
}

/// The seeds, as both seeded tests read them.
fn with_seeds(mut cargo: Process, seeds: &Seeds) -> Process {
    match seeds.seed {
        Some(seed) => cargo.env("TOLLGATE_CHAOS_SEED", seed.to_string()),
        None => cargo
            .env("TOLLGATE_CHAOS_SEEDS", seeds.seeds.to_string())
            .env("TOLLGATE_CHAOS_FIRST", seeds.first.to_string()),
    };
    cargo
}

/// The scenarios under faults with these seeds, only those whose file name contains `filter`.
pub fn scenarios(cargo: Process, seeds: &Seeds, filter: Option<&str>, profile: &str) -> Process {
    let mut cargo = profile_test(cargo, profile, "e2e", "scenarios_chaos");
    cargo.arg("--nocapture");
    if let Some(filter) = filter {
        // rstest names each case after its file, with `-` as `_`.
        cargo.arg(filter.replace('-', "_"));
    }
    // The crash-only runs of the same test target restart before every step.
    cargo.env("TOLLGATE_RESTART_STRIDE", "1");
    with_seeds(cargo, seeds)
}

/// The full-size load on the API servers (fake-apiserver/tests/api/load.rs): 64 clients making
/// 1,000 operations each on shared objects, with 20 watchers, on the served fake and on the
/// reference control plane, each printing its figures.
pub fn apiserver_load(cargo: Process, profile: &str) -> Process {
    let mut cargo = profile_test(cargo, profile, "fake-apiserver", "api");
    cargo
        .args(["load::", "--nocapture", "--test-threads", "1"])
        .env("TOLLGATE_LOAD_FULL", "1")
        .env("TOLLGATE_REQUIRE_CONTROL_PLANE", "1");
    cargo
}

/// Say what to run rather than run nothing.
pub fn check(multikueue: bool, scenarios: bool, apiserver: bool) -> anyhow::Result<()> {
    if !multikueue && !scenarios && !apiserver {
        bail!(
            "say what to run: `cargo xtask chaos --multikueue` (seeded MultiKueue runs), `--scenarios` (every scenario under faults) and/or `--apiserver` (the load on the API servers)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(cmd: &Process) -> Vec<(String, String)> {
        cmd.get_envs()
            .filter_map(|(k, v)| Some((k.to_str()?.to_owned(), v?.to_str()?.to_owned())))
            .collect()
    }

    #[test]
    fn one_seed_is_replayed_alone() {
        let cmd = command(
            Process::new("cargo"),
            &Seeds {
                seeds: 2000,
                first: 0,
                seed: Some(42),
            },
            "release",
        );
        assert_eq!(env_of(&cmd), [("TOLLGATE_CHAOS_SEED".into(), "42".into())]);
        let args: Vec<_> = cmd.get_args().filter_map(|a| a.to_str()).collect();
        assert!(args.windows(2).any(|w| w == ["--profile", "release"]));
        assert!(args.contains(&"many_seeds"));
    }

    #[test]
    fn a_range_of_seeds_goes_by_count_and_first() {
        let cmd = command(
            Process::new("cargo"),
            &Seeds {
                seeds: 500,
                first: 1000,
                seed: None,
            },
            "release",
        );
        let mut env = env_of(&cmd);
        env.sort();
        assert_eq!(
            env,
            [
                ("TOLLGATE_CHAOS_FIRST".into(), "1000".into()),
                ("TOLLGATE_CHAOS_SEEDS".into(), "500".into())
            ]
        );
    }

    #[test]
    fn without_a_run_it_says_what_to_run() {
        let error = check(false, false, false).expect_err("nothing to run");
        for flag in ["--multikueue", "--scenarios", "--apiserver"] {
            assert!(error.to_string().contains(flag), "{error}");
        }
        assert!(check(true, false, false).is_ok() && check(false, true, false).is_ok());
        assert!(check(false, false, true).is_ok());
    }

    #[test]
    fn scenarios_run_by_file_name_with_the_seeds_asked_for() {
        let seeds = Seeds {
            seeds: 200,
            first: 1,
            seed: None,
        };
        let cmd = scenarios(Process::new("cargo"), &seeds, Some("job-lifecycle"), "dev");
        let args: Vec<_> = cmd.get_args().filter_map(|a| a.to_str()).collect();
        assert!(args.contains(&"scenarios_chaos"));
        assert!(args.windows(2).any(|w| w == ["--profile", "dev"]));
        assert_eq!(args.last(), Some(&"job_lifecycle"));
        let mut env = env_of(&cmd);
        env.sort();
        assert_eq!(
            env,
            [
                ("TOLLGATE_CHAOS_FIRST".into(), "1".into()),
                ("TOLLGATE_CHAOS_SEEDS".into(), "200".into()),
                ("TOLLGATE_RESTART_STRIDE".into(), "1".into())
            ]
        );
    }

    #[test]
    fn the_apiserver_load_runs_full_size_on_both_servers() {
        let cmd = apiserver_load(Process::new("cargo"), "release");
        let mut env = env_of(&cmd);
        env.sort();
        assert_eq!(
            env,
            [
                ("TOLLGATE_LOAD_FULL".into(), "1".into()),
                ("TOLLGATE_REQUIRE_CONTROL_PLANE".into(), "1".into())
            ]
        );
        let args: Vec<_> = cmd.get_args().filter_map(|a| a.to_str()).collect();
        assert!(args.windows(2).any(|w| w == ["--profile", "release"]));
        assert!(args.contains(&"load::"));
    }
}
