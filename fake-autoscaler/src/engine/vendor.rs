//! The vendor-like class, after GKE's queued provisioning: `Accepted=False` at pick-up, queued
//! after `queueDelay`, provisioned with `provisioningClassDetails` (and an ETA while its nodes
//! come up), Failed after `ValidUntilSeconds`, `CapacityRevoked` after `maxRunDurationSeconds`.
//! A queued request waits for capacity without backoff.

use std::time::Duration;

use api::autoscaling::ProvisioningRequest;
use api::constants::{provreq_condition as cond, provreq_reason as reason};
use jiff::Timestamp;

use super::next::Next;
use super::node_groups::never_fits;
use super::objects::{condition, parameter_seconds, plus, render_all, uid};
use super::{Autoscaler, Key, StepState, World};
use crate::capacity::{PodGroup, plan_scale_up};
use crate::config::ClassConfig;
use crate::messages;

/// Fails a request not provisioned within its `ValidUntilSeconds`; true when it did.
pub(super) fn wait_time_exceeded(
    request: &ProvisioningRequest,
    created: Timestamp,
    next: &mut Next,
    step: &mut StepState,
) -> bool {
    let Some(seconds) = parameter_seconds(request, "ValidUntilSeconds") else {
        return false;
    };
    let until = plus(created, Duration::from_secs(seconds));
    if until <= step.now {
        next.set(
            cond::FAILED,
            "True",
            reason::WAIT_TIME_EXCEEDED,
            &messages::vendor_wait_time_exceeded(seconds),
        );
        return true;
    }
    step.wake_at(until);
    false
}

impl Autoscaler {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn vendor(
        &mut self,
        world: &World,
        key: &Key,
        request: &ProvisioningRequest,
        class: &ClassConfig,
        pods: &[PodGroup],
        next: &mut Next,
        step: &mut StepState,
    ) {
        let Some(accepted) = condition(request, cond::ACCEPTED) else {
            next.set(
                cond::ACCEPTED,
                "False",
                reason::NOT_ACCEPTED,
                messages::VENDOR_NOT_ACCEPTED,
            );
            next.set(
                cond::PROVISIONED,
                "False",
                reason::NOT_PROVISIONED,
                messages::VENDOR_NOT_PROVISIONED,
            );
            let delay = class.queue_delay.map(|d| d.get()).unwrap_or_default();
            step.wake_at(plus(step.now, delay));
            return;
        };
        if accepted.status != "True" {
            let delay = class.queue_delay.map(|d| d.get()).unwrap_or_default();
            let due = plus(self.broken.since(request, accepted), delay);
            if due > step.now {
                step.wake_at(due);
                return;
            }
            next.set(
                cond::ACCEPTED,
                "True",
                reason::SUCCESSFULLY_QUEUED,
                messages::VENDOR_QUEUED,
            );
        }
        if self.pending.iter().any(|p| &p.request == key) {
            return;
        }
        let group = match self.scaled_up.get(uid(request)) {
            // Its own nodes are up; they were held for it (see `simulate_existing`).
            Some(group) => Some(group.clone()),
            None if step.try_place(pods, true) => Some(String::new()),
            None => None,
        };
        if let Some(group) = group {
            next.set(
                cond::PROVISIONED,
                "True",
                reason::PROVISIONED,
                messages::VENDOR_PROVISIONED,
            );
            next.details = render_all(&class.provisioning_class_details, request, &group);
            return;
        }
        let rooms = self.rooms(world, step, |group| {
            render_all(&class.node_labels, request, group)
        });
        let plan = plan_scale_up(&step.sim, pods, &rooms);
        if !plan.complete {
            let labels = |group: &str| render_all(&class.node_labels, request, group);
            let never_fits = || never_fits(&self.config, world, pods, labels, &step.time);
            if self.broken.provisions_unfit(request, never_fits) {
                next.set(
                    cond::PROVISIONED,
                    "True",
                    reason::PROVISIONED,
                    messages::VENDOR_PROVISIONED,
                );
                next.details = render_all(&class.provisioning_class_details, request, "");
            }
            return; // Queued until capacity appears (a node or a booking freed: a watch event).
        }
        let refused = plan.nodes.keys().find_map(|g| {
            self.config
                .node_group(g)
                .and_then(|g| g.fail_scale_up.clone())
        });
        if let Some(failure) = refused {
            next.set(cond::FAILED, "True", &failure.reason, &failure.message);
            return;
        }
        let group = plan.nodes.keys().next().cloned().unwrap_or_default();
        let labels = render_all(&class.node_labels, request, &group);
        let ready_at = self.request_nodes(request, &plan.nodes, &labels, step);
        step.try_place(pods, true);
        next.set(
            cond::PROVISIONED,
            "False",
            reason::NOT_PROVISIONED,
            &messages::vendor_eta(
                plan.total(),
                &group,
                &support::clock::truncate_seconds(ready_at).to_string(),
            ),
        );
    }

    /// Revokes a provisioned request's capacity once `maxRunDurationSeconds` (default: the
    /// expiry) has passed since it was provisioned.
    pub(super) fn revoke_after_max_run(
        &self,
        request: &ProvisioningRequest,
        provisioned_since: Timestamp,
        next: &mut Next,
        step: &mut StepState,
    ) {
        let seconds = parameter_seconds(request, "maxRunDurationSeconds")
            .unwrap_or(self.config.timing.expiry.get().as_secs());
        let until = plus(provisioned_since, Duration::from_secs(seconds));
        if until <= step.now {
            next.set(
                cond::CAPACITY_REVOKED,
                "True",
                messages::CAPACITY_REVOKED_REASON,
                messages::CAPACITY_REVOKED,
            );
        } else {
            step.wake_at(until);
        }
    }
}
