//! Tollgate's lowest layer: what the controller, the fake autoscaler, conformance and e2e all need
//! and none of them owns. It depends on no Tollgate crate, so any of them can depend on it.
//!
//! - [`clock`]: wall time anchored to tokio's clock, so virtual time reaches timestamps.
//! - [`connect`]: a client for a kubeconfig ([`config`]: its configuration).
//! - [`quantity`]: exact Kubernetes quantities and Kueue's scheduler units.
//! - [`pod`]: a pod's effective requests and kube-scheduler's node predicates.
//! - [`mirror`]: one kind's objects as a watch delivers them, re-lists included.
//! - [`backoff`]: the pause between a watch's failed attempts, without random jitter.
//! - [`resend`]: copying a request to send it again, and reading `Retry-After`.

pub mod backoff;
pub mod clock;
// Always built, though only tests use it: behind a feature that only a dev-dependency turned on,
// `cargo run -p e2e` after `cargo test --workspace` built this crate and everything above it
// again (ARCHITECTURE.md, workspace-hack).
pub mod fixtures;
mod kubeconfig;
pub mod mirror;
pub mod pod;
pub mod quantity;
pub mod resend;

pub use clock::Clock;
pub use kubeconfig::{config, connect};

#[cfg(test)]
mod quantity_tests;
