//! Tests that share no capacity run side by side, and `serial` runs them one at a time: both give
//! the same verdicts, in the plan's order.

use std::time::Duration;

use conformance::reference::ReferenceClass;
use conformance::runner::{Outcome, Selection, TestResult};
use conformance_embedded as embedded;

/// The results, the order `progress` heard them in, and the virtual time the run took.
fn run(serial: bool) -> (Vec<TestResult>, Vec<&'static str>, Duration) {
    let options = ReferenceClass::CheckCapacity.options();
    let selection = Selection {
        serial,
        ..Selection::default()
    };
    embedded::runtime().expect("runtime").block_on(async {
        let started = tokio::time::Instant::now();
        let mut heard = Vec::new();
        let results = embedded::run(&options, None, &selection, |r| heard.push(r.name))
            .await
            .expect("run");
        (results, heard, started.elapsed())
    })
}

fn verdicts(results: &[TestResult]) -> Vec<(&'static str, bool)> {
    results
        .iter()
        .map(|r| (r.name, matches!(r.outcome, Outcome::Passed)))
        .collect()
}

#[test]
fn tests_sharing_no_capacity_run_side_by_side_with_the_verdicts_of_a_serial_run() {
    let (serial, serial_heard, serial_took) = run(true);
    let (side_by_side, heard, took) = run(false);
    assert_eq!(verdicts(&side_by_side), verdicts(&serial));
    assert_eq!(
        serial_heard,
        verdicts(&serial).iter().map(|v| v.0).collect::<Vec<_>>()
    );
    // Reported in the plan's order, whatever order they finished in.
    assert_ne!(heard, serial_heard, "some tests finished while others ran");
    let summed: Duration = serial.iter().map(|r| r.took).sum();
    assert!(serial_took >= summed, "{serial_took:?} {summed:?}");
    assert!(
        took < summed,
        "side by side, the run ({took:?}) is shorter than its tests one after another ({summed:?})"
    );
}
