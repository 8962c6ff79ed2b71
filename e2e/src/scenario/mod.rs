//! Scenario files: the format (`model`), reading and checking them (`load`), the operations a
//! step may hold (`ops`, one table), and running them (`run`).
//!
//! Below those: `check` (what an operation's check may use), `context` (what an operation runs
//! with), `naming` (kinds and object labels, shared with the trace), `watches` and `duration`.

pub mod chaos;
pub mod check;
pub mod components;
pub mod context;
pub mod duration;
pub mod load;
pub mod model;
pub mod naming;
pub mod ops;
pub mod run;
pub mod watches;

pub use components::Registry;
pub use load::{LoadError, Scenario, load, parse};
pub use run::{Failure, OnStepFailure, Outcome, run, run_blocking, run_in, run_in_with, start_env};
