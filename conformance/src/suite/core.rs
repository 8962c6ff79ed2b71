//! The core profile: what Kueue relies on from every provisioning class.

use api::constants::provreq_condition as cond;
use api::contract as rule;
use futures::FutureExt;

use std::time::Duration;

use super::{Ctx, Failure, Profile, Room, TestCase, Which, condition, is_true};
use crate::monitor::Seen;

pub fn tests() -> Vec<TestCase> {
    vec![
        TestCase {
            name: "request-answered",
            description: "A new request of the class gets a condition from it.",
            profile: Profile::Core,
            features: &[],
            room: Room::Free,
            run: |ctx| request_answered(ctx).boxed(),
        },
        TestCase {
            name: "fitting-request-provisioned",
            description: "A request for pods that fit is Provisioned=True, and stays so while its \
                          booking holds.",
            profile: Profile::Core,
            features: &[],
            room: Room::Fits,
            run: |ctx| fitting_request_provisioned(ctx).boxed(),
        },
        TestCase {
            name: "waiting-request-shows-progress",
            description: "A request that cannot be provisioned says so: Provisioned=False with a \
                          message, or Failed=True; it is never Provisioned=True.",
            profile: Profile::Core,
            features: &[],
            room: Room::Free,
            run: |ctx| waiting_request_shows_progress(ctx).boxed(),
        },
        TestCase {
            name: "missing-templates-handled",
            description: "A request whose PodTemplate does not exist is Failed=True, as upstream's \
                          classes answer (reason FailedToCreatePods), and stays failed when the \
                          template appears.",
            profile: Profile::Core,
            features: &[],
            room: Room::Free,
            run: |ctx| missing_templates_handled(ctx).boxed(),
        },
        TestCase {
            name: "deletion-frees-capacity",
            description: "Deleting a provisioned request frees its capacity: a request waiting \
                          for the same room is provisioned, before the deleted one's booking \
                          would have ended on its own.",
            profile: Profile::Core,
            features: &[],
            room: Room::Fits,
            run: |ctx| deletion_frees_capacity(ctx).boxed(),
        },
    ]
}

/// Whether the request's latest version ends its booking: after that, Provisioned may go.
fn booking_over(seen: &[Seen]) -> bool {
    seen.last()
        .is_some_and(|s| s.is_true(cond::BOOKING_EXPIRED) || s.is_true(cond::CAPACITY_REVOKED))
}

/// Whether the request's latest version is Failed=True: terminal, so nothing may follow.
fn failed(seen: &[Seen]) -> bool {
    seen.last().is_some_and(|s| s.is_true(cond::FAILED))
}

async fn request_answered(ctx: &Ctx) -> Result<(), Failure> {
    // Pods that never fit: an answer is all this test needs, and it takes no room.
    ctx.template("pods", Which::DoesNotFit).await?;
    ctx.request("answered", "pods", Which::DoesNotFit, &[])
        .await?;
    ctx.wait_for(
        "answered",
        ctx.options.timeouts.accepted.get(),
        "a first condition",
        None,
        |r| {
            r.and_then(|r| r.status.as_ref())
                .is_some_and(|s| !s.conditions.is_empty())
        },
    )
    .await
}

async fn fitting_request_provisioned(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::Fits).await?;
    ctx.request("fits", "pods", Which::Fits, &[]).await?;
    ctx.provisioned("fits").await?;
    // Taking it back is the broken rule the watch looks for; a booking that ends settles it.
    ctx.watch("fits", booking_over).await
}

async fn waiting_request_shows_progress(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::DoesNotFit).await?;
    ctx.request("waits", "pods", Which::DoesNotFit, &[]).await?;
    // Provisioned=True for these pods breaks a rule, which ends the wait at once.
    ctx.wait_for(
        "waits",
        ctx.options.timeouts.progress.get(),
        "Provisioned=False with a message, or Failed=True",
        Some(rule::PROGRESS_IS_VISIBLE),
        |r| {
            is_true(r, cond::FAILED)
                || condition(r, cond::PROVISIONED)
                    .is_some_and(|c| c.status == "False" && !c.message.is_empty())
        },
    )
    .await?;
    ctx.watch("waits", failed).await
}

async fn missing_templates_handled(ctx: &Ctx) -> Result<(), Failure> {
    ctx.request("orphan", "not-there-yet", Which::Fits, &[])
        .await?;
    ctx.wait_for(
        "orphan",
        ctx.options.timeouts.progress.get(),
        "Failed=True for a request whose PodTemplate does not exist",
        Some(rule::MISSING_TEMPLATES_HANDLED),
        |r| is_true(r, cond::FAILED) || is_true(r, cond::PROVISIONED),
    )
    .await?;
    if !is_true(Some(&ctx.get("orphan").await?), cond::FAILED) {
        return Err(Failure::rule(
            rule::MISSING_TEMPLATES_HANDLED,
            "request orphan was Provisioned=True without its PodTemplate",
        ));
    }
    // The template appears: the request stays failed (a revival breaks a rule the watch sees).
    ctx.template("not-there-yet", Which::Fits).await?;
    ctx.watch("orphan", |_| false).await
}

async fn deletion_frees_capacity(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::Fits).await?;
    ctx.request("first", "pods", Which::Fits, &[]).await?;
    ctx.provisioned("first").await?;
    let provisioned_at = ctx.changed_at("first", cond::PROVISIONED).await?;
    ctx.request("second", "pods", Which::Fits, &[]).await?;
    ctx.wait_for(
        "second",
        ctx.options.timeouts.progress.get(),
        "a Provisioned condition while the first request holds the room",
        Some(rule::PROGRESS_IS_VISIBLE),
        |r| condition(r, cond::PROVISIONED).is_some(),
    )
    .await?;
    if is_true(Some(&ctx.get("second").await?), cond::PROVISIONED) {
        return Err(Failure::cannot_test(
            "cannot test: the class provisioned request second for the fits pods while request \
             first still held them (it books nothing, or it found or made room for both), so \
             capacity freed by a deletion cannot be told apart",
        ));
    }
    ctx.delete_request("first").await?;
    // Capacity that comes back when first's booking ends on its own proves nothing: the wait
    // ends before then (lastTransitionTime has whole seconds, so this errs on the early side).
    let booking = ctx.options.timeouts.booking.get();
    let booking_ends = provisioned_at.map(|t| t + booking);
    let left = booking_ends.map_or(Duration::MAX, |end| {
        end.duration_since(ctx.clock.now())
            .try_into()
            .unwrap_or(Duration::ZERO)
    });
    let retry = ctx.options.timeouts.retry.get();
    if left.is_zero() {
        return Err(Failure::cannot_test(format!(
            "cannot test: request first's booking (timeouts.booking, {}) was over before the \
             class answered request second",
            api::config::GoDuration(booking)
        )));
    }
    let what = if left < retry {
        format!(
            "Provisioned=True once the first request was deleted, before the first one's booking \
             would have ended on its own (timeouts.booking: {} after it was provisioned)",
            api::config::GoDuration(booking)
        )
    } else {
        "Provisioned=True once the first request was deleted".to_string()
    };
    ctx.wait_for(
        "second",
        retry.min(left),
        &what,
        Some(rule::DELETION_CANCELS),
        |r| is_true(r, cond::PROVISIONED),
    )
    .await
}
