//! One kind's objects as a watch delivers them: the in-memory view a controller decides from.
//!
//! Objects are kept by `namespace/name` in a sorted map, so every pass over them happens in the
//! same order on every run, and each is shared ([`Arc`]): a pass that holds an object while it
//! writes others, or a change handed on, takes a reference instead of a copy.
//!
//! A mirror is fed from watch events ([`Mirror::apply_event`]) and from the owner's own write
//! responses ([`Mirror::apply`]), whichever is newer: a watch may still deliver an older version
//! after a write returned a newer one. A re-list is buffered and applied whole at its end, as
//! kube-runtime's reflector store does, so objects deleted while the watch was down are dropped.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube::Resource;
use kube::runtime::watcher::Event;

/// One object's change: its version before and after (`None` where it did not exist).
pub type Changed<K> = (Option<Arc<K>>, Option<Arc<K>>);

/// `namespace/name` (or `name` for cluster-scoped objects).
pub type Key = String;

/// The key `obj` is kept under.
pub fn key_of<K: Resource>(obj: &K) -> Key {
    match obj.meta().namespace.as_deref() {
        Some(ns) => format!("{ns}/{}", obj.meta().name.as_deref().unwrap_or_default()),
        None => obj.meta().name.clone().unwrap_or_default(),
    }
}

/// One kind's objects, by key.
#[derive(Debug)]
pub struct Mirror<K> {
    items: BTreeMap<Key, Arc<K>>,
    /// The objects of a re-list in progress, until it is complete.
    relist: Option<Vec<K>>,
    /// A first list has been applied whole.
    synced: bool,
}

impl<K> Default for Mirror<K> {
    fn default() -> Self {
        Mirror {
            items: BTreeMap::new(),
            relist: None,
            synced: false,
        }
    }
}

impl<K: Resource + Clone> Mirror<K> {
    /// Applies one watch event and returns what changed, old and new.
    ///
    /// `Init` and `InitApply` only buffer: a re-list counts once complete. `InitDone` replaces
    /// everything with what was listed and returns the objects removed or changed (by
    /// resourceVersion) in key order, then those added in key order. `Apply` and `Delete` return
    /// their one change, or nothing if the event is older than what is stored, or the object
    /// unknown.
    pub fn apply_event(&mut self, event: Event<K>) -> Vec<Changed<K>> {
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
                let listed = self.relist.take().unwrap_or_default();
                self.synced = true;
                self.relisted(listed)
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
            // Only the object the event names: a late delete of an earlier object of the same
            // name (deleted and created again, as a controller does with an attempt it
            // recreates) must not take the new one.
            Event::Delete(obj) => {
                let key = key_of(&obj);
                let same = self.items.get(&key).is_some_and(|stored| {
                    let (a, b) = (stored.meta().uid.as_ref(), obj.meta().uid.as_ref());
                    a.is_none() || b.is_none() || a == b
                });
                match same.then(|| self.items.remove(&key)).flatten() {
                    Some(old) => vec![(Some(old), None)],
                    None => vec![],
                }
            }
        }
    }

    /// Whether a first list has been applied whole: until then the mirror may lack objects that
    /// exist.
    pub fn is_synced(&self) -> bool {
        self.synced
    }

    /// Stores `obj` unless what is stored is newer. Returns whether it changed.
    pub fn apply(&mut self, obj: K) -> bool {
        self.apply_shared(Arc::new(obj))
    }

    /// [`Mirror::apply`] for an object already shared.
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

    /// Removes `obj` (by key); returns what was stored.
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

    /// [`Mirror::replace_all`], returning what it changed.
    fn relisted(&mut self, listed: Vec<K>) -> Vec<Changed<K>> {
        let before = self.items.clone();
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

#[cfg(test)]
#[path = "mirror_tests.rs"]
mod tests;
