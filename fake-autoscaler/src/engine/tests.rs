//! The engine against an in-memory world: every action is applied as the API server would, and
//! time moves from one wake-up to the next.

use std::collections::BTreeMap;

use api::autoscaling::{PodSet, ProvisioningRequest, ProvisioningRequestSpec, Reference};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus, PodTemplate, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use rstest::rstest;

use super::*;
use crate::broken::Broken;
use crate::config::Config;
use crate::nodes;

const START: &str = "2026-01-01T00:00:00Z";
const CHECK: &str = "check-capacity.autoscaling.x-k8s.io";
const ATOMIC: &str = "best-effort-atomic-scale-up.autoscaling.x-k8s.io";
const VENDOR: &str = "queued-provisioning.gke.io";

/// An autoscaler and the world it acts on, on a test clock.
struct Harness {
    world: World,
    autoscaler: Autoscaler,
    start: Timestamp,
    now: Timestamp,
    wake: Option<Timestamp>,
    /// `+SECONDS name Type=Status Reason` for every condition change, and node changes.
    log: Vec<String>,
    next_uid: u32,
    /// Node creations the "API server" refuses, from the next one on.
    refuse_node_creates: u32,
    /// Status writes lost on the way (the connection dropped), from the next one on.
    lose_status_writes: u32,
}

impl Harness {
    fn new(config: &str) -> Self {
        let start: Timestamp = START.parse().expect("time");
        let mut h = Harness {
            world: World::default(),
            autoscaler: Autoscaler::new(Config::parse(config).expect("config")),
            start,
            now: start,
            wake: None,
            log: vec![],
            next_uid: 0,
            refuse_node_creates: 0,
            lose_status_writes: 0,
        };
        h.settle();
        h
    }

    fn at(&self) -> i64 {
        self.now.duration_since(self.start).as_secs()
    }

    fn settle(&mut self) {
        for _ in 0..20 {
            let outcome = self.autoscaler.step(&self.world, self.now);
            self.wake = outcome.wake;
            if outcome.actions.is_empty() {
                return;
            }
            for action in outcome.actions {
                self.apply(action);
            }
        }
        panic!("the autoscaler kept writing at +{}s", self.at());
    }

    fn apply(&mut self, action: Action) {
        let t = self.at();
        match action {
            Action::WriteStatus(request) => {
                let key = key_of(&request);
                if self.lose_status_writes > 0 {
                    self.lose_status_writes -= 1;
                    self.log.push(format!("+{t}s {} status lost", key.1));
                    return;
                }
                let before = self.world.requests.get(&key).and_then(|r| r.status.clone());
                for c in &request.status.as_ref().expect("status").conditions {
                    let old = before
                        .as_ref()
                        .and_then(|s| s.conditions.iter().find(|o| o.type_ == c.type_));
                    if old.is_none_or(|o| o.status != c.status || o.reason != c.reason) {
                        self.log.push(format!(
                            "+{t}s {} {}={} {}",
                            key.1, c.type_, c.status, c.reason
                        ));
                    }
                }
                let mut request = *request;
                let rv: u64 = request
                    .metadata
                    .resource_version
                    .as_deref()
                    .unwrap_or("0")
                    .parse()
                    .unwrap_or(0);
                request.metadata.resource_version = Some((rv + 1).to_string());
                self.world.requests.insert(key, request);
            }
            Action::DeleteRequest(key) => {
                self.log.push(format!("+{t}s {} deleted", key.1));
                self.world.requests.remove(&key);
            }
            Action::CreateNode(node) => {
                let name = node.metadata.name.clone().expect("name");
                if self.refuse_node_creates > 0 {
                    self.refuse_node_creates -= 1;
                    self.log.push(format!("+{t}s node {name} refused"));
                    return;
                }
                self.log.push(format!("+{t}s node {name} created"));
                self.world.nodes.insert(name, *node);
            }
            Action::DeleteNode(name) => {
                self.log.push(format!("+{t}s node {name} deleted"));
                self.world.nodes.remove(&name);
            }
        }
    }

    /// Moves time on to `seconds` after the start, stopping at every wake-up on the way.
    fn advance_to(&mut self, seconds: i64) {
        let target = self.start + jiff::SignedDuration::from_secs(seconds);
        while let Some(w) = self.wake.filter(|w| *w <= target) {
            self.now = w;
            self.settle();
        }
        self.now = target;
        self.settle();
    }

    fn template(&mut self, name: &str, requests: &[(&str, &str)], selector: &[(&str, &str)]) {
        let spec = PodSpec {
            containers: vec![k8s_openapi::api::core::v1::Container {
                name: "c".into(),
                resources: Some(k8s_openapi::api::core::v1::ResourceRequirements {
                    requests: Some(
                        requests
                            .iter()
                            .map(|(k, v)| {
                                (
                                    k.to_string(),
                                    k8s_openapi::apimachinery::pkg::api::resource::Quantity(
                                        v.to_string(),
                                    ),
                                )
                            })
                            .collect(),
                    ),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            node_selector: (!selector.is_empty()).then(|| {
                selector
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
            ..Default::default()
        };
        let template = PodTemplate {
            metadata: meta(name),
            template: Some(PodTemplateSpec {
                metadata: None,
                spec: Some(spec),
            }),
        };
        self.world
            .templates
            .insert(("ns".into(), name.into()), template);
    }

    fn request(
        &mut self,
        name: &str,
        class: &str,
        pod_sets: &[(&str, i32)],
        params: &[(&str, &str)],
    ) {
        self.next_uid += 1;
        let mut metadata = meta(name);
        metadata.uid = Some(format!("uid-{}", self.next_uid));
        metadata.generation = Some(1);
        metadata.resource_version = Some("1".into());
        metadata.creation_timestamp = Some(Time(support::clock::truncate_seconds(self.now)));
        let request = ProvisioningRequest {
            metadata,
            spec: ProvisioningRequestSpec {
                pod_sets: pod_sets
                    .iter()
                    .map(|(t, count)| PodSet {
                        pod_template_ref: Reference {
                            name: t.to_string(),
                        },
                        count: *count,
                    })
                    .collect(),
                provisioning_class_name: class.into(),
                parameters: params
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            },
            status: None,
        };
        self.world
            .requests
            .insert(("ns".into(), name.into()), request);
        self.settle();
    }

    fn delete_request(&mut self, name: &str) {
        self.world
            .requests
            .remove(&("ns".to_string(), name.to_string()));
        self.settle();
    }

    /// A pod bound to `node`, consuming `request`'s capacity.
    fn bind_pod(&mut self, name: &str, template: &str, node: &str, request: &str) {
        let spec = self.world.templates[&("ns".to_string(), template.to_string())]
            .template
            .clone()
            .and_then(|t| t.spec)
            .expect("spec");
        let mut metadata = meta(name);
        metadata.annotations = Some(BTreeMap::from([(
            api::constants::annotation::CONSUME_PROVISIONING_REQUEST.to_string(),
            request.to_string(),
        )]));
        let pod = Pod {
            metadata,
            spec: Some(PodSpec {
                node_name: Some(node.into()),
                ..spec
            }),
            status: Some(PodStatus {
                phase: Some("Running".into()),
                ..Default::default()
            }),
        };
        self.world.pods.insert(("ns".into(), name.into()), pod);
        self.settle();
    }

    fn finish_pod(&mut self, name: &str) {
        if let Some(pod) = self
            .world
            .pods
            .get_mut(&("ns".to_string(), name.to_string()))
        {
            pod.status = Some(PodStatus {
                phase: Some("Succeeded".into()),
                ..Default::default()
            });
        }
        self.settle();
    }

    fn condition(&self, request: &str, type_: &str) -> Option<Condition> {
        self.world.requests[&("ns".to_string(), request.to_string())]
            .status
            .as_ref()?
            .conditions
            .iter()
            .find(|c| c.type_ == type_)
            .cloned()
    }

    fn details(&self, request: &str) -> BTreeMap<String, String> {
        self.world.requests[&("ns".to_string(), request.to_string())]
            .status
            .clone()
            .unwrap_or_default()
            .provisioning_class_details
    }

    fn node_names(&self) -> Vec<String> {
        self.world.nodes.keys().cloned().collect()
    }
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("ns".into()),
        ..Default::default()
    }
}

const GPU_GROUP: &str = r#"
nodeGroups:
  - name: gpu
    machine: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "4"}
    labels: {accelerator: h100}
    maxSize: 4
    scaleUpDelay: 2m
"#;

const ONE_CPU_NODE: &str = r#"
nodeGroups:
  - name: cpu
    machine: {cpu: "4"}
    minSize: 1
    maxSize: 1
"#;

#[test]
fn min_size_nodes_exist_from_the_start() {
    let h = Harness::new(ONE_CPU_NODE);
    assert_eq!(h.node_names(), ["cpu-0"]);
    assert_eq!(h.log, ["+0s node cpu-0 created"]);
}

#[test]
fn check_capacity_finds_room_and_books_it() {
    let mut h = Harness::new(ONE_CPU_NODE);
    h.template("t", &[("cpu", "1")], &[]);
    h.request("a", CHECK, &[("t", 3)], &[]);
    let provisioned = h.condition("a", "Provisioned").expect("provisioned");
    assert_eq!(
        (provisioned.status.as_str(), provisioned.reason.as_str()),
        ("True", "CapacityIsFound")
    );
    assert_eq!(provisioned.message, "Capacity is found in the cluster");
    assert_eq!(provisioned.observed_generation, Some(1));
    let accepted = h.condition("a", "Accepted").expect("accepted");
    assert_eq!(
        accepted.message,
        "ProvisioningRequest is accepted by ClusterAutoscaler"
    );
    // Three of four CPUs are booked: a second request for two does not fit.
    h.request("b", CHECK, &[("t", 2)], &[]);
    let b = h.condition("b", "Provisioned").expect("b");
    assert_eq!(
        (b.status.as_str(), b.reason.as_str()),
        ("False", "CapacityIsNotFound")
    );
    assert_eq!(
        b.message,
        "Capacity is not found, CA will try to find it later."
    );
}

#[test]
fn check_capacity_retries_at_one_two_four_minutes_and_finds_room_freed() {
    let mut h = Harness::new(ONE_CPU_NODE);
    h.template("t", &[("cpu", "3")], &[]);
    h.request("a", CHECK, &[("t", 1)], &[]);
    h.request("b", CHECK, &[("t", 1)], &[]);
    h.advance_to(400);
    let attempts: Vec<i64> = h
        .log
        .iter()
        .filter(|l| l.contains(" b Accepted"))
        .map(|l| l[1..l.find('s').expect("s")].parse().expect("secs"))
        .collect();
    assert_eq!(
        attempts,
        [0],
        "Accepted is logged once; its time moves on each retry"
    );
    // The Provisioned=False condition is rewritten at each retry: 60, 180 (60+120), 420 (180+240).
    let b = h.condition("b", "Provisioned").expect("b");
    assert_eq!(
        b.last_transition_time.0.duration_since(h.start).as_secs(),
        180
    );
    h.delete_request("a");
    h.advance_to(419);
    assert_eq!(h.condition("b", "Provisioned").expect("b").status, "False");
    h.advance_to(421);
    let b = h.condition("b", "Provisioned").expect("b");
    assert_eq!(
        (b.status.as_str(), b.reason.as_str()),
        ("True", "CapacityIsFound")
    );
    assert_eq!(
        b.last_transition_time.0.duration_since(h.start).as_secs(),
        420
    );
}

#[test]
fn check_capacity_with_no_retry_fails() {
    let mut h = Harness::new(ONE_CPU_NODE);
    h.template("t", &[("cpu", "5")], &[]);
    h.request("a", CHECK, &[("t", 1)], &[("noRetry", "true")]);
    let failed = h.condition("a", "Failed").expect("failed");
    assert_eq!(
        (failed.status.as_str(), failed.reason.as_str()),
        ("True", "CapacityIsNotFound")
    );
    assert_eq!(failed.message, "CA could not find requested capacity");
    assert!(h.condition("a", "Provisioned").is_none());
}

#[test]
fn a_missing_pod_template_fails_the_request() {
    let mut h = Harness::new(ONE_CPU_NODE);
    h.template("t", &[("cpu", "1")], &[]);
    h.request("a", CHECK, &[("t", 1), ("gone", 1), ("lost", 2)], &[]);
    assert!(
        h.condition("a", "Failed").is_none(),
        "the templates may be on their way"
    );
    h.advance_to(9);
    assert!(h.condition("a", "Failed").is_none());
    h.advance_to(10);
    let failed = h.condition("a", "Failed").expect("failed");
    assert_eq!(failed.reason, "FailedToCreatePods");
    assert_eq!(
        failed.message,
        "missing pod templates, 3 pod templates were referenced, 2 templates were missing: gone,lost"
    );
}

#[test]
fn atomic_scale_up_provisions_at_once_and_the_nodes_follow() {
    let mut h = Harness::new(GPU_GROUP);
    h.template(
        "t",
        &[("nvidia.com/gpu", "4"), ("cpu", "8")],
        &[("accelerator", "h100")],
    );
    h.request("train", ATOMIC, &[("t", 4)], &[]);
    let p = h.condition("train", "Provisioned").expect("provisioned");
    assert_eq!(
        (p.status.as_str(), p.reason.as_str()),
        ("True", "CapacityIsProvisioned")
    );
    assert!(h.node_names().is_empty(), "nodes take the scale-up delay");
    h.advance_to(120);
    assert_eq!(h.node_names(), ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]);
    let node = &h.world.nodes["gpu-2"];
    let labels = node.metadata.labels.clone().expect("labels");
    assert_eq!(labels["accelerator"], "h100");
    assert_eq!(labels[nodes::NODE_GROUP_LABEL], "gpu");
}

#[rstest]
#[case::before_the_delay(false)]
#[case::between_deciding_on_the_nodes_and_creating_them(true)]
fn a_restarted_autoscaler_sees_its_scale_ups_arrive(#[case] nodes_decided: bool) {
    let mut h = Harness::new(GPU_GROUP);
    h.template("t", &[("nvidia.com/gpu", "4")], &[]);
    h.request("train", ATOMIC, &[("t", 2)], &[]);
    h.advance_to(60);
    if nodes_decided {
        // At 120 s it decides to create the nodes, and dies before it does.
        h.now = h.start + jiff::SignedDuration::from_secs(120);
        let outcome = h.autoscaler.step(&h.world, h.now);
        assert_eq!(outcome.actions.len(), 2, "{:?}", outcome.actions);
    }
    assert!(h.node_names().is_empty());
    // Killed: its memory is gone, the cloud's node groups are not.
    let cloud = h.autoscaler.cloud.clone();
    h.autoscaler = Autoscaler::with_cloud(h.autoscaler.config().clone(), cloud);
    h.advance_to(130);
    assert_eq!(h.node_names(), ["gpu-0", "gpu-1"], "{:?}", h.log);
    // And a fresh cloud would have forgotten them: what the shared one is for.
    let mut forgetful = Harness::new(GPU_GROUP);
    forgetful.template("t", &[("nvidia.com/gpu", "4")], &[]);
    forgetful.request("train", ATOMIC, &[("t", 2)], &[]);
    forgetful.advance_to(60);
    forgetful.autoscaler = Autoscaler::new(forgetful.autoscaler.config().clone());
    forgetful.advance_to(130);
    assert!(forgetful.node_names().is_empty(), "{:?}", forgetful.log);
}

#[test]
fn a_lost_provisioned_write_is_made_again_without_finding_its_own_nodes_taken() {
    let mut h = Harness::new(GPU_GROUP);
    h.template("t", &[("nvidia.com/gpu", "4")], &[]);
    h.lose_status_writes = 1;
    h.request("train", ATOMIC, &[("t", 2)], &[]);
    assert_eq!(h.log[0], "+0s train status lost");
    let p = h.condition("train", "Provisioned").expect("provisioned");
    assert_eq!(
        (p.status.as_str(), p.reason.as_str()),
        ("True", "CapacityIsProvisioned"),
        "{:?}",
        h.log
    );
    h.advance_to(120);
    assert_eq!(h.node_names(), ["gpu-0", "gpu-1"], "{:?}", h.log);
}

#[test]
fn a_refused_node_creation_is_asked_for_again() {
    let mut h = Harness::new(GPU_GROUP);
    h.template("t", &[("nvidia.com/gpu", "4")], &[]);
    h.request("train", ATOMIC, &[("t", 2)], &[]);
    h.refuse_node_creates = 1;
    h.advance_to(120);
    assert_eq!(h.node_names(), ["gpu-0", "gpu-1"], "{:?}", h.log);
    assert!(
        h.log.contains(&"+120s node gpu-0 refused".to_string()),
        "{:?}",
        h.log
    );
}

#[test]
fn atomic_scale_up_adds_nothing_when_not_everything_fits() {
    let mut h = Harness::new(GPU_GROUP);
    h.template("t", &[("nvidia.com/gpu", "4")], &[]);
    h.request("big", ATOMIC, &[("t", 5)], &[]);
    let p = h.condition("big", "Provisioned").expect("provisioned");
    assert_eq!(
        (p.status.as_str(), p.reason.as_str()),
        ("False", "CapacityIsNotFound")
    );
    h.advance_to(3600);
    assert!(h.node_names().is_empty(), "{:?}", h.log);
}

#[test]
fn pods_that_match_no_group_get_no_scale_up() {
    let mut h = Harness::new(GPU_GROUP);
    h.template("t", &[("nvidia.com/gpu", "1")], &[("accelerator", "a100")]);
    h.request("a", ATOMIC, &[("t", 1)], &[]);
    assert_eq!(h.condition("a", "Provisioned").expect("p").status, "False");
}

#[test]
fn booking_expires_ten_minutes_after_provisioned_and_nodes_go_ten_minutes_later() {
    let mut h = Harness::new(GPU_GROUP);
    h.template("t", &[("nvidia.com/gpu", "4")], &[]);
    h.request("a", ATOMIC, &[("t", 2)], &[]);
    h.advance_to(599);
    assert!(h.condition("a", "BookingExpired").is_none());
    h.advance_to(600);
    let b = h.condition("a", "BookingExpired").expect("expired");
    assert_eq!(
        (b.status.as_str(), b.reason.as_str(), b.message.as_str()),
        (
            "True",
            "CapacityReservationTimeExpired",
            "Capacity reservation time is expired"
        )
    );
    h.advance_to(1300);
    assert!(h.node_names().is_empty(), "{:?}", h.log);
    assert!(
        h.log.contains(&"+1200s node gpu-0 deleted".to_string()),
        "{:?}",
        h.log
    );
}

#[test]
fn booking_is_consumed_when_every_pod_is_scheduled_and_nodes_stay_while_pods_run() {
    let mut h = Harness::new(GPU_GROUP);
    h.template("t", &[("nvidia.com/gpu", "4")], &[]);
    h.request("a", ATOMIC, &[("t", 2)], &[]);
    h.advance_to(120);
    h.bind_pod("p0", "t", "gpu-0", "a");
    assert!(
        h.condition("a", "BookingExpired").is_none(),
        "one of two pods"
    );
    h.bind_pod("p1", "t", "gpu-1", "a");
    let b = h.condition("a", "BookingExpired").expect("consumed");
    assert_eq!(
        (b.reason.as_str(), b.message.as_str()),
        (
            "CapacityBookingConsumed",
            "Capacity booking consumed: all pods scheduled"
        )
    );
    h.advance_to(3600);
    assert_eq!(
        h.node_names(),
        ["gpu-0", "gpu-1"],
        "running pods keep their nodes"
    );
    h.finish_pod("p0");
    h.finish_pod("p1");
    h.advance_to(3600 + 601);
    assert!(h.node_names().is_empty(), "{:?}", h.log);
}

/// Also for the variants whose broken rule touches booking or times: they must still book and
/// time as the reference does, or the conformance suite would blame the wrong rule.
#[rstest]
#[case::reference(None)]
#[case::booking_expired_before_provisioned(Some(Broken::BookingExpiredBeforeProvisioned))]
#[case::stale_transition_time(Some(Broken::StaleTransitionTime))]
fn booked_capacity_is_not_given_to_another_request_until_the_booking_ends(
    #[case] variant: Option<Broken>,
) {
    let broken = variant.map_or(String::new(), |v| format!("broken: {}", v.name()));
    let mut h = Harness::new(&format!("{ONE_CPU_NODE}{broken}\n"));
    h.template("t", &[("cpu", "3")], &[]);
    h.request("a", CHECK, &[("t", 1)], &[]);
    h.request("b", CHECK, &[("t", 1)], &[]);
    assert_eq!(h.condition("b", "Provisioned").expect("b").status, "False");
    // a's booking ends at 600s; b's retries come at 60, 180, 420, 900.
    h.advance_to(899);
    assert_eq!(
        h.condition("b", "Provisioned").expect("b").status,
        "False",
        "{:?}",
        h.log
    );
    h.advance_to(900);
    assert_eq!(h.condition("b", "Provisioned").expect("b").status, "True");
    // b's booking, from 900s, ends ten minutes later for every variant.
    h.template("c", &[("cpu", "3")], &[]);
    h.advance_to(1499);
    h.request("c", CHECK, &[("c", 1)], &[]);
    assert_eq!(
        h.condition("c", "Provisioned").expect("c").status,
        "False",
        "{:?}",
        h.log
    );
    h.advance_to(1560);
    assert_eq!(
        h.condition("c", "Provisioned").expect("c").status,
        "True",
        "{:?}",
        h.log
    );
}

#[test]
fn unprovisioned_requests_expire_after_seven_days_and_are_collected_seven_days_later() {
    let mut h = Harness::new(ONE_CPU_NODE);
    h.template("t", &[("cpu", "8")], &[]);
    h.request("a", CHECK, &[("t", 1)], &[]);
    let week = 7 * 24 * 3600;
    h.advance_to(week - 1);
    assert!(h.condition("a", "Failed").is_none());
    h.advance_to(week);
    let failed = h.condition("a", "Failed").expect("failed");
    assert_eq!(
        (failed.reason.as_str(), failed.message.as_str()),
        ("Expired", "ProvisioningRequest is expired")
    );
    // Provisioned=False was last written at a retry, before Failed: the request goes 7 days after
    // whichever of the two conditions is older, as upstream's garbage collector does.
    h.advance_to(2 * week);
    assert!(
        !h.world
            .requests
            .contains_key(&("ns".to_string(), "a".to_string()))
    );
}

#[test]
fn vendor_class_queues_then_provisions_with_details_then_revokes() {
    let mut h = Harness::new(&format!(
        r#"
nodeGroups:
  - name: pool-a
    machine: {{nvidia.com/gpu: "8", cpu: "200"}}
    maxSize: 2
    scaleUpDelay: 5m
classes:
  - name: {VENDOR}
    behaviour: vendor
    queueDelay: 30s
    provisioningClassDetails: {{NodePoolName: "{{nodeGroup}}", ResizeRequestName: "{{request}}-resize"}}
    nodeLabels: {{cloud.google.com/gke-nodepool: "{{nodeGroup}}"}}
"#
    ));
    h.template("t", &[("nvidia.com/gpu", "8")], &[]);
    h.request(
        "job",
        VENDOR,
        &[("t", 2)],
        &[("maxRunDurationSeconds", "3600")],
    );
    let a = h.condition("job", "Accepted").expect("accepted");
    assert_eq!(
        (a.status.as_str(), a.reason.as_str()),
        ("False", "NotAccepted")
    );
    assert_eq!(
        h.condition("job", "Provisioned").expect("p").reason,
        "NotProvisioned"
    );
    h.advance_to(30);
    assert_eq!(
        h.condition("job", "Accepted").expect("a").reason,
        "SuccessfullyQueued"
    );
    let eta = h.condition("job", "Provisioned").expect("p");
    assert_eq!(eta.status, "False");
    assert_eq!(
        eta.message,
        "Provisioning 2 node(s) in node pool pool-a, ETA 2026-01-01T00:05:30Z"
    );
    h.advance_to(330);
    let p = h.condition("job", "Provisioned").expect("p");
    assert_eq!(
        (p.status.as_str(), p.reason.as_str()),
        ("True", "Provisioned")
    );
    assert_eq!(
        h.details("job"),
        BTreeMap::from([
            ("NodePoolName".to_string(), "pool-a".to_string()),
            ("ResizeRequestName".to_string(), "job-resize".to_string()),
        ])
    );
    let labels = h.world.nodes["pool-a-0"]
        .metadata
        .labels
        .clone()
        .expect("labels");
    assert_eq!(labels["cloud.google.com/gke-nodepool"], "pool-a");
    h.advance_to(330 + 3600);
    let revoked = h.condition("job", "CapacityRevoked").expect("revoked");
    assert_eq!(revoked.status, "True");
    assert_eq!(
        revoked
            .last_transition_time
            .0
            .duration_since(h.start)
            .as_secs(),
        3930
    );
}

#[test]
fn vendor_class_fails_after_valid_until_seconds() {
    let mut h = Harness::new(&format!("classes: [{{name: {VENDOR}, behaviour: vendor}}]"));
    h.template("t", &[("nvidia.com/gpu", "8")], &[]);
    h.request("job", VENDOR, &[("t", 1)], &[("ValidUntilSeconds", "600")]);
    h.advance_to(599);
    assert!(h.condition("job", "Failed").is_none());
    h.advance_to(600);
    let failed = h.condition("job", "Failed").expect("failed");
    assert_eq!(failed.reason, "WaitTimeExceeded");
}

#[test]
fn vendor_class_reports_a_refused_scale_up_as_failed() {
    let mut h = Harness::new(&format!(
        r#"
nodeGroups:
  - name: pool
    machine: {{nvidia.com/gpu: "8"}}
    maxSize: 2
    failScaleUp: {{reason: QuotaExceeded, message: "GPU quota exceeded in us-central1"}}
classes: [{{name: {VENDOR}, behaviour: vendor}}]
"#
    ));
    h.template("t", &[("nvidia.com/gpu", "8")], &[]);
    h.request("job", VENDOR, &[("t", 1)], &[]);
    let failed = h.condition("job", "Failed").expect("failed");
    assert_eq!(
        (failed.reason.as_str(), failed.message.as_str()),
        ("QuotaExceeded", "GPU quota exceeded in us-central1")
    );
    assert!(h.node_names().is_empty());
}

#[test]
fn a_script_sets_conditions_at_exact_times_for_matching_requests_only() {
    let mut h = Harness::new(
        r#"
scripts:
  - match: {name: "train-*"}
    timeline:
      - {after: 30s, set: Accepted}
      - after: 2m
        set: {type: Provisioned, status: "True", reason: Provisioned, message: ready}
        details: {ResizeRequestName: "{request}"}
      - {after: 10m, set: BookingExpired}
      - {after: 1h, delete: true}
"#,
    );
    h.template("t", &[("cpu", "1")], &[]);
    h.request("train-1", CHECK, &[("t", 1)], &[]);
    h.request("other", CHECK, &[("t", 1)], &[]);
    assert!(h.condition("train-1", "Accepted").is_none());
    h.advance_to(3000);
    assert_eq!(
        h.log,
        [
            "+0s other Accepted=True Accepted",
            "+0s other Provisioned=False CapacityIsNotFound",
            "+30s train-1 Accepted=True Accepted",
            "+120s train-1 Provisioned=True Provisioned",
            "+600s train-1 BookingExpired=True CapacityReservationTimeExpired",
        ]
    );
    let p = h.condition("train-1", "Provisioned").expect("p");
    assert_eq!(
        p.last_transition_time.0.duration_since(h.start).as_secs(),
        120
    );
    assert_eq!(h.details("train-1")["ResizeRequestName"], "train-1");
    h.advance_to(3600);
    assert!(
        !h.world
            .requests
            .contains_key(&("ns".to_string(), "train-1".to_string()))
    );
}

#[test]
fn requests_of_other_classes_are_left_alone() {
    let mut h = Harness::new(ONE_CPU_NODE);
    h.template("t", &[("cpu", "1")], &[]);
    h.request("a", "someone-else.example.com", &[("t", 1)], &[]);
    h.advance_to(8 * 24 * 3600);
    assert!(
        h.world.requests[&("ns".to_string(), "a".to_string())]
            .status
            .is_none()
    );
}

mod variants;
