//! HTTPS for a TCP endpoint: the serving certificate (one made at start and signed by the
//! cluster's root CA, which the endpoint's kubeconfig trusts, or one given as PEM files, as
//! kube-apiserver's `--tls-cert-file` gives it), and client certificates checked against a
//! client CA, as `--client-ca-file` asks.

use std::net::IpAddr;
use std::sync::Arc;

use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::client::danger::HandshakeSignatureValid;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use tokio_rustls::rustls::{
    self, DigitallySignedStruct, DistinguishedName, RootCertStore, SignatureScheme, pki_types,
};

use crate::catalog::bootstrap::root_ca;
use crate::semantics::rbac::User;

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("the cluster's root CA could not be made (see the log)")]
    NoRootCa,
    #[error("making the serving certificate: {0}")]
    Certificate(#[from] rcgen::Error),
    #[error("configuring TLS: {0}")]
    Config(#[from] rustls::Error),
    #[error("{what} holds no PEM {expected}: {reason}")]
    Pem {
        what: String,
        expected: &'static str,
        reason: String,
    },
    #[error("the client CA bundle has no usable certificate: {0}")]
    ClientCa(String),
}

/// A serving certificate chain and its key, as PEM (the contents of kube-apiserver's
/// `--tls-cert-file` and `--tls-private-key-file`).
#[derive(Clone)]
pub struct ServingPem {
    pub cert_chain: Vec<u8>,
    pub key: Vec<u8>,
    /// Where they came from, for errors.
    pub origin: String,
}

impl std::fmt::Debug for ServingPem {
    // The key stays out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServingPem")
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// What a TLS endpoint needs: the acceptor, the CA its clients must trust when the endpoint made
/// its own certificate, and the client CA that a client certificate must chain to.
#[derive(Clone)]
pub struct Tls {
    pub acceptor: TlsAcceptor,
    pub ca_pem: Option<String>,
    pub client_ca: Option<ClientCa>,
}

/// The authorities of `--client-ca-file`. kube-apiserver asks for a client certificate without
/// verifying it in the handshake (Go's `RequestClientCert`) and verifies it when it authenticates
/// a request: a certificate of another CA gets 401 Unauthorized, not a failed handshake. So does
/// the fake: the handshake checks only that the client holds the certificate's key.
#[derive(Clone)]
pub struct ClientCa {
    verifier: Arc<dyn ClientCertVerifier>,
}

/// Who a connection's client certificate says the client is.
#[derive(Debug, Clone)]
pub enum Peer {
    /// A certificate of the client CA, naming this user.
    User(Arc<User>),
    /// A certificate the client CA did not sign (or that names nobody): every request is refused.
    Refused(String),
}

impl ClientCa {
    /// The peer of a connection whose client presented `chain` (leaf first), if it presented one.
    pub fn peer(&self, chain: Option<&[CertificateDer<'static>]>) -> Option<Peer> {
        let (leaf, intermediates) = chain?.split_first()?;
        let verified = self
            .verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now());
        Some(match verified {
            Ok(_) => match client_user(leaf) {
                Some(user) => Peer::User(Arc::new(user)),
                None => Peer::Refused("the client certificate has no common name".into()),
            },
            Err(e) => Peer::Refused(e.to_string()),
        })
    }
}

/// Asks for a client certificate and takes any whose key the client holds; [`ClientCa::peer`]
/// verifies it afterwards.
#[derive(Debug)]
struct RequestClientCert(Arc<dyn ClientCertVerifier>);

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.0.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// A serving certificate for loopback's names and `ip`, signed by the cluster's root CA, and an
/// acceptor that presents it (and asks for client certificates of `client_ca`, if given).
pub fn serving(ip: IpAddr, client_ca: Option<&[u8]>) -> Result<Tls, TlsError> {
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
    let chain = vec![cert.der().clone(), ca.issuer.der().clone()];
    let (acceptor, client_ca) = acceptor(chain, key, client_ca)?;
    Ok(Tls {
        acceptor,
        ca_pem: Some(ca.pem.clone()),
        client_ca,
    })
}

/// An acceptor presenting a certificate given as PEM.
pub fn from_pem(given: &ServingPem, client_ca: Option<&[u8]>) -> Result<Tls, TlsError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&given.cert_chain)
        .collect::<Result<_, _>>()
        .map_err(|e| pem_error(&given.origin, "certificate", e))?;
    if chain.is_empty() {
        return Err(pem_error(&given.origin, "certificate", "none found"));
    }
    let key = PrivateKeyDer::from_pem_slice(&given.key)
        .map_err(|e| pem_error(&given.origin, "private key", e))?;
    let (acceptor, client_ca) = acceptor(chain, key, client_ca)?;
    Ok(Tls {
        acceptor,
        ca_pem: None,
        client_ca,
    })
}

fn pem_error(what: &str, expected: &'static str, reason: impl std::fmt::Display) -> TlsError {
    TlsError::Pem {
        what: what.to_string(),
        expected,
        reason: reason.to_string(),
    }
}

fn acceptor(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    client_ca: Option<&[u8]>,
) -> Result<(TlsAcceptor, Option<ClientCa>), TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let client_ca = client_ca
        .map(|bundle| client_verifier(bundle, provider))
        .transpose()?;
    let mut config = match &client_ca {
        None => builder.with_no_client_auth().with_single_cert(chain, key)?,
        Some(ca) => builder
            .with_client_cert_verifier(Arc::new(RequestClientCert(ca.verifier.clone())))
            .with_single_cert(chain, key)?,
    };
    // The server speaks HTTP/1.1 only.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((TlsAcceptor::from(Arc::new(config)), client_ca))
}

fn client_verifier(
    bundle: &[u8],
    provider: Arc<rustls::crypto::CryptoProvider>,
) -> Result<ClientCa, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(bundle) {
        let cert = cert.map_err(|e| TlsError::ClientCa(e.to_string()))?;
        roots
            .add(cert)
            .map_err(|e| TlsError::ClientCa(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(TlsError::ClientCa("it holds no certificate".into()));
    }
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
        .allow_unauthenticated()
        .build()
        .map_err(|e| TlsError::ClientCa(e.to_string()))?;
    Ok(ClientCa { verifier })
}

/// The user a verified client certificate names, as kube-apiserver's x509 authenticator reads it:
/// the subject's common name is the user, its organizations the groups (with
/// `system:authenticated`), and the certificate's SHA-256 its credential id.
pub fn client_user(der: &CertificateDer<'_>) -> Option<User> {
    let (_, cert) = x509_parser::parse_x509_certificate(der.as_ref()).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())?
        .to_string();
    if name.is_empty() {
        return None;
    }
    let mut groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(String::from))
        .collect();
    groups.push("system:authenticated".into());
    let digest = ring::digest::digest(&ring::digest::SHA256, der.as_ref());
    let hex: String = digest.as_ref().iter().map(|b| format!("{b:02x}")).collect();
    Some(User::from_info(serde_json::json!({
        "username": name,
        "groups": groups,
        "extra": {"authentication.kubernetes.io/credential-id": [format!("X509SHA256={hex}")]},
    })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client_cert(cn: &str, orgs: &[&str]) -> CertificateDer<'static> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        for o in orgs {
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, *o);
        }
        let key = rcgen::KeyPair::generate().unwrap();
        params.self_signed(&key).unwrap().der().clone()
    }

    #[test]
    fn a_client_certificate_names_the_user_and_its_groups() {
        // (rcgen writes one value per attribute type, so one organization here.)
        let user = client_user(&client_cert("alice", &["system:masters"])).unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["system:masters", "system:authenticated"]);
        assert!(user.is_master());
        let id = user.info["extra"]["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .unwrap();
        assert!(id.starts_with("X509SHA256=") && id.len() == 11 + 64, "{id}");
    }

    #[test]
    fn a_certificate_without_a_common_name_names_nobody() {
        assert!(client_user(&client_cert("", &["team-a"])).is_none());
    }

    #[test]
    fn pem_that_is_not_a_certificate_is_an_error_naming_its_file() {
        let given = ServingPem {
            cert_chain: b"not pem".to_vec(),
            key: Vec::new(),
            origin: "/certs/apiserver.crt".into(),
        };
        let err = from_pem(&given, None).err().unwrap().to_string();
        assert!(
            err.contains("/certs/apiserver.crt") && err.contains("certificate"),
            "{err}"
        );
    }

    #[test]
    fn a_client_ca_without_certificates_is_refused() {
        let err = serving("127.0.0.1".parse().unwrap(), Some(b""))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("client CA"), "{err}");
    }
}
