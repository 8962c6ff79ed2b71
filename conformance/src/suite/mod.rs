//! The tests, and what each is given to run: a namespace of its own, a client, the options, and a
//! monitor of every request version it causes.

mod core;
mod extended;
mod fit;
mod installation;
mod kueue;

use std::fmt;
use std::time::Duration;

use api::autoscaling::{PodSet, ProvisioningRequest, ProvisioningRequestSpec, Reference};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::{Node, PodTemplate};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::{Client, ResourceExt};

use crate::monitor::{Monitor, Pace, Seen};
use crate::options::{Feature, Options, Pods};

/// Which group of tests a test belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub enum Profile {
    /// The contract Kueue relies on: every class must pass.
    #[serde(rename = "core")]
    Core,
    /// Features a class may claim.
    #[serde(rename = "extended")]
    Extended,
    /// Kueue (Tollgate's controller) in front of the class, when the options ask for it.
    #[serde(rename = "kueue")]
    Kueue,
    /// The cluster's installation (its CRDs), not the class: reported apart from the class's
    /// verdict.
    #[serde(rename = "installation")]
    Installation,
}

impl Profile {
    pub fn name(self) -> &'static str {
        match self {
            Profile::Core => "core",
            Profile::Extended => "extended",
            Profile::Kueue => "kueue",
            Profile::Installation => "installation",
        }
    }
}

/// One conformance test.
pub struct TestCase {
    pub name: &'static str,
    pub description: &'static str,
    pub profile: Profile,
    /// The features the class must claim for the test to run.
    pub features: &'static [Feature],
    /// What it needs of the cluster's capacity, which decides what it may run beside.
    pub room: Room,
    pub run: for<'a> fn(&'a Ctx) -> BoxFuture<'a, Result<(), Failure>>,
}

/// What a test needs of the cluster's capacity. Tests run in namespaces of their own, so only
/// capacity keeps them apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Room {
    /// The cluster as the class left it, with nothing else running: such tests run alone, first.
    Alone,
    /// The room the cluster has for the `fits` pods once: one such test at a time.
    Fits,
    /// No capacity (only pods that never fit, or no request provisioned): runs beside any test
    /// but an `Alone` one.
    Free,
}

/// The test that runs first among those needing the `fits` room: a class that holds on to
/// capacity is then caught by the test about that rule, not by a later test that merely finds no
/// room.
const FIRST_FOR_THE_ROOM: &str = "deletion-frees-capacity";

/// Every test, in the order they start: those that run alone (they need the cluster as the class
/// left it, no Nodes added yet), then installation, core, extended, kueue.
pub fn all() -> Vec<TestCase> {
    let mut tests = installation::tests();
    tests.extend(core::tests());
    tests.extend(extended::tests());
    tests.extend(kueue::tests());
    tests.sort_by_key(|t| (t.room != Room::Alone, t.name != FIRST_FOR_THE_ROOM));
    tests
}

/// Why a test failed, naming the broken rule of the contract when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub rule: Option<&'static str>,
    pub message: String,
    /// Not a failure of the class: the test could not check its rule with these options, and is
    /// reported skipped (which makes its profile partial).
    pub cannot_test: bool,
}

impl Failure {
    pub fn rule(rule: &'static str, message: impl Into<String>) -> Failure {
        Failure {
            rule: Some(rule),
            message: message.into(),
            cannot_test: false,
        }
    }

    pub fn other(message: impl Into<String>) -> Failure {
        Failure {
            rule: None,
            message: message.into(),
            cannot_test: false,
        }
    }

    /// The options do not let the test check its rule (see [`Failure::cannot_test`]).
    pub fn cannot_test(why: impl Into<String>) -> Failure {
        Failure {
            rule: None,
            message: why.into(),
            cannot_test: true,
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rule {
            Some(rule) => write!(f, "broken rule: {rule}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// What a test runs with.
pub struct Ctx {
    pub client: Client,
    pub options: Options,
    pub namespace: String,
    /// The run's label value ([`crate::runner::RUN_LABEL`]), for objects made outside the namespace.
    pub run_id: String,
    pub clock: support::Clock,
    pub monitor: Monitor,
    /// How slow the class has been to answer, over the whole run.
    pub pace: Pace,
    /// The windows this test watched for broken rules.
    pub holds: std::sync::Mutex<Vec<Duration>>,
}

/// Which of the options' pod templates.
#[derive(Clone, Copy, Debug)]
pub enum Which {
    Fits,
    DoesNotFit,
}

impl Ctx {
    fn requests(&self) -> Api<ProvisioningRequest> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    fn pods(&self, which: Which) -> &Pods {
        match which {
            Which::Fits => &self.options.pod_templates.fits,
            Which::DoesNotFit => &self.options.pod_templates.does_not_fit,
        }
    }

    /// Creates a PodTemplate from the options.
    pub async fn template(&self, name: &str, which: Which) -> Result<(), Failure> {
        let template = PodTemplate {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            template: Some(self.pods(which).template.clone()),
        };
        Api::<PodTemplate>::namespaced(self.client.clone(), &self.namespace)
            .create(&PostParams::default(), &template)
            .await
            .map(|_| ())
            .map_err(|e| Failure::other(format!("creating PodTemplate {name}: {e}")))
    }

    /// Creates a request of the class under test for `template`, with the options' parameters
    /// and `extra` ones, for the count of `which`'s pods.
    pub async fn request(
        &self,
        name: &str,
        template: &str,
        which: Which,
        extra: &[(&str, &str)],
    ) -> Result<(), Failure> {
        let mut parameters = self.options.parameters.clone();
        parameters.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let request = ProvisioningRequest {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some(self.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: ProvisioningRequestSpec {
                pod_sets: vec![PodSet {
                    pod_template_ref: Reference {
                        name: template.into(),
                    },
                    count: self.pods(which).count,
                }],
                provisioning_class_name: self.options.class_name.clone(),
                parameters,
            },
            status: None,
        };
        if matches!(which, Which::DoesNotFit) {
            self.monitor.mark_unfit(name);
        }
        self.requests()
            .create(&PostParams::default(), &request)
            .await
            .map(|_| ())
            .map_err(|e| Failure::other(format!("creating ProvisioningRequest {name}: {e}")))
    }

    pub async fn delete_request(&self, name: &str) -> Result<(), Failure> {
        self.requests()
            .delete(name, &Default::default())
            .await
            .map(|_| ())
            .map_err(|e| Failure::other(format!("deleting ProvisioningRequest {name}: {e}")))
    }

    /// Waits until `done` holds for the request (or its absence), within `timeout`. On timeout
    /// the failure says `what` was awaited, naming `rule` if one is broken by the wait.
    pub async fn wait_for(
        &self,
        name: &str,
        timeout: Duration,
        what: &str,
        rule: Option<&'static str>,
        done: impl Fn(Option<&ProvisioningRequest>) -> bool + Send + 'static,
    ) -> Result<(), Failure> {
        let wait = await_condition(self.requests(), name, done);
        let waited = tokio::select! {
            waited = tokio::time::timeout(timeout, wait) => waited,
            // A rule broken meanwhile ends the wait: nothing after it can mend the test.
            broken = self.broken_rule(name) => return Err(broken),
        };
        match waited {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(Failure::other(format!("watching {name}: {e}"))),
            Err(_) => Err(Failure {
                rule,
                cannot_test: false,
                message: format!(
                    "request {name}: {what} did not happen within {}",
                    api::config::GoDuration(timeout)
                ),
            }),
        }
    }

    /// Waits until the request is `Provisioned=True`: a request for pods that fit must get there.
    pub async fn provisioned(&self, name: &str) -> Result<(), Failure> {
        self.wait_for(
            name,
            self.options.timeouts.provisioned.get(),
            "Provisioned=True",
            Some(api::contract::FITTING_REQUESTS_PROVISIONED),
            |r| is_true(r, api::constants::provreq_condition::PROVISIONED),
        )
        .await
    }

    /// The request as it is now.
    pub async fn get(&self, name: &str) -> Result<ProvisioningRequest, Failure> {
        self.requests()
            .get(name)
            .await
            .map_err(|e| Failure::other(format!("reading ProvisioningRequest {name}: {e}")))
    }

    /// When a condition of the request last changed, if it has it.
    pub async fn changed_at(
        &self,
        name: &str,
        type_: &str,
    ) -> Result<Option<jiff::Timestamp>, Failure> {
        let request = self.get(name).await?;
        Ok(condition(Some(&request), type_).map(|c| c.last_transition_time.0))
    }

    /// Resolves with the first rule the request's history breaks, once it breaks one.
    async fn broken_rule(&self, name: &str) -> Failure {
        let mut changes = self.monitor.changes();
        loop {
            if let Some(v) = self.monitor.check(name) {
                return Failure::rule(v.rule, v.detail);
            }
            if changes.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }

    /// How long to watch for a change that must not come: the `hold` timeout, or twice the
    /// slowest the class has been to answer a request in this run if that is longer (a class
    /// breaks a rule on its own loop; a shorter watch could end before its next turn).
    pub fn hold_window(&self) -> Duration {
        self.options
            .timeouts
            .hold
            .get()
            .max(2 * self.pace.slowest())
    }

    /// Watches the request for [`Ctx::hold_window`]: fails as soon as its history breaks a rule,
    /// and ends early once `settled` holds (its state proves the change can no longer come).
    pub async fn watch(
        &self,
        name: &str,
        settled: impl Fn(&[Seen]) -> bool,
    ) -> Result<(), Failure> {
        let started = tokio::time::Instant::now();
        let mut changes = self.monitor.changes();
        loop {
            if let Some(v) = self.monitor.check(name) {
                return Err(Failure::rule(v.rule, v.detail));
            }
            if settled(&self.monitor.history(name)) {
                return Ok(());
            }
            // The window may grow while it runs, as slower answers come in.
            let window = self.hold_window();
            let deadline = started + window;
            let more = tokio::select! {
                changed = changes.changed() => changed.is_ok(),
                _ = tokio::time::sleep_until(deadline) => false,
            };
            if !more {
                tokio::time::sleep_until(deadline).await;
                self.note_hold(window);
                return Ok(());
            }
        }
    }

    fn note_hold(&self, window: Duration) {
        self.holds
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(window);
    }

    /// The cluster's Nodes, by name.
    pub async fn nodes(&self) -> Result<Vec<String>, Failure> {
        Ok(self
            .node_objects()
            .await?
            .iter()
            .map(|n| n.name_any())
            .collect())
    }

    /// The cluster's Nodes that could run one of `which`'s pods (by selector, affinity, taints and
    /// allocatable resources, as `fit.rs` judges), by name: the only Nodes a request for those
    /// pods can have added.
    pub async fn nodes_for(&self, which: Which) -> Result<Vec<String>, Failure> {
        let spec = self.pods(which).template.spec.clone().unwrap_or_default();
        let pod = fit::PodNeeds::of(&spec)
            .map_err(|e| Failure::other(format!("the options' pod template: {e}")))?;
        Ok(self
            .node_objects()
            .await?
            .iter()
            .filter(|n| pod.could_run_on(n))
            .map(|n| n.name_any())
            .collect())
    }

    async fn node_objects(&self) -> Result<Vec<Node>, Failure> {
        Api::<Node>::all(self.client.clone())
            .list(&ListParams::default())
            .await
            .map(|l| l.items)
            .map_err(|e| Failure::other(format!("listing Nodes: {e}")))
    }
}

pub use kueue::release_labelled;

/// Whether a condition of the request is True.
pub fn is_true(request: Option<&ProvisioningRequest>, type_: &str) -> bool {
    condition(request, type_).is_some_and(|c| c.status == "True")
}

/// A condition of the request, if it has it.
pub fn condition<'a>(
    request: Option<&'a ProvisioningRequest>,
    type_: &str,
) -> Option<&'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    request?
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}
