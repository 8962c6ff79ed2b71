//! Kubeconfigs for the control plane's users: a client certificate, or a bearer token (a
//! ServiceAccount's, to run a component with exactly the rights its RBAC gives).

use std::path::Path;

use serde_json::json;

use crate::Error;
use crate::certs::{ClientCert, write};

/// How a kubeconfig's user proves who it is.
pub enum Credential<'a> {
    Cert(&'a ClientCert),
    Token(&'a str),
}

/// Write a kubeconfig for `server` (https), trusting `ca_pem`, with one context named `context`.
pub fn write_kubeconfig(
    path: &Path,
    server: &str,
    ca_pem: &str,
    context: &str,
    credential: Credential<'_>,
) -> Result<(), Error> {
    use base64::Engine;
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let user = match credential {
        Credential::Cert(c) => json!({
            "client-certificate-data": b64(&c.cert_pem),
            "client-key-data": b64(&c.key_pem),
        }),
        Credential::Token(t) => json!({ "token": t }),
    };
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": context, "cluster": {
            "server": server,
            "certificate-authority-data": b64(ca_pem),
        }}],
        "users": [{"name": context, "user": user}],
        "contexts": [{"name": context, "context": {"cluster": context, "user": context}}],
        "current-context": context,
    });
    let yaml =
        serde_yaml::to_string(&config).map_err(|e| Error::io(path, std::io::Error::other(e)))?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    // It holds a private key or a token: owner-only, like kubeadm's admin.conf.
    write(path, &yaml)
}
