//! `check-capacity.autoscaling.x-k8s.io`: does the request fit the cluster as it is? A
//! scheduling simulation that never scales up; Failed at once with `noRetry: "true"`.

use api::autoscaling::ProvisioningRequest;
use api::constants::{provreq_condition as cond, provreq_reason as reason};

use std::collections::BTreeMap;

use super::next::Next;
use super::node_groups::never_fits;
use super::{Autoscaler, StepState, World};
use crate::capacity::PodGroup;
use crate::messages;

impl Autoscaler {
    pub(super) fn check_capacity(
        &mut self,
        world: &World,
        request: &ProvisioningRequest,
        pods: &[PodGroup],
        next: &mut Next,
        step: &mut StepState,
    ) {
        if !self.retry_due(request, step) {
            return;
        }
        next.set(cond::ACCEPTED, "True", reason::ACCEPTED, messages::ACCEPTED);
        if step.try_place(pods, false) {
            self.provisioned(next, reason::CAPACITY_IS_FOUND);
            return;
        }
        let no_retry = request
            .spec
            .parameters
            .get(api::constants::provisioning_class::PARAMETER_NO_RETRY)
            .is_some_and(|v| v == "true");
        if no_retry {
            next.set(
                cond::FAILED,
                "True",
                reason::CAPACITY_IS_NOT_FOUND,
                messages::CAPACITY_NOT_FOUND_NO_RETRY,
            );
            return;
        }
        let never_fits = || never_fits(&self.config, world, pods, |_| BTreeMap::new(), &step.time);
        if self.broken.provisions_unfit(request, never_fits) {
            self.provisioned(next, reason::CAPACITY_IS_FOUND);
            return;
        }
        self.not_found(request, next, step);
    }
}
