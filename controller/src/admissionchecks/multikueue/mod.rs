//! The MultiKueue admission check (KEP-693): the manager dispatches a workload that holds quota
//! to worker clusters, the first worker to admit it runs the job, and the manager mirrors the
//! job's progress.
//!
//! - [`clusters`]: MultiKueueClusters: kubeconfigs ([`kubeconfig`]), connections ([`connect`]),
//!   the `Active` condition, reconnects, and watches on each worker ([`workers`]).
//! - [`active`]: the `Active` condition of MultiKueue AdmissionChecks.
//! - [`workloads`]: the manager's workloads: remote copies, the winner, the job on the winner,
//!   status copied back, retries; which workers to try is [`dispatch`]'s decision.
//! - [`gc`]: removes remote objects whose manager workload is gone.
//! - [`adapter`]: what the workload controller needs of a job kind (batch/v1 Job today).

pub mod active;
pub mod adapter;
pub mod clusters;
pub mod connect;
pub mod dispatch;
pub mod gc;
pub mod kubeconfig;
pub mod workers;
pub mod workloads;
