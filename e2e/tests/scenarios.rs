//! Every scenario in `e2e/scenarios/` is a test of its own: it must run to the end, and its trace
//! must equal its snapshot in `e2e/scenarios/snapshots/`.

use std::path::PathBuf;

// mimalloc: these runs allocate and free many small maps; with glibc's allocator about a third of
// their time went to malloc and free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use e2e::scenario::{Registry, load, run_blocking};
use rstest::rstest;

#[rstest]
fn scenario(#[files("scenarios/*.yaml")] path: PathBuf) {
    let scenario = load(&path).unwrap_or_else(|e| panic!("{e}"));
    let outcome = run_blocking(&scenario, &Registry::standard()).unwrap_or_else(|e| panic!("{e}"));
    if let Some(failure) = &outcome.failure {
        panic!("{failure}\ntrace until then:\n{}", outcome.trace.to_yaml());
    }
    let snapshots = e2e::snapshot::snapshots_dir(&e2e::snapshot::scenarios_dir());
    e2e::snapshot::assert_trace(&snapshots, &scenario, &outcome.trace);
}
