//! Registering watches: the initial state or the history to replay, and a channel for what follows,
//! taken under the store's lock so that no change falls between them.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

use super::{Change, ChangeType, ObjKey, Store};
use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchStart {
    /// No resourceVersion, or "0": the current state as ADDED events, then changes.
    Now,
    /// Changes after this resourceVersion.
    After(u64),
}

/// What a new watch sends first, and where the rest comes from.
pub struct WatchInit {
    /// Synthetic ADDED events for the current state: the kind's objects in the watched namespace
    /// (every namespace for `None`); label and field selectors are left to the watch.
    pub initial: Vec<Arc<Change>>,
    /// Changes after the requested resourceVersion in the watched namespace, from the history.
    pub replay: Vec<Arc<Change>>,
    pub rx: mpsc::Receiver<Arc<Change>>,
    /// The resourceVersion the initial state was taken at.
    pub resource_version: u64,
}

impl Store {
    /// Register a watch of `rt`'s objects in `namespace` (`None`: all namespaces). Narrowing to the
    /// namespace here means the initial state reads only that namespace's objects (other
    /// namespaces' may be stored as JSON, and parsing them all under the lock for every new
    /// watch, only for the watch to drop them, held up every write).
    pub fn watch(
        &mut self,
        rt: &ResourceType,
        namespace: Option<&str>,
        start: WatchStart,
    ) -> ApiResult<WatchInit> {
        let namespace = namespace.filter(|_| rt.namespaced);
        let in_scope =
            |k: &ObjKey| k.storage == rt.storage && namespace.is_none_or(|ns| k.namespace == ns);
        if rt.create_only {
            return Err(ApiError::method_not_allowed(format!(
                "{} only supports create",
                rt.plural
            )));
        }
        let (tx, rx) = mpsc::channel(self.config.watcher_buffer.max(1));
        let mut init = WatchInit {
            initial: Vec::new(),
            replay: Vec::new(),
            rx,
            resource_version: self.rv,
        };
        match start {
            WatchStart::Now => {
                let lower = ObjKey {
                    storage: rt.storage.clone(),
                    namespace: namespace.unwrap_or_default().to_string(),
                    name: String::new(),
                };
                init.initial = self
                    .objects
                    .range(lower..)
                    .take_while(|(k, _)| in_scope(k))
                    .map(|(k, o)| {
                        Arc::new(Change::new(
                            self.rv,
                            ChangeType::Added,
                            k.clone(),
                            o.object(),
                            None,
                        ))
                    })
                    .collect();
            }
            WatchStart::After(rv) => {
                if rv < self.compacted_rv {
                    return Err(too_old(rv, self.compacted_rv + 1));
                }
                init.replay = self
                    .history
                    .iter()
                    .filter(|c| c.rv > rv && in_scope(&c.key))
                    .cloned()
                    .collect();
            }
        }
        self.prune_watchers();
        self.watchers
            .entry(rt.storage.clone())
            .or_default()
            .push(tx);
        Ok(init)
    }

    /// Forget watchers whose streams have ended (their receivers are gone).
    pub fn prune_watchers(&mut self) {
        for list in self.watchers.values_mut() {
            list.retain(|tx| !tx.is_closed());
        }
        self.watchers.retain(|_, list| !list.is_empty());
    }

    /// Close every open watch (a fault: clients must re-watch from their last resourceVersion).
    pub fn close_watches(&mut self) {
        self.watchers.clear();
    }

    pub fn watcher_count(&self) -> usize {
        self.watchers.values().map(Vec::len).sum()
    }
}

/// The in-stream error for a watch from a resourceVersion the history no longer holds.
pub fn too_old(requested: u64, oldest: u64) -> ApiError {
    ApiError::expired(format!("too old resource version: {requested} ({oldest})"))
}

/// A watch event's object for `rt`, or the synthetic bookmark.
pub fn bookmark(rt: &ResourceType, rv: u64, initial_events_end: bool) -> Value {
    let mut meta = serde_json::json!({"resourceVersion": rv.to_string()});
    if initial_events_end {
        meta["annotations"] = serde_json::json!({"k8s.io/initial-events-end": "true"});
    }
    serde_json::json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": meta})
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::clock::Clock;
    use crate::store::{StoreConfig, WriteOptions};

    /// A watcher that stops reading is cut off once it is `watcher_buffer` changes behind; what
    /// was queued before stays readable, then its channel ends, so it re-watches from there.
    #[test]
    fn a_watcher_that_stops_reading_is_cut_off_after_its_buffer() {
        let config = StoreConfig {
            watcher_buffer: 3,
            ..StoreConfig::default()
        };
        let mut store = Store::new(Clock::system(), config);
        let rt = store.catalog().lookup("", "v1", "configmaps").unwrap();
        let mut stalled = store.watch(&rt, None, WatchStart::Now).unwrap();
        let mut reading = store.watch(&rt, None, WatchStart::Now).unwrap();
        let opts = WriteOptions::default();
        for i in 0..4 {
            store
                .create(
                    &rt,
                    "default",
                    json!({"metadata": {"name": format!("c{i}")}}),
                    &opts,
                )
                .unwrap();
            assert!(reading.rx.try_recv().is_ok(), "a reader keeps up");
        }
        assert_eq!(store.watcher_count(), 1, "only the reader is left");
        let names: Vec<_> = std::iter::from_fn(|| stalled.rx.try_recv().ok())
            .map(|c| c.object["metadata"]["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["c0", "c1", "c2"]);
        assert_eq!(
            stalled.rx.try_recv().unwrap_err(),
            mpsc::error::TryRecvError::Disconnected
        );
    }

    #[test]
    fn a_namespaced_watch_starts_from_its_namespace_only() {
        let mut store = Store::new(Clock::system(), StoreConfig::default());
        let rt = store.catalog().lookup("", "v1", "configmaps").unwrap();
        let opts = WriteOptions::default();
        let namespaces = store.catalog().lookup("", "v1", "namespaces").unwrap();
        for ns in ["a", "a-b", "b"] {
            store
                .create(&namespaces, "", json!({"metadata": {"name": ns}}), &opts)
                .unwrap();
            store
                .create(&rt, ns, json!({"metadata": {"name": "x"}}), &opts)
                .unwrap();
        }
        // Each namespace may hold other objects (kube-root-ca.crt): only the x ConfigMaps count.
        let xs = |changes: &[Arc<Change>]| -> Vec<String> {
            changes
                .iter()
                .filter(|c| c.key.name == "x")
                .map(|c| format!("{}/x", c.key.namespace))
                .collect()
        };
        let init = store.watch(&rt, Some("a"), WatchStart::Now).unwrap();
        assert_eq!(xs(&init.initial), ["a/x"]);
        let all = store.watch(&rt, None, WatchStart::Now).unwrap();
        assert_eq!(xs(&all.initial), ["a-b/x", "a/x", "b/x"]);
        let replay = store.watch(&rt, Some("a-b"), WatchStart::After(0)).unwrap();
        assert_eq!(xs(&replay.replay), ["a-b/x"]);
    }
}
