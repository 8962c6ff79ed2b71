//! The network path from the manager to one worker cluster, in process: up, cut (connections
//! refused, or requests left hanging), or slow. Only the manager's requests to that worker take
//! it; the worker's own components and the scenario reach the worker's API server directly, as
//! they would from inside the worker's network, so a cut worker keeps running its jobs and stays
//! observable.
//!
//! Cuts are the network's, not the API server's (those are [`fake_apiserver::Faults`]):
//! - `Refuse`: requests fail at once as a closed port would make them fail, and open streams
//!   (watches) are reset.
//! - `Hang`: requests get no answer and open streams go quiet until the link heals, then carry on
//!   (as TCP retransmits would). kube's default client sets no read timeout, so a caller that wants
//!   to give up must bound its own calls.
//!
//! Latency delays each request before it reaches the worker; events on an open watch are not
//! delayed.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use fake_apiserver::http::{ApiService, ResponseBody};
use futures::future::BoxFuture;
use http_body::{Body, Frame};
use tokio::sync::watch;

/// How a link is cut.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Cut {
    /// Connections are refused; open streams are reset.
    #[default]
    Refuse,
    /// Nothing answers until the link heals.
    Hang,
}

#[derive(Debug, Clone, Copy, Default)]
struct State {
    cut: Option<Cut>,
    latency: Duration,
    /// Counts cuts, so that the end of a timed cut does not heal a later one.
    generation: u64,
}

/// The link from the manager to one worker. Cheap to clone; clones control the same link.
#[derive(Clone)]
pub struct Link {
    state: Arc<watch::Sender<State>>,
}

impl Default for Link {
    fn default() -> Self {
        Link {
            state: Arc::new(watch::Sender::new(State::default())),
        }
    }
}

impl std::fmt::Debug for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = *self.state.borrow();
        f.debug_struct("Link")
            .field("cut", &s.cut)
            .field("latency", &s.latency)
            .finish()
    }
}

impl Link {
    /// Cut the link until [`Link::heal`], or for `duration` of virtual time.
    pub fn partition(&self, cut: Cut, duration: Option<Duration>) {
        let mut generation = 0;
        self.state.send_modify(|s| {
            s.generation += 1;
            s.cut = Some(cut);
            generation = s.generation;
        });
        let Some(duration) = duration else {
            return;
        };
        // Without a runtime nothing can be waiting on the link: the cut lasts until healed.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let state = self.state.clone();
            runtime.spawn(async move {
                tokio::time::sleep(duration).await;
                state.send_if_modified(|s| {
                    let ends = s.generation == generation && s.cut.is_some();
                    if ends {
                        s.cut = None;
                    }
                    ends
                });
            });
        }
    }

    /// End a cut now: hanging requests and streams carry on.
    pub fn heal(&self) {
        self.state.send_if_modified(|s| s.cut.take().is_some());
    }

    /// Delay every request by `latency` (zero: no delay).
    pub fn set_latency(&self, latency: Duration) {
        self.state.send_if_modified(|s| {
            let changed = s.latency != latency;
            s.latency = latency;
            changed
        });
    }

    /// How the link is cut now, if it is.
    pub fn cut(&self) -> Option<Cut> {
        self.state.borrow().cut
    }

    pub fn latency(&self) -> Duration {
        self.state.borrow().latency
    }

    /// The worker's API service behind this link: what the manager's client for it sends through.
    pub fn service(&self, worker: ApiService) -> LinkService {
        LinkService {
            link: self.clone(),
            worker: Some(worker),
        }
    }

    /// A service for an address where nothing listens: every request is refused.
    pub fn nowhere() -> LinkService {
        LinkService {
            link: Link::default(),
            worker: None,
        }
    }

    /// Resolves at the link's next change. Subscribes now, so a change made after this call and
    /// before the first poll still counts.
    fn changed(&self) -> BoxFuture<'static, ()> {
        let mut rx = self.state.subscribe();
        Box::pin(async move {
            // The sender lives as long as any clone of the link, which the caller holds.
            let _ = rx.changed().await;
        })
    }

    /// Wait until a request may pass: at once on an up link, never on a refusing one.
    async fn pass(&self) -> Result<(), std::io::Error> {
        loop {
            let changed = self.changed();
            match self.cut() {
                None => return Ok(()),
                Some(Cut::Refuse) => return Err(refused()),
                Some(Cut::Hang) => changed.await,
            }
        }
    }
}

fn refused() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "connection refused")
}

fn reset() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::ConnectionReset,
        "connection reset by peer",
    )
}

/// A worker's API service seen through a link (or nothing, for an unknown address).
#[derive(Clone)]
pub struct LinkService {
    link: Link,
    worker: Option<ApiService>,
}

impl<B> tower::Service<http::Request<B>> for LinkService
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = http::Response<LinkBody>;
    type Error = std::io::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let link = self.link.clone();
        let worker = self.worker.clone();
        Box::pin(async move {
            let Some(worker) = worker else {
                return Err(refused());
            };
            link.pass().await?;
            let latency = link.latency();
            if !latency.is_zero() {
                tokio::time::sleep(latency).await;
                link.pass().await?;
            }
            let resp = tower::ServiceExt::oneshot(worker, req).await?;
            Ok(resp.map(|body| LinkBody::new(body, link)))
        })
    }
}

/// A response body through a link: reset when the link refuses, quiet while it hangs.
pub struct LinkBody {
    inner: ResponseBody,
    link: Link,
    /// Wakes the body when the link changes; armed before the link's state is read.
    changed: Option<BoxFuture<'static, ()>>,
    reset: bool,
}

impl LinkBody {
    fn new(inner: ResponseBody, link: Link) -> Self {
        LinkBody {
            inner,
            link,
            changed: None,
            reset: false,
        }
    }
}

impl Body for LinkBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        if this.reset {
            return Poll::Ready(None);
        }
        loop {
            let link = &this.link;
            let changed = this.changed.get_or_insert_with(|| link.changed());
            if changed.as_mut().poll(cx).is_ready() {
                this.changed = None;
                continue;
            }
            return match this.link.cut() {
                Some(Cut::Refuse) => {
                    this.reset = true;
                    Poll::Ready(Some(Err(reset())))
                }
                Some(Cut::Hang) => Poll::Pending,
                None => Pin::new(&mut this.inner)
                    .poll_frame(cx)
                    .map_err(|never| match never {}),
            };
        }
    }
}
