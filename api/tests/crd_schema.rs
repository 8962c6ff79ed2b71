//! The generated CRDs carry upstream's names, scopes, validation and defaults.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;
use rstest::rstest;
use serde_json::{Value, json};

fn schema_of(crd: &CustomResourceDefinition) -> Value {
    let version = &crd.spec.versions[0];
    serde_json::to_value(
        version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .expect("schema"),
    )
    .expect("schema serialises")
}

/// Walks `properties` by field names.
fn prop<'a>(schema: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().fold(schema, |s, field| {
        let next = &s["properties"][*field];
        assert!(!next.is_null(), "no property {field} in path {path:?}");
        next
    })
}

#[test]
fn provisioning_request_spec_is_immutable() {
    let schema = schema_of(&api::autoscaling::ProvisioningRequest::crd());
    let spec = prop(&schema, &["spec"]);
    assert_eq!(
        spec["x-kubernetes-validations"],
        json!([{"rule": "self == oldSelf", "message": "Value is immutable"}])
    );
}

#[test]
fn provisioning_request_limits_match_upstream() {
    let schema = schema_of(&api::autoscaling::ProvisioningRequest::crd());
    let pod_sets = prop(&schema, &["spec", "podSets"]);
    assert_eq!(pod_sets["minItems"], json!(1));
    assert_eq!(pod_sets["maxItems"], json!(32));
    assert_eq!(
        pod_sets["items"]["properties"]["count"]["minimum"].as_f64(),
        Some(1.0)
    );
    assert_eq!(
        pod_sets["items"]["properties"]["count"]["format"],
        json!("int32")
    );
    let class = prop(&schema, &["spec", "provisioningClassName"]);
    assert_eq!(class["maxLength"], json!(253));
    let required = prop(&schema, &["spec"])["required"].clone();
    assert_eq!(required, json!(["podSets", "provisioningClassName"]));
    let parameters = prop(&schema, &["spec", "parameters"]);
    assert_eq!(parameters["maxProperties"], json!(100));
    assert_eq!(parameters["additionalProperties"]["maxLength"], json!(255));
    let details = prop(&schema, &["status", "provisioningClassDetails"]);
    assert_eq!(details["maxProperties"], json!(64));
    assert_eq!(details["additionalProperties"]["maxLength"], json!(32768));
}

#[test]
fn provisioning_request_names_and_subresources() {
    let crd = api::autoscaling::ProvisioningRequest::crd();
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("provisioningrequests.autoscaling.x-k8s.io")
    );
    assert_eq!(crd.spec.scope, "Namespaced");
    assert_eq!(
        crd.spec.names.short_names,
        Some(vec!["provreq".to_string(), "provreqs".to_string()])
    );
    let version = &crd.spec.versions[0];
    assert_eq!(version.name, "v1");
    assert!(version.storage && version.served);
    assert!(
        version
            .subresources
            .as_ref()
            .and_then(|s| s.status.as_ref())
            .is_some()
    );
    let columns = version
        .additional_printer_columns
        .as_ref()
        .expect("columns");
    assert_eq!(columns[0].name, "Age");
}

#[test]
fn retry_strategy_defaults_are_in_the_schema() {
    let schema = schema_of(&api::kueue::ProvisioningRequestConfig::crd());
    let retry = prop(&schema, &["spec", "retryStrategy"]);
    assert_eq!(
        retry["default"],
        json!({"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800})
    );
    assert_eq!(
        retry["properties"]["backoffLimitCount"]["default"],
        json!(3)
    );
    assert_eq!(
        retry["properties"]["backoffBaseSeconds"]["default"],
        json!(60)
    );
    assert_eq!(
        retry["properties"]["backoffMaxSeconds"]["default"],
        json!(1800)
    );
    let policy = prop(&schema, &["spec", "podSetMergePolicy"]);
    assert_eq!(
        policy["enum"],
        json!([
            "IdenticalPodTemplates",
            "IdenticalWorkloadSchedulingRequirements"
        ])
    );
    assert_eq!(
        prop(&schema, &["spec", "parameters"])["maxProperties"],
        json!(100)
    );
}

#[rstest]
#[case::provreq(api::autoscaling::ProvisioningRequest::crd(), &["status", "conditions"])]
#[case::workload(api::kueue::Workload::crd(), &["status", "conditions"])]
#[case::cluster_queue(api::kueue::ClusterQueue::crd(), &["status", "conditions"])]
#[case::local_queue(api::kueue::LocalQueue::crd(), &["status", "conditions"])]
#[case::admission_check(api::kueue::AdmissionCheck::crd(), &["status", "conditions"])]
#[case::multikueue_cluster(api::kueue::MultiKueueCluster::crd(), &["status", "conditions"])]
fn conditions_are_a_map_keyed_by_type(
    #[case] crd: CustomResourceDefinition,
    #[case] path: &[&str],
) {
    let schema = schema_of(&crd);
    let conditions = prop(&schema, path);
    assert_eq!(conditions["x-kubernetes-list-type"], json!("map"));
    assert_eq!(conditions["x-kubernetes-list-map-keys"], json!(["type"]));
}

#[rstest]
#[case::resource_flavor(api::kueue::ResourceFlavor::crd(), "resourceflavors.kueue.x-k8s.io", "Cluster", &["flavor", "flavors", "rf"])]
#[case::cluster_queue(api::kueue::ClusterQueue::crd(), "clusterqueues.kueue.x-k8s.io", "Cluster", &["cq"])]
#[case::local_queue(api::kueue::LocalQueue::crd(), "localqueues.kueue.x-k8s.io", "Namespaced", &["queue", "queues", "lq"])]
#[case::workload(api::kueue::Workload::crd(), "workloads.kueue.x-k8s.io", "Namespaced", &["kwl", "kueueworkload", "kueueworkloads"])]
#[case::admission_check(api::kueue::AdmissionCheck::crd(), "admissionchecks.kueue.x-k8s.io", "Cluster", &["ac"])]
#[case::prc(api::kueue::ProvisioningRequestConfig::crd(), "provisioningrequestconfigs.kueue.x-k8s.io", "Cluster", &[])]
#[case::mk_config(api::kueue::MultiKueueConfig::crd(), "multikueueconfigs.kueue.x-k8s.io", "Cluster", &[])]
#[case::mk_cluster(api::kueue::MultiKueueCluster::crd(), "multikueueclusters.kueue.x-k8s.io", "Cluster", &[])]
fn kueue_names_and_scopes(
    #[case] crd: CustomResourceDefinition,
    #[case] name: &str,
    #[case] scope: &str,
    #[case] short_names: &[&str],
) {
    assert_eq!(crd.metadata.name.as_deref(), Some(name));
    assert_eq!(crd.spec.scope, scope);
    assert_eq!(crd.spec.versions.len(), 1);
    assert_eq!(crd.spec.versions[0].name, "v1beta2");
    let got = crd.spec.names.short_names.clone().unwrap_or_default();
    assert_eq!(
        got,
        short_names
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
    );
}

#[test]
fn cluster_queue_quota_and_strategy() {
    let schema = schema_of(&api::kueue::ClusterQueue::crd());
    let strategy = prop(&schema, &["spec", "queueingStrategy"]);
    assert_eq!(strategy["default"], json!("BestEffortFIFO"));
    assert_eq!(strategy["enum"], json!(["BestEffortFIFO", "StrictFIFO"]));
    let quota = &prop(&schema, &["spec", "resourceGroups"])["items"]["properties"]["flavors"]["items"]
        ["properties"]["resources"]["items"]["properties"]["nominalQuota"];
    assert_eq!(quota["x-kubernetes-int-or-string"], json!(true));
}

#[test]
fn workload_admission_check_states_and_podsets() {
    let schema = schema_of(&api::kueue::Workload::crd());
    let state = &prop(&schema, &["status", "admissionChecks"])["items"]["properties"]["state"];
    assert_eq!(
        state["enum"],
        json!(["Pending", "Ready", "Retry", "Rejected"])
    );
    let pod_sets = prop(&schema, &["spec", "podSets"]);
    assert_eq!(pod_sets["minItems"], json!(1));
    assert_eq!(pod_sets["maxItems"], json!(18));
    assert_eq!(pod_sets["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_eq!(
        pod_sets["items"]["properties"]["name"]["default"],
        json!("main")
    );
    assert_eq!(
        pod_sets["items"]["properties"]["count"]["default"],
        json!(1)
    );
}

#[test]
fn admission_check_controller_name_is_immutable() {
    let schema = schema_of(&api::kueue::AdmissionCheck::crd());
    let name = prop(&schema, &["spec", "controllerName"]);
    assert_eq!(
        name["x-kubernetes-validations"][0]["rule"],
        json!("self == oldSelf")
    );
}

#[test]
fn all_crds_lists_every_kind_once() {
    let names: Vec<String> = api::all_crds()
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert_eq!(names.len(), 9);
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(names, sorted, "sorted and unique");
}

#[test]
fn workload_cel_rules_match_upstream() {
    let schema = schema_of(&api::kueue::Workload::crd());
    let rules: Vec<String> = prop(&schema, &["status"])["x-kubernetes-validations"]
        .as_array()
        .expect("status rules")
        .iter()
        .map(|r| r["message"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        rules,
        [
            "clusterName is immutable once set",
            "clusterName and nominatedClusterNames are mutually exclusive"
        ]
    );
    let pod_set = &prop(&schema, &["spec", "podSets"])["items"];
    assert_eq!(
        pod_set["x-kubernetes-validations"][0]["rule"],
        json!("has(self.minCount) ? self.minCount <= self.count : true")
    );
}

#[test]
fn local_queue_cluster_queue_is_immutable() {
    let schema = schema_of(&api::kueue::LocalQueue::crd());
    let cq = prop(&schema, &["spec", "clusterQueue"]);
    assert_eq!(
        cq["x-kubernetes-validations"],
        json!([{"rule": "self == oldSelf", "message": "field is immutable"}])
    );
}

#[test]
fn cluster_queue_preemption_enums_differ_per_field() {
    let schema = schema_of(&api::kueue::ClusterQueue::crd());
    let preemption = prop(&schema, &["spec", "preemption"]);
    assert_eq!(preemption["default"], json!({}));
    assert_eq!(
        preemption["properties"]["reclaimWithinCohort"]["enum"],
        json!(["Never", "LowerPriority", "Any"])
    );
    assert_eq!(
        preemption["properties"]["withinClusterQueue"]["enum"],
        json!(["Never", "LowerPriority", "LowerOrNewerEqualPriority"])
    );
}
