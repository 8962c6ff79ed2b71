//! Pod specs for tests, written as lists of `(resource, quantity)` pairs. Compiled for this
//! crate's tests and, with the `fixtures` feature, for other crates' (the controller's podset
//! tests build the same pods).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// `(name, value)` pairs.
pub type List<'a> = &'a [(&'a str, &'a str)];

/// A quantity map, or none for no pairs.
pub fn list(pairs: List<'_>) -> Option<BTreeMap<String, Quantity>> {
    (!pairs.is_empty()).then(|| {
        pairs
            .iter()
            .map(|(name, q)| ((*name).to_owned(), Quantity((*q).to_owned())))
            .collect()
    })
}

pub fn resources(requests: List<'_>, limits: List<'_>) -> ResourceRequirements {
    ResourceRequirements {
        requests: list(requests),
        limits: list(limits),
        ..Default::default()
    }
}

/// A container named `c` with these requests and limits.
pub fn container(requests: List<'_>, limits: List<'_>) -> Container {
    Container {
        name: "c".to_owned(),
        resources: Some(resources(requests, limits)),
        ..Default::default()
    }
}

/// A pod of these containers and init containers.
pub fn spec(containers: Vec<Container>, init_containers: Vec<Container>) -> PodSpec {
    PodSpec {
        containers,
        init_containers: (!init_containers.is_empty()).then_some(init_containers),
        ..Default::default()
    }
}
