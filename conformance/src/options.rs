//! The vendor's options file: which class to test, with which pods, claiming which features, with
//! which timeouts, and who the implementation is. Flags override it (see the CLI).
//!
//! ```yaml
//! className: queued-provisioning.example.com
//! parameters: {region: us-central1}
//! podTemplates:
//!   # Pods the cluster has room for once, but not twice at the same time.
//!   fits: {count: 1, template: {spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "3"}}}]}}}
//!   # Pods the class can never provision.
//!   doesNotFit: {count: 1, template: {spec: {containers: [{name: c, image: pause, resources: {requests: {cpu: "1000"}}}]}}}
//! features: [BookingExpiry, GarbageCollection]
//! timeouts: {provisioned: 20m}
//! implementation: {organization: Example, project: example-autoscaler, version: v1.2.3, url: https://example.com, contact: [conformance@example.com]}
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use api::config::GoDuration;
use k8s_openapi::api::core::v1::PodTemplateSpec;
use serde::{Deserialize, Serialize};

/// The whole options file.
#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Options {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubeconfig: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The `provisioningClassName` under test.
    #[serde(default)]
    pub class_name: String,
    /// Parameters every request of the suite carries.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
    #[serde(default)]
    pub pod_templates: PodTemplates,
    /// The extended features the class claims.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<Feature>,
    #[serde(default)]
    pub timeouts: Timeouts,
    #[serde(default)]
    pub implementation: Implementation,
    /// Run the kueue profile: Tollgate's controller in front of the class. It creates
    /// cluster-scoped Kueue objects named after each test's namespace (and deletes them), so the
    /// cluster needs Kueue's CRDs and no other Kueue controller.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kueue: bool,
}

/// The pods the suite asks for.
#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodTemplates {
    /// Pods the cluster has room for once, but not twice at the same time.
    #[serde(default)]
    pub fits: Pods,
    /// Pods the class can never provision.
    #[serde(default)]
    pub does_not_fit: Pods,
}

/// A pod template and how many of it.
#[derive(Deserialize, Serialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Pods {
    #[serde(default = "one")]
    pub count: i32,
    #[serde(default)]
    pub template: PodTemplateSpec,
}

fn one() -> i32 {
    1
}

/// An extended feature a class may claim.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feature {
    /// `CapacityRevoked=True` once `maxRunDurationSeconds` has passed.
    CapacityRevoked,
    /// `Failed=True` when not provisioned within the `ValidUntilSeconds` parameter.
    ValidUntilSeconds,
    /// The `noRetry: "true"` parameter fails a request instead of retrying it.
    #[serde(rename = "noRetry")]
    NoRetry,
    /// `status.provisioningClassDetails` on provisioned requests.
    ProvisioningClassDetails,
    /// No partial capacity left behind by a request that cannot be provisioned.
    AtomicScaleUp,
    /// `BookingExpired=True` some time after `Provisioned=True` (upstream: 10 minutes).
    BookingExpiry,
    /// `BookingExpired=True` once as many consuming pods are scheduled as were asked for.
    BookingConsumed,
    /// Old finished requests are deleted (upstream: 7 days).
    GarbageCollection,
}

impl Feature {
    pub const ALL: [Feature; 8] = [
        Feature::CapacityRevoked,
        Feature::ValidUntilSeconds,
        Feature::NoRetry,
        Feature::ProvisioningClassDetails,
        Feature::AtomicScaleUp,
        Feature::BookingExpiry,
        Feature::BookingConsumed,
        Feature::GarbageCollection,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Feature::CapacityRevoked => "CapacityRevoked",
            Feature::ValidUntilSeconds => "ValidUntilSeconds",
            Feature::NoRetry => "noRetry",
            Feature::ProvisioningClassDetails => "ProvisioningClassDetails",
            Feature::AtomicScaleUp => "AtomicScaleUp",
            Feature::BookingExpiry => "BookingExpiry",
            Feature::BookingConsumed => "BookingConsumed",
            Feature::GarbageCollection => "GarbageCollection",
        }
    }

    pub fn from_name(name: &str) -> Result<Feature, String> {
        Feature::ALL
            .into_iter()
            .find(|f| f.name() == name)
            .ok_or_else(|| {
                let known: Vec<&str> = Feature::ALL.iter().map(|f| f.name()).collect();
                format!("unknown feature `{name}` (known: {})", known.join(", "))
            })
    }
}

/// Named timeouts; every one can be overridden in the file or with `--timeout NAME=DURATION`.
///
/// Two of them bound waits for something that must *not* happen, and a wait too short to see it
/// would pass a class that breaks the rule. So they are tied to others ([`Timeouts::check`]) and
/// to the class's own pace (the suite watches at least twice as long as the class took to answer
/// any request in the run; the report records both).
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Timeouts {
    /// Until a new request shows any condition.
    #[serde(default = "minutes::<2>")]
    pub accepted: GoDuration,
    /// Until a request whose pods fit is `Provisioned=True`.
    #[serde(default = "minutes::<15>")]
    pub provisioned: GoDuration,
    /// Until a request that cannot be provisioned shows it (Provisioned=False or Failed=True).
    #[serde(default = "minutes::<5>")]
    pub progress: GoDuration,
    /// Until a waiting request is provisioned once room is freed (upstream retries 1m after a
    /// first miss). Must be shorter than `booking`.
    #[serde(default = "minutes::<5>")]
    pub retry: GoDuration,
    /// How long a request is watched for a change it must not make (taking back Provisioned=True,
    /// leaving Failed=True, provisioning pods that cannot fit). At least twice the slowest answer
    /// the class gave in the run.
    #[serde(default = "seconds::<30>")]
    pub hold: GoDuration,
    /// How long new Nodes take to appear once the class decides to add them: the wait for Nodes
    /// an atomic class must not add.
    #[serde(default = "minutes::<2>")]
    pub scale_up: GoDuration,
    /// How long the class books a provisioned request's capacity (upstream: 10m). A wait for
    /// capacity freed by a deletion ends before the booking would have ended on its own.
    #[serde(default = "minutes::<10>")]
    pub booking: GoDuration,
    /// Until `BookingExpired=True` after `Provisioned=True`. At least `booking`.
    #[serde(default = "minutes::<12>")]
    pub booking_expiry: GoDuration,
    /// Until an old finished request is deleted (upstream: 7 days).
    #[serde(default = "garbage_collection")]
    pub garbage_collection: GoDuration,
    /// Until a test's namespace is gone after the test.
    #[serde(default = "minutes::<2>")]
    pub cleanup: GoDuration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            accepted: minutes::<2>(),
            provisioned: minutes::<15>(),
            progress: minutes::<5>(),
            retry: minutes::<5>(),
            hold: seconds::<30>(),
            scale_up: minutes::<2>(),
            booking: minutes::<10>(),
            booking_expiry: minutes::<12>(),
            garbage_collection: garbage_collection(),
            cleanup: minutes::<2>(),
        }
    }
}

impl Timeouts {
    /// The names `--timeout` accepts.
    pub const NAMES: [&'static str; 10] = [
        "accepted",
        "provisioned",
        "progress",
        "retry",
        "hold",
        "scaleUp",
        "booking",
        "bookingExpiry",
        "garbageCollection",
        "cleanup",
    ];

    /// Every timeout with its name, in the order of [`Timeouts::NAMES`].
    pub fn named(&self) -> [(&'static str, GoDuration); 10] {
        [
            ("accepted", self.accepted),
            ("provisioned", self.provisioned),
            ("progress", self.progress),
            ("retry", self.retry),
            ("hold", self.hold),
            ("scaleUp", self.scale_up),
            ("booking", self.booking),
            ("bookingExpiry", self.booking_expiry),
            ("garbageCollection", self.garbage_collection),
            ("cleanup", self.cleanup),
        ]
    }

    fn slot(&mut self, name: &str) -> Option<&mut GoDuration> {
        Some(match name {
            "accepted" => &mut self.accepted,
            "provisioned" => &mut self.provisioned,
            "progress" => &mut self.progress,
            "retry" => &mut self.retry,
            "hold" => &mut self.hold,
            "scaleUp" => &mut self.scale_up,
            "booking" => &mut self.booking,
            "bookingExpiry" => &mut self.booking_expiry,
            "garbageCollection" => &mut self.garbage_collection,
            "cleanup" => &mut self.cleanup,
            _ => return None,
        })
    }

    /// Sets one timeout by name.
    pub fn set(&mut self, name: &str, value: GoDuration) -> Result<(), String> {
        let slot = self.slot(name).ok_or_else(|| {
            format!(
                "unknown timeout `{name}` (known: {})",
                Self::NAMES.join(", ")
            )
        })?;
        *slot = value;
        Ok(())
    }

    /// Refuses settings under which a test could not see the rule it checks, saying why.
    pub fn check(&self) -> Result<(), String> {
        if let Some((name, _)) = self.named().into_iter().find(|(_, d)| d.get().is_zero()) {
            return Err(format!("timeouts.{name}: must be longer than zero"));
        }
        if self.retry.get() >= self.booking.get() {
            return Err(format!(
                "timeouts.retry ({}) must be shorter than timeouts.booking ({}): a class that \
                 ignores a deletion frees the capacity anyway when the booking ends, so a longer \
                 wait could not tell it from one that freed it at once",
                self.retry, self.booking
            ));
        }
        if self.booking_expiry.get() < self.booking.get() {
            return Err(format!(
                "timeouts.bookingExpiry ({}) must be at least timeouts.booking ({}): \
                 BookingExpired=True comes when the booking ends",
                self.booking_expiry, self.booking
            ));
        }
        Ok(())
    }
}

fn minutes<const N: u64>() -> GoDuration {
    GoDuration(Duration::from_secs(N * 60))
}

fn seconds<const N: u64>() -> GoDuration {
    GoDuration(Duration::from_secs(N))
}

fn garbage_collection() -> GoDuration {
    GoDuration(Duration::from_secs(7 * 24 * 3600 + 3600))
}

/// Who the implementation under test is, for the report.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Implementation {
    #[serde(default)]
    pub organization: String,
    #[serde(default)]
    pub project: String,
    #[serde(default)]
    pub url: String,
    #[serde(default)]
    pub version: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contact: Vec<String>,
}

/// Options that cannot be used, naming the field.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Invalid { path: String, message: String },
}

impl Options {
    pub fn load(path: &std::path::Path) -> Result<Options, OptionsError> {
        let text = std::fs::read_to_string(path).map_err(|source| OptionsError::Read {
            path: path.display().to_string(),
            source,
        })?;
        serde_yaml::from_str(&text).map_err(|e| OptionsError::Invalid {
            path: path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// What must be set before a run: the class and both pod templates.
    pub fn check(&self) -> Result<(), String> {
        if self.class_name.is_empty() {
            return Err("className: the provisioning class to test is not set".into());
        }
        for (field, pods) in [
            ("podTemplates.fits", &self.pod_templates.fits),
            ("podTemplates.doesNotFit", &self.pod_templates.does_not_fit),
        ] {
            let containers = pods
                .template
                .spec
                .as_ref()
                .map_or(0, |s| s.containers.len());
            if containers == 0 {
                return Err(format!("{field}: a pod template with containers is needed"));
            }
            if pods.count < 1 {
                return Err(format!("{field}.count: must be at least 1"));
            }
        }
        self.timeouts.check()
    }

    pub fn claims(&self, feature: Feature) -> bool {
        self.features.contains(&feature)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(name: &str, value: &str) -> Timeouts {
        let mut t = Timeouts::default();
        t.set(name, GoDuration::parse(value).expect("duration"))
            .expect("known");
        t
    }

    #[test]
    fn the_defaults_open_no_gap() {
        assert_eq!(Timeouts::default().check(), Ok(()));
    }

    #[test]
    fn a_retry_as_long_as_the_booking_is_refused_saying_why() {
        // The old default: a class ignoring deletion got its capacity back when the booking ended.
        let err = with("retry", "15m").check().expect_err("refused");
        assert!(
            err.starts_with("timeouts.retry (15m0s) must be shorter than timeouts.booking (10m0s)"),
            "{err}"
        );
        assert!(err.contains("ignores a deletion"), "{err}");
        assert_eq!(with("retry", "9m59s").check(), Ok(()));
    }

    #[test]
    fn booking_expiry_shorter_than_the_booking_and_zero_timeouts_are_refused() {
        let err = with("bookingExpiry", "5m").check().expect_err("refused");
        assert!(
            err.starts_with("timeouts.bookingExpiry (5m0s) must be at least"),
            "{err}"
        );
        let err = with("hold", "0s").check().expect_err("refused");
        assert_eq!(err, "timeouts.hold: must be longer than zero");
    }

    #[test]
    fn every_named_timeout_can_be_set_and_read_back() {
        for name in Timeouts::NAMES {
            let t = with(name, "7s");
            let read = t.named().into_iter().find(|(n, _)| *n == name);
            assert_eq!(
                read.map(|(_, d)| d.to_string()),
                Some("7s".into()),
                "{name}"
            );
        }
        let err = Timeouts::default()
            .set("soon", GoDuration::default())
            .expect_err("unknown");
        assert!(err.contains("known: accepted, provisioned"), "{err}");
    }
}
