//! Exclusion and transformations: the KEP-2937 stories and Kueue's `NewInfo` transformation cases.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use api::config::{ResourceTransformation, Resources, TransformationStrategy};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use rstest::rstest;

use super::Transformer;
use support::quantity::{Amount, to_units};

use TransformationStrategy::{Replace, Retain};

/// A transformation: input, strategy, multiplyBy, outputs.
type Rule<'a> = (
    &'a str,
    TransformationStrategy,
    Option<&'a str>,
    &'a [(&'a str, &'a str)],
);

fn config(exclude: &[&str], rules: &[Rule<'_>]) -> Resources {
    Resources {
        exclude_resource_prefixes: exclude.iter().map(|p| (*p).to_owned()).collect(),
        transformations: rules
            .iter()
            .map(
                |(input, strategy, multiply_by, outputs)| ResourceTransformation {
                    input: (*input).to_owned(),
                    strategy: *strategy,
                    multiply_by: multiply_by.map(str::to_owned),
                    outputs: outputs
                        .iter()
                        .map(|(name, q)| ((*name).to_owned(), Quantity((*q).to_owned())))
                        .collect(),
                },
            )
            .collect(),
    }
}

fn pod(pairs: &[(&str, &str)]) -> BTreeMap<String, Amount> {
    pairs
        .iter()
        .map(|(name, q)| ((*name).to_owned(), Amount::parse(q).unwrap()))
        .collect()
}

/// The transformed requests as canonical strings, for readable comparisons.
fn apply(
    exclude: &[&str],
    rules: &[Rule<'_>],
    requests: &[(&str, &str)],
) -> BTreeMap<String, String> {
    let transformer = Transformer::new(Some(&config(exclude, rules))).unwrap();
    transformer
        .apply(&pod(requests))
        .into_iter()
        .map(|(name, amount)| (name, amount.to_canonical_string()))
        .collect()
}

fn strings(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
        .collect()
}

const MIG_JOB: &[(&str, &str)] = &[
    ("nvidia.com/mig-1g.5gb", "2"),
    ("nvidia.com/mig-2g.10gb", "1"),
    ("memory", "100M"),
    ("cpu", "1"),
];

fn mig_rules(strategy: TransformationStrategy) -> [Rule<'static>; 3] {
    [
        (
            "nvidia.com/mig-1g.5gb",
            strategy,
            None,
            &[("example.com/accelerator-memory", "5G")],
        ),
        (
            "nvidia.com/mig-2g.10gb",
            strategy,
            None,
            &[("example.com/accelerator-memory", "10G")],
        ),
        (
            "nvidia.com/mig-4g.20gb",
            strategy,
            None,
            &[("example.com/accelerator-memory", "20G")],
        ),
    ]
}

#[test]
fn mig_replace_sums_accelerator_memory_and_drops_the_mig_inputs() {
    assert_eq!(
        apply(&[], &mig_rules(Replace), MIG_JOB),
        strings(&[
            ("example.com/accelerator-memory", "20G"),
            ("memory", "100M"),
            ("cpu", "1")
        ])
    );
}

#[test]
fn mig_retain_keeps_the_mig_inputs_next_to_the_output() {
    assert_eq!(
        apply(&[], &mig_rules(Retain), MIG_JOB),
        strings(&[
            ("example.com/accelerator-memory", "20G"),
            ("nvidia.com/mig-1g.5gb", "2"),
            ("nvidia.com/mig-2g.10gb", "1"),
            ("memory", "100M"),
            ("cpu", "1"),
        ])
    );
}

#[rstest]
#[case::cpu_only(&[("cpu", "3")], &[("cpu", "3"), ("example.com/credits", "3")])]
#[case::cpu_and_gpu(
    &[("cpu", "3"), ("foo.com/gpu", "2")],
    &[("cpu", "3"), ("foo.com/gpu", "2"), ("example.com/credits", "23")]
)]
#[case::fractional_cpu(&[("cpu", "1500m")], &[("cpu", "1500m"), ("example.com/credits", "1500m")])]
fn credits_retain_augments_the_requests(
    #[case] requests: &[(&str, &str)],
    #[case] expected: &[(&str, &str)],
) {
    let rules: [Rule<'_>; 2] = [
        (
            "foo.com/gpu",
            Retain,
            None,
            &[("example.com/credits", "10")],
        ),
        ("cpu", Retain, None, &[("example.com/credits", "1")]),
    ];
    assert_eq!(apply(&[], &rules, requests), strings(expected));
}

const VGPU_RULES: [Rule<'static>; 2] = [
    (
        "nvidia.com/vgpucores",
        Replace,
        Some("nvidia.com/vgpu"),
        &[("nvidia.com/total-vgpucores", "1")],
    ),
    (
        "nvidia.com/vgpumem",
        Replace,
        Some("nvidia.com/vgpu"),
        &[("nvidia.com/total-vgpumem", "1")],
    ),
];

#[test]
fn multiply_by_scales_the_input_by_another_request() {
    // Kueue's transformResources podset "c": 2 vGPUs of 20 cores and 1024 memory each.
    assert_eq!(
        apply(
            &[],
            &VGPU_RULES,
            &[
                ("nvidia.com/vgpu", "2"),
                ("nvidia.com/vgpucores", "20"),
                ("nvidia.com/vgpumem", "1024")
            ]
        ),
        strings(&[
            ("nvidia.com/vgpu", "2"),
            ("nvidia.com/total-vgpucores", "40"),
            ("nvidia.com/total-vgpumem", "2048"),
        ])
    );
}

#[test]
fn multiply_by_absent_from_the_pod_leaves_the_input_unmultiplied() {
    assert_eq!(
        apply(&[], &VGPU_RULES, &[("nvidia.com/vgpucores", "20")]),
        strings(&[("nvidia.com/total-vgpucores", "20")])
    );
}

#[test]
fn multiply_by_an_excluded_resource_multiplies_nothing() {
    assert_eq!(
        apply(
            &["example.com/nodes"],
            &[(
                "example.com/gpumem",
                Replace,
                Some("example.com/nodes"),
                &[("example.com/mem-quota", "1")]
            )],
            &[("example.com/nodes", "4"), ("example.com/gpumem", "100")]
        ),
        strings(&[("example.com/mem-quota", "100")])
    );
}

#[test]
fn multiply_by_reads_the_request_before_that_resource_is_replaced() {
    let rules: [Rule<'_>; 2] = [
        (
            "example.com/gpu",
            Replace,
            None,
            &[("example.com/credits", "10")],
        ),
        (
            "example.com/gpumem",
            Replace,
            Some("example.com/gpu"),
            &[("example.com/gpumem-quota", "1")],
        ),
    ];
    assert_eq!(
        apply(
            &[],
            &rules,
            &[("example.com/gpu", "2"), ("example.com/gpumem", "1024")]
        ),
        strings(&[
            ("example.com/credits", "20"),
            ("example.com/gpumem-quota", "2048")
        ])
    );
}

#[rstest]
#[case::multiplier_above_one("example.com/gpu", "2", "2048")]
#[case::multiplier_below_one("cpu", "500m", "512")]
fn retain_with_multiply_by_keeps_the_input_as_requested(
    #[case] multiplier: &str,
    #[case] quantity: &str,
    #[case] output: &str,
) {
    let rules: [Rule<'_>; 1] = [(
        "example.com/gpumem",
        Retain,
        Some(multiplier),
        &[("example.com/gpumem-quota", "1")],
    )];
    assert_eq!(
        apply(
            &[],
            &rules,
            &[("example.com/gpumem", "1024"), (multiplier, quantity)]
        ),
        strings(&[
            ("example.com/gpumem", "1024"),
            ("example.com/gpumem-quota", output),
            (multiplier, quantity)
        ])
    );
}

#[test]
fn milli_values_multiply_exactly() {
    let rules: [Rule<'_>; 2] = [
        ("cpu", Replace, None, &[("example.com/cpu-credits", "3000")]),
        (
            "memory",
            Replace,
            None,
            &[("example.com/memory-credits", "3m")],
        ),
    ];
    let transformer = Transformer::new(Some(&config(&[], &rules))).unwrap();
    let out = transformer.apply(&pod(&[("cpu", "100m"), ("memory", "100M")]));
    let units: BTreeMap<&str, i64> = out
        .iter()
        .map(|(k, v)| (k.as_str(), to_units(k, v)))
        .collect();
    assert_eq!(
        units,
        BTreeMap::from([
            ("example.com/cpu-credits", 300),
            ("example.com/memory-credits", 300_000)
        ])
    );
}

#[test]
fn overflowing_products_saturate_instead_of_wrapping() {
    let rules: [Rule<'_>; 1] = [(
        "example.com/credit",
        Replace,
        None,
        &[("example.com/gpu", "10000000000")],
    )];
    let transformer = Transformer::new(Some(&config(&[], &rules))).unwrap();
    let out = transformer.apply(&pod(&[("example.com/credit", "10000000000")]));
    assert_eq!(
        to_units("example.com/gpu", &out["example.com/gpu"]),
        i64::MAX
    );

    let rules: [Rule<'_>; 1] = [(
        "example.com/credit",
        Replace,
        None,
        &[("example.com/gpu", "1e20")],
    )];
    let transformer = Transformer::new(Some(&config(&[], &rules))).unwrap();
    let out = transformer.apply(&pod(&[("example.com/credit", "1e20")]));
    assert_eq!(out["example.com/gpu"].nanos(), i128::MAX);
    assert_eq!(
        to_units("example.com/gpu", &out["example.com/gpu"]),
        i64::MAX
    );
}

const ALLOWANCE: [Rule<'static>; 2] = [
    (
        "nvidia.com/gpumem",
        Replace,
        Some("nvidia.com/gpu"),
        &[("quota.example.com/overage", "1")],
    ),
    (
        "nvidia.com/gpu",
        Retain,
        None,
        &[("quota.example.com/overage", "-1024")],
    ),
];

#[rstest]
#[case::above_the_allowance("2048", "2048")]
#[case::exactly_at_it("1024", "0")]
#[case::below_it_clamps_to_zero("512", "0")]
fn negative_output_sums_clamp_to_zero(#[case] gpumem: &str, #[case] overage: &str) {
    assert_eq!(
        apply(
            &[],
            &ALLOWANCE,
            &[("nvidia.com/gpumem", gpumem), ("nvidia.com/gpu", "2")]
        ),
        strings(&[
            ("quota.example.com/overage", overage),
            ("nvidia.com/gpu", "2")
        ])
    );
}

#[test]
fn negative_output_never_reduces_a_direct_request() {
    let rules: [Rule<'_>; 1] = [(
        "example.com/credit",
        Replace,
        None,
        &[("example.com/gpu", "-1")],
    )];
    assert_eq!(
        apply(
            &[],
            &rules,
            &[("example.com/gpu", "8"), ("example.com/credit", "3")]
        ),
        strings(&[("example.com/gpu", "8")])
    );
}

#[test]
fn excluded_input_is_never_transformed() {
    let rules: [Rule<'_>; 1] = [(
        "networking.example.com/vpc1",
        Replace,
        None,
        &[("example.com/credits", "5")],
    )];
    assert_eq!(
        apply(
            &["dummyPrefix", "networking.example.com/"],
            &rules,
            &[
                ("cpu", "10m"),
                ("memory", "512Ki"),
                ("networking.example.com/vpc1", "1")
            ]
        ),
        strings(&[("cpu", "10m"), ("memory", "524288")])
    );
}

#[test]
fn output_is_summed_with_a_direct_request_of_the_same_name() {
    let rules: [Rule<'_>; 1] = [(
        "example.com/credit",
        Replace,
        None,
        &[("example.com/gpu", "1")],
    )];
    assert_eq!(
        apply(
            &[],
            &rules,
            &[("example.com/gpu", "1"), ("example.com/credit", "1")]
        ),
        strings(&[("example.com/gpu", "2")])
    );
}

#[rstest]
#[case::without_multiplier(None, &[("example.com/gpu", "1")], "6")]
#[case::multiplier_scales_only_the_output(Some("example.com/node"), &[("example.com/gpu", "1"), ("example.com/node", "2")], "3")]
fn output_naming_its_retained_input_is_added(
    #[case] multiply_by: Option<&str>,
    #[case] requests: &[(&str, &str)],
    #[case] gpu: &str,
) {
    let factor = if multiply_by.is_some() { "1" } else { "5" };
    let outputs = [("example.com/gpu", factor)];
    let rules: [Rule<'_>; 1] = [("example.com/gpu", Retain, multiply_by, &outputs)];
    let out = apply(&[], &rules, requests);
    assert_eq!(out["example.com/gpu"], gpu);
}

#[test]
fn replace_without_outputs_ignores_the_input() {
    let rules: [Rule<'_>; 1] = [("example.com/license", Replace, None, &[])];
    assert_eq!(
        apply(&[], &rules, &[("example.com/license", "1"), ("cpu", "1")]),
        strings(&[("cpu", "1")])
    );
}

#[test]
fn empty_multiply_by_means_unset() {
    let rules: [Rule<'_>; 1] = [(
        "example.com/a",
        Replace,
        Some(""),
        &[("example.com/b", "2")],
    )];
    assert_eq!(
        apply(&[], &rules, &[("example.com/a", "3"), ("", "7")]),
        strings(&[("", "7"), ("example.com/b", "6")])
    );
}

#[test]
fn no_configuration_is_the_identity() {
    let requests = pod(&[("cpu", "1"), ("nvidia.com/gpu", "2")]);
    assert_eq!(Transformer::new(None).unwrap().apply(&requests), requests);
    assert_eq!(Transformer::default().apply(&requests), requests);
    assert!(!Transformer::default().is_excluded("cpu"));
}

#[test]
fn invalid_output_quantity_is_reported_with_its_field() {
    let rules: [Rule<'_>; 2] = [
        ("cpu", Retain, None, &[("example.com/credits", "1")]),
        (
            "example.com/gpu",
            Retain,
            None,
            &[("example.com/credits", "ten")],
        ),
    ];
    let error = Transformer::new(Some(&config(&[], &rules))).unwrap_err();
    assert_eq!(
        error.field,
        "resources.transformations[1].outputs[example.com/credits]"
    );
    assert_eq!(
        error.to_string(),
        "resources.transformations[1].outputs[example.com/credits]: invalid quantity \"ten\": \
         quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
}
