//! Small schema helpers for the validation markers that schemars' attributes cannot express.

use schemars::{Schema, json_schema};

/// A DNS-1123 subdomain, as Kubernetes object names use.
pub(crate) const DNS_SUBDOMAIN: &str =
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$";

/// A DNS-1123 label.
pub(crate) const DNS_LABEL: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// A string-to-string map with at most `max_properties` entries of at most `max_value_length` characters.
pub(crate) fn string_map(max_properties: u32, max_value_length: u32) -> Schema {
    json_schema!({
        "type": "object",
        "maxProperties": max_properties,
        "additionalProperties": {"type": "string", "maxLength": max_value_length},
    })
}

/// ProvisioningRequest `spec.parameters` and ProvisioningRequestConfig `spec.parameters`: 100 entries of 255.
pub(crate) fn parameters(_: &mut schemars::SchemaGenerator) -> Schema {
    string_map(100, 255)
}

/// ProvisioningRequest `status.provisioningClassDetails`: 64 entries of 32768.
pub(crate) fn class_details(_: &mut schemars::SchemaGenerator) -> Schema {
    string_map(64, 32768)
}

/// ResourceFlavor `spec.nodeLabels`: at most 8 labels.
pub(crate) fn node_labels(_: &mut schemars::SchemaGenerator) -> Schema {
    json_schema!({
        "type": "object",
        "maxProperties": 8,
        "additionalProperties": {"type": "string"},
    })
}

/// ClusterQueue `preemption.reclaimWithinCohort`: a subset of the policies.
pub(crate) fn reclaim_within_cohort(_: &mut schemars::SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "description": "Whether to preempt other cohort members' workloads to reclaim nominal quota lent out.",
        "enum": ["Never", "LowerPriority", "Any"],
        "default": "Never",
    })
}

/// ClusterQueue `preemption.withinClusterQueue`: a subset of the policies.
pub(crate) fn within_cluster_queue(_: &mut schemars::SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string",
        "description": "Whether to preempt workloads of this queue.",
        "enum": ["Never", "LowerPriority", "LowerOrNewerEqualPriority"],
        "default": "Never",
    })
}
