use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{PodTemplateSpec, Toleration};
use k8s_openapi::apimachinery::pkg::{
    api::resource::Quantity,
    apis::meta::v1::{Condition, Time},
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema;

/// The unit of admission: the pods of one job, queued in a LocalQueue.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "Workload",
    doc = "The unit of admission: the pods of one job.",
    derive = "PartialEq",
    plural = "workloads",
    namespaced,
    status = "WorkloadStatus",
    shortname = "kwl",
    shortname = "kueueworkload",
    shortname = "kueueworkloads",
    printcolumn = r#"{"name":"Queue","type":"string","description":"Name of the queue this workload was submitted to","jsonPath":".spec.queueName"}"#,
    printcolumn = r#"{"name":"Reserved in","type":"string","description":"Name of the ClusterQueue where the workload is reserving quota","jsonPath":".status.admission.clusterQueue"}"#,
    printcolumn = r#"{"name":"Admitted","type":"string","description":"Admission status","jsonPath":".status.conditions[?(@.type=='Admitted')].status"}"#,
    printcolumn = r#"{"name":"Finished","type":"string","description":"Workload finished","jsonPath":".status.conditions[?(@.type=='Finished')].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","description":"Time this workload was created","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase", remote = "Self")]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "!has(self.priorityClassRef) || has(self.priority)", "message": "priority should not be nil when priorityClassRef is set"}]))]
pub struct WorkloadSpec {
    /// The groups of identical pods that make up the workload.
    #[schemars(length(min = 1, max = 18), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub pod_sets: Vec<PodSet>,
    /// The LocalQueue (same namespace) the workload is submitted to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), regex(pattern = schema::DNS_SUBDOMAIN))]
    pub queue_name: Option<String>,
    /// The priority class (WorkloadPriorityClass or PriorityClass) the priority was taken from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_ref: Option<PriorityClassRef>,
    /// Priority; higher is admitted first and may preempt lower.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// False deactivates the workload: it is evicted and not admitted until reactivated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = true))]
    pub active: Option<bool>,
    /// Maximum run time in seconds after which the workload is deactivated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub maximum_execution_time_seconds: Option<i32>,
}

impl WorkloadSpec {
    /// The name of the priority class, if any.
    pub fn priority_class_name(&self) -> Option<&str> {
        self.priority_class_ref.as_ref().map(|r| r.name.as_str())
    }
}

/// A reference to the priority class a workload's priority comes from.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "(self.group == 'scheduling.k8s.io') ? self.kind == 'PriorityClass' : true", "message": "only the PriorityClass kind is allowed for the scheduling.k8s.io group"},
    {"rule": "(self.group == 'kueue.x-k8s.io') ? self.kind == 'WorkloadPriorityClass' : true", "message": "only the WorkloadPriorityClass kind is allowed for the kueue.x-k8s.io group"},
]))]
pub struct PriorityClassRef {
    /// `kueue.x-k8s.io` (WorkloadPriorityClass) or `scheduling.k8s.io` (PriorityClass).
    #[schemars(extend("enum" = ["kueue.x-k8s.io", "scheduling.k8s.io"]))]
    pub group: String,
    /// `WorkloadPriorityClass` or `PriorityClass`.
    #[schemars(extend("enum" = ["WorkloadPriorityClass", "PriorityClass"]))]
    pub kind: String,
    /// Name of the priority class.
    #[schemars(length(min = 1, max = 253), regex(pattern = schema::DNS_SUBDOMAIN))]
    pub name: String,
}

/// A group of pods with the same template.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "has(self.minCount) ? self.minCount <= self.count : true", "message": "minCount should be positive and less or equal to count"}]))]
pub struct PodSet {
    /// Name of the podset, unique in the workload.
    #[serde(default = "default_pod_set_name")]
    #[schemars(length(max = 63), regex(pattern = schema::DNS_LABEL))]
    pub name: String,
    /// The pods' template.
    pub template: PodTemplateSpec,
    /// Number of pods.
    #[serde(default = "default_count")]
    #[schemars(range(min = 0))]
    pub count: i32,
    /// The smallest acceptable count for partial admission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub min_count: Option<i32>,
}

fn default_pod_set_name() -> String {
    "main".to_owned()
}

fn default_count() -> i32 {
    1
}

/// What the workload has been granted and what its admission checks say.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [
    {"rule": "!has(oldSelf.clusterName) || !has(self.clusterName) || oldSelf.clusterName == self.clusterName", "message": "clusterName is immutable once set"},
    {"rule": "!has(self.clusterName) || (!has(self.nominatedClusterNames) || (has(self.nominatedClusterNames) && size(self.nominatedClusterNames) == 0))", "message": "clusterName and nominatedClusterNames are mutually exclusive"},
]))]
pub struct WorkloadStatus {
    /// QuotaReserved, Admitted, Evicted, Requeued, DeactivationTarget, Finished, ...
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// The ClusterQueue and flavors the quota is reserved in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<Admission>,
    /// When the workload may be queued again after an eviction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_state: Option<RequeueState>,
    /// The state of every admission check of the ClusterQueue.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub admission_checks: Vec<AdmissionCheckState>,
    /// Total requests per podset after resource transformations, while pending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 18), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub resource_requests: Vec<PodSetRequest>,
    /// Counters of the workload's evictions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_stats: Option<SchedulingStats>,
    /// MultiKueue: the worker clusters the workload is currently dispatched to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 20), extend("x-kubernetes-list-type" = "atomic"))]
    pub nominated_cluster_names: Vec<String>,
    /// MultiKueue: the worker cluster that admitted the workload. Immutable once set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 256))]
    pub cluster_name: Option<String>,
}

/// A quota reservation.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Admission {
    /// The ClusterQueue holding the reservation.
    #[schemars(length(max = 253), regex(pattern = schema::DNS_SUBDOMAIN))]
    pub cluster_queue: String,
    /// Flavors and usage per podset.
    #[schemars(length(min = 1, max = 18), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub pod_set_assignments: Vec<PodSetAssignment>,
}

/// Flavors and usage of one podset.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSetAssignment {
    /// Name of the podset.
    #[schemars(length(max = 63), regex(pattern = schema::DNS_LABEL))]
    pub name: String,
    /// Flavor per resource.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub flavors: BTreeMap<String, String>,
    /// Quota used per resource (all pods of the podset).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resource_usage: BTreeMap<String, Quantity>,
    /// Number of pods admitted (less than the podset count under partial admission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub count: Option<i32>,
}

/// The state of one admission check on a workload.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckState {
    /// Name of the AdmissionCheck.
    #[schemars(length(max = 316))]
    pub name: String,
    /// Pending, Ready, Retry or Rejected.
    pub state: CheckState,
    /// When the state last changed.
    pub last_transition_time: Time,
    /// Human-readable detail.
    #[serde(default)]
    #[schemars(length(max = 32768))]
    pub message: String,
    /// How long to wait before requeueing after a Retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub requeue_after_seconds: Option<i32>,
    /// How many times the check went to Retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub retry_count: Option<i32>,
    /// Changes to apply to the podsets' pods once admitted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8), extend("x-kubernetes-list-type" = "atomic"))]
    pub pod_set_updates: Vec<PodSetUpdate>,
}

/// The state of an admission check.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, Default, JsonSchema)]
pub enum CheckState {
    /// Not decided yet.
    #[default]
    Pending,
    /// Passed.
    Ready,
    /// Evict, release quota and try again after a backoff.
    Retry,
    /// Failed for good: deactivate the workload.
    Rejected,
}

impl CheckState {
    /// The state as written in the API.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckState::Pending => "Pending",
            CheckState::Ready => "Ready",
            CheckState::Retry => "Retry",
            CheckState::Rejected => "Rejected",
        }
    }
}

impl std::fmt::Display for CheckState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Changes an admission check asks for on one podset's pods.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSetUpdate {
    /// Name of the podset.
    #[schemars(length(max = 63), regex(pattern = schema::DNS_LABEL))]
    pub name: String,
    /// Labels to add.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations to add.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Node selector entries to add.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_selector: BTreeMap<String, String>,
    /// Tolerations to add.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8), extend("x-kubernetes-list-type" = "atomic"))]
    pub tolerations: Vec<Toleration>,
}

/// Requeue bookkeeping after evictions.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequeueState {
    /// How many times the workload was requeued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub count: Option<i32>,
    /// The workload is not queued again before this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeue_at: Option<Time>,
}

/// Scheduling statistics of a workload.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SchedulingStats {
    /// One counter per (reason, underlyingCause), in the order each was first seen.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["reason", "underlyingCause"]))]
    pub evictions: Vec<WorkloadSchedulingStatsEviction>,
}

/// How many times the workload was evicted for one reason and underlying cause.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSchedulingStatsEviction {
    /// The eviction's reason: Preempted, AdmissionCheck, Deactivated, PodsReadyTimeout, ...
    #[schemars(length(max = 316))]
    pub reason: String,
    /// What lies under the reason (e.g. AdmissionCheck for Deactivated); written even when empty.
    #[schemars(length(max = 316))]
    pub underlying_cause: String,
    /// Number of evictions for this reason and underlying cause.
    #[schemars(range(min = 0))]
    pub count: i32,
}

/// Total requests of one podset.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSetRequest {
    /// Name of the podset.
    #[schemars(length(max = 63), regex(pattern = schema::DNS_LABEL))]
    pub name: String,
    /// Requests per resource (all pods of the podset).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub resources: BTreeMap<String, Quantity>,
}
