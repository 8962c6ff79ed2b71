//! A scripted admission webhook: HTTPS on loopback with a self-signed certificate of its own (its
//! PEM is a configuration's `caBundle`), answering each AdmissionReview with what a function says
//! and keeping every request it was sent. For tests of what an API server does with a webhook's
//! answers: the fake's own tests, its benchmarks and the differential corpus serve one, and so can
//! a user's tests of a controller that lives with webhooks.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio_rustls::rustls;

/// One call: the path of the URL the configuration names, and the review's `request`.
#[derive(Clone, Debug)]
pub struct Call {
    pub path: String,
    pub request: Value,
}

/// What the webhook answers a call with: the review's `response` (its `uid` and `allowed` are
/// filled in when left out) or, as `Err`, a raw HTTP answer (code, `text/plain` body).
pub type Answered = Result<Value, (u16, String)>;

/// How the webhook answers; it may take its time, and call the API server itself first.
pub type Answer = Arc<dyn Fn(Call) -> Pin<Box<dyn Future<Output = Answered> + Send>> + Send + Sync>;

/// Why the webhook could not start.
#[derive(Debug, thiserror::Error)]
pub enum ScriptedError {
    #[error("binding a port of loopback: {0}")]
    Bind(#[from] std::io::Error),
    #[error("making the webhook's certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("setting up the webhook's TLS: {0}")]
    Tls(#[from] rustls::Error),
}

/// A running webhook; it stops when dropped.
pub struct Webhook {
    pub addr: SocketAddr,
    /// The serving certificate, PEM, base64: what a configuration's `caBundle` holds.
    pub ca_bundle: String,
    seen: Arc<Mutex<Vec<Call>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Webhook {
    /// The calls it was sent so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The reviews' `request`s it was sent so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.calls().into_iter().map(|c| c.request).collect()
    }

    /// `https://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }

    /// A `clientConfig` calling `path` here.
    pub fn client_config(&self, path: &str) -> Value {
        json!({"url": self.url(path), "caBundle": self.ca_bundle})
    }
}

/// A JSONPatch response allowing the request.
pub fn patched(ops: Value) -> Value {
    let patch = base64::engine::general_purpose::STANDARD.encode(ops.to_string());
    json!({"allowed": true, "patchType": "JSONPatch", "patch": patch})
}

/// Serve `answer` on a port of loopback, with a certificate for these DNS names or IP addresses
/// (`127.0.0.1` for a configuration's `url`; `<service>.<namespace>.svc` for its `service`).
pub async fn serve(names: &[&str], answer: Answer) -> Result<Webhook, ScriptedError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    // A name of its own: a bundle holding another webhook's certificate must not look like it.
    let mut params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())?;
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        format!("tollgate webhook {addr}"),
    );
    let signing_key = rcgen::KeyPair::generate()?;
    let cert = params.self_signed(&signing_key)?;
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        signing_key.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key)?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    // Nothing after the client's Finished, as Go's servers send nothing then: a client whose
    // request waits for that message's ACK (Nagle's algorithm) waits out the delayed ACK here
    // too, as it would calling a webhook written in Go.
    config.send_tls13_tickets = 0;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let seen: Arc<Mutex<Vec<Call>>> = Arc::default();
    let task = tokio::spawn(accept(listener, acceptor, answer, seen.clone()));
    Ok(Webhook {
        addr,
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(cert.pem()),
        seen,
        task,
    })
}

async fn accept(
    listener: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    answer: Answer,
    seen: Arc<Mutex<Vec<Call>>>,
) {
    // The connections are this task's own: when the webhook is dropped and this task aborted,
    // they end with it (a client's pooled connection is not served on).
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            return;
        };
        // Reap the finished ones, so a long-lived webhook does not keep them.
        while connections.try_join_next().is_some() {}
        // As Go's net package does for every connection, so webhooks written in Go serve.
        let _ = tcp.set_nodelay(true);
        let (acceptor, answer, seen) = (acceptor.clone(), answer.clone(), seen.clone());
        connections.spawn(async move {
            let Ok(tls) = acceptor.accept(tcp).await else {
                return;
            };
            let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                review(req, answer.clone(), seen.clone())
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

/// Answer one AdmissionReview.
async fn review(
    req: http::Request<hyper::body::Incoming>,
    answer: Answer,
    seen: Arc<Mutex<Vec<Call>>>,
) -> Result<http::Response<Full<Bytes>>, http::Error> {
    let path = req.uri().path().to_string();
    let body = req.into_body().collect().await.map(|b| b.to_bytes());
    let review: Value = serde_json::from_slice(&body.unwrap_or_default()).unwrap_or_default();
    let call = Call {
        path,
        request: review["request"].clone(),
    };
    if let Ok(mut s) = seen.lock() {
        s.push(call.clone());
    }
    let uid = call.request["uid"].clone();
    let (code, content_type, text) = match answer(call).await {
        Ok(mut response) => {
            if let Some(fields) = response.as_object_mut() {
                fields.entry("uid").or_insert(uid);
                fields.entry("allowed").or_insert(json!(true));
            }
            let out = json!({"apiVersion": review["apiVersion"], "kind": "AdmissionReview",
                "response": response});
            (200, "application/json", out.to_string())
        }
        Err((code, text)) => (code, "text/plain", text),
    };
    http::Response::builder()
        .status(code)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(text)))
}
