//! The Kueue Configuration: defaults, transformations, validation, durations.

use std::time::Duration;

use api::config::{ConfigError, Configuration, GoDuration, TransformationStrategy};
use rstest::rstest;

const MINIMAL: &str = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n";

#[test]
fn minimal_configuration_gets_upstream_defaults() {
    let config = Configuration::from_yaml(MINIMAL).expect("valid");
    assert_eq!(config.namespace, "kueue-system");
    assert!(!config.manage_jobs_without_queue_name);
    assert_eq!(
        config.multi_kueue.gc_interval.get(),
        Duration::from_secs(60)
    );
    assert_eq!(config.multi_kueue.origin, "multikueue");
    assert_eq!(
        config.multi_kueue.worker_lost_timeout.get(),
        Duration::from_secs(15 * 60)
    );
    assert_eq!(
        config.multi_kueue.dispatcher_name,
        "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
    );
    assert_eq!(config, Configuration::default());
}

#[test]
fn transformations_default_to_retain() {
    let config = Configuration::from_yaml(
        r#"
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
manageJobsWithoutQueueName: true
waitForPodsReady:
  timeout: 10m
  blockAdmission: true
resources:
  excludeResourcePrefixes: ["networking.example.com/"]
  transformations:
  - input: nvidia.com/mig-1g.5gb
    outputs:
      example.com/accelerator-memory: 5Gi
      example.com/credits: "10"
  - input: nvidia.com/gpu
    strategy: Replace
    multiplyBy: example.com/cores
    outputs:
      example.com/gpu-cores: "1"
multiKueue:
  gcInterval: 0s
  origin: manager-a
  workerLostTimeout: 5m
  dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental
featureGates:
  MultiKueueBatchJobWithManagedBy: true
  PartialAdmission: false
"#,
    )
    .expect("valid");
    assert!(config.manage_jobs_without_queue_name);
    let resources = config.resources.expect("resources");
    assert_eq!(
        resources.transformations[0].strategy,
        TransformationStrategy::Retain
    );
    assert_eq!(
        resources.transformations[1].strategy,
        TransformationStrategy::Replace
    );
    assert_eq!(
        resources.transformations[1].multiply_by.as_deref(),
        Some("example.com/cores")
    );
    assert_eq!(
        resources.transformations[0].outputs["example.com/accelerator-memory"].0,
        "5Gi"
    );
    assert!(config.multi_kueue.gc_interval.get().is_zero());
    assert_eq!(config.multi_kueue.origin, "manager-a");
    assert_eq!(
        config.multi_kueue.worker_lost_timeout.get(),
        Duration::from_secs(300)
    );
    assert!(!config.feature_gates["PartialAdmission"]);
    let wait = config.wait_for_pods_ready.expect("waitForPodsReady");
    assert_eq!(
        wait.timeout.map(GoDuration::get),
        Some(Duration::from_secs(600))
    );
}

#[test]
fn unknown_strategy_is_rejected() {
    let err = Configuration::from_yaml(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nresources:\n  transformations:\n  - input: cpu\n    strategy: Keep\n",
    )
    .expect_err("Keep is not a strategy");
    assert!(
        matches!(err, ConfigError::Parse(ref m) if m.contains("Keep")),
        "{err}"
    );
}

#[test]
fn duplicate_inputs_are_rejected() {
    let err = Configuration::from_yaml(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nresources:\n  transformations:\n  - input: cpu\n  - input: cpu\n",
    )
    .expect_err("duplicate");
    assert_eq!(
        err,
        ConfigError::DuplicateTransformationInput {
            index: 1,
            input: "cpu".into()
        }
    );
}

#[test]
fn excluded_inputs_are_rejected() {
    let err = Configuration::from_yaml(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nresources:\n  excludeResourcePrefixes: [example.com/]\n  transformations:\n  - input: example.com/gpu\n",
    )
    .expect_err("excluded input");
    assert!(
        matches!(
            err,
            ConfigError::ExcludedTransformationInput { index: 0, .. }
        ),
        "{err}"
    );
}

#[test]
fn wrong_kind_is_rejected() {
    let err = Configuration::from_yaml("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Other\n")
        .expect_err("wrong kind");
    assert!(err.to_string().contains("kind"), "{err}");
}

#[test]
fn full_upstream_configuration_with_unknown_sections_parses() {
    let config = Configuration::from_yaml(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nhealth:\n  healthProbeBindAddress: :8081\nintegrations:\n  frameworks: [batch/job]\n",
    )
    .expect("valid");
    assert_eq!(
        config.integrations.expect("integrations").frameworks,
        ["batch/job"]
    );
}

#[rstest]
#[case("0", 0, 0)]
#[case("0s", 0, 0)]
#[case("1m", 60, 0)]
#[case("1m0s", 60, 0)]
#[case("15m", 900, 0)]
#[case("1h30m", 5400, 0)]
#[case("1.5s", 1, 500_000_000)]
#[case("250ms", 0, 250_000_000)]
#[case("2h45m30.5s", 9930, 500_000_000)]
fn go_durations_parse(#[case] text: &str, #[case] secs: u64, #[case] nanos: u32) {
    assert_eq!(
        GoDuration::parse(text),
        Ok(GoDuration(Duration::new(secs, nanos)))
    );
}

#[rstest]
#[case("")]
#[case("5")]
#[case("1x")]
#[case("-1s")]
#[case("m")]
fn bad_go_durations_are_rejected(#[case] text: &str) {
    assert!(
        GoDuration::parse(text).is_err(),
        "{text:?} should not parse"
    );
}

#[rstest]
#[case(0, 0, "0s")]
#[case(60, 0, "1m0s")]
#[case(900, 0, "15m0s")]
#[case(5400, 0, "1h30m0s")]
#[case(1, 500_000_000, "1.5s")]
#[case(0, 250_000_000, "250ms")]
fn go_durations_format_as_go_does(#[case] secs: u64, #[case] nanos: u32, #[case] text: &str) {
    let d = GoDuration(Duration::new(secs, nanos));
    assert_eq!(d.to_string(), text);
    assert_eq!(GoDuration::parse(text), Ok(d));
}

#[test]
fn empty_origin_means_the_default() {
    let config = Configuration::from_yaml(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nmultiKueue:\n  origin: \"\"\n  gcInterval: 30s\n",
    )
    .expect("valid");
    assert_eq!(config.multi_kueue.origin, "multikueue");
    assert_eq!(
        config.multi_kueue.gc_interval.get(),
        Duration::from_secs(30)
    );
    assert_eq!(
        config.multi_kueue.worker_lost_timeout.get(),
        Duration::from_secs(900)
    );
}

#[test]
fn wait_for_pods_ready_timeout_defaults_to_30_minutes() {
    let wait = api::config::WaitForPodsReady::default();
    assert_eq!(wait.timeout_or_default(), Duration::from_secs(1800));
}
