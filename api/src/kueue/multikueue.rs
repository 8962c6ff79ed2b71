use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The worker clusters a MultiKueue admission check dispatches to.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "MultiKueueConfig",
    doc = "The worker clusters of a MultiKueue admission check.",
    derive = "PartialEq",
    plural = "multikueueconfigs"
)]
#[serde(rename_all = "camelCase")]
pub struct MultiKueueConfigSpec {
    /// Names of MultiKueueClusters.
    #[schemars(length(min = 1, max = 20), extend("x-kubernetes-list-type" = "set", "items" = {"type": "string", "maxLength": 256}))]
    pub clusters: Vec<String>,
}

/// A worker cluster and how to connect to it.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "MultiKueueCluster",
    doc = "A MultiKueue worker cluster and how to connect to it.",
    derive = "PartialEq",
    plural = "multikueueclusters",
    status = "MultiKueueClusterStatus",
    printcolumn = r#"{"name":"Connected","type":"string","description":"MultiKueueCluster is connected","jsonPath":".status.conditions[?(@.type=='Active')].status"}"#,
    printcolumn = r#"{"name":"Age","type":"date","description":"Time this workload was created","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MultiKueueClusterSpec {
    /// Where the connection details come from.
    pub cluster_source: ClusterSource,
}

/// Exactly one way to reach the cluster.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("x-kubernetes-validations" = [{"rule": "[has(self.kubeConfig), has(self.clusterProfileRef)].filter(x, x).size() == 1", "message": "exactly one of the fields in [kubeConfig clusterProfileRef] must be set"}]))]
pub struct ClusterSource {
    /// A kubeconfig in a Secret or a file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube_config: Option<KubeConfig>,
    /// A ClusterProfile (not implemented by Tollgate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_profile_ref: Option<ClusterProfileReference>,
}

/// Where a kubeconfig is.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KubeConfig {
    /// Secret name (in the controller's namespace, key `kubeconfig`) or file path.
    #[schemars(length(min = 1, max = 256))]
    pub location: String,
    /// Secret (default) or Path.
    #[serde(default)]
    pub location_type: LocationType,
}

/// How `location` is read.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default, JsonSchema)]
pub enum LocationType {
    /// A Secret in the controller's namespace.
    #[default]
    Secret,
    /// A file path under the controller's fixed kubeconfig directory.
    Path,
}

/// A reference to a ClusterProfile.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterProfileReference {
    /// Name of the ClusterProfile.
    #[schemars(length(min = 1, max = 256))]
    pub name: String,
}

/// Connection state.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MultiKueueClusterStatus {
    /// `Active`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 16), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Vec<Condition>,
}
