//! What a client needs to send a request again: a copy of it, and when the server said to come
//! back. Shared by the retries of conformance (any transient failure) and of the controller's
//! worker clients (client-go's rules).

use std::time::Duration;

use http::{HeaderMap, Request, header};
use kube::client::Body;

/// A copy of `request` to send again; `None` when its body can be sent only once (streamed).
pub fn copy_request(request: &Request<Body>) -> Option<Request<Body>> {
    let mut again = Request::new(request.body().try_clone()?);
    *again.method_mut() = request.method().clone();
    *again.uri_mut() = request.uri().clone();
    *again.version_mut() = request.version();
    *again.headers_mut() = request.headers().clone();
    *again.extensions_mut() = request.extensions().clone();
    Some(again)
}

/// The answer's `Retry-After`, when it is a whole number of seconds (as kube-apiserver sends it).
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds = headers.get(header::RETRY_AFTER)?.to_str().ok()?;
    seconds.trim().parse::<u64>().ok().map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_the_same_request() {
        let request = Request::builder()
            .method("PUT")
            .uri("/api/v1/namespaces/default/configmaps/a")
            .header("content-type", "application/json")
            .body(Body::from(b"{}".to_vec()))
            .expect("a request");
        let again = copy_request(&request).expect("a body that can be sent twice");
        assert_eq!(again.method(), request.method());
        assert_eq!(again.uri(), request.uri());
        assert_eq!(again.headers(), request.headers());
    }

    #[test]
    fn retry_after_is_whole_seconds() {
        let with = |v: &str| {
            let mut h = HeaderMap::new();
            h.insert(header::RETRY_AFTER, v.parse().expect("a header value"));
            retry_after(&h)
        };
        assert_eq!(with("2"), Some(Duration::from_secs(2)));
        assert_eq!(with("soon"), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }
}
