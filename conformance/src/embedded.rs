//! The suite against Tollgate's own world: a fake API server on virtual time with the fake
//! autoscaler serving its reference classes (or a broken variant of them). This is how the suite
//! checks itself: the reference classes must pass, and every broken variant must be caught.

use std::sync::Arc;
use std::time::Duration;

use api::constants::provisioning_class;
use e2e::env::TestEnv;
use e2e::harness::{AutoscalerComponent, JobRunner};
use fake_autoscaler::Broken;

use crate::options::{Feature, Implementation, Options, PodTemplates, Pods};
use crate::runner::{self, Selection, TestResult};

/// The fake autoscaler's world: one 4-CPU node (always there), and a tainted GPU group of at most
/// two 4-GPU nodes that only a scaling class uses, and only for pods that tolerate the taint.
pub const AUTOSCALER_CONFIG: &str = r#"
nodeGroups:
  - {name: cpu, machine: {cpu: "4", memory: 16Gi}, minSize: 1, maxSize: 1}
  - name: gpu
    machine: {cpu: "16", nvidia.com/gpu: "4"}
    taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
    maxSize: 2
    scaleUpDelay: 1m
classes:
  - {name: check-capacity.autoscaling.x-k8s.io, behaviour: check-capacity}
  - {name: best-effort-atomic-scale-up.autoscaling.x-k8s.io, behaviour: atomic-scale-up}
  - name: queued-provisioning.tollgate.dev
    behaviour: vendor
    queueDelay: 30s
    provisioningClassDetails: {NodePoolName: "{nodeGroup}", ResizeRequestName: "{request}-resize"}
# Upstream collects old requests after 7 days. Seven virtual days cost seconds of watch restarts,
# so the embedded world collects after one hour (the options' timeout says so too).
timing: {garbageCollection: 1h}
"#;

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

/// Runs the suite on a fresh embedded world. Call it inside a paused runtime: every wait is on
/// virtual time.
pub async fn run(
    options: &Options,
    broken: Option<Broken>,
    selection: &Selection,
    progress: impl FnMut(&TestResult),
) -> Result<Vec<TestResult>, String> {
    let mut config =
        fake_autoscaler::Config::parse(AUTOSCALER_CONFIG).map_err(|e| e.to_string())?;
    config.broken = broken;
    // The job runner plays the Job controller, scheduler and kubelet for the kueue profile.
    let env = TestEnv::builder()
        .component(Arc::new(AutoscalerComponent::new(config)))
        .component(Arc::new(
            JobRunner::new(Duration::from_secs(600)).with_pods(),
        ))
        .build()
        .map_err(|e| e.to_string())?;
    // The autoscaler makes its node before the first test.
    tokio::time::sleep(Duration::from_millis(10)).await;
    let clock = controller::Clock::anchored(
        env.start_time(),
        tokio::time::Instant::now() - env.elapsed(),
    );
    Ok(runner::run(&env.client(), options, selection, clock, progress).await)
}

/// A paused current-thread runtime, as scenarios use, for [`run`].
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
}

/// Which test caught a broken variant: the first core test whose failure names the rule the
/// variant breaks, else the first extended one, trying each reference class in turn.
pub async fn catch(variant: Broken) -> Result<Option<(ReferenceClass, TestResult)>, String> {
    for class in ReferenceClass::ALL {
        let results = run(
            &class.options(),
            Some(variant),
            &Selection::default(),
            |_| {},
        )
        .await?;
        let mut catching: Vec<TestResult> = results
            .into_iter()
            .filter(|r| {
                matches!(&r.outcome, crate::runner::Outcome::Failed(f) if f.rule == Some(variant.rule()))
            })
            .collect();
        catching.sort_by_key(|r| r.profile);
        if let Some(first) = catching.into_iter().next() {
            return Ok(Some((class, first)));
        }
    }
    Ok(None)
}
