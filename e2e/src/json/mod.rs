//! Pure JSON helpers for scenarios and traces: field paths, partial matching
//! of cluster objects against expected YAML, and field-level diffs between versions.

pub mod diff;
pub mod matcher;
pub mod path;

pub use diff::{FieldChange, diff};
pub use matcher::{ListKeys, Mismatch, partial_match, project, render_diff};
pub use path::Path;

/// Whether a string is an instant as Kubernetes writes one (RFC 3339, `2026-01-01T00:10:00Z`).
pub fn is_instant(s: &str) -> bool {
    s.len() >= 20 && s.as_bytes()[10] == b'T' && s.parse::<jiff::Timestamp>().is_ok()
}
