use k8s_openapi::apimachinery::pkg::{
    api::resource::Quantity,
    apis::meta::v1::{Condition, LabelSelector},
};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema;

/// A pool of quota, counted per ResourceFlavor, that LocalQueues submit workloads to.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "ClusterQueue",
    doc = "A cluster-wide pool of quota per resource flavor.",
    derive = "PartialEq",
    plural = "clusterqueues",
    status = "ClusterQueueStatus",
    shortname = "cq",
    printcolumn = r#"{"name":"Cohort","type":"string","description":"Cohort that this ClusterQueue belongs to","jsonPath":".spec.cohortName"}"#,
    printcolumn = r#"{"name":"Strategy","type":"string","description":"The queueing strategy used to prioritize workloads","jsonPath":".spec.queueingStrategy","priority":1}"#,
    printcolumn = r#"{"name":"Pending Workloads","type":"integer","description":"Number of pending workloads","jsonPath":".status.pendingWorkloads"}"#,
    printcolumn = r#"{"name":"Admitted Workloads","type":"integer","description":"Number of admitted workloads that haven't finished yet","jsonPath":".status.admittedWorkloads","priority":1}"#
)]
#[serde(rename_all = "camelCase", remote = "Self")]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "!has(self.cohortName) && has(self.resourceGroups) ? self.resourceGroups.all(rg, rg.flavors.all(f, f.resources.all(r, !has(r.borrowingLimit)))) : true", "message": "borrowingLimit must be nil when cohort is empty"}]))]
pub struct ClusterQueueSpec {
    /// Quota per flavor, grouped by the resources each group covers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "atomic"))]
    pub resource_groups: Vec<ResourceGroup>,
    /// The cohort whose members lend each other unused quota.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), regex(pattern = schema::DNS_SUBDOMAIN))]
    pub cohort_name: Option<String>,
    /// How pending workloads are ordered: BestEffortFIFO (default) or StrictFIFO.
    #[serde(default)]
    pub queueing_strategy: QueueingStrategy,
    /// Namespaces whose LocalQueues may submit here; empty selects all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// When and whom to preempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {}))]
    pub preemption: Option<ClusterQueuePreemption>,
    /// The admission checks every workload of this queue must pass, optionally per flavor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_checks_strategy: Option<AdmissionChecksStrategy>,
    /// Stops admission (Hold) and optionally evicts admitted workloads (HoldAndDrain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "None"))]
    pub stop_policy: Option<StopPolicy>,
}

/// How pending workloads are ordered.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default, JsonSchema)]
pub enum QueueingStrategy {
    /// Priority then creation time; a workload that does not fit does not block the ones behind it.
    #[default]
    BestEffortFIFO,
    /// Priority then creation time; the head blocks the queue until it is admitted.
    StrictFIFO,
}

/// Whether a queue admits and keeps workloads.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default, JsonSchema)]
pub enum StopPolicy {
    /// Running normally.
    #[default]
    None,
    /// No new admissions; admitted workloads keep running.
    Hold,
    /// No new admissions; admitted workloads are evicted.
    HoldAndDrain,
}

/// A set of resources whose quota is given per flavor, flavors tried in order.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "self.flavors.all(x, size(x.resources) == size(self.coveredResources))", "message": "flavors must have the same number of resources as the coveredResources"}]))]
pub struct ResourceGroup {
    /// Resources this group covers; each resource appears in at most one group.
    #[schemars(length(min = 1, max = 64), extend("x-kubernetes-list-type" = "atomic"))]
    pub covered_resources: Vec<String>,
    /// Flavors in the order they are tried.
    #[schemars(length(min = 1, max = 64), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub flavors: Vec<FlavorQuotas>,
}

/// The quota of one flavor.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlavorQuotas {
    /// Name of the ResourceFlavor.
    #[schemars(length(max = 253), regex(pattern = schema::DNS_SUBDOMAIN))]
    pub name: String,
    /// Quota per covered resource.
    #[schemars(length(min = 1, max = 64), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub resources: Vec<ResourceQuota>,
}

/// The quota of one resource in one flavor.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceQuota {
    /// Resource name, e.g. `cpu`.
    pub name: String,
    /// What this queue owns.
    pub nominal_quota: Quantity,
    /// How much unused cohort quota this queue may borrow beyond its nominal quota; unset is unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub borrowing_limit: Option<Quantity>,
    /// How much of its nominal quota this queue lends to its cohort; unset lends all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lending_limit: Option<Quantity>,
}

/// Preemption policies.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueuePreemption {
    /// Whether to preempt other cohort members' workloads to reclaim nominal quota lent out.
    #[serde(default)]
    #[schemars(schema_with = "schema::reclaim_within_cohort")]
    pub reclaim_within_cohort: PreemptionPolicy,
    /// Whether to preempt workloads of this queue.
    #[serde(default)]
    #[schemars(schema_with = "schema::within_cluster_queue")]
    pub within_cluster_queue: PreemptionPolicy,
}

/// Which workloads may be preempted.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default, JsonSchema)]
pub enum PreemptionPolicy {
    /// None.
    #[default]
    Never,
    /// Workloads of lower priority.
    LowerPriority,
    /// Workloads of lower priority, or of equal priority and newer.
    LowerOrNewerEqualPriority,
    /// Any workload (reclaimWithinCohort only).
    Any,
}

/// Admission checks of a ClusterQueue.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionChecksStrategy {
    /// The checks and the flavors they apply to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub admission_checks: Vec<AdmissionCheckStrategyRule>,
}

/// One admission check and where it applies.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckStrategyRule {
    /// Name of the AdmissionCheck.
    #[schemars(length(max = 316))]
    pub name: String,
    /// Flavors the check applies to; empty means every flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), extend("x-kubernetes-list-type" = "set"))]
    pub on_flavors: Vec<String>,
}

/// What the queue currently holds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueStatus {
    /// `Active`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// Quota reserved by workloads holding a reservation, per flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub flavors_reservation: Vec<FlavorUsage>,
    /// Quota used by admitted workloads, per flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub flavors_usage: Vec<FlavorUsage>,
    /// Workloads waiting for quota.
    #[serde(default)]
    pub pending_workloads: i32,
    /// Workloads holding a quota reservation.
    #[serde(default)]
    pub reserving_workloads: i32,
    /// Workloads admitted and not finished.
    #[serde(default)]
    pub admitted_workloads: i32,
}

/// Usage of one flavor.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlavorUsage {
    /// Name of the ResourceFlavor.
    pub name: String,
    /// Usage per resource.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub resources: Vec<ResourceUsage>,
}

/// Usage of one resource in one flavor.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceUsage {
    /// Resource name.
    pub name: String,
    /// Total used, including what is borrowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<Quantity>,
    /// The part of the total borrowed from the cohort.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub borrowed: Option<Quantity>,
}
