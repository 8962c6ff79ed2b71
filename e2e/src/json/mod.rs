//! Pure JSON helpers for scenarios and traces: field paths, partial matching
//! of cluster objects against expected YAML, and field-level diffs between versions.

pub mod diff;
pub mod matcher;
pub mod path;

pub use diff::{FieldChange, diff};
pub use matcher::{ListKeys, Mismatch, partial_match, project, render_diff};
pub use path::Path;
