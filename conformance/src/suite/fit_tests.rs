use k8s_openapi::api::core::v1::{Node, PodSpec};
use rstest::rstest;
use serde_json::{Value, json};

use super::{PodNeeds, quantity};

fn node(labels: Value, taints: Value, allocatable: Value) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": "n1", "labels": labels},
        "spec": {"taints": taints},
        "status": {"allocatable": allocatable},
    }))
    .expect("node")
}

fn pod(spec: Value) -> PodNeeds {
    let spec: PodSpec = serde_json::from_value(spec).expect("pod spec");
    PodNeeds::of(&spec).expect("needs")
}

fn asking(requests: Value) -> Value {
    json!({"containers": [{"name": "c", "resources": {"requests": requests}}]})
}

const ROOMY: fn() -> Value = || json!({"cpu": "4", "memory": "16Gi", "pods": "110"});

/// The embedded world's GPU Node and the pods of the options' `doesNotFit`.
#[test]
fn a_tolerating_gpu_pod_can_run_on_a_tainted_gpu_node_and_not_on_a_cpu_node() {
    let gpu_pod = pod(json!({
        "containers": [{"name": "c", "resources": {
            "requests": {"nvidia.com/gpu": "4"}, "limits": {"nvidia.com/gpu": "4"}}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    }));
    let gpu_node = node(
        json!({}),
        json!([{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]),
        json!({"cpu": "16", "nvidia.com/gpu": "4", "pods": "110"}),
    );
    let cpu_node = node(json!({}), json!([]), ROOMY());
    assert!(gpu_pod.could_run_on(&gpu_node));
    assert!(!gpu_pod.could_run_on(&cpu_node), "no GPU there");
}

#[rstest]
#[case::fits(json!({"cpu": "3", "memory": "10Gi"}), true)]
#[case::exactly(json!({"cpu": "4000m", "memory": "16384Mi"}), true)]
#[case::too_much_cpu(json!({"cpu": "4100m"}), false)]
#[case::too_much_memory(json!({"memory": "17.2G"}), false)]
#[case::a_resource_the_node_lacks(json!({"example.com/fpga": "1"}), false)]
#[case::none_of_a_resource_the_node_lacks(json!({"example.com/fpga": "0"}), true)]
fn requests_are_held_against_allocatable(#[case] requests: Value, #[case] fits: bool) {
    let n = node(json!({}), json!([]), ROOMY());
    assert_eq!(pod(asking(requests)).could_run_on(&n), fits);
}

#[test]
fn containers_add_up_and_init_containers_count_one_at_a_time() {
    let n = node(json!({}), json!([]), ROOMY());
    let two = pod(json!({"containers": [
        {"name": "a", "resources": {"requests": {"cpu": "2"}}},
        {"name": "b", "resources": {"requests": {"cpu": "2500m"}}},
    ]}));
    assert!(!two.could_run_on(&n), "2 + 2.5 CPUs on a 4-CPU node");
    let inits = pod(json!({
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
        "initContainers": [
            {"name": "i1", "resources": {"requests": {"cpu": "3"}}},
            {"name": "i2", "resources": {"requests": {"cpu": "3"}}},
        ],
    }));
    assert!(
        inits.could_run_on(&n),
        "the init containers need 3 CPUs, not 6"
    );
}

#[test]
fn a_limit_stands_in_for_its_missing_request() {
    let n = node(json!({}), json!([]), ROOMY());
    let limited = pod(json!({"containers": [
        {"name": "c", "resources": {"limits": {"cpu": "5"}}},
    ]}));
    assert!(!limited.could_run_on(&n));
    let requested = pod(json!({"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "5"}}},
    ]}));
    assert!(
        requested.could_run_on(&n),
        "the request, not the limit, counts"
    );
}

#[test]
fn a_node_without_a_free_pod_slot_or_allocatable_uses_its_capacity() {
    let full = node(json!({}), json!([]), json!({"cpu": "4", "pods": "0"}));
    assert!(!pod(asking(json!({}))).could_run_on(&full));
    let capacity_only: Node = serde_json::from_value(json!({
        "metadata": {"name": "n1"},
        "status": {"capacity": {"cpu": "4", "pods": "10"}},
    }))
    .expect("node");
    assert!(pod(asking(json!({"cpu": "2"}))).could_run_on(&capacity_only));
}

#[rstest]
#[case::untolerated(json!([{"key": "gpu", "effect": "NoSchedule"}]), json!([]), false)]
#[case::untolerated_no_execute(json!([{"key": "gpu", "effect": "NoExecute"}]), json!([]), false)]
#[case::only_preferred(json!([{"key": "gpu", "effect": "PreferNoSchedule"}]), json!([]), true)]
#[case::equal_value(
    json!([{"key": "gpu", "value": "a", "effect": "NoSchedule"}]),
    json!([{"key": "gpu", "operator": "Equal", "value": "a"}]),
    true
)]
#[case::other_value(
    json!([{"key": "gpu", "value": "a", "effect": "NoSchedule"}]),
    json!([{"key": "gpu", "value": "b"}]),
    false
)]
#[case::other_effect(
    json!([{"key": "gpu", "effect": "NoSchedule"}]),
    json!([{"key": "gpu", "operator": "Exists", "effect": "NoExecute"}]),
    false
)]
#[case::everything(json!([{"key": "gpu", "effect": "NoSchedule"}]), json!([{"operator": "Exists"}]), true)]
#[case::starting_node(
    json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
           {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"}]),
    json!([]),
    true
)]
fn taints_are_held_against_tolerations(
    #[case] taints: Value,
    #[case] tolerations: Value,
    #[case] runs: bool,
) {
    let n = node(json!({}), taints, ROOMY());
    let p = pod(json!({"containers": [{"name": "c"}], "tolerations": tolerations}));
    assert_eq!(p.could_run_on(&n), runs);
}

#[rstest]
#[case::selector_matches(json!({"nodeSelector": {"pool": "gpu"}}), true)]
#[case::selector_differs(json!({"nodeSelector": {"pool": "cpu"}}), false)]
#[case::selector_label_missing(json!({"nodeSelector": {"zone": "a"}}), false)]
#[case::in_(affinity(json!([{"key": "pool", "operator": "In", "values": ["cpu", "gpu"]}])), true)]
#[case::not_in(affinity(json!([{"key": "pool", "operator": "NotIn", "values": ["gpu"]}])), false)]
#[case::not_in_absent(affinity(json!([{"key": "zone", "operator": "NotIn", "values": ["a"]}])), true)]
#[case::exists(affinity(json!([{"key": "pool", "operator": "Exists"}])), true)]
#[case::does_not_exist(affinity(json!([{"key": "pool", "operator": "DoesNotExist"}])), false)]
#[case::gt(affinity(json!([{"key": "gen", "operator": "Gt", "values": ["4"]}])), true)]
#[case::lt(affinity(json!([{"key": "gen", "operator": "Lt", "values": ["4"]}])), false)]
#[case::every_requirement_of_a_term(
    affinity(json!([{"key": "pool", "operator": "Exists"}, {"key": "zone", "operator": "Exists"}])),
    false
)]
#[case::by_name(json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
    {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}}), true)]
#[case::any_term(json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
    {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gpu"]}]}]}}}}), true)]
#[case::an_empty_term_selects_nothing(json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
    {"nodeSelectorTerms": [{}]}}}}), false)]
fn selectors_and_required_affinity_pick_nodes_by_label(#[case] spec: Value, #[case] runs: bool) {
    let n = node(json!({"pool": "gpu", "gen": "5"}), json!([]), ROOMY());
    let mut spec = spec;
    spec["containers"] = json!([{"name": "c"}]);
    assert_eq!(pod(spec).could_run_on(&n), runs);
}

fn affinity(expressions: Value) -> Value {
    json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchExpressions": expressions}]}}}})
}

#[rstest]
#[case("3", 3.0)]
#[case("3000m", 3.0)]
#[case("1.5Gi", 1.5 * 1024.0 * 1024.0 * 1024.0)]
#[case("16Mi", 16.0 * 1024.0 * 1024.0)]
#[case("10G", 1e10)]
#[case("1k", 1000.0)]
#[case("2E", 2e18)]
#[case("1e3", 1000.0)]
#[case("5e-3", 0.005)]
fn quantities_are_read_with_their_suffix(#[case] text: &str, #[case] value: f64) {
    assert_eq!(quantity(text), Some(value));
}

#[test]
fn a_request_that_is_not_a_quantity_is_named() {
    let spec: PodSpec = serde_json::from_value(json!({"containers": [
        {"name": "main", "resources": {"requests": {"cpu": "lots"}}},
    ]}))
    .expect("pod spec");
    let err = PodNeeds::of(&spec).expect_err("not a quantity");
    assert!(
        err.contains("main") && err.contains("cpu") && err.contains("lots"),
        "{err}"
    );
}
