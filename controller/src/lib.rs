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
//! };
//! controller::manager::run(client, options).await
//! # }
//! ```

pub mod admissionchecks;
pub mod clock;
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

use std::path::Path;

pub use clock::Clock;
pub use manager::Options;

/// A client for the kubeconfig at `path` (or the default one), optionally with another context.
pub async fn connect(
    path: Option<&Path>,
    context: Option<&str>,
) -> Result<kube::Client, anyhow::Error> {
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    let config = match path {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &options).await?
        }
        None if context.is_some() => kube::Config::from_kubeconfig(&options).await?,
        None => kube::Config::infer().await?,
    };
    Ok(kube::Client::try_from(config)?)
}
