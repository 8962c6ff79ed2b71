//! The trace of a scenario: every change to the kinds it names, in resourceVersion order, with the
//! virtual time since the start, what changed field by field, Kubernetes Events, and where each
//! step began. It is what snapshots compare, so it holds only what is deterministic: uids are
//! replaced by the name of their object, and bookkeeping (managedFields, resourceVersion) is left
//! out.
//!
//! In a MultiKueue world the trace holds every cluster's changes: a worker's entries name it
//! (`cluster: worker-1`); the manager's name no cluster, so a world without workers traces as
//! before. Clusters' changes are merged by virtual time, the manager's first within an instant.

use std::collections::HashMap;

use fake_apiserver::{ChangeFeed, ChangeType, Observed};
use jiff::Timestamp;
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::Value;

use crate::json::{FieldChange, diff};
use crate::scenario::duration::format_duration;
use crate::scenario::naming::{KindRef, object_label};

/// One line of the trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceEntry {
    /// Virtual time since the environment started, Go style (`4m0s`).
    pub at: String,
    /// The worker cluster the change happened in; none for the manager's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted: Option<String>,
    /// `type reason Kind namespace/name: message`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// For additions: the object, without what the entry's title already says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<Value>,
    /// The name of a scenario `watch`, with everything it `saw`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watch: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub saw: Vec<String>,
    /// For modifications: `path: before -> after`.
    #[serde(skip_serializing_if = "Fields::is_empty")]
    pub changes: Fields,
}

impl TraceEntry {
    fn at(at: String) -> Self {
        TraceEntry {
            at,
            cluster: None,
            step: None,
            added: None,
            modified: None,
            deleted: None,
            event: None,
            watch: None,
            saw: Vec::new(),
            object: None,
            changes: Fields::default(),
        }
    }
}

/// Field paths and what happened to them, in diff order (serialised as a YAML mapping).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fields(pub Vec<(String, String)>);

impl Fields {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Serialize for Fields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// A finished trace.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Trace {
    pub entries: Vec<TraceEntry>,
}

impl Trace {
    /// The trace as YAML, the way the snapshots hold it.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(&self.entries).unwrap_or_default()
    }

    /// How many object changes and Events it holds (steps not counted).
    pub fn change_count(&self) -> usize {
        self.entries.iter().filter(|e| e.step.is_none()).count()
    }
}

/// Turns the clusters' change feeds into a trace.
pub struct Recorder {
    /// The manager's feed first (no name), then each worker's.
    feeds: Vec<(Option<String>, ChangeFeed)>,
    kinds: Vec<KindRef>,
    start: Timestamp,
    /// uid -> `Kind namespace/name`, for every object seen, traced or not.
    uids: HashMap<String, String>,
    entries: Vec<TraceEntry>,
}

impl Recorder {
    /// Record the changes `feed` brings to `kinds` (Events are always recorded). Without a feed
    /// (backends that cannot give one) the trace holds the steps only.
    pub fn new(feed: Option<ChangeFeed>, kinds: Vec<KindRef>, start: Timestamp) -> Self {
        Recorder {
            feeds: feed.map(|f| (None, f)).into_iter().collect(),
            kinds,
            start,
            uids: HashMap::new(),
            entries: Vec::new(),
        }
    }

    /// Also record the changes of the worker cluster `name`.
    pub fn add_worker(&mut self, name: &str, feed: Option<ChangeFeed>) {
        if let Some(feed) = feed {
            self.feeds.push((Some(name.to_string()), feed));
        }
    }

    /// Take in every change so far, then mark the start of a step at `now`.
    pub fn step(&mut self, label: &str, now: Timestamp) {
        self.catch_up();
        let mut entry = TraceEntry::at(self.since_start(now));
        entry.step = Some(label.to_string());
        self.entries.push(entry);
    }

    /// Take in every change so far, then add what a scenario watch saw.
    pub fn watch_log(&mut self, name: &str, saw: Vec<String>, now: Timestamp) {
        self.catch_up();
        let mut entry = TraceEntry::at(self.since_start(now));
        entry.watch = Some(name.to_string());
        entry.saw = saw;
        self.entries.push(entry);
    }

    /// Take in every change so far and return the trace.
    pub fn finish(mut self) -> Trace {
        self.catch_up();
        Trace {
            entries: self.entries,
        }
    }

    fn catch_up(&mut self) {
        let mut changes: Vec<(Option<String>, Observed)> = Vec::new();
        for (cluster, feed) in &mut self.feeds {
            changes.extend(feed.drain().into_iter().map(|c| (cluster.clone(), c)));
        }
        // Each feed is in commit order; a stable sort by time keeps it, and puts the manager's
        // changes of an instant before the workers'.
        if self.feeds.len() > 1 {
            changes.sort_by_key(|(_, c)| c.time);
        }
        for (cluster, change) in changes {
            self.record(cluster, change);
        }
    }

    fn since_start(&self, t: Timestamp) -> String {
        format_duration(t.duration_since(self.start).unsigned_abs())
    }

    fn record(&mut self, cluster: Option<String>, change: Observed) {
        let label = self.learn_uid(&change.object, cluster.as_deref());
        let kind = change.object["kind"].as_str().unwrap_or_default();
        let api_version = change.object["apiVersion"].as_str().unwrap_or_default();
        let at = self.since_start(change.time);
        if kind == "Event" && api_version == "v1" {
            if let Some(mut entry) = self.event_entry(&change, at) {
                entry.cluster = cluster;
                self.entries.push(entry);
            }
            return;
        }
        if !self.traced(api_version, kind) {
            return;
        }
        let mut entry = TraceEntry::at(at);
        entry.cluster = cluster;
        match change.change {
            ChangeType::Added => {
                entry.added = Some(label);
                entry.object = Some(self.body(&change.object));
            }
            ChangeType::Modified => {
                let old = change
                    .old
                    .as_ref()
                    .map(|o| self.body(o))
                    .unwrap_or_default();
                let new = self.body(&change.object);
                entry.changes = Fields(diff(&old, &new).iter().map(field_line).collect());
                if entry.changes.is_empty() {
                    return;
                }
                entry.modified = Some(label);
            }
            ChangeType::Deleted => entry.deleted = Some(label),
        }
        self.entries.push(entry);
    }

    fn traced(&self, api_version: &str, kind: &str) -> bool {
        self.kinds
            .iter()
            .any(|k| k.kind == kind && (k.api_version.is_empty() || k.api_version == api_version))
    }

    /// Remember the object's uid (named with its worker, in a worker); returns its label.
    fn learn_uid(&mut self, obj: &Value, cluster: Option<&str>) -> String {
        let label = object_label(obj);
        if let Some(uid) = obj["metadata"]["uid"].as_str() {
            self.uids
                .entry(uid.to_string())
                .or_insert_with(|| match cluster {
                    Some(worker) => format!("{label} on {worker}"),
                    None => label.clone(),
                });
        }
        label
    }

    /// What an entry shows of an object: no identity (the title has it) and no bookkeeping, with
    /// uids named after their objects.
    fn body(&self, obj: &Value) -> Value {
        let mut obj = obj.clone();
        if let Some(map) = obj.as_object_mut() {
            map.remove("apiVersion");
            map.remove("kind");
        }
        if let Some(meta) = obj["metadata"].as_object_mut() {
            for noise in [
                "name",
                "namespace",
                "uid",
                "resourceVersion",
                "managedFields",
                "creationTimestamp",
            ] {
                meta.remove(noise);
            }
            if meta.is_empty()
                && let Some(map) = obj.as_object_mut()
            {
                map.remove("metadata");
            }
        }
        self.redact(&mut obj);
        obj
    }

    fn redact(&self, v: &mut Value) {
        match v {
            Value::String(s) => {
                for (uid, label) in &self.uids {
                    if s.contains(uid.as_str()) {
                        *s = s.replace(uid.as_str(), &format!("<uid of {label}>"));
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.redact(i)),
            Value::Object(map) => map.values_mut().for_each(|i| self.redact(i)),
            _ => {}
        }
    }

    /// A new Event, or a repeat of one (its count went up). Deletions are not shown.
    fn event_entry(&self, change: &Observed, at: String) -> Option<TraceEntry> {
        let e = &change.object;
        let count = e["count"].as_u64().unwrap_or(1);
        let repeat = match change.change {
            ChangeType::Added => String::new(),
            ChangeType::Modified if count > 1 => format!(" (x{count})"),
            _ => return None,
        };
        let regarding = &e["involvedObject"];
        let about = object_label(&serde_json::json!({
            "kind": regarding["kind"],
            "metadata": {"name": regarding["name"], "namespace": regarding["namespace"]},
        }));
        let mut line = Value::String(format!(
            "{} {} {about}: {}{repeat}",
            e["type"].as_str().unwrap_or("?"),
            e["reason"].as_str().unwrap_or("?"),
            e["message"].as_str().unwrap_or("")
        ));
        self.redact(&mut line);
        let mut entry = TraceEntry::at(at);
        entry.event = line.as_str().map(String::from);
        Some(entry)
    }
}

fn field_line(change: &FieldChange) -> (String, String) {
    match change {
        FieldChange::Added { path, value } => {
            (path.to_string(), format!("(none) -> {}", compact(value)))
        }
        FieldChange::Removed { path, value } => {
            (path.to_string(), format!("{} -> (none)", compact(value)))
        }
        FieldChange::Changed { path, from, to } => (
            path.to_string(),
            format!("{} -> {}", compact(from), compact(to)),
        ),
    }
}

/// A value on one line: plain strings as they are, anything else as JSON.
fn compact(v: &Value) -> String {
    match v {
        Value::String(s) if is_plain(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Whether a string reads unambiguously without quotes.
fn is_plain(s: &str) -> bool {
    !s.is_empty()
        && s != "(none)"
        && !s.contains(" -> ")
        && s.trim() == s
        && serde_json::from_str::<Value>(s).map_or(true, |v| v.is_string())
}
