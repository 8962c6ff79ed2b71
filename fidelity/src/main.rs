//! `fidelity`: replay the differential corpus against the fake API server and kube-apiserver.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use control_plane::binaries::workspace_root;
use control_plane::{Binaries, ControlPlane, Options};
use fake_apiserver::FakeApiServer;
use fidelity::{compare, corpus, report};

/// Send the corpus's requests to the fake API server and to kube-apiserver and compare every
/// answer. Exits 0 when every difference is listed with its reason in the known differences, 1 when one
/// is not (or a listed one no longer happens), 2 when the run could not be made.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// Compare against this cluster instead of starting the reference control plane (it should be
    /// set up as `cargo xtask control-plane up --fake-nodes` sets it up, with Tollgate's CRDs
    /// installed; the corpus writes into namespaces fid-*).
    #[arg(long, value_name = "PATH")]
    reference_kubeconfig: Option<PathBuf>,
    /// Where to write the report. Default: FIDELITY.md at the workspace root, unless FILTER is
    /// given (a partial run prints its differences and writes no report).
    #[arg(long, value_name = "PATH")]
    report: Option<PathBuf>,
    /// The corpus directory.
    #[arg(long, value_name = "DIR", default_value_os_t = fidelity::corpus_dir())]
    corpus: PathBuf,
    /// The directory of known differences (YAML lists of sequence, step, reason; `racy: true`
    /// for one that depends on the real server's controllers).
    #[arg(long, value_name = "DIR", default_value_os_t = fidelity::known_dir())]
    known: PathBuf,
    /// Append this to every sequence's namespace and `{seq}`, to replay on a cluster that still
    /// holds an earlier run's objects (with --reference-kubeconfig).
    #[arg(long, value_name = "SUFFIX", default_value = "")]
    suffix: String,
    /// Look past the order of keys in bodies (to see other differences; the report then says so).
    #[arg(long)]
    ignore_key_order: bool,
    /// Only the sequences whose name contains this.
    filter: Option<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fidelity: starting the runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(args)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("fidelity: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The project's CRDs, installed on both servers before the corpus runs.
fn project_crds() -> anyhow::Result<Vec<(String, String)>> {
    let dir = workspace_root().join("api/crds");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let text =
                std::fs::read_to_string(&f).with_context(|| format!("reading {}", f.display()))?;
            Ok((f.display().to_string(), text))
        })
        .collect()
}

async fn run(args: Args) -> anyhow::Result<bool> {
    let mut sequences = corpus::load(&args.corpus)?;
    let known = compare::load_known(&args.known, &sequences)?;
    if let Some(f) = &args.filter {
        sequences.retain(|s| s.name.contains(f.as_str()));
        anyhow::ensure!(!sequences.is_empty(), "no sequence's name contains {f:?}");
    }
    if !args.suffix.is_empty() {
        sequences = sequences
            .into_iter()
            .map(|s| s.with_suffix(&args.suffix))
            .collect();
    }
    let crds = project_crds()?;

    let mut fake = FakeApiServer::builder();
    for (origin, yaml) in &crds {
        fake = fake.crds_yaml(origin.clone(), yaml.clone());
    }
    let fake = fake.build().context("starting the fake API server")?;
    let served = fake
        .serve_tcp(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .context("serving the fake API server on loopback")?;
    let fake_client = kube::Client::try_from(kube::Config::new(
        served.url().parse().context("the fake's URL")?,
    ))
    .context("a client of the fake API server")?;

    // The reference: a cluster the user named, or a fresh control plane of our own.
    let mut _control_plane = None;
    let reference_client = match &args.reference_kubeconfig {
        Some(path) => control_plane::client_for(path).await?,
        None => {
            let dir = tempfile::Builder::new()
                .prefix("fidelity-")
                .tempdir_in(std::env::temp_dir())
                .context("a directory for the control plane")?;
            // Set up as Tollgate's worlds are: Nodes without a kubelet, Jobs run by the job
            // runner (ARCHITECTURE.md, "Real Kubernetes as a world"), which the fake models.
            let mut options = Options::new(dir.path()).for_fake_nodes();
            options.crds = crds.clone();
            eprintln!("fidelity: starting the reference control plane");
            let cp = ControlPlane::start(&Binaries::locate(), options).await?;
            let client = cp.client().await?;
            _control_plane = Some((cp, dir));
            client
        }
    };
    let version = reference_client
        .apiserver_version()
        .await
        .context("asking the reference server its version")?;
    let mut reference = format!("kube-apiserver {}", version.git_version);
    if args.ignore_key_order {
        reference.push_str(" (key order ignored)");
    }

    let total = sequences.len();
    let mut n = 0;
    // One line rewritten in place on a terminal; a line per sequence in a log.
    let terminal = std::io::stderr().is_terminal();
    let results = fidelity::run(
        &sequences,
        &known,
        &fake_client,
        &reference_client,
        args.ignore_key_order,
        |s| {
            n += 1;
            if terminal {
                eprint!("\rfidelity: [{n}/{total}] {:<60}", s.name);
                let _ = std::io::stderr().flush();
            } else {
                eprintln!("fidelity: [{n}/{total}] {}", s.name);
            }
        },
    )
    .await?;
    if terminal {
        eprintln!();
    }

    let stale = if args.filter.is_none() {
        compare::stale(&known, &results)
    } else {
        Vec::new()
    };
    let totals = report::Totals::of(&results);
    for r in results.iter().filter(|r| r.unlisted()) {
        println!(
            "unlisted difference: {} step {}: {}\n{}",
            r.sequence,
            r.step,
            r.request,
            r.diff.as_deref().unwrap_or_default()
        );
    }
    for k in &stale {
        println!(
            "known difference no longer happens (remove it from {}): {} {}",
            args.known.display(),
            k.sequence,
            k.step.as_deref().unwrap_or("(every step)")
        );
    }
    let report_path = match (&args.report, &args.filter) {
        (Some(p), _) => Some(p.clone()),
        (None, None) => Some(workspace_root().join("FIDELITY.md")),
        (None, Some(_)) => None,
    };
    if let Some(path) = &report_path {
        let mut md = report::markdown(&sequences, &results, &stale, &reference);
        md.push_str(&report::kueue_suites(
            &workspace_root().join(report::KUEUE_SUITES_RESULTS),
        ));
        std::fs::write(path, md).with_context(|| format!("writing {}", path.display()))?;
    }
    println!(
        "fidelity: {} of {} answers identical against {reference}; {} known differences, {} unlisted{}{}",
        totals.identical,
        totals.requests,
        totals.known,
        totals.unlisted,
        if stale.is_empty() {
            String::new()
        } else {
            format!(", {} listed that no longer happen", stale.len())
        },
        report_path
            .map(|p| format!(" (report: {})", p.display()))
            .unwrap_or_default()
    );
    served.shutdown().await;
    Ok(totals.unlisted == 0 && stale.is_empty())
}
