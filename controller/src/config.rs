//! Loading the Kueue Configuration file the controller starts with.
//!
//! Parsing and most validation live with the type in `api::config`; here are the checks that need
//! the controller's knowledge: which feature gates exist.

use std::path::Path;

use api::config::{ConfigError, Configuration};

/// Every feature gate Kueue knows. Tollgate accepts them all so an upstream configuration loads
/// unchanged; the ones that change Tollgate's behaviour are listed in [`HONOURED_GATES`].
pub const KNOWN_GATES: &[&str] = &[
    "PartialAdmission",
    "FlavorFungibility",
    "VisibilityOnDemand",
    "DisableWaitForPodsReady",
    "PrioritySortingWithinCohort",
    "FairSharingPreemptWithinNominal",
    "FairSharingPrioritizeNonBorrowing",
    "MultiKueue",
    "TopologyAwareScheduling",
    "LocalQueueMetrics",
    "TASProfileMixed",
    "AdmissionFairSharing",
    "TASFailedNodeReplacement",
    "ElasticJobsViaWorkloadSlices",
    "ElasticJobsViaWorkloadSlicesWithTAS",
    "TASFailedNodeReplacementFailFast",
    "TASReplaceNodeOnPodTermination",
    "SkipReassignmentForPodOwnedWorkloads",
    "TASReplaceNodeDueToNotReadyOverFixedTime",
    "ManagedJobsNamespaceSelectorAlwaysRespected",
    "TASBalancedPlacement",
    "TASAssignmentsEncodingByHostnamePrefix",
    "KueueDRAIntegration",
    "KueueDRAIntegrationExtendedResource",
    "KueueDRARejectWorkloadsWhenDRADisabled",
    "KueueDRAIntegrationPartitionableDevices",
    "KueueDRAIntegrationConsumableCapacity",
    "MultiKueueAdaptersForCustomJobs",
    "WorkloadRequestUseMergePatch",
    "MultiKueueKubeConfigPathValidation",
    "ReclaimablePods",
    "MultiKueueClusterProfile",
    "FailureRecoveryPolicy",
    "TLSOptions",
    "RemoveFinalizersWithStrictPatch",
    "TASReplaceNodeOnNodeTaints",
    "AssignQueueLabelsForPods",
    "TASMultiLayerTopology",
    "SchedulingEquivalenceHashing",
    "CustomMetricLabels",
    "SparkApplicationIntegration",
    "MultiKueueOrchestratedPreemption",
    "PriorityBoost",
    "AdmissionGatedBy",
    "ShortWorkloadNames",
    "FastQuotaReleaseInPodIntegration",
    "RejectUpdatesToCQWithInvalidOnFlavors",
    "FinishOrphanedWorkloads",
    "MultiKueueIncrementalDispatcherConfig",
    "MultiKueueIncrementalDispatcherRespectConfigOrder",
    "ConcurrentAdmission",
    "QuotaCheckStrategy",
    "MetricForWorkloadCreationLatency",
    "TASRespectNodeAffinityPreferred",
    "MultiKueueManagerQuotaAutomation",
    "WorkloadIdentifierAnnotations",
    "WorkloadPriorityClassDefaulting",
    "MetricsForCohorts",
    "CleanupProvisioningRequestsOnEviction",
    "TASHandleOverlappingFlavors",
    "UnadmittedWorkloadsObservability",
    "TASRecomputeAssignmentWithinSchedulingCycle",
    "UnadmittedWorkloadsExplicitStatus",
    "DeferRayServiceFinalizationForRedisCleanup",
    "TASCacheNodeMatchResults",
    "TASCachingRemainingResources",
    "TASCacheTopologyTree",
    "SchedulerLibraryIntegration",
    "VectorizedResourceRequests",
    "WorkloadValidateResourcesAreNonNegative",
    "TASValidateWorkloadSliceSize",
    "WorkloadValidationForPodSetMetadata",
    "PrioritizePreemptorWorkloads",
    "LWSImmutableGroupSize",
    "FlavorFungibilityPreserveScanProgress",
    "SkipAncestorCheckForDeletedWorkloads",
    "MultiKueueRemoteSpecSync",
    "RecomputeAssignmentUponPreemptionTargetsOverlap",
    "PodIntegrationValidateGroupOwner",
    "ValidateRayAndSparkJobUpdates",
];

/// Gates whose value changes what Tollgate does.
pub const HONOURED_GATES: &[&str] = &[
    "UnadmittedWorkloadsObservability",
    "SchedulingEquivalenceHashing",
    "CleanupProvisioningRequestsOnEviction",
    "MultiKueue",
];

/// Why the controller cannot start with a configuration file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Invalid { path: String, source: ConfigError },
    #[error("{path}: featureGates: Invalid value: {gate:?}: unrecognized feature gate")]
    UnknownGate { path: String, gate: String },
    #[error("{path}: {message}")]
    Quantity { path: String, message: String },
}

/// Reads, parses and validates a configuration file.
pub fn load(path: &Path) -> Result<Configuration, LoadError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: shown.clone(),
        source,
    })?;
    parse(&text).map_err(|e| match e {
        ParseError::Config(source) => LoadError::Invalid {
            path: shown.clone(),
            source,
        },
        ParseError::UnknownGate(gate) => LoadError::UnknownGate {
            path: shown.clone(),
            gate,
        },
        ParseError::Quantity(message) => LoadError::Quantity {
            path: shown.clone(),
            message,
        },
    })
}

/// Why a configuration text is refused.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ParseError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("featureGates: Invalid value: {0:?}: unrecognized feature gate")]
    UnknownGate(String),
    #[error("{0}")]
    Quantity(String),
}

/// Parses and validates configuration text.
pub fn parse(text: &str) -> Result<Configuration, ParseError> {
    let config = Configuration::from_yaml(text)?;
    if let Some(gate) = config
        .feature_gates
        .keys()
        .find(|g| !KNOWN_GATES.contains(&g.as_str()))
    {
        return Err(ParseError::UnknownGate(gate.clone()));
    }
    crate::resources::Transformer::new(config.resources.as_ref())
        .map_err(|e| ParseError::Quantity(e.to_string()))?;
    Ok(config)
}

/// Whether a gate is on, with Kueue's default when the file does not say.
pub fn gate(config: &Configuration, name: &str) -> bool {
    config
        .feature_gates
        .get(name)
        .copied()
        .unwrap_or(DEFAULT_ON.contains(&name))
}

/// Gates Kueue enables by default that change what Tollgate does.
const DEFAULT_ON: &[&str] = &[
    "UnadmittedWorkloadsObservability",
    "SchedulingEquivalenceHashing",
    "CleanupProvisioningRequestsOnEviction",
    "MultiKueue",
];

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use rstest::rstest;

    use super::*;

    const HEAD: &str = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n";

    #[rstest]
    #[case::bad_strategy(
        "resources:\n  transformations:\n  - input: cpu\n    strategy: Keep\n",
        "resources.transformations[0].strategy: unknown variant `Keep`, expected `Retain` or `Replace`"
    )]
    #[case::duplicate_input(
        "resources:\n  transformations:\n  - input: cpu\n  - input: cpu\n",
        "resources.transformations[1].input: Duplicate value: \"cpu\""
    )]
    #[case::excluded_input(
        "resources:\n  excludeResourcePrefixes: [example.com/]\n  transformations:\n  - input: example.com/gpu\n",
        "resources.transformations[0].input: Invalid value: \"example.com/gpu\": matches the excluded resource prefix \"example.com/\""
    )]
    #[case::unknown_gate(
        "featureGates:\n  NoSuchGate: true\n",
        "featureGates: Invalid value: \"NoSuchGate\": unrecognized feature gate"
    )]
    #[case::bad_output_quantity(
        "resources:\n  transformations:\n  - input: cpu\n    outputs:\n      example.com/credits: lots\n",
        "resources.transformations[0].outputs[example.com/credits]"
    )]
    fn invalid_configuration_names_the_field(#[case] body: &str, #[case] expected: &str) {
        let err = parse(&format!("{HEAD}{body}")).unwrap_err().to_string();
        assert!(err.contains(expected), "{err}");
    }

    #[test]
    fn upstream_gates_are_accepted_and_defaults_apply() {
        let config = parse(&format!(
            "{HEAD}featureGates:\n  PartialAdmission: false\n  UnadmittedWorkloadsObservability: false\n"
        ))
        .unwrap();
        assert!(!gate(&config, "UnadmittedWorkloadsObservability"));
        let config = parse(HEAD).unwrap();
        assert!(gate(&config, "UnadmittedWorkloadsObservability"));
    }

    #[test]
    fn load_names_the_file() {
        let dir = std::env::temp_dir().join(format!("tollgate-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.yaml");
        std::fs::write(&path, format!("{HEAD}featureGates:\n  Nope: true\n")).unwrap();
        let err = load(&path).unwrap_err().to_string();
        assert!(err.starts_with(&path.display().to_string()), "{err}");
        assert!(err.contains("\"Nope\""), "{err}");
    }
}
