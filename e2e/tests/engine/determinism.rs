//! The same scenario gives the same trace, byte for byte, run after run.

use e2e::scenario::{Registry, load, run_blocking};
use e2e::snapshot::{scenario_files, scenarios_dir};

const RUNS: usize = 10;

#[test]
fn every_scenario_gives_byte_identical_traces_ten_runs_in_a_row() {
    let files = scenario_files(&scenarios_dir(), None).unwrap();
    assert!(
        files.len() >= 2,
        "no scenarios found in {}",
        scenarios_dir().display()
    );
    for file in files {
        let scenario = load(&file).unwrap();
        let first = run_blocking(&scenario, &Registry::standard()).unwrap();
        assert!(first.failure.is_none(), "{}", first.failure.unwrap());
        let first = first.trace.to_yaml();
        assert!(!first.is_empty());
        for run in 2..=RUNS {
            let again = run_blocking(&scenario, &Registry::standard())
                .unwrap()
                .trace
                .to_yaml();
            assert_eq!(
                again, first,
                "run {run} of {} differs from run 1",
                scenario.name
            );
        }
    }
}
