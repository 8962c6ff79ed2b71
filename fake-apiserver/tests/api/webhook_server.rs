//! An admission webhook for tests: HTTPS on loopback with a certificate of its own (its PEM is the
//! configuration's caBundle), answering each AdmissionReview with what the test's function says
//! and keeping every request it was sent.

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

/// What the webhook answers a review's `request` with: the `response` (uid and allowed are
/// filled in when left out) or, as `Err`, a raw HTTP answer (code, `text/plain` body).
pub type Answer = Arc<dyn Fn(&Value) -> Result<Value, (u16, String)> + Send + Sync>;

/// An answer that takes its time (it may call the API server itself before it answers).
pub type AsyncAnswer = Arc<
    dyn Fn(Value) -> Pin<Box<dyn Future<Output = Result<Value, (u16, String)>> + Send>>
        + Send
        + Sync,
>;

/// A running webhook; it stops when dropped.
pub struct Webhook {
    pub addr: SocketAddr,
    /// The serving certificate, PEM, base64: what a configuration's `caBundle` holds.
    pub ca_bundle: String,
    seen: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Webhook {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Webhook {
    /// The reviews' `request`s it was sent so far.
    pub fn requests(&self) -> Vec<Value> {
        self.seen.lock().expect("requests").clone()
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

/// Serve `answer` on a port of loopback, with a certificate for 127.0.0.1.
pub async fn start(answer: Answer) -> Webhook {
    let answer: AsyncAnswer = Arc::new(move |request: Value| {
        let answered = answer(&request);
        Box::pin(async move { answered })
    });
    start_as(&["127.0.0.1"], answer).await
}

/// Serve `answer` on a port of loopback, with a certificate for these names.
pub async fn start_as(names: &[&str], answer: AsyncAnswer) -> Webhook {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let addr = listener.local_addr().expect("its address");
    // A name of its own: a bundle holding another webhook's certificate must not look like it.
    let mut params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .expect("certificate names");
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        format!("tollgate test webhook {addr}"),
    );
    let signing_key = rcgen::KeyPair::generate().expect("a key");
    let cert = params.self_signed(&signing_key).expect("a certificate");
    let pem = cert.pem();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(rustls::pki_types::PrivatePkcs8KeyDer::from(
        signing_key.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone()], key)
        .expect("a serving configuration");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    // Nothing after the client's Finished, as Go's servers send nothing then: a client whose
    // request waits for that message's ACK (Nagle's algorithm) waits out the delayed ACK here
    // too, as it would calling a webhook written in Go.
    config.send_tls13_tickets = 0;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
    let kept = seen.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            // As Go's net package does for every connection, so webhooks written in Go serve.
            let _ = tcp.set_nodelay(true);
            let (acceptor, answer, kept) = (acceptor.clone(), answer.clone(), kept.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let (answer, kept) = (answer.clone(), kept.clone());
                    async move {
                        let body = req.into_body().collect().await.map(|b| b.to_bytes());
                        let review: Value =
                            serde_json::from_slice(&body.unwrap_or_default()).unwrap_or_default();
                        let request = review["request"].clone();
                        kept.lock().expect("requests").push(request.clone());
                        let (code, content_type, text) = match answer(request.clone()).await {
                            Ok(mut response) => {
                                response["uid"] = request["uid"].clone();
                                if response.get("allowed").is_none() {
                                    response["allowed"] = json!(true);
                                }
                                let api_version = review["apiVersion"].clone();
                                let out = json!({"apiVersion": api_version, "kind": "AdmissionReview", "response": response});
                                (200, "application/json", out.to_string())
                            }
                            Err((code, text)) => (code, "text/plain", text),
                        };
                        http::Response::builder()
                            .status(code)
                            .header("content-type", content_type)
                            .body(Full::new(Bytes::from(text)))
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    Webhook {
        addr,
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(pem),
        seen,
        task,
    }
}
