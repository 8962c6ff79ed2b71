//! How each broken variant ([`Broken`]) deviates from the reference classes, in one place. The
//! engine calls these hooks at the few points where a variant may differ; with no variant (or
//! another one) each hook does what the reference does. Each variant deviates in one rule:
//!
//! | variant | hooks |
//! | --- | --- |
//! | `provisioned-and-failed` | [`Deviations::on_provisioned`] |
//! | `booking-expired-before-provisioned` | [`Deviations::on_pick_up`], [`Deviations::booking_expired`], [`Deviations::on_booking_ends`] |
//! | `stale-transition-time` | [`written_transition_time`], [`Deviations::since`], [`Deviations::after_decide`] |
//! | `never-leaves-accepted` | [`Deviations::on_pick_up`] |
//! | `partial-scale-up` | [`Deviations::scales_up_partly`] |
//! | `ignores-deletion` | [`Deviations::forgets_deleted`], [`Deviations::hold_deleted_bookings`] |
//! | `revives-failed` | [`Deviations::on_failed`] |
//! | `snake-case-reasons` | [`written_reason`] |
//! | `provisions-without-templates` | [`Deviations::on_missing_templates`] |
//!
//! A variant that writes something false still keeps its own timing true (the memory below), so
//! that it breaks its one rule and no other.

use std::collections::{BTreeMap, BTreeSet};

use api::autoscaling::ProvisioningRequest;
use api::constants::{provreq_condition as cond, provreq_reason as reason};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::next::Next;
use super::objects::{condition, is_true, request_pods, uid};
use super::{Key, StepState, World};
use crate::broken::{Broken, snake_case};
use crate::capacity::{Plan, PodGroup};
use crate::messages;

/// Whether the engine carries on after a hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flow {
    Continue,
    /// The variant decided this request alone.
    Stop,
}

/// The variant being played and the memory its deviations need.
#[derive(Default)]
pub(super) struct Deviations {
    variant: Option<Broken>,
    /// stale-transition-time: when each condition (by request UID and type) really changed.
    true_times: BTreeMap<(String, String), Timestamp>,
    /// booking-expired-before-provisioned: the requests whose booking really ended.
    bookings_over: BTreeSet<String>,
    /// ignores-deletion: what each request booked, kept after it is deleted.
    bookings: BTreeMap<Key, Vec<PodGroup>>,
}

impl Deviations {
    pub(super) fn new(variant: Option<Broken>) -> Self {
        Deviations {
            variant,
            ..Deviations::default()
        }
    }

    pub(super) fn variant(&self) -> Option<Broken> {
        self.variant
    }

    /// Drops memory of requests that are gone (by UID).
    pub(super) fn forget(&mut self, alive: &BTreeSet<&str>) {
        self.true_times
            .retain(|(uid, _), _| alive.contains(uid.as_str()));
        self.bookings_over
            .retain(|uid| alive.contains(uid.as_str()));
    }

    /// A request new to the class, before its pods are built.
    pub(super) fn on_pick_up(&self, request: &ProvisioningRequest, next: &mut Next) -> Flow {
        match self.variant {
            // Accepted, and then never a word more.
            Some(Broken::NeverLeavesAccepted) => {
                if condition(request, cond::ACCEPTED).is_none() {
                    next.set(cond::ACCEPTED, "True", reason::ACCEPTED, messages::ACCEPTED);
                }
                Flow::Stop
            }
            // BookingExpired before anything is provisioned; otherwise as the reference.
            Some(Broken::BookingExpiredBeforeProvisioned) => {
                if condition(request, cond::BOOKING_EXPIRED).is_none() {
                    next.set(
                        cond::BOOKING_EXPIRED,
                        "True",
                        reason::CAPACITY_RESERVATION_TIME_EXPIRED,
                        messages::BOOKING_TIME_EXPIRED,
                    );
                }
                Flow::Continue
            }
            _ => Flow::Continue,
        }
    }

    /// Some of the request's PodTemplates do not exist. Reference: wait a loop, then fail (or,
    /// once provisioned, fail the booking).
    pub(super) fn on_missing_templates(
        &self,
        request: &ProvisioningRequest,
        next: &mut Next,
    ) -> Flow {
        match self.variant {
            // Provisioned without them; once provisioned, books nothing and says nothing.
            Some(Broken::ProvisionsWithoutTemplates) => {
                if !is_true(request, cond::PROVISIONED) {
                    next.set(cond::ACCEPTED, "True", reason::ACCEPTED, messages::ACCEPTED);
                    next.set(
                        cond::PROVISIONED,
                        "True",
                        reason::CAPACITY_IS_FOUND,
                        messages::CAPACITY_IS_FOUND,
                    );
                }
                Flow::Stop
            }
            _ => Flow::Continue,
        }
    }

    /// An upstream class provisions a request.
    pub(super) fn on_provisioned(&self, next: &mut Next) {
        if self.variant == Some(Broken::ProvisionedAndFailed) {
            next.set(
                cond::FAILED,
                "True",
                reason::FAILED_TO_BOOK_CAPACITY,
                &messages::failed_to_book("booking raced with another request"),
            );
        }
    }

    /// A failed request. Reference: terminal, nothing more is written.
    pub(super) fn on_failed(&self, world: &World, request: &ProvisioningRequest, next: &mut Next) {
        // Revived whatever failed it, but only once its pods can be built, so that it breaks no
        // other rule.
        if self.variant == Some(Broken::RevivesFailed) && request_pods(request, world).is_ok() {
            next.set(
                cond::FAILED,
                "False",
                reason::CAPACITY_IS_FOUND,
                messages::CAPACITY_IS_FOUND,
            );
            next.set(
                cond::PROVISIONED,
                "True",
                reason::CAPACITY_IS_FOUND,
                messages::CAPACITY_IS_FOUND,
            );
        }
    }

    /// The atomic class cannot add every node a request needs. Reference: it adds none.
    pub(super) fn scales_up_partly(&self, plan: &Plan) -> bool {
        self.variant == Some(Broken::PartialScaleUp) && plan.total() > 0
    }

    /// Whether a provisioned request's booking is over. Reference: its BookingExpired says so.
    pub(super) fn booking_expired(&self, request: &ProvisioningRequest) -> bool {
        match self.variant {
            // Its BookingExpired says nothing; the booking ends as the reference's would.
            Some(Broken::BookingExpiredBeforeProvisioned) => {
                self.bookings_over.contains(uid(request))
            }
            _ => is_true(request, cond::BOOKING_EXPIRED),
        }
    }

    /// A booking ends (consumed or timed out). Reference: `BookingExpired=True`.
    pub(super) fn on_booking_ends(&mut self, request: &ProvisioningRequest) -> Flow {
        match self.variant {
            // Already says BookingExpired; only the booking itself ends.
            Some(Broken::BookingExpiredBeforeProvisioned) => {
                self.bookings_over.insert(uid(request).to_string());
                Flow::Stop
            }
            _ => Flow::Continue,
        }
    }

    /// Whether scale-ups in flight for deleted requests are dropped.
    pub(super) fn forgets_deleted(&self) -> bool {
        self.variant != Some(Broken::IgnoresDeletion)
    }

    /// The capacity booked this step, by request. Reference: a deleted request books nothing.
    pub(super) fn hold_deleted_bookings(
        &mut self,
        world: &World,
        booked: &mut BTreeMap<Key, Vec<PodGroup>>,
    ) {
        if self.variant != Some(Broken::IgnoresDeletion) {
            return;
        }
        // Deleted requests keep what they had booked.
        for (key, pods) in &self.bookings {
            if !world.requests.contains_key(key) {
                booked.insert(key.clone(), pods.clone());
            }
        }
        self.bookings = booked.clone();
    }

    /// When a condition last changed, as this autoscaler's timing counts it. Reference: its
    /// lastTransitionTime.
    pub(super) fn since(&self, request: &ProvisioningRequest, c: &Condition) -> Timestamp {
        let real = self
            .true_times
            .get(&(uid(request).to_string(), c.type_.clone()));
        match real {
            // What it wrote is stale; its own timing is not.
            Some(t) if self.variant == Some(Broken::StaleTransitionTime) => *t,
            _ => c.last_transition_time.0,
        }
    }

    /// After a request was decided: `stamped` are the condition types set at the step's time.
    pub(super) fn after_decide(
        &mut self,
        request: &ProvisioningRequest,
        stamped: &[String],
        step: &StepState,
    ) {
        if self.variant == Some(Broken::StaleTransitionTime) {
            // Whether or not the stale time made the write a no-op, the condition was set now.
            for type_ in stamped {
                self.true_times
                    .insert((uid(request).to_string(), type_.clone()), step.time.0);
            }
        }
    }
}

/// A condition's reason as written. Reference: as given (CamelCase).
pub(super) fn written_reason(variant: Option<Broken>, why: &str) -> String {
    match variant {
        Some(Broken::SnakeCaseReasons) => snake_case(why),
        _ => why.to_string(),
    }
}

/// A condition's lastTransitionTime as written, `old` being the condition it replaces.
/// Reference: the time it is set.
pub(super) fn written_transition_time(
    variant: Option<Broken>,
    old: Option<&Condition>,
    at: Time,
) -> Time {
    match (variant, old) {
        // The first time stays, whatever changed.
        (Some(Broken::StaleTransitionTime), Some(old)) => old.last_transition_time.clone(),
        _ => at,
    }
}
