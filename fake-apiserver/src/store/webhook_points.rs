//! Where a write stops for the admission webhooks, and takes up their answers.
//!
//! The store never calls a webhook: its lock is never held across a call. A write that reaches
//! a point where webhooks apply (mutating: after the built-in admission plugins; validating:
//! after validation, before the commit) stops there, leaving the store as it was, with what the
//! webhooks must be shown ([`Pending`]). The HTTP layer calls them without the lock and runs the
//! write again from the start with their answers in the [`AdmissionPass`]. When the write reaches
//! the point with the same object, it takes the answer and goes on; when the object differs
//! (another write changed what it was computed from), the webhooks are shown the new one, as
//! kube-apiserver calls them again when its optimistic update retries. A write whose
//! resourceVersion no longer matches is refused with 409 before any point, as always.

use std::sync::Arc;

use jiff::Timestamp;
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

use super::Store;
use crate::catalog::ResourceType;
use crate::clock::Clock;
use crate::error::{ApiError, ApiResult};
use crate::semantics::admission::Cluster;
use crate::webhooks::config::{self, Phase};
use crate::webhooks::matching;
pub use crate::webhooks::request::{Invocation, NamespaceLabels, Operation, Pending, RequestFacts};

/// One request's admission, carried from one run of its write to the next.
#[derive(Debug)]
pub struct AdmissionPass {
    pub request: RequestFacts,
    /// What the mutating webhooks were shown, and what they made of it (storage form).
    mutated: Vec<(Value, Value)>,
    /// What the validating webhooks allowed (storage form).
    validated: Vec<Value>,
    pending: Option<Pending>,
    /// The store's generators as the run began: a run that stops leaves them as they were, so the
    /// next run draws the same uid and name.
    rng: Option<(ChaCha8Rng, u32)>,
    /// When the first run began: every run stamps this time (managedFields, creationTimestamp),
    /// or the object a webhook was shown would differ from the next run's by the seconds its
    /// call took, and it would be called again.
    began: Option<Timestamp>,
}

impl AdmissionPass {
    pub fn new(request: RequestFacts) -> Self {
        AdmissionPass {
            request,
            mutated: Vec::new(),
            validated: Vec::new(),
            pending: None,
            rng: None,
            began: None,
        }
    }

    /// Where the last run stopped, if it did.
    pub fn take_pending(&mut self) -> Option<Pending> {
        self.pending.take()
    }

    /// The mutating webhooks made `result` of `shown`.
    pub fn record_mutation(&mut self, shown: Value, result: Value) {
        self.mutated.push((shown, result));
    }

    /// The validating webhooks allowed `shown`.
    pub fn record_validation(&mut self, shown: Value) {
        self.validated.push(shown);
    }
}

/// The error a stopped write returns; the HTTP layer finds the pass's pending point instead of
/// answering it.
fn stopped() -> ApiError {
    ApiError::internal("the write stopped for its admission webhooks")
}

/// The configurations exempt from webhooks: kube-apiserver never lets a webhook stand between an
/// administrator and the objects that configure admission.
fn exempt(rt: &ResourceType) -> bool {
    rt.group == "admissionregistration.k8s.io"
}

impl Store {
    /// Run the next write of a request with its admission.
    pub fn begin_admission(&mut self, mut pass: AdmissionPass) {
        pass.pending = None;
        pass.rng = Some((self.rng.clone(), self.next_cluster_ip));
        let began = *pass.began.get_or_insert_with(|| self.clock.now());
        let running = std::mem::replace(&mut self.clock, Clock::stopped_at(began));
        self.running_clock = Some(running);
        self.admission = Some(pass);
    }

    /// The request's admission after its write: when the write stopped for webhooks, the store's
    /// generators go back to where the write began.
    pub fn end_admission(&mut self) -> Option<AdmissionPass> {
        if let Some(running) = self.running_clock.take() {
            self.clock = running;
        }
        let mut pass = self.admission.take()?;
        if pass.pending.is_some()
            && let Some((rng, ip)) = pass.rng.take()
        {
            self.rng = rng;
            self.next_cluster_ip = ip;
        }
        Some(pass)
    }

    /// A committed write's admission is over: what its side effects write (a namespace's
    /// ServiceAccount, a collected dependent) is not shown to the request's webhooks.
    pub(super) fn admission_over(&mut self) {
        self.admission = None;
    }

    /// The mutating webhooks' point: `obj` (storage form, of `rt`) becomes what they made of it,
    /// or the write stops to call them. On a create they see it as kube-apiserver's mutating
    /// admission does, before the registry fills in the uid, the creation time, the generation
    /// and (`generated_name`) the name made from generateName.
    pub(super) fn mutating_point(
        &mut self,
        rt: &ResourceType,
        op: Operation,
        old: Option<&Value>,
        obj: &mut Value,
        generated_name: bool,
    ) -> ApiResult<()> {
        let invocations = self.invocations(Phase::Mutating, rt, op);
        if invocations.is_empty() {
            return Ok(());
        }
        let shown = match op {
            Operation::Create => before_registry(obj, generated_name),
            _ => obj.clone(),
        };
        let answered = self.admission.as_ref().and_then(|pass| {
            pass.mutated
                .iter()
                .find(|(s, _)| *s == shown)
                .map(|(_, r)| r)
        });
        if let Some(result) = answered {
            let mut next = result.clone();
            keep_server_owned(&mut next, obj);
            *obj = next;
            return Ok(());
        }
        self.stop(Phase::Mutating, rt, op, invocations, Some(shown), old)
    }

    /// The validating webhooks' point: the write goes on if they allowed `obj`, or stops to ask.
    pub(super) fn validating_point(
        &mut self,
        rt: &ResourceType,
        op: Operation,
        old: Option<&Value>,
        obj: Option<&Value>,
    ) -> ApiResult<()> {
        let invocations = self.invocations(Phase::Validating, rt, op);
        if invocations.is_empty() {
            return Ok(());
        }
        // A delete is judged on the object it removes.
        let judged = obj.or(old).cloned().unwrap_or(Value::Null);
        if self
            .admission
            .as_ref()
            .is_some_and(|pass| pass.validated.contains(&judged))
        {
            return Ok(());
        }
        self.stop(Phase::Validating, rt, op, invocations, obj.cloned(), old)
    }

    /// A delete's mutating point: webhooks are shown the object, and may not change it.
    pub(super) fn delete_mutating_point(
        &mut self,
        rt: &ResourceType,
        old: &Value,
    ) -> ApiResult<()> {
        let invocations = self.invocations(Phase::Mutating, rt, Operation::Delete);
        if invocations.is_empty() {
            return Ok(());
        }
        if self
            .admission
            .as_ref()
            .is_some_and(|pass| pass.mutated.iter().any(|(s, _)| s == old))
        {
            return Ok(());
        }
        self.stop(
            Phase::Mutating,
            rt,
            Operation::Delete,
            invocations,
            None,
            Some(old),
        )
    }

    fn stop(
        &mut self,
        phase: Phase,
        rt: &ResourceType,
        operation: Operation,
        invocations: Vec<Invocation>,
        object: Option<Value>,
        old: Option<&Value>,
    ) -> ApiResult<()> {
        let about = object.as_ref().or(old).cloned().unwrap_or(Value::Null);
        let name = about["metadata"]["name"].as_str().unwrap_or("").to_string();
        // A Namespace's requests carry its own name as their namespace.
        let namespace = match rt.group.is_empty() && rt.plural == "namespaces" {
            true => name.clone(),
            false => about["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        };
        let namespace_labels = self.namespace_labels(rt, &namespace, &about);
        let pending = Pending {
            phase,
            operation,
            invocations,
            name,
            namespace,
            object,
            old: old.cloned(),
            namespace_labels,
        };
        if let Some(pass) = self.admission.as_mut() {
            pass.pending = Some(pending);
        }
        Err(stopped())
    }

    fn namespace_labels(&self, rt: &ResourceType, namespace: &str, obj: &Value) -> NamespaceLabels {
        let labels = |o: &Value| {
            o["metadata"]["labels"]
                .as_object()
                .cloned()
                .unwrap_or_default()
        };
        if rt.group.is_empty() && rt.plural == "namespaces" {
            return NamespaceLabels::Labels(labels(obj));
        }
        if !rt.namespaced {
            return NamespaceLabels::NotApplicable;
        }
        match Cluster::get(self, "", "namespaces", "", namespace) {
            Some(ns) => NamespaceLabels::Labels(labels(&ns)),
            None => NamespaceLabels::Missing(namespace.to_string()),
        }
    }

    /// The webhooks of `phase` whose rules match this request, in the order they are called;
    /// none when the write is not a request's (the server's own writes) or is exempt.
    fn invocations(&self, phase: Phase, rt: &ResourceType, op: Operation) -> Vec<Invocation> {
        let Some(pass) = &self.admission else {
            return Vec::new();
        };
        if exempt(rt) {
            return Vec::new();
        }
        let configurations = Cluster::list(self, "admissionregistration.k8s.io", phase.plural());
        if configurations.is_empty() {
            return Vec::new();
        }
        let hooks = config::hooks(phase, configurations.iter().map(|c| &**c));
        let request = &pass.request;
        let versions: Vec<Arc<ResourceType>> = self
            .catalog
            .types()
            .iter()
            .filter(|t| t.storage == rt.storage)
            .cloned()
            .collect();
        hooks
            .into_iter()
            .filter_map(|hook| {
                let rt =
                    matching::version_for(&hook, &request.rt, &request.subresource, op, &versions)?;
                Some(Invocation { hook, rt })
            })
            .collect()
    }
}

/// A create's object as mutating admission sees it on kube-apiserver: the registry has not yet
/// given it a uid, a creation time, a generation or a generated name.
fn before_registry(obj: &Value, generated_name: bool) -> Value {
    let mut shown = obj.clone();
    if let Some(meta) = shown["metadata"].as_object_mut() {
        meta.remove("uid");
        meta.remove("generation");
        // kube-apiserver 1.37 leaves the unset time out (Go's omitzero), not null.
        meta.remove("creationTimestamp");
        if generated_name {
            meta.remove("name");
        }
    }
    shown
}

/// What a webhook may not change: the metadata the server owns, taken back from the object the
/// write made.
fn keep_server_owned(next: &mut Value, shown: &Value) {
    super::write::copy_metadata(
        next,
        shown,
        &[
            "uid",
            "creationTimestamp",
            "resourceVersion",
            "generation",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "name",
            "namespace",
        ],
    );
    // managedFields a webhook broke are put back, as kube-apiserver's managed-fields check does.
    let entries_ok = next["metadata"]
        .get("managedFields")
        .is_none_or(|m| m.as_array().is_some_and(|a| a.iter().all(Value::is_object)));
    if !entries_ok {
        match shown["metadata"].get("managedFields") {
            Some(v) => next["metadata"]["managedFields"] = v.clone(),
            None => {
                if let Some(m) = next["metadata"].as_object_mut() {
                    m.remove("managedFields");
                }
            }
        }
    }
    for typed in ["apiVersion", "kind"] {
        next[typed] = shown[typed].clone();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;
    use crate::clock::Clock;
    use crate::store::{StoreConfig, WriteOptions};

    fn store() -> Store {
        let clock = Clock::starting_at("2026-01-01T00:00:00Z".parse().unwrap());
        Store::new(clock, StoreConfig::default())
    }

    fn with_mutating_webhook(store: &mut Store) {
        let rt = store
            .catalog()
            .lookup(
                "admissionregistration.k8s.io",
                "v1",
                "mutatingwebhookconfigurations",
            )
            .unwrap();
        let config = json!({"metadata": {"name": "hooks"}, "webhooks": [{
            "name": "a.b.c", "clientConfig": {"url": "https://127.0.0.1:1/"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"]}]});
        store
            .create(&rt, "", config, &WriteOptions::default())
            .unwrap();
    }

    fn facts(store: &Store) -> RequestFacts {
        RequestFacts {
            rt: store.catalog().lookup("", "v1", "configmaps").unwrap(),
            subresource: String::new(),
            user: json!({"username": "u"}),
            options: json!({}),
            delete_options: None,
            dry_run: false,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_create_that_stops_for_webhooks_leaves_the_store_as_it_was_and_resumes_with_their_answer()
     {
        let generated = json!({"metadata": {"generateName": "made-"}});
        let opts = WriteOptions::default();
        // Without webhooks: the uid and name the store draws next.
        let mut plain = store();
        with_mutating_webhook(&mut plain);
        let rt = plain.catalog().lookup("", "v1", "configmaps").unwrap();
        let expected = plain
            .create(&rt, "default", generated.clone(), &opts)
            .unwrap();

        let mut hooked = store();
        with_mutating_webhook(&mut hooked);
        let before = hooked.resource_version();
        hooked.begin_admission(AdmissionPass::new(facts(&hooked)));
        assert!(
            hooked
                .create(&rt, "default", generated.clone(), &opts)
                .is_err()
        );
        let mut pass = hooked.end_admission().unwrap();
        let pending = pass.take_pending().unwrap();
        assert_eq!(hooked.resource_version(), before, "nothing was written");
        assert_eq!(pending.operation, Operation::Create);
        assert_eq!(
            pending.name, "",
            "a generated name is not made before admission"
        );
        let shown = pending.object.unwrap();
        assert_eq!(shown["metadata"].get("uid"), None);
        assert_eq!(shown["metadata"].get("creationTimestamp"), None);
        // The webhook's answer: a label.
        let mut made = shown.clone();
        made["metadata"]["labels"] = json!({"by": "webhook"});
        pass.record_mutation(shown, made);
        // The webhook took its time; the write still stamps the time it began at.
        tokio::time::advance(std::time::Duration::from_secs(5)).await;
        hooked.begin_admission(pass);
        let created = hooked.create(&rt, "default", generated, &opts).unwrap();
        assert_eq!(
            created["metadata"]["creationTimestamp"],
            expected["metadata"]["creationTimestamp"]
        );
        assert_eq!(
            created["metadata"]["managedFields"][0]["time"],
            expected["metadata"]["managedFields"][0]["time"]
        );
        assert!(
            hooked.end_admission().is_none(),
            "a committed write ends its admission"
        );
        assert_eq!(created["metadata"]["labels"], json!({"by": "webhook"}));
        // The same uid and name as without webhooks: the stopped run drew nothing.
        assert_eq!(created["metadata"]["uid"], expected["metadata"]["uid"]);
        assert_eq!(created["metadata"]["name"], expected["metadata"]["name"]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_servers_own_writes_and_webhook_configurations_are_never_stopped() {
        let mut store = store();
        with_mutating_webhook(&mut store);
        let rt = store.catalog().lookup("", "v1", "configmaps").unwrap();
        let opts = WriteOptions::default();
        // No admission pass: a write of the server's own.
        assert!(
            store
                .create(&rt, "default", json!({"metadata": {"name": "own"}}), &opts)
                .is_ok()
        );
        store.begin_admission(AdmissionPass::new(facts(&store)));
        let configs = store
            .catalog()
            .lookup(
                "admissionregistration.k8s.io",
                "v1",
                "validatingwebhookconfigurations",
            )
            .unwrap();
        let config = json!({"metadata": {"name": "more"}, "webhooks": []});
        assert!(store.create(&configs, "", config, &opts).is_ok());
    }
}
