//! The components scenarios and tests can start beside the fake API server: Tollgate's controller,
//! the fake Cluster Autoscaler, and the fake job runner that plays the Job controller and kubelet
//! in embedded worlds.

pub mod autoscaler;
pub mod controller;
pub mod job_runner;
pub mod pods;

pub use autoscaler::AutoscalerComponent;
pub use controller::ControllerComponent;
pub use job_runner::JobRunner;
