//! A podset's requests as Kueue accounts them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use support::pod::pod_requests;
use support::quantity::{QuantityFieldError, Requests, scale_requests, to_quantities, to_units};

use super::transform::Transformer;

/// A podset's requests after exclusion and transformation, in scheduler units.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodSetRequests {
    /// One pod's requests, each rounded up to scheduler units and floored at zero.
    pub per_pod: Requests,
    /// `per_pod` × count, saturating: what the podset takes from quota.
    pub total: Requests,
}

impl PodSetRequests {
    /// The totals as Kueue writes them to `status.resourceRequests[].resources`: each unit total
    /// formatted with `ResourceQuantity` (so `100G` of memory shows as `97656250Ki`).
    pub fn to_quantities(&self) -> BTreeMap<String, Quantity> {
        to_quantities(&self.total)
    }
}

/// A podset's requests as Kueue computes them for a pending workload (`totalRequestsFromPodSets`):
/// the pod's effective requests ([`pod_requests`]), excluded and transformed by `transformer`,
/// converted to scheduler units per pod, floored at zero, then multiplied by `count`.
///
/// Kueue multiplies the per-pod units rather than the exact quantities, so the total is
/// `units(pod) × count` (a `1.5m` CPU pod counts `2m` per pod), and `status.resourceRequests` shows
/// those unit totals formatted ([`PodSetRequests::to_quantities`]).
pub fn podset_requests(
    spec: &PodSpec,
    count: i32,
    transformer: &Transformer,
) -> Result<PodSetRequests, QuantityFieldError> {
    let transformed = transformer.apply(&pod_requests(spec)?);
    let per_pod: Requests = transformed
        .iter()
        .map(|(name, amount)| (name.clone(), to_units(name, amount).max(0)))
        .collect();
    let total = scale_requests(&per_pod, i64::from(count));
    Ok(PodSetRequests { per_pod, total })
}

#[cfg(test)]
#[path = "pod_tests.rs"]
mod tests;
