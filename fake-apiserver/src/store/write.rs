//! Writes: create, update (main resource and `/status`), patch, delete, deletecollection.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::webhook_points::Operation;
use super::{
    Answer, ChangeType, DeleteOptions, FieldValidation, ListOptions, ObjKey, Propagation, Store,
    Stored, Subresource, WriteOptions, render,
};
use crate::catalog::{Lifecycle, ResourceType, crd_types};
use crate::error::{ApiError, ApiResult, FieldCause, success_status};
use crate::semantics::access_review::Reviewer;
use crate::semantics::meta::{
    finalizers, is_deleting, owner_uids, removable, remove_fields, set_finalizers, unknown_fields,
    validate_metadata,
};
use crate::semantics::names::MAX_GENERATE_NAME_PREFIX;
use crate::semantics::patch::{PatchKind, apply_patch};
use crate::semantics::pod_spec;
use crate::semantics::rbac::User;
use crate::semantics::validation;

/// The answer to a delete: the object when it still exists (finalizers pending) or the kind returns
/// deleted objects, else a Success Status.
#[derive(Debug)]
pub enum Deleted {
    Pending(Value),
    Gone(Value),
}

fn check_type(rt: &ResourceType, obj: &Value) -> ApiResult<()> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(format!(
            "the object provided is not a valid {}: expected a JSON object",
            rt.kind
        )));
    }
    if let Some(api_version) = obj.get("apiVersion").and_then(Value::as_str)
        && api_version != rt.api_version()
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({})",
            rt.api_version()
        )));
    }
    if let Some(kind) = obj.get("kind").and_then(Value::as_str)
        && kind != rt.kind
    {
        return Err(ApiError::bad_request(format!(
            "the kind in the data ({kind}) does not match the expected kind ({})",
            rt.kind
        )));
    }
    if obj.get("metadata").is_some_and(|m| !m.is_object()) {
        // A built-in kind's decoder names the field and its Go type.
        if let crate::catalog::SchemaSource::Builtin(schema) = &rt.schema
            && let Some(why) = crate::semantics::go_decode::unmarshal_error(*schema, obj)
        {
            return Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: {why}",
                rt.kind, rt.version, rt.kind
            )));
        }
        return Err(ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): metadata must be an object",
            rt.kind
        )));
    }
    Ok(())
}

/// Whether two versions differ outside metadata (and outside status, when status is a
/// subresource): what bumps `metadata.generation`. Compared field by field, without copies.
fn spec_differs(old: &Value, new: &Value, status_subresource: bool) -> bool {
    let empty = serde_json::Map::new();
    let (a, b) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let counted = |k: &String| k != "metadata" && !(status_subresource && k == "status");
    a.keys().filter(|k| counted(k)).count() != b.keys().filter(|k| counted(k)).count()
        || a.iter()
            .filter(|(k, _)| counted(k))
            .any(|(k, v)| b.get(k) != Some(v))
}

/// What a `/status` write stores: the old object with the incoming status, and the incoming
/// managedFields (the one piece of metadata a status write carries). The rest of the incoming body
/// is ignored; where it equals the old object (as it does when a client sends back what it read)
/// it is taken instead of copied.
fn status_write(old: &Value, incoming: Value) -> Value {
    let (Value::Object(old_map), Value::Object(mut sent)) = (old, incoming) else {
        return old.clone();
    };
    let mut out = Map::new();
    for (k, v) in old_map {
        match k.as_str() {
            "status" => {}
            "metadata" => {
                let mut meta = Map::new();
                if let Value::Object(m) = v {
                    for (mk, mv) in m.iter().filter(|(mk, _)| *mk != "managedFields") {
                        meta.insert(mk.clone(), mv.clone());
                    }
                }
                let sent_managed = sent
                    .get_mut("metadata")
                    .and_then(Value::as_object_mut)
                    .and_then(|m| m.remove("managedFields"))
                    .filter(|m| !m.is_null());
                if let Some(managed) = sent_managed.or_else(|| v.get("managedFields").cloned()) {
                    meta.insert("managedFields".into(), managed);
                }
                out.insert(k.clone(), Value::Object(meta));
            }
            _ => {
                let same = sent.remove(k).filter(|s| s == v);
                out.insert(k.clone(), same.unwrap_or_else(|| v.clone()));
            }
        }
    }
    if let Some(status) = sent.remove("status") {
        out.insert("status".into(), status);
    }
    Value::Object(out)
}

impl Store {
    fn namespace_check(&self, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<()> {
        if !rt.namespaced {
            return Ok(());
        }
        let Some(ns_type) = self.catalog.lookup("", "v1", "namespaces") else {
            return Ok(());
        };
        let key = Store::key(&ns_type, "", ns);
        match self.objects.get(&key) {
            None => Err(ApiError::not_found("", "namespaces", ns)),
            Some(n) if n.is_deleting() => {
                let mut err = ApiError::forbidden(
                    &rt.group,
                    &rt.plural,
                    name,
                    &format!(
                        "unable to create new content in namespace {ns} because it is being terminated"
                    ),
                );
                // kube-apiserver's NamespaceLifecycle admission names the cause for clients.
                if let Some(details) = err.details.as_mut() {
                    details["causes"] = json!([{
                        "reason": "NamespaceTerminating",
                        "message": format!("namespace {ns} is being terminated"),
                        "field": "metadata.namespace",
                    }]);
                }
                Err(err)
            }
            Some(_) => Ok(()),
        }
    }

    /// Name, namespace and type of a request body checked against the URL.
    fn place(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        obj: &mut Value,
        validation: FieldValidation,
    ) -> ApiResult<()> {
        check_type(rt, obj)?;
        if rt.namespaced {
            match obj["metadata"]["namespace"].as_str() {
                Some(n) if !n.is_empty() && n != ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ));
                }
                _ => obj["metadata"]["namespace"] = json!(ns),
            }
        } else if let Some(m) = obj["metadata"].as_object_mut() {
            m.remove("namespace");
        }
        obj["apiVersion"] = json!(rt.api_version());
        obj["kind"] = json!(rt.kind);
        // Like the real server decoding into its Go types: a wrongly typed field is refused, whether
        // it came in a create, an update or a patch.
        // Fields the kind does not have: built-ins lose what their typed form cannot hold, custom
        // resources what their schema prunes. Strict refuses them, Warn names them in a header.
        let cannot = |e: &str| {
            ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: {e}",
                rt.kind, rt.version, rt.kind
            ))
        };
        if let crate::catalog::SchemaSource::Builtin(schema) = &rt.schema {
            crate::semantics::go_decode::zero_nulls(*schema, obj);
        }
        if let Some(e) = validation::microtime_error(&rt.group, &rt.kind, obj) {
            return Err(cannot(&e));
        }
        let unknown = if let Some(check) = rt.decode_check {
            // Worded as Go's decoder words it where the schema finds the field.
            let known = check(obj).map_err(|e| match &rt.schema {
                crate::catalog::SchemaSource::Builtin(schema) => {
                    cannot(&crate::semantics::go_decode::unmarshal_error(*schema, obj).unwrap_or(e))
                }
                crate::catalog::SchemaSource::Custom(_) => cannot(&e),
            })?;
            let unknown = unknown_fields(obj, &known);
            remove_fields(obj, &unknown);
            unknown
        } else if let Some(schema) = &rt.structural {
            let unknown = schema.prune_reporting(obj);
            schema.apply_defaults(obj);
            unknown
        } else {
            Vec::new()
        };
        if !unknown.is_empty() {
            let named: Vec<String> = unknown
                .iter()
                .map(|f| format!("unknown field \"{f}\""))
                .collect();
            match validation {
                FieldValidation::Strict => {
                    return Err(cannot(&format!(
                        "strict decoding error: {}",
                        named.join(", ")
                    )));
                }
                FieldValidation::Warn => self.warnings.extend(named),
                FieldValidation::Ignore => {}
            }
        }
        Ok(())
    }

    /// The stored objects of `rt`'s resource, for validation that looks at the others.
    fn objects_of<'s>(
        &'s self,
        rt: &'s ResourceType,
    ) -> impl Iterator<Item = std::sync::Arc<Value>> + 's {
        self.objects
            .iter()
            .filter(move |(k, _)| k.storage == rt.storage)
            .map(|(_, s)| s.object())
    }

    fn invalid(rt: &ResourceType, obj: &Value, causes: Vec<FieldCause>) -> ApiError {
        ApiError::invalid(
            &rt.group,
            &rt.kind,
            obj["metadata"]["name"].as_str().unwrap_or(""),
            causes,
        )
    }

    pub fn create(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        obj: Value,
        opts: &WriteOptions,
    ) -> ApiResult<Value> {
        self.create_answer(rt, ns, obj, opts)
            .map(|a| a.into_value(rt))
    }

    /// [`Store::create`], answering with the committed change.
    pub fn create_answer(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        mut obj: Value,
        opts: &WriteOptions,
    ) -> ApiResult<Answer> {
        if obj.get("metadata").is_none() && obj.is_object() {
            obj["metadata"] = json!({});
        }
        self.place(rt, ns, &mut obj, opts.field_validation)?;
        if rt.create_only {
            // Reviews and the like are answered, never stored.
            if let Some(answer) = rt.behavior.review {
                let admin = User::admin();
                let reviewer = Reviewer {
                    user: opts.requester.as_ref().unwrap_or(&admin),
                    policy: &*self,
                };
                answer(&mut obj, &reviewer)?;
            }
            return Ok(Answer::Uncommitted(obj));
        }
        let mut obj = match rt.behavior.convert {
            Some(c) => (c.to_storage)(&obj),
            None => obj,
        };
        if let Some(defaults) = rt.behavior.decode_defaults {
            defaults(&mut obj);
        }
        let generated_name = obj["metadata"]["name"].as_str().unwrap_or("").is_empty();
        if generated_name
            && let Some(prefix) = obj["metadata"]["generateName"]
                .as_str()
                .filter(|p| !p.is_empty())
        {
            let mut base = prefix.to_string();
            while base.len() > MAX_GENERATE_NAME_PREFIX {
                base.pop();
            }
            let name = format!("{base}{}", self.name_suffix());
            obj["metadata"]["name"] = json!(name);
        }
        let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
        validation::prepare(&rt.group, &rt.kind, &mut obj, None);
        let uid = self.new_uid();
        if let Some(meta) = obj["metadata"].as_object_mut() {
            for server_owned in [
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "resourceVersion",
            ] {
                meta.remove(server_owned);
            }
            // A client's create records its own ownership below; an apply (no manager here) has
            // already computed managedFields.
            if !opts.field_manager.is_empty() {
                meta.remove("managedFields");
            }
            meta.insert("uid".into(), json!(uid));
            meta.insert("creationTimestamp".into(), json!(self.clock.now_rfc3339()));
            // Only the kinds whose strategy tracks generation start it at 1; the others keep
            // whatever the client sent (usually nothing), as kube-apiserver does.
            if crate::catalog::has_generation(rt) {
                meta.insert("generation".into(), json!(1));
            }
        }
        if rt.status
            && !rt.behavior.keep_status_on_create
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        let mut next_ip = self.next_cluster_ip;
        if let Some(defaults) = rt.behavior.defaults {
            defaults(
                &mut obj,
                &mut crate::catalog::DefaultCtx {
                    uid: &uid,
                    name: &name,
                    next_cluster_ip: &mut next_ip,
                },
            );
        }
        self.record_manager(rt, None, &mut obj, &opts.field_manager, Subresource::Main);
        // The status the registry sets is no writer's.
        if rt.behavior.lifecycle == Lifecycle::CustomResourceDefinition {
            obj["status"] = crate::catalog::crd_created_status(&obj);
        }
        // Admission, then validation: the built-in plugins, the mutating webhooks (which may
        // make an invalid object valid), validation, the validating webhooks.
        self.admit(rt, None, &mut obj)?;
        self.mutating_point(rt, Operation::Create, None, &mut obj, generated_name)?;
        let mut causes = validate_metadata(&obj, rt.behavior.name_rule);
        causes.extend(validation::validate(
            &rt.group,
            &rt.kind,
            &obj,
            None,
            &mut self.objects_of(rt),
        ));
        causes.extend(pod_spec::validate(&rt.group, &rt.kind, &obj));
        if let Some(schema) = &rt.structural {
            causes.extend(schema.validate(&obj, None));
        }
        causes.extend(super::scale::replicas_causes(rt, &obj));
        if !causes.is_empty() {
            return Err(Self::invalid(rt, &obj, causes));
        }
        self.namespace_check(rt, ns, &name)?;
        let key = Store::key(rt, ns, &name);
        if self.objects.contains_key(&key) {
            return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
        }
        if rt.behavior.lifecycle == Lifecycle::CustomResourceDefinition {
            self.check_crd(&obj)?;
        }
        self.validating_point(rt, Operation::Create, None, Some(&obj))?;
        if opts.dry_run {
            return Ok(Answer::Uncommitted(render(rt, &obj)));
        }
        self.next_cluster_ip = next_ip;
        self.admission_over();
        let change = self.commit_change(key.clone(), obj, ChangeType::Added);
        self.after_write(&key, &change.object);
        self.settle();
        Ok(Answer::Committed(change))
    }

    fn check_crd(&self, crd: &Value) -> ApiResult<()> {
        let types = crd_types(crd).map_err(|causes| {
            ApiError::invalid(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                crd["metadata"]["name"].as_str().unwrap_or(""),
                causes,
            )
        })?;
        if let Some(t) = types.first()
            && self.catalog.is_builtin(&t.group, &t.plural)
        {
            return Err(ApiError::invalid(
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                crd["metadata"]["name"].as_str().unwrap_or(""),
                vec![FieldCause::invalid(
                    "spec.group",
                    &t.group,
                    "may not shadow a built-in resource",
                )],
            ));
        }
        Ok(())
    }

    /// Side effects of a committed create or update: CRDs serve their kinds, namespaces get their
    /// default ServiceAccount, objects whose owners are all gone are collected.
    fn after_write(&mut self, key: &ObjKey, stored: &Value) {
        let Some(rt) = self.catalog.preferred_for_storage(&key.storage) else {
            return;
        };
        match rt.behavior.lifecycle {
            Lifecycle::CustomResourceDefinition if !is_deleting(stored) => {
                if let Ok(types) = crd_types(stored) {
                    self.catalog.register_crd(&key.name, types);
                }
                // kube-apiserver's naming and establishing controllers (store/lifecycle.rs).
                self.pending.insert(key.clone());
            }
            Lifecycle::Namespace => {
                self.create_default_service_account(&key.name);
                self.publish_root_ca(&key.name);
            }
            _ => {}
        }
        if is_deleting(stored) {
            self.pending.insert(key.clone());
        }
        let owners = owner_uids(stored);
        if !owners.is_empty() && owners.iter().all(|uid| !self.uids.contains_key(uid)) {
            // Owners that never existed or are already gone: the garbage collector's business.
            self.gone_owners.extend(owners);
        }
    }

    fn create_default_service_account(&mut self, ns: &str) {
        let Some(sa) = self.catalog.lookup("", "v1", "serviceaccounts") else {
            return;
        };
        let key = Store::key(&sa, ns, "default");
        if !self.objects.contains_key(&key) {
            let _ = self.create(
                &sa,
                ns,
                json!({"metadata": {"name": "default"}}),
                &WriteOptions::default(),
            );
        }
    }

    pub fn update(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        obj: Value,
        sub: Subresource,
        opts: &WriteOptions,
    ) -> ApiResult<Value> {
        self.update_answer(rt, ns, name, obj, sub, opts)
            .map(|a| a.into_value(rt))
    }

    /// [`Store::update`], answering with the committed change.
    pub fn update_answer(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        obj: Value,
        sub: Subresource,
        opts: &WriteOptions,
    ) -> ApiResult<Answer> {
        self.update_from(rt, ns, name, obj, sub, opts, false)
    }

    /// An update (`via_patch`: the result of a patch or an apply, whose uid is no precondition
    /// but an immutable field).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn update_from(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        mut obj: Value,
        sub: Subresource,
        opts: &WriteOptions,
        via_patch: bool,
    ) -> ApiResult<Answer> {
        if sub == Subresource::Scale {
            return self
                .update_scale(rt, ns, name, &obj, opts)
                .map(Answer::Uncommitted);
        }
        if rt.create_only {
            return Err(ApiError::method_not_allowed(format!(
                "{} only supports create",
                rt.plural
            )));
        }
        self.place(rt, ns, &mut obj, opts.field_validation)?;
        let body_name = obj["metadata"]["name"].as_str().unwrap_or("");
        if body_name.is_empty() {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({name} based on URL) was undeterminable: name must be provided"
            )));
        }
        if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let key = Store::key(rt, ns, name);
        let Some(old) = self.objects.get(&key).map(Stored::object) else {
            return Err(ApiError::not_found(&rt.group, &rt.plural, name));
        };
        let requested_rv = obj["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string();
        // The storage layer parses it first, and answers a malformed one as an unclassified 500.
        if !requested_rv.is_empty()
            && let Err(e) = crate::semantics::go_decode::parse_uint(&requested_rv)
        {
            return Err(ApiError::new(500, "", e));
        }
        if !requested_rv.is_empty()
            && requested_rv != old["metadata"]["resourceVersion"].as_str().unwrap_or("")
        {
            return Err(ApiError::stale(&rt.group, &rt.plural, name));
        }
        // Custom resources allow no unconditional update; the real server names the resource
        // (not the kind) in this error.
        if rt.crd.is_some() && requested_rv.is_empty() {
            return Err(ApiError::invalid(
                &rt.group,
                &rt.plural,
                name,
                vec![FieldCause {
                    reason: crate::error::CauseReason::Invalid,
                    field: "metadata.resourceVersion".into(),
                    message: "Invalid value: 0: must be specified for an update".into(),
                }],
            ));
        }
        // A uid in the body is a precondition of the storage layer, answered in its words.
        let want_uid = obj["metadata"]["uid"].as_str().unwrap_or("");
        let have_uid = old["metadata"]["uid"].as_str().unwrap_or("");
        if via_patch && !want_uid.is_empty() && want_uid != have_uid {
            return Err(Self::invalid(
                rt,
                &obj,
                vec![FieldCause::invalid(
                    "metadata.uid",
                    want_uid,
                    "field is immutable",
                )],
            ));
        }
        if !want_uid.is_empty() && want_uid != have_uid {
            let prefix = if self.catalog.is_builtin(&rt.group, &rt.plural) {
                rt.plural.clone()
            } else {
                format!("{}/{}", rt.group, rt.plural)
            };
            let key = if rt.namespaced {
                format!("/registry/{prefix}/{ns}/{name}")
            } else {
                format!("/registry/{prefix}/{name}")
            };
            return Err(ApiError::conflict(
                &rt.group,
                &rt.plural,
                name,
                &format!(
                    "StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {want_uid}, UID in object meta: {have_uid}"
                ),
            ));
        }
        let mut incoming = match rt.behavior.convert {
            Some(c) => (c.to_storage)(&obj),
            None => obj,
        };
        if let Some(defaults) = rt.behavior.decode_defaults {
            defaults(&mut incoming);
        }
        self.admit(rt, Some(&old), &mut incoming)?;
        let new = self.merge_update(rt, &old, incoming, sub, &opts.field_manager)?;
        self.write_update(rt, key, &old, new, opts)
    }

    /// The object an update produces: the subresource split, the writer's fields recorded,
    /// server-owned metadata kept. In kube-apiserver's order: managedFields record what the
    /// client's object changes, before the mutating webhooks, which see the object as the client
    /// sent it (its uid and creation time only if the client sent them); the registry then puts
    /// back the metadata the server owns.
    fn merge_update(
        &mut self,
        rt: &ResourceType,
        old: &Value,
        incoming: Value,
        sub: Subresource,
        manager: &str,
    ) -> ApiResult<Value> {
        let mut new = match sub {
            Subresource::Status => status_write(old, incoming),
            Subresource::Scale => {
                return Err(ApiError::internal("scale writes go through update_scale"));
            }
            Subresource::Finalize => {
                let mut n = old.clone();
                match incoming["spec"]
                    .get("finalizers")
                    .filter(|f| f.as_array().is_some_and(|a| !a.is_empty()))
                {
                    Some(f) => n["spec"]["finalizers"] = f.clone(),
                    // An empty list is left out, as the real server's JSON does.
                    None => {
                        if let Some(spec) = n["spec"].as_object_mut() {
                            spec.remove("finalizers");
                        }
                    }
                }
                n
            }
            Subresource::Main => {
                let mut n = incoming;
                if rt.behavior.lifecycle == Lifecycle::Namespace {
                    // A namespace's spec.finalizers only change through /finalize.
                    match old["spec"].get("finalizers") {
                        Some(f) => n["spec"]["finalizers"] = f.clone(),
                        None => {
                            if let Some(spec) = n["spec"].as_object_mut() {
                                spec.remove("finalizers");
                            }
                        }
                    }
                }
                if rt.status {
                    match old.get("status") {
                        Some(s) => n["status"] = s.clone(),
                        None => {
                            if let Some(m) = n.as_object_mut() {
                                m.remove("status");
                            }
                        }
                    }
                }
                n
            }
        };
        // managedFields a write leaves out are kept; a write that sends them (an apply, or a client
        // resetting them) sets them.
        if new["metadata"]
            .get("managedFields")
            .is_none_or(Value::is_null)
        {
            match old["metadata"].get("managedFields") {
                Some(v) => new["metadata"]["managedFields"] = v.clone(),
                None => {
                    if let Some(m) = new["metadata"].as_object_mut() {
                        m.remove("managedFields");
                    }
                }
            }
        }
        if is_deleting(old) {
            let before = finalizers(old);
            let added: Vec<String> = finalizers(&new)
                .into_iter()
                .filter(|f| !before.contains(f))
                .collect();
            if !added.is_empty() {
                let quoted: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
                return Err(Self::invalid(
                    rt,
                    old,
                    vec![FieldCause::forbidden(
                        "metadata.finalizers",
                        &format!(
                            "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                            quoted.join(", ")
                        ),
                    )],
                ));
            }
        }
        if sub == Subresource::Main {
            validation::decode_conversions(&rt.group, &rt.kind, &mut new);
        }
        self.record_manager(rt, Some(old), &mut new, manager, sub);
        // The mutating webhooks see the merged object, and validation what they made of it.
        self.mutating_point(rt, Operation::Update, Some(old), &mut new, false)?;
        copy_metadata(
            &mut new,
            old,
            &[
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "namespace",
                "name",
            ],
        );
        if sub == Subresource::Main {
            validation::prepare(&rt.group, &rt.kind, &mut new, Some(old));
        }
        let mut causes = validate_metadata(&new, rt.behavior.name_rule);
        if sub == Subresource::Main {
            causes.extend(validation::validate(
                &rt.group,
                &rt.kind,
                &new,
                Some(old),
                &mut self.objects_of(rt),
            ));
        }
        if sub == Subresource::Status {
            causes.extend(validation::validate_status(&rt.group, &rt.kind, &new, old));
        }
        causes.extend(pod_spec::validate(&rt.group, &rt.kind, &new));
        if let Some(schema) = &rt.structural {
            causes.extend(schema.validate(&new, Some(old)));
        }
        causes.extend(super::scale::replicas_causes(rt, &new));
        if !causes.is_empty() {
            return Err(Self::invalid(rt, &new, causes));
        }
        if rt.behavior.lifecycle == Lifecycle::CustomResourceDefinition && sub == Subresource::Main
        {
            self.check_crd(&new)?;
            if new["spec"]["scope"] != old["spec"]["scope"] {
                let scope = new["spec"]["scope"].as_str().unwrap_or("");
                return Err(Self::invalid(
                    rt,
                    &new,
                    vec![FieldCause::invalid(
                        "spec.scope",
                        scope,
                        "field is immutable",
                    )],
                ));
            }
            crate::catalog::crd_updated_status(old, &mut new);
        }
        if crate::catalog::has_generation(rt) && spec_differs(old, &new, rt.status) {
            let generation = old["metadata"]["generation"].as_i64().unwrap_or(0) + 1;
            new["metadata"]["generation"] = json!(generation);
        }
        Ok(new)
    }

    /// Commit an update (or nothing, if it changes nothing), finishing a deletion whose last
    /// finalizer it removed.
    fn write_update(
        &mut self,
        rt: &ResourceType,
        key: ObjKey,
        old: &Value,
        mut new: Value,
        opts: &WriteOptions,
    ) -> ApiResult<Answer> {
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
        if &new == old {
            // Admitted all the same: kube-apiserver finds the write changes nothing only when it
            // stores it.
            self.validating_point(rt, Operation::Update, Some(old), Some(&new))?;
            return Ok(Answer::Uncommitted(render(rt, old)));
        }
        self.validating_point(rt, Operation::Update, Some(old), Some(&new))?;
        if opts.dry_run {
            return Ok(Answer::Uncommitted(render(rt, &new)));
        }
        self.admission_over();
        if is_deleting(&new) && removable(&new) {
            // As kube-apiserver: the update is never stored; the object is deleted as it was last
            // stored (watchers see that state) and the answer is the update at the previous
            // resourceVersion.
            self.commit_change(key.clone(), old.clone(), ChangeType::Deleted);
            self.settle();
            return Ok(Answer::Uncommitted(render(rt, &new)));
        }
        let change = self.commit_change(key.clone(), new, ChangeType::Modified);
        self.after_write(&key, &change.object);
        self.settle();
        Ok(Answer::Committed(change))
    }

    /// A JSON, merge or strategic merge patch, answering with the committed change. The arguments
    /// mirror the request: kind, namespace, name, patch type, body, subresource, options.
    #[allow(clippy::too_many_arguments)]
    pub fn patch_answer(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        kind: PatchKind,
        body: &[u8],
        sub: Subresource,
        opts: &WriteOptions,
    ) -> ApiResult<Answer> {
        if sub == Subresource::Scale {
            return self
                .patch_scale(rt, ns, name, kind, body, opts)
                .map(Answer::Uncommitted);
        }
        if rt.create_only {
            return Err(ApiError::method_not_allowed(format!(
                "{} only supports create",
                rt.plural
            )));
        }
        crate::semantics::patch::ensure_supported(kind, rt.crd.is_some())?;
        let key = Store::key(rt, ns, name);
        let Some(old) = self.objects.get(&key).map(Stored::object) else {
            return Err(ApiError::not_found(&rt.group, &rt.plural, name));
        };
        let mut patched = apply_patch(kind, &rt.group, &rt.kind, &render(rt, &old), body)?;
        crate::semantics::patch::decode_patched(rt, &mut patched, opts.field_validation)?;
        self.update_from(rt, ns, name, patched, sub, opts, true)
    }

    pub fn delete(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> ApiResult<Deleted> {
        if rt.create_only {
            return Err(ApiError::method_not_allowed(format!(
                "{} only supports create",
                rt.plural
            )));
        }
        if rt.behavior.lifecycle == Lifecycle::Namespace && PROTECTED_NAMESPACES.contains(&name) {
            return Err(ApiError::forbidden(
                &rt.group,
                &rt.plural,
                name,
                "this namespace may not be deleted",
            ));
        }
        let key = Store::key(rt, ns, name);
        let Some(old) = self.objects.get(&key).map(Stored::object) else {
            return Err(ApiError::not_found(&rt.group, &rt.plural, name));
        };
        let uid = old["metadata"]["uid"].as_str().unwrap_or("").to_string();
        if let Some(want) = &opts.precondition_uid
            && *want != uid
        {
            // The real registry names the kind here, not the resource.
            return Err(ApiError::conflict(
                &rt.group,
                &rt.kind,
                name,
                &format!(
                    "the UID in the precondition ({want}) does not match the UID in record ({uid}). The object might have been deleted and then recreated"
                ),
            ));
        }
        if let Some(want) = &opts.precondition_rv {
            let have = old["metadata"]["resourceVersion"].as_str().unwrap_or("");
            if want != have {
                return Err(ApiError::conflict(
                    &rt.group,
                    &rt.kind,
                    name,
                    &format!(
                        "the ResourceVersion in the precondition ({want}) does not match the ResourceVersion in record ({have}). The object might have been modified"
                    ),
                ));
            }
        }
        // Webhooks are shown the object the delete removes (mutating ones may not change it).
        self.delete_mutating_point(rt, &old)?;
        self.validating_point(rt, Operation::Delete, Some(&*old), None)?;
        if opts.dry_run {
            let (marked, removed) = self.marked_for_deletion(&key, &old, opts.propagation);
            return Ok(match marked {
                // Held: answered as the delete would have marked it.
                Some(obj) if !removed => Deleted::Pending(render(rt, &obj)),
                None => Deleted::Pending(render(rt, &old)),
                _ if rt.behavior.returns_deleted_object => {
                    Deleted::Gone(render(rt, &graceful_answer(rt, &old, &self.clock)))
                }
                _ => Deleted::Gone(success_status(&rt.group, &rt.plural, name, &uid)),
            });
        }
        self.admission_over();
        let had_finalizers = !finalizers(&old).is_empty();
        let result = self.delete_key_with(&key, opts.propagation);
        let deleted_at = self.rv;
        let held = self.objects.contains_key(&key);
        self.settle();
        Ok(match result {
            // Held at delete time (finalizers, a namespace): answered with the marked object, even if
            // the cleanup that followed already removed it.
            Some(obj) if held => Deleted::Pending(render(rt, &obj)),
            // Deleted outright, the object comes back at the deletion's resourceVersion, as etcd
            // returns it.
            Some(obj) if rt.behavior.returns_deleted_object => {
                let mut obj = (*obj).clone();
                if !had_finalizers && !is_pod(rt) {
                    obj["metadata"]["resourceVersion"] = json!(deleted_at.to_string());
                }
                Deleted::Gone(render(rt, &obj))
            }
            _ => Deleted::Gone(success_status(&rt.group, &rt.plural, name, &uid)),
        })
    }

    /// Delete one object with a propagation policy: mark it (finalizers pending) or remove it.
    /// Returns its last state.
    pub(super) fn delete_key(
        &mut self,
        key: &ObjKey,
        propagation: Propagation,
    ) -> Option<Arc<Value>> {
        self.delete_key_with(key, Some(propagation))
    }

    /// [`Store::delete_key`] with the policy a client may leave out (finalizers then stay as they
    /// are).
    fn delete_key_with(
        &mut self,
        key: &ObjKey,
        propagation: Option<Propagation>,
    ) -> Option<Arc<Value>> {
        let old = self.objects.get(key).map(Stored::object)?;
        let (marked, removed) = self.marked_for_deletion(key, &old, propagation);
        let Some(new) = marked else {
            return Some(old);
        };
        if removed {
            let pod = self
                .catalog
                .preferred_for_storage(&key.storage)
                .filter(|rt| is_pod(rt) && !is_deleting(&old));
            if pod.is_some() {
                // A Pod's graceful delete stores it marked first, then removes it.
                let marked = self.commit(
                    key.clone(),
                    graceful_mark(&new, &self.clock),
                    ChangeType::Modified,
                );
                self.commit(key.clone(), (*marked).clone(), ChangeType::Deleted);
                return Some(marked);
            }
            // Removed at once: watchers see the object as it was last stored.
            self.commit(key.clone(), (*old).clone(), ChangeType::Deleted);
            let mut gone = new;
            gone["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"].clone();
            return Some(Arc::new(gone));
        }
        let stored = self.commit(key.clone(), new, ChangeType::Modified);
        self.pending.insert(key.clone());
        Some(stored)
    }

    /// What a delete makes of `old`: the object it would store (None: nothing changes) and
    /// whether it is removed at once (no finalizers left) rather than marked.
    fn marked_for_deletion(
        &self,
        key: &ObjKey,
        old: &Value,
        propagation: Option<Propagation>,
    ) -> (Option<Value>, bool) {
        let mut list = finalizers(old);
        // As kube-apiserver's garbage collection finalizers: the policy asked for replaces the
        // other one; Background takes both out (an object held only by one of them then goes).
        let (add, drop): (Option<&str>, &[&str]) = match propagation {
            Some(Propagation::Orphan) => (Some("orphan"), &["foregroundDeletion"]),
            Some(Propagation::Foreground) => (Some("foregroundDeletion"), &["orphan"]),
            Some(Propagation::Background) => (None, &["orphan", "foregroundDeletion"]),
            None => (None, &[]),
        };
        list.retain(|f| !drop.contains(&f.as_str()));
        if let Some(f) = add
            && !list.iter().any(|x| x == f)
        {
            list.push(f.to_string());
        }
        let lifecycle = self
            .catalog
            .preferred_for_storage(&key.storage)
            .map(|rt| rt.behavior.lifecycle);
        let namespace_held = lifecycle == Some(Lifecycle::Namespace);
        if lifecycle == Some(Lifecycle::CustomResourceDefinition)
            && !list.iter().any(|f| f == CRD_CLEANUP)
        {
            list.push(CRD_CLEANUP.to_string());
        }
        let mut new = old.clone();
        set_finalizers(&mut new, &list);
        if list.is_empty() && !namespace_held {
            return (Some(new), true);
        }
        if is_deleting(old) {
            return ((new != *old).then_some(new), false);
        }
        if lifecycle == Some(Lifecycle::CustomResourceDefinition) {
            self.mark_crd_deleting(&mut new);
            return (Some(new), false);
        }
        new["metadata"]["deletionTimestamp"] = json!(self.clock.now_rfc3339());
        if namespace_held {
            // A Namespace is not deleted gracefully: it gets no grace period, nor a new generation.
            new["status"]["phase"] = json!("Terminating");
            return (Some(new), false);
        }
        new["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        // The real server bumps generation when it marks an object, so controllers that filter
        // on generation changes see the deletion.
        if let Some(g) = new["metadata"]["generation"].as_i64().filter(|g| *g > 0) {
            new["metadata"]["generation"] = json!(g + 1);
        }
        (Some(new), false)
    }

    pub fn delete_collection(
        &mut self,
        rt: &ResourceType,
        ns: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> ApiResult<Value> {
        let matching = self.list(
            rt,
            ns,
            &ListOptions {
                limit: None,
                continue_token: None,
                ..list.clone()
            },
        )?;
        let mut items = Vec::new();
        for item in matching.items {
            let name = item["metadata"]["name"].as_str().unwrap_or("").to_string();
            let item_ns = item["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string();
            match self.delete(rt, &item_ns, &name, opts)? {
                Deleted::Pending(obj) => items.push(obj),
                Deleted::Gone(_) => items.push(item),
            }
        }
        Ok(json!({
            "kind": rt.list_kind,
            "apiVersion": rt.api_version(),
            "metadata": {"resourceVersion": self.rv.to_string()},
            "items": items,
        }))
    }
}

/// Namespaces the real server refuses to delete.
const PROTECTED_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

pub(super) const CRD_CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Give `to` the metadata `fields` of `from`, as `from` has them (a field it lacks is removed).
pub(super) fn copy_metadata(to: &mut Value, from: &Value, fields: &[&str]) {
    for field in fields {
        match from["metadata"].get(*field) {
            Some(v) => to["metadata"][*field] = v.clone(),
            None => {
                if let Some(m) = to["metadata"].as_object_mut() {
                    m.remove(*field);
                }
            }
        }
    }
}

fn is_pod(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "pods"
}

/// A Pod as its graceful delete marks it when no grace is left (the fake has no kubelet to wait
/// for): deletionTimestamp, deletionGracePeriodSeconds 0 and a new generation.
fn graceful_mark(obj: &Value, clock: &crate::clock::Clock) -> Value {
    let mut marked = obj.clone();
    marked["metadata"]["deletionTimestamp"] = json!(clock.now_rfc3339());
    marked["metadata"]["deletionGracePeriodSeconds"] = json!(0);
    if let Some(g) = marked["metadata"]["generation"].as_i64().filter(|g| *g > 0) {
        marked["metadata"]["generation"] = json!(g + 1);
    }
    marked
}

/// The answer to a dry-run delete that would remove the object at once: a Pod as its graceful
/// delete would mark it.
fn graceful_answer(rt: &ResourceType, obj: &Value, clock: &crate::clock::Clock) -> Value {
    if is_pod(rt) && !is_deleting(obj) {
        graceful_mark(obj, clock)
    } else {
        obj.clone()
    }
}
