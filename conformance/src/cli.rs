//! The command line of both binaries: `conformance`, which vendors run against a cluster, and
//! `conformance-embedded` (behind `cargo xtask conformance`), which also runs the suite against
//! the fake autoscaler's reference classes on virtual time. Virtual time needs tokio's test-util
//! and the scenario engine's `TestEnv`, so the embedded world is a separate package, handed in as
//! an [`EmbeddedWorld`], and the vendor's binary links neither.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;

use crate::options::{Feature, Options};
use crate::preflight;
use crate::reference::ReferenceClass;
use crate::report::{self, ConformanceReport};
use crate::runner::{Outcome, Selection, TestResult};

/// Tollgate's own world for the suite: a fake API server on virtual time with the fake
/// autoscaler serving its reference classes (`conformance-embedded` implements it).
pub trait EmbeddedWorld {
    /// Runs the suite on a fresh world, the fake autoscaler playing the broken variant named
    /// `broken` if given.
    fn run(
        &self,
        options: &Options,
        broken: Option<&str>,
        selection: &Selection,
        progress: &mut dyn FnMut(&TestResult),
    ) -> anyhow::Result<Vec<TestResult>>;

    /// Runs the suite against every broken variant, printing which test caught each; true when
    /// each was caught by a test naming the rule it breaks.
    fn mutants(&self) -> anyhow::Result<bool>;
}

/// The conformance suite for ProvisioningRequest provisioning classes.
///
/// The cluster: --kubeconfig, --context or --options (with its `kubeconfig`) name it. Without
/// them, `conformance` tests the current context of the kubeconfig kubectl would use
/// ($KUBECONFIG, else ~/.kube/config) and says which; `cargo xtask conformance` instead runs the
/// fake autoscaler's reference classes on virtual time (--class then picks one of them).
///
/// Before any test on a cluster, it checks that the cluster answers, serves the ProvisioningRequest
/// CRD (and Kueue's, with --kueue), and that the credentials have the rights conformance/rbac.yaml
/// lists.
///
/// Exit status: 0 every profile succeeded; 1 the class got a verdict that is not success; 2 no
/// verdict (bad flags or options, cluster unreachable, CRDs or rights missing, interrupted).
#[derive(Parser, Debug)]
#[command(name = "conformance", version)]
struct Args {
    /// The options file (class, pod templates, features, timeouts, implementation).
    #[arg(long)]
    options: Option<PathBuf>,
    /// The kubeconfig of the cluster to test (overrides the options file).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context.
    #[arg(long)]
    context: Option<String>,
    /// The provisioning class to test (overrides className).
    #[arg(long = "class")]
    class_name: Option<String>,
    /// A request parameter, `KEY=VALUE` (repeatable; added to the file's).
    #[arg(long = "parameter", value_name = "KEY=VALUE")]
    parameters: Vec<String>,
    /// The pods that fit once: a YAML file `{count, template}` (replaces the file's).
    #[arg(long, value_name = "FILE")]
    fits: Option<PathBuf>,
    /// The pods that never fit: a YAML file `{count, template}` (replaces the file's).
    #[arg(long, value_name = "FILE")]
    does_not_fit: Option<PathBuf>,
    /// The implementation's organization, for the report.
    #[arg(long)]
    organization: Option<String>,
    /// The implementation's project name, for the report.
    #[arg(long)]
    project: Option<String>,
    /// The implementation's version, for the report.
    #[arg(long)]
    implementation_version: Option<String>,
    /// The implementation's URL, for the report.
    #[arg(long)]
    url: Option<String>,
    /// A contact for the implementation (repeatable; replaces the file's).
    #[arg(long = "contact")]
    contacts: Vec<String>,
    /// A feature the class claims (repeatable; replaces the file's list).
    #[arg(long = "feature", value_name = "NAME")]
    features: Vec<String>,
    /// Override a timeout, e.g. `provisioned=20m` (repeatable).
    #[arg(long = "timeout", value_name = "NAME=DURATION")]
    timeouts: Vec<String>,
    /// Run only this test (repeatable).
    #[arg(long = "run-test", value_name = "NAME")]
    run_tests: Vec<String>,
    /// Skip these tests (comma-separated).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    skip_tests: Vec<String>,
    /// Run the kueue profile too: Tollgate's controller in front of the class (it creates
    /// cluster-scoped Kueue objects, and needs Kueue's CRDs and no other Kueue controller).
    #[arg(long)]
    kueue: bool,
    /// Stop at the first failed test.
    #[arg(long)]
    fail_fast: bool,
    /// Run one test at a time (by default, tests that share no capacity run side by side).
    #[arg(long)]
    serial: bool,
    /// List the tests that would run, and why others would not, then exit.
    #[arg(long)]
    list: bool,
    /// Leave each test's namespace behind.
    #[arg(long)]
    no_cleanup: bool,
    /// Where to write report.yaml, junit.xml and diagnostics/.
    #[arg(long, default_value = "target/conformance")]
    report_dir: PathBuf,
    /// Embedded: play this broken variant of the fake autoscaler.
    #[arg(long, value_name = "NAME")]
    broken: Option<String>,
    /// Embedded: run against every broken variant and fail unless each is caught by a test that
    /// names the rule it breaks.
    #[arg(long)]
    mutants: bool,
}

/// What tracing shows without RUST_LOG: the suite's warnings, not the kube client's own logs (an
/// unreachable cluster would otherwise flood the terminal; the suite reports errors itself).
const QUIET_CLIENT: &str =
    "warn,kube=off,kube_client=off,kube_runtime=off,hyper=off,hyper_util=off,tower=off,rustls=off";

/// Parses the command line and runs, against a cluster or in `embedded` when given.
pub fn main(embedded: Option<&dyn EmbeddedWorld>) -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| QUIET_CLIENT.into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(Args::parse(), embedded) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Which cluster a run tests.
enum Target {
    /// Named by --kubeconfig, --context or --options.
    Given,
    /// The current context of the kubeconfig kubectl would use (the vendor's binary, no flags).
    AsKubectlWould,
}

fn run(args: Args, embedded: Option<&dyn EmbeddedWorld>) -> anyhow::Result<bool> {
    let given = args.kubeconfig.is_some() || args.options.is_some() || args.context.is_some();
    let target = match (given, embedded) {
        (false, Some(world)) => return run_embedded(&args, world),
        (true, _) => Target::Given,
        (false, None) => Target::AsKubectlWould,
    };
    if args.broken.is_some() || args.mutants {
        anyhow::bail!(
            "--broken and --mutants play the fake autoscaler's broken variants, which only the \
             embedded world has: `cargo xtask conformance` without --kubeconfig, --context or \
             --options"
        );
    }
    run_cluster(&args, target)
}

fn selection(args: &Args, run_id: String) -> Selection {
    Selection {
        run_tests: args.run_tests.clone(),
        skip_tests: args.skip_tests.clone(),
        fail_fast: args.fail_fast,
        no_cleanup: args.no_cleanup,
        serial: args.serial,
        run_id,
    }
}

/// The fake autoscaler's reference classes (or the one --class names) on virtual time. --class
/// never relabels them: a vendor's class is tested on a cluster.
fn run_embedded(args: &Args, world: &dyn EmbeddedWorld) -> anyhow::Result<bool> {
    let classes = match &args.class_name {
        None => ReferenceClass::ALL.to_vec(),
        Some(name) => match ReferenceClass::ALL.iter().find(|c| c.class_name() == name) {
            Some(class) => vec![*class],
            None => {
                let known: Vec<&str> = ReferenceClass::ALL.iter().map(|c| c.class_name()).collect();
                anyhow::bail!(
                    "`{name}` is not one of the reference classes ({}). A vendor's class is \
                     tested on a cluster: give --kubeconfig, --context or --options, or use the \
                     `conformance` binary",
                    known.join(", ")
                );
            }
        },
    };
    if args.mutants {
        return world.mutants();
    }
    // Embedded worlds are fresh: no other run to keep apart from.
    let selection = selection(args, "run".into());
    let mut passed = true;
    for class in classes {
        let mut options = class.options();
        apply_flags(&mut options, args)?;
        options.check().map_err(anyhow::Error::msg)?;
        if args.list {
            list(&options, &selection);
            continue;
        }
        let bar = progress_bar(&options, &selection);
        let results = world.run(&options, args.broken.as_deref(), &selection, &mut |r| {
            progress(&bar, r)
        });
        bar.finish_and_clear();
        let results = results?;
        let reproduce = reproduce(args, Mode::Embedded(class.class_name()));
        passed &= publish(&options, &results, "embedded", reproduce, &args.report_dir)?;
    }
    Ok(passed)
}

/// Against a real cluster, on real time, once the preflight says the suite can give a verdict.
fn run_cluster(args: &Args, target: Target) -> anyhow::Result<bool> {
    let mut options = match &args.options {
        Some(path) => Options::load(path)?,
        None => Options::default(),
    };
    apply_flags(&mut options, args)?;
    if args.kubeconfig.is_some() {
        options.kubeconfig = args.kubeconfig.clone();
    }
    // A name of its own per run, so that two runs on one cluster never collide.
    let run_id = format!("{:x}", jiff::Timestamp::now().as_millisecond() % 0xf_ffff);
    let selection = selection(args, run_id);
    if args.list {
        list(&options, &selection);
        return Ok(true);
    }
    let runtime = tokio::runtime::Runtime::new()?;
    let config = runtime.block_on(async {
        match target {
            Target::Given => {
                support::config(options.kubeconfig.as_deref(), options.context.as_deref()).await
            }
            Target::AsKubectlWould => {
                let (config, said) = preflight::as_kubectl_would().await?;
                eprintln!("{said}");
                Ok(config)
            }
        }
    })?;
    options.check().map_err(anyhow::Error::msg)?;
    let server = preflight::server_of(&config);
    let results = runtime.block_on(async {
        let client = kube::Client::try_from(config).context("connecting to the cluster")?;
        preflight::check(&client, &server, &options).await?;
        let bar = progress_bar(&options, &selection);
        let run = crate::runner::run(
            &client,
            &options,
            &selection,
            support::Clock::system(),
            |r| progress(&bar, r),
        );
        let results = tokio::select! {
            results = run => results,
            _ = tokio::signal::ctrl_c() => {
                bar.finish_and_clear();
                // Dropping the run stops its test; what it made carries this run's label.
                if !selection.no_cleanup {
                    eprintln!("interrupted: deleting what this run made");
                    cleanup_interrupted(&client, &options, &selection.run_id).await;
                }
                anyhow::bail!("interrupted")
            }
        };
        bar.finish_and_clear();
        Ok::<_, anyhow::Error>(results)
    })?;
    let reproduce = reproduce(args, Mode::Cluster);
    publish(&options, &results, "cluster", reproduce, &args.report_dir)
}

/// Where a run happened, for the command that reproduces it.
#[derive(Clone, Copy)]
enum Mode<'a> {
    Cluster,
    /// The embedded world, testing this reference class.
    Embedded(&'a str),
}

/// The command that reproduces a run, for report.yaml: the flags that changed what was tested,
/// with no local path in it (files by name, the kubeconfig as a placeholder).
fn reproduce(args: &Args, mode: Mode) -> String {
    let mut words: Vec<String> = vec![];
    let mut flag = |name: &str, value: &str| {
        words.push(name.to_string());
        words.push(shell_word(value));
    };
    let file_name = |path: &Path| {
        path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    };
    let class = match mode {
        Mode::Cluster => args.class_name.as_deref(),
        Mode::Embedded(class) => Some(class),
    };
    if let (Mode::Cluster, Some(path)) = (mode, &args.options) {
        flag("--options", &file_name(path));
    }
    if let Some(class) = class {
        flag("--class", class);
    }
    for p in &args.parameters {
        flag("--parameter", p);
    }
    if let Some(path) = &args.fits {
        flag("--fits", &file_name(path));
    }
    if let Some(path) = &args.does_not_fit {
        flag("--does-not-fit", &file_name(path));
    }
    for f in &args.features {
        flag("--feature", f);
    }
    for t in &args.timeouts {
        flag("--timeout", t);
    }
    for t in &args.run_tests {
        flag("--run-test", t);
    }
    if !args.skip_tests.is_empty() {
        flag("--skip-tests", &args.skip_tests.join(","));
    }
    if let (Mode::Embedded(_), Some(broken)) = (mode, &args.broken) {
        flag("--broken", broken);
    }
    for (set, name) in [(args.kueue, "--kueue"), (args.serial, "--serial")] {
        if set {
            words.push(name.into());
        }
    }
    let command = match mode {
        Mode::Cluster => "conformance --kubeconfig <your kubeconfig>",
        Mode::Embedded(_) => "cargo xtask conformance",
    };
    std::iter::once(command.to_string())
        .chain(words)
        .collect::<Vec<_>>()
        .join(" ")
}

/// `value` as one shell word: as is when plain, else single-quoted.
fn shell_word(value: &str) -> String {
    let plain = !value.is_empty()
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.,:=/@%+".contains(c));
    if plain {
        value.to_string()
    } else {
        format!("'{}'", value.replace('\'', r"'\''"))
    }
}

/// Deletes the namespaces and cluster-scoped Kueue objects this run made (they carry its label).
async fn cleanup_interrupted(client: &kube::Client, options: &Options, run_id: &str) {
    let selector = format!("{}={run_id}", crate::runner::RUN_LABEL);
    crate::suite::release_labelled(client, &selector).await;
    let api: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client.clone());
    let lp = kube::api::ListParams::default().labels(&selector);
    if let Ok(list) = api.list(&lp).await {
        for ns in list.items {
            if let Some(name) = ns.metadata.name {
                let _ = crate::runner::delete_namespace(client, &name, options).await;
            }
        }
    }
}

fn apply_flags(options: &mut Options, args: &Args) -> anyhow::Result<()> {
    if let Some(class) = &args.class_name {
        options.class_name = class.clone();
    }
    if let Some(context) = &args.context {
        options.context = Some(context.clone());
    }
    options.kueue |= args.kueue;
    for p in &args.parameters {
        let (k, v) = p
            .split_once('=')
            .with_context(|| format!("--parameter {p}: write KEY=VALUE"))?;
        options.parameters.insert(k.to_string(), v.to_string());
    }
    let pods = |path: &Path| -> anyhow::Result<crate::options::Pods> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        serde_yaml::from_str(&text).with_context(|| format!("{}", path.display()))
    };
    if let Some(path) = &args.fits {
        options.pod_templates.fits = pods(path)?;
    }
    if let Some(path) = &args.does_not_fit {
        options.pod_templates.does_not_fit = pods(path)?;
    }
    let implementation = &mut options.implementation;
    for (flag, slot) in [
        (&args.organization, &mut implementation.organization),
        (&args.project, &mut implementation.project),
        (&args.implementation_version, &mut implementation.version),
        (&args.url, &mut implementation.url),
    ] {
        if let Some(value) = flag {
            *slot = value.clone();
        }
    }
    if !args.contacts.is_empty() {
        implementation.contact = args.contacts.clone();
    }
    if !args.features.is_empty() {
        options.features = args
            .features
            .iter()
            .map(|f| Feature::from_name(f))
            .collect::<Result<_, _>>()
            .map_err(anyhow::Error::msg)?;
    }
    for t in &args.timeouts {
        let (name, value) = t
            .split_once('=')
            .with_context(|| format!("--timeout {t}: write NAME=DURATION, e.g. provisioned=20m"))?;
        let value =
            api::config::GoDuration::parse(value).with_context(|| format!("--timeout {t}"))?;
        options
            .timeouts
            .set(name, value)
            .map_err(|e| anyhow::anyhow!("--timeout {t}: {e}"))?;
    }
    Ok(())
}

fn list(options: &Options, selection: &Selection) {
    println!("{}:", options.class_name);
    for (test, skip) in crate::runner::plan(options, selection) {
        let what = match skip {
            None => "would run".to_string(),
            Some(Outcome::Skipped { reason, .. }) => format!("skipped: {reason}"),
            Some(_) => String::new(),
        };
        println!(
            "  {:<34} {:<12} {what}\n      {}",
            test.name,
            test.profile.name(),
            test.description
        );
    }
}

/// A progress bar over the tests of one class (hidden when stderr is not a terminal), with a line
/// per finished test.
fn progress_bar(options: &Options, selection: &Selection) -> indicatif::ProgressBar {
    let total = crate::runner::plan(options, selection).len() as u64;
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_prefix(options.class_name.clone());
    bar
}

fn progress(bar: &indicatif::ProgressBar, result: &TestResult) {
    let mark = match &result.outcome {
        Outcome::Passed => "ok  ",
        Outcome::Failed(_) => "FAIL",
        Outcome::Skipped { .. } => "skip",
    };
    bar.println(format!(
        "{mark} {} ({})",
        result.name,
        result.profile.name()
    ));
    bar.set_message(result.name);
    bar.inc(1);
}

/// Writes report.yaml, junit.xml and the diagnostics, and prints the summary. True when every
/// profile succeeded.
fn publish(
    options: &Options,
    results: &[TestResult],
    mode: &str,
    reproduce: String,
    dir: &Path,
) -> anyhow::Result<bool> {
    let date = jiff::Timestamp::now().strftime("%Y-%m-%d").to_string();
    let report = ConformanceReport::new(options, results, date, mode, reproduce);
    let dir = dir.join(options.class_name.replace('/', "_"));
    std::fs::create_dir_all(dir.join("diagnostics"))
        .with_context(|| format!("creating {}", dir.display()))?;
    std::fs::write(dir.join("report.yaml"), report.to_yaml())?;
    std::fs::write(
        dir.join("junit.xml"),
        report::junit(results, &options.class_name),
    )?;
    for r in results {
        if let Some(d) = &r.diagnostics {
            std::fs::write(dir.join("diagnostics").join(format!("{}.yaml", r.name)), d)?;
        }
    }
    println!("{}", report::summary(&report, results));
    println!("report: {}", dir.join("report.yaml").display());
    Ok(report.passed())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &[&str]) -> Args {
        Args::try_parse_from(std::iter::once("conformance").chain(line.iter().copied()))
            .expect("flags parse")
    }

    #[test]
    fn reproduce_names_files_by_name_and_keeps_the_flags_that_changed_the_options() {
        let args = args(&[
            "--options",
            "/home/vendor/secret/options.yaml",
            "--kubeconfig",
            "/home/vendor/.kube/prod",
            "--class",
            "queued.example.com",
            "--parameter",
            "region=us central",
            "--fits",
            "/tmp/x/fits.yaml",
            "--does-not-fit",
            "/tmp/x/huge.yaml",
            "--feature",
            "BookingExpiry",
            "--timeout",
            "provisioned=20m",
            "--run-test",
            "request-answered",
            "--skip-tests",
            "a,b",
            "--kueue",
            "--serial",
            "--organization",
            "Example",
        ]);
        assert_eq!(
            reproduce(&args, Mode::Cluster),
            "conformance --kubeconfig <your kubeconfig> --options options.yaml --class \
             queued.example.com --parameter 'region=us central' --fits fits.yaml --does-not-fit \
             huge.yaml --feature BookingExpiry --timeout provisioned=20m --run-test \
             request-answered --skip-tests a,b --kueue --serial"
        );
    }

    #[test]
    fn reproduce_of_an_embedded_run_names_its_reference_class() {
        let args = args(&["--broken", "snake-case-reasons"]);
        assert_eq!(
            reproduce(&args, Mode::Embedded("check-capacity.autoscaling.x-k8s.io")),
            "cargo xtask conformance --class check-capacity.autoscaling.x-k8s.io --broken \
             snake-case-reasons"
        );
    }

    #[test]
    fn serial_reaches_the_selection() {
        assert!(selection(&args(&["--serial"]), "r".into()).serial);
        assert!(!selection(&args(&[]), "r".into()).serial);
    }
}
