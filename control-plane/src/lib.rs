//! The reference control plane: the real kube-apiserver, etcd, kube-controller-manager and
//! kube-scheduler, built from upstream's Go modules (`tools/control-plane/`) and started on
//! loopback, envtest-style, with credentials made fresh for each start.
//!
//! It is the world that tells whether Tollgate's fake API server, controller and conformance suite
//! behave as they would on Kubernetes.
//!
//! ```no_run
//! # async fn f() -> Result<(), control_plane::Error> {
//! use control_plane::{Binaries, ControlPlane, Options};
//! let cp = ControlPlane::start(&Binaries::locate(), Options::new("target/my-run")).await?;
//! let client = cp.client().await?; // cluster-admin
//! // ... kubectl --kubeconfig cp.kubeconfig() works too ...
//! cp.stop();
//! # Ok(()) }
//! ```

pub mod binaries;
pub mod certs;
pub mod gobuild;
pub mod install;
pub mod kubeconfig;
pub mod process;
pub mod testing;

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use binaries::{Binaries, Component};
use certs::{ClientCert, Credentials, User};
pub use install::install_crds;
use kubeconfig::{Credential, write_kubeconfig};
use process::{Process, free_port};
use tracing::instrument::WithSubscriber;

/// What can go wrong, each in one sentence a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(
        "{binary} was not found (looked in {searched}): run `cargo xtask control-plane build` (needs Go), or set KUBEBUILDER_ASSETS to a directory of envtest binaries"
    )]
    MissingBinary {
        binary: &'static str,
        searched: String,
    },
    #[error(
        "the go command was not found: install Go 1.26 or newer to build the control plane, or set KUBEBUILDER_ASSETS to a directory of envtest binaries"
    )]
    NoGo,
    #[error("building {binary} failed ({status}); the go command's output is above")]
    Build { binary: String, status: String },
    #[error("starting {binary}: {source}")]
    Spawn {
        binary: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{name} exited during start-up ({status}); the end of its log ({log}):\n{tail}")]
    Exited {
        name: &'static str,
        status: String,
        log: String,
        tail: String,
    },
    #[error("the control plane was not ready within {0:?}: {1}")]
    NotReady(Duration, String),
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("generating certificates: {0}")]
    Cert(String),
    #[error("{0}")]
    Client(String),
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.display().to_string(),
            source,
        }
    }
    pub(crate) fn cert(e: rcgen::Error) -> Self {
        Error::Cert(e.to_string())
    }

    /// A component lost the race for the port it was given (see [`process::free_port`]).
    fn port_taken(&self) -> bool {
        matches!(self, Error::Exited { tail, .. } if tail.contains("address already in use"))
    }
}

/// Start-up attempts when a component finds its port taken by someone else.
const START_ATTEMPTS: u32 = 3;

/// The ServiceCIDR of the control plane; the `kubernetes` Service takes its first address.
pub const SERVICE_CIDR: &str = "10.0.0.0/24";
const SERVICE_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));

/// The user every admin kubeconfig authenticates as.
pub const ADMIN: User = User {
    name: "tollgate-admin",
    group: Some("system:masters"),
};
/// The users the bootstrap RBAC policy already knows, so that the controllers run with the rights
/// kubeadm gives them.
const CONTROLLER_MANAGER: User = User {
    name: "system:kube-controller-manager",
    group: None,
};
const SCHEDULER: User = User {
    name: "system:kube-scheduler",
    group: None,
};

/// How to start a control plane.
#[derive(Clone, Debug)]
pub struct Options {
    /// Credentials, etcd's data, kubeconfigs and logs go here.
    pub dir: PathBuf,
    /// Also start kube-controller-manager and kube-scheduler (garbage collection, namespace
    /// deletion, ServiceAccounts, scheduling). Without them it is what envtest starts.
    pub controllers: bool,
    /// Controllers of kube-controller-manager to leave off, by name (`job-controller`, ...).
    pub disabled_controllers: Vec<String>,
    /// Admission plugins of kube-apiserver to turn off, by name (`TaintNodesByCondition`, ...).
    pub disabled_admission_plugins: Vec<String>,
    /// CustomResourceDefinitions `(origin, yaml)` to install once the API server is ready and
    /// before the controllers start: kube-controller-manager's garbage collector only notices
    /// kinds that appear later at its next discovery resync, up to 30 seconds on.
    pub crds: Vec<(String, String)>,
    /// Outlive this process (`cargo xtask control-plane up`); `stop` it or `down` it later.
    pub detached: bool,
    /// How long start-up may take.
    pub ready_timeout: Duration,
}

/// What Tollgate's worlds leave off: their Nodes are made by the fake autoscaler and have no
/// kubelet behind them, and the job runner plays the Job controller and the kubelet (ARCHITECTURE.md
/// says why). The node lifecycle controller would mark such Nodes unreachable and evict their pods,
/// and the `TaintNodesByCondition` admission plugin would taint every new Node not-ready, a taint
/// only that controller removes.
pub const FAKE_NODES_DISABLED_CONTROLLERS: &[&str] =
    &["job-controller", "node-lifecycle-controller"];
pub const FAKE_NODES_DISABLED_ADMISSION_PLUGINS: &[&str] = &["TaintNodesByCondition"];

impl Options {
    /// Set up for Nodes with no kubelet (see [`FAKE_NODES_DISABLED_CONTROLLERS`]).
    pub fn for_fake_nodes(mut self) -> Self {
        let owned = |names: &[&str]| names.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        self.disabled_controllers = owned(FAKE_NODES_DISABLED_CONTROLLERS);
        self.disabled_admission_plugins = owned(FAKE_NODES_DISABLED_ADMISSION_PLUGINS);
        self
    }

    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Options {
            dir: dir.into(),
            controllers: true,
            disabled_controllers: Vec::new(),
            disabled_admission_plugins: Vec::new(),
            crds: Vec::new(),
            detached: false,
            ready_timeout: Duration::from_secs(120),
        }
    }
}

/// A running control plane. Dropping it stops it; [`ControlPlane::detach`] leaves it running.
pub struct ControlPlane {
    dir: PathBuf,
    server: String,
    kubeconfig: PathBuf,
    credentials: Credentials,
    processes: Vec<Process>,
    detached: bool,
    ready_after: Duration,
}

impl ControlPlane {
    /// Start etcd and kube-apiserver (and the controllers, if asked), and wait until the API
    /// server is ready and, with the controllers, the `default` ServiceAccount exists.
    ///
    /// Ports are picked free but handed over later, so another process can take one first; the
    /// whole start is then tried again on fresh ports, from an empty etcd.
    pub async fn start(binaries: &Binaries, options: Options) -> Result<Self, Error> {
        let mut attempt = 1;
        loop {
            match Self::start_once(binaries, options.clone()).await {
                Err(e) if e.port_taken() && attempt < START_ATTEMPTS => {
                    tracing::warn!(attempt, "{e}; starting again on other ports");
                    let etcd = options.dir.join("etcd");
                    if etcd.exists() {
                        std::fs::remove_dir_all(&etcd).map_err(|e| Error::io(&etcd, e))?;
                    }
                    attempt += 1;
                }
                result => return result,
            }
        }
    }

    async fn start_once(binaries: &Binaries, options: Options) -> Result<Self, Error> {
        let started = Instant::now();
        let needed: &[Component] = if options.controllers {
            &Component::ALL
        } else {
            &[Component::Etcd, Component::ApiServer]
        };
        // Every binary is checked before anything starts.
        let paths = needed
            .iter()
            .map(|c| binaries.path(*c).map(|p| (*c, p)))
            .collect::<Result<Vec<_>, _>>()?;
        let path = |c: Component| {
            paths
                .iter()
                .find(|(k, _)| *k == c)
                .map(|(_, p)| p.clone())
                .expect("checked above")
        };
        let dir = options.dir.clone();
        let logs = dir.join("logs");
        std::fs::create_dir_all(&logs).map_err(|e| Error::io(&logs, e))?;
        let credentials = Credentials::generate(&dir.join("pki"), SERVICE_IP)?;

        let mut cp = ControlPlane {
            dir: dir.clone(),
            server: String::new(),
            kubeconfig: dir.join("kubeconfig"),
            credentials,
            processes: Vec::new(),
            detached: options.detached,
            ready_after: Duration::ZERO,
        };

        let etcd_client = free_port()?;
        let etcd_peer = free_port()?;
        let etcd_data = dir.join("etcd");
        let etcd_args = vec![
            format!("--data-dir={}", etcd_data.display()),
            format!("--listen-client-urls=http://127.0.0.1:{etcd_client}"),
            format!("--advertise-client-urls=http://127.0.0.1:{etcd_client}"),
            format!("--listen-peer-urls=http://127.0.0.1:{etcd_peer}"),
            format!("--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}"),
            format!("--initial-cluster=default=http://127.0.0.1:{etcd_peer}"),
            // A throwaway cluster: losing it on a power cut costs nothing, fsync costs seconds.
            "--unsafe-no-fsync=true".into(),
        ];
        cp.spawn(Component::Etcd, &path(Component::Etcd), &etcd_args)?;

        let api_port = free_port()?;
        cp.server = format!("https://127.0.0.1:{api_port}");
        let creds = &cp.credentials;
        let sa_key = creds.service_account_key_file().display().to_string();
        let mut api_args = vec![
            format!("--etcd-servers=http://127.0.0.1:{etcd_client}"),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            // The endpoint reconciler refuses loopback addresses; the `kubernetes` Service then
            // has no endpoints, which nothing here needs (every client is outside the cluster).
            "--endpoint-reconciler-type=none".into(),
            format!("--secure-port={api_port}"),
            format!("--tls-cert-file={}", creds.serving_cert_file().display()),
            format!(
                "--tls-private-key-file={}",
                creds.serving_key_file().display()
            ),
            format!("--client-ca-file={}", creds.ca_file().display()),
            format!("--service-cluster-ip-range={SERVICE_CIDR}"),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
            format!(
                "--service-account-key-file={}",
                creds.service_account_public_key_file().display()
            ),
            format!("--service-account-signing-key-file={sa_key}"),
            "--authorization-mode=Node,RBAC".into(),
            "--allow-privileged=true".into(),
            "--profiling=false".into(),
        ];
        if !options.disabled_admission_plugins.is_empty() {
            api_args.push(format!(
                "--disable-admission-plugins={}",
                options.disabled_admission_plugins.join(",")
            ));
        }
        cp.spawn(Component::ApiServer, &path(Component::ApiServer), &api_args)?;

        let admin = cp.credentials.client_cert(&ADMIN)?;
        write_kubeconfig(
            &cp.kubeconfig,
            &cp.server,
            &cp.credentials.ca_pem,
            "tollgate-control-plane",
            Credential::Cert(&admin),
        )?;
        let deadline = started + options.ready_timeout;
        cp.wait_ready(deadline, options.ready_timeout).await?;
        if !options.crds.is_empty() {
            let crds: Vec<(&str, &str)> = options
                .crds
                .iter()
                .map(|(o, y)| (o.as_str(), y.as_str()))
                .collect();
            let left = deadline.saturating_duration_since(Instant::now());
            install_crds(&cp.client().await?, &crds, left).await?;
        }

        if options.controllers {
            let mut disabled = String::from("*");
            for c in &options.disabled_controllers {
                disabled.push_str(",-");
                disabled.push_str(c);
            }
            let kcm = cp.component_kubeconfig("kube-controller-manager", &CONTROLLER_MANAGER)?;
            let kcm_args = vec![
                format!("--kubeconfig={kcm}"),
                format!("--authentication-kubeconfig={kcm}"),
                format!("--authorization-kubeconfig={kcm}"),
                "--bind-address=127.0.0.1".into(),
                format!("--secure-port={}", free_port()?),
                "--leader-elect=false".into(),
                format!("--controllers={disabled}"),
                format!("--root-ca-file={}", cp.credentials.ca_file().display()),
                format!("--service-account-private-key-file={sa_key}"),
                // As kubeadm: each controller acts as its own ServiceAccount.
                "--use-service-account-credentials=true".into(),
                format!("--service-cluster-ip-range={SERVICE_CIDR}"),
                "--profiling=false".into(),
            ];
            cp.spawn(
                Component::ControllerManager,
                &path(Component::ControllerManager),
                &kcm_args,
            )?;
            let sched = cp.component_kubeconfig("kube-scheduler", &SCHEDULER)?;
            let sched_args = vec![
                format!("--kubeconfig={sched}"),
                format!("--authentication-kubeconfig={sched}"),
                format!("--authorization-kubeconfig={sched}"),
                "--bind-address=127.0.0.1".into(),
                format!("--secure-port={}", free_port()?),
                "--leader-elect=false".into(),
                "--profiling=false".into(),
            ];
            cp.spawn(
                Component::Scheduler,
                &path(Component::Scheduler),
                &sched_args,
            )?;
            cp.wait_service_account(deadline, options.ready_timeout)
                .await?;
        }
        cp.ready_after = started.elapsed();
        Ok(cp)
    }

    fn spawn(&mut self, c: Component, binary: &Path, args: &[String]) -> Result<(), Error> {
        let log = self.dir.join("logs").join(format!("{}.log", c.binary()));
        let p = Process::spawn(c.binary(), binary, args, log, self.detached)?;
        self.processes.push(p);
        Ok(())
    }

    fn component_kubeconfig(&self, name: &str, user: &User) -> Result<String, Error> {
        let cert: ClientCert = self.credentials.client_cert(user)?;
        let path = self.dir.join(format!("{name}.kubeconfig"));
        write_kubeconfig(
            &path,
            &self.server,
            &self.credentials.ca_pem,
            name,
            Credential::Cert(&cert),
        )?;
        Ok(path.display().to_string())
    }

    /// An error if a process has ended.
    fn check_alive(&mut self) -> Result<(), Error> {
        for p in &mut self.processes {
            if let Some(status) = p.exited() {
                return Err(Error::Exited {
                    name: p.name,
                    status: status.to_string(),
                    log: p.log.display().to_string(),
                    tail: p.log_tail(15),
                });
            }
        }
        Ok(())
    }

    async fn wait_ready(&mut self, deadline: Instant, timeout: Duration) -> Result<(), Error> {
        // Until the port accepts, a client would only log connection errors.
        let addr = self.server.trim_start_matches("https://").to_string();
        while tokio::net::TcpStream::connect(&addr).await.is_err() {
            self.check_alive()?;
            if Instant::now() > deadline {
                return Err(Error::NotReady(
                    timeout,
                    format!("nothing listens on {addr}"),
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let client = self.client().await?;
        loop {
            self.check_alive()?;
            // kube-client logs every non-2xx answer as an error; a 500 is expected until ready.
            let answer = client
                .request_text(http_get("/readyz"))
                .with_subscriber(tracing::subscriber::NoSubscriber::default())
                .await;
            let last = match answer {
                Ok(body) if body.trim() == "ok" => return Ok(()),
                Ok(body) => body,
                Err(e) => e.to_string(),
            };
            if Instant::now() > deadline {
                return Err(Error::NotReady(timeout, format!("/readyz: {last}")));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn wait_service_account(
        &mut self,
        deadline: Instant,
        timeout: Duration,
    ) -> Result<(), Error> {
        use k8s_openapi::api::core::v1::ServiceAccount;
        let accounts: kube::Api<ServiceAccount> =
            kube::Api::namespaced(self.client().await?, "default");
        loop {
            self.check_alive()?;
            if let Ok(Some(_)) = accounts.get_opt("default").await {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::NotReady(
                    timeout,
                    "kube-controller-manager made no `default` ServiceAccount".into(),
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The admin kubeconfig (cluster-admin, through `system:masters`).
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// `https://127.0.0.1:PORT`.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The directory of this control plane's files (logs in `logs/`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How long start-up took, from the first process to ready.
    pub fn ready_after(&self) -> Duration {
        self.ready_after
    }

    /// The pids of the processes, in start order.
    pub fn pids(&self) -> Vec<(&'static str, u32)> {
        self.processes.iter().map(|p| (p.name, p.pid())).collect()
    }

    /// A cluster-admin client. Make one per tokio runtime.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        client_for(&self.kubeconfig).await
    }

    /// A client that hands back every answer as the server gave it. kube's clients retry 429,
    /// 503 and 504 answers (15 times, with Retry-After and back-off): a test that checks such an
    /// answer got it after minutes (a list at a future resourceVersion, 389 s; an eviction a
    /// budget refuses, 386 s), and the fake's in-process client, which has no retries, gets it at
    /// once.
    pub async fn client_without_retries(&self) -> Result<kube::Client, Error> {
        let mut config = config_for(&self.kubeconfig).await?;
        config.default_retry = false;
        kube::Client::try_from(config).map_err(|e| Error::Client(e.to_string()))
    }

    /// Write a kubeconfig that authenticates with `token` (a ServiceAccount's, say).
    pub fn write_token_kubeconfig(&self, path: &Path, token: &str) -> Result<(), Error> {
        write_kubeconfig(
            path,
            &self.server,
            &self.credentials.ca_pem,
            "tollgate-control-plane",
            Credential::Token(token),
        )
    }

    /// Stop every process, the last started first.
    pub fn stop(mut self) {
        self.stop_all();
    }

    fn stop_all(&mut self) {
        while let Some(p) = self.processes.pop() {
            p.stop(Duration::from_secs(10));
        }
    }

    /// Leave the processes running after this value is gone (see [`Options::detached`]).
    pub fn detach(mut self) -> Vec<(&'static str, u32)> {
        let pids = self.pids();
        self.processes.clear();
        pids
    }
}

/// Stopped when dropped, also when `start` fails half-way, detached or not; only [`detach`]
/// leaves the processes running.
///
/// [`detach`]: ControlPlane::detach
impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop_all();
    }
}

/// A client from a kubeconfig file, with its current context.
pub async fn client_for(kubeconfig: &Path) -> Result<kube::Client, Error> {
    let config = config_for(kubeconfig).await?;
    kube::Client::try_from(config).map_err(|e| Error::Client(e.to_string()))
}

/// The client configuration a kubeconfig file's current context gives, to adjust before making a
/// client of it.
pub async fn config_for(kubeconfig: &Path) -> Result<kube::Config, Error> {
    let config = kube::config::Kubeconfig::read_from(kubeconfig)
        .map_err(|e| Error::Client(format!("{}: {e}", kubeconfig.display())))?;
    kube::Config::from_custom_kubeconfig(config, &kube::config::KubeConfigOptions::default())
        .await
        .map_err(|e| Error::Client(format!("{}: {e}", kubeconfig.display())))
}

fn http_get(path: &str) -> http::Request<Vec<u8>> {
    http::Request::get(path)
        .body(Vec::new())
        .expect("a GET with a static path builds")
}

#[cfg(test)]
mod tests {
    use super::Error;

    fn exited(tail: &str) -> Error {
        Error::Exited {
            name: "kube-controller-manager",
            status: "exit status: 1".into(),
            log: "kube-controller-manager.log".into(),
            tail: tail.into(),
        }
    }

    #[test]
    fn only_a_lost_port_race_starts_the_control_plane_again() {
        let lost = "E1124 failed to create listener: failed to listen on 127.0.0.1:41093: \
                    listen tcp 127.0.0.1:41093: bind: address already in use";
        assert!(exited(lost).port_taken());
        assert!(!exited("error: unknown flag: --bogus").port_taken());
        assert!(
            !Error::NotReady(std::time::Duration::ZERO, "address already in use".into())
                .port_taken()
        );
    }
}
