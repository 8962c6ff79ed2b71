//! A request's life, whatever decides it: a script, or a class's garbage collection, terminal
//! states, booking, expiry and PodTemplates, before the class itself looks at capacity.

use api::autoscaling::ProvisioningRequest;
use api::constants::{provreq_condition as cond, provreq_reason as reason};

use super::broken::Flow;
use super::next::Next;
use super::objects::{condition, created, is_true, plus, request_pods};
use super::scripted::follow_script;
use super::{Action, Autoscaler, Handler, Key, StepState, TEMPLATE_GRACE, World, vendor};
use crate::config::{Behaviour, ClassConfig};
use crate::messages;

impl Autoscaler {
    pub(super) fn decide(
        &mut self,
        world: &World,
        key: &Key,
        request: &ProvisioningRequest,
        handler: Handler,
        step: &mut StepState,
    ) {
        let mut next = Next::new(request, step.time.clone(), self.broken.variant());
        match handler {
            Handler::Script(timeline) => {
                if follow_script(request, &timeline, &mut next, step) {
                    step.actions.push(Action::DeleteRequest(key.clone()));
                    return;
                }
            }
            Handler::Class(class) => {
                if self.garbage_collect(request, step) {
                    step.actions.push(Action::DeleteRequest(key.clone()));
                    return;
                }
                self.decide_class(world, key, request, &class, &mut next, step);
            }
        }
        self.broken.after_decide(request, &next.stamped, step);
        if let Some(written) = next.finish() {
            step.actions.push(Action::WriteStatus(Box::new(written)));
        }
    }

    /// Upstream deletes a request whose Provisioned or Failed condition is older than 7 days.
    fn garbage_collect(&self, request: &ProvisioningRequest, step: &mut StepState) -> bool {
        let after = self.config.timing.garbage_collection.get();
        let mut delete = false;
        for t in [cond::PROVISIONED, cond::FAILED] {
            if let Some(c) = condition(request, t) {
                let due = plus(self.broken.since(request, c), after);
                if due <= step.now {
                    delete = true;
                } else {
                    step.wake_at(due);
                }
            }
        }
        delete
    }

    fn decide_class(
        &mut self,
        world: &World,
        key: &Key,
        request: &ProvisioningRequest,
        class: &ClassConfig,
        next: &mut Next,
        step: &mut StepState,
    ) {
        if is_true(request, cond::FAILED) {
            // Terminal.
            self.broken.on_failed(world, request, next);
            return;
        }
        if is_true(request, cond::CAPACITY_REVOKED) {
            return;
        }
        if is_true(request, cond::PROVISIONED) {
            self.keep_booking(world, request, class, next, step);
            return;
        }
        let created = created(request, step.now);
        let expires = plus(created, self.config.timing.expiry.get());
        if expires <= step.now {
            next.set(cond::FAILED, "True", reason::EXPIRED, messages::EXPIRED);
            return;
        }
        step.wake_at(expires);
        if class.behaviour == Behaviour::Vendor
            && vendor::wait_time_exceeded(request, created, next, step)
        {
            return;
        }
        let pods = match request_pods(request, world) {
            Ok(pods) => pods,
            Err(e) => {
                if e.is_missing() {
                    if self.broken.on_missing_templates(request, &e, next) == Flow::Stop {
                        return;
                    }
                    if plus(created, TEMPLATE_GRACE) > step.now {
                        // The PodTemplates come on another watch; give them one autoscaler loop.
                        step.wake_at(plus(created, TEMPLATE_GRACE));
                        return;
                    }
                }
                next.set(
                    cond::FAILED,
                    "True",
                    reason::FAILED_TO_CREATE_PODS,
                    &e.to_string(),
                );
                return;
            }
        };
        // After the PodTemplates: a variant that breaks another rule still fails a request
        // that misses them.
        if self.broken.on_pick_up(request, next) == Flow::Stop {
            return;
        }
        match class.behaviour {
            Behaviour::CheckCapacity => self.check_capacity(world, request, &pods, next, step),
            Behaviour::AtomicScaleUp => self.atomic_scale_up(world, request, &pods, next, step),
            Behaviour::Vendor => self.vendor(world, key, request, class, &pods, next, step),
            Behaviour::Scripted => {}
        }
    }
}
