//! The control plane's credentials, made fresh for every start: a CA, the API server's serving
//! certificate, a client certificate per user, and the service-account signing key.
//!
//! Client certificates carry the user in the common name and the groups in the organisation, as
//! kube-apiserver's x509 authenticator reads them.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

use crate::Error;

/// A user of the API server, authenticated by its client certificate.
#[derive(Clone, Debug)]
pub struct User {
    pub name: &'static str,
    /// rcgen writes one organisation per name, so a user here has at most one group.
    pub group: Option<&'static str>,
}

/// A client certificate and its key, both PEM.
#[derive(Clone, Debug)]
pub struct ClientCert {
    pub cert_pem: String,
    pub key_pem: String,
}

/// The files kube-apiserver and the controllers read, written under one directory.
#[derive(Clone, Debug)]
pub struct Credentials {
    pub dir: PathBuf,
    pub ca_pem: String,
    ca_params: CertificateParams,
    ca_key_pem: String,
}

impl Credentials {
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }
    pub fn serving_cert_file(&self) -> PathBuf {
        self.dir.join("apiserver.crt")
    }
    pub fn serving_key_file(&self) -> PathBuf {
        self.dir.join("apiserver.key")
    }
    /// The service-account signing key (ECDSA P-256).
    pub fn service_account_key_file(&self) -> PathBuf {
        self.dir.join("sa.key")
    }
    /// Its public half, which verifies the tokens.
    pub fn service_account_public_key_file(&self) -> PathBuf {
        self.dir.join("sa.pub")
    }

    /// A CA, a serving certificate for loopback and the in-cluster names, and a service-account
    /// key, written to `dir`.
    pub fn generate(dir: &Path, service_ip: IpAddr) -> Result<Self, Error> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut ca_params = CertificateParams::default();
        ca_params.distinguished_name = name("tollgate-control-plane-ca", None);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate().map_err(Error::cert)?;
        let ca_cert = ca_params.self_signed(&ca_key).map_err(Error::cert)?;
        let creds = Credentials {
            dir: dir.to_path_buf(),
            ca_pem: ca_cert.pem(),
            ca_key_pem: ca_key.serialize_pem(),
            ca_params,
        };
        write(&creds.ca_file(), &creds.ca_pem)?;

        let mut serving = CertificateParams::new(vec![
            "127.0.0.1".to_string(),
            service_ip.to_string(),
            "localhost".to_string(),
            "kubernetes".to_string(),
            "kubernetes.default".to_string(),
            "kubernetes.default.svc".to_string(),
            "kubernetes.default.svc.cluster.local".to_string(),
        ])
        .map_err(Error::cert)?;
        serving.distinguished_name = name("kube-apiserver", None);
        serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let (cert, key) = creds.sign(serving)?;
        write(&creds.serving_cert_file(), &cert)?;
        write(&creds.serving_key_file(), &key)?;

        let sa_key = KeyPair::generate().map_err(Error::cert)?;
        write(&creds.service_account_key_file(), &sa_key.serialize_pem())?;
        write(
            &creds.service_account_public_key_file(),
            &sa_key.public_key_pem(),
        )?;
        Ok(creds)
    }

    /// A client certificate for `user`, signed by the CA that kube-apiserver trusts.
    pub fn client_cert(&self, user: &User) -> Result<ClientCert, Error> {
        let mut params = CertificateParams::default();
        params.distinguished_name = name(user.name, user.group);
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let (cert_pem, key_pem) = self.sign(params)?;
        Ok(ClientCert { cert_pem, key_pem })
    }

    fn sign(&self, params: CertificateParams) -> Result<(String, String), Error> {
        let ca_key = KeyPair::from_pem(&self.ca_key_pem).map_err(Error::cert)?;
        let issuer = Issuer::from_params(&self.ca_params, ca_key);
        let key = KeyPair::generate().map_err(Error::cert)?;
        let cert = params.signed_by(&key, &issuer).map_err(Error::cert)?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}

fn name(common_name: &str, organisation: Option<&str>) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common_name);
    if let Some(org) = organisation {
        dn.push(DnType::OrganizationName, org);
    }
    dn
}

/// Write a secret: readable by its owner only, as kubeadm leaves its keys.
pub(crate) fn write(path: &Path, contents: &str) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    std::io::Write::write_all(&mut file, contents.as_bytes()).map_err(|e| Error::io(path, e))
}
