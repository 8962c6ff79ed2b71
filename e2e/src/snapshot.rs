//! Where the scenarios and their snapshots live, and comparing a trace with its snapshot.

use std::path::{Path, PathBuf};

use crate::scenario::Scenario;
use crate::trace::Trace;

/// `e2e/scenarios`: one scenario per `*.yaml` file.
pub fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

/// The snapshots of the scenarios in `dir`: `dir/snapshots/<scenario name>.snap`.
pub fn snapshots_dir(dir: &Path) -> PathBuf {
    dir.join("snapshots")
}

/// The scenario files in `dir`, sorted, whose file name contains `filter` (all without one).
pub fn scenario_files(dir: &Path, filter: Option<&str>) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| {
            filter.is_none_or(|f| {
                p.file_stem()
                    .is_some_and(|s| s.to_string_lossy().contains(f))
            })
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Compare the trace with the scenario's snapshot in `snapshots` through `insta` (which panics
/// with a diff when they differ, and writes or updates the snapshot as `INSTA_UPDATE` says).
pub fn assert_trace(snapshots: &Path, scenario: &Scenario, trace: &Trace) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(scenario.description.trim());
    settings.bind(|| insta::assert_yaml_snapshot!(scenario.name.as_str(), trace));
}
