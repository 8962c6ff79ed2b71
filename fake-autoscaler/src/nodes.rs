//! The fake Node objects of a node group: what they look like in the API server, and their names.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeCondition, NodeSpec, NodeStatus};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};

use crate::config::NodeGroup;

/// The label naming the node group a fake node belongs to. Nodes without it are never touched.
pub const NODE_GROUP_LABEL: &str = "tollgate.dev/node-group";
/// The kubelet's default pod limit, used when a machine does not say.
const DEFAULT_PODS: &str = "110";

/// A node of `group` named `name`, Ready, with the group's machine as capacity and allocatable.
/// `extra_labels` are the labels of the request it was created for (vendor classes).
pub fn render(
    group: &NodeGroup,
    name: &str,
    extra_labels: &BTreeMap<String, String>,
    now: Time,
) -> Node {
    let mut labels = group.labels.clone();
    labels.extend(extra_labels.clone());
    labels.insert("kubernetes.io/hostname".into(), name.to_string());
    labels.insert(NODE_GROUP_LABEL.into(), group.name.clone());
    let mut resources = group.machine.clone();
    resources
        .entry(crate::capacity::PODS.to_string())
        .or_insert_with(|| Quantity(DEFAULT_PODS.into()));
    Node {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            labels: Some(labels),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            provider_id: Some(format!("tollgate://{}/{name}", group.name)),
            taints: (!group.taints.is_empty()).then(|| group.taints.clone()),
            ..NodeSpec::default()
        }),
        status: Some(NodeStatus {
            capacity: Some(resources.clone()),
            allocatable: Some(resources),
            conditions: Some(vec![NodeCondition {
                type_: "Ready".into(),
                status: "True".into(),
                reason: Some("KubeletReady".into()),
                message: Some("kubelet is posting ready status".into()),
                last_heartbeat_time: Some(now.clone()),
                last_transition_time: Some(now),
            }]),
            ..NodeStatus::default()
        }),
    }
}

/// The group a node belongs to, if the fake autoscaler made it.
pub fn group_of(node: &Node) -> Option<&str> {
    node.metadata
        .labels
        .as_ref()?
        .get(NODE_GROUP_LABEL)
        .map(String::as_str)
}

/// Names for `count` new nodes of `group`: `{group}-{n}` with n counting on from the highest
/// number in use, so that names are never reused while an old node may still be terminating.
pub fn next_names<'a>(
    group: &str,
    taken: impl IntoIterator<Item = &'a str>,
    count: u32,
) -> Vec<String> {
    let prefix = format!("{group}-");
    let highest = taken
        .into_iter()
        .filter_map(|n| n.strip_prefix(&prefix)?.parse::<u32>().ok())
        .max();
    let first = highest.map_or(0, |h| h + 1);
    (first..first + count)
        .map(|n| format!("{group}-{n}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_count_on_from_the_highest_in_use() {
        assert_eq!(next_names("gpu", [], 2), ["gpu-0", "gpu-1"]);
        assert_eq!(
            next_names("gpu", ["gpu-0", "gpu-3", "cpu-9", "gpu-x"], 2),
            ["gpu-4", "gpu-5"]
        );
    }
}
