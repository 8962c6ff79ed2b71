//! Tollgate's automation: `cargo xtask <command>`. Every job a developer or CI runs by hand lives here.

mod chaos;
mod codegen;
mod crds;
mod envtest_assets;
mod fuzz;
mod kueue_suites;
mod manifests;
mod subcargo;

use std::path::PathBuf;
use std::process::Command as Process;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "xtask",
    about = "Tollgate automation (run as `cargo xtask <command>`)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the conformance suite for ProvisioningRequest classes. Without arguments: against an
    /// embedded fake API server with the fake autoscaler's reference classes, on virtual time.
    /// `--kubeconfig PATH --options FILE` runs it against a cluster; `--mutants` against every
    /// broken variant of the fake autoscaler. Every other flag goes to the suite (`--help` there
    /// lists them: `cargo xtask conformance -- --help`).
    #[command(disable_help_flag = false)]
    Conformance {
        /// The flags of the `conformance` binary.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The reference control plane, built from upstream's Go modules (tools/control-plane/):
    /// `build` (needs Go; into target/control-plane/bin/), `up` (start it in the background on
    /// loopback and write an admin kubeconfig), `down` (stop it). `cargo xtask control-plane
    /// -- --help` lists the flags.
    #[command(name = "control-plane")]
    ControlPlane {
        /// The flags of the `control-plane` binary: build, up or down, and their options.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Start the fake API server on loopback and print where its kubeconfig is. Runs until Ctrl-C.
    Serve {
        /// Address to listen on (port 0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: String,
        /// Where to write the kubeconfig.
        #[arg(long, default_value = "target/tollgate/kubeconfig")]
        kubeconfig_out: String,
        /// Directories of CRD YAML files to install at start.
        #[arg(long = "crds")]
        crds: Vec<String>,
        /// Serve HTTPS (a certificate signed by the cluster's root CA, trusted by the kubeconfig).
        #[arg(long)]
        tls: bool,
        /// Require the bearer token written into the kubeconfig (401 without it).
        #[arg(long)]
        token: bool,
        /// Let --listen name an address other hosts can reach.
        #[arg(long)]
        allow_remote: bool,
    },
    /// Run the benchmarks (optimised build) and print their results as Markdown tables: the fake
    /// API server's, the wall time of each scenario and of the whole suite, Kueue's scheduler
    /// performance baseline against the controller, MultiKueue with ten workers, watch latency on
    /// the served fake and on kube-apiserver, then the reference control plane against the fake
    /// (start-up, create and GET throughput). kube-apiserver's parts are skipped, saying why, without its binaries.
    Bench,
    /// Long runs under faults and load (optimised build). `--multikueue`: seeded runs of a
    /// manager and three workers through partitions, heals, slow links, restarts and evictions,
    /// the invariant checked after every step; prints a summary and each failing seed with its
    /// steps. `--apiserver`: 64 clients × 1,000 contended operations and 20 watchers on the served
    /// fake and on the reference control plane, checking that nothing is lost, repeated or
    /// reordered; prints the figures of both. `--scenarios`: every scenario with components run
    /// under faults on the components' requests (500s, 429s, dropped connections, closed watches,
    /// latency), once per seed, and crash-only (the controller and the fake autoscaler killed and
    /// started again before each step in turn), each run compared with the undisturbed one;
    /// `--seeds` defaults to 200 there, and a scenario name (or part of one) after the flags runs
    /// only those.
    Chaos {
        /// The MultiKueue chaos run.
        #[arg(long)]
        multikueue: bool,
        /// The scenarios under faults.
        #[arg(long)]
        scenarios: bool,
        /// With --scenarios: only scenarios whose file name contains this.
        filter: Option<String>,
        /// The load on the API servers.
        #[arg(long)]
        apiserver: bool,
        /// How many seeds (default: 2000 for --multikueue, 200 for --scenarios).
        #[arg(long)]
        seeds: Option<u64>,
        /// The first of them.
        #[arg(long, default_value_t = 0)]
        first: u64,
        /// Replay this one seed, printing its steps.
        #[arg(long, conflicts_with_all = ["seeds", "first"])]
        seed: Option<u64>,
        /// The cargo profile to build the runs with: `release` (the default, fastest to run), or
        /// `dev` to reuse a build `cargo test` already made (CI's is optimised).
        #[arg(long, default_value = "release")]
        profile: String,
    },
    /// Fuzz with `cargo fuzz` (libFuzzer): each target of fuzz/ (the request router and query
    /// parsing, selectors, merge, JSON and strategic merge patch, server-side apply, CRD schemas,
    /// scenario files, YAML depth) for `--seconds` each, from its seeds in fuzz/corpus/, then a
    /// table of executions, new inputs and crashes. Installs cargo-fuzz and the nightly toolchain
    /// when missing. Fails when a target finds a crash or a hang (saved under fuzz/artifacts/).
    Fuzz {
        /// Only targets whose name contains this.
        filter: Option<String>,
        /// How long each target runs.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Print the targets and stop.
        #[arg(long)]
        list: bool,
    },
    /// Run the YAML scenarios in e2e/scenarios/ with a summary, comparing each trace with its
    /// snapshot.
    Scenarios {
        /// Only scenarios whose file name contains this.
        filter: Option<String>,
        /// Write the traces as the new snapshots instead of failing when they differ.
        #[arg(long)]
        accept: bool,
    },
    /// Run the scenarios on a real cluster, on real time, with the controller, the fake
    /// autoscaler and the job runner as processes: the reference control plane (default; a fresh
    /// one per scenario, `cargo xtask control-plane build` first), any cluster (`--kubeconfig`),
    /// or a kind cluster made for the run (`--kind`, needs kind and Docker). On the control plane,
    /// a MultiKueue scenario's workers are reference control planes too, each with its own
    /// components, and the manager's controller reaches them over TLS on loopback through
    /// kubeconfig Secrets. Scenarios that need virtual time or faults are skipped with the
    /// reason; the assertions decide, and each scenario's trace, events and component logs go to
    /// target/e2e/<backend>/ (a worker's under its name).
    E2e {
        /// The reference control plane (the default).
        #[arg(long, conflicts_with_all = ["kubeconfig", "kind"])]
        control_plane: bool,
        /// The cluster of this kubeconfig.
        #[arg(long, value_name = "PATH", conflicts_with = "kind")]
        kubeconfig: Option<String>,
        /// A kind cluster made for the run, deleted afterwards unless --keep.
        #[arg(long)]
        kind: bool,
        /// With --kind: leave the cluster running.
        #[arg(long, requires = "kind")]
        keep: bool,
        /// With --kind: the node image, e.g. kindest/node:v1.37.2.
        #[arg(long, requires = "kind")]
        kind_image: Option<String>,
        /// Only scenarios whose file name contains this.
        filter: Option<String>,
    },
    /// Replay the differential corpus (fidelity/corpus/) against the fake API server and the
    /// reference control plane, compare every answer and write FIDELITY.md. Fails on any
    /// difference not listed with its reason in fidelity/known/ (`control-plane build` first).
    Fidelity {
        /// The flags of the `fidelity` binary (see `cargo xtask fidelity -- --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Regenerate checked-in code derived from dependencies (the built-in resource catalogue).
    Codegen {
        /// Only check that the checked-in files are up to date; exit non-zero if not.
        #[arg(long)]
        check: bool,
    },
    /// Write the manifests that install the controller on a cluster (CRDs, Namespace,
    /// ServiceAccount, RBAC, ConfigMap, Deployment), for `kubectl apply --server-side -f DIR`.
    Manifests {
        /// The directory to write them into (default: target/manifests/ in the workspace).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The controller image for the Deployment (default: a placeholder to replace).
        #[arg(long)]
        image: Option<String>,
    },
    /// Make a folder for envtest's KUBEBUILDER_ASSETS in which `kube-apiserver` and `etcd` are
    /// the fake API server (links to its binary, built first), and print the variable to set.
    /// Go tests that start envtest then start the fake instead, in milliseconds.
    #[command(name = "envtest-assets")]
    EnvtestAssets {
        /// The folder to make (default: envtest-assets/ in cargo's target directory).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Build the fake with this cargo profile (`release` for the fastest server).
        #[arg(long, default_value = "dev")]
        profile: String,
    },
    /// Run Kueue's own integration suites (the Go module tools/kueue-suites/ pins, unmodified,
    /// through envtest) against the reference control plane's kube-apiserver and etcd and against
    /// the fake in their place, and compare them spec by spec. Fails on a spec that passes on the
    /// reference and not on the fake, unless tools/kueue-suites/known.txt lists it with its
    /// reason. Needs Go, make and `cargo xtask control-plane build`; prints a Markdown table of
    /// specs passed, wall time and the servers' peak memory per suite and backend.
    #[command(name = "kueue-suites")]
    KueueSuites(kueue_suites::Options),
    /// Regenerate the CRD YAML in api/crds/ from the api crate's types.
    Crds {
        /// Only check that the checked-in CRDs are up to date; exit non-zero naming the stale files.
        #[arg(long)]
        check: bool,
    },
}

/// The workspace's root directory (xtask's manifest directory is one below it).
fn workspace_root() -> anyhow::Result<PathBuf> {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(std::path::Path::to_path_buf)
        .context("xtask's manifest directory has no parent (workspace root)")
}

fn cargo() -> Process {
    subcargo::command(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

fn run(mut cmd: Process) -> anyhow::Result<()> {
    let status = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
    if !status.success() {
        bail!("{cmd:?} failed: {status}");
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Serve {
            listen,
            kubeconfig_out,
            crds,
            tls,
            token,
            allow_remote,
        } => {
            let mut cmd = cargo();
            cmd.args(["run", "--quiet", "--package", "fake-apiserver", "--"]);
            cmd.args(["--listen", &listen, "--kubeconfig-out", &kubeconfig_out]);
            for dir in &crds {
                cmd.args(["--crds", dir]);
            }
            for (given, flag) in [
                (tls, "--tls"),
                (token, "--token"),
                (allow_remote, "--allow-remote"),
            ] {
                if given {
                    cmd.arg(flag);
                }
            }
            eprintln!("starting the fake API server; kubeconfig will be at {kubeconfig_out}");
            eprintln!("use it with: KUBECONFIG={kubeconfig_out} kubectl get namespaces");
            run(cmd)
        }
        Command::Bench => {
            let mut cmd = cargo();
            cmd.args([
                "bench",
                "--package",
                "fake-apiserver",
                "--bench",
                "apiserver",
            ]);
            run(cmd)?;
            let mut cmd = cargo();
            cmd.args([
                "run",
                "--quiet",
                "--release",
                "--package",
                "e2e",
                "--bin",
                "scenarios",
            ]);
            cmd.args(["--", "--bench", "5"]);
            run(cmd)?;
            let mut cmd = cargo();
            cmd.args(["bench", "--package", "e2e", "--bench", "scheduling"]);
            // The run's memory only grows: mimalloc handing freed pages back to the kernel and
            // faulting them in again zeroed cost about 5% of its time.
            cmd.env("MIMALLOC_PURGE_DELAY", "-1");
            // mimalloc turns transparent huge pages off for the process. With them the kernel
            // compacted and zeroed 2 MiB at a time as the heap grew: 0.6 to 0.8 s more system time
            // per cohort, with no gain in user time.
            cmd.env("MIMALLOC_ALLOW_THP", "0");
            run(cmd)?;
            // MultiKueue: a manager and ten workers, 1,000 Jobs, each dispatcher.
            let mut cmd = cargo();
            cmd.args(["bench", "--package", "e2e", "--bench", "multikueue"]);
            cmd.env("MIMALLOC_PURGE_DELAY", "-1");
            cmd.env("MIMALLOC_ALLOW_THP", "0");
            run(cmd)?;
            // Watch latency and fan-out, the served fake and kube-apiserver in the same run
            // (kube-apiserver skipped, with the reason, when it is not built).
            let mut cmd = cargo();
            cmd.args([
                "bench",
                "--package",
                "control-plane",
                "--bench",
                "watch_latency",
            ]);
            run(cmd)?;
            // The reference control plane against the fake (says why and skips without it).
            let mut cmd = cargo();
            cmd.args([
                "bench",
                "--package",
                "control-plane",
                "--bench",
                "control_plane",
            ]);
            run(cmd)
        }
        Command::Chaos {
            multikueue,
            scenarios,
            filter,
            apiserver,
            seeds,
            first,
            seed,
            profile,
        } => {
            chaos::check(multikueue, scenarios, apiserver)?;
            if apiserver {
                run(chaos::apiserver_load(cargo(), &profile))?;
            }
            if multikueue {
                let seeds = chaos::Seeds {
                    seeds: seeds.unwrap_or(2000),
                    first,
                    seed,
                };
                run(chaos::command(cargo(), &seeds, &profile))?;
            }
            if scenarios {
                let seeds = chaos::Seeds {
                    seeds: seeds.unwrap_or(200),
                    first: first.max(1),
                    seed,
                };
                run(chaos::scenarios(
                    cargo(),
                    &seeds,
                    filter.as_deref(),
                    &profile,
                ))?;
            }
            Ok(())
        }
        Command::Fuzz {
            filter,
            seconds,
            list,
        } => fuzz::run(
            &fuzz::root(),
            &fuzz::Options {
                seconds,
                filter,
                list,
            },
        ),
        Command::Scenarios { filter, accept } => {
            let mut cmd = cargo();
            cmd.args([
                "run",
                "--quiet",
                "--package",
                "e2e",
                "--bin",
                "scenarios",
                "--",
            ]);
            cmd.args(filter);
            // insta reads this: `always` writes the snapshots, `no` only compares.
            cmd.env("INSTA_UPDATE", if accept { "always" } else { "no" });
            run(cmd)
        }
        Command::Conformance { args } => {
            // The command line with the embedded world built in; with a cluster's flags it does
            // what the `conformance` binary does.
            let mut cmd = cargo();
            cmd.args([
                "run",
                "--quiet",
                "--package",
                "conformance-embedded",
                "--bin",
                "conformance-embedded",
                "--",
            ]);
            cmd.args(args);
            run(cmd)
        }
        Command::Fidelity { args } => {
            let mut cmd = cargo();
            cmd.args(["run", "--quiet", "--package", "fidelity", "--"]);
            cmd.args(args);
            // Keep the binary's exit code: 1 is a difference, 2 a run that could not be made.
            let status = cmd.status().with_context(|| format!("starting {cmd:?}"))?;
            std::process::exit(status.code().unwrap_or(2));
        }
        Command::ControlPlane { args } => {
            let mut cmd = cargo();
            cmd.args([
                "run",
                "--quiet",
                "--package",
                "control-plane",
                "--bin",
                "control-plane",
                "--",
            ]);
            cmd.args(args);
            run(cmd)
        }
        Command::E2e {
            control_plane: _,
            kubeconfig,
            kind,
            keep,
            kind_image,
            filter,
        } => {
            // The components run from their own binaries, built first.
            let mut build = cargo();
            build.args(["build", "--quiet", "--bins"]);
            for package in ["controller", "fake-autoscaler", "e2e"] {
                build.args(["--package", package]);
            }
            run(build)?;
            let mut cmd = cargo();
            cmd.args([
                "run",
                "--quiet",
                "--package",
                "e2e",
                "--bin",
                "scenarios",
                "--",
            ]);
            match (kubeconfig, kind) {
                (Some(path), _) => {
                    cmd.args(["--kubeconfig", &path]);
                }
                (None, true) => {
                    cmd.arg("--kind");
                    if keep {
                        cmd.arg("--keep");
                    }
                    if let Some(image) = kind_image {
                        cmd.args(["--kind-image", &image]);
                    }
                }
                (None, false) => {
                    cmd.arg("--control-plane");
                }
            }
            cmd.args(filter);
            run(cmd)
        }
        Command::Codegen { check } => codegen::run(check),
        Command::Crds { check } => crds::run(check),
        Command::EnvtestAssets { out, profile } => envtest_assets::run(cargo(), out, &profile),
        Command::Manifests { out, image } => manifests::run(out, image),
        Command::KueueSuites(options) => kueue_suites::run(options),
    }
}
