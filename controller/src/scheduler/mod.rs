//! Scheduling decisions, pure as Kueue keeps `pkg/scheduler/flavorassigner` and
//! `pkg/scheduler/preemption`: the quota [`snapshot`], [`flavor`] assignment, [`preemption`]
//! victims, and the [`queue`] order. The cycle that applies them is in `reconcile::schedule`.

pub mod cycle_backoff;
pub mod flavor;
pub mod preemption;
pub mod queue;
pub mod snapshot;
#[cfg(test)]
mod test_support;

pub use flavor::{Assignment, Mode, PendingWorkload, PodSetRequest, assign_flavors};
pub use preemption::{PreemptionReason, Target, find_targets, preemption_message};
pub use snapshot::{ClusterQueueSnapshot, ReservedWorkload, Snapshot, Usage};
