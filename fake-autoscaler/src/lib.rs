//! A scripted Cluster Autoscaler for ProvisioningRequests (`autoscaling.x-k8s.io/v1`).
//!
//! It watches ProvisioningRequests, PodTemplates, Nodes and Pods through a `kube::Client`, as a
//! real Cluster Autoscaler does, so it runs against Tollgate's fake API server (on virtual time)
//! and against any cluster. It serves:
//!
//! - the upstream classes `check-capacity.autoscaling.x-k8s.io` (a scheduling simulation) and
//!   `best-effort-atomic-scale-up.autoscaling.x-k8s.io` (all-or-nothing scale-up), with upstream's
//!   conditions, reasons and messages, booking (10 minutes, or until the consuming pods run),
//!   retry backoff (1m doubling to 10m), `noRetry`, 7-day expiry and garbage collection;
//! - vendor-like classes in the style of GKE's queued provisioning (`Accepted=False` first, an
//!   ETA, `ValidUntilSeconds`, `CapacityRevoked` after `maxRunDurationSeconds`,
//!   `provisioningClassDetails`);
//! - scripted classes and per-request scripts: exact timelines for tests;
//! - broken variants ([`Broken`]), each violating one rule of the contract Kueue relies on.
//!
//! Capacity comes from node groups: fake Node objects it creates (after a scale-up delay) and
//! removes (once unneeded), with pods' requests, node selectors, affinity and tolerations checked
//! against them ([`capacity`]).
//!
//! The decisions are pure ([`engine::Autoscaler::step`]); [`run()`] is the loop around them.

pub mod broken;
pub mod capacity;
pub mod config;
pub mod engine;
pub mod messages;
pub mod nodes;
mod run;

pub use broken::Broken;
pub use config::Config;
pub use engine::{Autoscaler, Cloud};
pub use run::{RunError, run};
