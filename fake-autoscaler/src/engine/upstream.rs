//! What the two upstream classes (check-capacity and best-effort-atomic-scale-up) share: the
//! conditions for capacity found or not, and upstream's retry backoff.

use std::time::Duration;

use api::autoscaling::ProvisioningRequest;
use api::constants::{provreq_condition as cond, provreq_reason as reason};

use super::next::Next;
use super::objects::{condition, plus, uid};
use super::{Autoscaler, StepState};
use crate::messages;

impl Autoscaler {
    /// Whether a `Provisioned=False` request may be tried again now (upstream's backoff: the
    /// condition's time plus a wait that starts at 1m and doubles up to 10m).
    pub(super) fn retry_due(&self, request: &ProvisioningRequest, step: &mut StepState) -> bool {
        match condition(request, cond::PROVISIONED) {
            None => true,
            Some(c) if c.status == "False" => {
                let due = plus(self.broken.since(request, c), self.wait(request));
                if due <= step.now {
                    true
                } else {
                    step.wake_at(due);
                    false
                }
            }
            Some(_) => false,
        }
    }

    fn wait(&self, request: &ProvisioningRequest) -> Duration {
        self.retry_wait
            .get(uid(request))
            .copied()
            .unwrap_or(self.config.timing.retry_initial.get())
    }

    /// After a retry that found nothing: the next wait doubles.
    fn back_off(&mut self, request: &ProvisioningRequest) {
        if condition(request, cond::PROVISIONED).is_some_and(|c| c.status == "False") {
            let doubled = (self.wait(request) * 2).min(self.config.timing.retry_max.get());
            self.retry_wait.insert(uid(request).to_string(), doubled);
        }
    }

    pub(super) fn provisioned(&self, next: &mut Next, why: &str) {
        next.set(cond::PROVISIONED, "True", why, messages::CAPACITY_IS_FOUND);
        self.broken.on_provisioned(next);
    }

    pub(super) fn not_found(
        &mut self,
        request: &ProvisioningRequest,
        next: &mut Next,
        step: &mut StepState,
    ) {
        self.back_off(request);
        next.set(
            cond::PROVISIONED,
            "False",
            reason::CAPACITY_IS_NOT_FOUND,
            messages::CAPACITY_NOT_FOUND_RETRY,
        );
        step.wake_at(plus(step.now, self.wait(request)));
    }
}
