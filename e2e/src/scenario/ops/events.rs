//! `events`: Kubernetes Events that must have been recorded, within `timeout`.

use crate::scenario::naming::name_matches;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams};
use serde::Deserialize;

use super::{Check, OpResult, Operation};
use crate::cluster::Changes;
use crate::scenario::check::{Checker, DEFAULT_TIMEOUT};
use crate::scenario::context::Context;
use crate::scenario::duration::{VirtualDuration, format_duration};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Events {
    pub expect: Vec<ExpectedEvent>,
    pub timeout: Option<VirtualDuration>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectedEvent {
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    pub reason: Option<String>,
    /// A substring of the note (events.k8s.io) or message (core/v1).
    pub message: Option<String>,
    /// The object the Event is about: any of kind, name, namespace.
    pub regarding: Option<Regarding>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Regarding {
    pub kind: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
}

/// `events`, checked.
#[derive(Debug, Clone)]
pub struct EventsOp {
    pub expect: Vec<ExpectedEvent>,
    pub timeout: Duration,
}

impl Check for Events {
    type Checked = EventsOp;

    fn check(self, _: &Checker<'_>) -> Result<EventsOp, String> {
        if self.expect.is_empty() {
            return Err("expect: list at least one event".into());
        }
        Ok(EventsOp {
            expect: self.expect,
            timeout: self.timeout.map_or(DEFAULT_TIMEOUT, |d| d.0),
        })
    }
}

impl Operation for EventsOp {
    fn verb(&self) -> &'static str {
        "events"
    }

    fn describe(&self) -> String {
        "events".into()
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        Box::pin(self.events(cx))
    }

    fn wait(&self) -> Option<(&'static str, Duration)> {
        Some(("waits", self.timeout))
    }
}

impl EventsOp {
    async fn events(&self, cx: &mut Context<'_>) -> OpResult {
        let (expect, timeout) = (&self.expect, self.timeout);
        let deadline = tokio::time::Instant::now() + timeout;
        let api: Api<Event> = Api::all(cx.cluster.client());
        let mut changes = Changes::new(cx.cluster.as_ref());
        loop {
            changes.mark();
            let events = api
                .list(&ListParams::default())
                .await
                .map_err(|e| e.to_string())?
                .items;
            let missing: Vec<&ExpectedEvent> = expect
                .iter()
                .filter(|want| !events.iter().any(|e| event_matches(want, e)))
                .collect();
            if missing.is_empty() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                let seen: Vec<String> = events.iter().map(event_line).collect();
                return Err(format!(
                    "no matching Event within {} for:\n  {}\nEvents recorded:\n  {}",
                    format_duration(timeout),
                    missing
                        .iter()
                        .map(|m| expected_event_line(m))
                        .collect::<Vec<_>>()
                        .join("\n  "),
                    if seen.is_empty() {
                        "(none)".to_string()
                    } else {
                        seen.join("\n  ")
                    }
                ));
            }
            changes.wait(deadline).await;
        }
    }
}

fn event_matches(want: &ExpectedEvent, e: &Event) -> bool {
    let eq = |want: &Option<String>, have: Option<&String>| {
        want.as_ref().is_none_or(|w| have.is_some_and(|h| h == w))
    };
    let note_ok = want
        .message
        .as_ref()
        .is_none_or(|m| e.note.as_ref().is_some_and(|n| n.contains(m.as_str())));
    let regarding_ok = want.regarding.as_ref().is_none_or(|r| {
        let have = e.regarding.as_ref();
        eq(&r.kind, have.and_then(|h| h.kind.as_ref()))
            && r.name.as_ref().is_none_or(|w| {
                have.and_then(|h| h.name.as_deref())
                    .is_some_and(|h| name_matches(w, h))
            })
            && eq(&r.namespace, have.and_then(|h| h.namespace.as_ref()))
    });
    eq(&want.event_type, e.type_.as_ref())
        && eq(&want.reason, e.reason.as_ref())
        && note_ok
        && regarding_ok
}

fn event_line(e: &Event) -> String {
    let r = e.regarding.as_ref();
    format!(
        "{} {} {} {}/{}: {}",
        e.type_.as_deref().unwrap_or("?"),
        e.reason.as_deref().unwrap_or("?"),
        r.and_then(|r| r.kind.as_deref()).unwrap_or("?"),
        r.and_then(|r| r.namespace.as_deref()).unwrap_or(""),
        r.and_then(|r| r.name.as_deref()).unwrap_or("?"),
        e.note.as_deref().unwrap_or("")
    )
}

fn expected_event_line(e: &ExpectedEvent) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &e.event_type {
        parts.push(format!("type={t}"));
    }
    if let Some(r) = &e.reason {
        parts.push(format!("reason={r}"));
    }
    if let Some(m) = &e.message {
        parts.push(format!("message contains {m:?}"));
    }
    if let Some(r) = &e.regarding {
        let part = |k: &str, v: &Option<String>| v.as_ref().map(|v| format!("{k}={v}"));
        let fields: Vec<String> = [
            part("kind", &r.kind),
            part("namespace", &r.namespace),
            part("name", &r.name),
        ]
        .into_iter()
        .flatten()
        .collect();
        parts.push(format!("regarding {}", fields.join(",")));
    }
    parts.join(" ")
}
