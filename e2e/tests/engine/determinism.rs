//! The same scenario gives the same trace, byte for byte, run after run.

use std::path::PathBuf;

use e2e::scenario::{Registry, load, run_blocking};
use rstest::rstest;

/// Runs of each scenario. Every run builds its world afresh, hash maps and their seeds
/// included, so an order that follows a hash shows within a few runs; the scenario test's run
/// against its snapshot, and the chaos runs' exact replays of seeds, add more.
const RUNS: usize = 5;

/// One case per scenario file, so that the cases run side by side.
#[rstest]
fn every_scenario_gives_byte_identical_traces_five_runs_in_a_row(
    #[files("scenarios/*.yaml")] path: PathBuf,
) {
    let scenario = load(&path).unwrap_or_else(|e| panic!("{e}"));
    let first = run_blocking(&scenario, &Registry::standard()).unwrap_or_else(|e| panic!("{e}"));
    assert!(first.failure.is_none(), "{}", first.failure.unwrap());
    let first = first.trace.to_yaml();
    assert!(!first.is_empty());
    for run in 2..=RUNS {
        let again = run_blocking(&scenario, &Registry::standard())
            .unwrap_or_else(|e| panic!("{e}"))
            .trace
            .to_yaml();
        assert_eq!(
            again, first,
            "run {run} of {} differs from run 1",
            scenario.name
        );
    }
}
