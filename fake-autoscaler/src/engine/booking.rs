//! Booking (upstream's `ShouldCapacityBeBooked`): a provisioned request holds its capacity for 10
//! minutes, or until enough consuming pods run. Shared by every class.

use api::autoscaling::ProvisioningRequest;
use api::constants::{provreq_condition as cond, provreq_reason as reason};

use super::broken::Flow;
use super::next::Next;
use super::objects::{condition, consumed, is_true, plus, request_pods};
use super::{Autoscaler, StepState, World};
use crate::config::{Behaviour, ClassConfig};
use crate::messages;

impl Autoscaler {
    /// Provisioned, with its booking still on.
    pub(super) fn is_booked(&self, request: &ProvisioningRequest) -> bool {
        is_true(request, cond::PROVISIONED)
            && !self.broken.booking_expired(request)
            && !is_true(request, cond::FAILED)
            && !is_true(request, cond::CAPACITY_REVOKED)
    }

    /// Booking: expires 10 minutes after Provisioned=True, or once enough consuming pods run.
    /// A vendor class also revokes the capacity after `maxRunDurationSeconds`.
    pub(super) fn keep_booking(
        &mut self,
        world: &World,
        request: &ProvisioningRequest,
        class: &ClassConfig,
        next: &mut Next,
        step: &mut StepState,
    ) {
        let Some(provisioned) = condition(request, cond::PROVISIONED) else {
            return;
        };
        let since = self.broken.since(request, provisioned);
        if class.behaviour == Behaviour::Vendor {
            self.revoke_after_max_run(request, since, next, step);
        }
        if !self.is_booked(request) {
            return;
        }
        let pods = match request_pods(request, world) {
            Ok(pods) => pods,
            Err(e) => {
                if e.is_missing()
                    && self.broken.on_missing_templates(request, &e, next) == Flow::Stop
                {
                    return;
                }
                next.set(
                    cond::FAILED,
                    "True",
                    reason::FAILED_TO_BOOK_CAPACITY,
                    &messages::failed_to_book(&e.to_string()),
                );
                return;
            }
        };
        let total: u32 = pods.iter().map(|(_, n)| n).sum();
        let all_consumed = consumed(request, world) >= total;
        let due = plus(since, self.config.timing.booking_time.get());
        if (all_consumed || due <= step.now) && self.broken.on_booking_ends(request) == Flow::Stop {
            return;
        }
        if all_consumed {
            next.set(
                cond::BOOKING_EXPIRED,
                "True",
                reason::CAPACITY_BOOKING_CONSUMED,
                messages::BOOKING_CONSUMED,
            );
            return;
        }
        if due <= step.now {
            next.set(
                cond::BOOKING_EXPIRED,
                "True",
                reason::CAPACITY_RESERVATION_TIME_EXPIRED,
                messages::BOOKING_TIME_EXPIRED,
            );
            return;
        }
        step.wake_at(due);
        self.broken.while_booked(since, next, step);
    }
}
