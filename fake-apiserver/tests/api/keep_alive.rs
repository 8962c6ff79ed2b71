//! A refused request leaves its keep-alive connection serving the client's next one, on the
//! served fake as on kube-apiserver. A 401 or 403 comes before the request's body is read (as
//! kube-apiserver's filters answer); Go's HTTP server then reads the rest of a short body so
//! that the connection goes on, and ends it after a long one, saying `Connection: close`. Each
//! test sends its requests one after another on one TLS connection, as a pooled client does.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use tokio_rustls::rustls;

use crate::tcp::Served;

/// One client connection to a server a kubeconfig names.
struct Connection {
    sender: SendRequest<Full<Bytes>>,
    host: String,
}

/// What one request on the connection answered.
struct Answered {
    code: u16,
    /// The `Connection` header, if any.
    connection: Option<String>,
}

impl Connection {
    async fn open(kubeconfig: &Path) -> Connection {
        let config = control_plane::config_for(kubeconfig)
            .await
            .expect("the kubeconfig");
        let url = &config.cluster_url;
        let host = url.host().expect("a host").to_string();
        let port = url.port_u16().expect("a port");
        let mut roots = rustls::RootCertStore::empty();
        for der in config.root_cert.iter().flatten() {
            roots
                .add(rustls::pki_types::CertificateDer::from(der.clone()))
                .expect("the cluster's CA");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .expect("connected");
        let name = rustls::pki_types::ServerName::try_from(host.clone()).expect("a server name");
        let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
            .connect(name, tcp)
            .await
            .expect("a TLS session");
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .expect("an HTTP/1.1 connection");
        tokio::spawn(connection);
        Connection {
            sender,
            host: format!("{host}:{port}"),
        }
    }

    /// Send one request and read its whole answer; `None` when the connection had ended.
    async fn send(
        &mut self,
        method: &str,
        path: &str,
        token: &str,
        body: Vec<u8>,
    ) -> Option<Answered> {
        self.sender.ready().await.ok()?;
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", &self.host)
            .header("authorization", format!("Bearer {token}"))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(body)))
            .expect("a request");
        let resp = self.sender.send_request(request).await.ok()?;
        let code = resp.status().as_u16();
        let connection = resp
            .headers()
            .get("connection")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        resp.into_body().collect().await.ok()?;
        Some(Answered { code, connection })
    }
}

/// A token of a ServiceAccount made for the test, which RBAC grants nothing.
async fn powerless_token(admin: kube::Client, name: &str) -> String {
    let accounts: Api<ServiceAccount> = Api::namespaced(admin, "default");
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": name}})).expect("an account");
    accounts
        .create(&PostParams::default(), &sa)
        .await
        .expect("the account made");
    let request =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let issued: Value = accounts
        .create_subresource("token", name, &PostParams::default(), &request)
        .await
        .expect("a token issued");
    issued["status"]["token"]
        .as_str()
        .expect("the token")
        .to_string()
}

/// The same checks on any server: a 403 and a 401 to POSTs with short bodies keep the connection;
/// a 401 to a POST whose body is too long to read ends it, and says so first.
async fn refusals_keep_the_connection(kubeconfig: &Path, admin: kube::Client, account: &str) {
    let powerless = powerless_token(admin, account).await;
    let configmap = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept"}})
        .to_string()
        .into_bytes();
    let path = "/api/v1/namespaces/default/configmaps";
    let mut conn = Connection::open(kubeconfig).await;
    let forbidden = conn
        .send("POST", path, &powerless, configmap.clone())
        .await
        .expect("answered");
    assert_eq!(forbidden.code, 403);
    assert_eq!(forbidden.connection, None);
    let unauthorized = conn
        .send("POST", path, "not-a-token", configmap.clone())
        .await
        .expect("answered on the same connection after a 403");
    assert_eq!(unauthorized.code, 401);
    assert_eq!(unauthorized.connection, None);
    let again = conn
        .send(
            "GET",
            "/api/v1/namespaces/default/configmaps/kept",
            &powerless,
            Vec::new(),
        )
        .await
        .expect("answered on the same connection after a 401");
    assert_eq!(again.code, 403);

    // Past 256 KiB, the rest of the body is not read: the answer says the connection ends.
    let mut long = vec![b' '; 300 << 10];
    long.extend_from_slice(&configmap);
    let ended = conn
        .send("POST", path, "not-a-token", long)
        .await
        .expect("answered");
    assert_eq!(ended.code, 401);
    assert_eq!(ended.connection.as_deref(), Some("close"));
    assert!(
        conn.send("GET", "/version", &powerless, Vec::new())
            .await
            .is_none(),
        "the connection ended after its Connection: close"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_post_leaves_its_keep_alive_connection_serving_on_the_fake() {
    let served = Served::start_locked().await;
    let admin = crate::tcp::client_from(&served.kubeconfig()).await;
    refusals_keep_the_connection(&served.kubeconfig(), admin, "keep-alive").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_post_leaves_its_keep_alive_connection_serving_on_kube_apiserver() {
    let Some(cp) = control_plane::testing::shared().await else {
        return;
    };
    let admin = cp.client().await.expect("a client");
    // The shared control plane outlives the test: an account name of its own each run.
    let account = format!("keep-alive-{}", std::process::id());
    refusals_keep_the_connection(cp.kubeconfig(), admin, &account).await;
}
