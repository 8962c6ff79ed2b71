//! Every version of every request a test makes, as a watch delivers them, and the rules each
//! sequence of versions must keep whatever the test is about.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use api::autoscaling::{ProvisioningRequest, ProvisioningRequestStatus};
use api::constants::provreq_condition as cond;
use api::contract as rule;
use futures::StreamExt;
use jiff::Timestamp;
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use kube::{Client, ResourceExt};

/// One version of a request's status, and when the suite saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct Seen {
    pub at: Timestamp,
    pub status: ProvisioningRequestStatus,
}

/// The status history of each request, by name.
pub type Histories = BTreeMap<String, Vec<Seen>>;

/// A broken rule: which, and what was seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub rule: &'static str,
    pub detail: String,
}

/// Watches a namespace's requests for the length of a test.
pub struct Monitor {
    histories: Arc<Mutex<Histories>>,
    task: tokio::task::JoinHandle<()>,
}

impl Monitor {
    pub fn start(client: Client, namespace: &str, clock: controller::Clock) -> Monitor {
        let histories: Arc<Mutex<Histories>> = Arc::default();
        let sink = histories.clone();
        let api: Api<ProvisioningRequest> = Api::namespaced(client, namespace);
        let task = tokio::spawn(async move {
            let mut events = watcher::watcher(api, watcher::Config::default()).boxed();
            while let Some(event) = events.next().await {
                let (Ok(Event::Apply(r)) | Ok(Event::InitApply(r))) = event else {
                    continue;
                };
                let status = r.status.clone().unwrap_or_default();
                let mut h = sink.lock().unwrap_or_else(|e| e.into_inner());
                let seen = h.entry(r.name_any()).or_default();
                if seen.last().is_none_or(|last| last.status != status) {
                    seen.push(Seen {
                        at: clock.now(),
                        status,
                    });
                }
            }
        });
        Monitor { histories, task }
    }

    pub fn histories(&self) -> Histories {
        self.histories
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Monitor {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The first rule a request's history breaks, if any.
pub fn check(name: &str, history: &[Seen]) -> Option<Violation> {
    let mut provisioned_before = false;
    let mut failed_before = false;
    let mut previous: Option<&ProvisioningRequestStatus> = None;
    for seen in history {
        let conditions = &seen.status.conditions;
        let is = |t: &str| {
            conditions
                .iter()
                .any(|c| c.type_ == t && c.status == "True")
        };
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
            let before = previous.and_then(|p| p.conditions.iter().find(|o| o.type_ == c.type_));
            if let Some(before) = before
                && before.status != c.status
                && before.last_transition_time == c.last_transition_time
            {
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
        previous = Some(&seen.status);
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
