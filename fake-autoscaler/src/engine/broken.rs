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
//! | `takes-back-provisioned` | [`Deviations::while_booked`] |
//! | `provisions-unfit` | [`Deviations::provisions_unfit`], [`Deviations::books`] |
//! | `waits-without-templates` | [`Deviations::on_missing_templates`] |
//! | `revives-failed-on-a-slow-loop` | [`Deviations::on_failed`], [`Deviations::gate`], [`Deviations::wake_on_loop`] |
//!
//! A variant that writes something false still keeps its own timing true (the memory below), so
//! that it breaks its one rule and no other.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use api::autoscaling::ProvisioningRequest;
use api::constants::{provreq_condition as cond, provreq_reason as reason};
use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::loop_ticks::LoopTicks;
use super::next::Next;
use super::objects::{PodsError, condition, is_true, plus, request_pods, uid};
use super::{Key, StepState, World};
use crate::broken::{Broken, snake_case};
use crate::capacity::{Plan, PodGroup};
use crate::messages;

/// takes-back-provisioned: how long after `Provisioned=True` it is taken back.
const TAKE_BACK_AFTER: Duration = Duration::from_secs(10);

/// revives-failed-on-a-slow-loop: the class's loop (Cluster Autoscaler's scan interval is 10s by
/// default; this one is slower than the suite's shortest watch used to be).
const SLOW_LOOP: Duration = Duration::from_secs(45);

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
    bookings: BTreeMap<Key, HeldBooking>,
    /// provisions-unfit: the requests (by UID) provisioned although their pods never fit.
    unfit: BTreeSet<String>,
    /// revives-failed-on-a-slow-loop: the loop's ticks.
    ticks: Option<LoopTicks>,
}

/// ignores-deletion: a booking and when it would end on its own (unknown before the request is
/// provisioned).
struct HeldBooking {
    pods: Vec<PodGroup>,
    until: Option<Timestamp>,
}

impl Deviations {
    pub(super) fn new(variant: Option<Broken>) -> Self {
        let ticks =
            (variant == Some(Broken::RevivesFailedOnASlowLoop)).then(|| LoopTicks::new(SLOW_LOOP));
        Deviations {
            variant,
            ticks,
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
        self.unfit.retain(|uid| alive.contains(uid.as_str()));
    }

    /// Whether a step may act at `now`. Reference: always; on a slow loop only once per tick, and
    /// otherwise the answer is when the next tick is.
    pub(super) fn gate(&mut self, now: Timestamp) -> Result<(), Timestamp> {
        match &mut self.ticks {
            Some(ticks) => ticks.enter(now),
            None => Ok(()),
        }
    }

    /// When the next step is due. Reference: when the engine asks; on a slow loop, at the first
    /// tick from then on.
    pub(super) fn wake_on_loop(&self, wake: Option<Timestamp>) -> Option<Timestamp> {
        match &self.ticks {
            Some(ticks) => wake.map(|w| ticks.at_or_after(w)),
            None => wake,
        }
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
        error: &PodsError,
        next: &mut Next,
    ) -> Flow {
        match self.variant {
            // Waits for them as long as it takes, saying so; once provisioned, as the reference.
            Some(Broken::WaitsWithoutTemplates) if !is_true(request, cond::PROVISIONED) => {
                if !is_true(request, cond::ACCEPTED) {
                    next.set(cond::ACCEPTED, "True", reason::ACCEPTED, messages::ACCEPTED);
                }
                let message = messages::waiting_for_templates(&error.to_string());
                // Rewritten only when it changes: each write would move its time.
                if condition(request, cond::PROVISIONED).is_none_or(|c| c.message != message) {
                    next.set(
                        cond::PROVISIONED,
                        "False",
                        messages::WAITING_FOR_TEMPLATES_REASON,
                        &message,
                    );
                }
                Flow::Stop
            }
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
        let revives = matches!(
            self.variant,
            Some(Broken::RevivesFailed | Broken::RevivesFailedOnASlowLoop)
        );
        if revives && request_pods(request, world).is_ok() {
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

    /// A provisioned request whose booking holds, `since` it was provisioned. Reference: it stays
    /// provisioned.
    pub(super) fn while_booked(&self, since: Timestamp, next: &mut Next, step: &mut StepState) {
        if self.variant != Some(Broken::TakesBackProvisioned) {
            return;
        }
        // Taken back, freeing the booking; the class may provision it again later.
        let at = plus(since, TAKE_BACK_AFTER);
        if at <= step.now {
            next.set(
                cond::PROVISIONED,
                "False",
                reason::CAPACITY_IS_NOT_FOUND,
                messages::TAKEN_BACK,
            );
        } else {
            step.wake_at(at);
        }
    }

    /// A request the class cannot provision for want of capacity; `never_fits` says whether its
    /// pods could not fit even an empty cluster grown to its maximum. Reference: Provisioned=False
    /// (false here). True when the variant provisions it anyway: the caller writes its class's
    /// `Provisioned=True`.
    pub(super) fn provisions_unfit(
        &mut self,
        request: &ProvisioningRequest,
        never_fits: impl FnOnce() -> bool,
    ) -> bool {
        if self.variant == Some(Broken::ProvisionsUnfit) && never_fits() {
            self.unfit.insert(uid(request).to_string());
            return true;
        }
        false
    }

    /// Whether a booked request holds capacity. Reference: yes; a request provisioned for pods
    /// that never fit holds nothing (and so takes no room from another).
    pub(super) fn books(&self, request: &ProvisioningRequest) -> bool {
        !self.unfit.contains(uid(request))
    }

    /// The atomic class cannot add every node a request needs. Reference: it adds none.
    pub(super) fn scales_up_partly(&self, plan: &Plan) -> bool {
        self.variant == Some(Broken::PartialScaleUp) && plan.total() > 0
    }

    /// Whether a request whose scale-up was asked for is provisioned, when the write saying so
    /// was lost. Reference: yes; the partial variant's scale-up is not all the request needs.
    pub(super) fn provisions_own_scale_up(&self) -> bool {
        self.variant != Some(Broken::PartialScaleUp)
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
        booking_time: Duration,
        step: &mut StepState,
    ) {
        if self.variant != Some(Broken::IgnoresDeletion) {
            return;
        }
        let mut held = BTreeMap::new();
        for (key, pods) in booked.iter() {
            let provisioned = world
                .requests
                .get(key)
                .and_then(|r| condition(r, cond::PROVISIONED).map(|c| (r, c)))
                .filter(|(_, c)| c.status == "True");
            let until = provisioned.map(|(r, c)| plus(self.since(r, c), booking_time));
            let pods = pods.clone();
            held.insert(key.clone(), HeldBooking { pods, until });
        }
        // Deleted requests keep what they had booked until the booking would have ended on its
        // own (one not provisioned yet: a booking's time from when it was deleted).
        for (key, booking) in std::mem::take(&mut self.bookings) {
            if world.requests.contains_key(&key) {
                continue;
            }
            let until = booking
                .until
                .unwrap_or_else(|| plus(step.now, booking_time));
            if until <= step.now {
                continue;
            }
            step.wake_at(until);
            booked.insert(key.clone(), booking.pods.clone());
            held.insert(
                key,
                HeldBooking {
                    until: Some(until),
                    ..booking
                },
            );
        }
        self.bookings = held;
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
