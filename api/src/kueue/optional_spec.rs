//! Kueue's CRDs do not require `spec`, and its docs create ResourceFlavors without one, but the root
//! types kube-derive generates need the field. A spec type marked `#[serde(remote = "Self")]` gets
//! its (de)serializers from [`optional_spec!`] instead: a missing or `null` spec reads as the empty
//! spec, so a watch never fails on such an object.

/// Serialize and Deserialize for spec types whose derived code is `remote = "Self"`, and the list
/// of their kinds (`Kind: SpecType`).
macro_rules! optional_spec {
    ($($kind:ident: $spec:ty),* $(,)?) => {
        /// The kinds whose CRD leaves `spec` optional, as Kueue's do.
        pub const KINDS: &[&str] = &[$(stringify!($kind)),*];
        $(
        impl<'de> serde::Deserialize<'de> for $spec {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct Present($spec);
                impl<'de> serde::Deserialize<'de> for Present {
                    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                        // The derived (inherent) deserializer.
                        <$spec>::deserialize(d).map(Present)
                    }
                }
                Ok(Option::<Present>::deserialize(d)?
                    .map(|p| p.0)
                    .unwrap_or_default())
            }
        }

        impl serde::Serialize for $spec {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                <$spec>::serialize(self, s)
            }
        }
    )*};
}

optional_spec!(
    ResourceFlavor: super::ResourceFlavorSpec,
    ClusterQueue: super::ClusterQueueSpec,
    LocalQueue: super::LocalQueueSpec,
    Workload: super::WorkloadSpec,
);

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use crate::kueue::{ClusterQueue, LocalQueue, ResourceFlavor, ResourceFlavorSpec, Workload};

    #[rstest]
    #[case::missing(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}}))]
    #[case::null(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "default"}, "spec": null}))]
    fn a_flavor_without_spec_reads_as_the_empty_spec(#[case] doc: serde_json::Value) {
        let rf: ResourceFlavor = serde_json::from_value(doc).unwrap();
        assert_eq!(rf.spec, ResourceFlavorSpec::default());
        assert_eq!(serde_json::to_value(&rf).unwrap()["spec"], json!({}));
    }

    #[test]
    fn a_spec_that_is_there_is_read_as_before() {
        let doc = json!({"metadata": {"name": "gpu"}, "spec": {"nodeLabels": {"gpu": "a100"}}});
        let rf: ResourceFlavor = serde_json::from_value(doc).unwrap();
        assert_eq!(rf.spec.node_labels["gpu"], "a100");
        let bad = json!({"metadata": {"name": "gpu"}, "spec": {"nodeLabels": 3}});
        let err = serde_json::from_value::<ResourceFlavor>(bad).unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
    }

    #[test]
    fn every_optional_kind_reads_without_spec() {
        let meta = json!({"metadata": {"name": "x", "namespace": "ns"}});
        let cq: ClusterQueue = serde_json::from_value(meta.clone()).unwrap();
        let lq: LocalQueue = serde_json::from_value(meta.clone()).unwrap();
        let wl: Workload = serde_json::from_value(meta).unwrap();
        assert!(cq.spec.resource_groups.is_empty());
        assert!(lq.spec.cluster_queue.is_empty());
        assert!(wl.spec.pod_sets.is_empty());
    }

    #[test]
    fn their_crds_leave_spec_optional_and_others_require_it() {
        for crd in crate::all_crds() {
            let required = crd.spec.versions[0]
                .schema
                .as_ref()
                .and_then(|s| s.open_api_v3_schema.as_ref())
                .and_then(|s| s.required.clone())
                .unwrap_or_default();
            let optional = super::KINDS.contains(&crd.spec.names.kind.as_str())
                && crd.spec.group == "kueue.x-k8s.io";
            assert_eq!(
                required.contains(&"spec".to_string()),
                !optional,
                "{}",
                crd.spec.names.kind
            );
        }
    }
}
