//! Taints against tolerations and node selector requirements against labels, as kube-scheduler
//! judges them.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelectorRequirement, Taint, Toleration};
use rstest::rstest;

use super::scheduling::{requirement_matches, tolerates};

fn taint(key: &str, value: Option<&str>, effect: &str) -> Taint {
    Taint {
        key: key.to_owned(),
        value: value.map(str::to_owned),
        effect: effect.to_owned(),
        ..Default::default()
    }
}

fn toleration(key: &str, operator: &str, value: &str, effect: &str) -> Toleration {
    let given = |s: &str| (!s.is_empty()).then(|| s.to_owned());
    Toleration {
        key: given(key),
        operator: given(operator),
        value: given(value),
        effect: given(effect),
        ..Default::default()
    }
}

#[rstest]
#[case::equal_value(toleration("gpu", "Equal", "true", "NoSchedule"), true)]
#[case::default_operator_is_equal(toleration("gpu", "", "true", ""), true)]
#[case::other_value(toleration("gpu", "Equal", "false", "NoSchedule"), false)]
#[case::exists_ignores_value(toleration("gpu", "Exists", "", "NoSchedule"), true)]
#[case::empty_key_with_exists_tolerates_all(toleration("", "Exists", "", ""), true)]
#[case::other_effect(toleration("gpu", "Exists", "", "NoExecute"), false)]
#[case::other_key(toleration("tpu", "Exists", "", ""), false)]
#[case::comparison_operators_tolerate_nothing(toleration("gpu", "Gt", "1", ""), false)]
fn tolerations_against_a_taint(#[case] toleration: Toleration, #[case] tolerated: bool) {
    let taint = taint("gpu", Some("true"), "NoSchedule");
    assert_eq!(tolerates(&toleration, &taint), tolerated);
}

fn requirement(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.to_owned(),
        operator: operator.to_owned(),
        values: Some(values.iter().map(|v| (*v).to_owned()).collect()),
    }
}

#[rstest]
#[case::in_listed(requirement("zone", "In", &["a", "b"]), true)]
#[case::in_unlisted(requirement("zone", "In", &["b"]), false)]
#[case::in_absent_label(requirement("rack", "In", &["1"]), false)]
#[case::not_in_unlisted(requirement("zone", "NotIn", &["b"]), true)]
#[case::not_in_absent_label(requirement("rack", "NotIn", &["1"]), true)]
#[case::exists(requirement("zone", "Exists", &[]), true)]
#[case::does_not_exist(requirement("zone", "DoesNotExist", &[]), false)]
#[case::gt(requirement("cores", "Gt", &["7"]), true)]
#[case::gt_equal(requirement("cores", "Gt", &["8"]), false)]
#[case::lt(requirement("cores", "Lt", &["9"]), true)]
#[case::gt_non_integer_bound(requirement("cores", "Gt", &["x"]), false)]
#[case::gt_non_integer_label(requirement("zone", "Gt", &["1"]), false)]
#[case::gt_two_bounds(requirement("cores", "Gt", &["1", "2"]), false)]
#[case::unknown_operator(requirement("zone", "Matches", &["a"]), false)]
fn requirements_against_labels(
    #[case] requirement: NodeSelectorRequirement,
    #[case] matches: bool,
) {
    let labels = BTreeMap::from([
        ("zone".to_owned(), "a".to_owned()),
        ("cores".to_owned(), "8".to_owned()),
    ]);
    assert_eq!(requirement_matches(&requirement, &labels), matches);
}
