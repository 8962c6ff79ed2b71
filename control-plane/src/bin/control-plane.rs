//! `control-plane` (run as `cargo xtask control-plane ...`): build the reference control plane,
//! start it in the background, stop it; and regenerate the fake API server's tables of Go facts
//! (`field-order`, `protobuf-fields`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use control_plane::binaries::{build_dir, workspace_root};
use control_plane::{Binaries, ControlPlane, Options, gobuild};
use serde::{Deserialize, Serialize};

/// The reference control plane: kube-apiserver, etcd, kube-controller-manager and kube-scheduler,
/// built from the upstream Go modules pinned in tools/control-plane/ and run on loopback.
#[derive(Parser)]
#[command(name = "control-plane")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build the binaries with the go command into target/control-plane/bin/ (envtest's layout).
    /// The first build downloads the modules and takes several minutes; later ones reuse Go's
    /// caches.
    Build {
        /// Where to put the binaries.
        #[arg(long, default_value_os_t = build_dir())]
        out: PathBuf,
    },
    /// Start the control plane in the background, with fresh certificates, a service-account
    /// signing key and an admin kubeconfig. Binaries come from KUBEBUILDER_ASSETS if set, then
    /// target/control-plane/bin/.
    Up {
        /// Where its certificates, etcd data, kubeconfig and logs go.
        #[arg(long, default_value_os_t = default_run_dir())]
        dir: PathBuf,
        /// Start only etcd and kube-apiserver, as envtest does.
        #[arg(long)]
        no_controllers: bool,
        /// A kube-controller-manager controller to leave off (repeatable), e.g. job-controller.
        #[arg(long = "disable-controller")]
        disabled_controllers: Vec<String>,
        /// A kube-apiserver admission plugin to turn off (repeatable), e.g. TaintNodesByCondition.
        #[arg(long = "disable-admission-plugin")]
        disabled_admission_plugins: Vec<String>,
        /// Set up for Tollgate's fake autoscaler and job runner, whose Nodes have no kubelet: no
        /// Job controller, no node lifecycle controller, no TaintNodesByCondition (as the tests'
        /// control plane).
        #[arg(long)]
        fake_nodes: bool,
    },
    /// Stop the control plane that `up` started and delete its directory.
    Down {
        #[arg(long, default_value_os_t = default_run_dir())]
        dir: PathBuf,
    },
    /// Regenerate the fake API server's table of Go field orders (the order kube-apiserver writes
    /// each built-in type's keys in) from the pinned Go types, with tools/control-plane/fieldorder.
    FieldOrder {
        /// Where to write it.
        #[arg(long, default_value_os_t = workspace_root().join(FIELD_ORDER_FILE))]
        out: PathBuf,
    },
    /// Regenerate the fake API server's table of protobuf fields (each built-in type's field
    /// numbers, JSON names and Go shapes, which decide the bytes kube-apiserver writes) from the
    /// pinned Go types, with tools/control-plane/protofields.
    ProtobufFields {
        /// Where to write it.
        #[arg(long, default_value_os_t = workspace_root().join(PROTOBUF_FIELDS_FILE))]
        out: PathBuf,
    },
}

/// The generated field-order table, relative to the workspace.
const FIELD_ORDER_FILE: &str = "fake-apiserver/src/http/go_field_order.json";
/// The generated protobuf table, relative to the workspace.
const PROTOBUF_FIELDS_FILE: &str = "fake-apiserver/src/http/protobuf/go_protobuf.json";

/// Run one of tools/control-plane's generators and write what it prints to `out`.
fn generate(program: &str, out: &Path) -> anyhow::Result<()> {
    let output = std::process::Command::new("go")
        .args(["run", program])
        .current_dir(gobuild::module_dir())
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running go (is it on PATH?)")?;
    if !output.status.success() {
        bail!("go run {program} failed: {}", output.status);
    }
    std::fs::write(out, &output.stdout).with_context(|| format!("writing {}", out.display()))?;
    eprintln!("wrote {}", out.display());
    Ok(())
}

fn default_run_dir() -> PathBuf {
    workspace_root().join("target/control-plane/run")
}

/// What `up` leaves for `down`.
#[derive(Serialize, Deserialize)]
struct State {
    server: String,
    kubeconfig: PathBuf,
    processes: Vec<(String, u32)>,
}

const STATE_FILE: &str = "state.json";

fn read_state(dir: &Path) -> anyhow::Result<Option<State>> {
    let path = dir.join(STATE_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(
            serde_json::from_str(&text).with_context(|| format!("reading {}", path.display()))?,
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
    }
}

/// Whether `pid` is still the process `up` started: alive, and running the binary it recorded.
/// After a reboot the pid may belong to anything else.
fn ours(name: &str, pid: u32) -> bool {
    let alive = i32::try_from(pid)
        .is_ok_and(|p| control_plane::process::alive(nix::unistd::Pid::from_raw(p)));
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    alive && String::from_utf8_lossy(&cmdline).contains(name)
}

fn running(state: &State) -> bool {
    state.processes.iter().any(|(name, pid)| ours(name, *pid))
}

fn stop(state: &State) {
    for (name, pid) in state.processes.iter().rev() {
        if ours(name, *pid) {
            eprintln!("stopping {name} (pid {pid})");
            control_plane::process::terminate(*pid, Duration::from_secs(10));
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Build { out } => {
            gobuild::build(&out)?;
            eprintln!("built into {}", out.display());
            Ok(())
        }
        Command::FieldOrder { out } => generate("./fieldorder", &out),
        Command::ProtobufFields { out } => generate("./protofields", &out),
        Command::Up {
            dir,
            no_controllers,
            disabled_controllers,
            disabled_admission_plugins,
            fake_nodes,
        } => {
            if let Some(state) = read_state(&dir)? {
                if running(&state) {
                    bail!(
                        "a control plane from {} is already running at {}: run `cargo xtask control-plane down` first",
                        dir.display(),
                        state.server
                    );
                }
                std::fs::remove_dir_all(&dir)
                    .with_context(|| format!("removing the stale {}", dir.display()))?;
            } else if std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some()) {
                // Not ours: `up` deletes its directory on failure and `down` always does.
                bail!(
                    "{} is not empty and holds no control plane: give `--dir` a new or empty directory",
                    dir.display()
                );
            }
            let mut options = Options::new(&dir);
            if fake_nodes {
                options = options.for_fake_nodes();
            }
            options.controllers = !no_controllers;
            options.disabled_controllers.extend(disabled_controllers);
            options
                .disabled_admission_plugins
                .extend(disabled_admission_plugins);
            options.detached = true;
            let binaries = Binaries::locate();
            // Ctrl-C during start-up drops the half-started plane, which stops what did start:
            // its processes are in their own group and would not see the signal.
            let started = tokio::select! {
                r = ControlPlane::start(&binaries, options) => r.map_err(|e| e.to_string()),
                _ = tokio::signal::ctrl_c() => Err("interrupted".to_string()),
            };
            let cp = match started {
                Ok(cp) => cp,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    bail!("{e}");
                }
            };
            let state = State {
                server: cp.server().to_string(),
                kubeconfig: cp.kubeconfig().to_path_buf(),
                processes: cp.pids().iter().map(|(n, p)| (n.to_string(), *p)).collect(),
            };
            let ready = cp.ready_after();
            cp.detach();
            std::fs::write(dir.join(STATE_FILE), serde_json::to_string_pretty(&state)?)?;
            eprintln!(
                "control plane ready at {} in {:.1} s (logs in {})",
                state.server,
                ready.as_secs_f64(),
                dir.join("logs").display()
            );
            eprintln!(
                "use it with: KUBECONFIG={} kubectl get namespaces",
                state.kubeconfig.display()
            );
            eprintln!("stop it with: cargo xtask control-plane down");
            println!("{}", state.kubeconfig.display());
            Ok(())
        }
        Command::Down { dir } => {
            let Some(state) = read_state(&dir)? else {
                eprintln!("no control plane is running from {}", dir.display());
                return Ok(());
            };
            stop(&state);
            std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
            eprintln!("stopped");
            Ok(())
        }
    }
}
