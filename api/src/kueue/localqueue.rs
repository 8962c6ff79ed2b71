use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{FlavorUsage, StopPolicy};
use crate::schema;

/// A namespaced queue that points at a ClusterQueue; jobs name it in `kueue.x-k8s.io/queue-name`.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "LocalQueue",
    doc = "A namespaced queue that submits workloads to a ClusterQueue.",
    derive = "PartialEq",
    plural = "localqueues",
    namespaced,
    status = "LocalQueueStatus",
    shortname = "queue",
    shortname = "queues",
    shortname = "lq",
    printcolumn = r#"{"name":"ClusterQueue","type":"string","description":"Backing ClusterQueue","jsonPath":".spec.clusterQueue"}"#,
    printcolumn = r#"{"name":"Pending Workloads","type":"integer","description":"Number of pending workloads","jsonPath":".status.pendingWorkloads"}"#,
    printcolumn = r#"{"name":"Admitted Workloads","type":"integer","description":"Number of admitted workloads that haven't finished yet.","jsonPath":".status.admittedWorkloads"}"#
)]
#[serde(rename_all = "camelCase", remote = "Self")]
pub struct LocalQueueSpec {
    /// The ClusterQueue this queue submits to.
    #[schemars(
        length(max = 253),
        regex(pattern = schema::DNS_SUBDOMAIN),
        extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "field is immutable"}])
    )]
    pub cluster_queue: String,
    /// Stops admission (Hold) and optionally evicts admitted workloads (HoldAndDrain).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "None"))]
    pub stop_policy: Option<StopPolicy>,
}

/// What the queue currently holds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueStatus {
    /// `Active`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// Workloads waiting for quota.
    #[serde(default)]
    pub pending_workloads: i32,
    /// Workloads holding a quota reservation.
    #[serde(default)]
    pub reserving_workloads: i32,
    /// Workloads admitted and not finished.
    #[serde(default)]
    pub admitted_workloads: i32,
    /// Quota reserved by this queue's workloads, per flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub flavors_reservation: Vec<FlavorUsage>,
    /// Quota used by this queue's admitted workloads, per flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub flavors_usage: Vec<FlavorUsage>,
}
