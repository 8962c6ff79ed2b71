//! The fake autoscaler's reference classes, as a vendor would describe them in an options file.
//! The embedded world (`conformance-embedded`) serves them; `tests/control_plane.rs` runs the
//! `conformance` binary against them on the reference control plane.

use std::time::Duration;

use api::constants::provisioning_class;

use crate::options::{Feature, Implementation, Options, PodTemplates, Pods};

/// A reference class of the fake autoscaler and what it claims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReferenceClass {
    CheckCapacity,
    AtomicScaleUp,
    /// The fake autoscaler's vendor-like queued class.
    Queued,
}

impl ReferenceClass {
    pub const ALL: [ReferenceClass; 3] = [
        ReferenceClass::CheckCapacity,
        ReferenceClass::AtomicScaleUp,
        ReferenceClass::Queued,
    ];

    pub fn class_name(self) -> &'static str {
        match self {
            ReferenceClass::CheckCapacity => provisioning_class::CHECK_CAPACITY,
            ReferenceClass::AtomicScaleUp => provisioning_class::BEST_EFFORT_ATOMIC_SCALE_UP,
            ReferenceClass::Queued => "queued-provisioning.tollgate.dev",
        }
    }

    /// The options a vendor would write for this class in the embedded world.
    pub fn options(self) -> Options {
        // Extended resources cannot be overcommitted: kube-apiserver wants their limits too.
        let pods = |requests: serde_json::Value, limits: serde_json::Value, count: i32| {
            Pods {
            count,
            template: serde_json::from_value(serde_json::json!({
                "spec": {
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                        "resources": {"requests": requests, "limits": limits}}],
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                }
            }))
            .unwrap_or_default(),
        }
        };
        let mut features = vec![
            Feature::AtomicScaleUp,
            Feature::BookingExpiry,
            Feature::BookingConsumed,
            Feature::GarbageCollection,
        ];
        match self {
            ReferenceClass::CheckCapacity => features.push(Feature::NoRetry),
            ReferenceClass::AtomicScaleUp => {}
            ReferenceClass::Queued => features.extend([
                Feature::CapacityRevoked,
                Feature::ValidUntilSeconds,
                Feature::ProvisioningClassDetails,
            ]),
        }
        features.sort();
        Options {
            class_name: self.class_name().into(),
            pod_templates: PodTemplates {
                // Room on the CPU node for one set, not two; too big for a GPU node.
                fits: pods(
                    serde_json::json!({"cpu": "3", "memory": "10Gi"}),
                    serde_json::json!({}),
                    1,
                ),
                // Three 4-GPU nodes: more than the GPU group's two.
                does_not_fit: pods(
                    serde_json::json!({"nvidia.com/gpu": "4"}),
                    serde_json::json!({"nvidia.com/gpu": "4"}),
                    3,
                ),
            },
            features,
            kueue: true,
            timeouts: crate::options::Timeouts {
                garbage_collection: api::config::GoDuration(Duration::from_secs(70 * 60)),
                ..Default::default()
            },
            implementation: Implementation {
                organization: "Tollgate".into(),
                project: "fake-autoscaler".into(),
                url: String::new(),
                version: env!("CARGO_PKG_VERSION").into(),
                contact: vec![],
            },
            ..Options::default()
        }
    }
}
