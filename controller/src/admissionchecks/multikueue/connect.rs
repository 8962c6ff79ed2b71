//! How the manager reaches a worker cluster once its kubeconfig has been read and checked.
//!
//! Outside tests this is the network ([`Network`]). Embedded worlds give the controller a
//! [`Connector`] that resolves a worker's server address to that worker's in-process client, so
//! every cluster stays on the one virtual clock (real sockets under a paused runtime would let
//! time jump while bytes are in flight).

use std::sync::Arc;

use futures::future::BoxFuture;
use kube::config::{KubeConfigOptions, Kubeconfig};

/// Turns a checked kubeconfig into a client. Errors are one line, safe to show in a condition
/// message: they never quote the kubeconfig's contents. The client retries as Kueue's does:
/// implementations put [`super::retry::layer`] in front of their service.
pub trait Connector: Send + Sync {
    fn connect(&self, kubeconfig: Kubeconfig) -> BoxFuture<'static, Result<kube::Client, String>>;
}

/// Connects over the network, as kubectl would with the same kubeconfig.
pub struct Network;

impl Connector for Network {
    fn connect(&self, kubeconfig: Kubeconfig) -> BoxFuture<'static, Result<kube::Client, String>> {
        Box::pin(async move {
            let config =
                kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
            let builder =
                kube::client::ClientBuilder::try_from(config).map_err(|e| e.to_string())?;
            // The retry clones the service for each attempt: a buffer makes the stack cloneable.
            Ok(builder
                .with_layer(&tower::buffer::BufferLayer::new(1024))
                .with_layer(&super::retry::layer())
                .build())
        })
    }
}

/// What the MultiKueue controllers need beyond the Kueue Configuration.
#[derive(Clone)]
pub struct WorkerAccess {
    /// How worker clients are made.
    pub connector: Arc<dyn Connector>,
    /// `locationType: Path` kubeconfigs must resolve under this directory.
    pub kubeconfig_dir: std::path::PathBuf,
}

impl Default for WorkerAccess {
    fn default() -> Self {
        WorkerAccess {
            connector: Arc::new(Network),
            kubeconfig_dir: std::path::PathBuf::from(DEFAULT_KUBECONFIG_DIR),
        }
    }
}

/// Where `locationType: Path` kubeconfigs live unless the controller is told otherwise.
pub const DEFAULT_KUBECONFIG_DIR: &str = "/etc/kueue/multikueue";
