//! A pod's effective requests, as kube-scheduler and Kueue both count them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::quantity::{Amount, QuantityFieldError};

/// A pod's effective requests, as Kubernetes' `PodRequests` computes them after Kueue's
/// `UseLimitsAsMissingRequestsInPod`:
///
/// - a container's (or the pod-level) limit counts as its request where no request is given;
/// - app containers are summed;
/// - restartable init containers (sidecars, `restartPolicy: Always`) run alongside everything after
///   them, so they add to the sum and to what each later init container needs;
/// - the result is the larger, per resource, of that sum and each init container's need;
/// - pod-level requests (`spec.resources`) replace the container total for the resources Kubernetes
///   supports there (`cpu`, `memory`, `hugepages-*`);
/// - `overhead` is added.
///
/// LimitRange defaults and a RuntimeClass's overhead need cluster lookups and are the caller's to
/// merge into the spec first. Fails on a quantity that is not a Kubernetes quantity, naming where.
pub fn pod_requests(spec: &PodSpec) -> Result<BTreeMap<String, Amount>, QuantityFieldError> {
    let mut total = BTreeMap::new();
    for (index, container) in spec.containers.iter().enumerate() {
        add(
            &mut total,
            &container_requests(container, &format!("containers[{index}]"))?,
        );
    }

    let mut sidecars = BTreeMap::new();
    let mut init_peak = BTreeMap::new();
    for (index, container) in spec.init_containers.iter().flatten().enumerate() {
        let own = container_requests(container, &format!("initContainers[{index}]"))?;
        let needed = if container.restart_policy.as_deref() == Some("Always") {
            add(&mut total, &own);
            add(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut needed = own;
            add(&mut needed, &sidecars);
            needed
        };
        max_into(&mut init_peak, &needed);
    }
    max_into(&mut total, &init_peak);

    if let Some(resources) = &spec.resources {
        for (name, amount) in effective_requests(resources, "resources")? {
            if supports_pod_level(&name) {
                total.insert(name, amount);
            }
        }
    }

    if let Some(overhead) = &spec.overhead {
        add(&mut total, &read_list(overhead, "overhead")?);
    }
    Ok(total)
}

/// The resources Kubernetes honours in pod-level `resources`.
fn supports_pod_level(resource: &str) -> bool {
    resource == "cpu" || resource == "memory" || resource.starts_with("hugepages-")
}

fn container_requests(
    container: &Container,
    field: &str,
) -> Result<BTreeMap<String, Amount>, QuantityFieldError> {
    match &container.resources {
        Some(resources) => effective_requests(resources, &format!("{field}.resources")),
        None => Ok(BTreeMap::new()),
    }
}

/// Requests, with limits standing in for the requests that are missing.
fn effective_requests(
    resources: &ResourceRequirements,
    field: &str,
) -> Result<BTreeMap<String, Amount>, QuantityFieldError> {
    let mut requests = match &resources.requests {
        Some(list) => read_list(list, &format!("{field}.requests"))?,
        None => BTreeMap::new(),
    };
    if let Some(limits) = &resources.limits {
        for (name, amount) in read_list(limits, &format!("{field}.limits"))? {
            requests.entry(name).or_insert(amount);
        }
    }
    Ok(requests)
}

fn read_list(
    list: &BTreeMap<String, Quantity>,
    field: &str,
) -> Result<BTreeMap<String, Amount>, QuantityFieldError> {
    list.iter()
        .map(|(name, quantity)| {
            Amount::from_quantity(quantity)
                .map(|amount| (name.clone(), amount))
                .map_err(|error| QuantityFieldError::new(format!("{field}[{name}]"), error))
        })
        .collect()
}

fn add(total: &mut BTreeMap<String, Amount>, other: &BTreeMap<String, Amount>) {
    for (name, amount) in other {
        let slot = total.entry(name.clone()).or_default();
        *slot = slot.saturating_add(amount);
    }
}

/// Raises each resource of `total` to `other`'s where that is larger (absent counts as unset, not zero).
fn max_into(total: &mut BTreeMap<String, Amount>, other: &BTreeMap<String, Amount>) {
    for (name, amount) in other {
        match total.get_mut(name) {
            Some(current) if *current >= *amount => {}
            Some(current) => *current = *amount,
            None => {
                total.insert(name.clone(), *amount);
            }
        }
    }
}
