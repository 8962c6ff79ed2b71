//! One call to a webhook: an HTTPS POST of a JSON document to the configuration's URL, trusting
//! its `caBundle` (or the system's roots when it has none), within the webhook's timeout, as
//! kube-apiserver's webhook client makes it. Failures are worded as Go's HTTP client words them,
//! since they end up in the Status a client reads.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::client::{WebPkiServerVerifier, verify_server_name};
use tokio_rustls::rustls::crypto::{
    CryptoProvider, verify_tls12_signature, verify_tls13_signature,
};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::server::ParsedCertificate;
use tokio_rustls::rustls::{self, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// The largest answer read from a webhook (kube-apiserver's limit on a response it decodes).
const MAX_ANSWER_BYTES: usize = 3 * 1024 * 1024;

/// Where a call goes.
#[derive(Debug, Clone)]
pub struct Target {
    /// The URL as kube-apiserver calls it and its errors quote it, `?timeout=` included.
    pub url: String,
    /// The address dialled: the URL's host, or the endpoint of the Service a configuration names.
    pub dial: SocketAddr,
    /// The name the server's certificate must carry (`<service>.<namespace>.svc` for a Service).
    pub server_name: String,
    /// The PEM certificates the server's chain must end in.
    pub ca_bundle: Vec<u8>,
}

/// Why a call got no answer; `Display` is Go's wording after `Post "<url>": `.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The TCP connection failed (`dial tcp 127.0.0.1:9443: connect: connection refused`).
    Dial(String),
    /// The TLS handshake failed (`tls: failed to verify certificate: ...`).
    Tls(String),
    /// No whole answer within the webhook's timeout.
    Timeout,
    /// The connection broke, or what came back was not HTTP.
    Transport(String),
    /// The caBundle holds no certificate.
    Bundle(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Dial(why) | Failure::Tls(why) | Failure::Transport(why) => f.write_str(why),
            Failure::Timeout => f.write_str("context deadline exceeded"),
            Failure::Bundle(why) => write!(f, "unable to load root certificates: {why}"),
        }
    }
}

/// What came back: the HTTP status, the content type and the body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Bytes,
}

/// Whether a caBundle can be trusted at all: empty (the system's roots), or PEM certificates.
pub fn check_bundle(ca_bundle: &[u8]) -> Result<(), String> {
    if ca_bundle.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let mut certificates = 0;
    for cert in CertificateDer::pem_slice_iter(ca_bundle) {
        cert.map_err(|e| format!("failed to parse certificate: {e}"))?;
        certificates += 1;
    }
    if certificates == 0 {
        return Err("unable to parse bytes as PEM block".into());
    }
    Ok(())
}

/// POST `body` (JSON) to `target`, giving up after `timeout`.
pub async fn post(target: &Target, body: Bytes, timeout: Duration) -> Result<Answer, Failure> {
    match tokio::time::timeout(timeout, exchange(target, body)).await {
        Ok(result) => result,
        Err(_) => Err(Failure::Timeout),
    }
}

async fn exchange(target: &Target, body: Bytes) -> Result<Answer, Failure> {
    let config = client_config(&target.ca_bundle)?;
    let tcp = tokio::net::TcpStream::connect(target.dial)
        .await
        .map_err(|e| Failure::Dial(dial_error(target.dial, &e)))?;
    // Without it, Nagle's algorithm holds the request until the webhook ACKs the handshake's
    // last flight, and a server that sends nothing then (Go's) ACKs it late: every call took
    // the 40 ms of Linux's delayed ACK more than the webhook did.
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from(target.server_name.clone())
        .map_err(|e| Failure::Tls(format!("tls: {e}")))?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| Failure::Tls(tls_error(&e, &target.server_name)))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| Failure::Transport(e.to_string()))?;
    // The connection is driven beside the request; it ends when the answer has been read.
    let driver = tokio::spawn(connection);
    // The request names the URL's authority as its Host and the rest as its target.
    let authority_and_path = target.url.split_once("://").map_or("", |(_, rest)| rest);
    let (host, path) = match authority_and_path.find('/') {
        Some(i) => authority_and_path.split_at(i),
        None => (authority_and_path, "/"),
    };
    let request = http::Request::post(path)
        .header(http::header::HOST, host)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, "kube-apiserver-admission")
        .body(Full::new(body))
        .map_err(|e| Failure::Transport(e.to_string()))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| Failure::Transport(transport_error(&e)))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
        .collect()
        .await
        .map_err(|e| Failure::Transport(e.to_string()))?
        .to_bytes();
    driver.abort();
    Ok(Answer {
        status,
        content_type,
        body,
    })
}

/// TLS trusting the bundle's certificates (or the system's roots).
fn client_config(ca_bundle: &[u8]) -> Result<rustls::ClientConfig, Failure> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = RootCertStore::empty();
    let mut pinned = Vec::new();
    // An empty bundle means the system's roots on kube-apiserver; no webhook a test serves on
    // loopback has a certificate they trust, so none are loaded here and such a call fails as
    // it would there (signed by unknown authority).
    check_bundle(ca_bundle).map_err(Failure::Bundle)?;
    for cert in CertificateDer::pem_slice_iter(ca_bundle).flatten() {
        // A certificate webpki takes for no anchor (a CA used as the serving certificate itself)
        // is still trusted as itself, as Go's verifier trusts a root it is shown.
        let _ = roots.add(cert.clone());
        pinned.push(cert);
    }
    let verifier = BundleVerifier {
        webpki: WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .ok(),
        pinned,
        provider: provider.clone(),
    };
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Failure::Tls(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// webpki's verification, and the bundle's certificates trusted as themselves.
#[derive(Debug)]
struct BundleVerifier {
    /// `None` when the bundle gave webpki no anchor at all.
    webpki: Option<Arc<WebPkiServerVerifier>>,
    pinned: Vec<CertificateDer<'static>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for BundleVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let verified = match &self.webpki {
            Some(webpki) => webpki.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                now,
            ),
            None => Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer,
            )),
        };
        match verified {
            Ok(v) => Ok(v),
            Err(e)
                if self
                    .pinned
                    .iter()
                    .any(|c| c.as_ref() == end_entity.as_ref()) =>
            {
                // Trusted as itself; its names must still fit.
                let parsed = ParsedCertificate::try_from(end_entity).map_err(|_| e)?;
                verify_server_name(&parsed, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            Err(e) => Err(e),
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// Go's words for a failed dial.
fn dial_error(addr: SocketAddr, e: &std::io::Error) -> String {
    let why = match e.kind() {
        std::io::ErrorKind::ConnectionRefused => "connect: connection refused".to_string(),
        std::io::ErrorKind::TimedOut => "i/o timeout".to_string(),
        _ => format!("connect: {}", go_errno_text(e)),
    };
    format!("dial tcp {addr}: {why}")
}

/// An OS error as Go prints it: the text without Rust's "(os error N)".
fn go_errno_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_lowercase(),
        None => text.to_lowercase(),
    }
}

/// Go's words for a failed handshake.
fn tls_error(e: &std::io::Error, server_name: &str) -> String {
    let inner = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)) => {
            "tls: failed to verify certificate: x509: certificate signed by unknown authority"
                .into()
        }
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidForNameContext { presented, .. },
        )) if !presented.is_empty() => format!(
            "tls: failed to verify certificate: x509: certificate is valid for {}, not {server_name}",
            presented.join(", ")
        ),
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidForName
            | rustls::CertificateError::NotValidForNameContext { .. },
        )) => format!(
            "tls: failed to verify certificate: x509: certificate is not valid for any names, but wanted to match {server_name}"
        ),
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::Expired | rustls::CertificateError::ExpiredContext { .. },
        )) => {
            "tls: failed to verify certificate: x509: certificate has expired or is not yet valid"
                .into()
        }
        Some(other) => format!("tls: {other}"),
        None => format!("remote error: {e}"),
    }
}

/// Go's words when the connection breaks before a whole answer.
fn transport_error(e: &hyper::Error) -> String {
    if e.is_incomplete_message() || e.is_closed() {
        "EOF".into()
    } else if e.is_parse() {
        format!("net/http: HTTP/1.x transport connection broken: {e}")
    } else {
        e.to_string()
    }
}
