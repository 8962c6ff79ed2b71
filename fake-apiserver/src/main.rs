//! `fake-apiserver`: serve a fake Kubernetes API server on TCP for kubectl and other processes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use fake_apiserver::envtest::Role;
use fake_apiserver::{FakeApiServer, Security};

/// An in-process fake Kubernetes API server, served over TCP.
///
/// Prints the bound address on stdout, writes a kubeconfig for kubectl and kube-rs (readable by
/// its owner only), and runs until SIGINT or SIGTERM. By default it serves plain HTTP without
/// authentication on loopback; `--tls` and `--token` lock it.
///
/// Started under the name `kube-apiserver` or `etcd` (a link to this binary, as
/// `cargo xtask envtest-assets` makes for envtest), it takes those programs' flags instead: see
/// `kube-apiserver --help`.
#[derive(Parser)]
#[command(name = "fake-apiserver", version)]
struct Args {
    /// Address to listen on (port 0 picks a free port). Anything but loopback needs
    /// --allow-remote.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Let --listen name an address other hosts can reach (prints a warning).
    #[arg(long)]
    allow_remote: bool,
    /// Serve HTTPS with a certificate made at start, signed by the cluster's root CA; the
    /// kubeconfig trusts that CA.
    #[arg(long)]
    tls: bool,
    /// Require a bearer token, made at start and written into the kubeconfig: a request without
    /// it (or a ServiceAccount token this server issued) gets 401 Unauthorized.
    #[arg(long)]
    token: bool,
    /// Where to write the kubeconfig.
    #[arg(long)]
    kubeconfig_out: PathBuf,
    /// A directory of CustomResourceDefinition YAML files to install at start (repeatable).
    #[arg(long = "crds")]
    crds: Vec<PathBuf>,
}

/// How long a stop waits for open requests before the process exits anyway.
const STOP_GRACE: Duration = Duration::from_secs(2);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        // Colours only on a terminal: envtest and CI send stderr to files.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let argv0 = std::env::args().next().unwrap_or_default();
    match Role::from_program_name(&argv0) {
        Role::KubeApiServer => as_kube_apiserver().await,
        Role::Etcd => as_etcd().await,
        Role::FakeApiServer => as_itself().await,
    }
}

async fn as_itself() -> anyhow::Result<()> {
    let args = Args::parse();
    let stop = stop_signal()?;
    let ip = args.listen.ip();
    if !ip.is_loopback() {
        if !args.allow_remote {
            bail!(
                "refusing to listen on {}: other hosts could reach it; pass --allow-remote to mean it (and --tls --token to lock it)",
                args.listen
            );
        }
        let open = if args.tls && args.token {
            ""
        } else {
            " without --tls and --token: anyone who reaches it can read and change everything"
        };
        eprintln!(
            "warning: fake-apiserver is listening on {}, which other hosts can reach{open}",
            args.listen
        );
    }
    let mut builder = FakeApiServer::builder();
    for dir in &args.crds {
        builder = builder.crds_dir(dir)?;
    }
    let server = builder.build()?;
    let security = Security {
        tls: args.tls,
        token: match args.token {
            true => Some(
                fake_apiserver::http::auth::generate_token()
                    .map_err(|_| anyhow::anyhow!("the system's random generator failed"))?,
            ),
            false => None,
        },
        ..Security::default()
    };
    let tcp = server.serve(args.listen, security).await?;
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
    stop.await?;
    tcp.shutdown().await;
    std::process::exit(0);
}

/// The flags after the program's name, or `None` when they ask for help (printed then).
fn flags_or_help(help: fn() -> String) -> Option<Vec<String>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{}", help());
        return None;
    }
    Some(args)
}

/// Started as `kube-apiserver` (by envtest, from a `KUBEBUILDER_ASSETS` folder): serves HTTPS on
/// the flags' address with their certificates, until SIGINT or SIGTERM.
async fn as_kube_apiserver() -> anyhow::Result<()> {
    use fake_apiserver::envtest::kube_apiserver;
    let Some(args) = flags_or_help(kube_apiserver::help) else {
        return Ok(());
    };
    let stop = stop_signal()?;
    let config = match kube_apiserver::config(&args) {
        Ok(config) => config,
        Err(e) => {
            eprintln!(
                "Error: {e}\n(this is Tollgate's fake standing in for kube-apiserver: --help lists the flags it takes)"
            );
            std::process::exit(1);
        }
    };
    if !config.not_acted_on.is_empty() {
        eprintln!(
            "fake kube-apiserver: accepted and not acted on: {}",
            config.not_acted_on.join(" ")
        );
    }
    if let Some(cert) = &config.wrote_certificate {
        eprintln!(
            "fake kube-apiserver: wrote a self-signed serving certificate to {}",
            cert.display()
        );
    }
    let server = FakeApiServer::builder().build()?;
    let tcp = server.serve(config.addr, config.security).await?;
    eprintln!("fake kube-apiserver: serving {}", tcp.url());
    stop.await?;
    tcp.shutdown().await;
    std::process::exit(0);
}

/// Started as `etcd` (by envtest): answers `/health` on the client URLs until SIGINT or SIGTERM.
async fn as_etcd() -> anyhow::Result<()> {
    use fake_apiserver::envtest::etcd;
    let Some(args) = flags_or_help(etcd::help) else {
        return Ok(());
    };
    let stop = stop_signal()?;
    let served = match etcd::client_addresses(&args) {
        Ok(addrs) => etcd::serve_health(&addrs).await.map(|()| addrs),
        Err(e) => Err(e),
    };
    match served {
        Ok(addrs) => eprintln!("fake etcd: answering /health on {addrs:?}"),
        Err(e) => {
            eprintln!(
                "Error: {e}\n(this is Tollgate's fake standing in for etcd: --help lists the flags it takes)"
            );
            std::process::exit(1);
        }
    }
    stop.await?;
    std::process::exit(0);
}

/// Waits for SIGINT or SIGTERM on a thread of its own, not on the runtime: a runtime whose
/// workers are all busy (a large body being parsed, say) would notice a signal only when the work
/// ends. After a signal the process exits within [`STOP_GRACE`], whatever is still running.
fn stop_signal() -> anyhow::Result<tokio::sync::oneshot::Receiver<()>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("listening for SIGINT and SIGTERM")?;
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        if signals.forever().next().is_some() {
            let _ = tx.send(());
            std::thread::sleep(STOP_GRACE);
            eprintln!(
                "fake-apiserver: requests still running after {STOP_GRACE:?}; exiting anyway"
            );
            std::process::exit(0);
        }
    });
    Ok(rx)
}
