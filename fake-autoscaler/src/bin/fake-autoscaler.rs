//! `fake-autoscaler`: the scripted Cluster Autoscaler against any API server.

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;

/// A scripted Cluster Autoscaler for ProvisioningRequests: the upstream provisioning classes
/// (check-capacity, best-effort-atomic-scale-up), vendor-like and scripted classes, node groups
/// with fake Nodes, and deliberately broken variants.
#[derive(Parser, Debug)]
#[command(name = "fake-autoscaler", version)]
struct Args {
    /// The kubeconfig to connect with (default: $KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The context to use from the kubeconfig.
    #[arg(long)]
    context: Option<String>,
    /// The configuration file (node groups, classes, scripts, timing). Without it, the two
    /// upstream classes and no node groups.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Play a broken variant (overrides the file's `broken`). `--list-broken` names them.
    #[arg(long, value_name = "NAME")]
    broken: Option<String>,
    /// List the broken variants and the rule each breaks, then exit.
    #[arg(long)]
    list_broken: bool,
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
    if args.list_broken {
        for b in fake_autoscaler::Broken::ALL {
            println!("{:<36} {}", b.name(), b.rule());
        }
        return Ok(());
    }
    let mut config = match &args.config {
        Some(path) => fake_autoscaler::Config::load(path)?,
        None => fake_autoscaler::Config::default(),
    };
    if let Some(name) = &args.broken {
        config.broken = Some(fake_autoscaler::Broken::from_name(name).map_err(anyhow::Error::msg)?);
    }
    let client = support::connect(args.kubeconfig.as_deref(), args.context.as_deref())
        .await
        .context("connecting to the API server")?;
    let classes: Vec<&str> = config.classes.iter().map(|c| c.name.as_str()).collect();
    eprintln!("fake autoscaler serving {}", classes.join(", "));
    fake_autoscaler::run(
        client,
        fake_autoscaler::Autoscaler::new(config),
        support::Clock::system(),
    )
    .await?;
    Ok(())
}
