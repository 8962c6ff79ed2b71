//! The simulation before any decision: the nodes (and those on their way), minus the pods bound
//! to them, minus the capacity booked by provisioned requests and held by scale-ups in flight.

use std::collections::BTreeMap;

use api::constants::provreq_condition as cond;

use super::objects::{bound_node, consumed, is_ready, is_true, request_pods, uid, unconsumed};
use super::{Autoscaler, Key, StepState, World};
use crate::capacity::{PodGroup, PodShape, Sim, SimNode};
use crate::nodes;

impl Autoscaler {
    pub(super) fn simulate_existing(&mut self, world: &World, step: &mut StepState) {
        let mut sim_nodes: Vec<SimNode> = world
            .nodes
            .values()
            .filter(|n| n.metadata.deletion_timestamp.is_none() && is_ready(n))
            .chain(step.created.iter())
            .map(SimNode::from_node)
            .collect();
        for p in &self.pending {
            if let Some(group) = self.config.node_group(&p.group) {
                for i in 0..p.missing(world, step) {
                    let name = format!("{}~pending-{}-{i}", p.group, p.request.1);
                    let node = nodes::render(group, &name, &p.labels, step.time.clone());
                    sim_nodes.push(SimNode::from_node(&node).upcoming());
                }
            }
        }
        step.sim = Sim::new(sim_nodes);
        for pod in world.pods.values() {
            let Some(node) = bound_node(pod) else {
                continue;
            };
            step.needed.insert(node.to_string());
            if let Some(shape) = pod.spec.as_ref().and_then(|s| PodShape::from_spec(s).ok()) {
                step.sim.occupy(node, &shape);
            }
        }
        let mut booked: BTreeMap<Key, Vec<PodGroup>> = BTreeMap::new();
        for (key, request) in &world.requests {
            // A vendor request whose nodes just came up holds them before it is marked provisioned.
            let holds = self.handler(request).is_some()
                && self.broken.books(request)
                && (self.is_booked(request)
                    || self.pending.iter().any(|p| &p.request == key)
                    || (self.scaled_up.contains_key(uid(request))
                        && !is_true(request, cond::PROVISIONED)));
            if !holds {
                continue;
            }
            if let Ok(pods) = request_pods(request, world) {
                let unconsumed = unconsumed(&pods, consumed(request, world));
                booked.insert(key.clone(), unconsumed);
            }
        }
        let booking_time = self.config.timing.booking_time.get();
        self.broken
            .hold_deleted_bookings(world, &mut booked, booking_time, step);
        for pods in booked.values() {
            let placement = step.sim.place_all(pods, true);
            step.needed.extend(placement.nodes);
        }
    }
}
