//! The store as RBAC's [`Policy`]: the cluster's bindings and roles, read as they are now.

use serde_json::Value;

use crate::semantics::rbac::Policy;
use crate::store::{ListOptions, Store};

const GROUP: &str = "rbac.authorization.k8s.io";

impl Store {
    fn rbac_objects(&self, plural: &str, namespace: Option<&str>) -> Vec<Value> {
        let Some(rt) = self.catalog.lookup(GROUP, "v1", plural) else {
            return Vec::new();
        };
        self.list(&rt, namespace, &ListOptions::default())
            .map(|page| page.items)
            .unwrap_or_default()
    }

    fn rbac_object(&self, plural: &str, namespace: &str, name: &str) -> Option<Value> {
        let rt = self.catalog.lookup(GROUP, "v1", plural)?;
        self.get(&rt, namespace, name).ok()
    }
}

impl Policy for Store {
    fn cluster_role_bindings(&self) -> Vec<Value> {
        self.rbac_objects("clusterrolebindings", None)
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Value> {
        self.rbac_objects("rolebindings", Some(namespace))
    }
    fn cluster_role(&self, name: &str) -> Option<Value> {
        self.rbac_object("clusterroles", "", name)
    }
    fn role(&self, namespace: &str, name: &str) -> Option<Value> {
        self.rbac_object("roles", namespace, name)
    }
}
