//! Events as the controller records them (`events.k8s.io/v1`), on the controller's clock.
//!
//! The same protocol as kube-runtime's `Recorder` and client-go's events broadcaster: the first
//! occurrence of an event is created; repeats within six minutes (same object reference,
//! resourceVersion included, type, reason and action) patch its `series` instead. Written here because that recorder reads the system clock, so under virtual time its
//! timestamps and names would not follow the world, and it sweeps its whole cache on every event,
//! which grows quadratic over the thousands of events of a scheduling run.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::events::v1::{Event, EventSeries};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};

use crate::Clock;

/// How long a repeat counts as the same series.
const SERIES_WINDOW: SignedDuration = SignedDuration::from_mins(6);
/// How often expired series are forgotten.
const SWEEP_EVERY: SignedDuration = SignedDuration::from_mins(1);

/// One event to record.
pub struct Occurrence<'a> {
    pub warning: bool,
    pub reason: &'a str,
    pub action: &'a str,
    pub note: &'a str,
}

#[derive(Clone)]
pub struct Recorder {
    client: Client,
    controller: String,
    clock: Clock,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// The last recorded event of each series, by [`series_key`]. Boxed: a run records thousands,
    /// and a growing map moves its values.
    series: HashMap<String, Box<Event>>,
    next_sweep: Option<Timestamp>,
    /// The last name's timestamp: names must stay unique when events share an instant, as they
    /// do on virtual time.
    last_nanos: i128,
}

impl Recorder {
    pub fn new(client: Client, controller: &str, clock: Clock) -> Self {
        Recorder {
            client,
            controller: controller.to_owned(),
            clock,
            state: Arc::default(),
        }
    }

    /// Creates the event, or patches the series it repeats.
    pub async fn publish(
        &self,
        occurrence: &Occurrence<'_>,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let now = self.clock.now();
        let key = series_key(occurrence, regarding);
        let event = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.sweep(now);
            match state.series.get(&key) {
                Some(previous) => {
                    let mut event = Event::clone(previous);
                    let count = event.series.as_ref().map_or(2, |s| s.count + 1);
                    event.series = Some(EventSeries {
                        count,
                        last_observed_time: MicroTime(now),
                    });
                    event
                }
                None => {
                    let nanos = state.unique_nanos(now);
                    self.new_event(occurrence, regarding, now, nanos)
                }
            }
        };
        let namespace = regarding.namespace.as_deref().unwrap_or("default");
        let api: Api<Event> = Api::namespaced(self.client.clone(), namespace);
        if event.series.is_some() {
            api.patch(
                &event.name_any(),
                &PatchParams::default(),
                &Patch::Merge(&event),
            )
            .await?;
        } else {
            api.create(&PostParams::default(), &event).await?;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.series.insert(key, Box::new(event));
        Ok(())
    }

    fn new_event(
        &self,
        occurrence: &Occurrence<'_>,
        regarding: &ObjectReference,
        now: Timestamp,
        nanos: i128,
    ) -> Event {
        let object = regarding.name.as_deref().unwrap_or(&self.controller);
        Event {
            action: Some(occurrence.action.to_owned()),
            reason: Some(occurrence.reason.to_owned()),
            event_time: Some(MicroTime(now)),
            regarding: Some(regarding.clone()),
            note: Some(occurrence.note.to_owned()),
            metadata: ObjectMeta {
                namespace: regarding.namespace.clone(),
                // The name client libraries give events: the object's name and a hex timestamp.
                name: Some(format!("{object}.{nanos:x}")),
                ..Default::default()
            },
            reporting_controller: Some(self.controller.clone()),
            reporting_instance: Some(self.controller.clone()),
            type_: Some(
                if occurrence.warning {
                    "Warning"
                } else {
                    "Normal"
                }
                .to_owned(),
            ),
            ..Default::default()
        }
    }
}

impl State {
    /// Forgets series not seen for [`SERIES_WINDOW`], at most once per [`SWEEP_EVERY`].
    fn sweep(&mut self, now: Timestamp) {
        if self.next_sweep.is_some_and(|at| now < at) {
            return;
        }
        self.series.retain(|_, e| {
            let last = e
                .series
                .as_ref()
                .map(|s| s.last_observed_time.0)
                .or(e.event_time.as_ref().map(|t| t.0));
            last.is_some_and(|t| t.saturating_add(SERIES_WINDOW).is_ok_and(|end| end > now))
        });
        self.next_sweep = now.saturating_add(SWEEP_EVERY).ok();
    }

    fn unique_nanos(&mut self, now: Timestamp) -> i128 {
        let nanos = now.as_nanosecond().max(self.last_nanos + 1);
        self.last_nanos = nanos;
        nanos
    }
}

/// What makes two events the same series: the object reference (as client-go compares it,
/// resourceVersion included), type, reason and action; not the note.
fn series_key(occurrence: &Occurrence<'_>, regarding: &ObjectReference) -> String {
    let part = |s: &Option<String>| s.clone().unwrap_or_default();
    format!(
        "{}|{}|{}|{}|{}|{}|{}|{}|{}|{}",
        occurrence.warning,
        occurrence.reason,
        occurrence.action,
        part(&regarding.api_version),
        part(&regarding.kind),
        part(&regarding.namespace),
        part(&regarding.name),
        part(&regarding.uid),
        part(&regarding.resource_version),
        part(&regarding.field_path),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    fn event_at(t: &str) -> Event {
        Event {
            event_time: Some(MicroTime(at(t))),
            ..Default::default()
        }
    }

    #[test]
    fn names_stay_unique_within_one_instant() {
        let mut state = State::default();
        let now = at("2026-01-01T00:00:00Z");
        let first = state.unique_nanos(now);
        let second = state.unique_nanos(now);
        assert_eq!(first, now.as_nanosecond());
        assert_eq!(second, first + 1);
    }

    #[test]
    fn series_are_forgotten_after_six_minutes_checked_once_a_minute() {
        let mut state = State::default();
        state
            .series
            .insert("old".into(), Box::new(event_at("2026-01-01T00:00:00Z")));
        state
            .series
            .insert("new".into(), Box::new(event_at("2026-01-01T00:05:00Z")));
        state.sweep(at("2026-01-01T00:06:30Z"));
        assert_eq!(state.series.keys().collect::<Vec<_>>(), ["new"]);
        // Within the minute, nothing is swept, even what has expired since.
        state
            .series
            .insert("older".into(), Box::new(event_at("2025-12-31T00:00:00Z")));
        state.sweep(at("2026-01-01T00:07:00Z"));
        assert!(state.series.contains_key("older"));
        state.sweep(at("2026-01-01T00:07:31Z"));
        assert!(!state.series.contains_key("older"));
    }

    #[test]
    fn the_series_is_the_object_version_type_reason_and_action_not_the_note() {
        let reference = ObjectReference {
            kind: Some("Workload".into()),
            namespace: Some("ns".into()),
            name: Some("wl".into()),
            ..Default::default()
        };
        let occurrence = |note| Occurrence {
            warning: true,
            reason: "Pending",
            action: "Pending",
            note,
        };
        assert_eq!(
            series_key(&occurrence("a"), &reference),
            series_key(&occurrence("b"), &reference)
        );
        for other in [
            ObjectReference {
                name: Some("other".into()),
                ..reference.clone()
            },
            ObjectReference {
                resource_version: Some("7".into()),
                ..reference.clone()
            },
        ] {
            assert_ne!(
                series_key(&occurrence("a"), &reference),
                series_key(&occurrence("a"), &other)
            );
        }
    }
}
