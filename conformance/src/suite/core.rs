//! The core profile: what Kueue relies on from every provisioning class.

use api::constants::provreq_condition as cond;
use api::contract as rule;
use futures::FutureExt;

use super::{Ctx, Failure, Profile, Room, TestCase, Which, condition, is_true};

pub fn tests() -> Vec<TestCase> {
    vec![
        TestCase {
            name: "request-answered",
            description: "A new request of the class gets a condition from it.",
            profile: Profile::Core,
            features: &[],
            room: Room::Fits,
            run: |ctx| request_answered(ctx).boxed(),
        },
        TestCase {
            name: "fitting-request-provisioned",
            description: "A request for pods that fit is Provisioned=True.",
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
            description: "A request whose PodTemplate does not exist is failed or kept waiting, \
                          never provisioned; a failure stays when the template appears.",
            profile: Profile::Core,
            features: &[],
            room: Room::Free,
            run: |ctx| missing_templates_handled(ctx).boxed(),
        },
        TestCase {
            name: "deletion-frees-capacity",
            description: "Deleting a provisioned request frees its capacity: a request waiting \
                          for the same room is provisioned.",
            profile: Profile::Core,
            features: &[],
            room: Room::Alone,
            run: |ctx| deletion_frees_capacity(ctx).boxed(),
        },
        TestCase {
            name: "spec-immutable",
            description: "A request's spec cannot be changed.",
            profile: Profile::Core,
            features: &[],
            room: Room::Free,
            run: |ctx| spec_immutable(ctx).boxed(),
        },
    ]
}

async fn request_answered(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::Fits).await?;
    ctx.request("answered", "pods", Which::Fits, &[]).await?;
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
    ctx.provisioned("fits").await
}

async fn waiting_request_shows_progress(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::DoesNotFit).await?;
    ctx.request("waits", "pods", Which::DoesNotFit, &[]).await?;
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
    ctx.hold(ctx.options.timeouts.hold.get()).await;
    if ctx.seen("waits").iter().any(|s| {
        s.status
            .conditions
            .iter()
            .any(|c| c.type_ == cond::PROVISIONED && c.status == "True")
    }) {
        return Err(Failure::other(
            "request waits: pods that do not fit were reported Provisioned=True \
             (check the options' podTemplates.doesNotFit)",
        ));
    }
    Ok(())
}

async fn missing_templates_handled(ctx: &Ctx) -> Result<(), Failure> {
    ctx.request("orphan", "not-there-yet", Which::Fits, &[])
        .await?;
    ctx.hold(ctx.options.timeouts.hold.get()).await;
    let provisioned = |seen: &[crate::monitor::Seen]| {
        seen.iter().any(|s| {
            s.status
                .conditions
                .iter()
                .any(|c| c.type_ == cond::PROVISIONED && c.status == "True")
        })
    };
    if provisioned(&ctx.seen("orphan")) {
        return Err(Failure::rule(
            rule::MISSING_TEMPLATES_HANDLED,
            "request orphan was Provisioned=True without its PodTemplate",
        ));
    }
    // The template appears: a failed request stays failed (the monitor checks it), a waiting one
    // may go on.
    ctx.template("not-there-yet", Which::Fits).await?;
    ctx.hold(ctx.options.timeouts.hold.get()).await;
    Ok(())
}

async fn deletion_frees_capacity(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::Fits).await?;
    ctx.request("first", "pods", Which::Fits, &[]).await?;
    ctx.provisioned("first").await?;
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
        // A scaling class found room for a second set: the cluster is not full, so freeing
        // cannot be seen. Not the class's fault.
        return Err(Failure::cannot_test(
            "the class provisioned the fits pods a second time, so freeing cannot be seen: \
             give podTemplates.fits that the cluster has room for once, even by scaling up",
        ));
    }
    ctx.delete_request("first").await?;
    ctx.wait_for(
        "second",
        ctx.options.timeouts.retry.get(),
        "Provisioned=True once the first request was deleted",
        Some(rule::DELETION_CANCELS),
        |r| is_true(r, cond::PROVISIONED),
    )
    .await
}

async fn spec_immutable(ctx: &Ctx) -> Result<(), Failure> {
    ctx.template("pods", Which::Fits).await?;
    ctx.request("fixed", "pods", Which::Fits, &[]).await?;
    let api: kube::Api<api::autoscaling::ProvisioningRequest> =
        kube::Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let patch = serde_json::json!({"spec": {"parameters": {"tollgate.dev/changed": "yes"}}});
    match api
        .patch(
            "fixed",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&patch),
        )
        .await
    {
        Err(kube::Error::Api(s)) if s.code == 422 => Ok(()),
        Err(e) => Err(Failure::other(format!("patching request fixed: {e}"))),
        Ok(_) => Err(Failure::rule(
            rule::SPEC_IS_IMMUTABLE,
            "a change to spec.parameters was accepted (is the CRD's `self == oldSelf` rule installed?)",
        )),
    }
}
