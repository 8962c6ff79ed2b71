//! Tollgate's scenario engine.
//!
//! - [`TestEnv`]: a fake API server with the project's CRDs and the components a test asks for,
//!   in this process, on virtual time; for MultiKueue, worker clusters too, on the same clock.
//! - [`Cluster`]: what the engine needs of a cluster; [`EmbeddedCluster`] is the fake.
//! - [`scenario`]: YAML scenario files, checked before they run, then run step by step.
//! - [`perf`]: Kueue's scheduler performance benchmark, run on virtual time.
//! - [`trace`]: the deterministic record of what changed, compared as an `insta` snapshot.

pub mod backend;
pub mod chaos;
pub mod cluster;
pub mod env;
pub mod harness;
pub mod invariant;
pub mod json;
pub mod kind;
pub mod perf;
pub mod remote;
pub mod scenario;
pub mod snapshot;
pub mod trace;
pub mod world;

pub use cluster::{Cluster, EmbeddedCluster};
pub use env::{ClusterEnv, Component, ComponentContext, EnvError, TestEnv, TestEnvBuilder};
pub use scenario::{Outcome, Registry, Scenario};
pub use trace::Trace;
pub use world::World;
