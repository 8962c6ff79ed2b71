//! The queue manager: each ClusterQueue's pending workloads in admission order.
//!
//! BestEffortFIFO parks a workload that did not fit as inadmissible, so the ones behind it get
//! their turn; StrictFIFO keeps it at the head and blocks the queue. Either way the queue waits
//! until something in its cohort changes (quota released, a queue or flavor edited), then tries
//! again, as Kueue's `QueueInadmissibleWorkloads` does.
//!
//! With SchedulingEquivalenceHashing (on by default, as in Kueue), a BestEffortFIFO head that
//! does not fit takes every queued workload of the same scheduling shape with it into the parked
//! set: they would fail the same way, so they are not tried (nor their status rewritten) until the
//! cohort changes.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

use api::kueue::QueueingStrategy;
use sha1::{Digest, Sha1};

use super::PendingWorkload;

/// A pending workload's place in its queue: higher priority first, then older first.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    pub priority: Reverse<i32>,
    /// Queue-order timestamp (creation), in seconds.
    pub timestamp: i64,
    pub key: String,
    /// The scheduling equivalence hash ([`equivalence_hash`]); `None` when hashing is off.
    pub shape: Option<String>,
}

/// Why a head goes back to its queue without being admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parked {
    /// It does not fit and nothing can be preempted for it: equivalent workloads would not fit
    /// either.
    NoFit,
    /// Anything else (preemption under way, a stale write).
    Other,
}

/// Kueue's scheduling equivalence hash: workloads with the same priority and podsets (count,
/// requests after transformations, node selector, required node affinity, tolerations) fit or
/// fail alike. Sixteen hex digits, as Kueue shortens its hash.
pub fn equivalence_hash(w: &PendingWorkload) -> String {
    // Debug output is deterministic here: the requests and selectors are sorted maps.
    let shape = format!("{}|{:?}", w.priority, w.podsets);
    let digest = Sha1::digest(shape.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug, Default)]
struct ClusterQueueQueue {
    strict: bool,
    /// Queued workloads, grouped by scheduling shape (a single `None` group when hashing is
    /// off), so a whole shape can be set aside without moving its workloads.
    groups: BTreeMap<Option<String>, BTreeSet<Entry>>,
    /// Shapes whose head did not fit since the last requeue (BestEffortFIFO only): their
    /// workloads stay queued but are not tried.
    parked_shapes: BTreeSet<String>,
    /// Heads parked one by one.
    inadmissible: BTreeSet<Entry>,
    blocked: bool,
}

impl ClusterQueueQueue {
    fn insert(&mut self, entry: Entry) {
        self.groups
            .entry(entry.shape.clone())
            .or_default()
            .insert(entry);
    }

    fn remove(&mut self, entry: &Entry) {
        if let Some(group) = self.groups.get_mut(&entry.shape) {
            group.remove(entry);
            if group.is_empty() {
                self.groups.remove(&entry.shape);
            }
        }
        self.inadmissible.remove(entry);
    }

    /// The first workload of the shapes that may be tried.
    fn pop_head(&mut self) -> Option<Entry> {
        let parked = &self.parked_shapes;
        let (_, group) = self
            .groups
            .iter_mut()
            .filter(|(shape, _)| shape.as_ref().is_none_or(|s| !parked.contains(s)))
            .filter_map(|(shape, group)| Some((group.first()?.clone(), (shape, group))))
            .min_by(|a, b| a.0.cmp(&b.0))
            .map(|(_, g)| g)?;
        let head = group.pop_first();
        if group.is_empty()
            && let Some(shape) = head.as_ref().map(|h| h.shape.clone())
        {
            self.groups.remove(&shape);
        }
        head
    }

    fn len(&self) -> usize {
        self.groups.values().map(BTreeSet::len).sum::<usize>() + self.inadmissible.len()
    }
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
    /// not change keeps its parking state; a new one of a parked shape waits with its shape.
    pub fn update(&mut self, key: &str, place: Option<(String, Entry)>) {
        if let (Some(old), Some(new)) = (self.placed.get(key), place.as_ref())
            && old == new
        {
            return;
        }
        self.remove(key);
        if let Some((cq, entry)) = place {
            self.queues
                .entry(cq.clone())
                .or_default()
                .insert(entry.clone());
            self.placed.insert(key.to_owned(), (cq, entry));
        }
    }

    pub fn remove(&mut self, key: &str) {
        if let Some((cq, entry)) = self.placed.remove(key)
            && let Some(q) = self.queues.get_mut(&cq)
        {
            q.remove(&entry);
        }
    }

    /// Gives every parked workload of these ClusterQueues another chance.
    pub fn requeue<'a>(&mut self, cqs: impl IntoIterator<Item = &'a str>) {
        for cq in cqs {
            if let Some(q) = self.queues.get_mut(cq) {
                for entry in std::mem::take(&mut q.inadmissible) {
                    q.insert(entry);
                }
                q.blocked = false;
                q.parked_shapes.clear();
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
            if let Some(head) = q.pop_head() {
                heads.push((name.clone(), head));
            }
        }
        heads
    }

    /// A head that was not admitted: parked (BestEffortFIFO) or kept at the head, blocking
    /// (StrictFIFO), until [`Queues::requeue`]. A BestEffortFIFO head that does not fit parks
    /// the queued workloads of its shape with it.
    pub fn park(&mut self, cq: &str, entry: Entry, why: Parked) {
        if self
            .placed
            .get(&entry.key)
            .is_none_or(|(c, e)| c != cq || e != &entry)
        {
            return;
        }
        let Some(q) = self.queues.get_mut(cq) else {
            return;
        };
        if q.strict {
            q.insert(entry);
            q.blocked = true;
            return;
        }
        match (&entry.shape, why) {
            (Some(shape), Parked::NoFit) => {
                q.parked_shapes.insert(shape.clone());
                q.insert(entry);
            }
            _ => {
                q.inadmissible.insert(entry);
            }
        }
    }

    /// A head taken by [`Queues::heads`] whose cycle ended before deciding on it (a write
    /// failed): back in its queue as it was, unless it has moved or left since.
    pub fn put_back(&mut self, cq: &str, entry: Entry) {
        if self
            .placed
            .get(&entry.key)
            .is_none_or(|(c, e)| c != cq || e != &entry)
        {
            return;
        }
        if let Some(q) = self.queues.get_mut(cq)
            && !q.inadmissible.contains(&entry)
        {
            q.insert(entry);
        }
    }

    /// A head that was admitted leaves the queues.
    pub fn admitted(&mut self, key: &str) {
        self.placed.remove(key);
    }

    /// Pending workloads per ClusterQueue (queued and parked).
    pub fn pending(&self, cq: &str) -> usize {
        self.queues.get(cq).map(ClusterQueueQueue::len).unwrap_or(0)
    }

    /// Pending workloads of one LocalQueue's namespace/name prefix are counted by the caller.
    pub fn pending_keys(&self, cq: &str) -> impl Iterator<Item = &str> {
        self.queues
            .get(cq)
            .into_iter()
            .flat_map(|q| q.groups.values().flatten().chain(q.inadmissible.iter()))
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
            shape: None,
        }
    }

    fn shaped(key: &str, timestamp: i64, shape: &str) -> Entry {
        Entry {
            shape: Some(shape.into()),
            ..entry(key, 0, timestamp)
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
        q.park(&cq, head, Parked::NoFit);
        let got = q.heads().pop().map(|h| h.1.key);
        assert_eq!(got.as_deref(), next);
        // After a change in the cohort the parked head is first again.
        let mut q = queues(strategy);
        let (cq, head) = q.heads().pop().expect("head");
        q.park(&cq, head, Parked::NoFit);
        q.requeue(["cq"]);
        assert_eq!(q.pending("cq"), 3);
        assert_eq!(q.heads().pop().map(|h| h.1.key).as_deref(), Some("ns/high"));
    }

    #[rstest]
    #[case::no_fit_parks_the_same_shape(
        Parked::NoFit,
        QueueingStrategy::BestEffortFIFO,
        Some("ns/other")
    )]
    #[case::preempting_parks_only_the_head(
        Parked::Other,
        QueueingStrategy::BestEffortFIFO,
        Some("ns/b")
    )]
    #[case::strict_fifo_never_skips(Parked::NoFit, QueueingStrategy::StrictFIFO, None)]
    fn equivalent_workloads_share_the_heads_fate(
        #[case] why: Parked,
        #[case] strategy: QueueingStrategy,
        #[case] next: Option<&str>,
    ) {
        let mut q = Queues::default();
        q.set_strategy("cq", strategy);
        q.update("ns/a", Some(("cq".into(), shaped("ns/a", 1, "big"))));
        q.update("ns/b", Some(("cq".into(), shaped("ns/b", 2, "big"))));
        q.update(
            "ns/other",
            Some(("cq".into(), shaped("ns/other", 3, "small"))),
        );
        let (cq, head) = q.heads().pop().expect("head");
        assert_eq!(head.key, "ns/a");
        q.park(&cq, head, why);
        assert_eq!(q.heads().pop().map(|h| h.1.key).as_deref(), next);
    }

    #[test]
    fn a_new_workload_of_a_failed_shape_waits_until_the_cohort_changes() {
        let mut q = Queues::default();
        q.set_strategy("cq", QueueingStrategy::BestEffortFIFO);
        q.update("ns/a", Some(("cq".into(), shaped("ns/a", 1, "big"))));
        let (cq, head) = q.heads().pop().expect("head");
        q.park(&cq, head, Parked::NoFit);
        q.update("ns/b", Some(("cq".into(), shaped("ns/b", 2, "big"))));
        assert!(q.heads().is_empty());
        assert_eq!(q.pending("cq"), 2);
        q.requeue(["cq"]);
        // Both are tried again, and the shape no longer holds newcomers back.
        q.update("ns/c", Some(("cq".into(), shaped("ns/c", 3, "big"))));
        assert_eq!(q.pending("cq"), 3);
        assert_eq!(q.heads().pop().map(|h| h.1.key).as_deref(), Some("ns/a"));
        assert_eq!(q.heads().pop().map(|h| h.1.key).as_deref(), Some("ns/b"));
    }

    #[test]
    fn the_hash_follows_the_scheduling_shape_not_the_name() {
        use crate::scheduler::PodSetRequest;
        let w = |key: &str, priority: i32, cpu: i64| PendingWorkload {
            key: key.into(),
            uid: key.into(),
            priority,
            queue_order_time: 0,
            podsets: vec![PodSetRequest {
                name: "main".into(),
                count: 1,
                per_pod: [("cpu".to_string(), cpu)].into_iter().collect(),
                node_selector: Default::default(),
                required_affinity: None,
                tolerations: vec![],
            }],
        };
        let a = equivalence_hash(&w("ns/a", 50, 1000));
        assert_eq!(a.len(), 16);
        assert_eq!(a, equivalence_hash(&w("ns/b", 50, 1000)));
        assert_ne!(a, equivalence_hash(&w("ns/a", 51, 1000)));
        assert_ne!(a, equivalence_hash(&w("ns/a", 50, 2000)));
    }
}
