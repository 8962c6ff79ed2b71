//! The scheduling simulation: do a request's pods fit on the nodes there are, and if not, which
//! nodes would an all-or-nothing scale-up add? Pure functions over nodes and pod shapes, as the
//! Cluster Autoscaler's own simulation works on a snapshot of the cluster.
//!
//! A pod fits a node when the node is schedulable, the pod's nodeSelector and required node
//! affinity match the node's labels, the pod tolerates the node's NoSchedule and NoExecute taints,
//! and every resource the pod requests (plus one `pods` slot) is free on the node. Pods are placed
//! first-fit, in node order, as a scheduler with bin-packing would.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Node, NodeSelector, PodSpec, Taint, Toleration};
use support::pod::{pod_requests, requirement_matches, tolerates};
use support::quantity::Amount;

/// The `pods` resource: how many pods a node can run.
pub const PODS: &str = "pods";

/// What a node has left.
#[derive(Clone, Debug, PartialEq)]
pub struct SimNode {
    pub name: String,
    labels: BTreeMap<String, String>,
    taints: Vec<Taint>,
    unschedulable: bool,
    free: BTreeMap<String, Amount>,
    /// A node requested from the cloud provider and not there yet.
    upcoming: bool,
}

impl SimNode {
    /// A node as it is: its allocatable resources (or capacity, when allocatable is not reported).
    pub fn from_node(node: &Node) -> SimNode {
        let status = node.status.as_ref();
        let resources = status
            .and_then(|s| s.allocatable.as_ref().or(s.capacity.as_ref()))
            .cloned()
            .unwrap_or_default();
        let spec = node.spec.as_ref();
        SimNode {
            name: node.metadata.name.clone().unwrap_or_default(),
            labels: node.metadata.labels.clone().unwrap_or_default(),
            taints: spec.and_then(|s| s.taints.clone()).unwrap_or_default(),
            unschedulable: spec.and_then(|s| s.unschedulable).unwrap_or(false),
            free: resources
                .iter()
                .filter_map(|(name, q)| Some((name.clone(), Amount::from_quantity(q).ok()?)))
                .collect(),
            upcoming: false,
        }
    }

    /// The same node, still on its way.
    pub fn upcoming(mut self) -> SimNode {
        self.upcoming = true;
        self
    }

    /// Whether the pod may run here at all, resources aside.
    pub fn admits(&self, pod: &PodShape) -> bool {
        !self.unschedulable
            && pod
                .node_selector
                .iter()
                .all(|(k, v)| self.labels.get(k) == Some(v))
            && pod.affinity.as_ref().is_none_or(|a| self.matches(a))
            && self
                .taints
                .iter()
                .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
                .all(|taint| pod.tolerations.iter().any(|t| tolerates(t, taint)))
    }

    /// Required node affinity: terms ORed, each term's expressions and fields ANDed; an empty term
    /// matches nothing, as in Kubernetes. The only field is `metadata.name`.
    fn matches(&self, affinity: &NodeSelector) -> bool {
        let fields = BTreeMap::from([("metadata.name".to_string(), self.name.clone())]);
        affinity.node_selector_terms.iter().any(|term| {
            let expressions = term.match_expressions.as_deref().unwrap_or_default();
            let field_rules = term.match_fields.as_deref().unwrap_or_default();
            !(expressions.is_empty() && field_rules.is_empty())
                && expressions
                    .iter()
                    .all(|e| requirement_matches(e, &self.labels))
                && field_rules.iter().all(|f| requirement_matches(f, &fields))
        })
    }

    /// Whether the pod's requests are free here.
    pub fn has_room(&self, pod: &PodShape) -> bool {
        pod.requests.iter().all(|(name, wanted)| {
            wanted.is_zero()
                || self
                    .free
                    .get(name)
                    .is_some_and(|free| !free.saturating_sub(wanted).is_negative())
        })
    }

    /// Takes the pod's requests (never below zero: a pod the kubelet already runs counts whole).
    pub fn take(&mut self, pod: &PodShape) {
        for (name, wanted) in &pod.requests {
            if let Some(free) = self.free.get_mut(name) {
                *free = free.saturating_sub(wanted).clamp_non_negative();
            }
        }
    }
}

/// One pod's needs: requests and where it may run.
#[derive(Clone, Debug, PartialEq)]
pub struct PodShape {
    requests: BTreeMap<String, Amount>,
    node_selector: BTreeMap<String, String>,
    affinity: Option<NodeSelector>,
    tolerations: Vec<Toleration>,
}

impl PodShape {
    /// From a pod spec (a PodTemplate's or a Pod's). Fails on a quantity Kubernetes would not read.
    pub fn from_spec(spec: &PodSpec) -> Result<PodShape, String> {
        let mut requests = pod_requests(spec).map_err(|e| e.to_string())?;
        requests.insert(
            PODS.to_string(),
            Amount::parse("1").map_err(|e| e.to_string())?,
        );
        Ok(PodShape {
            requests,
            node_selector: spec.node_selector.clone().unwrap_or_default(),
            affinity: spec
                .affinity
                .as_ref()
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(|n| {
                    n.required_during_scheduling_ignored_during_execution
                        .clone()
                }),
            tolerations: spec.tolerations.clone().unwrap_or_default(),
        })
    }
}

/// Pods of one shape, and how many.
pub type PodGroup = (PodShape, u32);

/// The nodes of a simulation, with what is left on each.
#[derive(Clone, Debug, Default)]
pub struct Sim {
    nodes: Vec<SimNode>,
}

/// Where a group of pods went.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Placement {
    /// How many pods found a node.
    pub placed: u32,
    /// How many did not.
    pub unplaced: u32,
    /// The nodes used.
    pub nodes: BTreeSet<String>,
}

impl Placement {
    pub fn complete(&self) -> bool {
        self.unplaced == 0
    }
}

impl Sim {
    /// Nodes in name order (the order pods are placed in).
    pub fn new(mut nodes: Vec<SimNode>) -> Sim {
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        Sim { nodes }
    }

    pub fn add(&mut self, node: SimNode) {
        self.nodes.push(node);
    }

    /// Subtracts a pod that already runs on `node`.
    pub fn occupy(&mut self, node: &str, pod: &PodShape) {
        if let Some(n) = self.nodes.iter_mut().find(|n| n.name == node) {
            n.take(pod);
        }
    }

    /// Places one pod on the first node that admits it and has room (among the upcoming nodes too,
    /// when `upcoming` says so).
    pub fn place(&mut self, pod: &PodShape, upcoming: bool) -> Option<&str> {
        let node = self
            .nodes
            .iter_mut()
            .find(|n| (upcoming || !n.upcoming) && n.admits(pod) && n.has_room(pod))?;
        node.take(pod);
        Some(&node.name)
    }

    /// Places as many of the pods as fit, taking their room.
    pub fn place_all(&mut self, pods: &[PodGroup], upcoming: bool) -> Placement {
        let mut placement = Placement::default();
        for (shape, count) in pods {
            for placed in 0..*count {
                match self.place(shape, upcoming) {
                    Some(node) => {
                        placement.placed += 1;
                        placement.nodes.insert(node.to_string());
                    }
                    None => {
                        // Room only shrinks: the rest of this shape cannot fit either.
                        placement.unplaced += count - placed;
                        break;
                    }
                }
            }
        }
        placement
    }
}

/// A node group as the planner sees it: a fresh node's shape and how many more nodes it may add.
#[derive(Clone, Debug)]
pub struct GroupRoom {
    pub name: String,
    pub fresh_node: SimNode,
    pub room: u32,
}

/// A scale-up: nodes to add per group, in group order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub nodes: BTreeMap<String, u32>,
    /// Whether the plan fits every pod (an all-or-nothing class acts only on a complete plan).
    pub complete: bool,
}

impl Plan {
    pub fn total(&self) -> u32 {
        self.nodes.values().sum()
    }
}

/// The nodes to add so that every pod fits: pods go to existing room first, then to nodes already
/// planned, then to a new node of the first group (in configuration order) whose fresh node takes
/// the pod and that is below its maximum size.
pub fn plan_scale_up(sim: &Sim, pods: &[PodGroup], groups: &[GroupRoom]) -> Plan {
    let mut sim = sim.clone();
    let mut room: Vec<u32> = groups.iter().map(|g| g.room).collect();
    let mut plan = Plan {
        complete: true,
        ..Plan::default()
    };
    for (shape, count) in pods {
        for _ in 0..*count {
            if sim.place(shape, true).is_some() {
                continue;
            }
            let group = groups.iter().enumerate().find(|(i, g)| {
                room[*i] > 0 && g.fresh_node.admits(shape) && g.fresh_node.has_room(shape)
            });
            match group {
                Some((i, g)) => {
                    room[i] -= 1;
                    *plan.nodes.entry(g.name.clone()).or_default() += 1;
                    let mut node = g.fresh_node.clone();
                    node.name = format!("{}~planned-{}", g.name, plan.nodes[&g.name]);
                    node.take(shape);
                    sim.add(node);
                }
                None => {
                    // Neither room nor a group for this pod: nor for the rest of its shape.
                    plan.complete = false;
                    break;
                }
            }
        }
    }
    plan
}

#[cfg(test)]
#[path = "capacity_tests.rs"]
mod tests;
