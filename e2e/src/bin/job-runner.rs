//! `job-runner`: the scenario engine's Job controller and kubelet as a process, for real clusters
//! where the Job controller is off (see ARCHITECTURE.md). An unsuspended Job runs for its
//! duration, then completes or fails; with `pods: true` its pods are bound to Nodes that can take
//! them and run there first.

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use e2e::env::{Component, ComponentContext};
use e2e::harness::JobRunner;

/// Play the Job controller and the kubelet for Tollgate's scenarios on a real cluster.
#[derive(Parser)]
#[command(name = "job-runner")]
struct Args {
    /// The kubeconfig to connect with (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The context to use from the kubeconfig.
    #[arg(long)]
    context: Option<String>,
    /// The configuration, as a scenario's `components.job-runner`: `{duration: 5m, pods: true}`.
    #[arg(long)]
    config: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config: serde_json::Value = match &args.config {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            serde_yaml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?
        }
        None => serde_json::Value::Null,
    };
    let runner = JobRunner::from_value(&config)
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.config.unwrap_or_default().display()))?;
    let client = controller::connect(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
    let ctx = ComponentContext {
        client,
        start_wall: jiff::Timestamp::now(),
        start: tokio::time::Instant::now(),
    };
    runner.run(ctx).await.map_err(anyhow::Error::msg)
}
