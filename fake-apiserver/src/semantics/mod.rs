//! Pure API semantics, testable without HTTP: names, selectors, patches, metadata validation,
//! event version conversion.

pub mod access_review;
pub mod admission;
pub mod apply;
pub mod event_versions;
pub mod go_decode;
pub mod meta;
pub mod names;
pub mod patch;
pub mod pod_spec;
pub mod rbac;
pub mod schema;
pub mod selectors;
pub mod strategic;
pub mod validation;
pub mod yaml_depth;
