//! Kueue's scheduler performance benchmark against Tollgate's controller, on virtual time.
//!
//! `cargo bench -p e2e --bench scheduling [-- --config FILE]`; `cargo xtask bench` runs it with
//! the baseline. Prints a Markdown table: what the run measured, and for the baseline Kueue's
//! published averages and thresholds beside it.

use std::time::{Duration, Instant};

use anyhow::Context;
use clap::Parser;
use e2e::perf::{BASELINE, Plan, Summary, run_with_progress};

// The run allocates and frees small JSON values by the million; glibc's malloc spent a third of
// the time in its own bookkeeping.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Kueue's figures for the baseline (`configs/baseline/rangespec.yaml`): the measured average and
/// the threshold its CI enforces.
struct Kueue {
    average: &'static str,
    threshold: &'static str,
}

#[derive(Parser)]
#[command(about = "Kueue's scheduler performance benchmark against Tollgate's controller")]
struct Args {
    /// A generator file in Kueue's format (default: the baseline, e2e/perf/baseline.yaml).
    #[arg(long)]
    config: Option<std::path::PathBuf>,
    /// Virtual time after which a run that has not finished fails.
    #[arg(long, default_value = "3600")]
    limit_seconds: u64,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    // RUST_LOG=controller=debug shows every write the controller makes.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let (text, baseline) = match &args.config {
        Some(path) => (
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
            false,
        ),
        None => (BASELINE.to_string(), true),
    };
    let plan = Plan::from_yaml(&text)?;
    eprintln!(
        "scheduling benchmark: {} ClusterQueues, {} workloads",
        plan.queues.len(),
        plan.workloads.len()
    );
    // Paused: every wait is virtual, so the run takes only the time the work takes.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()?;
    let wall = Instant::now();
    let limit = Duration::from_secs(args.limit_seconds);
    let report = runtime.block_on(run_with_progress(&plan, limit, |p| {
        eprintln!(
            "  {:>4} s virtual, {:>6.1} s wall: {} created, {} running, {} waiting, {} finished",
            p.at.as_secs(),
            wall.elapsed().as_secs_f64(),
            p.created,
            p.running,
            p.waiting,
            p.finished
        );
    }))?;
    let wall = wall.elapsed();
    print_table(&report.summary, wall, peak_memory(), baseline);
    // The run is over. Freeing the world object by object would add a second to the process's
    // time for nothing: exit as it stands.
    std::process::exit(0)
}

fn print_table(s: &Summary, wall: Duration, peak: Option<u64>, baseline: bool) {
    let kueue = |average, threshold| baseline.then_some(Kueue { average, threshold });
    let mut rows: Vec<(String, String, Option<Kueue>)> = vec![
        (
            "run length (virtual; Kueue: wall)".into(),
            millis(s.duration),
            kueue("351,116 ms", "≤ 425,000 ms"),
        ),
        ("wall time".into(), millis(wall), None),
        (
            "peak memory (RSS: API server, controller and runner)".into(),
            peak.map_or("unknown".into(), |kib| format!("{} MiB", kib / 1024)),
            None,
        ),
    ];
    for (class, q) in &s.queue_classes {
        let k = (baseline && class == "cq")
            .then(|| kueue("55.9 %", "≥ 50 %"))
            .flatten();
        rows.push((
            format!("ClusterQueue usage, class {class} ({} queues)", q.queues),
            format!("{:.1} %", q.usage_percent()),
            k,
        ));
    }
    for (class, w) in &s.workload_classes {
        let k = match (baseline, class.as_str()) {
            (true, "large") => kueue("16,501 ms", "≤ 23,000 ms"),
            (true, "medium") => kueue("76,768 ms", "≤ 90,000 ms"),
            (true, "small") => kueue("215,468 ms", "≤ 260,000 ms"),
            _ => None,
        };
        rows.push((
            format!(
                "average time to admission, {class} ({} workloads, {} evictions)",
                w.count, w.evictions
            ),
            millis(w.average_time_to_admission()),
            k,
        ));
    }
    println!("| measurement | Tollgate | Kueue, measured average | Kueue, threshold |");
    println!("| --- | --- | --- | --- |");
    for (name, ours, k) in rows {
        let (average, threshold) = k.map_or(("", ""), |k| (k.average, k.threshold));
        println!("| {name} | {ours} | {average} | {threshold} |");
    }
}

fn millis(d: Duration) -> String {
    let ms = d.as_millis();
    let text = ms.to_string();
    // Thousands separators, as Kueue's figures are written.
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i > 0 && (text.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    format!("{out} ms")
}

/// The process's peak resident set (Linux `VmHWM`), in KiB.
fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
