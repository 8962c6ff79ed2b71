//! The controller's view of the cluster: every object it watches, by key, in sorted maps so that
//! every pass over them happens in the same order on every run.
//!
//! Updated from watch events and from the controller's own write responses, whichever is newer:
//! a watch may still deliver an older version after a write returned a newer one.

use std::collections::BTreeMap;
use std::sync::Arc;

use api::kueue::{AdmissionCheck, ClusterQueue, LocalQueue, ResourceFlavor, Workload};
use k8s_openapi::api::batch::v1::Job;
use kube::Resource;
use kube::ResourceExt;

/// One object's change: its version before and after.
pub type Changed<K> = (Option<Arc<K>>, Option<Arc<K>>);

/// `namespace/name` (or `name` for cluster-scoped objects).
pub type Key = String;

pub fn key_of<K: Resource>(obj: &K) -> Key {
    match obj.meta().namespace.as_deref() {
        Some(ns) => format!("{ns}/{}", obj.meta().name.as_deref().unwrap_or_default()),
        None => obj.meta().name.clone().unwrap_or_default(),
    }
}

/// One kind's objects. Each is shared: a pass that holds a workload while it writes others, or a
/// change handed to the reconciler, takes a reference instead of copying the object.
#[derive(Debug)]
pub struct Objects<K> {
    items: BTreeMap<Key, Arc<K>>,
    /// The objects of a re-list in progress, until it is complete.
    relist: Option<Vec<K>>,
}

impl<K> Default for Objects<K> {
    fn default() -> Self {
        Objects {
            items: BTreeMap::new(),
            relist: None,
        }
    }
}

impl<K: Resource + Clone> Objects<K> {
    /// Applies one watch event; returns what changed, old and new. A re-list is applied whole at
    /// its end: objects gone meanwhile are dropped, as kube-runtime's reflector store does.
    pub fn apply_event(&mut self, event: kube::runtime::watcher::Event<K>) -> Vec<Changed<K>> {
        use kube::runtime::watcher::Event;
        match event {
            Event::Init => {
                self.relist = Some(Vec::new());
                vec![]
            }
            Event::InitApply(obj) => {
                self.relist.get_or_insert_with(Vec::new).push(obj);
                vec![]
            }
            Event::InitDone => {
                let before = self.items.clone();
                let listed = self.relist.take().unwrap_or_default();
                self.replace_all(listed);
                let mut changed = vec![];
                for (key, old) in &before {
                    match self.items.get(key) {
                        None => changed.push((Some(old.clone()), None)),
                        Some(new) if new.meta().resource_version != old.meta().resource_version => {
                            changed.push((Some(old.clone()), Some(new.clone())))
                        }
                        _ => {}
                    }
                }
                for (key, new) in &self.items {
                    if !before.contains_key(key) {
                        changed.push((None, Some(new.clone())));
                    }
                }
                changed
            }
            Event::Apply(obj) => {
                let old = self.get_shared(&key_of(&obj));
                let obj = Arc::new(obj);
                if self.apply_shared(obj.clone()) {
                    vec![(old, Some(obj))]
                } else {
                    vec![]
                }
            }
            Event::Delete(obj) => match self.delete(&obj) {
                Some(old) => vec![(Some(old), None)],
                None => vec![],
            },
        }
    }

    /// Stores `obj` unless what is stored is newer. Returns whether it changed.
    pub fn apply(&mut self, obj: K) -> bool {
        self.apply_shared(Arc::new(obj))
    }

    /// [`Objects::apply`] for an object already shared.
    pub fn apply_shared(&mut self, obj: Arc<K>) -> bool {
        let key = key_of(obj.as_ref());
        if let Some(old) = self.items.get(&key)
            && !newer(obj.as_ref(), old)
        {
            return false;
        }
        self.items.insert(key, obj);
        true
    }

    pub fn delete(&mut self, obj: &K) -> Option<Arc<K>> {
        self.items.remove(&key_of(obj))
    }

    pub fn get(&self, key: &str) -> Option<&K> {
        self.items.get(key).map(Arc::as_ref)
    }

    /// The object under `key`, shared.
    pub fn get_shared(&self, key: &str) -> Option<Arc<K>> {
        self.items.get(key).cloned()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Key, &K)> {
        self.items.iter().map(|(k, v)| (k, v.as_ref()))
    }

    /// Every object with its key, shared.
    pub fn iter_shared(&self) -> impl Iterator<Item = (&Key, &Arc<K>)> {
        self.items.iter()
    }

    pub fn values(&self) -> impl Iterator<Item = &K> {
        self.items.values().map(Arc::as_ref)
    }

    pub fn keys(&self) -> impl Iterator<Item = &Key> {
        self.items.keys()
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Replaces everything (a watch's re-list), keeping stored objects that are newer.
    pub fn replace_all(&mut self, objs: Vec<K>) {
        let mut fresh = BTreeMap::new();
        for obj in objs {
            let key = key_of(&obj);
            let keep = match self.items.remove(&key) {
                Some(old) if !newer(&obj, &old) && old.meta().uid == obj.meta().uid => old,
                _ => Arc::new(obj),
            };
            fresh.insert(key, keep);
        }
        self.items = fresh;
    }
}

/// Whether `a` is a newer version than `b`. resourceVersions are opaque to clients in theory;
/// every API server in practice (etcd revisions, the fake's counter) hands out increasing
/// integers, and comparing them is what keeps a late watch event from undoing a write.
fn newer<K: Resource>(a: &K, b: &K) -> bool {
    if a.meta().uid != b.meta().uid {
        return true;
    }
    let rv = |k: &K| {
        k.meta()
            .resource_version
            .as_deref()
            .and_then(|v| v.parse::<u64>().ok())
    };
    match (rv(a), rv(b)) {
        (Some(x), Some(y)) => x > y,
        _ => a.meta().resource_version != b.meta().resource_version,
    }
}

/// The key of the LocalQueue a workload names.
fn local_queue_key(wl: &Workload) -> Option<Key> {
    let name = wl.spec.queue_name.as_deref()?;
    Some(format!("{}/{name}", wl.namespace().unwrap_or_default()))
}

/// Everything the core watches; admission checks keep what else they watch themselves.
#[derive(Debug, Default)]
pub struct World {
    pub flavors: Objects<ResourceFlavor>,
    pub cluster_queues: Objects<ClusterQueue>,
    pub local_queues: Objects<LocalQueue>,
    pub admission_checks: Objects<AdmissionCheck>,
    pub workloads: Objects<Workload>,
    pub jobs: Objects<Job>,
}

impl World {
    /// The LocalQueue a workload names, if it exists.
    pub fn local_queue_of(&self, wl: &Workload) -> Option<&LocalQueue> {
        self.local_queues.get(&local_queue_key(wl)?)
    }

    /// The ClusterQueue behind a workload's LocalQueue, if both exist.
    pub fn cluster_queue_of(&self, wl: &Workload) -> Option<&ClusterQueue> {
        let lq = self.local_queue_of(wl)?;
        self.cluster_queues.get(&lq.spec.cluster_queue)
    }

    /// [`World::local_queue_of`] and [`World::cluster_queue_of`], shared: for a pass that writes
    /// while it holds them.
    pub fn queues_of_shared(
        &self,
        wl: &Workload,
    ) -> (Option<Arc<LocalQueue>>, Option<Arc<ClusterQueue>>) {
        let lq = local_queue_key(wl).and_then(|key| self.local_queues.get_shared(&key));
        let cq = lq
            .as_ref()
            .and_then(|lq| self.cluster_queues.get_shared(&lq.spec.cluster_queue));
        (lq, cq)
    }

    /// The ClusterQueue a workload is (or would be) counted in: its admission's, else its queue's.
    pub fn cluster_queue_name_of(&self, wl: &Workload) -> Option<String> {
        if let Some(a) = wl.status.as_ref().and_then(|s| s.admission.as_ref()) {
            return Some(a.cluster_queue.clone());
        }
        self.local_queue_of(wl)
            .map(|lq| lq.spec.cluster_queue.clone())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn flavor(rv: &str) -> ResourceFlavor {
        let mut f = ResourceFlavor::new("f", Default::default());
        f.metadata.resource_version = Some(rv.into());
        f.metadata.uid = Some("u".into());
        f
    }

    #[test]
    fn a_late_older_event_does_not_undo_a_newer_write() {
        let mut objs = Objects::default();
        assert!(objs.apply(flavor("10")));
        assert!(!objs.apply(flavor("9")));
        assert_eq!(
            objs.get("f").unwrap().metadata.resource_version.as_deref(),
            Some("10")
        );
        assert!(objs.apply(flavor("11")));
    }
}
