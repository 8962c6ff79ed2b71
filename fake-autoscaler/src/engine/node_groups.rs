//! The node groups: scale-ups asked of the "cloud provider" and the Nodes they become, groups
//! kept at their minimum size, room left below their maximum, and scale-down of unneeded nodes.
//! Shared by every class that adds nodes.

use std::collections::{BTreeMap, BTreeSet};

use api::autoscaling::ProvisioningRequest;
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::objects::{key_of, name, plus, uid};
use super::{Action, Autoscaler, Key, StepState, World};
use crate::capacity::{GroupRoom, PodGroup, Sim, SimNode, plan_scale_up};
use crate::config::{Config, NodeGroup};
use crate::nodes;

/// Nodes requested from the cloud provider and not there yet.
#[derive(Clone, Debug)]
pub(super) struct PendingScaleUp {
    pub(super) request: Key,
    pub(super) uid: String,
    pub(super) group: String,
    count: u32,
    ready_at: Timestamp,
    pub(super) labels: BTreeMap<String, String>,
    /// The Nodes' names, once their creation was asked for. The scale-up is over when they exist.
    names: Vec<String>,
}

impl PendingScaleUp {
    /// How many of its nodes are still to appear.
    pub(super) fn missing(&self, world: &World, step: &StepState) -> u32 {
        if self.names.is_empty() {
            return self.count;
        }
        self.names
            .iter()
            .filter(|n| !world.nodes.contains_key(*n) && !step.created_named(n))
            .count() as u32
    }
}

/// Whether the pods could not fit even with nothing else running: on every node there is, empty,
/// and on every group grown to its maximum size. `labels` as for [`Autoscaler::rooms`].
pub(super) fn never_fits(
    config: &Config,
    world: &World,
    pods: &[PodGroup],
    labels: impl Fn(&str) -> BTreeMap<String, String>,
    time: &Time,
) -> bool {
    let existing: Vec<_> = world
        .nodes
        .values()
        .filter(|n| n.metadata.deletion_timestamp.is_none())
        .collect();
    let empty = Sim::new(existing.iter().map(|n| SimNode::from_node(n)).collect());
    let rooms: Vec<GroupRoom> = config
        .node_groups
        .iter()
        .map(|g| {
            let have = existing
                .iter()
                .filter(|n| nodes::group_of(n) == Some(g.name.as_str()))
                .count() as u32;
            group_room(g, &labels(&g.name), have, time)
        })
        .collect();
    !plan_scale_up(&empty, pods, &rooms).complete
}

/// What a group can still add: up to its maximum beside the `have` nodes it has, each like a
/// fresh node with `labels`.
fn group_room(
    group: &NodeGroup,
    labels: &BTreeMap<String, String>,
    have: u32,
    time: &Time,
) -> GroupRoom {
    let fresh = nodes::render(group, &group.name, labels, time.clone());
    GroupRoom {
        name: group.name.clone(),
        fresh_node: SimNode::from_node(&fresh),
        room: group.max_size.saturating_sub(have),
    }
}

impl Autoscaler {
    /// Finishes due scale-ups and brings groups up to their minimum size.
    pub(super) fn grow(&mut self, world: &World, step: &mut StepState) {
        let mut pending = std::mem::take(&mut self.pending);
        for p in &mut pending {
            if p.ready_at > step.now {
                step.wake_at(p.ready_at);
                continue;
            }
            if p.names.is_empty() {
                p.names = self.create_nodes(world, step, &p.group, p.count, &p.labels);
                continue;
            }
            // Asked for before and still missing: the create failed; ask again.
            let Some(config) = self.config.node_group(&p.group) else {
                continue;
            };
            for name in p.names.iter().filter(|n| !world.nodes.contains_key(*n)) {
                let node = nodes::render(config, name, &p.labels, step.time.clone());
                step.created.push(node.clone());
                step.actions.push(Action::CreateNode(Box::new(node)));
            }
        }
        // A scale-up is over once all its nodes exist.
        let (done, waiting): (Vec<_>, Vec<_>) = pending.into_iter().partition(|p| {
            !p.names.is_empty() && p.names.iter().all(|n| world.nodes.contains_key(n))
        });
        self.pending = waiting;
        for scale_up in done {
            self.scaled_up.insert(scale_up.uid, scale_up.group);
        }
        for group in self.config.node_groups.clone() {
            let have = self.group_size(world, &group.name, step);
            if have < group.min_size {
                self.create_nodes(
                    world,
                    step,
                    &group.name,
                    group.min_size - have,
                    &BTreeMap::new(),
                );
            }
        }
    }

    /// Asks for `count` new nodes of `group`; returns their names.
    fn create_nodes(
        &self,
        world: &World,
        step: &mut StepState,
        group: &str,
        count: u32,
        labels: &BTreeMap<String, String>,
    ) -> Vec<String> {
        let Some(config) = self.config.node_group(group) else {
            return vec![];
        };
        let taken: Vec<&str> = world
            .nodes
            .keys()
            .map(String::as_str)
            .chain(
                step.created
                    .iter()
                    .map(|n| n.metadata.name.as_deref().unwrap_or("")),
            )
            .collect();
        let names = nodes::next_names(group, taken, count);
        for name in &names {
            let node = nodes::render(config, name, labels, step.time.clone());
            step.created.push(node.clone());
            step.actions.push(Action::CreateNode(Box::new(node)));
        }
        names
    }

    /// Nodes of a group: existing (not being deleted), created this step, and on their way.
    fn group_size(&self, world: &World, group: &str, step: &StepState) -> u32 {
        let existing = world
            .nodes
            .values()
            .filter(|n| n.metadata.deletion_timestamp.is_none())
            .chain(step.created.iter())
            .filter(|n| nodes::group_of(n) == Some(group))
            .count() as u32;
        let pending: u32 = self
            .pending
            .iter()
            .filter(|p| p.group == group)
            .map(|p| p.missing(world, step))
            .sum();
        existing + pending
    }

    /// How many more nodes each group may add, with a fresh node's shape.
    /// `labels` are those a class puts on the nodes it creates for the request.
    pub(super) fn rooms(
        &self,
        world: &World,
        step: &StepState,
        labels: impl Fn(&str) -> BTreeMap<String, String>,
    ) -> Vec<GroupRoom> {
        self.config
            .node_groups
            .iter()
            .map(|g| {
                let have = self.group_size(world, &g.name, step);
                group_room(g, &labels(&g.name), have, &step.time)
            })
            .collect()
    }

    /// Asks the "cloud provider" for nodes; they join the simulation at once, as CA's upcoming
    /// nodes do. Returns when they will be Ready.
    pub(super) fn request_nodes(
        &mut self,
        request: &ProvisioningRequest,
        plan: &BTreeMap<String, u32>,
        labels: &BTreeMap<String, String>,
        step: &mut StepState,
    ) -> Timestamp {
        let mut ready = step.now;
        for (group, count) in plan {
            let Some(config) = self.config.node_group(group) else {
                continue;
            };
            let ready_at = plus(step.now, config.scale_up_delay.get());
            ready = ready.max(ready_at);
            for i in 0..*count {
                let name = format!("{group}~pending-{}-{i}", name(request));
                let node = nodes::render(config, &name, labels, step.time.clone());
                step.sim.add(SimNode::from_node(&node).upcoming());
            }
            self.pending.push(PendingScaleUp {
                request: key_of(request),
                uid: uid(request).to_string(),
                group: group.clone(),
                count: *count,
                ready_at,
                labels: labels.clone(),
                names: vec![],
            });
            step.wake_at(ready_at);
        }
        ready
    }

    /// Removes nodes the autoscaler added that have had no pods and no bookings for long enough,
    /// never going below a group's minimum size.
    pub(super) fn shrink(&mut self, world: &World, step: &mut StepState) {
        let unneeded_time = self.config.timing.scale_down_unneeded_time.get();
        let mut sizes: BTreeMap<String, u32> = self
            .config
            .node_groups
            .iter()
            .map(|g| (g.name.clone(), self.group_size(world, &g.name, step)))
            .collect();
        let mut seen = BTreeSet::new();
        for (name, node) in &world.nodes {
            let Some(group) = nodes::group_of(node) else {
                continue;
            };
            let Some(config) = self.config.node_group(group) else {
                continue;
            };
            if node.metadata.deletion_timestamp.is_some() {
                continue;
            }
            seen.insert(name.clone());
            if step.needed.contains(name) {
                self.unneeded_since.remove(name);
                continue;
            }
            let since = *self.unneeded_since.entry(name.clone()).or_insert(step.now);
            let due = plus(since, unneeded_time);
            let size = sizes.entry(group.to_string()).or_default();
            if *size <= config.min_size {
                continue;
            }
            if due <= step.now {
                *size -= 1;
                step.actions.push(Action::DeleteNode(name.clone()));
            } else {
                step.wake_at(due);
            }
        }
        self.unneeded_since.retain(|n, _| seen.contains(n));
    }
}
