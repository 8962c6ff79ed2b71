//! The ProvisioningRequest admission check (KEP-1136): for a workload holding quota, ask the
//! Cluster Autoscaler for capacity with a ProvisioningRequest, and turn what the provisioning
//! class answers into the check's state. As in Kueue's `admissionchecks/provisioning`, the
//! decisions are pure: whether a check is [`active`], the [`names`] of the objects, the objects
//! themselves ([`request`]), and the check's [`state`] from the request.

pub mod active;
mod controller;
pub mod names;
pub mod request;
pub mod state;

pub use controller::Controller;
