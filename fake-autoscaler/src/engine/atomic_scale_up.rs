//! `best-effort-atomic-scale-up.autoscaling.x-k8s.io`: the request fits the nodes there are (and
//! those on their way), or the node groups add every node it needs, or none.

use std::collections::BTreeMap;

use api::autoscaling::ProvisioningRequest;
use api::constants::{provreq_condition as cond, provreq_reason as reason};

use super::next::Next;
use super::node_groups::never_fits;
use super::objects::{condition, uid};
use super::{Autoscaler, StepState, World};
use crate::capacity::{PodGroup, plan_scale_up};
use crate::messages;

impl Autoscaler {
    pub(super) fn atomic_scale_up(
        &mut self,
        world: &World,
        request: &ProvisioningRequest,
        pods: &[PodGroup],
        next: &mut Next,
        step: &mut StepState,
    ) {
        if condition(request, cond::ACCEPTED).is_none() {
            next.set(cond::ACCEPTED, "True", reason::ACCEPTED, messages::ACCEPTED);
        }
        // Its scale-up was asked for (or is done) but the write saying so was lost: say it again.
        // Its nodes are held for it (`simulate_existing`), so they would not be found free.
        let own_scale_up = self.pending.iter().any(|p| p.uid == uid(request))
            || self.scaled_up.contains_key(uid(request));
        if own_scale_up && self.broken.provisions_own_scale_up() {
            self.provisioned(next, reason::CAPACITY_IS_PROVISIONED);
            return;
        }
        if !self.retry_due(request, step) {
            return;
        }
        if step.try_place(pods, true) {
            self.provisioned(next, reason::CAPACITY_IS_FOUND);
            return;
        }
        let plan = plan_scale_up(
            &step.sim,
            pods,
            &self.rooms(world, step, |_| BTreeMap::new()),
        );
        let refused = plan.nodes.keys().any(|g| {
            self.config
                .node_group(g)
                .is_some_and(|g| g.fail_scale_up.is_some())
        });
        let partial = self.broken.scales_up_partly(&plan);
        if (plan.complete || partial) && !refused {
            self.request_nodes(request, &plan.nodes, &BTreeMap::new(), step);
            if plan.complete {
                step.try_place(pods, true);
                self.provisioned(next, reason::CAPACITY_IS_PROVISIONED);
                return;
            }
        }
        let never_fits = || never_fits(&self.config, world, pods, |_| BTreeMap::new(), &step.time);
        if self.broken.provisions_unfit(request, never_fits) {
            self.provisioned(next, reason::CAPACITY_IS_PROVISIONED);
            return;
        }
        self.not_found(request, next, step);
    }
}
