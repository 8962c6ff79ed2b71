//! Checks of the cluster's installation rather than of the class: reported apart from the class's
//! verdict, since a vendor's class cannot pass or fail them. Their requests name a class nobody
//! serves, so that no provisioner's answer enters them.

use api::contract as rule;
use futures::FutureExt;

use api::autoscaling::ProvisioningRequest;

use super::{Ctx, Failure, Profile, Room, TestCase};

pub fn tests() -> Vec<TestCase> {
    vec![TestCase {
        name: "spec-immutable",
        description: "The cluster's ProvisioningRequest CRD refuses a change to a request's spec \
                      (its `self == oldSelf` rule).",
        profile: Profile::Installation,
        features: &[],
        room: Room::Free,
        run: |ctx| spec_immutable(ctx).boxed(),
    }]
}

/// A class no provisioner serves: the request is the CRD's business alone.
const UNSERVED_CLASS: &str = "unserved.conformance.tollgate.dev";

async fn spec_immutable(ctx: &Ctx) -> Result<(), Failure> {
    let api: kube::Api<ProvisioningRequest> =
        kube::Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let request: ProvisioningRequest = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "fixed"},
        "spec": {
            "provisioningClassName": UNSERVED_CLASS,
            "podSets": [{"podTemplateRef": {"name": "pods"}, "count": 1}],
        },
    }))
    .map_err(|e| Failure::other(format!("building request fixed: {e}")))?;
    api.create(&Default::default(), &request)
        .await
        .map_err(|e| Failure::other(format!("creating ProvisioningRequest fixed: {e}")))?;
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
            "the cluster accepted a change to spec.parameters: its ProvisioningRequest CRD lacks \
             upstream's `self == oldSelf` rule (install the CRD of autoscaler's release)",
        )),
    }
}
