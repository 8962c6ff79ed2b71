//! A podset's requests in scheduler units: a pod's effective requests (tested in `support`),
//! excluded, transformed, rounded and multiplied as Kueue counts them.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use api::config::{ResourceTransformation, Resources, TransformationStrategy};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use support::fixtures::{List, container, spec};

use super::{PodSetRequests, podset_requests};
use crate::resources::Transformer;

fn strings(pairs: List<'_>) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

fn requests(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs
        .iter()
        .map(|(name, v)| ((*name).to_owned(), *v))
        .collect()
}

#[test]
fn podset_requests_are_per_pod_units_times_count() {
    let pod = spec(
        vec![container(
            &[("cpu", "1.5m"), ("memory", "100G"), ("example.com/x", "0")],
            &[],
        )],
        vec![],
    );
    let got = podset_requests(&pod, 3, &Transformer::default()).unwrap();
    assert_eq!(
        got,
        PodSetRequests {
            // 1.5m rounds up to 2m per pod before the count multiplies it.
            per_pod: requests(&[
                ("cpu", 2),
                ("example.com/x", 0),
                ("memory", 100_000_000_000)
            ]),
            total: requests(&[
                ("cpu", 6),
                ("example.com/x", 0),
                ("memory", 300_000_000_000)
            ]),
        }
    );
    let shown: BTreeMap<String, String> = got
        .to_quantities()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    assert_eq!(
        shown,
        strings(&[
            ("cpu", "6m"),
            ("example.com/x", "0"),
            ("memory", "292968750Ki")
        ])
    );
}

#[test]
fn podset_requests_show_the_transformed_totals_like_the_kep() {
    let config = Resources {
        exclude_resource_prefixes: vec![],
        transformations: ["nvidia.com/mig-1g.5gb:5G", "nvidia.com/mig-2g.10gb:10G"]
            .iter()
            .filter_map(|rule| rule.split_once(':'))
            .map(|(input, per_unit)| ResourceTransformation {
                input: input.to_owned(),
                strategy: TransformationStrategy::Replace,
                multiply_by: None,
                outputs: BTreeMap::from([(
                    "example.com/accelerator-memory".to_owned(),
                    Quantity(per_unit.to_owned()),
                )]),
            })
            .collect(),
    };
    let transformer = Transformer::new(Some(&config)).unwrap();
    let pod = spec(
        vec![container(
            &[("cpu", "1"), ("memory", "100G")],
            &[
                ("nvidia.com/mig-1g.5gb", "2"),
                ("nvidia.com/mig-2g.10gb", "1"),
            ],
        )],
        vec![],
    );
    let shown: BTreeMap<String, String> = podset_requests(&pod, 1, &transformer)
        .unwrap()
        .to_quantities()
        .into_iter()
        .map(|(k, v)| (k, v.0))
        .collect();
    assert_eq!(
        shown,
        strings(&[
            ("cpu", "1"),
            ("example.com/accelerator-memory", "20G"),
            ("memory", "97656250Ki")
        ])
    );
}

#[test]
fn podset_total_saturates_instead_of_overflowing() {
    let pod = spec(vec![container(&[("cpu", "4300000")], &[])], vec![]);
    let got = podset_requests(&pod, i32::MAX, &Transformer::default()).unwrap();
    assert_eq!(got.per_pod, requests(&[("cpu", 4_300_000_000)]));
    assert_eq!(got.total, requests(&[("cpu", i64::MAX)]));
}

#[test]
fn podset_per_pod_units_are_floored_at_zero() {
    let pod = spec(vec![container(&[("example.com/x", "-3")], &[])], vec![]);
    let got = podset_requests(&pod, 2, &Transformer::default()).unwrap();
    assert_eq!(got.total, requests(&[("example.com/x", 0)]));
}
