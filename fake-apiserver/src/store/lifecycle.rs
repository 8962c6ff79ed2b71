//! What the real cluster's controllers do after a delete, done synchronously after every write so
//! that outcomes are deterministic: the garbage collector (background, foreground and orphan
//! propagation), the namespace controller and the CRD cleanup.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use super::write::CRD_CLEANUP;
use super::{ChangeType, ObjKey, Propagation, Store, Stored, Subresource};
use crate::catalog::{Lifecycle, crd_condition_true, set_crd_condition};
use crate::semantics::meta::{has_finalizer, is_deleting, removable, remove_finalizer};

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

    fn dependents_of(&self, owner_uid: &str) -> Vec<ObjKey> {
        self.dependents
            .get(owner_uid)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn is_live(&self, owner_ref: &Value) -> bool {
        owner_ref["uid"]
            .as_str()
            .is_some_and(|u| self.uids.contains_key(u))
    }

    /// Background garbage collection: delete dependents whose owners are now all gone; drop the
    /// references to gone owners from dependents that still have a live one, as the real collector does.
    fn collect_dependents_of(&mut self, owner_uid: &str) {
        for key in self.dependents_of(owner_uid) {
            let Some(obj) = self.objects.get(&key).map(Stored::object) else {
                continue;
            };
            if is_deleting(&obj) {
                continue;
            }
            let refs = obj["metadata"]["ownerReferences"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let (solid, dangling): (Vec<Value>, Vec<Value>) =
                refs.into_iter().partition(|r| self.is_live(r));
            if solid.is_empty() {
                self.delete_key(&key, Propagation::Background);
            } else if !dangling.is_empty() {
                self.set_owner_refs(key, &obj, solid);
            }
        }
    }

    fn set_owner_refs(&mut self, key: ObjKey, obj: &Value, refs: Vec<Value>) {
        let mut updated = obj.clone();
        if refs.is_empty() {
            if let Some(m) = updated["metadata"].as_object_mut() {
                m.remove("ownerReferences");
            }
        } else {
            updated["metadata"]["ownerReferences"] = Value::Array(refs);
        }
        // The collector's patch is recorded like any update: the references it takes out leave
        // their managers' entries (an entry left empty goes).
        if let Some(rt) = self.catalog.preferred_for_storage(&key.storage) {
            let manager = "kube-controller-manager";
            self.record_manager(&rt, Some(obj), &mut updated, manager, Subresource::Main);
        }
        self.commit(key, updated, ChangeType::Modified);
    }

    /// One pass over objects with lifecycle work; true if anything changed.
    fn run_pending(&mut self) -> bool {
        let keys: Vec<ObjKey> = self.pending.iter().cloned().collect();
        let before = self.rv;
        for key in keys {
            let Some(obj) = self.objects.get(&key).map(Stored::object) else {
                self.pending.remove(&key);
                continue;
            };
            let lifecycle = self
                .catalog
                .preferred_for_storage(&key.storage)
                .map(|rt| rt.behavior.lifecycle);
            if !is_deleting(&obj) {
                if lifecycle == Some(Lifecycle::CustomResourceDefinition) {
                    self.accept_crd_names(&key);
                }
                self.pending.remove(&key);
                continue;
            }
            let obj = if lifecycle == Some(Lifecycle::CustomResourceDefinition)
                && has_finalizer(&obj, CRD_CLEANUP)
            {
                self.crd_deletion_in_progress(&key).unwrap_or(obj)
            } else {
                obj
            };
            let last_stored = obj.clone();
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
                Some(Lifecycle::Namespace) => {
                    let emptied = self.emptied(|k| k.namespace == key.name);
                    changed |= self.set_deletion_conditions(&mut obj, &key.name);
                    if emptied {
                        // Only a real change counts: a namespace also held by
                        // metadata.finalizers stays.
                        changed |= obj["spec"]
                            .as_object_mut()
                            .and_then(|spec| spec.remove("finalizers"))
                            .is_some();
                    }
                }
                Some(Lifecycle::CustomResourceDefinition) if has_finalizer(&obj, CRD_CLEANUP) => {
                    let storage = self.crd_storage(&key.name);
                    if self.emptied(|k| Some(&k.storage) == storage.as_ref()) {
                        remove_finalizer(&mut obj, CRD_CLEANUP);
                        changed = true;
                    }
                }
                _ => {}
            }
            if changed {
                if removable(&obj) {
                    if lifecycle == Some(Lifecycle::CustomResourceDefinition) {
                        // The CRD finalizer's last update deletes it; watchers see it as it
                        // was last stored, finalizer included.
                        self.commit(key.clone(), (*last_stored).clone(), ChangeType::Deleted);
                    } else {
                        self.commit(key.clone(), obj, ChangeType::Deleted);
                    }
                    if lifecycle == Some(Lifecycle::CustomResourceDefinition) {
                        // Watches of a kind that no longer exists end, as on the real server.
                        if let Some(storage) = self.crd_storage(&key.name) {
                            self.watchers.remove(&storage);
                        }
                        self.catalog.unregister_crd(&key.name);
                    }
                } else {
                    self.commit(key.clone(), obj, ChangeType::Modified);
                }
            }
        }
        self.rv != before
    }

    /// A status write by one of kube-apiserver's own controllers: recorded as manager
    /// `kube-apiserver`, subresource status. The object as stored.
    fn controller_status_write(&mut self, key: &ObjKey, old: &Value, mut new: Value) -> Arc<Value> {
        if let Some(rt) = self.catalog.preferred_for_storage(&key.storage) {
            self.record_manager(
                &rt,
                Some(old),
                &mut new,
                "kube-apiserver",
                Subresource::Status,
            );
        }
        self.commit(key.clone(), new, ChangeType::Modified)
    }

    /// kube-apiserver's naming controller, then its establishing controller, on a CRD that is not
    /// being deleted: two status writes, as on the real server (a watcher sees the names accepted
    /// with Established False, "Installing", then Established). Later changes of `spec.names`
    /// are accepted into `status.acceptedNames` the same way.
    fn accept_crd_names(&mut self, key: &ObjKey) {
        let Some(old) = self.objects.get(key).map(Stored::object) else {
            return;
        };
        let now = self.clock.now_rfc3339();
        let mut named = (*old).clone();
        named["status"]["acceptedNames"] = old["spec"]["names"].clone();
        let mut changed = named["status"]["acceptedNames"] != old["status"]["acceptedNames"];
        changed |= set_crd_condition(
            &mut named,
            "NamesAccepted",
            "True",
            "NoConflicts",
            "no conflicts found",
            &now,
        );
        if !crd_condition_true(&named, "Established") {
            changed |= set_crd_condition(
                &mut named,
                "Established",
                "False",
                "Installing",
                "the initial names have been accepted",
                &now,
            );
        }
        let named = if changed {
            self.controller_status_write(key, &old, named)
        } else {
            old
        };
        let mut established = (*named).clone();
        if set_crd_condition(
            &mut established,
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
            &now,
        ) {
            self.controller_status_write(key, &named, established);
        }
    }

    /// The CRD finalizer's first step on a CRD being deleted: its Terminating condition says the
    /// deletion of its objects is in progress. The object as stored, if that wrote it.
    fn crd_deletion_in_progress(&mut self, key: &ObjKey) -> Option<Arc<Value>> {
        let old = self.objects.get(key).map(Stored::object)?;
        let mut new = (*old).clone();
        let now = self.clock.now_rfc3339();
        set_crd_condition(
            &mut new,
            "Terminating",
            "True",
            "InstanceDeletionInProgress",
            "CustomResource deletion is in progress",
            &now,
        )
        .then(|| self.controller_status_write(key, &old, new))
    }

    /// The CRD registry's delete: kube-apiserver marks the CRD itself (no grace period, no new
    /// generation) with the finalizer that deletes its objects and a Terminating condition.
    pub(super) fn mark_crd_deleting(&self, crd: &mut Value) {
        let now = self.clock.now_rfc3339();
        crd["metadata"]["deletionTimestamp"] = json!(now);
        set_crd_condition(
            crd,
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
            &now,
        );
    }

    /// The namespace controller's status conditions on a terminating namespace: what content and
    /// which finalizers still hold it, in kube-controller-manager's words. True when they changed
    /// (a condition keeps its lastTransitionTime while its status stays).
    fn set_deletion_conditions(&self, ns: &mut Value, name: &str) -> bool {
        let mut resources: BTreeMap<String, usize> = BTreeMap::new();
        let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
        for (key, stored) in self.objects.iter().filter(|(k, _)| k.namespace == name) {
            let resource = match self.catalog.preferred_for_storage(&key.storage) {
                Some(rt) => format!("{}.{}", rt.plural, rt.group),
                None => continue,
            };
            *resources.entry(resource).or_default() += 1;
            let obj = stored.object();
            for f in obj["metadata"]["finalizers"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if let Some(f) = f.as_str() {
                    *finalizers.entry(f.to_string()).or_default() += 1;
                }
            }
        }
        let counted = |m: &BTreeMap<String, usize>, word: &str| {
            m.iter()
                .map(|(what, n)| format!("{what} {word} {n} resource instances"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let content = if resources.is_empty() {
            (
                "False",
                "ContentRemoved",
                "All content successfully removed".to_string(),
            )
        } else {
            let listed = counted(&resources, "has");
            (
                "True",
                "SomeResourcesRemain",
                format!("Some resources are remaining: {listed}"),
            )
        };
        let held = if finalizers.is_empty() {
            (
                "False",
                "ContentHasNoFinalizers",
                "All content-preserving finalizers finished".to_string(),
            )
        } else {
            let listed = counted(&finalizers, "in");
            (
                "True",
                "SomeFinalizersRemain",
                format!("Some content in the namespace has finalizers remaining: {listed}"),
            )
        };
        let wanted = [
            (
                "NamespaceDeletionDiscoveryFailure",
                (
                    "False",
                    "ResourcesDiscovered",
                    "All resources successfully discovered".to_string(),
                ),
            ),
            (
                "NamespaceDeletionGroupVersionParsingFailure",
                (
                    "False",
                    "ParsedGroupVersions",
                    "All legacy kube types successfully parsed".to_string(),
                ),
            ),
            (
                "NamespaceDeletionContentFailure",
                (
                    "False",
                    "ContentDeleted",
                    "All content successfully deleted, may be waiting on finalization".to_string(),
                ),
            ),
            ("NamespaceContentRemaining", content),
            ("NamespaceFinalizersRemaining", held),
        ];
        let old: Vec<Value> = ns["status"]["conditions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let now = self.clock.now_rfc3339();
        let conditions: Vec<Value> = wanted
            .into_iter()
            .map(|(type_, (status, reason, message))| {
                let before = old.iter().find(|c| c["type"] == type_);
                let since = match before {
                    Some(c) if c["status"] == status => c["lastTransitionTime"].clone(),
                    _ => json!(now),
                };
                json!({"type": type_, "status": status, "lastTransitionTime": since, "reason": reason, "message": message})
            })
            .collect();
        if old == conditions {
            return false;
        }
        ns["status"]["conditions"] = Value::Array(conditions);
        true
    }

    /// Orphan propagation: dependents lose their ownerReference to `owner` and stay.
    fn orphan_dependents(&mut self, owner: &Value) {
        let Some(uid) = owner["metadata"]["uid"].as_str() else {
            return;
        };
        for key in self.dependents_of(uid) {
            let Some(dep) = self.objects.get(&key).map(Stored::object) else {
                continue;
            };
            let refs = dep["metadata"]["ownerReferences"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let kept: Vec<Value> = refs
                .into_iter()
                .filter(|r| r["uid"] != json!(uid))
                .collect();
            self.set_owner_refs(key, &dep, kept);
        }
    }

    /// Foreground propagation: delete the dependents that have no other live owner (those that do
    /// only lose their reference); the owner waits for the ones that block it.
    fn foreground_done(&mut self, owner: &Value) -> bool {
        let Some(uid) = owner["metadata"]["uid"].as_str() else {
            return true;
        };
        let mut blocking = false;
        for key in self.dependents_of(uid) {
            let Some(dep) = self.objects.get(&key).map(Stored::object) else {
                continue;
            };
            let refs = dep["metadata"]["ownerReferences"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let (this, others): (Vec<Value>, Vec<Value>) =
                refs.into_iter().partition(|r| r["uid"] == json!(uid));
            if others.iter().any(|r| self.is_live(r)) {
                self.set_owner_refs(key, &dep, others);
                continue;
            }
            if !is_deleting(&dep) {
                // A dependent with dependents of its own is deleted in the foreground too.
                let dep_uid = dep["metadata"]["uid"].as_str().unwrap_or("");
                let policy = if self.dependents.contains_key(dep_uid) {
                    Propagation::Foreground
                } else {
                    Propagation::Background
                };
                self.delete_key(&key, policy);
            }
            let blocks = this.iter().any(|r| r["blockOwnerDeletion"] == json!(true));
            if blocks && self.objects.contains_key(&key) {
                blocking = true;
            }
        }
        !blocking
    }

    /// The storage of the kinds a CRD defines.
    fn crd_storage(&self, crd_name: &str) -> Option<std::sync::Arc<str>> {
        self.catalog
            .types()
            .iter()
            .find(|t| t.crd.as_deref() == Some(crd_name))
            .map(|t| t.storage.clone())
    }

    /// Delete every object `selected` picks that is not already being deleted; true once none is
    /// left (namespace contents, the instances of a CRD).
    fn emptied(&mut self, selected: impl Fn(&ObjKey) -> bool) -> bool {
        let keys: Vec<ObjKey> = self
            .objects
            .keys()
            .filter(|k| selected(k))
            .cloned()
            .collect();
        for key in &keys {
            if self.objects.get(key).is_some_and(|o| !o.is_deleting()) {
                self.delete_key(key, Propagation::Background);
            }
        }
        !self.objects.keys().any(selected)
    }
}
