//! Helpers shared by the integration tests.
#![allow(dead_code)]

use bytes::Bytes;
use fake_apiserver::FakeApiServer;
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use tower::ServiceExt;

/// A server on a fixed virtual start time (use inside `#[tokio::test(start_paused = true)]`).
pub fn server() -> FakeApiServer {
    FakeApiServer::builder()
        .start_time("2026-01-01T00:00:00Z".parse().expect("valid timestamp"))
        .build()
        .expect("server starts")
}

/// A raw HTTP exchange with the server's service: (status code, JSON body or Null).
pub async fn raw(
    server: &FakeApiServer,
    method: &str,
    path: &str,
    content_type: &str,
    body: impl Into<Bytes>,
) -> (u16, Value) {
    let mut req = http::Request::builder().method(method).uri(path);
    if !content_type.is_empty() {
        req = req.header("content-type", content_type);
    }
    let req = req.body(Full::new(body.into())).expect("request builds");
    let resp = server
        .service()
        .oneshot(req)
        .await
        .expect("service answers");
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// The `kube::Error::Api` status of a failed call.
pub fn api_err<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> kube::core::Status {
    match r {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// A ConfigMap with just a name.
pub fn cm(name: &str) -> k8s_openapi::api::core::v1::ConfigMap {
    k8s_openapi::api::core::v1::ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Delete the `kube-root-ca.crt` ConfigMap every namespace holds (written by kube-controller-manager's
/// root-ca publisher on a real cluster, by the fake when the namespace is created), for tests that
/// count every ConfigMap of a namespace.
pub async fn drop_root_ca(server: &FakeApiServer, ns: &str) {
    let (code, body) = raw(
        server,
        "DELETE",
        &format!("/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt"),
        "",
        Bytes::new(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
}
