//! `scenarios`: run the YAML scenarios with a readable summary, comparing each trace with its
//! snapshot. `cargo xtask scenarios [FILTER] [--accept]` runs this binary; `INSTA_UPDATE=always`
//! (what `--accept` sets) writes the new snapshots instead of failing.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use e2e::backend::{Backend, RealOutcome, Session};
use e2e::kind::KindOptions;
use e2e::scenario::{Registry, load, run_blocking};
use e2e::snapshot::{assert_trace, scenario_files, scenarios_dir, snapshots_dir};

#[derive(Parser)]
#[command(
    name = "scenarios",
    about = "Run Tollgate's YAML scenarios and compare their traces with the snapshots"
)]
struct Args {
    /// Only scenarios whose file name contains this.
    filter: Option<String>,
    /// Where the scenarios are (their snapshots are in its `snapshots/`). Default: e2e/scenarios.
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// Measure instead of checking: run each scenario this many times and print wall times as a
    /// Markdown table (snapshots are not compared).
    #[arg(long, value_name = "RUNS", conflicts_with_all = ["control_plane", "kubeconfig", "kind"])]
    bench: Option<usize>,
    /// Run on the reference control plane (a fresh one per scenario; `cargo xtask
    /// control-plane build` first), on real time, with the components as processes. A MultiKueue
    /// scenario's workers are reference control planes of their own, with their own components.
    #[arg(long, conflicts_with_all = ["kubeconfig", "kind"])]
    control_plane: bool,
    /// Run on the cluster of this kubeconfig, on real time, with the components as processes.
    /// The run applies the CRDs and deletes what each scenario made.
    #[arg(long, value_name = "PATH", conflicts_with = "kind")]
    kubeconfig: Option<std::path::PathBuf>,
    /// Run on a kind cluster made for the run (needs kind and Docker).
    #[arg(long)]
    kind: bool,
    /// With --kind: leave the cluster running afterwards.
    #[arg(long, requires = "kind")]
    keep: bool,
    /// With --kind: the node image, e.g. kindest/node:v1.37.2.
    #[arg(long, requires = "kind")]
    kind_image: Option<String>,
    /// With --kind: the kind executable.
    #[arg(long, requires = "kind", default_value = "kind")]
    kind_binary: std::path::PathBuf,
    /// Where a real backend's run writes each scenario's trace, events and component logs.
    /// Default: the workspace's target/e2e.
    #[arg(long, default_value_os_t = scenarios_dir().join("../../target/e2e"))]
    run_dir: std::path::PathBuf,
}

impl Args {
    fn backend(&self) -> Option<Backend> {
        if self.control_plane {
            return Some(Backend::ControlPlane);
        }
        if let Some(path) = &self.kubeconfig {
            return Some(Backend::Kubeconfig(path.clone()));
        }
        self.kind.then(|| {
            Backend::Kind(KindOptions {
                binary: self.kind_binary.clone(),
                image: self.kind_image.clone(),
                keep: self.keep,
                ..KindOptions::default()
            })
        })
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    // RUST_LOG=controller=debug shows every write and scheduling decision of the controller.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let dir = args.dir.clone().unwrap_or_else(scenarios_dir);
    let files = match scenario_files(&dir, args.filter.as_deref()) {
        Ok(files) if !files.is_empty() => files,
        Ok(_) => {
            eprintln!(
                "no scenarios in {} match {:?}",
                dir.display(),
                args.filter.unwrap_or_default()
            );
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("reading {}: {e}", dir.display());
            return ExitCode::FAILURE;
        }
    };
    // Every file is checked before any runs.
    let mut scenarios = Vec::new();
    for file in &files {
        match load(file) {
            Ok(s) => scenarios.push(s),
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if let Some(backend) = args.backend() {
        return real(&scenarios, backend, &args.run_dir);
    }
    match args.bench {
        Some(runs) => bench(&scenarios, runs.max(1)),
        None => check(&scenarios, &snapshots_dir(&dir)),
    }
}

/// Every scenario on a real backend, with a progress bar; the assertions decide.
fn real(scenarios: &[e2e::Scenario], backend: Backend, run_dir: &std::path::Path) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("starting a tokio runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let name = backend.name();
    let run_dir = run_dir.join(name);
    let suite = Instant::now();
    let session = match Session::start(backend, &run_dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = runtime.block_on(session.check()) {
        eprintln!("{e}");
        let _ = session.finish();
        return ExitCode::FAILURE;
    }
    let bar = indicatif::ProgressBar::new(scenarios.len() as u64).with_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let (mut failed, mut skipped) = (0, 0);
    for scenario in scenarios {
        bar.set_message(scenario.name.clone());
        let wall = Instant::now();
        let line = match runtime.block_on(session.run(scenario)) {
            Err(e) => {
                failed += 1;
                format!("FAIL {}: {e}", scenario.name)
            }
            Ok(RealOutcome::Skipped(reason)) => {
                skipped += 1;
                format!("skip {}: {reason}", scenario.name)
            }
            Ok(RealOutcome::Ran { outcome, dir }) => match &outcome.failure {
                Some(failure) => {
                    failed += 1;
                    format!(
                        "FAIL {} ({:.1} s; trace and logs in {})\n{failure}",
                        scenario.name,
                        wall.elapsed().as_secs_f64(),
                        dir.display()
                    )
                }
                None => format!(
                    "ok   {} ({:.1} s on {name}, {} trace lines)",
                    scenario.name,
                    wall.elapsed().as_secs_f64(),
                    outcome.trace.to_yaml().lines().count()
                ),
            },
        };
        // A hidden bar (no terminal) drops what it prints.
        if bar.is_hidden() {
            println!("{line}");
        } else {
            bar.println(line);
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let finished = session.finish();
    println!(
        "\n{} scenarios on {name}, {} passed, {failed} failed, {skipped} skipped, in {:.0?}",
        scenarios.len(),
        scenarios.len() - failed - skipped,
        suite.elapsed()
    );
    println!("traces, events and component logs: {}", run_dir.display());
    if let Err(e) = finished {
        eprintln!("{e}");
        return ExitCode::FAILURE;
    }
    if failed > 0 {
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn check(scenarios: &[e2e::Scenario], snapshots: &std::path::Path) -> ExitCode {
    let registry = Registry::standard();
    let suite = Instant::now();
    let mut failed = 0;
    for scenario in scenarios {
        let wall = Instant::now();
        let outcome = match run_blocking(scenario, &registry) {
            Ok(o) => o,
            Err(e) => {
                failed += 1;
                println!("FAIL {}: {e}", scenario.name);
                continue;
            }
        };
        let wall = wall.elapsed();
        if let Some(failure) = &outcome.failure {
            failed += 1;
            println!(
                "FAIL {} ({})\n{failure}",
                scenario.name,
                timing(wall, outcome.elapsed)
            );
            continue;
        }
        // insta reports a differing snapshot by panicking, after printing the diff.
        let compared = catch_unwind(AssertUnwindSafe(|| {
            assert_trace(snapshots, scenario, &outcome.trace)
        }));
        let changes = outcome.trace.change_count();
        match compared {
            Ok(()) => println!(
                "ok   {} ({}, {changes} changes)",
                scenario.name,
                timing(wall, outcome.elapsed)
            ),
            Err(_) => {
                failed += 1;
                println!(
                    "FAIL {}: the trace differs from the snapshot (diff above)",
                    scenario.name
                );
            }
        }
    }
    println!(
        "\n{} scenarios, {} passed, {failed} failed, in {:.0?}",
        scenarios.len(),
        scenarios.len() - failed,
        suite.elapsed()
    );
    if failed > 0 {
        println!("to accept changed traces as the new snapshots: cargo xtask scenarios --accept");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

fn timing(wall: Duration, virtual_time: Duration) -> String {
    format!(
        "{:.1} ms wall, {} virtual",
        wall.as_secs_f64() * 1000.0,
        e2e::scenario::duration::format_duration(virtual_time)
    )
}

fn bench(scenarios: &[e2e::Scenario], runs: usize) -> ExitCode {
    let registry = Registry::standard();
    // One pass times each scenario and, summed over a round, the whole suite.
    let mut walls = vec![Vec::new(); scenarios.len()];
    let mut virtual_times = vec![Duration::ZERO; scenarios.len()];
    let mut suite = Vec::new();
    for _ in 0..runs {
        let round = Instant::now();
        for (i, scenario) in scenarios.iter().enumerate() {
            let start = Instant::now();
            match run_blocking(scenario, &registry) {
                Ok(outcome) if outcome.failure.is_none() => virtual_times[i] = outcome.elapsed,
                Ok(outcome) => {
                    eprintln!(
                        "{} failed: {}",
                        scenario.name,
                        outcome.failure.map(|f| f.to_string()).unwrap_or_default()
                    );
                    return ExitCode::FAILURE;
                }
                Err(e) => {
                    eprintln!("{}: {e}", scenario.name);
                    return ExitCode::FAILURE;
                }
            }
            walls[i].push(start.elapsed());
        }
        suite.push(round.elapsed());
    }
    println!("| scenario | virtual time | wall, median of {runs} | wall, max |");
    println!("| --- | --- | --- | --- |");
    let mut slowest = (Duration::ZERO, "");
    for (i, scenario) in scenarios.iter().enumerate() {
        let (median, max) = median_and_max(&mut walls[i]);
        if median > slowest.0 {
            slowest = (median, &scenario.name);
        }
        println!(
            "| {} | {} | {:.1} ms | {:.1} ms |",
            scenario.name,
            e2e::scenario::duration::format_duration(virtual_times[i]),
            median.as_secs_f64() * 1000.0,
            max.as_secs_f64() * 1000.0
        );
    }
    let (suite_median, _) = median_and_max(&mut suite);
    println!(
        "\nwhole suite ({} scenarios), median of {runs}: {:.0} ms; slowest scenario: {} at {:.1} ms",
        scenarios.len(),
        suite_median.as_secs_f64() * 1000.0,
        slowest.1,
        slowest.0.as_secs_f64() * 1000.0
    );
    ExitCode::SUCCESS
}

/// Median and maximum of at least one sample.
fn median_and_max(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    let max = samples.last().copied().unwrap_or_default();
    (
        samples.get(samples.len() / 2).copied().unwrap_or_default(),
        max,
    )
}
