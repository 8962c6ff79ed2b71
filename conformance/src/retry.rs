//! A flaky cluster is not a failing class: the suite's requests that the API server answers with
//! 429, 500, 502, 503 or 504, or that never reach it, are sent again, with a growing pause (or the
//! server's `Retry-After`), before any test sees the error. Only an error that outlasts
//! [`ATTEMPTS`] tries reaches a test.
//!
//! Streamed request bodies cannot be sent twice and are sent once; the suite sends none. A watch
//! is retried only until it starts: once its answer streams, a closed watch is the watcher's to
//! resume, as it does.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube::client::Body;

/// How many times a request is tried in all.
pub const ATTEMPTS: u32 = 8;
/// The first pause; each next one doubles, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(200);
const MAX_PAUSE: Duration = Duration::from_secs(5);

/// `client`, with its transient failures retried.
pub fn retrying(client: kube::Client) -> kube::Client {
    let namespace = client.default_namespace().to_string();
    kube::Client::new(Retrying { client }, namespace)
}

#[derive(Clone)]
struct Retrying {
    client: kube::Client,
}

/// Whether an answer is worth another try: throttling, or the server (or something before it)
/// failing rather than refusing.
fn transient(status: StatusCode) -> bool {
    matches!(status.as_u16(), 429 | 500 | 502 | 503 | 504)
}

/// The server's `Retry-After` (whole seconds), capped at [`MAX_PAUSE`].
fn retry_after(response: &Response<Body>) -> Option<Duration> {
    support::resend::retry_after(response.headers()).map(|wait| wait.min(MAX_PAUSE))
}

impl tower::Service<Request<Body>> for Retrying {
    type Response = Response<Body>;
    type Error = kube::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, kube::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let client = self.client.clone();
        Box::pin(async move {
            let mut pause = FIRST_PAUSE;
            let mut attempt = 1;
            loop {
                let again = (attempt < ATTEMPTS)
                    .then(|| support::resend::copy_request(&request))
                    .flatten();
                let Some(again) = again else {
                    // The last try, or a body that cannot be sent twice: as it comes.
                    return client.send(request).await;
                };
                let wait = match client.send(again).await {
                    Ok(response) if transient(response.status()) => {
                        retry_after(&response).unwrap_or(pause)
                    }
                    Ok(response) => return Ok(response),
                    Err(kube::Error::HyperError(_) | kube::Error::Service(_)) => pause,
                    Err(other) => return Err(other),
                };
                tracing::debug!(uri = %request.uri(), attempt, ?wait, "transient failure; trying again");
                tokio::time::sleep(wait).await;
                pause = (pause * 2).min(MAX_PAUSE);
                attempt += 1;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_throttling_and_server_failures_are_retried() {
        for code in [429, 500, 502, 503, 504] {
            assert!(transient(StatusCode::from_u16(code).unwrap()), "{code}");
        }
        for code in [200, 201, 400, 401, 403, 404, 409, 410, 422] {
            assert!(!transient(StatusCode::from_u16(code).unwrap()), "{code}");
        }
    }

    #[test]
    fn retry_after_is_read_in_seconds_and_capped() {
        let with = |v: &str| {
            let mut r = Response::new(Body::empty());
            r.headers_mut()
                .insert(http::header::RETRY_AFTER, v.parse().unwrap());
            retry_after(&r)
        };
        assert_eq!(with("2"), Some(Duration::from_secs(2)));
        assert_eq!(with("3600"), Some(MAX_PAUSE));
        assert_eq!(with("soon"), None);
    }
}
