//! Every scenario with components, rerun under faults on the components' own requests with
//! [`TEST_SEEDS`] seeds: each run must end where the fault-free run ends
//! (e2e/src/scenario/chaos.rs). `cargo xtask chaos --scenarios` runs more seeds (`.ci/run` 50);
//! `TOLLGATE_CHAOS_SEED=S` replays one, with its trace (and with `RUST_LOG`, the components'
//! logs). `restarted_at_every_step` kills the controller and the fake autoscaler before a step
//! instead, and expects the same ending.
//!
//! A scenario listed in `e2e/chaos-known.txt` (with what is known of why) is known to end
//! differently under some seeds: its divergences are printed, not failed on. A listed scenario
//! that no seed of a 50-seed run makes diverge is named for removal, but not failed on: a rare
//! divergence may need more seeds to come up.

use std::path::PathBuf;

// mimalloc: these runs allocate and free many small maps; with glibc's allocator about a third of
// their time went to malloc and free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use e2e::scenario::chaos::{
    Disturbance, Report, TEST_RESTART_STRIDE, TEST_SEEDS, applies, check, check_seeds, restarts,
    restarts_apply, run_once,
};
use e2e::scenario::{Registry, load};
use rstest::rstest;

/// The seeds to run: `TOLLGATE_CHAOS_SEED` alone, else `TOLLGATE_CHAOS_SEEDS` (default
/// [`TEST_SEEDS`]) from `TOLLGATE_CHAOS_FIRST` (default 1).
fn seeds() -> Vec<u64> {
    let var = |name: &str| {
        std::env::var(name).ok().map(|v| {
            v.parse::<u64>()
                .unwrap_or_else(|e| panic!("{name}={v}: {e}"))
        })
    };
    if let Some(seed) = var("TOLLGATE_CHAOS_SEED") {
        return vec![seed];
    }
    let first = var("TOLLGATE_CHAOS_FIRST").unwrap_or(1);
    (first..first + var("TOLLGATE_CHAOS_SEEDS").unwrap_or(TEST_SEEDS)).collect()
}

/// The scenarios known to diverge under faults: `name: why` per line, `#` comments.
fn known() -> Vec<(String, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/chaos-known.txt");
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, why) = l
                .split_once(':')
                .unwrap_or_else(|| panic!("{path}: `{l}` is not `scenario: why`"));
            (name.trim().to_string(), why.trim().to_string())
        })
        .collect()
}

/// `RUST_LOG` shows the components' logs (`RUST_LOG=controller=debug` every write), through the
/// world's settling too, which the trace does not cover: for a replay of one run.
fn logs() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

#[rstest]
fn under_faults(#[files("scenarios/*.yaml")] path: PathBuf) {
    logs();
    let scenario = load(&path).unwrap_or_else(|e| panic!("{e}"));
    if !applies(&scenario) {
        return;
    }
    let seeds = seeds();
    let report =
        check_seeds(&scenario, &Registry::standard(), &seeds).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "{}: {} seeds, {} faults injected (requests failed, dropped or delayed), {} runs ended differently",
        report.name,
        report.runs,
        report.faults,
        report.failed.len()
    );
    let known = known();
    if let Some((_, why)) = known.iter().find(|(name, _)| *name == report.name) {
        if report.failed.is_empty() && seeds.len() >= 50 {
            println!(
                "{}: listed in e2e/chaos-known.txt ({why}), but no seed of {} ended differently: \
                 remove it from the list if a longer run agrees",
                report.name,
                seeds.len()
            );
        }
        for (seed, divergence, _) in &report.failed {
            println!("known ({why}): {seed}: {divergence}");
        }
        return;
    }
    fail_on_divergence(&report, "seeds", "TOLLGATE_CHAOS_SEED=S");
}

/// Crash-only: before a step of a scenario running the controller or the fake autoscaler (and once
/// after the last), each is killed on every cluster and started afresh, without faults; every run
/// must end where the uninterrupted run ends. Before every `TOLLGATE_RESTART_STRIDE`th step
/// (default [`TEST_RESTART_STRIDE`]; `cargo xtask chaos --scenarios` sets 1, every step);
/// `TOLLGATE_RESTART_BEFORE=N` runs only the restart before step N (from 1), with its trace.
#[rstest]
fn restarted_at_every_step(#[files("scenarios/*.yaml")] path: PathBuf) {
    logs();
    let scenario = load(&path).unwrap_or_else(|e| panic!("{e}"));
    if !restarts_apply(&scenario) {
        return;
    }
    let var = |name: &str| {
        std::env::var(name).ok().map(|v| {
            v.parse::<usize>()
                .unwrap_or_else(|e| panic!("{name}={v}: {e}"))
        })
    };
    let runs = match var("TOLLGATE_RESTART_BEFORE") {
        Some(step) => vec![Disturbance::RestartBefore(step.saturating_sub(1))],
        None => restarts(
            &scenario,
            var("TOLLGATE_RESTART_STRIDE").unwrap_or(TEST_RESTART_STRIDE),
        ),
    };
    let report = check(&scenario, &Registry::standard(), &runs).unwrap_or_else(|e| panic!("{e}"));
    println!(
        "{}: {} restarts, {} ended differently",
        report.name,
        report.runs,
        report.failed.len()
    );
    fail_on_divergence(&report, "restarts", "TOLLGATE_RESTART_BEFORE=N");
}

/// A seed is an exact replay: run twice, it puts the same faults on the same requests (each
/// cluster's journal of every request its faults judged, with the verdict, is the same), so its
/// trace and its count of faults are the same too, though each world's hash maps are seeded
/// afresh. Closing a cluster's watches once woke their clients in hash order, so after every
/// close the controller's watches came back, and drew their faults, in an order of their own.
/// (The journals, not the `fake_apiserver::faults` trace: a tracing callsite first reached by
/// another test's thread caches "never" for every thread, seen as 0 judged, then 247.)
#[rstest]
#[case::manager_and_workers("multikueue-two-workers-admit-at-once")]
#[case::one_cluster("job-lifecycle")]
fn a_seed_replays_exactly(#[case] name: &str) {
    let path = PathBuf::from(format!(
        "{}/scenarios/{name}.yaml",
        env!("CARGO_MANIFEST_DIR")
    ));
    let scenario = load(&path).unwrap_or_else(|e| panic!("{e}"));
    for seed in 1..=3 {
        let run = || {
            let run = run_once(&scenario, &Registry::standard(), Disturbance::Noise(seed))
                .unwrap_or_else(|e| panic!("{e}"));
            (run.judged, run.faults, run.trace.to_yaml())
        };
        let (first, again) = (run(), run());
        assert!(first.1 > 0, "seed {seed}: no fault was injected");
        for (cluster, (a, b)) in first.0.iter().zip(&again.0).enumerate() {
            assert!(
                !a.is_empty(),
                "seed {seed}: cluster {cluster} judged nothing"
            );
            let differ = a.iter().zip(b).position(|(a, b)| a != b);
            assert!(
                differ.is_none() && a.len() == b.len(),
                "seed {seed}: cluster {cluster}'s judged requests differ, first at {differ:?} \
                 (of {} and {}): {:?} and {:?}",
                a.len(),
                b.len(),
                differ.map(|i| &a[i]),
                differ.map(|i| &b[i]),
            );
        }
        assert_eq!(first.0.len(), again.0.len(), "seed {seed}: clusters");
        assert_eq!(first.1, again.1, "seed {seed}: faults injected");
        assert_eq!(first.2, again.2, "seed {seed}: the traces differ");
    }
}

/// Fail with every run of `report` that ended differently; a replay of one run (`replay` says
/// how) also shows its trace, what its steps saw.
fn fail_on_divergence(report: &Report, runs: &str, replay: &str) {
    if report.failed.is_empty() {
        return;
    }
    let mut message = String::new();
    for (run, why, trace) in &report.failed {
        message.push_str(&format!("{run}: {why}\n"));
        if report.runs == 1 {
            message.push_str(&format!("trace:\n{}\n", trace.to_yaml()));
        }
    }
    panic!(
        "{}: {} of {} {runs} ended differently (replay one with {replay}):\n{message}",
        report.name,
        report.failed.len(),
        report.runs
    );
}
