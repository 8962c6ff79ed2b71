//! Where a scenario runs. The engine and the components talk to a [`Cluster`] only through
//! `kube::Client`; what differs between backends (virtual or real time, faults, how changes are
//! observed) is behind this trait. This crate has the embedded backend; kubeconfig and kind
//! backends implement the same trait.

use std::time::Duration;

use fake_apiserver::{ChangeFeed, FakeApiServer, Faults};
use jiff::Timestamp;

/// A Kubernetes cluster as the scenario engine sees it.
pub trait Cluster: Send + Sync {
    /// A short name for reports: `embedded`, `kubeconfig`, `kind`.
    fn backend(&self) -> &'static str;

    /// A client for the scenario's own requests.
    fn client(&self) -> kube::Client;

    /// Whether waits and `advance` run on virtual time (instant) or real time.
    fn virtual_time(&self) -> bool;

    /// The cluster's time now (the fake's clock, or the wall clock).
    fn now(&self) -> Timestamp;

    /// Fault injection, where the backend can do it.
    fn faults(&self) -> Option<&Faults>;

    /// A feed of every change, in resourceVersion order, where the backend can give one.
    fn observe(&self) -> Option<ChangeFeed>;
}

/// The fake API server in this process, on virtual time when the tokio runtime is paused.
pub struct EmbeddedCluster {
    server: FakeApiServer,
}

impl EmbeddedCluster {
    pub fn new(server: FakeApiServer) -> Self {
        EmbeddedCluster { server }
    }

    /// A client for a component, whose requests say so in their `User-Agent`
    /// ([`component_agent`]): faults can then single out the components' requests.
    pub fn component_client(&self, component: &str) -> kube::Client {
        let service = tower::ServiceBuilder::new()
            .map_request(component_agent(component))
            .service(self.server.service());
        kube::Client::new(service, "default")
    }

    pub fn server(&self) -> &FakeApiServer {
        &self.server
    }
}

impl Cluster for EmbeddedCluster {
    fn backend(&self) -> &'static str {
        "embedded"
    }

    fn client(&self) -> kube::Client {
        self.server.client()
    }

    fn virtual_time(&self) -> bool {
        true
    }

    fn now(&self) -> Timestamp {
        self.server.clock().now()
    }

    fn faults(&self) -> Option<&Faults> {
        Some(self.server.faults())
    }

    fn observe(&self) -> Option<ChangeFeed> {
        Some(self.server.observe())
    }
}

/// How often backends without a change feed look again.
pub const POLL_INTERVAL: Duration = Duration::from_secs(1);

/// Waiting for "something may have changed": the next change on a backend with a change feed,
/// the next poll on others. Take a mark before each look at the cluster, so that a change made
/// while looking still wakes the next wait.
pub struct Changes {
    feed: Option<ChangeFeed>,
}

impl Changes {
    pub fn new(cluster: &dyn Cluster) -> Self {
        Changes {
            feed: cluster.observe(),
        }
    }

    /// Forget the changes seen so far: call just before looking at the cluster.
    pub fn mark(&mut self) {
        if let Some(feed) = &mut self.feed {
            feed.drain();
        }
    }

    /// Wait for a change since the last mark, or until `deadline`.
    pub async fn wait(&mut self, deadline: tokio::time::Instant) {
        match &mut self.feed {
            Some(feed) => {
                let _ = tokio::time::timeout_at(deadline, feed.next()).await;
            }
            None => {
                let next_poll = tokio::time::Instant::now() + POLL_INTERVAL;
                tokio::time::sleep_until(next_poll.min(deadline)).await;
            }
        }
    }
}

/// How every component's `User-Agent` starts (then its name): the scenario's own requests carry
/// none, so a fault limited to this prefix fails the components and never the scenario.
pub const COMPONENT_USER_AGENT: &str = "tollgate-component/";

/// Sets a component's `User-Agent` on each request.
pub fn component_agent(
    component: &str,
) -> impl Fn(http::Request<kube::client::Body>) -> http::Request<kube::client::Body> + Clone + use<>
{
    let agent = http::HeaderValue::from_str(&format!("{COMPONENT_USER_AGENT}{component}"))
        .unwrap_or(http::HeaderValue::from_static(COMPONENT_USER_AGENT));
    move |mut request| {
        request
            .headers_mut()
            .insert(http::header::USER_AGENT, agent.clone());
        request
    }
}
