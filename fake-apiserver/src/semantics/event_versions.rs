//! Conversion between core/v1 `Event` and events.k8s.io/v1 `Event`.
//!
//! Like kube-apiserver, events are stored once (core/v1) and converted on
//! the way in and out, so both APIs see the same objects. The two schemas
//! carry the same fields under different names; this module renames them
//! and nothing else, so conversions round-trip losslessly.
//!
//! Present values are copied verbatim (an explicit `null` stays `null`),
//! absent fields stay absent, and fields neither schema knows are dropped,
//! as a typed conversion would drop them.

use serde_json::{Map, Value};

const CORE_API_VERSION: &str = "v1";
const EVENTS_API_VERSION: &str = "events.k8s.io/v1";
const KIND: &str = "Event";

/// `(core/v1 name, events.k8s.io/v1 name)` for every field both carry,
/// after upstream `Convert_core_Event_To_v1_Event` and its inverse.
const FIELDS: &[(&str, &str)] = &[
    ("metadata", "metadata"),
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    // The Go field is `ReportingController` in both; only core/v1's JSON
    // name differs.
    ("reportingComponent", "reportingController"),
    ("reportingInstance", "reportingInstance"),
    ("eventTime", "eventTime"),
    ("series", "series"),
    ("action", "action"),
    ("related", "related"),
    ("reason", "reason"),
    ("type", "type"),
];

/// Fields of `EventSeries`, identical in both versions.
const SERIES_FIELDS: &[&str] = &["count", "lastObservedTime"];

/// Serves a stored core/v1 event through events.k8s.io/v1.
#[must_use]
pub fn core_to_events_v1(core: &Value) -> Value {
    convert(core, EVENTS_API_VERSION, |(core, events)| (core, events))
}

/// Turns an events.k8s.io/v1 event into the stored core/v1 form.
#[must_use]
pub fn events_v1_to_core(ev: &Value) -> Value {
    convert(ev, CORE_API_VERSION, |(core, events)| (events, core))
}

/// `pick` orients a `FIELDS` row as `(source name, target name)`.
fn convert(
    input: &Value,
    api_version: &str,
    pick: fn((&'static str, &'static str)) -> (&'static str, &'static str),
) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".to_owned(), Value::from(api_version));
    out.insert("kind".to_owned(), Value::from(KIND));
    if let Some(fields) = input.as_object() {
        for &row in FIELDS {
            let (from, to) = pick(row);
            if let Some(value) = fields.get(from) {
                let value = if from == "series" {
                    series(value)
                } else {
                    value.clone()
                };
                out.insert(to.to_owned(), value);
            }
        }
    }
    Value::Object(out)
}

/// Keeps only the series fields both schemas define, as a typed
/// conversion would.
fn series(value: &Value) -> Value {
    match value.as_object() {
        Some(fields) => Value::Object(
            fields
                .iter()
                .filter(|(key, _)| SERIES_FIELDS.contains(&key.as_str()))
                .map(|(key, value)| (key.clone(), value.clone()))
                .collect(),
        ),
        None => value.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn metadata() -> Value {
        json!({
            "name": "web-0.17f2a3b4c5d6e7f8",
            "namespace": "default",
            "uid": "6f1c2d3e-0000-4000-8000-000000000001",
            "resourceVersion": "42",
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app": "web"},
            "annotations": {"note": "kept verbatim"},
            "managedFields": [{"manager": "kubelet", "operation": "Update"}]
        })
    }

    fn pod_ref() -> Value {
        json!({
            "kind": "Pod",
            "namespace": "default",
            "name": "web-0",
            "uid": "6f1c2d3e-0000-4000-8000-000000000002",
            "apiVersion": "v1",
            "resourceVersion": "41",
            "fieldPath": "spec.containers{web}"
        })
    }

    fn node_ref() -> Value {
        json!({"kind": "Node", "name": "node-1", "apiVersion": "v1"})
    }

    fn full_core() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": metadata(),
            "involvedObject": pod_ref(),
            "reason": "BackOff",
            "message": "Back-off restarting failed container",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": "2024-05-01T10:00:00Z",
            "lastTimestamp": "2024-05-01T10:05:00Z",
            "count": 7,
            "type": "Warning",
            "eventTime": "2024-05-01T10:00:00.123456Z",
            "series": {"count": 6, "lastObservedTime": "2024-05-01T10:05:00.654321Z"},
            "action": "Restarting",
            "related": node_ref(),
            "reportingComponent": "kubelet",
            "reportingInstance": "kubelet-node-1"
        })
    }

    fn full_events_v1() -> Value {
        json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": metadata(),
            "regarding": pod_ref(),
            "reason": "BackOff",
            "note": "Back-off restarting failed container",
            "deprecatedSource": {"component": "kubelet", "host": "node-1"},
            "deprecatedFirstTimestamp": "2024-05-01T10:00:00Z",
            "deprecatedLastTimestamp": "2024-05-01T10:05:00Z",
            "deprecatedCount": 7,
            "type": "Warning",
            "eventTime": "2024-05-01T10:00:00.123456Z",
            "series": {"count": 6, "lastObservedTime": "2024-05-01T10:05:00.654321Z"},
            "action": "Restarting",
            "related": node_ref(),
            "reportingController": "kubelet",
            "reportingInstance": "kubelet-node-1"
        })
    }

    fn minimal_core() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "e1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "web-0"}
        })
    }

    fn minimal_events_v1() -> Value {
        json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "e1", "namespace": "default"},
            "regarding": {"kind": "Pod", "name": "web-0"}
        })
    }

    /// A legacy-style event: old core/v1 fields only, no eventTime/series.
    fn legacy_core() -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "e2", "namespace": "kube-system"},
            "involvedObject": node_ref(),
            "reason": "NodeReady",
            "message": "Node node-1 status is now: NodeReady",
            "source": {"component": "kubelet"},
            "firstTimestamp": "2024-05-01T10:00:00Z",
            "lastTimestamp": "2024-05-01T10:00:00Z",
            "count": 1,
            "type": "Normal"
        })
    }

    #[rstest]
    #[case::full(full_core(), full_events_v1())]
    #[case::minimal(minimal_core(), minimal_events_v1())]
    fn converts_field_by_field(#[case] core: Value, #[case] events: Value) {
        assert_eq!(core_to_events_v1(&core), events);
        assert_eq!(events_v1_to_core(&events), core);
    }

    #[rstest]
    #[case::full(full_core())]
    #[case::minimal(minimal_core())]
    #[case::legacy(legacy_core())]
    #[case::explicit_nulls(json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e3"},
        "involvedObject": {},
        "eventTime": null,
        "firstTimestamp": null,
        "reportingComponent": "",
        "reportingInstance": ""
    }))]
    fn core_round_trip_is_lossless(#[case] core: Value) {
        assert_eq!(events_v1_to_core(&core_to_events_v1(&core)), core);
    }

    #[rstest]
    #[case::full(full_events_v1())]
    #[case::minimal(minimal_events_v1())]
    #[case::series_only(json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e4", "namespace": "default"},
        "eventTime": "2024-05-01T10:00:00.000001Z",
        "series": {"count": 2, "lastObservedTime": "2024-05-01T10:00:30.000000Z"},
        "reportingController": "example.com/controller",
        "reportingInstance": "controller-0",
        "action": "Reconcile",
        "reason": "Synced",
        "type": "Normal"
    }))]
    fn events_v1_round_trip_is_lossless(#[case] events: Value) {
        assert_eq!(core_to_events_v1(&events_v1_to_core(&events)), events);
    }

    #[rstest]
    #[case::to_events(core_to_events_v1(&minimal_core()), &["message", "note", "series", "eventTime", "deprecatedCount", "deprecatedSource"])]
    #[case::to_core(events_v1_to_core(&minimal_events_v1()), &["note", "message", "series", "eventTime", "count", "source"])]
    fn absent_fields_stay_absent(#[case] out: Value, #[case] keys: &[&str]) {
        for key in keys {
            assert!(out.get(key).is_none(), "{key} should be absent in {out}");
        }
    }

    #[rstest]
    #[case::core_to_events(
        json!({"apiVersion": "v1", "kind": "Event", "bogus": 1, "note": "wrong version's name",
               "series": {"count": 2, "lastObservedTime": "t", "state": "Ongoing"}}),
        core_to_events_v1 as fn(&Value) -> Value,
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
               "series": {"count": 2, "lastObservedTime": "t"}})
    )]
    #[case::events_to_core(
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "bogus": 1, "message": "wrong version's name"}),
        events_v1_to_core as fn(&Value) -> Value,
        json!({"apiVersion": "v1", "kind": "Event"})
    )]
    fn unknown_fields_are_dropped(
        #[case] input: Value,
        #[case] convert: fn(&Value) -> Value,
        #[case] want: Value,
    ) {
        assert_eq!(convert(&input), want);
    }

    #[rstest]
    #[case::to_events(core_to_events_v1(&json!("not an object")), "events.k8s.io/v1")]
    #[case::to_core(events_v1_to_core(&Value::Null), "v1")]
    fn non_objects_yield_bare_typed_object(#[case] out: Value, #[case] api_version: &str) {
        assert_eq!(out, json!({"apiVersion": api_version, "kind": "Event"}));
    }
}
