//! `fake-apiserver`: serve a fake Kubernetes API server on TCP for kubectl and other processes.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use fake_apiserver::FakeApiServer;

/// An in-process fake Kubernetes API server, served over plain HTTP.
///
/// Prints the bound address on stdout, writes a kubeconfig for kubectl and kube-rs, and runs until
/// SIGINT or SIGTERM.
#[derive(Parser)]
#[command(name = "fake-apiserver", version)]
struct Args {
    /// Address to listen on (port 0 picks a free port). Loopback unless you say otherwise.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Where to write the kubeconfig.
    #[arg(long)]
    kubeconfig_out: PathBuf,
    /// A directory of CustomResourceDefinition YAML files to install at start (repeatable).
    #[arg(long = "crds")]
    crds: Vec<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut builder = FakeApiServer::builder();
    for dir in &args.crds {
        builder = builder.crds_dir(dir)?;
    }
    let server = builder.build()?;
    let tcp = server.serve_tcp(args.listen).await?;
    tcp.write_kubeconfig(&args.kubeconfig_out)
        .with_context(|| {
            format!(
                "writing the kubeconfig to {}",
                args.kubeconfig_out.display()
            )
        })?;
    println!("{}", tcp.addr());
    eprintln!(
        "fake-apiserver serving {} (kubeconfig: {})",
        tcp.url(),
        args.kubeconfig_out.display()
    );
    wait_for_signal().await?;
    tcp.shutdown().await;
    Ok(())
}

async fn wait_for_signal() -> anyhow::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    Ok(())
}
