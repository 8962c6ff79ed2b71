//! A feed of every committed change, for observers that are not API clients: the scenario
//! engine's trace recorder, and tests that wait for "anything changed". Observers are told under
//! the store's lock, so a feed holds every change up to the latest write, in resourceVersion order,
//! with the virtual time it was committed at. Unlike a watch, faults never touch it.

use jiff::Timestamp;
use serde_json::Value;
use tokio::sync::mpsc;

use super::{Change, ChangeType, Store, render};

/// One committed change, rendered in its kind's preferred version.
#[derive(Debug, Clone)]
pub struct Observed {
    pub rv: u64,
    /// When the change was committed, on the server's clock.
    pub time: Timestamp,
    pub change: ChangeType,
    /// The object after the change (for a deletion: its last state).
    pub object: Value,
    /// The object before the change; `None` for additions.
    pub old: Option<Value>,
}

/// The receiving end of [`Store::observe`]. Dropping it unsubscribes.
#[derive(Debug)]
pub struct ChangeFeed {
    rx: mpsc::UnboundedReceiver<Observed>,
}

impl ChangeFeed {
    /// Every change received so far and not yet taken, oldest first. Never waits.
    pub fn drain(&mut self) -> Vec<Observed> {
        let mut out = Vec::new();
        while let Ok(change) = self.rx.try_recv() {
            out.push(change);
        }
        out
    }

    /// The next change, waiting for one. `None` once the server is gone.
    pub async fn next(&mut self) -> Option<Observed> {
        self.rx.recv().await
    }
}

impl Store {
    /// Subscribe to every change from now on.
    pub fn observe(&mut self) -> ChangeFeed {
        let (tx, rx) = mpsc::unbounded_channel();
        self.observers.push(tx);
        ChangeFeed { rx }
    }

    pub(super) fn tell_observers(&mut self, change: &Change) {
        self.observers.retain(|tx| !tx.is_closed());
        if self.observers.is_empty() {
            return;
        }
        let Some(rt) = self.catalog.preferred_for_storage(&change.key.storage) else {
            return;
        };
        let observed = Observed {
            rv: change.rv,
            time: self.clock.now(),
            change: change.kind,
            object: render(&rt, &change.object),
            old: change.old.as_deref().map(|old| render(&rt, old)),
        };
        for tx in &self.observers {
            let _ = tx.send(observed.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::clock::Clock;
    use crate::store::{StoreConfig, WriteOptions};

    #[tokio::test(start_paused = true)]
    async fn a_feed_sees_each_later_change_in_order_with_its_time() {
        let clock = Clock::starting_at("2026-01-01T00:00:00Z".parse().unwrap());
        let mut store = Store::new(clock.clone(), StoreConfig::default());
        let rt = store.catalog().lookup("", "v1", "configmaps").unwrap();
        let mut feed = store.observe();
        let opts = WriteOptions::default();
        store
            .create(&rt, "default", json!({"metadata": {"name": "a"}}), &opts)
            .unwrap();
        clock.sleep(std::time::Duration::from_secs(90)).await;
        store
            .delete(&rt, "default", "a", &crate::store::DeleteOptions::default())
            .unwrap();

        let seen = feed.drain();
        assert_eq!(
            seen.len(),
            2,
            "bootstrap objects were made before subscribing"
        );
        assert_eq!(seen[0].change, ChangeType::Added);
        assert_eq!(seen[0].object["kind"], "ConfigMap");
        assert_eq!(seen[0].object["apiVersion"], "v1");
        assert_eq!(seen[0].time.to_string(), "2026-01-01T00:00:00Z");
        assert_eq!(seen[1].change, ChangeType::Deleted);
        assert_eq!(seen[1].time.to_string(), "2026-01-01T00:01:30Z");
        assert!(seen[0].rv < seen[1].rv);
        assert_eq!(seen[1].old.as_ref().unwrap()["metadata"]["name"], "a");
        assert!(feed.drain().is_empty());
    }

    #[test]
    fn a_dropped_feed_unsubscribes() {
        let mut store = Store::new(Clock::system(), StoreConfig::default());
        let rt = store.catalog().lookup("", "v1", "configmaps").unwrap();
        drop(store.observe());
        store
            .create(
                &rt,
                "default",
                json!({"metadata": {"name": "a"}}),
                &WriteOptions::default(),
            )
            .unwrap();
        assert!(store.observers.is_empty());
    }
}
