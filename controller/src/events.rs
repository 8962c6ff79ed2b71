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
use kube::{Client, Resource, ResourceExt};

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
    /// Each series seen within [`SERIES_WINDOW`], by [`series_key`]. A run records thousands of
    /// events: only what a repeat needs is kept, not the event.
    series: HashMap<String, Series>,
    next_sweep: Option<Timestamp>,
    /// The last name's timestamp: names must stay unique when events share an instant, as they
    /// do on virtual time.
    last_nanos: i128,
}

/// A recorded event, as far as a repeat of it needs.
#[derive(Debug, Clone, PartialEq)]
struct Series {
    namespace: String,
    name: String,
    /// Occurrences so far: 1 for the created event.
    count: i32,
    last_observed: Timestamp,
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
        let (repeat, nanos) = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            state.sweep(now);
            match state.series.get(&key) {
                Some(series) => (Some(series.clone()), 0),
                None => (None, state.unique_nanos(now)),
            }
        };
        let series = match repeat {
            Some(mut series) => {
                series.count += 1;
                series.last_observed = now;
                // As client-go's events library: a repeat patches only the series.
                let patch = serde_json::json!({"series": EventSeries {
                    count: series.count,
                    last_observed_time: MicroTime(now),
                }});
                crate::rbac::check::<Event>(None, "patch");
                let api: Api<Event> = Api::namespaced(self.client.clone(), &series.namespace);
                api.patch(&series.name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                series
            }
            None => {
                let event = self.new_event(occurrence, regarding, now, nanos);
                let namespace = event.metadata.namespace.clone().unwrap_or_default();
                self.create(&event, &namespace).await?;
                Series {
                    namespace,
                    name: event.name_any(),
                    count: 1,
                    last_observed: now,
                }
            }
        };
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.series.insert(key, series);
        Ok(())
    }

    /// Creates `event`, without reading back the created event: nothing here needs it, and
    /// decoding thousands of them costs.
    async fn create(&self, event: &Event, namespace: &str) -> Result<(), kube::Error> {
        crate::rbac::check::<Event>(None, "create");
        let body = serde_json::to_vec(event).map_err(kube::Error::SerdeError)?;
        let mut request = kube::core::Request::new(Event::url_path(&(), Some(namespace)))
            .create(&PostParams::default(), body)
            .map_err(kube::Error::BuildRequest)?;
        request.extensions_mut().insert("create");
        self.client.request_text(request).await.map(drop)
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
                namespace: Some(
                    regarding
                        .namespace
                        .clone()
                        .unwrap_or_else(|| "default".to_owned()),
                ),
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
        self.series.retain(|_, s| {
            s.last_observed
                .saturating_add(SERIES_WINDOW)
                .is_ok_and(|end| end > now)
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

    fn series_at(t: &str) -> Series {
        Series {
            namespace: "ns".into(),
            name: "e".into(),
            count: 1,
            last_observed: at(t),
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
            .insert("old".into(), series_at("2026-01-01T00:00:00Z"));
        state
            .series
            .insert("new".into(), series_at("2026-01-01T00:05:00Z"));
        state.sweep(at("2026-01-01T00:06:30Z"));
        assert_eq!(state.series.keys().collect::<Vec<_>>(), ["new"]);
        // Within the minute, nothing is swept, even what has expired since.
        state
            .series
            .insert("older".into(), series_at("2025-12-31T00:00:00Z"));
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

    /// Against an API server: a repeat patches the series of the event it repeats (count and
    /// last time; the first note stays), and another reason is an event of its own.
    #[tokio::test(start_paused = true)]
    async fn a_repeat_patches_the_series_and_another_reason_is_a_new_event() {
        let start = at("2026-01-01T00:00:00Z");
        let server = fake_apiserver::FakeApiServer::builder()
            .start_time(start)
            .build()
            .expect("server starts");
        let clock = Clock::anchored(start, tokio::time::Instant::now());
        let recorder = Recorder::new(server.client(), "kueue-admission", clock);
        let regarding = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            namespace: Some("default".into()),
            name: Some("cm".into()),
            resource_version: Some("5".into()),
            ..Default::default()
        };
        let occurrence = |reason, note| Occurrence {
            warning: false,
            reason,
            action: reason,
            note,
        };
        recorder
            .publish(&occurrence("Pending", "first"), &regarding)
            .await
            .expect("created");
        tokio::time::advance(std::time::Duration::from_secs(10)).await;
        recorder
            .publish(&occurrence("Pending", "second"), &regarding)
            .await
            .expect("patched");
        recorder
            .publish(&occurrence("Admitted", "third"), &regarding)
            .await
            .expect("created");

        let events: Api<Event> = Api::namespaced(server.client(), "default");
        let mut list = events.list(&Default::default()).await.expect("list").items;
        list.sort_by_key(|e| e.reason.clone());
        let summary: Vec<_> = list
            .iter()
            .map(|e| {
                (
                    e.reason.clone().unwrap_or_default(),
                    e.note.clone().unwrap_or_default(),
                    e.series.as_ref().map(|s| (s.count, s.last_observed_time.0)),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("Admitted".to_string(), "third".to_string(), None),
                (
                    "Pending".to_string(),
                    "first".to_string(),
                    Some((2, at("2026-01-01T00:00:10Z")))
                ),
            ]
        );
    }
}
