//! The dependency rules of ARCHITECTURE.md ("Dependency rules"), checked on every workspace
//! member's manifest as cargo reads it (`cargo metadata`): normal, dev and build dependencies
//! each against their own rule. A new member, or a new edge between Tollgate crates, fails here
//! until the rules say where it belongs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Which Tollgate crates each member's `[dependencies]` may name. Lower crates stay lower: a crate
/// never depends on one that tests or drives it.
const NORMAL: &[(&str, &[&str])] = &[
    // The foundations: no Tollgate crate, and not each other.
    ("api", &[]),
    ("support", &[]),
    // The worlds: the fake answers like kube-apiserver and the reference control plane is
    // kube-apiserver; neither knows what runs on it.
    ("fake-apiserver", &[]),
    ("control-plane", &[]),
    ("controller", &["api", "support"]),
    // The reference autoscaler is judged by the conformance suite, so it shares no logic with
    // Kueue's side (the controller) beyond the API types and the support library.
    ("fake-autoscaler", &["api", "support"]),
    // Vendors run this one: Kueue's side (the controller) in front of their class, and no test
    // machinery (no scenario engine, no fake autoscaler to judge by).
    ("conformance", &["api", "support", "controller"]),
    // The suite against the reference classes on virtual time: the fake autoscaler serves them,
    // the scenario engine's TestEnv hosts them, and the fake API server's faults make the
    // flaky-cluster run.
    (
        "conformance-embedded",
        &[
            "api",
            "support",
            "controller",
            "conformance",
            "fake-autoscaler",
            "e2e",
            "fake-apiserver",
        ],
    ),
    (
        "e2e",
        &[
            "api",
            "support",
            "controller",
            "fake-apiserver",
            "fake-autoscaler",
            "control-plane",
        ],
    ),
    ("fidelity", &["fake-apiserver", "control-plane"]),
];

/// What tests, examples and benchmarks (`[dev-dependencies]`) may name besides a member's own
/// dependencies: the worlds to run against.
const DEV_EXTRA: &[&str] = &["fake-apiserver", "control-plane"];

/// The top: every Tollgate crate is its to use.
const ANY: &[&str] = &["xtask"];

/// One edge that breaks the rules.
#[derive(Debug, PartialEq, Eq)]
struct Broken {
    krate: String,
    table: &'static str,
    dependency: String,
    allowed: Vec<String>,
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let allowed = if self.allowed.is_empty() {
            "no Tollgate crate".to_string()
        } else {
            format!("only {}", self.allowed.join(", "))
        };
        write!(
            f,
            "{} {} -> {}: {} may name {allowed} there",
            self.krate, self.table, self.dependency, self.krate
        )
    }
}

/// Each member's Tollgate dependencies, by table: `[dependencies]`, `[dev-dependencies]`,
/// `[build-dependencies]` (target-specific tables count as their kind).
type Edges = BTreeMap<String, BTreeMap<&'static str, BTreeSet<String>>>;

fn edges(metadata: &Value) -> Edges {
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let members: BTreeSet<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str().map(String::from))
        .collect();
    let mut edges = Edges::new();
    for package in &packages {
        let name = package["name"].as_str().unwrap_or_default().to_string();
        let tables = edges.entry(name).or_default();
        for dep in package["dependencies"].as_array().into_iter().flatten() {
            let dep_name = dep["name"].as_str().unwrap_or_default();
            if dep["path"].is_null() || !members.contains(dep_name) {
                continue;
            }
            let table = match dep["kind"].as_str() {
                Some("dev") => "[dev-dependencies]",
                Some("build") => "[build-dependencies]",
                _ => "[dependencies]",
            };
            tables
                .entry(table)
                .or_default()
                .insert(dep_name.to_string());
        }
    }
    edges
}

/// The Tollgate crates `krate` may name in `table`, or None when it may name any.
fn allowed(krate: &str, table: &str) -> Option<Vec<String>> {
    if ANY.contains(&krate) {
        return None;
    }
    let normal: Vec<String> = NORMAL
        .iter()
        .find(|(k, _)| *k == krate)
        .map(|(_, deps)| deps.iter().map(|d| d.to_string()).collect())
        .unwrap_or_default();
    Some(match table {
        "[dependencies]" => normal,
        "[dev-dependencies]" => {
            let mut dev = normal;
            dev.extend(
                DEV_EXTRA
                    .iter()
                    .filter(|d| **d != krate)
                    .map(|d| d.to_string()),
            );
            dev.sort();
            dev.dedup();
            dev
        }
        // Build scripts generate; none needs a Tollgate crate.
        _ => vec![],
    })
}

fn broken_edges(edges: &Edges) -> Vec<Broken> {
    let mut broken = vec![];
    for (krate, tables) in edges {
        for (table, deps) in tables {
            let Some(allowed) = allowed(krate, table) else {
                continue;
            };
            for dep in deps.iter().filter(|d| !allowed.contains(d)) {
                broken.push(Broken {
                    krate: krate.clone(),
                    table,
                    dependency: dep.clone(),
                    allowed: allowed.clone(),
                });
            }
        }
    }
    broken
}

fn workspace_metadata() -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(&root)
        .output()
        .expect("running cargo metadata");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON")
}

#[test]
fn every_member_has_a_rule() {
    let ruled: BTreeSet<&str> = NORMAL
        .iter()
        .map(|(k, _)| *k)
        .chain(ANY.iter().copied())
        .collect();
    let unruled: Vec<String> = edges(&workspace_metadata())
        .into_keys()
        .filter(|k| !ruled.contains(k.as_str()))
        .collect();
    assert!(
        unruled.is_empty(),
        "workspace members without a dependency rule (add them to ARCHITECTURE.md and this \
         test): {}",
        unruled.join(", ")
    );
}

#[test]
fn every_dependency_between_tollgate_crates_follows_the_rules() {
    let broken = broken_edges(&edges(&workspace_metadata()));
    assert!(
        broken.is_empty(),
        "dependencies that break ARCHITECTURE.md's dependency rules:\n{}",
        broken
            .iter()
            .map(|b| format!("  {b}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The `conformance` binary is what vendors build and run: it must not link the scenario engine's
/// snapshot machinery or tokio's paused clock.
#[test]
fn the_conformance_binary_links_no_test_machinery() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = Command::new(env!("CARGO"))
        .args([
            "tree",
            "--offline",
            "-p",
            "conformance",
            "-e",
            "normal,features",
        ])
        .args(["--target", "all", "--prefix", "none"])
        .current_dir(&root)
        .output()
        .expect("running cargo tree");
    assert!(
        output.status.success(),
        "cargo tree: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let tree = String::from_utf8_lossy(&output.stdout);
    let linked: BTreeSet<&str> = tree
        .lines()
        .filter(|line| {
            line.starts_with("insta ")
                || line.starts_with("similar ")
                || line.starts_with("e2e ")
                || line.starts_with("tokio feature \"test-util\"")
        })
        .collect();
    assert!(
        linked.is_empty(),
        "the conformance binary links test machinery: {linked:?}"
    );
}

/// The checker itself, on a made-up workspace: it names the crate, the table and the edge.
#[test]
fn a_broken_edge_is_named_with_its_table_and_what_is_allowed() {
    let metadata = serde_json::json!({"packages": [
        {"name": "api", "dependencies": [
            {"name": "support", "kind": null, "path": "/w/support"},
            {"name": "serde", "kind": null},
        ]},
        {"name": "support", "dependencies": []},
        {"name": "controller", "dependencies": [
            {"name": "api", "kind": null, "path": "/w/api"},
            {"name": "fake-apiserver", "kind": "dev", "path": "/w/fake-apiserver"},
            {"name": "e2e", "kind": "dev", "path": "/w/e2e"},
            {"name": "api", "kind": "build", "path": "/w/api"},
        ]},
        {"name": "fake-apiserver", "dependencies": []},
        {"name": "e2e", "dependencies": [{"name": "controller", "kind": null, "path": "/w/controller"}]},
        {"name": "xtask", "dependencies": [{"name": "e2e", "kind": null, "path": "/w/e2e"}]},
    ]});
    let broken: Vec<String> = broken_edges(&edges(&metadata))
        .iter()
        .map(|b| b.to_string())
        .collect();
    assert_eq!(
        broken,
        [
            "api [dependencies] -> support: api may name no Tollgate crate there",
            "controller [build-dependencies] -> api: controller may name no Tollgate crate there",
            "controller [dev-dependencies] -> e2e: controller may name only api, control-plane, \
             fake-apiserver, support there",
        ]
    );
}
