//! Scheduling decisions, pure as Kueue keeps `pkg/scheduler/flavorassigner` and
//! `pkg/scheduler/preemption`: the quota [`snapshot`], [`flavor`] assignment, [`preemption`]
//! victims, the types both share ([`common`]), and the [`queue`] order. The cycle that applies
//! them is in `reconcile::schedule`.

pub mod common;
pub mod cycle_backoff;
pub mod flavor;
pub mod preemption;
pub mod queue;
pub mod snapshot;
#[cfg(test)]
mod test_support;

pub use common::{Assignment, Mode, PendingWorkload, PodSetRequest};
pub use flavor::assign_flavors;
pub use preemption::{PreemptionReason, Target, find_targets, preemption_message};
pub use snapshot::{ClusterQueueSnapshot, ReservedWorkload, Snapshot, Usage};
