//! How the store holds one object: parsed while it is recent, as its JSON once it has gone quiet.
//!
//! A parsed object takes five to ten times the memory of its JSON (every map is a B-tree node,
//! every key its own string), and a long run keeps a hundred thousand objects, most of them never
//! read again (Events, finished Workloads). etcd keeps bytes for the same reason. An object goes
//! quiet when its last change leaves the history: by then watches have long had it, and a write
//! to it again only pays one parse.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;

use crate::semantics::meta::is_deleting;

#[derive(Debug)]
pub(super) enum Stored {
    /// Changed within the history: shared with the change that wrote it.
    Live(Arc<Value>),
    /// Not changed since its last change left the history. Whether it is being deleted is kept
    /// aside: every create in a namespace asks that of the namespace.
    Quiet { json: Bytes, deleting: bool },
}

impl Stored {
    /// The object, parsed again if it is quiet.
    pub(super) fn object(&self) -> Arc<Value> {
        match self {
            Stored::Live(obj) => obj.clone(),
            Stored::Quiet { json, .. } => Arc::new(parse(json)),
        }
    }

    pub(super) fn is_deleting(&self) -> bool {
        match self {
            Stored::Live(obj) => is_deleting(obj),
            Stored::Quiet { deleting, .. } => *deleting,
        }
    }

    pub(super) fn into_object(self) -> Arc<Value> {
        match self {
            Stored::Live(obj) => obj,
            Stored::Quiet { json, .. } => Arc::new(parse(&json)),
        }
    }

    /// Keeps the object as JSON if it is still `written`, the object of a change that has just
    /// left the history. `json` is its JSON if the change already made it for a reader.
    pub(super) fn quiet_if_unchanged(&mut self, written: &Arc<Value>, json: Option<Bytes>) {
        let Stored::Live(obj) = self else { return };
        if !Arc::ptr_eq(obj, written) {
            return;
        }
        let json = match json {
            Some(json) => json,
            None => match serde_json::to_vec(&**obj) {
                Ok(json) => Bytes::from(json),
                // A Value always serialises; if it ever did not, the object stays parsed.
                Err(e) => {
                    tracing::error!(%e, "could not serialise a stored object");
                    return;
                }
            },
        };
        *self = Stored::Quiet {
            deleting: is_deleting(obj),
            json,
        };
    }
}

fn parse(json: &[u8]) -> Value {
    // The store wrote these bytes from a Value; reading them back cannot fail short of memory
    // corruption, which an error here would not mend.
    serde_json::from_slice(json).unwrap_or_else(|e| {
        tracing::error!(%e, "could not read back a stored object");
        Value::Null
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_quiet_object_reads_back_equal_floats_included() {
        let obj = Arc::new(json!({
            "metadata": {"name": "a", "labels": {"x": "y"}},
            "spec": {"ratio": 0.1, "big": 1.7976931348623157e308, "small": 5e-324, "n": -3, "u": 18446744073709551615u64},
            "list": [1, "two", null, true, {"nested": []}],
        }));
        let mut stored = Stored::Live(obj.clone());
        stored.quiet_if_unchanged(&obj, None);
        assert!(matches!(stored, Stored::Quiet { .. }));
        assert_eq!(*stored.object(), *obj);
        assert_eq!(*stored.into_object(), *obj);
    }

    #[test]
    fn an_object_written_again_stays_parsed() {
        let first = Arc::new(json!({"v": 1}));
        let second = Arc::new(json!({"v": 1}));
        let mut stored = Stored::Live(second.clone());
        // The change leaving the history wrote `first`; the store now holds `second`, equal but
        // written since, which later watches may still replay.
        stored.quiet_if_unchanged(&first, None);
        assert!(matches!(&stored, Stored::Live(o) if Arc::ptr_eq(o, &second)));
    }

    /// In a store: an object goes quiet once the history has moved past its last change (keeping
    /// the JSON a reader's rendering already made, if any), and comes back parsed, as the same
    /// object, when it is written again.
    #[rstest::rstest]
    fn a_store_keeps_what_the_history_has_left_as_json(#[values(false, true)] rendered: bool) {
        use crate::clock::Clock;
        use crate::store::{Answer, Store, StoreConfig, Subresource, WriteOptions};
        let mut store = Store::new(
            Clock::system(),
            StoreConfig {
                history_limit: 2,
                ..StoreConfig::default()
            },
        );
        let rt = store.catalog().lookup("", "v1", "configmaps").unwrap();
        let opts = WriteOptions::default();
        let cm = |name: &str| json!({"metadata": {"name": name}, "data": {"k": "v"}});
        let answer = store.create_answer(&rt, "default", cm("a"), &opts).unwrap();
        let response = (rendered).then(|| answer.json(&rt));
        let Answer::Committed(change) = answer else {
            panic!("a create commits")
        };
        let created = (*change.object).clone();
        drop(change);
        let key = Store::key(&rt, "default", "a");
        assert!(matches!(store.objects[&key], Stored::Live(_)));
        for name in ["b", "c"] {
            store.create(&rt, "default", cm(name), &opts).unwrap();
        }
        let Stored::Quiet { json, deleting } = &store.objects[&key] else {
            panic!("quiet once the history has moved on")
        };
        assert!(!deleting);
        if let Some(response) = response {
            assert_eq!(
                json.as_ptr(),
                response.as_ptr(),
                "the response's JSON, kept"
            );
        }
        assert_eq!(store.get(&rt, "default", "a").unwrap(), created);

        let mut changed = created.clone();
        changed["data"]["k"] = json!("w");
        let updated = store
            .update(&rt, "default", "a", changed, Subresource::Main, &opts)
            .unwrap();
        assert!(matches!(store.objects[&key], Stored::Live(_)));
        assert_eq!(updated["data"]["k"], "w");
        assert_eq!(updated["metadata"]["uid"], created["metadata"]["uid"]);
    }

    #[test]
    fn a_quiet_object_still_tells_it_is_being_deleted() {
        let obj = Arc::new(
            json!({"metadata": {"name": "ns", "deletionTimestamp": "2026-01-01T00:00:00Z"}}),
        );
        let mut stored = Stored::Live(obj.clone());
        stored.quiet_if_unchanged(&obj, None);
        assert!(matches!(stored, Stored::Quiet { deleting: true, .. }));
        assert!(stored.is_deleting());
    }
}
