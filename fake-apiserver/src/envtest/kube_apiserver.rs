//! The fake as `kube-apiserver`: the flags envtest (controller-runtime's `pkg/envtest`) and most
//! hand-written set-ups start it with, read as kube-apiserver reads them. The flags that decide
//! how a client reaches the server and who it is (address, port, serving certificate, client CA,
//! anonymous access) are acted on; the rest of what envtest passes is accepted and reported as
//! not acted on, because the fake has no etcd, admission plugins or feature gates to give them
//! to. A flag kube-apiserver's `--help` would not list here is an error, as pflag makes it.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use super::flags::{FlagError, Flags, Known};
use crate::server::Security;
use crate::tls::ServingPem;

/// Flags the stand-in acts on, each with what its value is and what it does.
const ACTED_ON: &[(&str, &str, &str)] = &[
    (
        "bind-address",
        "ip",
        "The IP address on which to listen for the --secure-port port. (default 127.0.0.1; kube-apiserver's is 0.0.0.0)",
    ),
    (
        "secure-port",
        "int",
        "The port on which to serve HTTPS with authentication and authorization. (default 6443)",
    ),
    (
        "cert-dir",
        "string",
        "The directory where the TLS certs are located. If --tls-cert-file and --tls-private-key-file are provided, this flag will be ignored. (default \"/var/run/kubernetes\")",
    ),
    (
        "tls-cert-file",
        "string",
        "File containing the default x509 Certificate for HTTPS (CA cert, if any, concatenated after server cert).",
    ),
    (
        "tls-private-key-file",
        "string",
        "File containing the default x509 private key matching --tls-cert-file.",
    ),
    (
        "client-ca-file",
        "string",
        "A client certificate signed by one of these authorities is authenticated as the identity of its CommonName, in the groups of its Organizations.",
    ),
    (
        "anonymous-auth",
        "",
        "Enables anonymous requests to the secure port: requests no other method authenticates are system:anonymous in the group system:unauthenticated. (default true)",
    ),
];

/// Flags accepted and not acted on: what envtest passes, and what set-ups commonly add.
const ACCEPTED: &[&str] = &[
    "admission-control-config-file",
    "advertise-address",
    "api-audiences",
    "audit-log-path",
    "audit-policy-file",
    "authorization-mode",
    "default-watch-cache-size",
    "disable-admission-plugins",
    "enable-admission-plugins",
    "etcd-prefix",
    "etcd-servers",
    "feature-gates",
    "proxy-client-cert-file",
    "proxy-client-key-file",
    "requestheader-allowed-names",
    "requestheader-client-ca-file",
    "requestheader-extra-headers-prefix",
    "requestheader-group-headers",
    "requestheader-username-headers",
    "runtime-config",
    "service-account-issuer",
    "service-account-key-file",
    "service-account-signing-key-file",
    "service-cluster-ip-range",
    "v",
    "vmodule",
];

const ACCEPTED_BOOLEANS: &[&str] = &[
    "allow-privileged",
    "enable-priority-and-fairness",
    "profiling",
    "watch-cache",
];

const ACTED_ON_BOOLEANS: &[&str] = &["anonymous-auth"];

/// How the stand-in serves.
#[derive(Debug)]
pub struct Config {
    pub addr: SocketAddr,
    pub security: Security,
    /// The flags given that it did not act on, as `--name=value`.
    pub not_acted_on: Vec<String>,
    /// A serving certificate it made and wrote into the cert directory, as kube-apiserver does
    /// when the directory has none.
    pub wrote_certificate: Option<PathBuf>,
}

/// Why the stand-in cannot start as asked.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Flag(#[from] FlagError),
    #[error("{0}")]
    Invalid(String),
    #[error("{what} {path}: {source}")]
    File {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("making a self-signed serving certificate: {0}")]
    Certificate(#[from] rcgen::Error),
}

/// `--help`, in pflag's layout (envtest reads it to learn which flags this kube-apiserver has:
/// it has no `--insecure-port`, like kube-apiserver 1.24 and later).
pub fn help() -> String {
    let mut text = String::from(
        "Tollgate's fake API server, standing in for kube-apiserver (as envtest starts it).\n\n\
         Usage:\n  kube-apiserver [flags]\n\nFlags acted on:\n",
    );
    for (name, kind, what) in ACTED_ON {
        let flag = match kind.is_empty() {
            true => format!("--{name}"),
            false => format!("--{name} {kind}"),
        };
        text.push_str(&format!("      {flag:<34} {what}\n"));
    }
    text.push_str("\nFlags accepted and not acted on (the fake has no etcd, admission plugins or feature gates):\n");
    let mut accepted: Vec<&str> = ACCEPTED.iter().chain(ACCEPTED_BOOLEANS).copied().collect();
    accepted.sort_unstable();
    for name in accepted {
        text.push_str(&format!("      --{name}\n"));
    }
    text.push_str("\n      --help   help for kube-apiserver\n");
    text
}

fn known() -> (Vec<&'static str>, Vec<&'static str>) {
    let valued = ACTED_ON
        .iter()
        .filter(|(_, kind, _)| !kind.is_empty())
        .map(|(name, _, _)| *name)
        .chain(ACCEPTED.iter().copied())
        .collect();
    let booleans = ACTED_ON_BOOLEANS
        .iter()
        .chain(ACCEPTED_BOOLEANS)
        .copied()
        .collect();
    (valued, booleans)
}

/// Reads the flags and the files they name.
pub fn config(args: &[String]) -> Result<Config, ConfigError> {
    let (valued, booleans) = known();
    let flags = Flags::parse(
        args,
        &Known {
            valued: &valued,
            booleans: &booleans,
        },
    )?;
    if let Some(extra) = flags.positional.first() {
        return Err(ConfigError::Invalid(format!(
            "kube-apiserver takes no arguments, only flags (got {extra:?})"
        )));
    }
    let ip: IpAddr = match flags.get("bind-address") {
        None | Some("") => IpAddr::V4(Ipv4Addr::LOCALHOST),
        Some(v) => v.parse().map_err(|_| FlagError::Invalid {
            name: "bind-address".into(),
            value: v.into(),
            reason: "not an IP address".into(),
        })?,
    };
    let port: u16 = match flags.get("secure-port") {
        None => 6443,
        Some(v) => v.parse().map_err(|_| FlagError::Invalid {
            name: "secure-port".into(),
            value: v.into(),
            reason: "not a port number".into(),
        })?,
    };
    if port == 0 {
        return Err(ConfigError::Invalid(
            "--secure-port 0 turns off HTTPS, and the fake serves kube-apiserver's API only on its secure port".into(),
        ));
    }
    let (serving, wrote_certificate) = serving_certificate(&flags, ip)?;
    let client_ca = match flags.get("client-ca-file") {
        None | Some("") => None,
        Some(path) => Some(read("client CA file", Path::new(path))?),
    };
    let acted_on: Vec<&str> = ACTED_ON.iter().map(|(name, _, _)| *name).collect();
    Ok(Config {
        addr: SocketAddr::new(ip, port),
        security: Security {
            tls: true,
            serving: Some(serving),
            client_ca,
            token: None,
            anonymous: flags.boolean("anonymous-auth", true),
        },
        not_acted_on: flags.not_acted_on(&acted_on),
        wrote_certificate,
    })
}

/// The certificate files given, else the cert directory's `apiserver.crt` and `apiserver.key`,
/// made (self-signed, for localhost and the bind address) if the directory has none.
fn serving_certificate(
    flags: &Flags,
    ip: IpAddr,
) -> Result<(ServingPem, Option<PathBuf>), ConfigError> {
    let given = |name| flags.get(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    let mut wrote = None;
    let (cert, key) = match (given("tls-cert-file"), given("tls-private-key-file")) {
        (Some(cert), Some(key)) => (cert, key),
        (None, None) => {
            let dir = given("cert-dir").unwrap_or_else(|| "/var/run/kubernetes".into());
            let (cert, key) = (dir.join("apiserver.crt"), dir.join("apiserver.key"));
            if !cert.exists() && !key.exists() {
                write_self_signed(&dir, &cert, &key, ip)?;
                wrote = Some(cert.clone());
            }
            (cert, key)
        }
        (Some(_), None) | (None, Some(_)) => {
            return Err(ConfigError::Invalid(
                "--tls-cert-file and --tls-private-key-file go together: give both or neither"
                    .into(),
            ));
        }
    };
    let pem = ServingPem {
        cert_chain: read("serving certificate", &cert)?,
        key: read("serving key", &key)?,
        origin: cert.display().to_string(),
    };
    Ok((pem, wrote))
}

fn write_self_signed(dir: &Path, cert: &Path, key: &Path, ip: IpAddr) -> Result<(), ConfigError> {
    let mut names = vec!["localhost".to_string()];
    if !ip.is_unspecified() {
        names.push(ip.to_string());
    }
    let mut params = rcgen::CertificateParams::new(names)?;
    params.distinguished_name.push(
        rcgen::DnType::CommonName,
        format!("localhost@{}", std::process::id()),
    );
    let pair = rcgen::KeyPair::generate()?;
    let signed = params.self_signed(&pair)?;
    let file_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ConfigError::File {
            what: "writing",
            path,
            source,
        }
    };
    std::fs::create_dir_all(dir).map_err(file_error(dir))?;
    write_private(key, pair.serialize_pem().as_bytes()).map_err(file_error(key))?;
    std::fs::write(cert, signed.pem()).map_err(file_error(cert))
}

/// Writes a file only its owner can read, as kube-apiserver writes its key.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
}

fn read(what: &'static str, path: &Path) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|source| ConfigError::File {
        what,
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn help_lists_no_insecure_port_so_envtest_leaves_it_unset() {
        // envtest's check: a line that starts with the flag.
        let help = help();
        let has = |flag: &str| {
            help.lines().any(|l| {
                l.trim_start().starts_with(&format!("--{flag} ")) || l.trim() == format!("--{flag}")
            })
        };
        assert!(!has("insecure-port"));
        for flag in [
            "secure-port",
            "cert-dir",
            "client-ca-file",
            "etcd-servers",
            "allow-privileged",
        ] {
            assert!(has(flag), "{flag} is missing from:\n{help}");
        }
    }

    #[test]
    fn an_empty_cert_dir_gets_a_certificate_as_kube_apiserver_makes_one() {
        let dir = tempfile::tempdir().unwrap();
        let certs = dir.path().join("certs");
        let config = config(&args(&[
            &format!("--cert-dir={}", certs.display()),
            "--secure-port=6444",
            "--etcd-servers=http://127.0.0.1:2379",
            "--allow-privileged=true",
        ]))
        .unwrap();
        assert_eq!(config.addr, "127.0.0.1:6444".parse().unwrap());
        assert_eq!(config.wrote_certificate, Some(certs.join("apiserver.crt")));
        assert!(certs.join("apiserver.key").is_file());
        assert!(config.security.anonymous);
        assert_eq!(
            config.not_acted_on,
            [
                "--allow-privileged=true",
                "--etcd-servers=http://127.0.0.1:2379"
            ]
        );
        // The second start finds the certificate and keeps it.
        let again = super::config(&args(&[&format!("--cert-dir={}", certs.display())])).unwrap();
        assert_eq!(again.wrote_certificate, None);
    }

    #[test]
    fn bad_flags_and_missing_files_are_named() {
        let err = |list: &[&str]| config(&args(list)).unwrap_err().to_string();
        assert_eq!(err(&["--insecure-port=0"]), "unknown flag: --insecure-port");
        assert!(err(&["--secure-port=http"]).contains("--secure-port"));
        assert!(err(&["--secure-port=0"]).contains("turns off HTTPS"));
        assert!(err(&["--tls-cert-file=/x.crt"]).contains("give both or neither"));
        let missing = err(&[
            "--tls-cert-file=/nowhere/x.crt",
            "--tls-private-key-file=/nowhere/x.key",
        ]);
        assert!(
            missing.contains("serving certificate /nowhere/x.crt"),
            "{missing}"
        );
        let dir = tempfile::tempdir().unwrap();
        let ca = err(&[
            &format!("--cert-dir={}", dir.path().display()),
            "--client-ca-file=/nowhere/ca.crt",
        ]);
        assert!(ca.contains("client CA file /nowhere/ca.crt"), "{ca}");
        assert!(err(&["--anonymous-auth=no"]).contains("--anonymous-auth"));
    }
}
