//! The queue manager: each ClusterQueue's pending workloads in admission order.
//!
//! BestEffortFIFO parks a workload that did not fit as inadmissible, so the ones behind it get
//! their turn; StrictFIFO keeps it at the head and blocks the queue. Either way the queue waits
//! until something in its cohort changes (quota released, a queue or flavor edited), then tries
//! again, as Kueue's `QueueInadmissibleWorkloads` does.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use api::kueue::QueueingStrategy;

/// A pending workload's place in its queue: higher priority first, then older first.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub priority: Reverse<i32>,
    /// Queue-order timestamp (creation), in seconds.
    pub timestamp: i64,
    pub key: String,
}

#[derive(Debug, Default)]
struct ClusterQueueQueue {
    strict: bool,
    active: BTreeSet<Entry>,
    inadmissible: BTreeSet<Entry>,
    blocked: bool,
}

/// Pending workloads of every ClusterQueue.
#[derive(Debug, Default)]
pub struct Queues {
    queues: BTreeMap<String, ClusterQueueQueue>,
    /// Where each queued workload is.
    placed: BTreeMap<String, (String, Entry)>,
}

impl Queues {
    /// Sets a ClusterQueue's strategy (creating its queue).
    pub fn set_strategy(&mut self, cq: &str, strategy: QueueingStrategy) {
        let q = self.queues.entry(cq.to_owned()).or_default();
        q.strict = strategy == QueueingStrategy::StrictFIFO;
    }

    /// Puts a workload in (or takes it out of, with `None`) the queues. A workload whose place did
    /// not change keeps its parking state.
    pub fn update(&mut self, key: &str, place: Option<(String, Entry)>) {
        if let (Some(old), Some(new)) = (self.placed.get(key), place.as_ref())
            && old == new
        {
            return;
        }
        self.remove(key);
        if let Some((cq, entry)) = place {
            let q = self.queues.entry(cq.clone()).or_default();
            q.active.insert(entry.clone());
            self.placed.insert(key.to_owned(), (cq, entry));
        }
    }

    pub fn remove(&mut self, key: &str) {
        if let Some((cq, entry)) = self.placed.remove(key)
            && let Some(q) = self.queues.get_mut(&cq)
        {
            q.active.remove(&entry);
            q.inadmissible.remove(&entry);
        }
    }

    /// Gives every parked workload of these ClusterQueues another chance.
    pub fn requeue<'a>(&mut self, cqs: impl IntoIterator<Item = &'a str>) {
        for cq in cqs {
            if let Some(q) = self.queues.get_mut(cq) {
                let parked = std::mem::take(&mut q.inadmissible);
                q.active.extend(parked);
                q.blocked = false;
            }
        }
    }

    /// Takes the head of every ClusterQueue that has one and is not blocked.
    pub fn heads(&mut self) -> Vec<(String, Entry)> {
        let mut heads = vec![];
        for (name, q) in &mut self.queues {
            if q.blocked {
                continue;
            }
            if let Some(head) = q.active.pop_first() {
                heads.push((name.clone(), head));
            }
        }
        heads
    }

    /// A head that was not admitted: parked (BestEffortFIFO) or kept at the head, blocking
    /// (StrictFIFO), until [`Queues::requeue`].
    pub fn park(&mut self, cq: &str, entry: Entry) {
        if self
            .placed
            .get(&entry.key)
            .is_none_or(|(c, e)| c != cq || e != &entry)
        {
            return;
        }
        if let Some(q) = self.queues.get_mut(cq) {
            if q.strict {
                q.active.insert(entry);
                q.blocked = true;
            } else {
                q.inadmissible.insert(entry);
            }
        }
    }

    /// A head that was admitted leaves the queues.
    pub fn admitted(&mut self, key: &str) {
        self.placed.remove(key);
    }

    /// Pending workloads per ClusterQueue (active + parked).
    pub fn pending(&self, cq: &str) -> usize {
        self.queues
            .get(cq)
            .map(|q| q.active.len() + q.inadmissible.len())
            .unwrap_or(0)
    }

    /// Pending workloads of one LocalQueue's namespace/name prefix are counted by the caller.
    pub fn pending_keys(&self, cq: &str) -> impl Iterator<Item = &str> {
        self.queues
            .get(cq)
            .into_iter()
            .flat_map(|q| q.active.iter().chain(q.inadmissible.iter()))
            .map(|e| e.key.as_str())
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    fn entry(key: &str, priority: i32, timestamp: i64) -> Entry {
        Entry {
            priority: Reverse(priority),
            timestamp,
            key: key.into(),
        }
    }

    fn queues(strategy: QueueingStrategy) -> Queues {
        let mut q = Queues::default();
        q.set_strategy("cq", strategy);
        q.update("ns/old", Some(("cq".into(), entry("ns/old", 0, 1))));
        q.update("ns/new", Some(("cq".into(), entry("ns/new", 0, 2))));
        q.update("ns/high", Some(("cq".into(), entry("ns/high", 10, 3))));
        q
    }

    #[test]
    fn priority_then_age() {
        let mut q = queues(QueueingStrategy::BestEffortFIFO);
        let order: Vec<String> = std::iter::from_fn(|| {
            let h = q.heads().pop()?;
            q.admitted(&h.1.key);
            Some(h.1.key)
        })
        .collect();
        assert_eq!(order, ["ns/high", "ns/old", "ns/new"]);
    }

    #[rstest]
    #[case::best_effort_lets_the_next_one_try(QueueingStrategy::BestEffortFIFO, Some("ns/old"))]
    #[case::strict_blocks_behind_the_head(QueueingStrategy::StrictFIFO, None)]
    fn a_head_that_does_not_fit(#[case] strategy: QueueingStrategy, #[case] next: Option<&str>) {
        let mut q = queues(strategy);
        let (cq, head) = q.heads().pop().expect("head");
        assert_eq!(head.key, "ns/high");
        q.park(&cq, head);
        let got = q.heads().pop().map(|h| h.1.key);
        assert_eq!(got.as_deref(), next);
        // After a change in the cohort the parked head is first again.
        let mut q = queues(strategy);
        let (cq, head) = q.heads().pop().expect("head");
        q.park(&cq, head);
        q.requeue(["cq"]);
        assert_eq!(q.pending("cq"), 3);
        assert_eq!(q.heads().pop().map(|h| h.1.key).as_deref(), Some("ns/high"));
    }
}
