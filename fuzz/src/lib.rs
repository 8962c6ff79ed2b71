//! What the fuzz targets share: a fake API server on virtual time, requests written as text, and
//! the check every failed answer must pass.
//!
//! A request is written as on the wire, without the HTTP version:
//!
//! ```text
//! PATCH /api/v1/namespaces/default/configmaps/a?fieldManager=x
//! Content-Type: application/merge-patch+json
//!
//! {"data": {"k": "v"}}
//! ```
//!
//! An input holds up to [`MAX_REQUESTS`] of them, separated by a line `%%`, so that a create can be
//! followed by the patch that reaches the object.

use std::time::Duration;

use bytes::Bytes;
use fake_apiserver::FakeApiServer;
use http_body_util::{BodyExt, Full};
use tokio::runtime::Runtime;
use tower::ServiceExt;

#[path = "../../fake-apiserver/tests/api/answer_check.rs"]
mod answer_check;

pub use answer_check::{DELIBERATE_SERVER_ERRORS, problem};

/// More requests than this in one input are ignored: long inputs slow every run down.
pub const MAX_REQUESTS: usize = 8;

/// A current-thread runtime whose clock is paused: the server's waits (a resourceVersion not yet
/// reached waits 3 s) pass in virtual time.
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds")
}

/// A custom resource of every shape the router tells apart: namespaced, with the status and
/// scale subresources, a schema with defaults, and a served deprecated version.
pub const WIDGETS_CRD: &str = r#"{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
 "metadata": {"name": "widgets.fuzz.example.com"},
 "spec": {"group": "fuzz.example.com", "scope": "Namespaced",
  "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList", "shortNames": ["wd"]},
  "versions": [
   {"name": "v1", "served": true, "storage": true,
    "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
     "spec": {"type": "object", "properties": {
      "replicas": {"type": "integer", "minimum": 0, "default": 1},
      "size": {"type": "string", "enum": ["small", "large"]},
      "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
       "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "value": {"type": "string"}}}},
      "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}},
     "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}}},
   {"name": "v1beta1", "served": true, "storage": false, "deprecated": true,
    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}}"#;

/// A fresh server with [`WIDGETS_CRD`], on virtual time. Call inside the runtime.
///
/// Not the project's CRDs: installing them takes about 60 ms, most of a run's time.
pub fn server() -> FakeApiServer {
    FakeApiServer::builder()
        .start_time("2026-01-01T00:00:00Z".parse().expect("a valid timestamp"))
        .crds_yaml("widgets", WIDGETS_CRD)
        .build()
        .expect("the server starts")
}

/// A fresh server without custom resources, on virtual time. Call inside the runtime.
pub fn plain_server() -> FakeApiServer {
    FakeApiServer::builder()
        .start_time("2026-01-01T00:00:00Z".parse().expect("a valid timestamp"))
        .build()
        .expect("the server starts")
}

/// A fresh server with the project's CRDs (Kueue's and ProvisioningRequest). Slow to make.
pub fn kueue_server() -> FakeApiServer {
    let mut builder = FakeApiServer::builder()
        .start_time("2026-01-01T00:00:00Z".parse().expect("a valid timestamp"));
    for (name, yaml) in api::CHECKED_IN_CRDS {
        builder = builder.crds_yaml(name, yaml);
    }
    builder.build().expect("the server starts")
}

/// One request, as read from an input.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn new(method: &str, target: &str, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        let headers = if content_type.is_empty() {
            Vec::new()
        } else {
            vec![("content-type".into(), content_type.into())]
        };
        Request {
            method: method.into(),
            target: target.into(),
            headers,
            body: body.into(),
        }
    }

    /// The requests of an input; text that is no request (no method and target) is skipped.
    pub fn parse_all(input: &[u8]) -> Vec<Request> {
        split(input, b"\n%%\n")
            .into_iter()
            .filter_map(Request::parse)
            .take(MAX_REQUESTS)
            .collect()
    }

    fn parse(text: &[u8]) -> Option<Request> {
        let (head, body) = match find(text, b"\n\n") {
            Some(at) => (&text[..at], text[at + 2..].to_vec()),
            None => (text, Vec::new()),
        };
        let head = std::str::from_utf8(head).ok()?;
        let mut lines = head.lines();
        let (method, target) = lines.next()?.trim().split_once(' ')?;
        let headers = lines
            .filter_map(|l| l.split_once(':'))
            .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        Some(Request {
            method: method.to_string(),
            target: target.trim().to_string(),
            headers,
            body,
        })
    }

    /// Whether the server would stream the answer (a watch) instead of sending one document.
    pub fn is_watch(&self) -> bool {
        let (path, query) = self.target.split_once('?').unwrap_or((&self.target, ""));
        let watch_param = url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "watch")
            .is_some_and(|(_, v)| !(v == "0" || v.eq_ignore_ascii_case("false")));
        self.method == "GET" && (watch_param || path.contains("/watch/"))
    }
}

/// The answer to one request. The body of a successful answer is not read (a watch's never ends).
#[derive(Debug)]
pub struct Answer {
    pub code: u16,
    pub content_type: String,
    pub body: Bytes,
}

impl Answer {
    /// The answer as JSON, or null.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_default()
    }
}

/// Send a request the way a client would; `None` when no client could send it (a method or target
/// that is not valid HTTP).
pub async fn send(server: &FakeApiServer, req: &Request) -> Option<Answer> {
    let mut builder = http::Request::builder()
        .method(req.method.as_str())
        .uri(req.target.as_str());
    for (k, v) in &req.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    let request = builder
        .body(Full::new(Bytes::from(req.body.clone())))
        .ok()?;
    let response = server
        .service()
        .oneshot(request)
        .await
        .expect("the service answers (no partition in the fuzz runs)");
    let code = response.status().as_u16();
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = if code >= 300 || !req.is_watch() {
        // A document: bounded, so a body that never ends is a hang libFuzzer reports.
        tokio::time::timeout(Duration::from_secs(3600), response.into_body().collect())
            .await
            .expect("a document's body ends")
            .expect("a body reads")
            .to_bytes()
    } else {
        Bytes::new()
    };
    Some(Answer {
        code,
        content_type,
        body,
    })
}

/// Send a request and panic (the fuzzer's finding) when its answer is not one the server may give:
/// a failure that is no `Status` (see [`problem`]), or a JSON document that does not parse.
pub async fn send_checked(server: &FakeApiServer, req: &Request) -> Option<Answer> {
    let answer = send(server, req).await?;
    let path = req.target.split('?').next().unwrap_or("");
    if let Some(why) = problem(path, answer.code, &answer.content_type, &answer.body) {
        panic!(
            "{} {}: {why}\nbody: {}",
            req.method,
            req.target,
            String::from_utf8_lossy(&answer.body)
        );
    }
    let json = answer.content_type.starts_with("application/json");
    if answer.code < 300
        && json
        && !req.is_watch()
        && serde_json::from_slice::<serde_json::Value>(&answer.body).is_err()
    {
        panic!(
            "{} {}: a {} that is not JSON\nbody: {}",
            req.method,
            req.target,
            answer.code,
            String::from_utf8_lossy(&answer.body)
        );
    }
    Some(answer)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Split on every `separator`.
pub fn split<'a>(mut input: &'a [u8], separator: &[u8]) -> Vec<&'a [u8]> {
    let mut parts = Vec::new();
    while let Some(at) = find(input, separator) {
        parts.push(&input[..at]);
        input = &input[at + separator.len()..];
    }
    parts.push(input);
    parts
}

/// The two halves of an input split at its first line `---` (a target and a patch).
pub fn halves(input: &[u8]) -> Option<(&[u8], &[u8])> {
    let at = find(input, b"\n---\n")?;
    Some((&input[..at], &input[at + 5..]))
}
