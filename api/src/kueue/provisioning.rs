use std::collections::BTreeMap;

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema;

/// How the ProvisioningRequest admission check builds and retries ProvisioningRequests.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[kube(
    group = "kueue.x-k8s.io",
    version = "v1beta2",
    kind = "ProvisioningRequestConfig",
    doc = "Configuration of the ProvisioningRequest admission check.",
    derive = "PartialEq",
    plural = "provisioningrequestconfigs"
)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestConfigSpec {
    /// The provisioning class of the created requests.
    #[schemars(length(min = 1, max = 253), regex(pattern = schema::DNS_SUBDOMAIN))]
    pub provisioning_class_name: String,
    /// Parameters copied into the requests (at most 100, each value at most 255 characters).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schemars(schema_with = "schema::parameters")]
    pub parameters: BTreeMap<String, String>,
    /// Only podsets requesting one of these resources are provisioned; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 100), extend("x-kubernetes-list-type" = "set"))]
    pub managed_resources: Vec<String>,
    /// Retries after Failed or BookingExpired; unset means 3 retries, 60s base, 1800s cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800}))]
    pub retry_strategy: Option<ProvisioningRequestRetryStrategy>,
    /// Node selector entries taken from the request's provisioningClassDetails once Provisioned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_updates: Option<ProvisioningRequestPodSetUpdates>,
    /// Whether and how podsets are merged into one request podset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_set_merge_policy: Option<PodSetMergePolicy>,
}

impl ProvisioningRequestConfigSpec {
    /// The retry strategy with every unset field defaulted.
    pub fn effective_retry_strategy(&self) -> EffectiveRetryStrategy {
        let rs = self.retry_strategy.clone().unwrap_or_default();
        EffectiveRetryStrategy {
            backoff_limit_count: rs
                .backoff_limit_count
                .unwrap_or(DEFAULT_BACKOFF_LIMIT_COUNT),
            backoff_base_seconds: rs
                .backoff_base_seconds
                .unwrap_or(DEFAULT_BACKOFF_BASE_SECONDS),
            backoff_max_seconds: rs
                .backoff_max_seconds
                .unwrap_or(DEFAULT_BACKOFF_MAX_SECONDS),
        }
    }
}

/// Default `retryStrategy.backoffLimitCount`.
pub const DEFAULT_BACKOFF_LIMIT_COUNT: i32 = 3;
/// Default `retryStrategy.backoffBaseSeconds`.
pub const DEFAULT_BACKOFF_BASE_SECONDS: i32 = 60;
/// Default `retryStrategy.backoffMaxSeconds`.
pub const DEFAULT_BACKOFF_MAX_SECONDS: i32 = 1800;

/// Retry strategy with defaults applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EffectiveRetryStrategy {
    /// Retries after the first attempt; 0 disables retrying.
    pub backoff_limit_count: i32,
    /// Base of the exponential backoff, in seconds.
    pub backoff_base_seconds: i32,
    /// Cap of the backoff, in seconds.
    pub backoff_max_seconds: i32,
}

/// Retries of failed ProvisioningRequests.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestRetryStrategy {
    /// How many times to retry before the workload is deactivated; 0 disables retries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 3))]
    pub backoff_limit_count: Option<i32>,
    /// Base of the exponential backoff, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 60))]
    pub backoff_base_seconds: Option<i32>,
    /// Longest backoff, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 1800))]
    pub backoff_max_seconds: Option<i32>,
}

/// Updates of the admitted pods derived from the request's status.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestPodSetUpdates {
    /// Node selector entries to add.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8), extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["key"]))]
    pub node_selector: Vec<ProvisioningRequestPodSetUpdatesNodeSelector>,
}

/// One node selector entry whose value comes from `status.provisioningClassDetails`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProvisioningRequestPodSetUpdatesNodeSelector {
    /// The node selector key (a label key).
    #[schemars(
        length(min = 1, max = 317),
        regex(
            pattern = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
        )
    )]
    pub key: String,
    /// The provisioningClassDetails key holding the value.
    #[schemars(length(min = 1, max = 32768))]
    pub value_from_provisioning_class_detail: String,
}

/// How podsets are merged into request podsets.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, JsonSchema)]
pub enum PodSetMergePolicy {
    /// Merge podsets whose pod templates are equal.
    IdenticalPodTemplates,
    /// Merge podsets with equal requests, node selectors, tolerations, affinity and resource claims.
    IdenticalWorkloadSchedulingRequirements,
}
