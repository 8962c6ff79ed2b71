//! What a fresh cluster holds besides namespaces: the bootstrap RBAC objects and PriorityClasses
//! (kube-apiserver's post-start hooks), and each namespace's `kube-root-ca.crt`
//! (kube-controller-manager's root-ca-cert-publisher).

use std::sync::Arc;

use serde_json::json;

use crate::catalog::ResourceType;
use crate::catalog::bootstrap::{ROOT_CA_CONFIGMAP, objects, root_ca_configmap};
use crate::store::{ChangeType, Store, WriteOptions};

impl Store {
    /// Insert the bootstrap data. It comes from a real server, so it is not validated again: this
    /// runs on every start and start-up time is a benchmarked figure.
    pub(in crate::store) fn bootstrap_cluster_objects(&mut self) {
        let now = self.clock.now_rfc3339();
        let mut types: Vec<Arc<ResourceType>> = Vec::new();
        for o in objects() {
            let rt = match types
                .iter()
                .find(|t| t.plural == o.plural && t.group == o.group)
            {
                Some(rt) => rt.clone(),
                None => {
                    let Some(rt) = self.catalog.lookup(o.group, o.version, o.plural) else {
                        tracing::error!(plural = o.plural, "bootstrap kind missing");
                        continue;
                    };
                    types.push(rt.clone());
                    rt
                }
            };
            let name = o.object["metadata"]["name"].as_str().unwrap_or("");
            let key = Store::key(&rt, &o.namespace, name);
            let mut obj = o.object.clone();
            let uid = self.own_uid();
            obj["metadata"]["uid"] = json!(uid);
            obj["metadata"]["creationTimestamp"] = json!(now);
            self.commit(key, obj, ChangeType::Added);
        }
    }

    /// Write `kube-root-ca.crt` into a namespace unless it is there.
    pub(in crate::store) fn publish_root_ca(&mut self, ns: &str) {
        let Some(cm) = self.catalog.lookup("", "v1", "configmaps") else {
            return;
        };
        let key = Store::key(&cm, ns, ROOT_CA_CONFIGMAP);
        if !self.objects.contains_key(&key) {
            self.with_own_uids(|s| {
                // kube-controller-manager's root-CA publisher writes it, and owns its fields.
                let opts = WriteOptions {
                    field_manager: "kube-controller-manager".into(),
                    ..WriteOptions::default()
                };
                let _ = s.create(&cm, ns, root_ca_configmap(), &opts);
            });
        }
    }
}
