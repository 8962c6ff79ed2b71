//! `controller`: Tollgate's Kueue controller against any API server.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;

/// Kueue's admission machinery (quota reservation, admission checks, resource transformations,
/// batch/v1 Jobs) against any Kubernetes API server.
#[derive(Parser, Debug)]
#[command(name = "controller", version)]
struct Args {
    /// The kubeconfig to connect with (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The context to use from the kubeconfig.
    #[arg(long)]
    context: Option<String>,
    /// The Kueue Configuration file (config.kueue.x-k8s.io/v1beta2). Without it, Kueue's defaults.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Where to serve Prometheus metrics (`/metrics`).
    #[arg(long, default_value = "127.0.0.1:8080")]
    metrics_bind_address: SocketAddr,
    /// Run only while holding this Lease (namespace/name), so that replicas take turns.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    leader_elect_lease: Option<String>,
    /// This replica's identity in the Lease (default: hostname and process id).
    #[arg(long)]
    leader_elect_identity: Option<String>,
    /// MultiKueue: the directory `locationType: Path` kubeconfigs of MultiKueueClusters must be
    /// under (a path outside it is refused as `BadKubeConfig`). `locationType: Secret`
    /// kubeconfigs are read from Secrets in the Configuration's `namespace` instead.
    #[arg(long, value_name = "DIR", default_value = controller::admissionchecks::multikueue::connect::DEFAULT_KUBECONFIG_DIR)]
    multikueue_kubeconfig_dir: PathBuf,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = match &args.config {
        Some(path) => controller::config::load(path)?,
        None => api::config::Configuration::default(),
    };
    let client = controller::connect(args.kubeconfig.as_deref(), args.context.as_deref())
        .await
        .context("connecting to the API server")?;
    let metrics = Arc::new(controller::metrics::Metrics::new());
    let listener = tokio::net::TcpListener::bind(args.metrics_bind_address)
        .await
        .with_context(|| format!("binding the metrics address {}", args.metrics_bind_address))?;
    eprintln!(
        "serving metrics on http://{}/metrics",
        listener.local_addr()?
    );
    tokio::spawn(controller::metrics_server::serve(listener, metrics.clone()));
    let options = controller::Options {
        config,
        clock: controller::Clock::system(),
        metrics,
        // Workers are reached over the network, with the kubeconfigs MultiKueueClusters name.
        workers: controller::admissionchecks::multikueue::connect::WorkerAccess {
            kubeconfig_dir: args.multikueue_kubeconfig_dir.clone(),
            ..Default::default()
        },
    };
    match args.leader_elect_lease {
        Some(lease) => {
            let (namespace, name) = lease
                .split_once('/')
                .context("--leader-elect-lease must be NAMESPACE/NAME")?;
            let identity = args.leader_elect_identity.unwrap_or_else(|| {
                format!(
                    "{}_{}",
                    std::env::var("HOSTNAME").unwrap_or_else(|_| "controller".into()),
                    std::process::id()
                )
            });
            let lease = controller::leader::Lease::new(
                client.clone(),
                namespace,
                name,
                &identity,
                options.clock,
            );
            lease
                .run_while_leader(controller::manager::run(client, options))
                .await?;
        }
        None => controller::manager::run(client, options).await?,
    }
    Ok(())
}
