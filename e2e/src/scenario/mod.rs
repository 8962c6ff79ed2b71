//! Scenario files: the format (`model`), reading and checking them (`load`), and running them
//! (`run`).

pub mod components;
pub mod duration;
pub mod load;
pub mod model;
pub mod run;
pub mod watches;

pub use components::Registry;
pub use load::{LoadError, Scenario, load, parse};
pub use run::{Failure, Outcome, run, run_blocking, run_in};
