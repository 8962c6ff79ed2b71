//! A request as admission describes it, and where a write stopped for its webhooks: what the
//! store hands the HTTP layer, and the dispatch reads.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::config::{Hook, Phase};
use crate::catalog::ResourceType;

/// The operation a write is admitted as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    /// As AdmissionReview and webhook rules spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// The request being admitted, as the HTTP layer describes it.
#[derive(Debug, Clone)]
pub struct RequestFacts {
    /// The resource type the URL named (its version is the request's).
    pub rt: Arc<ResourceType>,
    /// The subresource written (`status`), or `""`.
    pub subresource: String,
    /// The requester's `userInfo`.
    pub user: Value,
    /// What the request's query set of the options a create or update is shown with
    /// (`dryRun`, `fieldManager`, `fieldValidation`): a patch is admitted as the create or update
    /// it makes, with those options.
    pub options: Value,
    /// A delete's DeleteOptions.
    pub delete_options: Option<Value>,
    pub dry_run: bool,
}

/// One webhook a write must be shown to, and the version it is shown in.
#[derive(Debug, Clone)]
pub struct Invocation {
    pub hook: Hook,
    /// The request's own type, or (`matchPolicy: Equivalent`) another version of its resource
    /// that the webhook's rules name.
    pub rt: Arc<ResourceType>,
}

/// What `namespaceSelector` is matched against.
#[derive(Debug, Clone, PartialEq)]
pub enum NamespaceLabels {
    /// A cluster-scoped object (not a Namespace): every selector matches.
    NotApplicable,
    Labels(Map<String, Value>),
    /// The request's namespace does not exist.
    Missing(String),
}

/// Where a write stopped, and what the webhooks must be shown. Objects are in storage form.
#[derive(Debug, Clone)]
pub struct Pending {
    pub phase: Phase,
    pub operation: Operation,
    pub invocations: Vec<Invocation>,
    pub name: String,
    pub namespace: String,
    pub object: Option<Value>,
    pub old: Option<Value>,
    pub namespace_labels: NamespaceLabels,
}
