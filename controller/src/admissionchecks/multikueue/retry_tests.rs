//! Which failed worker requests are sent again, and when: client-go's rules.

use super::*;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use rstest::rstest;
use tower::{Service, ServiceExt};

/// What the worker answers to every request.
#[derive(Clone, Copy, Debug)]
enum Answer {
    Status(u16, Option<&'static str>),
    Io(std::io::ErrorKind),
}

/// A worker that answers `answer` to the first `failures` requests and 200 afterwards; how many
/// requests it saw.
#[derive(Clone)]
struct Worker {
    answer: Answer,
    failures: u32,
    seen: Arc<AtomicU32>,
}

impl Service<Request<Body>> for Worker {
    type Response = Response<()>;
    type Error = BoxError;
    type Future = futures::future::Ready<Result<Response<()>, BoxError>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: Request<Body>) -> Self::Future {
        let n = self.seen.fetch_add(1, Ordering::SeqCst);
        let answer = if n < self.failures {
            self.answer
        } else {
            Answer::Status(200, None)
        };
        futures::future::ready(match answer {
            Answer::Status(code, retry_after) => {
                let mut r = Response::builder().status(code);
                if let Some(s) = retry_after {
                    r = r.header(http::header::RETRY_AFTER, s);
                }
                Ok(r.body(()).expect("a response"))
            }
            Answer::Io(kind) => Err(Box::new(std::io::Error::new(kind, "io")) as BoxError),
        })
    }
}

/// Sends one request through the retry; what came back, how many requests the worker saw and
/// how much virtual time passed.
async fn send(method: Method, answer: Answer, failures: u32) -> (Option<u16>, u32, Duration) {
    let seen = Arc::new(AtomicU32::new(0));
    let worker = Worker {
        answer,
        failures,
        seen: seen.clone(),
    };
    let mut svc = tower::Layer::layer(&layer(), worker);
    let req = Request::builder()
        .method(method)
        .uri("/api/v1/namespaces/default/configmaps")
        .body(Body::from(b"{}".to_vec()))
        .expect("a request");
    let start = tokio::time::Instant::now();
    let result = svc.ready().await.expect("ready").call(req).await;
    (
        result.ok().map(|r| r.status().as_u16()),
        seen.load(Ordering::SeqCst),
        start.elapsed(),
    )
}

#[rstest]
#[case::throttled_with_retry_after(Method::GET, Answer::Status(429, Some("3")), Some(200), 2, 3)]
#[case::a_5xx_with_retry_after(Method::POST, Answer::Status(503, Some("1")), Some(200), 2, 1)]
#[case::a_500_without_retry_after(Method::GET, Answer::Status(500, None), Some(500), 1, 0)]
#[case::a_429_without_retry_after(Method::GET, Answer::Status(429, None), Some(429), 1, 0)]
#[case::a_4xx_with_retry_after(Method::GET, Answer::Status(409, Some("1")), Some(409), 1, 0)]
#[case::a_get_whose_connection_was_reset(
    Method::GET,
    Answer::Io(std::io::ErrorKind::ConnectionReset),
    Some(200),
    2,
    0
)]
#[case::a_write_whose_connection_was_reset(
    Method::PUT,
    Answer::Io(std::io::ErrorKind::ConnectionReset),
    None,
    1,
    0
)]
#[case::a_refused_connection(
    Method::GET,
    Answer::Io(std::io::ErrorKind::ConnectionRefused),
    None,
    1,
    0
)]
#[tokio::test(start_paused = true)]
async fn a_failure_client_go_retries_is_sent_again(
    #[case] method: Method,
    #[case] answer: Answer,
    #[case] outcome: Option<u16>,
    #[case] requests: u32,
    #[case] waited_seconds: u64,
) {
    let (got, seen, waited) = send(method, answer, 1).await;
    assert_eq!(got, outcome);
    assert_eq!(seen, requests);
    assert_eq!(waited, Duration::from_secs(waited_seconds));
}

#[tokio::test(start_paused = true)]
async fn after_ten_retries_the_failure_is_the_callers() {
    let (got, seen, _) = send(Method::GET, Answer::Status(429, Some("1")), u32::MAX).await;
    assert_eq!(got, Some(429));
    assert_eq!(seen, 1 + MAX_RETRIES);
}
