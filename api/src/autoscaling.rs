//! `autoscaling.x-k8s.io/v1`: the ProvisioningRequest, by which a user (here: Kueue) asks the Cluster
//! Autoscaler for capacity for a group of pods.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema;

/// Capacity requested for groups of pods. Every field is immutable once created.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "autoscaling.x-k8s.io",
    version = "v1",
    kind = "ProvisioningRequest",
    doc = "A request to the Cluster Autoscaler for capacity for groups of pods.",
    derive = "PartialEq",
    plural = "provisioningrequests",
    namespaced,
    status = "ProvisioningRequestStatus",
    shortname = "provreq",
    shortname = "provreqs",
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "Value is immutable"}]))]
pub struct ProvisioningRequestSpec {
    /// The pods to provision capacity for, as PodTemplate references with counts.
    #[schemars(length(min = 1, max = 32))]
    pub pod_sets: Vec<PodSet>,
    /// The provisioning class that handles this request, e.g. `check-capacity.autoscaling.x-k8s.io`.
    #[schemars(length(max = 253), regex(pattern = schema::DNS_SUBDOMAIN))]
    pub provisioning_class_name: String,
    /// Class-specific parameters (at most 100, each value at most 255 characters).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::parameters")]
    pub parameters: BTreeMap<String, String>,
}

/// One group of identical pods.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodSet {
    /// The PodTemplate (same namespace) describing the pods.
    pub pod_template_ref: Reference,
    /// How many pods.
    #[schemars(range(min = 1))]
    pub count: i32,
}

/// A reference to an object in the same namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reference {
    /// Name of the object.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[schemars(length(max = 253), regex(pattern = schema::DNS_SUBDOMAIN))]
    pub name: String,
}

/// What the provisioning class reports.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestStatus {
    /// Accepted, Provisioned, Failed, BookingExpired, CapacityRevoked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
    /// Class-specific details (at most 64, each value at most 32768 characters).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::class_details")]
    pub provisioning_class_details: BTreeMap<String, String>,
}
