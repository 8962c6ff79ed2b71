//! MultiKueue at scale, on virtual time: a manager and 10 workers in this process, 1,000 Jobs
//! submitted at once and dispatched by AllAtOnce, then (in a fresh process) by Incremental.
//! Each worker's ClusterQueue holds 120 of the one-CPU Jobs, so no worker can take them all.
//!
//! `cargo bench -p e2e --bench multikueue`; `cargo xtask bench` runs it. Prints a Markdown table:
//! wall time, peak memory (each dispatcher's own process) and time to admission (virtual: from
//! the Job's creation to its manager Workload's `Admitted` condition; the API keeps seconds).

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use api::kueue::Workload;
use clap::Parser;
use e2e::chaos::{NAMESPACE, Shape, apply, job, world};
use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;
use kube::api::Api;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const WORKERS: usize = 10;
const JOBS: usize = 1000;
const WORKER_CPUS: u32 = 120;
/// Virtual time after which a run that has not admitted every Job fails.
const LIMIT: Duration = Duration::from_secs(4 * 3600);

#[derive(Parser)]
#[command(about = "MultiKueue: a manager, 10 workers and 1,000 Jobs on virtual time")]
struct Args {
    /// Run one dispatcher in this process and print its figures as one line of JSON (the
    /// parent runs each dispatcher so, for a peak memory of its own).
    #[arg(long)]
    dispatcher: Option<String>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Figures {
    wall_ms: u128,
    peak_kib: Option<u64>,
    virtual_s: u64,
    p50_s: u64,
    p99_s: u64,
    max_s: u64,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    if let Some(dispatcher) = args.dispatcher {
        let figures = one(&dispatcher)?;
        println!("{}", serde_json::to_string(&figures)?);
        // As the scheduling bench: freeing the world object by object is time for nothing.
        std::process::exit(0)
    }
    let me = std::env::current_exe()?;
    let mut rows = vec![];
    for (name, dispatcher) in [
        ("AllAtOnce", api::constants::dispatcher::ALL_AT_ONCE),
        ("Incremental", api::constants::dispatcher::INCREMENTAL),
    ] {
        eprintln!("multikueue benchmark: {WORKERS} workers, {JOBS} Jobs, {name}");
        let out = Command::new(&me)
            .args(["--dispatcher", dispatcher])
            .stderr(std::process::Stdio::inherit())
            .output()
            .with_context(|| format!("running {}", me.display()))?;
        if !out.status.success() {
            bail!("the {name} run failed: {}", out.status);
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text.lines().last().unwrap_or_default();
        let figures: Figures =
            serde_json::from_str(line).with_context(|| format!("reading `{line}`"))?;
        rows.push((name, figures));
    }
    println!(
        "| dispatcher | wall time | peak memory (RSS) | all admitted at (virtual) | time to admission p50 / p99 / max (virtual) |"
    );
    println!("| --- | --- | --- | --- | --- |");
    for (name, f) in rows {
        println!(
            "| {name} | {:.1} s | {} | {} s | {} s / {} s / {} s |",
            f.wall_ms as f64 / 1000.0,
            f.peak_kib
                .map_or("unknown".into(), |kib| format!("{} MiB", kib / 1024)),
            f.virtual_s,
            f.p50_s,
            f.p99_s,
            f.max_s
        );
    }
    Ok(())
}

fn one(dispatcher: &str) -> anyhow::Result<Figures> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()?;
    let wall = Instant::now();
    let (virtual_s, waits) = runtime.block_on(async {
        let mut config = api::config::Configuration::default();
        config.multi_kueue.dispatcher_name = dispatcher.to_string();
        let shape = Shape {
            workers: WORKERS,
            worker_cpus: WORKER_CPUS,
            // Nothing finishes during the run.
            job_duration: Duration::from_secs(24 * 3600),
            config,
        };
        let env = world(&shape).await.map_err(anyhow::Error::msg)?;
        env.advance(Duration::from_secs(30)).await;
        let start = env.elapsed();
        for i in 0..JOBS {
            apply(&env.client(), job(&format!("job-{i}")))
                .await
                .map_err(anyhow::Error::msg)?;
        }
        let workloads: Api<Workload> = Api::namespaced(env.client(), NAMESPACE);
        loop {
            env.advance(Duration::from_secs(10)).await;
            env.check_components()?;
            let list = workloads.list(&Default::default()).await?.items;
            let admitted = list.iter().filter(|w| admitted_at(w).is_some()).count();
            eprintln!(
                "  {:>5} s virtual, {:>6.1} s wall: {} workloads, {admitted} admitted",
                (env.elapsed() - start).as_secs(),
                wall.elapsed().as_secs_f64(),
                list.len()
            );
            if admitted == JOBS {
                break;
            }
            if env.elapsed() - start > LIMIT {
                bail!("after {LIMIT:?} of virtual time only {admitted} of {JOBS} admitted");
            }
        }
        let virtual_s = (env.elapsed() - start).as_secs();
        let jobs: Api<Job> = Api::namespaced(env.client(), NAMESPACE);
        let created: std::collections::BTreeMap<String, jiff::Timestamp> = jobs
            .list(&Default::default())
            .await?
            .items
            .into_iter()
            .filter_map(|j| Some((j.name_any(), j.metadata.creation_timestamp?.0)))
            .collect();
        let mut waits = vec![];
        for w in workloads.list(&Default::default()).await?.items {
            let owner = w
                .owner_references()
                .first()
                .map(|o| o.name.clone())
                .unwrap_or_default();
            let (Some(at), Some(born)) = (admitted_at(&w), created.get(&owner)) else {
                bail!("workload {} has no admission or no job", w.name_any());
            };
            waits.push(at.duration_since(*born).as_secs().max(0) as u64);
        }
        anyhow::Ok((virtual_s, waits))
    })?;
    let wall_ms = wall.elapsed().as_millis();
    let mut waits = waits;
    waits.sort_unstable();
    let pick = |q: f64| {
        let i = ((waits.len() as f64 - 1.0) * q).round() as usize;
        waits.get(i).copied().unwrap_or_default()
    };
    Ok(Figures {
        wall_ms,
        peak_kib: peak_memory(),
        virtual_s,
        p50_s: pick(0.5),
        p99_s: pick(0.99),
        max_s: waits.last().copied().unwrap_or_default(),
    })
}

/// When the manager's workload was admitted (its `Admitted` condition turned True).
fn admitted_at(w: &Workload) -> Option<jiff::Timestamp> {
    w.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Admitted" && c.status == "True")
        .map(|c| c.last_transition_time.0)
}

/// The process's peak resident set (Linux `VmHWM`), in KiB.
fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
