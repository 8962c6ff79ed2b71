//! `kueue.x-k8s.io/v1beta2`: the subset of Kueue's API that Tollgate implements.

mod admissioncheck;
mod clusterqueue;
mod localqueue;
mod multikueue;
mod optional_spec;
mod provisioning;
mod resourceflavor;
mod workload;

pub use admissioncheck::*;
pub use clusterqueue::*;
pub use localqueue::*;
pub use multikueue::*;
pub use optional_spec::KINDS as SPEC_OPTIONAL_KINDS;
pub use provisioning::*;
pub use resourceflavor::*;
pub use workload::*;
