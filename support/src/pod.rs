//! What kube-scheduler asks of a pod and a node: the pod's effective requests, and whether the
//! node's labels and taints let the pod on. Kueue's flavor assignment and the fake autoscaler's
//! capacity simulation both judge pods by these rules.

mod requests;
mod scheduling;

pub use requests::pod_requests;
pub use scheduling::{requirement_matches, tolerates};

#[cfg(test)]
mod requests_tests;
#[cfg(test)]
mod scheduling_tests;
