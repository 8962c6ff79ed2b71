//! Kueue's scheduler performance benchmark on virtual time.
//!
//! The same generator file and the same measurements as Kueue's `test/performance/scheduler`: a
//! run creates cohorts of ClusterQueues and thousands of plain Workloads on a schedule, lets
//! Tollgate's controller admit them, marks each Finished after its runtime, and reports each
//! ClusterQueue class's usage and each Workload class's average time to admission.
//! `cargo xtask bench` runs the baseline; `e2e/benches/scheduling.rs` prints it.

pub mod config;
pub mod recorder;
mod run;

pub use config::{BASELINE, Plan, PlanError};
pub use recorder::Summary;
pub use run::{
    CLASS_LABEL, PROGRESS_EVERY, Progress, RUNNING_TIME_LABEL, RunError, RunReport, run,
    run_with_progress,
};
