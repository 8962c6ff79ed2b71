//! The store's side of `semantics::admission`: what admission may read, and running a kind's
//! admission on a write.

use std::sync::Arc;

use serde_json::Value;

use super::{Store, Stored};
use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};
use crate::semantics::admission::{AdmitCtx, Cluster, Operation};

impl Cluster for Store {
    fn get(&self, group: &str, plural: &str, ns: &str, name: &str) -> Option<Arc<Value>> {
        let rt = self.catalog.lookup(group, "v1", plural)?;
        self.objects
            .get(&Store::key(&rt, ns, name))
            .map(Stored::object)
    }

    fn list(&self, group: &str, plural: &str) -> Vec<Arc<Value>> {
        let Some(rt) = self.catalog.lookup(group, "v1", plural) else {
            return Vec::new();
        };
        // Keys sort by storage first: the kind's objects are one range.
        let first = Store::key(&rt, "", "");
        self.objects
            .range(first..)
            .take_while(|(k, _)| k.storage == rt.storage)
            .map(|(_, s)| s.object())
            .collect()
    }
}

impl Store {
    /// Run `rt`'s admission on a create (`old` is `None`) or an update of `obj`.
    pub(super) fn admit(
        &self,
        rt: &ResourceType,
        old: Option<&Value>,
        obj: &mut Value,
    ) -> ApiResult<()> {
        let Some(admit) = rt.behavior.admit else {
            return Ok(());
        };
        let uid = match old {
            Some(o) => o["metadata"]["uid"].as_str(),
            None => obj["metadata"]["uid"].as_str(),
        }
        .unwrap_or("")
        .to_string();
        let ctx = AdmitCtx {
            op: if old.is_some() {
                Operation::Update
            } else {
                Operation::Create
            },
            old,
            uid: &uid,
            cluster: self,
        };
        admit(obj, &ctx).map_err(|refused| {
            let name = obj["metadata"]["name"].as_str().unwrap_or("");
            ApiError::forbidden(&rt.group, &rt.plural, name, &refused.0)
        })
    }
}
