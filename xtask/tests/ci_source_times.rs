//! `.ci/source-times`: after a recorded build, a clean clone's unchanged files look old to cargo,
//! so a warm target directory is reused, and a changed file does not, so what depends on it is
//! built again.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const LONG_PAST: Duration = Duration::from_secs(946_684_800);

fn run(dir: &Path, program: &str, args: &[&str], target: &Path) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .unwrap_or_else(|e| panic!("running {program}: {e}"));
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn modified(path: &Path) -> Duration {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .expect("mtime")
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
}

/// A repository holding the script, two sources (one with a space in its name) and a commit.
fn repository(root: &Path) -> std::path::PathBuf {
    let repo = root.join("repo");
    fs::create_dir_all(repo.join(".ci")).expect("mkdir");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../.ci/source-times");
    fs::copy(&script, repo.join(".ci/source-times")).expect("copying the script");
    fs::write(repo.join("lib.rs"), "pub fn a() {}\n").expect("write");
    fs::write(repo.join("other file.rs"), "pub fn b() {}\n").expect("write");
    let target = root.join("target");
    run(&repo, "git", &["init", "--quiet"], &target);
    run(&repo, "git", &["add", "--all"], &target);
    run(&repo, "git", &["commit", "--quiet", "-m", "one"], &target);
    repo
}

#[test]
fn only_files_unchanged_since_the_recorded_build_are_made_old() {
    let root = tempfile::tempdir().unwrap();
    let repo = repository(root.path());
    let target = root.path().join("target");
    let script = "./.ci/source-times";

    // Nothing recorded yet: nothing is touched, and the script says why.
    let said = run(&repo, script, &["age"], &target);
    assert!(said.contains("every source counts as changed"), "{said}");
    assert!(modified(&repo.join("lib.rs")) > LONG_PAST);

    run(&repo, script, &["record"], &target);
    assert!(target.join("ci-built-sources").is_file());

    // The next commit changes one file; a fresh clone would give both the clone's time.
    fs::write(repo.join("lib.rs"), "pub fn a() { todo!() }\n").unwrap();
    run(
        &repo,
        "git",
        &["commit", "--quiet", "--all", "-m", "two"],
        &target,
    );
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();

    let said = run(&repo, script, &["age"], &target);
    assert!(said.contains("2 of 3 tracked files"), "{said}");
    assert_eq!(modified(&repo.join("other file.rs")), LONG_PAST);
    assert_eq!(modified(&repo.join(".ci/source-times")), LONG_PAST);
    assert!(modified(&repo.join("lib.rs")) >= now - Duration::from_secs(60));
}

#[test]
fn a_record_belongs_to_its_target_directory() {
    let root = tempfile::tempdir().unwrap();
    let repo = repository(root.path());
    run(
        &repo,
        "./.ci/source-times",
        &["record"],
        &root.path().join("target"),
    );

    // Another target directory (or the same one emptied) has no record: nothing is made old.
    let elsewhere = root.path().join("another-target");
    let said = run(&repo, "./.ci/source-times", &["age"], &elsewhere);
    assert!(said.contains("every source counts as changed"), "{said}");
    assert!(modified(&repo.join("other file.rs")) > LONG_PAST);
}

/// The workspace-hack crate's build script, in a package of its own: once `age` has made its
/// unchanged sources old, cargo still finds the build that the record speaks for up to date.
/// (Without a rerun-if line cargo compared the package's newest modification time for equality,
/// so the first warm run after a cold one rebuilt workspace-hack and every crate above it.)
#[test]
fn a_build_script_is_not_run_again_for_sources_made_old() {
    let root = tempfile::tempdir().unwrap();
    let repo = repository(root.path());
    let target = root.path().join("target");
    let build_script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../workspace-hack/build.rs");
    fs::copy(&build_script, repo.join("build.rs")).expect("copying the build script");
    fs::write(
        repo.join("Cargo.toml"),
        "[package]\nname = \"scratch\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         [lib]\npath = \"lib.rs\"\n[workspace]\n",
    )
    .unwrap();
    run(&repo, "git", &["add", "--all"], &target);
    run(&repo, "git", &["commit", "--quiet", "-m", "crate"], &target);
    let cargo = env!("CARGO");
    run(&repo, cargo, &["build", "--quiet", "--offline"], &target);
    run(&repo, "./.ci/source-times", &["record"], &target);

    // A fresh clone: every file newer than anything built, until `age`.
    let later = SystemTime::now() + Duration::from_secs(5);
    for file in ["build.rs", "Cargo.toml", "lib.rs", "other file.rs"] {
        fs::File::options()
            .write(true)
            .open(repo.join(file))
            .and_then(|f| f.set_modified(later))
            .expect("setting a modification time");
    }
    run(&repo, "./.ci/source-times", &["age"], &target);
    let output = Command::new(cargo)
        .args(["build", "--offline", "--verbose"])
        .current_dir(&repo)
        .env("CARGO_TARGET_DIR", &target)
        .output()
        .expect("running cargo");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(said.contains("Fresh scratch"), "{said}");
    assert!(!said.contains("Compiling"), "{said}");
}
