//! Scripted classes and per-request scripts: a timeline of conditions at exact times after the
//! request's creation, for tests. No capacity is looked at.

use api::autoscaling::ProvisioningRequest;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::StepState;
use super::next::Next;
use super::objects::{created, plus, render_all};
use crate::config::Step;

/// Applies every step of the timeline that is due, each condition timed at its step. Returns true
/// when a due step deletes the request.
pub(super) fn follow_script(
    request: &ProvisioningRequest,
    timeline: &[Step],
    next: &mut Next,
    step: &mut StepState,
) -> bool {
    let created = created(request, step.now);
    for s in timeline {
        let at = plus(created, s.after.get());
        if at > step.now {
            step.wake_at(at);
            break;
        }
        if s.delete {
            return true;
        }
        for c in &s.set {
            // Validated when the configuration was read.
            if let Ok(c) = c.resolve() {
                let unchanged = next.status.conditions.iter().any(|old| {
                    old.type_ == c.type_
                        && old.status == c.status
                        && old.reason == c.reason
                        && old.message == c.message
                });
                if !unchanged {
                    next.set_at(&c.type_, &c.status, &c.reason, &c.message, Time(at));
                }
            }
        }
        next.details.extend(render_all(&s.details, request, ""));
    }
    false
}
