//! Tests of the scenario engine itself: checking files, failure reports, TestEnv and its
//! components, determinism.

// mimalloc: these runs allocate and free many small maps; with glibc's allocator about a third of
// their time went to malloc and free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod determinism;
mod env;
mod failures;
mod load;
mod runner_cli;

use std::path::Path;

use e2e::scenario::{Outcome, Registry, Scenario, parse, run_blocking};

/// Check a scenario given inline, as if it were `inline.yaml`.
pub fn scenario(text: &str) -> Scenario {
    parse("inline.yaml", text, Path::new(".")).unwrap_or_else(|e| panic!("{e}"))
}

/// Run an inline scenario with the standard components.
pub fn run(text: &str) -> Outcome {
    run_blocking(&scenario(text), &Registry::standard()).expect("the scenario starts")
}
