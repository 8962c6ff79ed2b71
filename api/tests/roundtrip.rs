//! A realistic object of each kind survives YAML -> typed -> JSON unchanged.

use std::fmt::Debug;

use api::autoscaling::ProvisioningRequest;
use api::kueue::*;
use serde::{Serialize, de::DeserializeOwned};

fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(yaml: &str) -> T {
    let original: serde_json::Value = serde_yaml::from_str(yaml).expect("fixture is YAML");
    let typed: T = serde_yaml::from_str(yaml).expect("fixture parses as the type");
    let back = serde_json::to_value(&typed).expect("serialises");
    assert_eq!(back, original, "the object changed in a round trip");
    let again: T = serde_json::from_value(back).expect("parses again");
    assert_eq!(again, typed);
    typed
}

#[test]
fn provisioning_request() {
    let pr: ProvisioningRequest = round_trip(include_str!("fixtures/provisioningrequest.yaml"));
    assert_eq!(pr.spec.pod_sets[0].count, 4);
    assert_eq!(pr.spec.parameters["noRetry"], "true");
    let status = pr.status.expect("status");
    assert_eq!(
        status.conditions[1].reason,
        api::constants::provreq_reason::CAPACITY_IS_NOT_FOUND
    );
}

#[test]
fn resource_flavor() {
    let rf: ResourceFlavor = round_trip(include_str!("fixtures/resourceflavor.yaml"));
    assert_eq!(rf.spec.node_taints[0].effect, "NoSchedule");
}

#[test]
fn cluster_queue() {
    let cq: ClusterQueue = round_trip(include_str!("fixtures/clusterqueue.yaml"));
    assert_eq!(cq.spec.queueing_strategy, QueueingStrategy::StrictFIFO);
    assert_eq!(cq.spec.stop_policy, Some(StopPolicy::Hold));
    let quota = &cq.spec.resource_groups[0].flavors[0].resources[1];
    assert_eq!(quota.nominal_quota.0, "48Gi");
    assert_eq!(
        quota.lending_limit.as_ref().map(|q| q.0.as_str()),
        Some("16Gi")
    );
}

#[test]
fn local_queue() {
    let lq: LocalQueue = round_trip(include_str!("fixtures/localqueue.yaml"));
    assert_eq!(lq.spec.cluster_queue, "team-a");
}

#[test]
fn workload() {
    let wl: Workload = round_trip(include_str!("fixtures/workload.yaml"));
    let status = wl.status.expect("status");
    assert_eq!(status.admission_checks[0].state, CheckState::Retry);
    assert_eq!(status.admission_checks[0].retry_count, Some(1));
    assert_eq!(status.nominated_cluster_names, ["worker1", "worker2"]);
    assert_eq!(status.requeue_state.and_then(|r| r.count), Some(1));
    assert_eq!(wl.spec.priority_class_name(), Some("high"));
}

#[test]
fn workload_defaults_podset_name_and_count() {
    let wl: Workload = serde_yaml::from_str(
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: w}\nspec:\n  podSets:\n  - template: {}\n",
    )
    .expect("parses");
    assert_eq!(wl.spec.pod_sets[0].name, "main");
    assert_eq!(wl.spec.pod_sets[0].count, 1);
}

#[test]
fn admission_check() {
    let ac: AdmissionCheck = round_trip(include_str!("fixtures/admissioncheck.yaml"));
    assert_eq!(
        ac.spec.controller_name,
        api::constants::controller_name::PROVISIONING_REQUEST
    );
}

#[test]
fn provisioning_request_config() {
    let prc: ProvisioningRequestConfig =
        round_trip(include_str!("fixtures/provisioningrequestconfig.yaml"));
    assert_eq!(
        prc.spec.pod_set_merge_policy,
        Some(PodSetMergePolicy::IdenticalWorkloadSchedulingRequirements)
    );
    let effective = prc.spec.effective_retry_strategy();
    assert_eq!(effective.backoff_limit_count, 2);
    assert_eq!(effective.backoff_max_seconds, 1800);
}

#[test]
fn provisioning_request_config_without_retry_strategy_uses_defaults() {
    let spec = ProvisioningRequestConfigSpec {
        provisioning_class_name: "check-capacity.autoscaling.x-k8s.io".into(),
        ..Default::default()
    };
    let effective = spec.effective_retry_strategy();
    assert_eq!(
        (
            effective.backoff_limit_count,
            effective.backoff_base_seconds,
            effective.backoff_max_seconds
        ),
        (3, 60, 1800)
    );
}

#[test]
fn multikueue_config() {
    let mkc: MultiKueueConfig = round_trip(include_str!("fixtures/multikueueconfig.yaml"));
    assert_eq!(mkc.spec.clusters.len(), 2);
}

#[test]
fn multikueue_cluster() {
    let mkc: MultiKueueCluster = round_trip(include_str!("fixtures/multikueuecluster.yaml"));
    let kc = mkc.spec.cluster_source.kube_config.expect("kubeConfig");
    assert_eq!(kc.location_type, LocationType::Secret);
}

#[test]
fn unknown_check_state_is_rejected() {
    let err =
        serde_json::from_value::<CheckState>(serde_json::json!("Maybe")).expect_err("not a state");
    assert!(err.to_string().contains("Maybe"), "{err}");
}
