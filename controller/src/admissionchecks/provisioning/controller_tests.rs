//! The provisioning check's controller against an API server: what it does with a workload's
//! requests when the workload was evicted and already holds quota again by the time the pass
//! runs (its changes come in one batch, as a busy watch delivers them).

use std::collections::BTreeMap;
use std::sync::Arc;

use api::autoscaling::ProvisioningRequest;
use api::kueue::{
    AdmissionCheck, ClusterQueue, ProvisioningRequestConfig, ResourceFlavor, Workload,
};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::PodTemplate;
use kube::api::{Api, PostParams};
use kube::runtime::watcher::Event;
use kube::{Client, ResourceExt};
use serde_json::json;

use super::Controller;
use crate::admissionchecks::{AdmissionCheckController, CoreWrite, Ctx};
use crate::options::Options;
use crate::state::World;
use crate::writer::Writer;
use crate::{Clock, workload};

const START: &str = "2026-01-01T00:00:00Z";

fn condition(type_: &str, status: &str, reason: &str) -> serde_json::Value {
    json!({"type": type_, "status": status, "reason": reason, "message": "",
           "lastTransitionTime": START})
}

/// The workload's status at each moment of the story.
fn status(reserved: bool, evicted: &str, check: &str) -> serde_json::Value {
    let mut conditions = vec![condition("Evicted", evicted, "Preempted")];
    if reserved {
        conditions.push(condition("QuotaReserved", "True", "QuotaReserved"));
    }
    json!({
        "conditions": conditions,
        "admission": reserved.then(|| json!({"clusterQueue": "team", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}, "count": 1}
        ]})),
        "admissionChecks": [{"name": "capacity", "state": check, "message": "",
                             "lastTransitionTime": START}],
    })
}

struct Story {
    _server: fake_apiserver::FakeApiServer,
    client: Client,
    options: Options,
    world: World,
    controller: Controller,
    /// The request provisioned before the eviction.
    provisioned: ProvisioningRequest,
}

async fn story(gate: Option<bool>) -> Story {
    story_with(gate, |_| {}).await
}

/// The story, with faults injected into the server once the objects exist.
async fn story_with(gate: Option<bool>, faults: impl FnOnce(&fake_apiserver::Faults)) -> Story {
    let start: Timestamp = START.parse().expect("a time");
    let mut builder = fake_apiserver::FakeApiServer::builder().start_time(start);
    for (file, yaml) in api::CHECKED_IN_CRDS {
        builder = builder.crds_yaml(file, yaml);
    }
    let server = builder.build().expect("server starts");
    let client = server.client();
    let mut options = Options {
        config: Default::default(),
        clock: Clock::anchored(start, tokio::time::Instant::now()),
        metrics: Default::default(),
        workers: Default::default(),
    };
    if let Some(on) = gate {
        options.config.feature_gates =
            BTreeMap::from([("CleanupProvisioningRequestsOnEviction".to_string(), on)]);
    }
    let mut world = World::default();
    let mut controller = Controller::new(&options);

    let config: ProvisioningRequestConfig = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ProvisioningRequestConfig",
        "metadata": {"name": "cfg", "resourceVersion": "1"},
        "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io"},
    }))
    .expect("a config");
    controller.apply(&world, Box::new(Event::Apply(config)));
    let check: AdmissionCheck = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "AdmissionCheck",
        "metadata": {"name": "capacity", "resourceVersion": "1"},
        "spec": {"controllerName": "kueue.x-k8s.io/provisioning-request",
                 "parameters": {"apiGroup": "kueue.x-k8s.io",
                                "kind": "ProvisioningRequestConfig", "name": "cfg"}},
    }))
    .expect("a check");
    world.admission_checks.apply(check);
    world
        .flavors
        .apply(ResourceFlavor::new("default", Default::default()));

    let workloads: Api<Workload> = Api::namespaced(client.clone(), "default");
    let wl: Workload = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"queueName": "main", "podSets": [{"name": "main", "count": 1, "template": {
            "spec": {"restartPolicy": "Never", "containers": [
                {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]},
    }))
    .expect("a workload");
    let wl = workloads
        .create(&PostParams::default(), &wl)
        .await
        .expect("created");
    let requests: Api<ProvisioningRequest> = Api::namespaced(client.clone(), "default");
    let provisioned: ProvisioningRequest = serde_json::from_value(json!({
        "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
        "metadata": {"name": "w-capacity-1", "namespace": "default",
                     "labels": {"kueue.x-k8s.io/managed": "true"},
                     "ownerReferences": [{"apiVersion": "kueue.x-k8s.io/v1beta2",
                         "kind": "Workload", "name": "w", "uid": wl.uid(), "controller": true,
                         "blockOwnerDeletion": true}]},
        "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
                 "podSets": [{"podTemplateRef": {"name": "ppt-w-capacity-1-main"}, "count": 1}]},
    }))
    .expect("a request");
    let mut provisioned = requests
        .create(&PostParams::default(), &provisioned)
        .await
        .expect("created");
    provisioned.status = Some(
        serde_json::from_value(json!({"conditions": [
            condition("Provisioned", "True", "Provisioned")]}))
        .expect("a status"),
    );
    let provisioned = requests
        .replace_status("w-capacity-1", &PostParams::default(), &provisioned)
        .await
        .expect("provisioned");
    controller.apply(&world, Box::new(Event::Apply(provisioned.clone())));

    // Admitted with the check Ready; evicted (the check reset to Pending); quota reserved again.
    // The controller hears of all three before its next pass.
    let mut versions = vec![];
    for (reserved, evicted, check) in [
        (true, "False", "Ready"),
        (false, "True", "Pending"),
        (true, "False", "Pending"),
    ] {
        let mut next = versions.last().cloned().unwrap_or_else(|| wl.clone());
        next.status =
            Some(serde_json::from_value(status(reserved, evicted, check)).expect("a status"));
        let written = workloads
            .replace_status("w", &PostParams::default(), &next)
            .await
            .expect("status written");
        versions.push(written);
    }
    assert!(workload::is_evicted(&versions[1]));
    let mut old: Option<Arc<Workload>> = None;
    for v in versions {
        let new = Arc::new(v);
        controller.workload_changed(&world, old.as_deref(), Some(&new));
        world.workloads.apply_shared(new.clone());
        old = Some(new);
    }
    faults(server.faults());
    Story {
        _server: server,
        client,
        options,
        world,
        controller,
        provisioned,
    }
}

/// Passes until nothing changes, each hearing of the workloads the last one wrote, as the
/// manager's loop runs them.
async fn run_passes(story: &mut Story) {
    let writer = Writer::new(story.client.clone(), story.options.clock);
    let mut wake = BTreeMap::new();
    for _ in 0..8 {
        // A pass that failed asks to be run again later; the manager would sleep until then.
        if let Some(at) = story.controller.next_wake() {
            let wait = at.duration_since(story.options.clock.now());
            tokio::time::sleep(wait.unsigned_abs()).await;
        }
        let mut ctx = Ctx::new(&mut story.world, &writer, &story.options, &mut wake);
        let progressed = story.controller.run(&mut ctx).await.expect("the pass runs");
        for written in ctx.into_written() {
            if let CoreWrite::Workload((old, new)) = written {
                story
                    .controller
                    .workload_changed(&story.world, old.as_deref(), new.as_deref());
            }
        }
        if !progressed && story.controller.next_wake().is_none() {
            return;
        }
    }
    panic!("the check's passes never settle");
}

async fn request_now(story: &Story) -> Option<ProvisioningRequest> {
    Api::<ProvisioningRequest>::namespaced(story.client.clone(), "default")
        .get_opt("w-capacity-1")
        .await
        .expect("a get")
}

/// The request now, which must not be the one provisioned before the eviction.
async fn renewed_request(story: &Story) -> ProvisioningRequest {
    let now = request_now(story).await.expect("a new request");
    assert_ne!(
        now.uid(),
        story.provisioned.uid(),
        "the old request was kept"
    );
    now
}

#[tokio::test(start_paused = true)]
async fn an_eviction_deletes_the_request_even_when_quota_is_back_before_the_pass() {
    let mut story = story(None).await;
    run_passes(&mut story).await;
    // The provisioned request went with the eviction; the pass made the next attempt afresh
    // (attempt retryCount + 1 = 1, as Kueue names it), one the autoscaler has yet to answer.
    let now = renewed_request(&story).await;
    assert!(now.status.is_none_or(|s| s.conditions.is_empty()));
}

#[tokio::test(start_paused = true)]
async fn without_the_cleanup_gate_the_provisioned_request_is_kept() {
    let mut story = story(Some(false)).await;
    run_passes(&mut story).await;
    let now = request_now(&story).await.expect("the request");
    assert_eq!(now.uid(), story.provisioned.uid());
}

#[tokio::test(start_paused = true)]
async fn a_refused_delete_of_an_evicted_workloads_request_is_tried_again() {
    let mut story = story_with(None, |faults| {
        faults.inject(
            fake_apiserver::FaultRule::fail(500)
                .verb(fake_apiserver::Verb::Delete)
                .resource("provisioningrequests")
                .times(1),
        );
    })
    .await;
    run_passes(&mut story).await;
    renewed_request(&story).await;
}

/// The next attempt reuses the evicted request's name, so its PodTemplate's too. When deleting
/// the old template fails after the garbage collector has taken it (or its watch event is late),
/// the controller still holds it: the new request must get a template of its own, not point at
/// one that is gone (the autoscaler would fail it: "missing pod templates").
#[tokio::test(start_paused = true)]
async fn a_new_attempt_under_the_old_name_gets_a_template_of_its_own() {
    let mut story = story(None).await;
    let templates: Api<PodTemplate> = Api::namespaced(story.client.clone(), "default");
    let old: PodTemplate = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "PodTemplate",
        "metadata": {"name": "ppt-w-capacity-1-main", "namespace": "default",
                     "labels": {"kueue.x-k8s.io/managed": "true"},
                     "ownerReferences": [{"apiVersion": "autoscaling.x-k8s.io/v1",
                         "kind": "ProvisioningRequest", "name": "w-capacity-1",
                         "uid": story.provisioned.uid(), "controller": true,
                         "blockOwnerDeletion": true}]},
        "template": {"spec": {"restartPolicy": "Never", "containers": [
            {"name": "c", "image": "busybox"}]}},
    }))
    .expect("a template");
    let old = templates
        .create(&PostParams::default(), &old)
        .await
        .expect("created");
    story
        .controller
        .apply(&story.world, Box::new(Event::Apply(old.clone())));
    story._server.faults().inject(
        fake_apiserver::FaultRule::fail(500)
            .verb(fake_apiserver::Verb::Delete)
            .resource("podtemplates")
            .times(1),
    );
    run_passes(&mut story).await;
    let now = renewed_request(&story).await;
    let template = templates
        .get_opt("ppt-w-capacity-1-main")
        .await
        .expect("a get")
        .expect("the new request's template exists");
    assert_ne!(template.uid(), old.uid(), "the old template was kept");
    let controller = template
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true))
        .map(|o| o.uid.clone());
    assert_eq!(controller, now.uid(), "the template is the new request's");
}

/// Quota reserved again on a flavor the check does not cover, while the status still lists the
/// check (the workload's list catches up in a later write): no request is made for it, and the
/// provisioned one goes.
#[tokio::test(start_paused = true)]
async fn no_request_for_a_check_the_new_flavor_does_not_need() {
    let mut story = story(Some(false)).await;
    let cq: ClusterQueue = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "team", "resourceVersion": "1"},
        "spec": {
            "admissionChecksStrategy": {"admissionChecks": [
                {"name": "capacity", "onFlavors": ["reserved"]}]},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "reserved", "resources": [{"name": "cpu", "nominalQuota": "4"}]},
                {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}],
        },
    }))
    .expect("a queue");
    story.world.cluster_queues.apply(cq);
    run_passes(&mut story).await;
    assert!(request_now(&story).await.is_none(), "a request was made");
}

/// The workload was deleted while the controller's watch was down: the controller still holds
/// it, but makes no request (nor template) for it. One made anyway would go to the garbage
/// collector at once, and its deletion would bring the pass back to make it again.
#[tokio::test(start_paused = true)]
async fn no_request_for_a_workload_deleted_behind_the_watch() {
    let mut story = story(None).await;
    Api::<Workload>::namespaced(story.client.clone(), "default")
        .delete("w", &Default::default())
        .await
        .expect("deleted");
    let mut feed = story._server.observe();
    run_passes(&mut story).await;
    let made: Vec<String> = feed
        .drain()
        .into_iter()
        .filter(|o| o.change == fake_apiserver::ChangeType::Added)
        .map(|o| format!("{} {}", o.object["kind"], o.object["metadata"]["name"]))
        .filter(|made| !made.starts_with("\"Event\""))
        .collect();
    assert!(made.is_empty(), "made for a deleted workload: {made:?}");
}
