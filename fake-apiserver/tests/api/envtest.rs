//! The binary in envtest's place: linked as `kube-apiserver` and `etcd`, it takes the flags
//! controller-runtime's envtest starts those two with, answers envtest's probes, and
//! authenticates clients by the certificates envtest makes, as kube-apiserver does.
//! (`envtest_go.rs` runs envtest itself against it.)

use std::io::BufRead;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use base64::Engine;
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ListParams};
use serde_json::Value;

/// A folder like a `KUBEBUILDER_ASSETS` one: `kube-apiserver` and `etcd`, links to the binary.
pub(crate) fn fake_assets(dir: &Path) -> PathBuf {
    let assets = dir.join("assets");
    std::fs::create_dir_all(&assets).expect("assets dir");
    for name in ["kube-apiserver", "etcd"] {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_fake-apiserver"), assets.join(name))
            .expect("link");
    }
    assets
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// A CA, as envtest's tinyca makes one, and certificates it signs.
struct Ca {
    issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::DigitalSignature,
        ];
        let key = rcgen::KeyPair::generate().expect("key");
        Ca {
            issuer: rcgen::CertifiedIssuer::self_signed(params, key).expect("CA"),
        }
    }

    fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// (certificate PEM, key PEM)
    fn sign(
        &self,
        names: &[&str],
        cn: &str,
        orgs: &[&str],
        usage: rcgen::ExtendedKeyUsagePurpose,
    ) -> (String, String) {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = rcgen::CertificateParams::new(names).expect("params");
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        for o in orgs {
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, *o);
        }
        params.extended_key_usages = vec![usage];
        let key = rcgen::KeyPair::generate().expect("key");
        let cert = params.signed_by(&key, &self.issuer).expect("sign");
        (cert.pem(), key.serialize_pem())
    }

    fn client(&self, cn: &str, orgs: &[&str]) -> (String, String) {
        self.sign(&[], cn, orgs, rcgen::ExtendedKeyUsagePurpose::ClientAuth)
    }
}

/// A started stand-in, stopped (SIGTERM, as envtest stops it) when dropped.
struct Started {
    child: Child,
    stderr: Vec<String>,
}

impl Started {
    /// Starts `program` and reads its stderr up to the line that says it is serving.
    fn start(program: &Path, args: &[String], ready: &str) -> Started {
        let mut child = Command::new(program)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the stand-in starts");
        let stderr = child.stderr.take().expect("stderr");
        let mut lines = Vec::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.expect("stderr line");
            let done = line.contains(ready);
            lines.push(line);
            if done {
                return Started {
                    child,
                    stderr: lines,
                };
            }
        }
        let _ = child.kill();
        let status = child.wait();
        panic!(
            "{} ended ({status:?}) without {ready:?}:\n{}",
            program.display(),
            lines.join("\n")
        );
    }

    /// SIGTERM, and the exit status.
    fn stop(mut self) -> std::process::ExitStatus {
        let killed = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(killed.success());
        self.child.wait().expect("exit status")
    }
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client of `url` that trusts `ca` and presents `cert` (or nothing).
async fn client(url: &str, ca: &str, cert: Option<&(String, String)>) -> kube::Client {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let user = match cert {
        Some((cert, key)) => format!(
            "\n    client-certificate-data: {}\n    client-key-data: {}",
            b64(cert),
            b64(key)
        ),
        None => " {}".into(),
    };
    let yaml = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {url}\n    certificate-authority-data: {}\ncontexts:\n- name: c\n  context: {{cluster: c, user: u}}\ncurrent-context: c\nusers:\n- name: u\n  user:{user}\n",
        b64(ca)
    );
    let kc = kube::config::Kubeconfig::from_yaml(&yaml).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config");
    kube::Client::try_from(config).expect("client")
}

async fn get(client: &kube::Client, path: &str) -> Result<String, kube::Error> {
    let req = http::Request::get(path).body(Vec::new()).expect("request");
    client.request_text(req).await
}

fn status_of(result: Result<impl std::fmt::Debug, kube::Error>) -> (u16, String) {
    match result {
        Err(kube::Error::Api(status)) => (status.code, status.message),
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// envtest's flags for kube-apiserver (controller-runtime v0.23's defaults, with the client CA
/// its certificate authenticator adds).
fn envtest_flags(cert_dir: &Path, port: u16, etcd: &str) -> Vec<String> {
    let d = cert_dir.display();
    [
        "--advertise-address=127.0.0.1".into(),
        "--allow-privileged=true".into(),
        "--authorization-mode=RBAC".into(),
        "--bind-address=127.0.0.1".into(),
        format!("--cert-dir={d}"),
        format!("--client-ca-file={d}/client-cert-auth-ca.crt"),
        "--disable-admission-plugins=ServiceAccount".into(),
        format!("--etcd-servers={etcd}"),
        format!("--secure-port={port}"),
        format!("--service-account-issuer=https://127.0.0.1:{port}/"),
        format!("--service-account-key-file={d}/sa-signer.crt"),
        format!("--service-account-signing-key-file={d}/sa-signer.key"),
        "--service-cluster-ip-range=10.0.0.0/24".into(),
    ]
    .into()
}

#[tokio::test]
async fn as_kube_apiserver_it_serves_envtests_certificates_and_users() {
    let dir = tempfile::tempdir().expect("tempdir");
    let assets = fake_assets(dir.path());

    // envtest reads --help to decide about --insecure-port, which 1.24 and later do not have.
    let help = Command::new(assets.join("kube-apiserver"))
        .arg("--help")
        .output()
        .expect("help");
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("--secure-port"), "{help}");
    assert!(
        !help
            .lines()
            .any(|l| l.trim_start().starts_with("--insecure-port"))
    );

    // The files envtest writes into its cert directory.
    let certs = dir.path().join("certs");
    std::fs::create_dir_all(&certs).expect("cert dir");
    let serving_ca = Ca::new("serving-ca");
    let (cert, key) = serving_ca.sign(
        &["localhost", "127.0.0.1"],
        "localhost",
        &[],
        rcgen::ExtendedKeyUsagePurpose::ServerAuth,
    );
    std::fs::write(certs.join("apiserver.crt"), cert).expect("write");
    std::fs::write(certs.join("apiserver.key"), key).expect("write");
    let client_ca = Ca::new("client-ca");
    std::fs::write(certs.join("client-cert-auth-ca.crt"), client_ca.pem()).expect("write");

    let etcd_port = free_port();
    let etcd_url = format!("http://127.0.0.1:{etcd_port}");
    let etcd = Started::start(
        &assets.join("etcd"),
        &[
            format!("--advertise-client-urls={etcd_url}"),
            format!("--data-dir={}", dir.path().join("etcd").display()),
            format!("--listen-client-urls={etcd_url}"),
            format!("--listen-peer-urls=http://127.0.0.1:{}", free_port()),
            "--unsafe-no-fsync=true".into(),
        ],
        "answering /health",
    );
    let health = http_get(&format!("{etcd_url}/health")).await;
    assert_eq!(
        health,
        (200, r#"{"health":"true","reason":""}"#.to_string())
    );

    let port = free_port();
    let apiserver = Started::start(
        &assets.join("kube-apiserver"),
        &envtest_flags(&certs, port, &etcd_url),
        "serving https://",
    );
    // What it cannot act on, it says.
    let said = apiserver.stderr.join("\n");
    assert!(
        said.contains("not acted on: ") && said.contains("--etcd-servers="),
        "{said}"
    );
    let url = format!("https://127.0.0.1:{port}");
    let ca = serving_ca.pem();

    // envtest's health probe and its kind: anonymous, on the secure port.
    let anonymous = client(&url, &ca, None).await;
    for probe in ["/healthz", "/readyz", "/livez"] {
        assert_eq!(
            get(&anonymous, probe).await.expect("probe"),
            "ok",
            "{probe}"
        );
    }
    let (code, message) = status_of(
        Api::<Namespace>::all(anonymous.clone())
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(code, 403);
    assert_eq!(
        message,
        "namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
    );

    // envtest's admin: CN=admin, O=system:masters.
    let admin = client(
        &url,
        &ca,
        Some(&client_ca.client("admin", &["system:masters"])),
    )
    .await;
    let names: Vec<String> = Api::<Namespace>::all(admin.clone())
        .list(&ListParams::default())
        .await
        .expect("namespaces")
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert!(names.contains(&"default".to_string()), "{names:?}");
    let review = who_am_i(&admin).await;
    assert_eq!(review["username"], "admin");
    assert_eq!(
        review["groups"],
        serde_json::json!(["system:masters", "system:authenticated"])
    );

    // A user envtest adds without groups is only authenticated.
    let alice = client(&url, &ca, Some(&client_ca.client("alice", &[]))).await;
    assert_eq!(who_am_i(&alice).await["username"], "alice");
    let (code, message) = status_of(
        Api::<Namespace>::all(alice)
            .list(&ListParams::default())
            .await,
    );
    assert_eq!(code, 403);
    assert!(message.contains("User \"alice\" cannot list"), "{message}");

    // A certificate of another CA authenticates nobody: 401, as from kube-apiserver.
    let stranger = Ca::new("someone-else").client("admin", &["system:masters"]);
    let (code, message) = status_of(get(&client(&url, &ca, Some(&stranger)).await, "/api").await);
    assert_eq!((code, message.as_str()), (401, "Unauthorized"));

    // envtest stops both with SIGTERM and expects them to end.
    assert!(apiserver.stop().success());
    assert!(etcd.stop().success());
}

async fn who_am_i(client: &kube::Client) -> Value {
    let body = serde_json::json!({
        "apiVersion": "authentication.k8s.io/v1",
        "kind": "SelfSubjectReview",
    });
    let req = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).expect("json"))
        .expect("request");
    let review: Value = client.request(req).await.expect("SelfSubjectReview");
    review["status"]["userInfo"].clone()
}

/// A plain-HTTP GET over a raw socket: (status, body).
async fn http_get(url: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let url = url::Url::parse(url).expect("url");
    let addr = format!(
        "{}:{}",
        url.host_str().expect("host"),
        url.port().expect("port")
    );
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let req = format!(
        "GET {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        url.path(),
        url.host_str().expect("host")
    );
    stream.write_all(req.as_bytes()).await.expect("write");
    let mut resp = String::new();
    stream.read_to_string(&mut resp).await.expect("read");
    let code = resp
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status code");
    let body = resp
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (code, body)
}

#[test]
fn bad_flags_fail_the_start_with_the_flag_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let assets = fake_assets(dir.path());
    let out = Command::new(assets.join("kube-apiserver"))
        .args(["--insecure-port=0", "--secure-port=6443"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Error: unknown flag: --insecure-port"),
        "{err}"
    );
    let out = Command::new(assets.join("etcd"))
        .arg("--listen-client-urls=https://127.0.0.1:2379")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("plain HTTP only"), "{err}");
}
