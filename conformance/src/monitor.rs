//! Every version of every request a test makes, as a watch delivers them, and the rules each
//! sequence of versions must keep whatever the test is about.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::autoscaling::{ProvisioningRequest, ProvisioningRequestStatus};
use api::constants::provreq_condition as cond;
use api::contract as rule;
use futures::StreamExt;
use jiff::Timestamp;
use kube::api::Api;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};

/// One version of a request's status, and when the suite saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct Seen {
    pub at: Timestamp,
    pub status: ProvisioningRequestStatus,
}

impl Seen {
    /// Whether this version has the condition `type_` True.
    pub fn is_true(&self, type_: &str) -> bool {
        self.status
            .conditions
            .iter()
            .any(|c| c.type_ == type_ && c.status == "True")
    }
}

/// The status history of each request, by name.
pub type Histories = BTreeMap<String, Vec<Seen>>;

/// A broken rule: which, and what was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub rule: &'static str,
    pub detail: String,
}

/// The slowest the class has been to give a request its first condition in this run, shared by
/// every test's monitor: the suite watches for broken rules at least twice that long.
#[derive(Clone, Debug, Default)]
pub struct Pace(Arc<Mutex<Duration>>);

impl Pace {
    pub fn note(&self, took: Duration) {
        let mut slowest = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *slowest = (*slowest).max(took);
    }

    pub fn slowest(&self) -> Duration {
        *self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Watches a namespace's requests for the length of a test.
pub struct Monitor {
    state: Arc<Mutex<State>>,
    /// Counts the versions recorded, so that a test can wait for the next one.
    changes: tokio::sync::watch::Receiver<u64>,
    task: tokio::task::JoinHandle<()>,
}

#[derive(Default)]
struct State {
    histories: Histories,
    /// The last resourceVersion seen of each request, to know when the watch has caught up.
    versions: BTreeMap<String, String>,
    /// How long the class took to give each request its first condition.
    answers: BTreeMap<String, Duration>,
    /// The requests for pods the options say can never fit.
    unfit: BTreeSet<String>,
    /// The last watch error, if the watch failed (a history may then be incomplete).
    error: Option<String>,
}

impl Monitor {
    /// Starts watching, and returns once the watch has listed the namespace (or failed to).
    pub async fn start(
        client: Client,
        namespace: &str,
        clock: support::Clock,
        pace: Pace,
    ) -> Monitor {
        let state: Arc<Mutex<State>> = Arc::default();
        let sink = state.clone();
        let api: Api<ProvisioningRequest> = Api::namespaced(client, namespace);
        let (ready, listed) = tokio::sync::oneshot::channel();
        let (changed, changes) = tokio::sync::watch::channel(0u64);
        let task = tokio::spawn(async move {
            let mut ready = Some(ready);
            let mut events = watcher::watcher(api, watcher::Config::default())
                .default_backoff()
                .boxed();
            while let Some(event) = events.next().await {
                let mut state = sink.lock().unwrap_or_else(|e| e.into_inner());
                match event {
                    Ok(Event::Apply(r)) | Ok(Event::InitApply(r)) => {
                        let status = r.status.clone().unwrap_or_default();
                        let name = r.name_any();
                        if let Some(rv) = r.resource_version() {
                            state.versions.insert(name.clone(), rv);
                        }
                        let at = clock.now();
                        if !status.conditions.is_empty()
                            && !state.answers.contains_key(&name)
                            && let Some(created) = &r.metadata.creation_timestamp
                        {
                            // Creation times have whole seconds: this errs on the long side.
                            let took = at.duration_since(created.0).unsigned_abs();
                            state.answers.insert(name.clone(), took);
                            pace.note(took);
                        }
                        let seen = state.histories.entry(name).or_default();
                        if seen.last().is_none_or(|last| last.status != status) {
                            seen.push(Seen { at, status });
                            changed.send_modify(|n| *n += 1);
                        }
                    }
                    Ok(Event::InitDone) => {
                        if let Some(ready) = ready.take() {
                            let _ = ready.send(());
                        }
                    }
                    Ok(_) => {}
                    Err(e) => state.error = Some(e.to_string()),
                }
            }
        });
        // A watch that cannot list says so through `error`; the test goes on either way.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(30), listed).await;
        Monitor {
            state,
            changes,
            task,
        }
    }

    pub fn histories(&self) -> Histories {
        self.lock().histories.clone()
    }

    /// Every status version of one request seen so far.
    pub fn history(&self, name: &str) -> Vec<Seen> {
        self.lock().histories.get(name).cloned().unwrap_or_default()
    }

    /// A receiver that changes whenever a new version is recorded.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.clone()
    }

    /// The longest the class took to give one of this test's requests its first condition.
    pub fn slowest_answer(&self) -> Option<Duration> {
        self.lock().answers.values().max().copied()
    }

    /// Marks a request as one for pods that can never fit: it must never be Provisioned=True.
    pub fn mark_unfit(&self, name: &str) {
        self.lock().unfit.insert(name.to_string());
    }

    /// The first rule a request's history breaks, if any.
    pub fn check(&self, name: &str) -> Option<Violation> {
        let state = self.lock();
        let history = state.histories.get(name)?;
        check(name, history, state.unfit.contains(name))
    }

    /// The first rule any request's history breaks, if any.
    pub fn check_all(&self) -> Option<Violation> {
        let state = self.lock();
        state
            .histories
            .iter()
            .find_map(|(name, h)| check(name, h, state.unfit.contains(name)))
    }

    /// The last watch error, if any.
    pub fn error(&self) -> Option<String> {
        self.lock().error.clone()
    }

    /// Whether the watch has seen this resourceVersion of the request (or a later one).
    pub fn has_seen(&self, name: &str, resource_version: &str) -> bool {
        self.lock().versions.get(name).map(String::as_str) == Some(resource_version)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The first rule a request's history breaks, if any. `unfit`: the request is for pods the
/// options say can never fit.
pub fn check(name: &str, history: &[Seen], unfit: bool) -> Option<Violation> {
    let mut provisioned_before = false;
    let mut provisioned_last = false;
    let mut booking_over = false;
    let mut failed_before = false;
    let mut revoked_before = false;
    let mut previous: Option<(&Timestamp, &ProvisioningRequestStatus)> = None;
    for seen in history {
        let conditions = &seen.status.conditions;
        let is = |t: &str| seen.is_true(t);
        let violation = |rule: &'static str, detail: String| {
            Some(Violation {
                rule,
                detail: format!("request {name} at {}: {detail}", seen.at),
            })
        };
        for c in conditions {
            if !matches!(c.status.as_str(), "True" | "False" | "Unknown") {
                return violation(
                    rule::STATUS_IS_TRUE_FALSE_OR_UNKNOWN,
                    format!("{} has status {:?}", c.type_, c.status),
                );
            }
            if !is_camel_case(&c.reason) {
                return violation(
                    rule::REASONS_ARE_CAMEL_CASE,
                    format!("{} has reason {:?}", c.type_, c.reason),
                );
            }
            let before = previous.and_then(|(at, p)| {
                p.conditions
                    .iter()
                    .find(|o| o.type_ == c.type_)
                    .map(|o| (at, o))
            });
            // Times have whole seconds: a change within the same second may keep its time. One
            // that keeps it across sightings seconds apart, or goes back, is stale.
            let stale = |(at, before): (
                &Timestamp,
                &k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition,
            )| {
                before.status != c.status
                    && (c.last_transition_time.0 < before.last_transition_time.0
                        || (c.last_transition_time == before.last_transition_time
                            && seen.at.duration_since(*at) >= jiff::SignedDuration::from_secs(2)))
            };
            if let Some(before) = before.filter(|b| stale(*b)) {
                let before = before.1;
                return violation(
                    rule::TRANSITION_TIME_MOVES,
                    format!(
                        "{} went from {} to {} and kept lastTransitionTime {}",
                        c.type_, before.status, c.status, c.last_transition_time.0
                    ),
                );
            }
        }
        if is(cond::PROVISIONED) && is(cond::FAILED) {
            return violation(
                rule::NEVER_PROVISIONED_AND_FAILED,
                "Provisioned=True and Failed=True".into(),
            );
        }
        if unfit && is(cond::PROVISIONED) {
            return violation(
                rule::UNFIT_NEVER_PROVISIONED,
                "Provisioned=True for pods the options say can never fit (podTemplates.doesNotFit)"
                    .into(),
            );
        }
        booking_over |= is(cond::BOOKING_EXPIRED) || is(cond::CAPACITY_REVOKED);
        if provisioned_last && !is(cond::PROVISIONED) && !booking_over {
            let now = conditions
                .iter()
                .find(|c| c.type_ == cond::PROVISIONED)
                .map_or("gone".to_string(), |c| {
                    format!("{} ({})", c.status, c.reason)
                });
            return violation(
                rule::PROVISIONED_IS_KEPT,
                format!(
                    "Provisioned went from True to {now} with neither BookingExpired=True nor \
                     CapacityRevoked=True"
                ),
            );
        }
        provisioned_last = is(cond::PROVISIONED);
        provisioned_before |= is(cond::PROVISIONED);
        if is(cond::BOOKING_EXPIRED) && !provisioned_before {
            return violation(
                rule::BOOKING_EXPIRES_AFTER_PROVISIONED,
                "BookingExpired=True and never Provisioned=True".into(),
            );
        }
        if failed_before && !is(cond::FAILED) {
            return violation(
                rule::FAILED_IS_TERMINAL,
                "Failed=True before, no longer now".into(),
            );
        }
        failed_before |= is(cond::FAILED);
        if revoked_before && !is(cond::CAPACITY_REVOKED) {
            return violation(
                rule::REVOKED_IS_TERMINAL,
                "CapacityRevoked=True before, no longer now".into(),
            );
        }
        revoked_before |= is(cond::CAPACITY_REVOKED);
        previous = Some((&seen.at, &seen.status));
    }
    None
}

/// `CapacityIsFound`: an upper-case letter, then letters and digits.
fn is_camel_case(reason: &str) -> bool {
    reason
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_uppercase())
        && reason.chars().all(|c| c.is_ascii_alphanumeric())
}

#[cfg(test)]
#[path = "monitor_tests.rs"]
mod tests;
