//! The fake autoscaler's configuration file: node groups, provisioning classes, scripts, timing,
//! and which broken variant (if any) to play.
//!
//! ```
//! let config = fake_autoscaler::Config::parse(r#"
//! nodeGroups:
//!   - name: gpu
//!     machine: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "4"}
//!     maxSize: 4
//! classes:
//!   - {name: best-effort-atomic-scale-up.autoscaling.x-k8s.io, behaviour: atomic-scale-up}
//! "#).unwrap();
//! assert_eq!(config.node_groups[0].max_size, 4);
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use api::config::GoDuration;
use api::constants::{provisioning_class, provreq_condition as cond, provreq_reason as reason};
use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use serde::{Deserialize, Serialize};

use crate::broken::Broken;

/// The whole configuration.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Config {
    /// Simulated capacity: groups of identical machines the autoscaler can add and remove.
    #[serde(default)]
    pub node_groups: Vec<NodeGroup>,
    /// The provisioning classes this autoscaler serves (default: the two upstream classes).
    #[serde(default = "default_classes")]
    pub classes: Vec<ClassConfig>,
    /// Exact timelines for requests matching a pattern; they take precedence over the classes.
    #[serde(default)]
    pub scripts: Vec<Script>,
    /// Upstream's timings, overridable.
    #[serde(default)]
    pub timing: Timing,
    /// Play a broken autoscaler that violates one rule of the contract (see [`Broken`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub broken: Option<Broken>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            node_groups: vec![],
            classes: default_classes(),
            scripts: vec![],
            timing: Timing::default(),
            broken: None,
        }
    }
}

/// A group of identical machines.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeGroup {
    pub name: String,
    /// What one node offers (its allocatable resources), e.g. `{cpu: "16", nvidia.com/gpu: "4"}`.
    /// `pods` defaults to 110, as the kubelet's.
    pub machine: BTreeMap<String, Quantity>,
    /// Labels every node of the group carries (besides `kubernetes.io/hostname` and
    /// `tollgate.dev/node-group`).
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub taints: Vec<Taint>,
    /// Nodes kept at all times (created at start).
    #[serde(default)]
    pub min_size: u32,
    pub max_size: u32,
    /// How long a requested node takes to appear.
    #[serde(default = "default_scale_up_delay")]
    pub scale_up_delay: GoDuration,
    /// When set, every scale-up of this group is refused by the "cloud provider".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fail_scale_up: Option<ScaleUpFailure>,
}

/// How a refused scale-up is reported by a vendor-like class (`Failed=True` with this reason and
/// message). The upstream atomic class reports every refusal as capacity not found.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScaleUpFailure {
    #[serde(default = "default_failure_reason")]
    pub reason: String,
    #[serde(default = "default_failure_message")]
    pub message: String,
}

/// One provisioning class and how it behaves.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClassConfig {
    /// The `provisioningClassName` it serves.
    pub name: String,
    pub behaviour: Behaviour,
    /// vendor: how long a request waits as `Accepted=False` before it is queued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_delay: Option<GoDuration>,
    /// vendor: `status.provisioningClassDetails` once provisioned. `{request}` and `{nodeGroup}`
    /// in a value are replaced by the request's name and the node group that holds its capacity.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub provisioning_class_details: BTreeMap<String, String>,
    /// vendor: labels put on the nodes created for a request (same placeholders), so that pods
    /// can be pinned to them with a nodeSelector taken from the details.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub node_labels: BTreeMap<String, String>,
    /// scripted: the timeline every request of the class follows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<Step>,
}

/// What a class does with a request.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Behaviour {
    /// Upstream `check-capacity`: a scheduling simulation, never scales up.
    CheckCapacity,
    /// Upstream `best-effort-atomic-scale-up`: all-or-nothing scale-up.
    AtomicScaleUp,
    /// A queued, vendor-style class (after GKE's queued provisioning).
    Vendor,
    /// Follows `timeline` only.
    Scripted,
}

/// A timeline for the requests that match.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Script {
    #[serde(rename = "match", default)]
    pub matcher: Match,
    pub timeline: Vec<Step>,
}

/// Which requests a script is for; every field given must match. `name` may contain `*`.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Match {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
}

impl Match {
    pub fn matches(&self, namespace: &str, name: &str, class: &str) -> bool {
        self.name.as_deref().is_none_or(|p| glob(p, name))
            && self.namespace.as_deref().is_none_or(|n| n == namespace)
            && self.class.as_deref().is_none_or(|c| c == class)
    }
}

/// `*` matches any run of characters; everything else matches itself.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            let Some(rest) = text.strip_prefix(head) else {
                return false;
            };
            (0..=rest.len())
                .filter(|i| rest.is_char_boundary(*i))
                .any(|i| glob(tail, &rest[i..]))
        }
    }
}

/// One moment of a timeline, counted from the request's creation.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Step {
    pub after: GoDuration,
    /// Conditions to set: `Accepted`, `Provisioned=False`, or `{type, status, reason, message}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "one_or_many")]
    pub set: Vec<ConditionSpec>,
    /// `status.provisioningClassDetails` entries to set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub details: BTreeMap<String, String>,
    /// Delete the request.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delete: bool,
}

/// A condition a timeline sets.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(untagged)]
pub enum ConditionSpec {
    /// `Type` (meaning True) or `Type=Status`, with upstream's reason and message.
    Short(String),
    Full(FullCondition),
}

#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FullCondition {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default = "default_true")]
    pub status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A condition spelled out: type, status, reason, message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

impl ConditionSpec {
    /// The condition with upstream's reason and message filled in where the script left them out.
    pub fn resolve(&self) -> Result<Resolved, String> {
        let (type_, status, reason, message) = match self {
            ConditionSpec::Short(text) => {
                let (t, s) = text.split_once('=').unwrap_or((text.as_str(), "True"));
                (t.trim(), s.trim(), None, None)
            }
            ConditionSpec::Full(c) => (
                c.type_.as_str(),
                c.status.as_str(),
                c.reason.clone(),
                c.message.clone(),
            ),
        };
        if !matches!(status, "True" | "False" | "Unknown") {
            return Err(format!(
                "condition {type_}: status `{status}` is not True, False or Unknown"
            ));
        }
        let (default_reason, default_message) = default_reason(type_, status).ok_or_else(|| {
            format!(
                "condition `{type_}` has no default reason; write {{type, status, reason, message}} \
                 (types with defaults: {}, {}, {}, {}, {})",
                cond::ACCEPTED,
                cond::PROVISIONED,
                cond::FAILED,
                cond::BOOKING_EXPIRED,
                cond::CAPACITY_REVOKED
            )
        })?;
        Ok(Resolved {
            type_: type_.to_string(),
            status: status.to_string(),
            reason: reason.unwrap_or_else(|| default_reason.to_string()),
            message: message.unwrap_or_else(|| default_message.to_string()),
        })
    }
}

/// The reason and message upstream's Cluster Autoscaler writes for a condition, where it has one.
fn default_reason(type_: &str, status: &str) -> Option<(&'static str, &'static str)> {
    Some(match (type_, status) {
        (cond::ACCEPTED, _) => (reason::ACCEPTED, crate::messages::ACCEPTED),
        (cond::PROVISIONED, "True") => (
            reason::CAPACITY_IS_PROVISIONED,
            crate::messages::CAPACITY_IS_FOUND,
        ),
        (cond::PROVISIONED, _) => (
            reason::CAPACITY_IS_NOT_FOUND,
            crate::messages::CAPACITY_NOT_FOUND_RETRY,
        ),
        (cond::FAILED, _) => (
            reason::CAPACITY_IS_NOT_FOUND,
            crate::messages::CAPACITY_NOT_FOUND_NO_RETRY,
        ),
        (cond::BOOKING_EXPIRED, _) => (
            reason::CAPACITY_RESERVATION_TIME_EXPIRED,
            crate::messages::BOOKING_TIME_EXPIRED,
        ),
        (cond::CAPACITY_REVOKED, _) => (
            crate::messages::CAPACITY_REVOKED_REASON,
            crate::messages::CAPACITY_REVOKED,
        ),
        _ => return None,
    })
}

/// Upstream's timings.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Timing {
    /// How long capacity stays booked after `Provisioned=True` (upstream: 10m).
    #[serde(default = "ten_minutes")]
    pub booking_time: GoDuration,
    /// A request not provisioned this long after creation fails with `Expired` (upstream: 7 days).
    #[serde(default = "seven_days")]
    pub expiry: GoDuration,
    /// A request whose Provisioned or Failed condition is this old is deleted (upstream: 7 days).
    #[serde(default = "seven_days")]
    pub garbage_collection: GoDuration,
    /// First wait before a `Provisioned=False` request is tried again (upstream: 1m), doubling...
    #[serde(default = "one_minute")]
    pub retry_initial: GoDuration,
    /// ...up to this (upstream: 10m).
    #[serde(default = "ten_minutes")]
    pub retry_max: GoDuration,
    /// A node the autoscaler added is removed after it has been unneeded this long (upstream: 10m).
    #[serde(default = "ten_minutes")]
    pub scale_down_unneeded_time: GoDuration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            booking_time: ten_minutes(),
            expiry: seven_days(),
            garbage_collection: seven_days(),
            retry_initial: one_minute(),
            retry_max: ten_minutes(),
            scale_down_unneeded_time: ten_minutes(),
        }
    }
}

/// A configuration that cannot be used, naming the field.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Syntax(String),
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
}

impl Config {
    /// Parses and checks a YAML (or JSON) configuration.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let config: Config =
            serde_yaml::from_str(text).map_err(|e| ConfigError::Syntax(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Reads and checks a configuration file.
    pub fn load(path: &std::path::Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text)
    }

    /// From a JSON value (a scenario's `components.fake-autoscaler`).
    pub fn from_value(value: &serde_json::Value) -> Result<Config, ConfigError> {
        if value.is_null() {
            return Ok(Config::default());
        }
        // Through YAML, so that errors name the path to the bad field.
        Self::parse(&value.to_string())
    }

    /// The class serving `name`, if this autoscaler serves it.
    pub fn class(&self, name: &str) -> Option<&ClassConfig> {
        self.classes.iter().find(|c| c.name == name)
    }

    pub fn node_group(&self, name: &str) -> Option<&NodeGroup> {
        self.node_groups.iter().find(|g| g.name == name)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let invalid = |field: String, message: &str| {
            Err(ConfigError::Invalid {
                field,
                message: message.to_string(),
            })
        };
        for (i, group) in self.node_groups.iter().enumerate() {
            let field = |f: &str| format!("nodeGroups[{i}].{f}");
            if group.name.is_empty() || !is_dns_label(&group.name) {
                return invalid(
                    field("name"),
                    "must be a DNS label (lower-case letters, digits and '-', at most 50 characters)",
                );
            }
            if self.node_groups[..i].iter().any(|g| g.name == group.name) {
                return invalid(field("name"), "two node groups have this name");
            }
            if group.min_size > group.max_size {
                return invalid(field("minSize"), "is larger than maxSize");
            }
            for (resource, quantity) in &group.machine {
                if support::quantity::Amount::from_quantity(quantity).is_err() {
                    return invalid(
                        field(&format!("machine.{resource}")),
                        &format!("`{}` is not a Kubernetes quantity", quantity.0),
                    );
                }
            }
        }
        for (i, class) in self.classes.iter().enumerate() {
            let field = |f: &str| format!("classes[{i}].{f}");
            if class.name.is_empty() {
                return invalid(field("name"), "must not be empty");
            }
            if self.classes[..i].iter().any(|c| c.name == class.name) {
                return invalid(field("name"), "two classes have this name");
            }
            let vendor = class.behaviour == Behaviour::Vendor;
            if !vendor
                && (class.queue_delay.is_some()
                    || !class.provisioning_class_details.is_empty()
                    || !class.node_labels.is_empty())
            {
                return invalid(
                    field("behaviour"),
                    "queueDelay, provisioningClassDetails and nodeLabels are for a vendor class only",
                );
            }
            match (class.behaviour, class.timeline.is_empty()) {
                (Behaviour::Scripted, true) => {
                    return invalid(field("timeline"), "a scripted class needs a timeline");
                }
                (Behaviour::Scripted, false) => {
                    validate_timeline(&class.timeline, &field("timeline"))?;
                }
                (_, false) => {
                    return invalid(field("timeline"), "only a scripted class has a timeline");
                }
                (_, true) => {}
            }
        }
        for (i, script) in self.scripts.iter().enumerate() {
            let field = format!("scripts[{i}].timeline");
            if script.timeline.is_empty() {
                return invalid(field, "must have at least one step");
            }
            validate_timeline(&script.timeline, &field)?;
        }
        if self.timing.retry_initial.get() > self.timing.retry_max.get() {
            return invalid(
                "timing.retryInitial".into(),
                "is longer than timing.retryMax",
            );
        }
        Ok(())
    }
}

fn validate_timeline(steps: &[Step], field: &str) -> Result<(), ConfigError> {
    for (i, step) in steps.iter().enumerate() {
        if i > 0 && step.after < steps[i - 1].after {
            return Err(ConfigError::Invalid {
                field: format!("{field}[{i}].after"),
                message: "steps must be in time order".into(),
            });
        }
        for (j, c) in step.set.iter().enumerate() {
            c.resolve().map_err(|message| ConfigError::Invalid {
                field: format!("{field}[{i}].set[{j}]"),
                message,
            })?;
        }
    }
    Ok(())
}

fn is_dns_label(name: &str) -> bool {
    name.len() <= 50
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

fn default_classes() -> Vec<ClassConfig> {
    [
        (provisioning_class::CHECK_CAPACITY, Behaviour::CheckCapacity),
        (
            provisioning_class::BEST_EFFORT_ATOMIC_SCALE_UP,
            Behaviour::AtomicScaleUp,
        ),
    ]
    .into_iter()
    .map(|(name, behaviour)| ClassConfig {
        name: name.to_string(),
        behaviour,
        queue_delay: None,
        provisioning_class_details: BTreeMap::new(),
        node_labels: BTreeMap::new(),
        timeline: vec![],
    })
    .collect()
}

fn default_scale_up_delay() -> GoDuration {
    GoDuration(Duration::from_secs(60))
}
fn default_failure_reason() -> String {
    "ResourcePoolExhausted".into()
}
fn default_failure_message() -> String {
    "the cloud provider has no capacity left for this node group".into()
}
fn default_true() -> String {
    "True".into()
}
fn one_minute() -> GoDuration {
    GoDuration(Duration::from_secs(60))
}
fn ten_minutes() -> GoDuration {
    GoDuration(Duration::from_secs(600))
}
fn seven_days() -> GoDuration {
    GoDuration(Duration::from_secs(7 * 24 * 3600))
}

/// `set: Accepted` or `set: [Accepted, {type: Provisioned, ...}]`.
mod one_or_many {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use super::ConditionSpec;

    // A list first: serde would read a list of two strings as a `FullCondition` (type, status).
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        Many(Vec<ConditionSpec>),
        One(ConditionSpec),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<ConditionSpec>, D::Error> {
        Ok(match OneOrMany::deserialize(d)? {
            OneOrMany::One(c) => vec![c],
            OneOrMany::Many(cs) => cs,
        })
    }

    pub fn serialize<S: Serializer>(v: &[ConditionSpec], s: S) -> Result<S::Ok, S::Error> {
        v.serialize(s)
    }
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
