//! HTTPS for a TCP endpoint: a serving certificate made at start and signed by the cluster's root
//! CA (the one `kube-root-ca.crt` holds), which the endpoint's kubeconfig trusts.

use std::net::IpAddr;
use std::sync::Arc;

use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::{self, pki_types};

use crate::catalog::bootstrap::root_ca;

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("the cluster's root CA could not be made (see the log)")]
    NoRootCa,
    #[error("making the serving certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("configuring TLS: {0}")]
    Config(#[from] rustls::Error),
}

/// What a TLS endpoint needs: the acceptor, and the CA its clients must trust.
#[derive(Clone)]
pub struct Tls {
    pub acceptor: TlsAcceptor,
    pub ca_pem: String,
}

/// A serving certificate for loopback's names and `ip`, and an acceptor that presents it.
pub fn serving(ip: IpAddr) -> Result<Tls, TlsError> {
    let ca = root_ca().ok_or(TlsError::NoRootCa)?;
    let mut names = vec!["localhost".to_string(), "127.0.0.1".into(), "::1".into()];
    if !ip.is_unspecified() && !names.contains(&ip.to_string()) {
        names.push(ip.to_string());
    }
    // Addresses among the names become IP subject alternative names.
    let mut params = rcgen::CertificateParams::new(names)?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "tollgate-fake-apiserver");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let key = rcgen::KeyPair::generate()?;
    let cert = params.signed_by(&key, &ca.issuer)?;
    let key =
        pki_types::PrivateKeyDer::Pkcs8(pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(vec![cert.der().clone(), ca.issuer.der().clone()], key)?;
    // The server speaks HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Tls {
        acceptor: TlsAcceptor::from(Arc::new(config)),
        ca_pem: ca.pem.clone(),
    })
}
