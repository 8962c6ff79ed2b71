//! `cargo xtask kueue-suites`: Kueue's own integration suites, unmodified, from the Go module that
//! tools/kueue-suites/ pins, run through envtest against the reference control plane's
//! kube-apiserver and etcd and against the fake's `KUBEBUILDER_ASSETS` folder (each envtest
//! starts a server of its own), then compared spec by spec.
//!
//! A spec that passes on the reference and not on the fake fails the run, unless
//! tools/kueue-suites/known.txt lists it with its reason.

mod memory;
mod prepare;
mod report;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use report::{Comparison, Known, SuiteRun};

/// One of Kueue's integration suites: a Go test package under test/integration/.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Suite {
    pub name: &'static str,
    pub package: &'static str,
}

/// The suites run by default: MultiKueue and the ProvisioningRequest check, the core
/// controllers they build on, and the webhooks of Kueue's objects and of the jobs it manages.
pub const SUITES: [Suite; 5] = [
    Suite {
        name: "provisioning",
        package: "singlecluster/controller/admissionchecks/provisioning",
    },
    Suite {
        name: "core",
        package: "singlecluster/controller/core",
    },
    Suite {
        name: "webhook-core",
        package: "singlecluster/webhook/core",
    },
    Suite {
        name: "webhook-jobs",
        package: "singlecluster/webhook/jobs",
    },
    Suite {
        name: "multikueue",
        package: "multikueue",
    },
];

/// What envtest starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// kube-apiserver and etcd, built by `cargo xtask control-plane build`.
    Reference,
    /// The fake API server in their place (`cargo xtask envtest-assets`).
    Fake,
}

impl Backend {
    fn name(self) -> &'static str {
        match self {
            Backend::Reference => "reference",
            Backend::Fake => "fake",
        }
    }
}

/// `cargo xtask kueue-suites`'s flags.
#[derive(clap::Args)]
pub struct Options {
    /// The backends, in order (comma-separated).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "reference,fake"
    )]
    pub against: Vec<Backend>,
    /// Run only these suites (repeatable): provisioning, core, webhook-core, webhook-jobs,
    /// multikueue. Default: all five.
    #[arg(long = "suite")]
    pub suites: Vec<String>,
    /// Run only the specs whose full text matches this regular expression (ginkgo's --focus).
    #[arg(long)]
    pub focus: Option<String>,
    /// Where Kueue's module is copied and built, and the runs' logs and JSON reports go
    /// (default: kueue-suites/ in cargo's target directory).
    #[arg(long)]
    pub work: Option<PathBuf>,
    /// Also write the Markdown summary to this file.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// Run the backends one after the other (default: side by side, each backend's suites one
    /// at a time). For wall times that the other backend's runs do not disturb.
    #[arg(long)]
    pub serial: bool,
}

pub fn run(options: Options) -> Result<()> {
    let suites = chosen(&options.suites)?;
    // Each backend once: two runs of one would share their logs and reports.
    let mut against: Vec<Backend> = Vec::new();
    for backend in &options.against {
        if !against.contains(backend) {
            against.push(*backend);
        }
    }
    let root = crate::workspace_root()?;
    let work = match &options.work {
        Some(dir) => dir.clone(),
        None => target_dir(&root).join("kueue-suites"),
    };
    let known = Known::load(&root.join("tools/kueue-suites/known.txt"))?;

    let prepared = prepare::prepare(&root.join("tools/kueue-suites"), &work, &suites)?;
    let mut assets = Vec::new();
    for backend in &against {
        let dir = match backend {
            Backend::Reference => reference_assets()?,
            Backend::Fake => crate::envtest_assets::build_and_link(
                crate::cargo(),
                Some(work.join("envtest-assets")),
                "dev",
            )?,
        };
        assets.push((*backend, dir));
    }

    let runs = if options.serial {
        let mut runs = Vec::new();
        for (backend, dir) in &assets {
            runs.extend(run_suites(
                &prepared,
                &suites,
                *backend,
                dir,
                options.focus.as_deref(),
            )?);
        }
        runs
    } else {
        // The backends side by side, each running its suites one after another: the suites
        // mostly wait (for what they expect, in real time), and CI's time is a budget.
        let focus = options.focus.as_deref();
        std::thread::scope(|scope| {
            let running: Vec<_> = assets
                .iter()
                .map(|(backend, dir)| {
                    let (prepared, suites) = (&prepared, &suites);
                    scope.spawn(move || run_suites(prepared, suites, *backend, dir, focus))
                })
                .collect();
            let mut runs = Vec::new();
            for thread in running {
                runs.extend(thread.join().expect("a suite runner panicked")?);
            }
            Ok::<_, anyhow::Error>(runs)
        })?
    };
    let mut comparison = Comparison::new(&runs, &known);
    // The specs that failed on the fake run once more, a suite's in one focused run, to tell a
    // flake from a difference.
    let mut reruns = Vec::new();
    if let Some((_, fake)) = assets.iter().find(|(b, _)| *b == Backend::Fake) {
        for suite in &suites {
            let specs = comparison.differing(suite.name);
            if specs.is_empty() {
                continue;
            }
            let focus = specs
                .iter()
                .map(|s| regex_escape(s))
                .collect::<Vec<_>>()
                .join("|");
            let rerun = run_suite(&prepared, suite, "fake-again", fake, Some(&focus))?;
            eprintln!("{}", rerun.one_line());
            reruns.push(rerun);
        }
    }
    for rerun in &reruns {
        comparison.retried(rerun);
    }
    let text = comparison.markdown();
    println!("{text}");
    if let Some(path) = &options.report {
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    comparison.verdict()
}

fn chosen(names: &[String]) -> Result<Vec<Suite>> {
    if names.is_empty() {
        return Ok(SUITES.to_vec());
    }
    names
        .iter()
        .map(|n| {
            SUITES
                .iter()
                .copied()
                .find(|s| s.name == n)
                .with_context(|| {
                    let all: Vec<_> = SUITES.iter().map(|s| s.name).collect();
                    format!("no suite {n:?}; the suites are {}", all.join(", "))
                })
        })
        .collect()
}

/// One backend's runs of `suites`, one after another.
fn run_suites(
    prepared: &prepare::Prepared,
    suites: &[Suite],
    backend: Backend,
    assets: &Path,
    focus: Option<&str>,
) -> Result<Vec<SuiteRun>> {
    let mut runs = Vec::new();
    for suite in suites {
        let run = run_suite(prepared, suite, backend.name(), assets, focus)?;
        eprintln!("{}", run.one_line());
        runs.push(run);
    }
    Ok(runs)
}

/// `text` as a regular expression (RE2, as ginkgo's `--focus` reads it) that matches only it.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// cargo's target directory, as cargo picks it.
fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

/// The reference binaries' folder; envtest needs only kube-apiserver and etcd from it.
fn reference_assets() -> Result<PathBuf> {
    let dir = control_plane::binaries::build_dir();
    for program in ["kube-apiserver", "etcd"] {
        if !dir.join(program).is_file() {
            bail!(
                "{} has no {program}: run `cargo xtask control-plane build` first",
                dir.display()
            );
        }
    }
    Ok(dir)
}

/// Runs one suite's test binary as Kueue's Makefile does (from its package folder, with
/// PROJECT_DIR and KUBEBUILDER_ASSETS), its output to a log and its specs to ginkgo's JSON report,
/// both in runs/`label`/.
fn run_suite(
    prepared: &prepare::Prepared,
    suite: &Suite,
    label: &'static str,
    assets: &Path,
    focus: Option<&str>,
) -> Result<SuiteRun> {
    let out = prepared.work.join("runs").join(label);
    std::fs::create_dir_all(&out).with_context(|| format!("making {}", out.display()))?;
    let json = out.join(format!("{}.json", suite.name));
    let log = out.join(format!("{}.log", suite.name));
    let _ = std::fs::remove_file(&json);
    let log_file =
        std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let mut cmd = Command::new(prepared.binary(suite));
    cmd.current_dir(prepared.module.join("test/integration").join(suite.package))
        // envtest prefers these to KUBEBUILDER_ASSETS (the first to starting anything): left
        // from the caller's shell they would point both backends at one server.
        .env_remove("USE_EXISTING_CLUSTER")
        .env_remove("TEST_ASSET_KUBE_APISERVER")
        .env_remove("TEST_ASSET_ETCD")
        .env("KUBEBUILDER_ASSETS", assets)
        // Where suites write their junit reports: the run's folder, not the package folder that
        // both backends' runs share.
        .env("ARTIFACTS", &out)
        // The Makefile passes the module's folder with a trailing slash; the suites join onto it.
        .env("PROJECT_DIR", format!("{}/", prepared.module.display()))
        .arg(format!("-ginkgo.json-report={}", json.display()))
        .arg("-ginkgo.timeout=60m")
        .arg("-ginkgo.no-color")
        .stdin(Stdio::null())
        .stdout(log_file.try_clone().context("the log file")?)
        .stderr(log_file);
    if let Some(focus) = focus {
        cmd.arg(format!("-ginkgo.focus={focus}"));
    }
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", prepared.binary(suite).display()))?;
    let peak = memory::Sampler::start(child.id(), Duration::from_millis(200));
    let status = child.wait().context("waiting for the suite")?;
    let wall = started.elapsed();
    let peak = peak.stop();
    SuiteRun::read(suite.name, label, &json, &log, status, wall, peak)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_name_is_focused_on_literally() {
        assert_eq!(
            regex_escape("Provisioning when [a] class (v1.2) costs $3 | ^x*"),
            "Provisioning when \\[a\\] class \\(v1\\.2\\) costs \\$3 \\| \\^x\\*"
        );
    }

    #[test]
    fn suites_are_chosen_by_name() {
        assert_eq!(chosen(&[]).unwrap(), SUITES);
        assert_eq!(
            chosen(&["multikueue".into()]).unwrap()[0].package,
            "multikueue"
        );
        let err = chosen(&["nope".into()]).unwrap_err().to_string();
        assert!(
            err.contains("no suite \"nope\"; the suites are provisioning, core"),
            "{err}"
        );
    }
}
