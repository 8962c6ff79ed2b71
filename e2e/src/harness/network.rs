//! How a manager reaches its workers in an embedded world: the [`Connector`] its controller is
//! given. It reads a kubeconfig as the real network connector does (kube's loader: the server URL,
//! the CA, the credentials), then, instead of opening a socket, resolves the server's host to that
//! worker's API server in this process, through the manager's [`Link`] to it. Every cluster then
//! stays on the one virtual clock: real sockets under a paused runtime would let time jump while
//! bytes are in flight, and traces would stop being reproducible.
//!
//! A host that names no worker gets a client whose every request is refused, as a connection to
//! an address where nothing listens would be (kube, too, connects only when a request is sent).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use controller::admissionchecks::multikueue::connect::Connector;
use fake_apiserver::FakeApiServer;
use futures::future::BoxFuture;
use kube::config::{KubeConfigOptions, Kubeconfig};

use super::kubeconfig::host;
use super::link::Link;
use crate::env::lock;

/// Worker API servers by host name, each behind its link.
#[derive(Clone, Default)]
pub struct InProcessNetwork {
    routes: Arc<Mutex<BTreeMap<String, (FakeApiServer, Link)>>>,
}

impl InProcessNetwork {
    /// Make `worker`'s API server answer at its host ([`super::kubeconfig::host`]), through `link`.
    pub fn add_worker(&self, worker: &str, server: FakeApiServer, link: Link) {
        lock(&self.routes).insert(host(worker), (server, link));
    }

    /// The hosts that answer.
    pub fn hosts(&self) -> Vec<String> {
        lock(&self.routes).keys().cloned().collect()
    }

    /// The client for a server URL's host: the worker's, through its link, or one that reaches
    /// nothing.
    pub fn client_for(&self, host: &str, default_namespace: &str) -> kube::Client {
        let route = lock(&self.routes).get(&host.to_ascii_lowercase()).cloned();
        match route {
            Some((server, link)) => {
                // Only a manager's controller reaches workers: its requests are a component's.
                // The controller's worker clients retry as client-go does (the connector's
                // contract), each attempt through the link.
                let service = tower::ServiceBuilder::new()
                    .layer(controller::admissionchecks::multikueue::retry::layer())
                    .map_err(tower::BoxError::from)
                    .map_request(crate::cluster::component_agent("multikueue"))
                    .service(link.service(server.service()));
                kube::Client::new(service, default_namespace)
            }
            None => kube::Client::new(Link::nowhere(), default_namespace),
        }
    }
}

impl Connector for InProcessNetwork {
    fn connect(&self, kubeconfig: Kubeconfig) -> BoxFuture<'static, Result<kube::Client, String>> {
        let network = self.clone();
        Box::pin(async move {
            let config =
                kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                    .await
                    .map_err(|e| e.to_string())?;
            let host = config.cluster_url.host().unwrap_or_default();
            Ok(network.client_for(host, &config.default_namespace))
        })
    }
}
