//! What the real cluster's controllers do after a delete, done synchronously after every write so
//! that outcomes are deterministic: the garbage collector (background, foreground and orphan
//! propagation), the namespace controller and the CRD cleanup.

use serde_json::{Value, json};

use super::write::CRD_CLEANUP;
use super::{ChangeType, ObjKey, Propagation, Store};
use crate::catalog::Lifecycle;

fn has_finalizer(obj: &Value, name: &str) -> bool {
    obj["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == name))
}

fn is_deleting(obj: &Value) -> bool {
    obj["metadata"]
        .get("deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

impl Store {
    /// Run the cluster's cleanup controllers until nothing is left to do.
    pub(super) fn settle(&mut self) {
        // Each round makes progress or stops; the bound only guards against a bug looping forever.
        for _ in 0..100_000 {
            if let Some(uid) = self.gone_owners.pop_front() {
                self.collect_dependents_of(&uid);
                continue;
            }
            if !self.run_pending() {
                return;
            }
        }
        tracing::error!("lifecycle processing did not settle");
    }

    /// Background garbage collection: delete dependents whose owners are now all gone; drop the
    /// references to gone owners from dependents that still have a live one, as the real collector does.
    fn collect_dependents_of(&mut self, owner_uid: &str) {
        let candidates: Vec<ObjKey> = match self.dependents.get(owner_uid) {
            Some(set) => set.iter().cloned().collect(),
            None => return,
        };
        for key in candidates {
            let Some(obj) = self.objects.get(&key).cloned() else {
                continue;
            };
            if is_deleting(&obj) {
                continue;
            }
            let refs = obj["metadata"]["ownerReferences"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let live = |r: &Value| r["uid"].as_str().is_some_and(|u| self.uids.contains_key(u));
            let (solid, dangling): (Vec<Value>, Vec<Value>) =
                refs.into_iter().partition(|r| live(r));
            if solid.is_empty() {
                self.delete_key(&key, Propagation::Background);
            } else if !dangling.is_empty() {
                let mut updated = (*obj).clone();
                updated["metadata"]["ownerReferences"] = Value::Array(solid);
                self.commit(key, updated, ChangeType::Modified);
            }
        }
    }

    /// One pass over objects with lifecycle work; true if anything changed.
    fn run_pending(&mut self) -> bool {
        let keys: Vec<ObjKey> = self.pending.iter().cloned().collect();
        let before = self.rv;
        for key in keys {
            let Some(obj) = self.objects.get(&key).cloned() else {
                self.pending.remove(&key);
                continue;
            };
            if !is_deleting(&obj) {
                self.pending.remove(&key);
                continue;
            }
            let lifecycle = self
                .catalog
                .preferred_for_storage(&key.storage)
                .map(|rt| rt.behavior.lifecycle);
            let mut obj = (*obj).clone();
            let mut changed = false;
            if has_finalizer(&obj, "orphan") {
                self.orphan_dependents(&obj);
                remove_finalizer(&mut obj, "orphan");
                changed = true;
            }
            if has_finalizer(&obj, "foregroundDeletion") && self.foreground_done(&obj) {
                remove_finalizer(&mut obj, "foregroundDeletion");
                changed = true;
            }
            match lifecycle {
                Some(Lifecycle::Namespace) if self.namespace_emptied(&key.name) => {
                    if let Some(spec) = obj["spec"].as_object_mut() {
                        spec.remove("finalizers");
                    }
                    changed = true;
                }
                Some(Lifecycle::CustomResourceDefinition)
                    if has_finalizer(&obj, CRD_CLEANUP) && self.crd_emptied(&key.name) =>
                {
                    remove_finalizer(&mut obj, CRD_CLEANUP);
                    changed = true;
                }
                _ => {}
            }
            if changed {
                let done = obj["metadata"]["finalizers"]
                    .as_array()
                    .is_none_or(Vec::is_empty)
                    && obj["spec"]["finalizers"]
                        .as_array()
                        .is_none_or(Vec::is_empty);
                if done {
                    self.commit(key.clone(), obj, ChangeType::Deleted);
                    if lifecycle == Some(Lifecycle::CustomResourceDefinition) {
                        self.catalog.unregister_crd(&key.name);
                    }
                } else {
                    self.commit(key.clone(), obj, ChangeType::Modified);
                }
            }
        }
        self.rv != before
    }

    /// Orphan propagation: dependents lose their ownerReference to `owner` and stay.
    fn orphan_dependents(&mut self, owner: &Value) {
        let Some(uid) = owner["metadata"]["uid"].as_str() else {
            return;
        };
        let keys: Vec<ObjKey> = self
            .dependents
            .get(uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        for key in keys {
            let Some(dep) = self.objects.get(&key).cloned() else {
                continue;
            };
            let mut dep = (*dep).clone();
            if let Some(refs) = dep["metadata"]["ownerReferences"].as_array_mut() {
                refs.retain(|r| r["uid"] != json!(uid));
                if refs.is_empty()
                    && let Some(m) = dep["metadata"].as_object_mut()
                {
                    m.remove("ownerReferences");
                }
            }
            self.commit(key, dep, ChangeType::Modified);
        }
    }

    /// Foreground propagation: delete every dependent; the owner waits for those that block it.
    fn foreground_done(&mut self, owner: &Value) -> bool {
        let Some(uid) = owner["metadata"]["uid"].as_str() else {
            return true;
        };
        let keys: Vec<ObjKey> = self
            .dependents
            .get(uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        let mut blocking = false;
        for key in keys {
            let Some(dep) = self.objects.get(&key).cloned() else {
                continue;
            };
            let blocks = dep["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|refs| {
                    refs.iter()
                        .any(|r| r["uid"] == json!(uid) && r["blockOwnerDeletion"] == json!(true))
                });
            if !is_deleting(&dep) {
                self.delete_key(&key, Propagation::Foreground);
            }
            if blocks && self.objects.contains_key(&key) {
                blocking = true;
            }
        }
        !blocking
    }

    /// Delete everything in a terminating namespace; true once nothing is left.
    fn namespace_emptied(&mut self, ns: &str) -> bool {
        let contents: Vec<ObjKey> = self
            .objects
            .keys()
            .filter(|k| k.namespace == ns)
            .cloned()
            .collect();
        for key in &contents {
            if self.objects.get(key).is_some_and(|o| !is_deleting(o)) {
                self.delete_key(key, Propagation::Background);
            }
        }
        !self.objects.keys().any(|k| k.namespace == ns)
    }

    /// Delete every instance of a CRD being deleted; true once none is left.
    fn crd_emptied(&mut self, crd_name: &str) -> bool {
        let Some(storage) = self
            .catalog
            .types()
            .iter()
            .find(|t| t.crd.as_deref() == Some(crd_name))
            .map(|t| t.storage.clone())
        else {
            return true;
        };
        let instances: Vec<ObjKey> = self
            .objects
            .keys()
            .filter(|k| k.storage == storage)
            .cloned()
            .collect();
        for key in &instances {
            if self.objects.get(key).is_some_and(|o| !is_deleting(o)) {
                self.delete_key(key, Propagation::Background);
            }
        }
        !self.objects.keys().any(|k| k.storage == storage)
    }
}

fn remove_finalizer(obj: &mut Value, name: &str) {
    if let Some(list) = obj["metadata"]["finalizers"].as_array_mut() {
        list.retain(|f| f != name);
        if list.is_empty()
            && let Some(m) = obj["metadata"].as_object_mut()
        {
            m.remove("finalizers");
        }
    }
}
