//! The extended profile: features a class may claim.

use api::constants::{provisioning_class, provreq_condition as cond};
use api::contract as rule;
use futures::FutureExt;

use super::{Ctx, Failure, Profile, Room, TestCase, Which, condition, is_true};
use crate::options::Feature;

pub fn tests() -> Vec<TestCase> {
    vec![
        TestCase {
            name: "no-retry-fails",
            description: "With noRetry: \"true\", a request that cannot be provisioned is Failed=True.",
            profile: Profile::Extended,
            features: &[Feature::NoRetry],
            room: Room::Free,
            run: |ctx| no_retry_fails(ctx).boxed(),
        },
        TestCase {
            name: "no-partial-capacity",
            description: "A request that cannot be provisioned whole adds no Nodes.",
            profile: Profile::Extended,
            features: &[Feature::AtomicScaleUp],
            room: Room::Alone,
            run: |ctx| no_partial_capacity(ctx).boxed(),
        },
        TestCase {
            name: "booking-expires",
            description: "A provisioned request's booking ends: BookingExpired=True.",
            profile: Profile::Extended,
            features: &[Feature::BookingExpiry],
            room: Room::Fits,
            run: |ctx| booking_expires(ctx).boxed(),
        },
        TestCase {
            name: "booking-consumed",
            description: "Once as many pods consuming a provisioned request run as it asked for, \
                          its booking ends: BookingExpired=True.",
            profile: Profile::Extended,
            features: &[Feature::BookingConsumed],
            room: Room::Fits,
            run: |ctx| booking_consumed(ctx).boxed(),
        },
        TestCase {
            name: "capacity-revoked",
            description: "With maxRunDurationSeconds, a provisioned request's capacity is \
                          revoked once it has passed: CapacityRevoked=True.",
            profile: Profile::Extended,
            features: &[Feature::CapacityRevoked],
            room: Room::Fits,
            run: |ctx| capacity_revoked(ctx).boxed(),
        },
        TestCase {
            name: "valid-until-seconds",
            description: "A request not provisioned within ValidUntilSeconds is Failed=True.",
            profile: Profile::Extended,
            features: &[Feature::ValidUntilSeconds],
            room: Room::Free,
            run: |ctx| valid_until_seconds(ctx).boxed(),
        },
        TestCase {
            name: "class-details",
            description: "A provisioned request carries status.provisioningClassDetails.",
            profile: Profile::Extended,
            features: &[Feature::ProvisioningClassDetails],
            room: Room::Fits,
            run: |ctx| class_details(ctx).boxed(),
        },
        TestCase {
            name: "old-requests-collected",
            description: "A provisioned request is deleted once old enough.",
            profile: Profile::Extended,
            features: &[Feature::GarbageCollection],
            room: Room::Fits,
            run: |ctx| old_requests_collected(ctx).boxed(),
        },
    ]
}

async fn no_retry_fails(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::DoesNotFit).await?;
    ctx.request(
        "once",
        "pods",
        Which::DoesNotFit,
        &[(provisioning_class::PARAMETER_NO_RETRY, "true")],
    )
    .await?;
    // The same request without noRetry must keep trying, or Failed proves nothing.
    ctx.request("control", "pods", Which::DoesNotFit, &[])
        .await?;
    ctx.wait_for(
        "once",
        ctx.options.timeouts.progress.get(),
        "Failed=True",
        None,
        |r| is_true(r, cond::FAILED),
    )
    .await?;
    // Still failed after a while: a revival breaks a rule the watch sees.
    ctx.watch("once", |_| false).await?;
    let control = ctx.get("control").await?;
    if is_true(Some(&control), cond::FAILED) {
        return Err(Failure::other(
            "request control, without noRetry, failed too: the class does not retry at all",
        ));
    }
    Ok(())
}

async fn no_partial_capacity(ctx: &Ctx) -> Result<(), Failure> {
    // Only Nodes that could run the request's pods count: other Nodes may come and go for reasons
    // of their own (a node group's minimum, another workload).
    let before = ctx.nodes_for(Which::DoesNotFit).await?;
    ctx.template("pods", Which::DoesNotFit).await?;
    ctx.request("whole", "pods", Which::DoesNotFit, &[]).await?;
    ctx.wait_for(
        "whole",
        ctx.options.timeouts.progress.get(),
        "Provisioned=False or Failed=True",
        Some(rule::PROGRESS_IS_VISIBLE),
        |r| {
            is_true(r, cond::FAILED)
                || condition(r, cond::PROVISIONED).is_some_and(|c| c.status == "False")
        },
    )
    .await?;
    // Nodes the class decided to add take their time to appear: watch as long as a scale-up
    // takes (or the hold window, if longer), and fail on the first one.
    let window = ctx.options.timeouts.scale_up.get().max(ctx.hold_window());
    let deadline = tokio::time::Instant::now() + window;
    loop {
        let added: Vec<String> = ctx
            .nodes_for(Which::DoesNotFit)
            .await?
            .into_iter()
            .filter(|n| !before.contains(n))
            .collect();
        if !added.is_empty() {
            return Err(Failure::rule(
                rule::NO_PARTIAL_CAPACITY,
                format!(
                    "request whole could not be provisioned, yet Nodes were added: {}",
                    added.join(", ")
                ),
            ));
        }
        if tokio::time::Instant::now() >= deadline {
            return Ok(());
        }
        tokio::time::sleep(NODE_POLL.min(deadline - tokio::time::Instant::now())).await;
    }
}

/// How often the Nodes are listed while watching for ones that must not come.
const NODE_POLL: std::time::Duration = std::time::Duration::from_secs(2);

async fn booking_expires(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::Fits).await?;
    ctx.request("booked", "pods", Which::Fits, &[]).await?;
    ctx.provisioned("booked").await?;
    ctx.wait_for(
        "booked",
        ctx.options.timeouts.booking_expiry.get(),
        "BookingExpired=True",
        None,
        |r| is_true(r, cond::BOOKING_EXPIRED),
    )
    .await?;
    let provisioned = ctx.changed_at("booked", cond::PROVISIONED).await?;
    let expired = ctx.changed_at("booked", cond::BOOKING_EXPIRED).await?;
    match (provisioned, expired) {
        (Some(p), Some(e)) if e > p => Ok(()),
        _ => Err(Failure::other(
            "request booked: the booking expired as soon as it was provisioned: nothing was booked",
        )),
    }
}

async fn old_requests_collected(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::Fits).await?;
    ctx.request("old", "pods", Which::Fits, &[]).await?;
    ctx.provisioned("old").await?;
    ctx.wait_for(
        "old",
        ctx.options.timeouts.garbage_collection.get(),
        "deletion",
        None,
        |r| r.is_none(),
    )
    .await
}

async fn booking_consumed(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::Fits).await?;
    ctx.request("consumed", "pods", Which::Fits, &[]).await?;
    ctx.provisioned("consumed").await?;
    // A plain Job whose pods consume the request: the cluster's Job controller and scheduler
    // (the job runner in the embedded world) run them.
    let fits = &ctx.options.pod_templates.fits;
    let mut template = serde_json::to_value(&fits.template).unwrap_or_default();
    template["spec"]["restartPolicy"] = serde_json::json!("Never");
    template["metadata"]["annotations"] = serde_json::json!({
        api::constants::annotation::CONSUME_PROVISIONING_REQUEST: "consumed",
        api::constants::annotation::PROVISIONING_CLASS_NAME: ctx.options.class_name,
    });
    let job: k8s_openapi::api::batch::v1::Job = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "consumer", "namespace": ctx.namespace},
        "spec": {"parallelism": fits.count, "completions": fits.count, "template": template},
    }))
    .map_err(|e| Failure::other(format!("building the consuming Job: {e}")))?;
    kube::Api::<k8s_openapi::api::batch::v1::Job>::namespaced(ctx.client.clone(), &ctx.namespace)
        .create(&Default::default(), &job)
        .await
        .map_err(|e| Failure::other(format!("creating the consuming Job: {e}")))?;
    // Sooner than a booking runs out on its own (upstream: 10 minutes).
    ctx.wait_for(
        "consumed",
        ctx.options.timeouts.progress.get(),
        "BookingExpired=True once the consuming pods run",
        None,
        |r| is_true(r, cond::BOOKING_EXPIRED),
    )
    .await
}

/// The minute that `maxRunDurationSeconds` and `ValidUntilSeconds` give the class before it must
/// act; a wait for that act is this plus the `progress` timeout.
const PARAMETER_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

async fn capacity_revoked(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::Fits).await?;
    ctx.request(
        "revoked",
        "pods",
        Which::Fits,
        &[("maxRunDurationSeconds", "60")],
    )
    .await?;
    ctx.provisioned("revoked").await?;
    // The class has the minute the request gives it, then `progress` to show it.
    ctx.wait_for(
        "revoked",
        PARAMETER_WAIT + ctx.options.timeouts.progress.get(),
        "CapacityRevoked=True a minute after Provisioned=True (maxRunDurationSeconds: 60)",
        None,
        |r| is_true(r, cond::CAPACITY_REVOKED),
    )
    .await
}

async fn valid_until_seconds(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::DoesNotFit).await?;
    ctx.request(
        "expires",
        "pods",
        Which::DoesNotFit,
        &[("ValidUntilSeconds", "60")],
    )
    .await?;
    ctx.wait_for(
        "expires",
        PARAMETER_WAIT + ctx.options.timeouts.progress.get(),
        "Failed=True a minute after creation (ValidUntilSeconds: 60)",
        None,
        |r| is_true(r, cond::FAILED),
    )
    .await?;
    let request = ctx.get("expires").await?;
    let created = request.metadata.creation_timestamp.as_ref().map(|t| t.0);
    let failed = condition(Some(&request), cond::FAILED).map(|c| c.last_transition_time.0);
    match (created, failed) {
        // Whole seconds on both sides: allow one.
        (Some(c), Some(f)) if f.duration_since(c) >= jiff::SignedDuration::from_secs(59) => Ok(()),
        _ => Err(Failure::other(format!(
            "request expires failed before its ValidUntilSeconds (60) had passed: created {created:?}, failed {failed:?}"
        ))),
    }
}

async fn class_details(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::Fits).await?;
    ctx.request("detailed", "pods", Which::Fits, &[]).await?;
    ctx.wait_for(
        "detailed",
        ctx.options.timeouts.provisioned.get(),
        "Provisioned=True with status.provisioningClassDetails",
        None,
        |r| {
            is_true(r, cond::PROVISIONED)
                && r.and_then(|r| r.status.as_ref())
                    .is_some_and(|s| !s.provisioning_class_details.is_empty())
        },
    )
    .await
}
