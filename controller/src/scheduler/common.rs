//! The types flavor assignment and preemption share, as Kueue's `preemption/common`: the pending
//! workload and its podsets, and the assignment with its modes. Both `flavor` and `preemption`
//! depend on this module and not on each other's types.

use std::collections::{BTreeMap, BTreeSet};

use api::kueue::PodSetAssignment as ApiPodSetAssignment;
use k8s_openapi::api::core::v1::{NodeSelector, Toleration};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::snapshot::{FlavorResource, Usage};
use crate::resources::{Requests, format_units};

/// A workload waiting for quota.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PendingWorkload {
    /// `namespace/name`.
    pub key: String,
    /// The Workload's UID.
    pub uid: String,
    /// Effective priority.
    pub priority: i32,
    /// Queue-order timestamp (creation time, unix seconds), compared with candidates' by the
    /// `LowerOrNewerEqualPriority` policy.
    pub queue_order_time: i64,
    /// Podsets in spec order.
    pub podsets: Vec<PodSetRequest>,
}

/// One podset: its pods' requests and scheduling constraints.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PodSetRequest {
    /// Podset name.
    pub name: String,
    /// Number of pods.
    pub count: i32,
    /// Requests of one pod, in scheduler units.
    pub per_pod: Requests,
    /// The pod template's `nodeSelector`.
    pub node_selector: BTreeMap<String, String>,
    /// The pod template's `requiredDuringSchedulingIgnoredDuringExecution` node affinity.
    pub required_affinity: Option<NodeSelector>,
    /// The pod template's tolerations.
    pub tolerations: Vec<Toleration>,
}

/// How a podset (or workload) can be admitted, worst first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    /// Cannot be admitted, even by preempting.
    NoFit,
    /// Could be admitted after preempting (the simulation may have found no candidates).
    Preempt,
    /// Fits in unused quota, possibly by borrowing.
    Fit,
}

/// The flavors of one podset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodSetAssignment {
    /// Podset name.
    pub name: String,
    /// Number of pods.
    pub count: i32,
    /// Flavor per resource (empty when the podset got none).
    pub flavors: BTreeMap<String, String>,
    /// Mode per resource: which flavor/resources need preemption.
    pub modes: BTreeMap<String, Mode>,
    /// Total request of `count` pods per resource that got a flavor.
    pub usage: Requests,
    /// The worst mode among the resources (Fit when there are no reasons).
    pub mode: Mode,
    /// Why flavors could not be assigned immediately, sorted.
    pub reasons: Vec<String>,
}

/// The result of [`assign_flavors`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// Podsets in order, up to and including the first that got no flavor.
    pub podsets: Vec<PodSetAssignment>,
    /// The worst podset mode (NoFit when there are no podsets).
    pub mode: Mode,
    /// Whether admitting needs quota borrowed from the cohort.
    pub borrows: bool,
    /// Total quota the workload would reserve.
    pub usage: Usage,
}

impl Assignment {
    /// The pending message: `couldn't assign flavors to pod set <ps>: <reasons>` for every podset
    /// that does not fit, joined by `; `. Empty when everything fits.
    pub fn message(&self) -> String {
        self.podsets
            .iter()
            .filter(|ps| !ps.reasons.is_empty())
            .map(|ps| {
                format!(
                    "couldn't assign flavors to pod set {}: {}",
                    ps.name,
                    ps.reasons.join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The flavor/resources whose assignment needs preemption.
    pub fn preempt_flavor_resources(&self) -> BTreeSet<FlavorResource> {
        self.podsets
            .iter()
            .flat_map(|ps| {
                ps.modes
                    .iter()
                    .filter(|(_, mode)| **mode == Mode::Preempt)
                    .filter_map(|(resource, _)| {
                        ps.flavors
                            .get(resource)
                            .map(|flavor| (flavor.clone(), resource.clone()))
                    })
            })
            .collect()
    }

    /// `status.admission.podSetAssignments`.
    pub fn to_api(&self) -> Vec<ApiPodSetAssignment> {
        self.podsets
            .iter()
            .map(|ps| ApiPodSetAssignment {
                name: ps.name.clone(),
                flavors: ps.flavors.clone(),
                resource_usage: ps
                    .usage
                    .iter()
                    .map(|(resource, value)| {
                        (resource.clone(), Quantity(format_units(resource, *value)))
                    })
                    .collect(),
                count: Some(ps.count),
            })
            .collect()
    }

    /// An assignment with no podsets that cannot be admitted.
    pub(super) fn no_fit() -> Self {
        Self {
            podsets: Vec::new(),
            mode: Mode::NoFit,
            borrows: false,
            usage: Usage::new(),
        }
    }
}
