//! The catalogue of kinds the server serves: every stable built-in kind of the newest Kubernetes
//! version that k8s-openapi knows (read from its `Resource` traits through a generated list), plus the
//! kinds of registered CustomResourceDefinitions.

mod behavior;
pub mod bootstrap;
mod builtin;
mod crd;
pub mod render;
mod version;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

pub use behavior::{Behavior, DefaultCtx, Lifecycle, NameRule, has_generation};
pub(crate) use builtin::builtin_types;
pub use crd::{
    crd_condition_true, crd_created_status, crd_types, crd_updated_status, default_crd,
    set_crd_condition,
};
pub use version::version_priority;

/// Decodes a body as a kind's typed form and encodes it again (the error names the offending
/// field); what the round trip loses are the fields the kind does not have.
pub type DecodeCheck = fn(&serde_json::Value) -> Result<serde_json::Value, String>;

/// One served group/version/resource.
#[derive(Debug)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    /// Has a `/status` subresource: the main resource ignores status, `/status` ignores the rest.
    pub status: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Reviews (TokenReview, SubjectAccessReview, ...) only answer `create` and store nothing.
    pub create_only: bool,
    /// Storage shared by every version of one group/resource, e.g. `autoscaling/horizontalpodautoscalers`.
    pub storage: Arc<str>,
    pub behavior: &'static Behavior,
    /// The CustomResourceDefinition that defines this kind, if any.
    pub crd: Option<String>,
    /// The `Warning` every request to this version answers with (a deprecated CRD version).
    pub deprecation_warning: Option<String>,
    /// Decodes a body into the kind's typed form, as the real server does before anything else, so
    /// that a wrongly typed field is a 400 naming it. `None` for custom resources.
    pub decode_check: Option<DecodeCheck>,
    /// Where the kind's OpenAPI schema comes from: k8s-openapi's schemars impl for built-ins, the
    /// CRD's `openAPIV3Schema` for custom resources.
    pub schema: SchemaSource,
    /// The `/scale` subresource: where replicas and the selector live in the object.
    pub scale: Option<ScalePaths>,
    /// A CRD version's structural schema: pruning, defaulting and validation of its objects.
    pub structural: Option<Arc<crate::semantics::schema::Schema>>,
    /// A CRD version's `additionalPrinterColumns`, for Table answers.
    pub printer_columns: Option<Arc<serde_json::Value>>,
}

/// Where a kind with a `/scale` subresource keeps its replicas (JSON paths like `.spec.replicas`).
#[derive(Debug, Clone)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    /// A path to a label selector: a string (CRDs), or a selector object (built-ins), which the
    /// Scale shows in its string form.
    pub label_selector: Option<String>,
}

/// Adds a built-in kind's schema (and the schemas it refers to) to a generator; returns its `$ref`.
pub type SchemaFn = fn(&mut schemars::SchemaGenerator) -> schemars::Schema;

#[derive(Debug, Clone)]
pub enum SchemaSource {
    Builtin(SchemaFn),
    Custom(Option<Arc<serde_json::Value>>),
}

impl ResourceType {
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn verbs(&self) -> Vec<&'static str> {
        if self.create_only {
            vec!["create"]
        } else {
            vec![
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        }
    }

    pub fn storage_key(group: &str, plural: &str) -> Arc<str> {
        Arc::from(format!("{group}/{plural}"))
    }
}

/// The served kinds, indexed for routing and discovery.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    by_path: HashMap<(String, String, String), Arc<ResourceType>>,
    /// Served types in discovery order (group, then version priority, then plural).
    ordered: Vec<Arc<ResourceType>>,
    /// The preferred type of each storage: how the server itself renders stored objects.
    storage_owner: HashMap<Arc<str>, Arc<ResourceType>>,
}

/// A group as discovery shows it: versions with the preferred one first.
#[derive(Debug, Clone)]
pub struct GroupInfo {
    pub name: String,
    pub versions: Vec<String>,
}

impl Catalog {
    /// The built-in kinds.
    pub fn builtin() -> Self {
        let mut catalog = Catalog::default();
        for rt in builtin::all_builtin_types() {
            let key = (rt.group.clone(), rt.version.clone(), rt.plural.clone());
            catalog.by_path.insert(key, Arc::new(rt));
        }
        catalog.reorder();
        catalog
    }

    fn reorder(&mut self) {
        let mut all: Vec<Arc<ResourceType>> = self.by_path.values().cloned().collect();
        all.sort_by(|a, b| {
            group_rank(&a.group)
                .cmp(&group_rank(&b.group))
                .then_with(|| a.group.cmp(&b.group))
                .then_with(|| version_priority(&a.version).cmp(&version_priority(&b.version)))
                .then_with(|| a.plural.cmp(&b.plural))
        });
        self.storage_owner.clear();
        for rt in &all {
            if rt.group_is_storage_owner() {
                self.storage_owner
                    .entry(rt.storage.clone())
                    .or_insert_with(|| rt.clone());
            }
        }
        self.ordered = all;
    }

    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.by_path
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// The preferred served version of a storage (used when the server itself must render an object).
    pub fn preferred_for_storage(&self, storage: &str) -> Option<Arc<ResourceType>> {
        self.ordered
            .iter()
            .find(|rt| &*rt.storage == storage && rt.group_is_storage_owner())
            .cloned()
    }

    /// Every served type, in discovery order.
    pub fn types(&self) -> &[Arc<ResourceType>] {
        &self.ordered
    }

    /// The types of one group/version, or `None` if it is not served.
    pub fn group_version(&self, group: &str, version: &str) -> Option<Vec<Arc<ResourceType>>> {
        let found: Vec<_> = self
            .ordered
            .iter()
            .filter(|rt| rt.group == group && rt.version == version)
            .cloned()
            .collect();
        if found.is_empty() { None } else { Some(found) }
    }

    /// Served groups (without the core group) in discovery order.
    pub fn groups(&self) -> Vec<GroupInfo> {
        let mut groups: Vec<GroupInfo> = Vec::new();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        for rt in &self.ordered {
            if rt.group.is_empty() {
                continue;
            }
            let i = *index.entry(rt.group.clone()).or_insert_with(|| {
                groups.push(GroupInfo {
                    name: rt.group.clone(),
                    versions: Vec::new(),
                });
                groups.len() - 1
            });
            if !groups[i].versions.contains(&rt.version) {
                groups[i].versions.push(rt.version.clone());
            }
        }
        groups
    }

    /// Serve the kinds of a CustomResourceDefinition, replacing what it served before.
    pub fn register_crd(&mut self, crd_name: &str, types: Vec<ResourceType>) {
        self.unregister_crd(crd_name);
        for rt in types {
            let key = (rt.group.clone(), rt.version.clone(), rt.plural.clone());
            self.by_path.insert(key, Arc::new(rt));
        }
        self.reorder();
    }

    pub fn unregister_crd(&mut self, crd_name: &str) {
        self.by_path
            .retain(|_, rt| rt.crd.as_deref() != Some(crd_name));
        self.reorder();
    }

    /// Whether a group/version/resource is taken by a built-in kind (a CRD may not shadow it).
    pub fn is_builtin(&self, group: &str, plural: &str) -> bool {
        self.ordered
            .iter()
            .any(|rt| rt.crd.is_none() && rt.group == group && rt.plural == plural)
    }
}

impl ResourceType {
    /// events.k8s.io serves the core group's event storage; only the owner renders stored objects.
    fn group_is_storage_owner(&self) -> bool {
        self.behavior.convert.is_none()
    }
}

/// Discovery order of groups, like a real server's: core first, then the legacy built-in groups in the
/// order kube-apiserver registers them, then everything else alphabetically.
fn group_rank(group: &str) -> usize {
    const ORDER: &[&str] = &[
        "",
        "apiregistration.k8s.io",
        "apps",
        "events.k8s.io",
        "authentication.k8s.io",
        "authorization.k8s.io",
        "autoscaling",
        "batch",
        "certificates.k8s.io",
        "networking.k8s.io",
        "policy",
        "rbac.authorization.k8s.io",
        "storage.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "scheduling.k8s.io",
        "coordination.k8s.io",
        "node.k8s.io",
        "discovery.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "resource.k8s.io",
        "storagemigration.k8s.io",
    ];
    ORDER
        .iter()
        .position(|g| *g == group)
        .unwrap_or(ORDER.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_core_and_grouped_builtins_with_real_metadata() {
        let c = Catalog::builtin();
        let pods = c.lookup("", "v1", "pods").expect("pods served");
        assert_eq!(
            (pods.kind.as_str(), pods.namespaced, pods.status),
            ("Pod", true, true)
        );
        assert_eq!(pods.short_names, vec!["po"]);
        let jobs = c.lookup("batch", "v1", "jobs").expect("jobs served");
        assert_eq!(jobs.list_kind, "JobList");
        let nodes = c.lookup("", "v1", "nodes").expect("nodes served");
        assert!(!nodes.namespaced);
        let cms = c.lookup("", "v1", "configmaps").expect("configmaps served");
        assert!(!cms.status);
        assert!(c.lookup("coordination.k8s.io", "v1", "leases").is_some());
        assert!(
            c.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
                .is_some()
        );
        let ssar = c
            .lookup("authorization.k8s.io", "v1", "selfsubjectaccessreviews")
            .expect("reviews");
        assert!(ssar.create_only);
    }

    #[test]
    fn alpha_and_beta_versions_are_not_served() {
        let c = Catalog::builtin();
        assert!(
            c.types()
                .iter()
                .all(|rt| !rt.version.contains("alpha") && !rt.version.contains("beta"))
        );
    }

    #[test]
    fn both_event_apis_share_one_storage() {
        let c = Catalog::builtin();
        let core = c.lookup("", "v1", "events").expect("core events");
        let ev = c
            .lookup("events.k8s.io", "v1", "events")
            .expect("events.k8s.io events");
        assert_eq!(core.storage, ev.storage);
        assert_eq!(
            c.preferred_for_storage(&core.storage)
                .map(|t| t.group.clone()),
            Some(String::new())
        );
    }
}
