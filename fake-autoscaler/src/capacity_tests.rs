use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, Container, NodeAffinity, NodeSelectorRequirement, NodeSelectorTerm,
    ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use rstest::rstest;

use super::*;
use crate::config::Config;
use crate::nodes;

fn node(yaml_group: &str, name: &str) -> SimNode {
    let config = Config::parse(&format!("nodeGroups: [{yaml_group}]")).expect("config");
    let time = Time("2026-01-01T00:00:00Z".parse().expect("time"));
    SimNode::from_node(&nodes::render(
        &config.node_groups[0],
        name,
        &BTreeMap::new(),
        time,
    ))
}

fn pod(requests: &[(&str, &str)]) -> PodSpec {
    PodSpec {
        containers: vec![Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: Some(
                    requests
                        .iter()
                        .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                        .collect(),
                ),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn shape(spec: &PodSpec) -> PodShape {
    PodShape::from_spec(spec).expect("shape")
}

const GPU: &str = "{name: gpu, machine: {cpu: '8', nvidia.com/gpu: '4'}, labels: {zone: a}, \
                   taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}], maxSize: 2}";

#[rstest]
#[case::untolerated_taint(pod(&[("cpu", "1")]), false)]
#[case::tolerated(
    PodSpec { tolerations: Some(vec![k8s_openapi::api::core::v1::Toleration {
        key: Some("nvidia.com/gpu".into()), operator: Some("Exists".into()), ..Default::default() }]),
        ..pod(&[("cpu", "1")]) },
    true
)]
fn taints_need_tolerations(#[case] spec: PodSpec, #[case] admitted: bool) {
    assert_eq!(node(GPU, "gpu-0").admits(&shape(&spec)), admitted);
}

#[rstest]
#[case::selector_matches(&[("zone", "a")], None, true)]
#[case::selector_differs(&[("zone", "b")], None, false)]
#[case::selector_key_missing(&[("pool", "x")], None, false)]
#[case::affinity_in(&[], Some(("zone", "In", "a")), true)]
#[case::affinity_not_in(&[], Some(("zone", "NotIn", "a")), false)]
#[case::affinity_exists_elsewhere(&[], Some(("pool", "Exists", "")), false)]
#[case::affinity_on_the_node_name(&[], Some(("metadata.name", "In", "n-0")), true)]
fn node_selector_and_affinity(
    #[case] selector: &[(&str, &str)],
    #[case] affinity: Option<(&str, &str, &str)>,
    #[case] admitted: bool,
) {
    let untainted = "{name: n, machine: {cpu: '8'}, labels: {zone: a}, maxSize: 1}";
    let mut spec = pod(&[("cpu", "1")]);
    spec.node_selector = Some(
        selector
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    spec.affinity = affinity.map(|(key, operator, value)| {
        let requirement = NodeSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: (!value.is_empty()).then(|| vec![value.to_string()]),
        };
        let term = if key == "metadata.name" {
            NodeSelectorTerm {
                match_fields: Some(vec![requirement]),
                ..Default::default()
            }
        } else {
            NodeSelectorTerm {
                match_expressions: Some(vec![requirement]),
                ..Default::default()
            }
        };
        required(vec![term])
    });
    assert_eq!(node(untainted, "n-0").admits(&shape(&spec)), admitted);
}

#[test]
fn resources_are_taken_and_unknown_resources_do_not_fit() {
    let mut n = node(
        "{name: n, machine: {cpu: '2', memory: 4Gi, pods: '3'}, maxSize: 1}",
        "n-0",
    );
    let half = shape(&pod(&[("cpu", "1"), ("memory", "2Gi")]));
    assert!(n.has_room(&half));
    n.take(&half);
    n.take(&half);
    assert!(!n.has_room(&half), "cpu is used up");
    let tiny = shape(&pod(&[]));
    assert!(n.has_room(&tiny), "one pod slot left");
    n.take(&tiny);
    assert!(!n.has_room(&tiny), "pods is used up");
    let gpu = shape(&pod(&[("nvidia.com/gpu", "1")]));
    assert!(!node("{name: m, machine: {cpu: '2'}, maxSize: 1}", "m-0").has_room(&gpu));
}

#[test]
fn placement_is_first_fit_in_node_name_order() {
    let group = "{name: n, machine: {cpu: '4'}, maxSize: 3}";
    let mut sim = Sim::new(vec![node(group, "n-1"), node(group, "n-0")]);
    let placement = sim.place_all(&[(shape(&pod(&[("cpu", "3")])), 3)], true);
    assert_eq!(placement.placed, 2);
    assert_eq!(placement.unplaced, 1);
    assert_eq!(
        placement.nodes.into_iter().collect::<Vec<_>>(),
        ["n-0", "n-1"]
    );
}

fn room(name: &str, group: &str, room: u32) -> GroupRoom {
    GroupRoom {
        name: name.into(),
        fresh_node: node(group, "fresh"),
        room,
    }
}

#[test]
fn scale_up_plans_use_existing_room_first_then_groups_in_order() {
    let small = "{name: small, machine: {cpu: '2'}, maxSize: 5}";
    let big = "{name: big, machine: {cpu: '8'}, maxSize: 5}";
    let groups = [room("small", small, 5), room("big", big, 1)];
    let sim = Sim::new(vec![node(small, "small-0")]);
    // Five 2-CPU pods: one on the existing node, four on new small nodes.
    let plan = plan_scale_up(&sim, &[(shape(&pod(&[("cpu", "2")])), 5)], &groups);
    assert!(plan.complete);
    assert_eq!(plan.nodes, BTreeMap::from([("small".to_string(), 4)]));
    // A 6-CPU pod only fits the big group, which has room for one node.
    let plan = plan_scale_up(&sim, &[(shape(&pod(&[("cpu", "6")])), 2)], &groups);
    assert!(!plan.complete);
    assert_eq!(plan.nodes, BTreeMap::from([("big".to_string(), 1)]));
    assert_eq!(plan.total(), 1);
}

fn required(terms: Vec<NodeSelectorTerm>) -> Affinity {
    Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: terms,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[test]
fn an_empty_affinity_term_matches_no_node() {
    let mut spec = pod(&[("cpu", "1")]);
    spec.affinity = Some(required(vec![NodeSelectorTerm::default()]));
    let n = node("{name: n, machine: {cpu: '8'}, maxSize: 1}", "n-0");
    assert!(!n.admits(&shape(&spec)));
}

#[test]
fn upcoming_nodes_count_only_when_asked() {
    let group = "{name: n, machine: {cpu: '4'}, maxSize: 2}";
    let mut sim = Sim::new(vec![node(group, "n-0").upcoming()]);
    let one = [(shape(&pod(&[("cpu", "1")])), 1)];
    assert_eq!(sim.place_all(&one, false).unplaced, 1);
    assert_eq!(sim.place_all(&one, true).placed, 1);
}

#[test]
fn a_huge_count_stops_at_the_first_pod_that_does_not_fit() {
    let group = "{name: n, machine: {cpu: '4'}, maxSize: 1}";
    let mut sim = Sim::new(vec![node(group, "n-0")]);
    let placement = sim.place_all(&[(shape(&pod(&[("cpu", "1")])), i32::MAX as u32)], true);
    assert_eq!(
        (placement.placed, placement.unplaced),
        (4, i32::MAX as u32 - 4)
    );
    let rooms = [room("n", group, 3)];
    let plan = plan_scale_up(
        &sim,
        &[(shape(&pod(&[("cpu", "1")])), i32::MAX as u32)],
        &rooms,
    );
    assert!(!plan.complete);
    assert_eq!(plan.total(), 3);
}
