//! Starting a server: the builder, the in-process client, and serving the same handler on TCP.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use jiff::Timestamp;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::clock::Clock;
use crate::error::ApiError;
use crate::faults::Faults;
use crate::http::{ApiService, Shared};
use crate::store::{Store, StoreConfig, WriteOptions};

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("reading CRD file {path}: {source}")]
    ReadCrd {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: document {index} is not valid YAML: {source}")]
    ParseCrd {
        path: String,
        index: usize,
        source: serde_yaml::Error,
    },
    #[error("{path}: document {index} ({name}) was refused: {source}")]
    RegisterCrd {
        path: String,
        index: usize,
        name: String,
        source: Box<ApiError>,
    },
    #[error("binding {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("serving {addr} over TLS: {source}")]
    Tls {
        addr: SocketAddr,
        source: crate::tls::TlsError,
    },
}

/// How a TCP endpoint is secured. The default is plain HTTP that anyone who reaches the port may
/// use, which is why endpoints bind loopback unless told otherwise.
#[derive(Debug, Clone, Default)]
pub struct Security {
    /// Serve HTTPS: with `serving`'s certificate if given, else one made at start and signed by
    /// the cluster's root CA.
    pub tls: bool,
    /// The serving certificate and key to present (kube-apiserver's `--tls-cert-file`).
    pub serving: Option<crate::tls::ServingPem>,
    /// Take client certificates that chain to this CA bundle (PEM) as their subject's user
    /// (kube-apiserver's `--client-ca-file`). Needs `tls`.
    pub client_ca: Option<Vec<u8>>,
    /// Require `Authorization: Bearer <token>` with this token (or a ServiceAccount token this
    /// server issued); anything else gets a 401 `Status`.
    pub token: Option<String>,
    /// Take a request that no certificate or token authenticates as `system:anonymous`, as
    /// kube-apiserver does by default, instead of answering 401; RBAC then decides.
    pub anonymous: bool,
}

impl Security {
    /// HTTPS and a bearer token made from 32 random bytes.
    pub fn locked() -> Result<Self, ring::error::Unspecified> {
        Ok(Security {
            tls: true,
            token: Some(crate::http::auth::generate_token()?),
            ..Security::default()
        })
    }

    /// Whether requests must prove who they are (else every request is the admin's).
    fn authenticates(&self) -> bool {
        self.token.is_some() || self.client_ca.is_some() || self.anonymous
    }
}

/// Configures a [`FakeApiServer`].
#[derive(Default)]
pub struct Builder {
    start_time: Option<Timestamp>,
    config: StoreConfig,
    crds: Vec<(String, String)>,
}

impl Builder {
    /// Run on a clock that starts at `start`. Inside a paused tokio runtime this makes every
    /// timestamp deterministic; without it the server uses the system's wall time.
    pub fn start_time(mut self, start: Timestamp) -> Self {
        self.start_time = Some(start);
        self
    }

    /// Seed for uids, generateName suffixes and fractional faults.
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = seed;
        self
    }

    /// How many changes watches can resume from before they get 410 Expired.
    pub fn history_limit(mut self, changes: usize) -> Self {
        self.config.history_limit = changes.max(1);
        self
    }

    /// How many changes a watcher may fall behind before it is cut off (its stream ends and it
    /// must watch again), so that a watcher that stops reading cannot hold memory without limit.
    pub fn watcher_buffer(mut self, changes: usize) -> Self {
        self.config.watcher_buffer = changes.max(1);
        self
    }

    /// Install the CustomResourceDefinitions in this YAML (one or more documents) at start.
    /// `origin` names the source in errors.
    pub fn crds_yaml(mut self, origin: impl Into<String>, yaml: impl Into<String>) -> Self {
        self.crds.push((origin.into(), yaml.into()));
        self
    }

    /// Install every `*.yaml`/`*.yml` file of a directory (sorted by name) as CRDs.
    pub fn crds_dir(mut self, dir: &Path) -> Result<Self, StartError> {
        let read_err = |source| StartError::ReadCrd {
            path: dir.display().to_string(),
            source,
        };
        let mut files: Vec<_> = std::fs::read_dir(dir)
            .map_err(read_err)?
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).map_err(|source| StartError::ReadCrd {
                path: f.display().to_string(),
                source,
            })?;
            self = self.crds_yaml(f.display().to_string(), text);
        }
        Ok(self)
    }

    pub fn build(self) -> Result<FakeApiServer, StartError> {
        let clock = match self.start_time {
            Some(t) => Clock::starting_at(t),
            None => Clock::system(),
        };
        let store = Store::new(clock.clone(), self.config.clone());
        let shared = Arc::new_cyclic(|weak: &std::sync::Weak<Shared>| {
            let weak = weak.clone();
            let close = Arc::new(move || {
                if let Some(shared) = weak.upgrade() {
                    shared.store().close_watches();
                }
            });
            Shared {
                store: Mutex::new(store),
                clock: clock.clone(),
                faults: Faults::new(self.config.seed, close),
            }
        });
        let server = FakeApiServer { shared };
        for (origin, yaml) in &self.crds {
            server.install_crds(origin, yaml)?;
        }
        Ok(server)
    }
}

/// One fake API server. Cheap to clone; many may run in one process.
#[derive(Clone)]
pub struct FakeApiServer {
    shared: Arc<Shared>,
}

impl FakeApiServer {
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// A client talking to this server in-process, without a socket. Needs a tokio runtime.
    pub fn client(&self) -> kube::Client {
        kube::Client::new(self.service(), "default")
    }

    /// The server as a `tower::Service` (what [`FakeApiServer::client`] wraps).
    pub fn service(&self) -> ApiService {
        ApiService {
            shared: self.shared.clone(),
            auth: None,
            peer: None,
        }
    }

    pub fn clock(&self) -> &Clock {
        &self.shared.clock
    }

    pub fn faults(&self) -> &Faults {
        &self.shared.faults
    }

    /// The global resourceVersion now.
    pub fn resource_version(&self) -> u64 {
        self.shared.store().resource_version()
    }

    /// A feed of every change from now on, in resourceVersion order, each with the virtual time it
    /// was committed at. Observers see everything, whatever faults are injected into the API.
    pub fn observe(&self) -> crate::store::ChangeFeed {
        self.shared.store().observe()
    }

    /// How many watch streams are open.
    pub fn watcher_count(&self) -> usize {
        let mut store = self.shared.store();
        store.prune_watchers();
        store.watcher_count()
    }

    /// Create (or replace) the CRDs in a YAML stream. Returns how many were installed.
    pub fn install_crds(&self, origin: &str, yaml: &str) -> Result<usize, StartError> {
        let mut count = 0;
        for (index, value) in parsed_crds(origin, yaml)?.iter() {
            let (index, value) = (*index, value.clone());
            let name = value["metadata"]["name"].as_str().unwrap_or("").to_string();
            let mut store = self.shared.store();
            let Some(rt) =
                store
                    .catalog()
                    .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            else {
                continue;
            };
            let result = match store.get(&rt, "", &name) {
                Ok(existing) => {
                    let mut v = value.clone();
                    v["metadata"]["resourceVersion"] =
                        existing["metadata"]["resourceVersion"].clone();
                    store.update(
                        &rt,
                        "",
                        &name,
                        v,
                        crate::store::Subresource::Main,
                        &WriteOptions::default(),
                    )
                }
                Err(_) => store.create(&rt, "", value, &WriteOptions::default()),
            };
            result.map_err(|source| StartError::RegisterCrd {
                path: origin.to_string(),
                index,
                name,
                source: Box::new(source),
            })?;
            count += 1;
        }
        Ok(count)
    }

    /// Serve this server on TCP (plain HTTP, no authentication) until the returned handle is shut
    /// down or dropped.
    pub async fn serve_tcp(&self, addr: SocketAddr) -> Result<TcpServer, StartError> {
        self.serve(addr, Security::default()).await
    }

    /// Serve this server on TCP, secured as `security` says, until the returned handle is shut
    /// down or dropped.
    pub async fn serve(
        &self,
        addr: SocketAddr,
        security: Security,
    ) -> Result<TcpServer, StartError> {
        let client_ca = security.client_ca.as_deref();
        let tls = match (&security.serving, security.tls) {
            (Some(given), true) => Some(crate::tls::from_pem(given, client_ca)),
            (None, true) => Some(crate::tls::serving(addr.ip(), client_ca)),
            (_, false) if client_ca.is_some() => Some(Err(crate::tls::TlsError::ClientCa(
                "client certificates need HTTPS".into(),
            ))),
            (_, false) => None,
        };
        let tls = tls
            .transpose()
            .map_err(|source| StartError::Tls { addr, source })?;
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| StartError::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| StartError::Bind { addr, source })?;
        let (stop_tx, stop_rx) = watch::channel(false);
        let mut service = self.service();
        service.auth = security.authenticates().then(|| {
            Arc::new(crate::http::auth::Authenticator::new(
                security.token.clone(),
                security.anonymous,
            ))
        });
        let faults = self.shared.faults.clone();
        let acceptor = tls.clone().map(Arc::new);
        let task = tokio::spawn(accept_loop(listener, service, acceptor, faults, stop_rx));
        Ok(TcpServer {
            addr: local,
            https: tls.is_some(),
            ca_pem: tls.and_then(|t| t.ca_pem),
            token: security.token,
            stop: stop_tx,
            task: Some(task),
        })
    }
}

async fn accept_loop(
    listener: TcpListener,
    service: ApiService,
    tls: Option<Arc<crate::tls::Tls>>,
    faults: Faults,
    mut stop: watch::Receiver<bool>,
) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else { continue };
                // Watch events are small writes: without this, Nagle's algorithm holds them back.
                let _ = stream.set_nodelay(true);
                if faults.is_partitioned() {
                    drop(stream);
                    continue;
                }
                let mut service = service.clone();
                let tls = tls.clone();
                connections.spawn(async move {
                    let builder = auto::Builder::new(TokioExecutor::new());
                    let served = match tls {
                        // The handshake runs in the connection's task, so a slow client holds
                        // up only itself.
                        Some(tls) => match tls.acceptor.accept(stream).await {
                            Ok(stream) => {
                                // The client certificate says who the connection's client is.
                                service.peer = tls.client_ca.as_ref().and_then(|ca| {
                                    ca.peer(stream.get_ref().1.peer_certificates())
                                });
                                let svc = TowerToHyperService::new(service);
                                builder.serve_connection(TokioIo::new(stream), svc).await
                            }
                            Err(e) => {
                                tracing::debug!(%e, "TLS handshake failed");
                                return;
                            }
                        },
                        None => {
                            let svc = TowerToHyperService::new(service);
                            builder.serve_connection(TokioIo::new(stream), svc).await
                        }
                    };
                    if let Err(e) = served {
                        tracing::debug!(%e, "connection ended");
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    connections.shutdown().await;
}

/// A running TCP endpoint of a [`FakeApiServer`]. Dropping it stops serving.
pub struct TcpServer {
    addr: SocketAddr,
    https: bool,
    /// The CA to trust, when serving HTTPS with a certificate made at start.
    ca_pem: Option<String>,
    /// The bearer token requests need, if any.
    token: Option<String>,
    stop: watch::Sender<bool>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl TcpServer {
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn url(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The bearer token requests need, if the endpoint requires one.
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The PEM of the CA that signed the serving certificate, when serving HTTPS with a
    /// certificate made at start.
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// A kubeconfig that kubectl and kube-rs accept, pointing at this endpoint with its CA and
    /// token. It holds a credential when the endpoint needs one: keep it private.
    pub fn kubeconfig(&self) -> String {
        use base64::Engine;
        let ca = self.ca_pem.as_ref().map_or(String::new(), |pem| {
            let data = base64::engine::general_purpose::STANDARD.encode(pem);
            format!("    certificate-authority-data: {data}\n")
        });
        let user = self
            .token
            .as_ref()
            .map_or("{}".to_string(), |t| format!("\n    token: {t}"));
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: tollgate\n  cluster:\n    server: {}\n{ca}contexts:\n- name: tollgate\n  context:\n    cluster: tollgate\n    user: tollgate\n    namespace: default\ncurrent-context: tollgate\nusers:\n- name: tollgate\n  user: {user}\npreferences: {{}}\n",
            self.url()
        )
    }

    /// Write the kubeconfig to `path`, readable by its owner only (it may hold the token), and
    /// atomically: a temporary file renamed into place.
    pub fn write_kubeconfig(&self, path: &Path) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = path.with_extension("tmp");
        // A leftover temporary file would keep its old permissions.
        let _ = std::fs::remove_file(&tmp);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)?;
        file.write_all(self.kubeconfig().as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    }

    /// Stop accepting and close every connection.
    pub async fn shutdown(mut self) {
        let _ = self.stop.send(true);
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl Drop for TcpServer {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

/// The documents of a CRD YAML stream (with their indexes in it, empty documents left out),
/// parsed once per process: every embedded world installs the same checked-in CRDs, and a chaos
/// run builds a world for every seed of every scenario.
fn parsed_crds(origin: &str, yaml: &str) -> Result<Arc<Vec<(usize, Value)>>, StartError> {
    type Parsed = std::collections::HashMap<String, Arc<Vec<(usize, Value)>>>;
    static PARSED: std::sync::LazyLock<Mutex<Parsed>> = std::sync::LazyLock::new(Mutex::default);
    if let Some(docs) = PARSED.lock().unwrap_or_else(|p| p.into_inner()).get(yaml) {
        return Ok(docs.clone());
    }
    let mut docs = Vec::new();
    for (index, doc) in serde_yaml::Deserializer::from_str(yaml).enumerate() {
        let value: Value =
            serde::Deserialize::deserialize(doc).map_err(|source| StartError::ParseCrd {
                path: origin.to_string(),
                index,
                source,
            })?;
        if !value.is_null() {
            docs.push((index, value));
        }
    }
    let docs = Arc::new(docs);
    PARSED
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(yaml.to_string(), docs.clone());
    Ok(docs)
}
