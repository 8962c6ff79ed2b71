use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Taint, Toleration};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema;

/// A kind of node (labels, taints): what a ClusterQueue's quota is counted in.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "ResourceFlavor",
    doc = "A kind of node that quota is counted in.",
    derive = "PartialEq",
    plural = "resourceflavors",
    shortname = "flavor",
    shortname = "flavors",
    shortname = "rf"
)]
#[serde(rename_all = "camelCase", remote = "Self")]
pub struct ResourceFlavorSpec {
    /// Labels of the nodes of this flavor; added as node selector to admitted pods.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::node_labels")]
    pub node_labels: BTreeMap<String, String>,
    /// Taints of the nodes of this flavor; a workload must tolerate them to use the flavor.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8), extend("x-kubernetes-list-type" = "atomic"))]
    pub node_taints: Vec<Taint>,
    /// Tolerations added to admitted pods.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8), extend("x-kubernetes-list-type" = "atomic"))]
    pub tolerations: Vec<Toleration>,
    /// Name of a Topology for topology-aware scheduling (not implemented by Tollgate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 253), regex(pattern = schema::DNS_SUBDOMAIN))]
    pub topology_name: Option<String>,
}
