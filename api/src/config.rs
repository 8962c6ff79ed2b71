//! The Kueue Configuration (`config.kueue.x-k8s.io/v1beta2`, kind `Configuration`): a plain file the
//! controller reads at start, not a CRD.
//!
//! Only the parts Tollgate implements are typed; unknown fields are ignored, so a full upstream
//! configuration file still parses.
//!
//! ```
//! let config = api::config::Configuration::from_yaml("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n").unwrap();
//! assert_eq!(config.multi_kueue.origin, "multikueue");
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::{Deserialize, Serialize};

use crate::constants;

/// The Configuration's apiVersion.
pub const API_VERSION: &str = "config.kueue.x-k8s.io/v1beta2";
/// The Configuration's kind.
pub const KIND: &str = "Configuration";

/// Kueue's controller configuration.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Configuration {
    /// `config.kueue.x-k8s.io/v1beta2`.
    #[serde(default = "default_api_version")]
    pub api_version: String,
    /// `Configuration`.
    #[serde(default = "default_kind")]
    pub kind: String,
    /// The namespace the controller runs in (MultiKueue Secrets live there).
    #[serde(default = "default_namespace")]
    pub namespace: String,
    /// Whether jobs without `kueue.x-k8s.io/queue-name` are managed (and so held) too.
    #[serde(default)]
    pub manage_jobs_without_queue_name: bool,
    /// Waiting for admitted pods to become ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_for_pods_ready: Option<WaitForPodsReady>,
    /// Resource exclusion and transformations (KEP-2937).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
    /// MultiKueue settings; always present, defaulted.
    #[serde(default)]
    pub multi_kueue: MultiKueue,
    /// Which job integrations are enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrations: Option<Integrations>,
    /// Feature gates by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
}

fn default_api_version() -> String {
    API_VERSION.to_owned()
}

fn default_kind() -> String {
    KIND.to_owned()
}

fn default_namespace() -> String {
    "kueue-system".to_owned()
}

impl Default for Configuration {
    fn default() -> Self {
        Configuration {
            api_version: default_api_version(),
            kind: default_kind(),
            namespace: default_namespace(),
            manage_jobs_without_queue_name: false,
            wait_for_pods_ready: None,
            resources: None,
            multi_kueue: MultiKueue::default(),
            integrations: None,
            feature_gates: BTreeMap::new(),
        }
    }
}

/// Why a Configuration cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ConfigError {
    /// The file is not valid YAML for this type.
    #[error("cannot parse the configuration: {0}")]
    Parse(String),
    /// apiVersion or kind is not what this type reads.
    #[error("unsupported {field} {value:?}: expected {expected:?}")]
    WrongType {
        /// `apiVersion` or `kind`.
        field: &'static str,
        /// What the file says.
        value: String,
        /// What is supported.
        expected: &'static str,
    },
    /// Two transformations have the same input.
    #[error("resources.transformations[{index}].input: Duplicate value: {input:?}")]
    DuplicateTransformationInput {
        /// Index of the second transformation.
        index: usize,
        /// The repeated input.
        input: String,
    },
    /// A transformation input is also excluded, so it would never be transformed.
    #[error(
        "resources.transformations[{index}].input: Invalid value: {input:?}: matches the excluded resource prefix {prefix:?}"
    )]
    ExcludedTransformationInput {
        /// Index of the transformation.
        index: usize,
        /// The input.
        input: String,
        /// The matching prefix.
        prefix: String,
    },
}

impl Configuration {
    /// Parses a Configuration from YAML (or JSON) and validates it.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        let mut config: Configuration =
            serde_yaml::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))?;
        config.apply_defaults();
        config.validate()?;
        Ok(config)
    }

    /// Defaults that absent-field defaulting does not cover: an empty `multiKueue.origin` means the default,
    /// as upstream.
    pub fn apply_defaults(&mut self) {
        if self.multi_kueue.origin.is_empty() {
            self.multi_kueue.origin = default_origin();
        }
    }

    /// Checks what the types cannot: apiVersion/kind, duplicate or excluded transformation inputs.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.api_version != API_VERSION {
            return Err(ConfigError::WrongType {
                field: "apiVersion",
                value: self.api_version.clone(),
                expected: API_VERSION,
            });
        }
        if self.kind != KIND {
            return Err(ConfigError::WrongType {
                field: "kind",
                value: self.kind.clone(),
                expected: KIND,
            });
        }
        if let Some(resources) = &self.resources {
            let mut seen = BTreeSet::new();
            for (index, t) in resources.transformations.iter().enumerate() {
                if !seen.insert(t.input.as_str()) {
                    return Err(ConfigError::DuplicateTransformationInput {
                        index,
                        input: t.input.clone(),
                    });
                }
                if let Some(prefix) = resources
                    .exclude_resource_prefixes
                    .iter()
                    .find(|p| t.input.starts_with(p.as_str()))
                {
                    return Err(ConfigError::ExcludedTransformationInput {
                        index,
                        input: t.input.clone(),
                        prefix: prefix.clone(),
                    });
                }
            }
        }
        Ok(())
    }
}

/// Waiting for pods to be ready after admission.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct WaitForPodsReady {
    /// Whether the feature is on (older configurations; presence of the section implies it in v1beta2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable: Option<bool>,
    /// How long admitted pods may take to become ready (default 30m, see [`WaitForPodsReady::timeout_or_default`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<GoDuration>,
    /// Whether to hold other admissions until the pods are ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_admission: Option<bool>,
    /// How long pods that were ready may stay not ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_timeout: Option<GoDuration>,
    /// How evicted workloads are requeued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeuing_strategy: Option<RequeuingStrategy>,
}

impl WaitForPodsReady {
    /// Upstream's default `timeout`.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

    /// The timeout, defaulted as upstream (unset or zero means 30 minutes).
    pub fn timeout_or_default(&self) -> Duration {
        self.timeout
            .map(GoDuration::get)
            .filter(|d| !d.is_zero())
            .unwrap_or(Self::DEFAULT_TIMEOUT)
    }
}

/// Requeueing after a pods-ready timeout.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct RequeuingStrategy {
    /// Eviction (default) or Creation: which timestamp orders the queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Retries before deactivation; unset is unlimited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit_count: Option<i32>,
    /// Base of the exponential backoff, in seconds (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_base_seconds: Option<i32>,
    /// Longest backoff, in seconds (default 3600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_max_seconds: Option<i32>,
}

/// Resource handling before quota accounting.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Resources {
    /// Resources whose name starts with one of these are ignored for quota.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_resource_prefixes: Vec<String>,
    /// Transformations of requested resources into quota resources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transformations: Vec<ResourceTransformation>,
}

/// One transformation: `input` becomes `outputs` (per unit of input).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTransformation {
    /// The requested resource to transform.
    pub input: String,
    /// Retain (default) keeps the input; Replace drops it.
    #[serde(default)]
    pub strategy: TransformationStrategy,
    /// A resource whose quantity multiplies the input before transforming.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub multiply_by: Option<String>,
    /// Output resources and their quantity per unit of input.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub outputs: BTreeMap<String, Quantity>,
}

/// Whether a transformed input is kept.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TransformationStrategy {
    /// Keep the input resource next to the outputs.
    #[default]
    Retain,
    /// Drop the input resource.
    Replace,
}

/// MultiKueue settings.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MultiKueue {
    /// How often orphaned remote objects are collected; 0 disables collection (default 1m).
    #[serde(default = "default_gc_interval")]
    pub gc_interval: GoDuration,
    /// The value of the `kueue.x-k8s.io/multikueue-origin` label on remote objects (default `multikueue`).
    #[serde(default = "default_origin")]
    pub origin: String,
    /// How long an admitting worker may be unreachable before the workload is retried (default 15m).
    #[serde(default = "default_worker_lost_timeout")]
    pub worker_lost_timeout: GoDuration,
    /// Which dispatcher nominates workers (default AllAtOnce).
    #[serde(default = "default_dispatcher_name")]
    pub dispatcher_name: String,
}

fn default_gc_interval() -> GoDuration {
    GoDuration(Duration::from_secs(60))
}

fn default_origin() -> String {
    constants::multikueue::DEFAULT_ORIGIN.to_owned()
}

fn default_worker_lost_timeout() -> GoDuration {
    GoDuration(Duration::from_secs(15 * 60))
}

fn default_dispatcher_name() -> String {
    constants::dispatcher::ALL_AT_ONCE.to_owned()
}

impl Default for MultiKueue {
    fn default() -> Self {
        MultiKueue {
            gc_interval: default_gc_interval(),
            origin: default_origin(),
            worker_lost_timeout: default_worker_lost_timeout(),
            dispatcher_name: default_dispatcher_name(),
        }
    }
}

/// Job integrations.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase")]
pub struct Integrations {
    /// Enabled frameworks, e.g. `batch/job`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frameworks: Vec<String>,
}

/// A duration written as Go writes `metav1.Duration` (`1m0s`, `90s`, `1h30m`, `250ms`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GoDuration(pub Duration);

/// A duration string that Go would not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration {0:?}")]
pub struct InvalidDuration(pub String);

impl GoDuration {
    /// The duration.
    pub fn get(self) -> Duration {
        self.0
    }

    /// Parses `1h2m3.5s`, `250ms`, `0`. Negative durations are rejected.
    pub fn parse(text: &str) -> Result<Self, InvalidDuration> {
        let err = || InvalidDuration(text.to_owned());
        let s = text.strip_prefix('+').unwrap_or(text);
        if s == "0" {
            return Ok(GoDuration(Duration::ZERO));
        }
        if s.is_empty() {
            return Err(err());
        }
        let mut total_nanos: u128 = 0;
        let mut rest = s;
        while !rest.is_empty() {
            let num_end = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .ok_or_else(err)?;
            let (num, tail) = rest.split_at(num_end);
            if num.is_empty() || num == "." {
                return Err(err());
            }
            let unit_end = tail
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(tail.len());
            let (unit, next) = tail.split_at(unit_end);
            let unit_nanos: u128 = match unit {
                "ns" => 1,
                "us" | "µs" | "μs" => 1_000,
                "ms" => 1_000_000,
                "s" => 1_000_000_000,
                "m" => 60_000_000_000,
                "h" => 3_600_000_000_000,
                _ => return Err(err()),
            };
            let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
            let int: u128 = if int_part.is_empty() {
                0
            } else {
                int_part.parse().map_err(|_| err())?
            };
            let mut nanos = int.checked_mul(unit_nanos).ok_or_else(err)?;
            let mut scale = unit_nanos;
            for digit in frac_part.chars() {
                scale /= 10;
                nanos += u128::from(digit.to_digit(10).ok_or_else(err)?) * scale;
            }
            total_nanos = total_nanos.checked_add(nanos).ok_or_else(err)?;
            rest = next;
        }
        let secs = u64::try_from(total_nanos / 1_000_000_000).map_err(|_| err())?;
        let sub = (total_nanos % 1_000_000_000) as u32;
        Ok(GoDuration(Duration::new(secs, sub)))
    }
}

impl fmt::Display for GoDuration {
    /// Formats as Go's `time.Duration.String()`: `0s`, `1m0s`, `1h30m0s`, `1.5s`, `250ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.is_zero() {
            return f.write_str("0s");
        }
        if d < Duration::from_secs(1) {
            let n = d.as_nanos();
            return if n < 1_000 {
                write!(f, "{n}ns")
            } else if n < 1_000_000 {
                write!(f, "{}µs", trim_fraction(n, 1_000))
            } else {
                write!(f, "{}ms", trim_fraction(n, 1_000_000))
            };
        }
        let total = d.as_secs();
        let (h, m, s) = (total / 3600, (total % 3600) / 60, total % 60);
        if h > 0 {
            write!(f, "{h}h{m}m")?;
        } else if m > 0 {
            write!(f, "{m}m")?;
        }
        let secs_nanos = u128::from(s) * 1_000_000_000 + u128::from(d.subsec_nanos());
        write!(f, "{}s", trim_fraction(secs_nanos, 1_000_000_000))
    }
}

/// `n / unit` as a decimal without trailing zeros.
fn trim_fraction(n: u128, unit: u128) -> String {
    let int = n / unit;
    let frac = n % unit;
    if frac == 0 {
        return int.to_string();
    }
    let width = unit.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{int}.{}", digits.trim_end_matches('0'))
}

impl Serialize for GoDuration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for GoDuration {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        GoDuration::parse(&text).map_err(serde::de::Error::custom)
    }
}
