//! Requests to workers retried as Kueue's remote clients (client-go's REST client) retry them:
//! an answer of 429 or 5xx that says when to come back (`Retry-After`) is sent again after that
//! many seconds, and a GET whose connection was reset is sent again at once, at most
//! [`MAX_RETRIES`] times. Anything else (a 500 without `Retry-After`, a refused connection, a
//! write whose connection was reset) reaches the caller at once, as in client-go.
//!
//! Without this, one throttled list would fail a whole connection attempt to a worker and double
//! MultiKueue's wait before the next, where Kueue would not even notice. kube's own
//! `RetryPolicy` is not client-go's: it retries a 503 or 504 without `Retry-After`, never a reset
//! connection, and jitters its pauses at random (a virtual-time run would not replay).

use std::error::Error as StdError;
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kube::client::Body;
use tower::BoxError;
use tower::retry::{Policy, RetryLayer};

/// client-go's `maxRetries` for a REST request.
pub const MAX_RETRIES: u32 = 10;

/// The retry policy; one per request (tower clones it for each).
#[derive(Debug, Clone, Default)]
pub struct ClientGoRetry {
    retries: u32,
}

/// The layer to put in front of a worker client's service.
pub fn layer() -> RetryLayer<ClientGoRetry> {
    RetryLayer::new(ClientGoRetry::default())
}

impl<Res> Policy<Request<Body>, Response<Res>, BoxError> for ClientGoRetry {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        req: &mut Request<Body>,
        result: &mut Result<Response<Res>, BoxError>,
    ) -> Option<Self::Future> {
        if self.retries >= MAX_RETRIES {
            return None;
        }
        let wait = match result {
            Ok(answer) => come_back_after(answer.status(), answer.headers())?,
            Err(e) if req.method() == Method::GET && is_connection_reset(&**e) => Duration::ZERO,
            Err(_) => return None,
        };
        self.retries += 1;
        Some(tokio::time::sleep(wait))
    }

    fn clone_request(&mut self, req: &Request<Body>) -> Option<Request<Body>> {
        support::resend::copy_request(req)
    }
}

/// client-go's `checkWait`: a 429 or 5xx with a whole number of seconds in `Retry-After`.
fn come_back_after(status: StatusCode, headers: &http::HeaderMap) -> Option<Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    support::resend::retry_after(headers)
}

/// client-go's `IsConnectionReset || IsProbableEOF`: the connection broke under the request.
/// A refused connection is not one (the worker is not there to ask again).
fn is_connection_reset(error: &(dyn StdError + 'static)) -> bool {
    use std::io::ErrorKind::*;
    let mut cause = Some(error);
    while let Some(e) = cause {
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && matches!(
                io.kind(),
                ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
            )
        {
            return true;
        }
        if e.downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_incomplete_message)
        {
            return true;
        }
        cause = e.source();
    }
    false
}

#[cfg(test)]
#[path = "retry_tests.rs"]
mod tests;
