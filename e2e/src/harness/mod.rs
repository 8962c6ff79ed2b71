//! The components scenarios and tests can start beside the fake API server: Tollgate's controller,
//! the fake Cluster Autoscaler, and the fake job runner that plays the Job controller and kubelet
//! in embedded worlds; and, for MultiKueue worlds, how the manager reaches its workers in process
//! (`network`, `link`, `kubeconfig`).

pub mod autoscaler;
pub mod controller;
pub mod job_runner;
pub mod kubeconfig;
pub mod link;
pub mod network;
pub mod pods;

pub use autoscaler::AutoscalerComponent;
pub use controller::ControllerComponent;
pub use job_runner::JobRunner;
pub use link::{Cut, Link};
pub use network::InProcessNetwork;
