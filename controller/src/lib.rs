//! Kueue's admission machinery in Rust, on the kube-rs runtime.
//!
//! Decisions are pure functions ([`workload`], [`scheduler`], [`resources`], [`jobs`]); the
//! [`manager`] is the thin loop that watches the API server, keeps an in-memory view of it, asks
//! the decisions what to do and writes the answers back. Nothing here knows whether the API
//! server is Tollgate's fake, kind, or a production cluster.
//!
//! ```no_run
//! # async fn demo(client: kube::Client) -> Result<(), controller::manager::Error> {
//! let options = controller::Options {
//!     config: api::config::Configuration::default(),
//!     clock: controller::Clock::system(),
//!     metrics: Default::default(),
//!     workers: Default::default(),
//! };
//! controller::manager::run(client, options).await
//! # }
//! ```

pub mod admissionchecks;
pub mod config;
pub mod error;
pub mod events;
pub mod install;
pub mod jobs;
pub mod leader;
pub mod lean;
pub mod manager;
pub mod metrics;
pub mod metrics_server;
pub mod options;
pub mod rbac;
pub mod resources;
pub mod scheduler;
pub mod state;
pub mod status;
pub mod watch;
pub mod workload;
pub mod writer;

mod reconcile;

pub use manager::Options;
// The clock and connecting live in `support`, below every Tollgate crate; these paths stay for
// the controller's users.
pub use support::{Clock, clock, connect};
