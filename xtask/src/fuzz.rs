//! `cargo xtask fuzz`: every `cargo fuzz` target of fuzz/ for a while each, then a summary.
//!
//! The targets and their seed corpora are in fuzz/ (fuzz/corpus/<target>/, checked in). A run
//! reads the seeds and writes what it discovers to fuzz/target/corpus/<target>/ (not checked
//! in), so the repository's corpora stay small; crashes go to fuzz/artifacts/<target>/.
//! cargo-fuzz and the nightly toolchain it needs are installed first when missing.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command as Process, Stdio};

use anyhow::{Context, bail};

/// What to run.
pub struct Options {
    pub seconds: u64,
    pub filter: Option<String>,
    pub list: bool,
}

/// How one target's run went, read from libFuzzer's output.
#[derive(Debug, Default, PartialEq)]
pub struct Outcome {
    pub executions: Option<u64>,
    pub new_entries: Option<u64>,
    /// The input that made it fail, when it failed.
    pub crash: Option<String>,
    pub failed: bool,
}

pub fn run(root: &Path, options: &Options) -> anyhow::Result<()> {
    let fuzz_dir = root.join("fuzz");
    let manifest =
        std::fs::read_to_string(fuzz_dir.join("Cargo.toml")).context("reading fuzz/Cargo.toml")?;
    let targets = select(&targets(&manifest), options.filter.as_deref())?;
    if options.list {
        for t in &targets {
            println!("{t}");
        }
        return Ok(());
    }
    ensure_tools()?;
    crate::run(build_command(&fuzz_dir))?;
    let mut outcomes = Vec::new();
    for target in &targets {
        eprintln!("fuzzing {target} for {} s", options.seconds);
        let scratch = fuzz_dir.join("target").join("corpus").join(target);
        std::fs::create_dir_all(&scratch)
            .with_context(|| format!("creating {}", scratch.display()))?;
        let log_path = fuzz_dir.join("target").join(format!("{target}.log"));
        let cmd = run_command(&fuzz_dir, target, options.seconds, &scratch);
        outcomes.push((target.clone(), run_logged(cmd, &log_path)?));
    }
    println!("\n{}", summary(&outcomes, options.seconds));
    let failed: Vec<_> = outcomes.iter().filter(|(_, o)| o.failed).collect();
    if !failed.is_empty() {
        bail!(
            "{} target(s) failed; reproduce with `cargo +nightly fuzz run <target> -s none --debug-assertions <input>` in fuzz/",
            failed.len()
        );
    }
    Ok(())
}

/// The target names of fuzz/Cargo.toml: each `[[bin]]`'s `name`.
pub fn targets(manifest: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut in_bin = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_bin = line == "[[bin]]";
        } else if in_bin && let Some(value) = line.strip_prefix("name") {
            let value = value.trim_start().trim_start_matches('=').trim();
            names.push(value.trim_matches('"').to_string());
        }
    }
    names
}

/// The targets whose name contains `filter`; none at all is an error that lists them.
pub fn select(targets: &[String], filter: Option<&str>) -> anyhow::Result<Vec<String>> {
    let chosen: Vec<String> = targets
        .iter()
        .filter(|t| filter.is_none_or(|f| t.contains(f)))
        .cloned()
        .collect();
    if chosen.is_empty() {
        bail!(
            "no fuzz target's name contains {:?}; the targets: {}",
            filter.unwrap_or(""),
            targets.join(", ")
        );
    }
    Ok(chosen)
}

/// The build options every command shares. No sanitizer: the code under test is safe Rust
/// (`unsafe_code = "forbid"`), so AddressSanitizer would find nothing and halve the speed; debug
/// assertions make integer overflow a finding, as it is in tests.
const BUILD_FLAGS: [&str; 3] = ["--sanitizer", "none", "--debug-assertions"];

pub fn build_command(fuzz_dir: &Path) -> Process {
    let mut cmd = crate::subcargo::command("cargo");
    cmd.current_dir(fuzz_dir.parent().unwrap_or(fuzz_dir));
    cmd.args(["+nightly", "fuzz", "build"]).args(BUILD_FLAGS);
    cmd
}

/// One target for `seconds`: new inputs into `scratch`, the checked-in seeds read as well.
pub fn run_command(fuzz_dir: &Path, target: &str, seconds: u64, scratch: &Path) -> Process {
    let mut cmd = crate::subcargo::command("cargo");
    cmd.current_dir(fuzz_dir.parent().unwrap_or(fuzz_dir));
    cmd.args(["+nightly", "fuzz", "run"]).args(BUILD_FLAGS);
    cmd.arg(target);
    // libFuzzer writes new inputs to the first corpus directory only.
    cmd.arg(scratch);
    cmd.arg(fuzz_dir.join("corpus").join(target));
    cmd.arg("--");
    cmd.arg(format!("-max_total_time={seconds}"));
    // One input taking longer than this is a hang.
    cmd.arg("-timeout=10");
    cmd.arg("-rss_limit_mb=4096");
    cmd.arg("-print_final_stats=1");
    let dict = fuzz_dir.join("dicts").join(format!("{target}.dict"));
    if dict.exists() {
        cmd.arg(format!("-dict={}", dict.display()));
    }
    cmd
}

/// Run one target, its output in a log file; prints the lines that say how it goes.
fn run_logged(mut cmd: Process, log_path: &Path) -> anyhow::Result<Outcome> {
    let mut log = std::fs::File::create(log_path)
        .with_context(|| format!("creating {}", log_path.display()))?;
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {cmd:?}"))?;
    let mut output = String::new();
    if let Some(stderr) = child.stderr.take() {
        for line in BufReader::new(stderr).lines() {
            let line = line.context("reading the fuzzer's output")?;
            writeln!(log, "{line}")?;
            if worth_showing(&line) {
                eprintln!("  {line}");
            }
            output.push_str(&line);
            output.push('\n');
        }
    }
    let status = child.wait().context("waiting for the fuzzer")?;
    let mut outcome = outcome(&output);
    outcome.failed |= !status.success();
    if outcome.failed {
        eprintln!("  the whole output: {}", log_path.display());
    }
    Ok(outcome)
}

fn worth_showing(line: &str) -> bool {
    line.starts_with("Done ")
        || line.contains("panicked at")
        || line.contains("ERROR:")
        || line.contains("Test unit written to")
        || line.starts_with("error")
}

/// What libFuzzer's output says about a run.
pub fn outcome(output: &str) -> Outcome {
    let stat = |name: &str| {
        output.lines().find_map(|l| {
            l.strip_prefix(name)
                .and_then(|rest| rest.trim_start_matches(':').trim().parse().ok())
        })
    };
    let crash = output.lines().find_map(|l| {
        l.split_once("Test unit written to ")
            .map(|(_, path)| path.trim().to_string())
    });
    Outcome {
        executions: stat("stat::number_of_executed_units"),
        new_entries: stat("stat::new_units_added"),
        failed: crash.is_some() || output.contains("ERROR: libFuzzer"),
        crash,
    }
}

/// The summary table, in Markdown.
pub fn summary(outcomes: &[(String, Outcome)], seconds: u64) -> String {
    let shown = |n: Option<u64>| n.map_or("?".to_string(), |n| n.to_string());
    let mut table = String::from(
        "| target | seconds | executions | new corpus entries | result |\n| --- | --- | --- | --- | --- |\n",
    );
    for (target, o) in outcomes {
        let result = match (&o.crash, o.failed) {
            (Some(input), _) => format!("FAILED: {input}"),
            (None, true) => "FAILED (see its log in fuzz/target/)".into(),
            (None, false) => "ok".into(),
        };
        table.push_str(&format!(
            "| {target} | {seconds} | {} | {} | {result} |\n",
            shown(o.executions),
            shown(o.new_entries)
        ));
    }
    table
}

/// Install the nightly toolchain and cargo-fuzz when they are missing, saying so.
fn ensure_tools() -> anyhow::Result<()> {
    let nightly = Process::new("rustup")
        .args(["run", "nightly", "rustc", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !nightly {
        eprintln!(
            "cargo fuzz needs the nightly toolchain, which is missing: installing it with rustup"
        );
        let mut cmd = Process::new("rustup");
        cmd.args(["toolchain", "install", "nightly", "--profile", "minimal"]);
        crate::run(cmd)?;
    }
    if !has_cargo_fuzz() {
        eprintln!("cargo-fuzz is missing: installing it with `cargo install cargo-fuzz --locked`");
        let mut cmd = crate::subcargo::command("cargo");
        cmd.args(["install", "cargo-fuzz", "--locked"]);
        crate::run(cmd)?;
    }
    Ok(())
}

fn has_cargo_fuzz() -> bool {
    crate::subcargo::command("cargo")
        .args(["+nightly", "fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The repository's root, from xtask's own manifest directory.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args_of(cmd: &Process) -> Vec<String> {
        cmd.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn the_targets_are_the_bins_of_the_fuzz_manifest() {
        let manifest = "[package]\nname = \"tollgate-fuzz\"\n\n[[bin]]\nname = \"requests\"\npath = \"x.rs\"\n\n[dependencies]\nname = \"not-a-target\"\n\n[[bin]]\nname=\"selectors\"\n";
        assert_eq!(targets(manifest), ["requests", "selectors"]);
    }

    #[test]
    fn the_checked_in_targets_each_have_a_source_and_seeds() {
        let fuzz = root().join("fuzz");
        let manifest = std::fs::read_to_string(fuzz.join("Cargo.toml")).expect("fuzz/Cargo.toml");
        let names = targets(&manifest);
        assert!(names.len() >= 9, "{names:?}");
        for name in names {
            let source = fuzz.join("fuzz_targets").join(format!("{name}.rs"));
            assert!(source.exists(), "{} is missing", source.display());
            let seeds = std::fs::read_dir(fuzz.join("corpus").join(&name))
                .map(Iterator::count)
                .unwrap_or(0);
            assert!(seeds > 0, "{name} has no seeds in fuzz/corpus/{name}/");
        }
    }

    #[test]
    fn a_filter_that_matches_nothing_lists_the_targets() {
        let all = vec!["requests".to_string(), "json_patch".to_string()];
        assert_eq!(select(&all, Some("patch")).expect("one"), ["json_patch"]);
        assert_eq!(select(&all, None).expect("all"), all);
        let error = select(&all, Some("nothing")).expect_err("no target");
        assert!(
            error.to_string().contains("requests, json_patch"),
            "{error}"
        );
    }

    #[test]
    fn a_run_writes_new_inputs_apart_from_the_seeds_for_the_time_asked() {
        let fuzz = Path::new("/repo/fuzz");
        let cmd = run_command(fuzz, "requests", 90, &fuzz.join("target/corpus/requests"));
        let args = args_of(&cmd);
        let at = |a: &str| args.iter().position(|x| x == a).expect(a);
        assert_eq!(&args[..3], ["+nightly", "fuzz", "run"]);
        assert!(at("requests") < at("/repo/fuzz/target/corpus/requests"));
        assert!(at("/repo/fuzz/target/corpus/requests") < at("/repo/fuzz/corpus/requests"));
        assert!(at("--") < at("-max_total_time=90"));
        assert!(args.contains(&"-timeout=10".to_string()));
        assert_eq!(cmd.get_current_dir(), Some(Path::new("/repo")));
        // The build and the run agree on the build options (else the run rebuilds).
        let build = args_of(&build_command(fuzz));
        for flag in BUILD_FLAGS {
            assert!(build.contains(&flag.to_string()) && args.contains(&flag.to_string()));
        }
    }

    #[test]
    fn libfuzzer_output_gives_executions_new_entries_and_crashes() {
        let clean = "#2 INITED\nDone 123456 runs in 61 second(s)\nstat::number_of_executed_units: 123456\nstat::average_exec_per_sec:     2023\nstat::new_units_added:          57\n";
        assert_eq!(
            outcome(clean),
            Outcome {
                executions: Some(123456),
                new_entries: Some(57),
                crash: None,
                failed: false
            }
        );
        let crashed = "thread '<unnamed>' panicked at src/x.rs:1:1\n==12== ERROR: libFuzzer: deadly signal\nartifact_prefix='/repo/fuzz/artifacts/requests/'; Test unit written to /repo/fuzz/artifacts/requests/crash-abc\nstat::number_of_executed_units: 99\n";
        let o = outcome(crashed);
        assert!(o.failed);
        assert_eq!(
            o.crash.as_deref(),
            Some("/repo/fuzz/artifacts/requests/crash-abc")
        );
        assert_eq!(o.executions, Some(99));
        let table = summary(&[("requests".into(), o)], 60);
        assert!(
            table.contains(
                "| requests | 60 | 99 | ? | FAILED: /repo/fuzz/artifacts/requests/crash-abc |"
            ),
            "{table}"
        );
    }
}
