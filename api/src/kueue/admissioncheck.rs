use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema;

/// A gate that must report Ready before a workload holding quota is admitted.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "AdmissionCheck",
    shortname = "ac",
    doc = "A gate a workload must pass after reserving quota and before admission.",
    derive = "PartialEq",
    plural = "admissionchecks",
    status = "AdmissionCheckStatus",
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckSpec {
    /// The controller that decides this check, e.g. `kueue.x-k8s.io/provisioning-request`. Immutable.
    #[schemars(length(min = 1, max = 253), extend("x-kubernetes-validations" = [{"rule": "self == oldSelf", "message": "field is immutable"}]))]
    pub controller_name: String,
    /// The object holding the controller's configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<AdmissionCheckParametersReference>,
}

/// A reference to a cluster-scoped configuration object.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckParametersReference {
    /// API group of the object, e.g. `kueue.x-k8s.io`.
    #[schemars(length(min = 1, max = 253), regex(pattern = schema::DNS_SUBDOMAIN))]
    pub api_group: String,
    /// Kind of the object, e.g. `ProvisioningRequestConfig`.
    #[schemars(
        length(min = 1, max = 63),
        regex(pattern = "^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$")
    )]
    pub kind: String,
    /// Name of the object.
    #[schemars(length(min = 1, max = 63), regex(pattern = schema::DNS_LABEL))]
    pub name: String,
}

/// What the check's controller reports.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionCheckStatus {
    /// `Active`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}
