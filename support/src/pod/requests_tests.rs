//! A pod's effective requests (Kubernetes' `PodRequests` after Kueue's limits-as-requests).
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec};
use rstest::rstest;

use super::requests::pod_requests;
use crate::fixtures::{List, container, list, resources, spec};

fn sidecar(requests: List<'_>) -> Container {
    Container {
        restart_policy: Some("Always".to_owned()),
        ..container(requests, &[])
    }
}

/// The pod's requests as canonical strings.
fn requests_of(spec: &PodSpec) -> BTreeMap<String, String> {
    pod_requests(spec)
        .unwrap()
        .into_iter()
        .map(|(name, amount)| (name, amount.to_canonical_string()))
        .collect()
}

fn strings(pairs: List<'_>) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

#[test]
fn app_containers_are_summed() {
    let pod = spec(
        vec![
            container(&[("cpu", "1"), ("memory", "1Gi")], &[]),
            container(&[("cpu", "500m"), ("nvidia.com/gpu", "1")], &[]),
        ],
        vec![],
    );
    assert_eq!(
        requests_of(&pod),
        strings(&[
            ("cpu", "1500m"),
            ("memory", "1073741824"),
            ("nvidia.com/gpu", "1")
        ])
    );
}

#[rstest]
#[case::limit_only(&[], &[("cpu", "2")], "2")]
#[case::request_wins_over_limit(&[("cpu", "1")], &[("cpu", "2")], "1")]
#[case::explicit_zero_request_wins(&[("cpu", "0")], &[("cpu", "2")], "0")]
fn a_limit_counts_as_the_missing_request(
    #[case] requests: List<'_>,
    #[case] limits: List<'_>,
    #[case] cpu: &str,
) {
    let pod = spec(vec![container(requests, limits)], vec![]);
    assert_eq!(requests_of(&pod)["cpu"], cpu);
}

#[test]
fn limits_fill_in_per_resource() {
    let pod = spec(
        vec![container(
            &[("cpu", "1")],
            &[("cpu", "2"), ("nvidia.com/gpu", "1")],
        )],
        vec![container(&[], &[("memory", "1Gi")])],
    );
    assert_eq!(
        requests_of(&pod),
        strings(&[
            ("cpu", "1"),
            ("memory", "1073741824"),
            ("nvidia.com/gpu", "1")
        ])
    );
}

#[rstest]
#[case::init_larger_wins(&[("cpu", "2")], &[("cpu", "2"), ("memory", "1Gi")])]
#[case::init_smaller_is_hidden(&[("cpu", "500m")], &[("cpu", "1"), ("memory", "1Gi")])]
#[case::init_only_resource_is_added(&[("example.com/license", "1")], &[("cpu", "1"), ("example.com/license", "1"), ("memory", "1Gi")])]
fn init_containers_take_the_maximum(#[case] init: List<'_>, #[case] expected: List<'_>) {
    let pod = spec(
        vec![container(&[("cpu", "1"), ("memory", "1Gi")], &[])],
        vec![container(init, &[])],
    );
    let mut want = strings(expected);
    want.insert("memory".to_owned(), "1073741824".to_owned());
    assert_eq!(requests_of(&pod), want);
}

#[test]
fn init_containers_are_maxed_one_at_a_time_not_summed() {
    let pod = spec(
        vec![container(&[("cpu", "1")], &[])],
        vec![
            container(&[("cpu", "2")], &[]),
            container(&[("cpu", "3")], &[]),
        ],
    );
    assert_eq!(requests_of(&pod), strings(&[("cpu", "3")]));
}

#[test]
fn sidecars_add_to_the_pod_and_to_later_init_containers() {
    // Running: 1 + 500m (sidecar) = 1.5; the init container after the sidecar needs 2 + 500m.
    let pod = spec(
        vec![container(&[("cpu", "1")], &[])],
        vec![sidecar(&[("cpu", "500m")]), container(&[("cpu", "2")], &[])],
    );
    assert_eq!(requests_of(&pod), strings(&[("cpu", "2500m")]));
}

#[test]
fn a_sidecar_runs_alongside_the_app_containers() {
    let pod = spec(
        vec![container(&[("cpu", "1")], &[])],
        vec![sidecar(&[("cpu", "500m"), ("memory", "64Mi")])],
    );
    assert_eq!(
        requests_of(&pod),
        strings(&[("cpu", "1500m"), ("memory", "67108864")])
    );
}

#[test]
fn init_containers_before_a_sidecar_do_not_carry_it() {
    // The init container runs alone (2); afterwards app + sidecar run (1.5).
    let pod = spec(
        vec![container(&[("cpu", "1")], &[])],
        vec![container(&[("cpu", "2")], &[]), sidecar(&[("cpu", "500m")])],
    );
    assert_eq!(requests_of(&pod), strings(&[("cpu", "2")]));
}

#[test]
fn sidecars_accumulate() {
    // Two sidecars (250m each) stay running: pod = 1 + 0.5; the last init needs 1 + 0.5.
    let pod = spec(
        vec![container(&[("cpu", "1")], &[])],
        vec![
            sidecar(&[("cpu", "250m")]),
            sidecar(&[("cpu", "250m"), ("memory", "1Mi")]),
            container(&[("cpu", "1100m")], &[]),
        ],
    );
    assert_eq!(
        requests_of(&pod),
        strings(&[("cpu", "1600m"), ("memory", "1048576")])
    );
}

#[test]
fn overhead_is_added() {
    let mut pod = spec(
        vec![container(&[("cpu", "1")], &[])],
        vec![container(&[("cpu", "2")], &[])],
    );
    pod.overhead = list(&[("cpu", "250m"), ("memory", "120Mi")]);
    assert_eq!(
        requests_of(&pod),
        strings(&[("cpu", "2250m"), ("memory", "125829120")])
    );
}

#[test]
fn pod_level_requests_replace_supported_resources_only() {
    let mut pod = spec(
        vec![container(
            &[("cpu", "1"), ("memory", "1Gi"), ("nvidia.com/gpu", "1")],
            &[],
        )],
        vec![],
    );
    pod.resources = Some(resources(
        &[("cpu", "4"), ("nvidia.com/gpu", "8")],
        &[("memory", "2Gi")],
    ));
    pod.overhead = list(&[("cpu", "100m")]);
    assert_eq!(
        requests_of(&pod),
        strings(&[
            ("cpu", "4100m"),
            ("memory", "2147483648"),
            ("nvidia.com/gpu", "1")
        ])
    );
}

#[test]
fn pod_level_resources_without_supported_names_change_nothing() {
    let mut pod = spec(vec![container(&[("cpu", "1")], &[])], vec![]);
    pod.resources = Some(resources(&[("nvidia.com/gpu", "8")], &[]));
    assert_eq!(requests_of(&pod), strings(&[("cpu", "1")]));
}

#[test]
fn invalid_quantity_names_its_field() {
    let pod = spec(
        vec![
            container(&[("cpu", "1")], &[]),
            container(&[], &[("memory", "1GB")]),
        ],
        vec![],
    );
    let error = pod_requests(&pod).unwrap_err();
    assert_eq!(error.field, "containers[1].resources.limits[memory]");
    assert_eq!(
        error.to_string(),
        "containers[1].resources.limits[memory]: invalid quantity \"1GB\": quantities must match the regular \
         expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
}
