use super::*;
use rstest::rstest;
use serde_json::{Value, json};

fn container(requests: Value, limits: Value) -> Value {
    json!({"name": "c", "image": "busybox", "resources": {"requests": requests, "limits": limits}})
}

fn pod_set(name: &str, count: i32, containers: Vec<Value>) -> Value {
    json!({"name": name, "count": count, "template": {"spec": {"containers": containers}}})
}

/// A workload holding quota: `pod_sets` as given, each assigned flavor `gpu-a3` for every
/// resource, with `admitted` counts where given (else the podset's count).
fn workload(pod_sets: Vec<Value>, admitted: &[(&str, Option<i32>)]) -> Workload {
    let assignments: Vec<Value> = admitted
        .iter()
        .map(|(name, count)| {
            let mut a =
                json!({"name": name, "flavors": {"cpu": "gpu-a3", "nvidia.com/gpu": "gpu-a3"}});
            if let Some(c) = count {
                a["count"] = json!(c);
            }
            a
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-train-5c1e2", "namespace": "team-a", "uid": "wl-uid",
            "annotations": {"provreq.kueue.x-k8s.io/maxRunDurationSeconds": "3600", "other": "x"}
        },
        "spec": {"queueName": "lq", "podSets": pod_sets},
        "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": assignments}}
    }))
    .expect("workload")
}

fn gpu_pod_set(name: &str, count: i32) -> Value {
    pod_set(
        name,
        count,
        vec![container(
            json!({"cpu": "1"}),
            json!({"nvidia.com/gpu": "4"}),
        )],
    )
}

fn cpu_pod_set(name: &str, count: i32) -> Value {
    pod_set(name, count, vec![container(json!({"cpu": "1"}), json!({}))])
}

fn config(value: Value) -> ProvisioningRequestConfigSpec {
    let mut v = json!({"provisioningClassName": "queued-provisioning.gke.io"});
    v.as_object_mut()
        .unwrap()
        .extend(value.as_object().unwrap().clone());
    serde_json::from_value(v).expect("config")
}

#[rstest]
#[case::any_podset_when_nothing_is_managed(json!({}), vec![cpu_pod_set("main", 2)], &[("main", None)], Ok(true))]
#[case::only_podsets_using_a_managed_resource(json!({"managedResources": ["nvidia.com/gpu"]}),
    vec![cpu_pod_set("main", 2)], &[("main", None)], Ok(false))]
#[case::a_limit_counts_as_use(json!({"managedResources": ["nvidia.com/gpu"]}),
    vec![gpu_pod_set("main", 2)], &[("main", None)], Ok(true))]
#[case::an_init_container_counts(json!({"managedResources": ["nvidia.com/gpu"]}),
    vec![json!({"name": "main", "count": 1, "template": {"spec": {
        "initContainers": [container(json!({"nvidia.com/gpu": "1"}), json!({}))],
        "containers": [container(json!({"cpu": "1"}), json!({}))]}}})],
    &[("main", None)], Ok(true))]
#[case::nothing_admitted(json!({}), vec![cpu_pod_set("main", 2)], &[("main", Some(0))], Ok(false))]
#[case::a_missing_assignment_is_an_error(json!({}), vec![cpu_pod_set("main", 2)], &[],
    Err(RequestError::MissingAssignment("main".into())))]
fn a_request_is_needed_for_admitted_pods_using_managed_resources(
    #[case] cfg: Value,
    #[case] pod_sets: Vec<Value>,
    #[case] admitted: &[(&str, Option<i32>)],
    #[case] want: Result<bool, RequestError>,
) {
    assert_eq!(is_needed(&workload(pod_sets, admitted), &config(cfg)), want);
}

#[test]
fn the_missing_assignment_error_names_the_podset() {
    let err = is_needed(
        &workload(vec![cpu_pod_set("main", 1)], &[]),
        &config(json!({})),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "inconsistent podSet assignments: missing assignment for PodSet \"main\""
    );
}

/// A master and workers with the same requests but different labels, and a CPU-only sidecar set.
fn master_workers() -> Workload {
    let mut master = gpu_pod_set("master", 1);
    master["template"]["metadata"] = json!({"labels": {"role": "master"}});
    let mut workers = gpu_pod_set("workers", 3);
    workers["template"]["metadata"] = json!({"labels": {"role": "worker"}});
    let mut also = gpu_pod_set("more-workers", 2);
    also["template"]["metadata"] = json!({"labels": {"role": "worker"}});
    workload(
        vec![master, workers, cpu_pod_set("logger", 1), also],
        &[
            ("master", None),
            ("workers", None),
            ("logger", None),
            ("more-workers", Some(1)),
        ],
    )
}

#[rstest]
#[case::no_policy_no_merging(json!({}),
    vec![(vec!["master"], 1), (vec!["workers"], 3), (vec!["logger"], 1), (vec!["more-workers"], 1)])]
#[case::identical_templates(json!({"podSetMergePolicy": "IdenticalPodTemplates"}),
    vec![(vec!["master"], 1), (vec!["workers", "more-workers"], 4), (vec!["logger"], 1)])]
#[case::identical_scheduling_requirements_counting_limits_as_requests(json!({"podSetMergePolicy": "IdenticalWorkloadSchedulingRequirements"}),
    vec![(vec!["master", "workers", "more-workers"], 5), (vec!["logger"], 1)])]
#[case::managed_resources_filter_first(json!({"podSetMergePolicy": "IdenticalWorkloadSchedulingRequirements", "managedResources": ["nvidia.com/gpu"]}),
    vec![(vec!["master", "workers", "more-workers"], 5)])]
fn podsets_merge_by_the_configs_policy(#[case] cfg: Value, #[case] want: Vec<(Vec<&str>, i32)>) {
    let wl = master_workers();
    let merged = merged_pod_sets(&wl, &config(cfg)).expect("merged");
    let got: Vec<(Vec<&str>, i32)> = merged
        .iter()
        .map(|m| (m.members.clone(), m.count))
        .collect();
    assert_eq!(got, want);
}

fn flavors() -> BTreeMap<String, ResourceFlavorSpec> {
    let spec: ResourceFlavorSpec = serde_json::from_value(json!({
        "nodeLabels": {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    }))
    .unwrap();
    [("gpu-a3".to_string(), spec)].into()
}

#[test]
fn the_pod_template_carries_the_flavor_and_limits_as_requests() {
    let wl = workload(vec![gpu_pod_set("main", 4)], &[("main", None)]);
    let merged = merged_pod_sets(&wl, &config(json!({}))).unwrap();
    let pt = pod_template(
        &wl,
        "ppt-job-train-5c1e2-prov-1-main",
        &merged[0],
        &flavors(),
    )
    .unwrap();
    let got = serde_json::to_value(&pt).unwrap();
    assert_eq!(got["metadata"]["name"], "ppt-job-train-5c1e2-prov-1-main");
    assert_eq!(got["metadata"]["namespace"], "team-a");
    assert_eq!(
        got["metadata"]["labels"],
        json!({"kueue.x-k8s.io/managed": "true"})
    );
    assert_eq!(
        got["metadata"]["ownerReferences"],
        json!([{"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "name": "job-train-5c1e2",
            "uid": "wl-uid", "controller": true, "blockOwnerDeletion": true}])
    );
    let spec = &got["template"]["spec"];
    assert_eq!(
        spec["nodeSelector"],
        json!({"cloud.google.com/gke-accelerator": "nvidia-h100-80gb"})
    );
    assert_eq!(
        spec["tolerations"],
        json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    );
    assert_eq!(
        spec["containers"][0]["resources"]["requests"],
        json!({"cpu": "1", "nvidia.com/gpu": "4"})
    );
}

#[test]
fn an_unknown_flavor_is_an_error_naming_it() {
    let wl = workload(vec![gpu_pod_set("main", 4)], &[("main", None)]);
    let merged = merged_pod_sets(&wl, &config(json!({}))).unwrap();
    let err = pod_template(&wl, "pt", &merged[0], &BTreeMap::new()).unwrap_err();
    assert!(err.to_string().contains("gpu-a3"), "{err}");
}

#[test]
fn the_request_has_the_class_parameters_counts_and_owner() {
    let wl = master_workers();
    let cfg = config(json!({
        "parameters": {"maxRunDurationSeconds": "600", "zone": "us-central1-a"},
        "podSetMergePolicy": "IdenticalPodTemplates"
    }));
    let merged = merged_pod_sets(&wl, &cfg).unwrap();
    let req = provisioning_request(&wl, "prov", 2, &cfg, &merged);
    let got = serde_json::to_value(&req).unwrap();
    assert_eq!(got["metadata"]["name"], "job-train-5c1e2-prov-2");
    assert_eq!(got["metadata"]["namespace"], "team-a");
    assert_eq!(
        got["metadata"]["labels"],
        json!({"kueue.x-k8s.io/managed": "true"})
    );
    assert_eq!(got["metadata"]["ownerReferences"][0]["kind"], "Workload");
    assert_eq!(
        got["spec"],
        json!({
            "provisioningClassName": "queued-provisioning.gke.io",
            // The workload's annotation wins over the config; other annotations are not parameters.
            "parameters": {"maxRunDurationSeconds": "3600", "zone": "us-central1-a"},
            "podSets": [
                {"podTemplateRef": {"name": "ppt-job-train-5c1e2-prov-2-master"}, "count": 1},
                {"podTemplateRef": {"name": "ppt-job-train-5c1e2-prov-2-workers"}, "count": 4},
                {"podTemplateRef": {"name": "ppt-job-train-5c1e2-prov-2-logger"}, "count": 1}
            ]
        })
    );
}

#[rstest]
#[case::same(json!({"parameters": {"a": "1"}}), true)]
#[case::other_class(json!({"provisioningClassName": "check-capacity.autoscaling.x-k8s.io", "parameters": {"a": "1"}}), false)]
#[case::changed_parameter(json!({"parameters": {"a": "2"}}), false)]
#[case::new_parameter(json!({"parameters": {"a": "1", "b": "1"}}), false)]
#[case::fewer_parameters(json!({}), true)]
fn a_request_is_in_sync_while_class_and_config_parameters_match(
    #[case] now: Value,
    #[case] want: bool,
) {
    let wl = workload(vec![cpu_pod_set("main", 1)], &[("main", None)]);
    let before = config(json!({"parameters": {"a": "1"}}));
    let merged = merged_pod_sets(&wl, &before).unwrap();
    let req = provisioning_request(&wl, "prov", 1, &before, &merged);
    assert_eq!(synced_with_config(&req, &wl, &config(now)), want);
}

#[test]
fn a_parameter_the_workload_overrides_keeps_the_request_in_sync() {
    // The workload's annotation sets maxRunDurationSeconds to 3600 over the config's 7200.
    let wl = workload(vec![cpu_pod_set("main", 1)], &[("main", None)]);
    let cfg = config(json!({"parameters": {"maxRunDurationSeconds": "7200"}}));
    let merged = merged_pod_sets(&wl, &cfg).unwrap();
    let req = provisioning_request(&wl, "prov", 1, &cfg, &merged);
    assert_eq!(req.spec.parameters["maxRunDurationSeconds"], "3600");
    assert!(synced_with_config(&req, &wl, &cfg));
}

fn provisioned(mut req: ProvisioningRequest, details: Value) -> ProvisioningRequest {
    req.status =
        Some(serde_json::from_value(json!({"provisioningClassDetails": details})).unwrap());
    req
}

#[test]
fn ready_updates_tie_every_merged_member_to_the_request() {
    let wl = master_workers();
    let cfg = config(json!({
        "podSetMergePolicy": "IdenticalWorkloadSchedulingRequirements",
        "managedResources": ["nvidia.com/gpu"],
        "podSetUpdates": {"nodeSelector": [
            {"key": "autoscaling.gke.io/provisioning-request", "valueFromProvisioningClassDetail": "ResizeRequestName"},
            {"key": "topology.kubernetes.io/zone", "valueFromProvisioningClassDetail": "SelectedZone"}
        ]}
    }));
    let merged = merged_pod_sets(&wl, &cfg).unwrap();
    let req = provisioned(
        provisioning_request(&wl, "prov", 1, &cfg, &merged),
        json!({"ResizeRequestName": "resize-123"}),
    );
    let updates = pod_set_updates(&wl, &req, &cfg);
    let names: Vec<&str> = updates.iter().map(|u| u.name.as_str()).collect();
    // Kueue gives only "master" an update (kueue#14408); the workers would land anywhere.
    assert_eq!(names, ["master", "workers", "more-workers"]);
    for u in &updates {
        assert_eq!(
            u.annotations,
            BTreeMap::from([
                (
                    "autoscaling.x-k8s.io/consume-provisioning-request".to_string(),
                    "job-train-5c1e2-prov-1".to_string()
                ),
                (
                    "autoscaling.x-k8s.io/provisioning-class-name".to_string(),
                    "queued-provisioning.gke.io".to_string()
                ),
            ])
        );
        // SelectedZone was not reported: that entry is skipped.
        assert_eq!(
            u.node_selector,
            BTreeMap::from([(
                "autoscaling.gke.io/provisioning-request".to_string(),
                "resize-123".to_string()
            )])
        );
    }
}

#[test]
fn without_node_selector_config_updates_carry_only_the_annotations() {
    let wl = workload(vec![gpu_pod_set("main", 4)], &[("main", None)]);
    let cfg = config(json!({}));
    let merged = merged_pod_sets(&wl, &cfg).unwrap();
    let req = provisioned(
        provisioning_request(&wl, "prov", 1, &cfg, &merged),
        json!({"x": "y"}),
    );
    let updates = pod_set_updates(&wl, &req, &cfg);
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0].name, "main");
    assert!(updates[0].node_selector.is_empty());
    assert_eq!(updates[0].annotations.len(), 2);
}

#[test]
fn requests_merge_by_value_not_by_spelling() {
    let wl = workload(
        vec![
            pod_set(
                "a",
                1,
                vec![container(json!({"cpu": "1", "memory": "2Gi"}), json!({}))],
            ),
            pod_set(
                "b",
                2,
                vec![container(
                    json!({"cpu": "1000m", "memory": "2048Mi"}),
                    json!({}),
                )],
            ),
        ],
        &[("a", None), ("b", None)],
    );
    let cfg = config(json!({"podSetMergePolicy": "IdenticalWorkloadSchedulingRequirements"}));
    let merged = merged_pod_sets(&wl, &cfg).unwrap();
    let got: Vec<(Vec<&str>, i32)> = merged
        .iter()
        .map(|m| (m.members.clone(), m.count))
        .collect();
    assert_eq!(got, vec![(vec!["a", "b"], 3)]);
}
