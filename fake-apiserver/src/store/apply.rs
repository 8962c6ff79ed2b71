//! Server-side apply and field ownership: the store's side of `semantics::apply`.

use serde_json::{Value, json};

use super::{Store, Subresource, WriteOptions, render};
use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};
use crate::semantics::apply::types::{self, Ty};
use crate::semantics::apply::{ApplyError, ListTypes, apply, conflict_message};
use crate::semantics::strategic::{ListStrategy, list_strategy};

/// How a kind's fields are typed for field ownership: its CRD schema's list types, or the built-in
/// types' structure from kube-apiserver's OpenAPI (the merge keys for a kind it lacks).
pub struct KindLists<'a> {
    rt: &'a ResourceType,
    builtin: Option<&'static Ty>,
}

impl<'a> KindLists<'a> {
    pub fn new(rt: &'a ResourceType) -> Self {
        let builtin = match rt.structural {
            Some(_) => None,
            None => types::root(&rt.api_version(), &rt.kind),
        };
        KindLists { rt, builtin }
    }
}

impl ListTypes for KindLists<'_> {
    fn list_keys(&self, path: &[&str]) -> Option<Vec<String>> {
        if let Some(root) = self.builtin {
            return types::list_keys(types::at(root, path));
        }
        if let Some(schema) = &self.rt.structural {
            return schema.list_keys(path);
        }
        let (field, parents) = path.split_last()?;
        match list_strategy(&self.rt.group, &self.rt.kind, parents, field) {
            ListStrategy::MergeByKey(key) => Some(vec![key.to_string()]),
            ListStrategy::MergePrimitives => Some(Vec::new()),
            ListStrategy::Replace => None,
        }
    }

    fn atomic(&self, path: &[&str]) -> bool {
        self.builtin
            .is_some_and(|root| types::atomic(types::at(root, path)))
    }

    fn is_map(&self, path: &[&str]) -> bool {
        self.builtin
            .is_some_and(|root| types::is_map(types::at(root, path)))
    }

    fn zero(&self, path: &[&str]) -> Option<Value> {
        let (field, parent) = path.split_last()?;
        types::zero(types::at(self.builtin?, parent), field)
    }

    fn key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        types::key_default(types::at(self.builtin?, path), key)
    }
}

pub(crate) fn subresource_name(sub: Subresource) -> &'static str {
    match sub {
        Subresource::Status => "status",
        // A namespace's /finalize writes get an entry of their own, as on kube-apiserver.
        Subresource::Finalize => "finalize",
        Subresource::Scale => "scale",
        _ => "",
    }
}

impl Store {
    /// Record a non-apply write by `manager` in `metadata.managedFields` of `new`.
    pub(super) fn record_manager(
        &self,
        rt: &ResourceType,
        old: Option<&Value>,
        new: &mut Value,
        manager: &str,
        sub: Subresource,
    ) {
        if manager.is_empty() {
            return;
        }
        let now = self.clock.now_rfc3339();
        crate::semantics::apply::record_update(
            old,
            new,
            manager,
            &now,
            &rt.api_version(),
            subresource_name(sub),
            &KindLists::new(rt),
        );
    }

    /// A server-side apply (`application/apply-patch+yaml`): creates the object if it is missing.
    #[allow(clippy::too_many_arguments)]
    pub fn server_side_apply(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        applied: Result<Value, String>,
        force: bool,
        sub: Subresource,
        opts: &WriteOptions,
    ) -> ApiResult<Value> {
        if opts.field_manager.is_empty() {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                vec![crate::error::FieldCause::required(
                    "fieldManager",
                    "is required for apply patch",
                )],
            ));
        }
        let mut applied = applied.map_err(ApiError::bad_request)?;
        if !applied.is_object() || applied.get("metadata").is_some_and(|m| !m.is_object()) {
            return Err(ApiError::bad_request(
                "an apply patch must be an object, with metadata an object",
            ));
        }
        // The applied configuration must be of the URL's kind, named as a Go GroupVersionKind.
        let text = |k: &str| applied.get(k).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind) = (text("apiVersion"), text("kind"));
        if api_version != rt.api_version() || kind != rt.kind {
            let gv = match api_version.split_once('/') {
                Some(_) => api_version.to_string(),
                None => format!("/{api_version}"),
            };
            return Err(ApiError::bad_request(format!(
                "invalid object type: {gv}, Kind={kind}"
            )));
        }
        if applied
            .pointer("/metadata/managedFields")
            .is_some_and(|v| !v.is_null())
        {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        if let Some(field) = undeclared_field(rt, &applied) {
            // structured-merge-diff's typed conversion, unclassified, whatever fieldValidation.
            return Err(ApiError::new(
                500,
                "",
                format!(
                    "failed to create typed patch object (/{name}; {}/{}, Kind={}): .{field}: field not declared in schema",
                    rt.group, rt.version, rt.kind
                ),
            ));
        }
        if sub == Subresource::Scale {
            return Err(ApiError::unsupported_media_type(
                "server-side apply to /scale is not supported by this server: use a merge or JSON patch",
            ));
        }
        if applied["metadata"]["name"]
            .as_str()
            .is_some_and(|n| n != name)
        {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                applied["metadata"]["name"].as_str().unwrap_or("")
            )));
        }
        applied["metadata"]["name"] = json!(name);
        // The main resource ignores status where status is a subresource, and /status takes only it.
        match sub {
            Subresource::Status => {
                let status = applied.get("status").cloned();
                let mut only = json!({"apiVersion": applied["apiVersion"], "kind": applied["kind"], "metadata": {"name": name}});
                if let Some(s) = status {
                    only["status"] = s;
                }
                // A resourceVersion in the body stays a precondition, as on the object: Kueue's
                // status applies carry the version they read, and a 409 tells them that someone
                // wrote since (without it, a write in between was silently undone). A uid is
                // kept too: another object's is refused as an immutable field.
                for field in ["resourceVersion", "uid"] {
                    if let Some(v) = applied["metadata"].get(field).filter(|v| !v.is_null()) {
                        only["metadata"][field] = v.clone();
                    }
                }
                applied = only;
            }
            _ if rt.status => {
                if let Some(m) = applied.as_object_mut() {
                    m.remove("status");
                }
            }
            _ => {}
        }
        let mut live = self.get(rt, ns, name).ok();
        if live.is_none() && sub == Subresource::Status {
            return Err(ApiError::not_found(&rt.group, &rt.plural, name));
        }
        let now = self.clock.now_rfc3339();
        // The first apply to an object nobody manages makes its fields the property of
        // "before-first-apply", as if they had been written by one update.
        if let Some(obj) = live.as_mut()
            && obj
                .pointer("/metadata/managedFields")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty)
        {
            crate::semantics::apply::record_update(
                None,
                obj,
                "before-first-apply",
                &now,
                &rt.api_version(),
                "",
                &KindLists::new(rt),
            );
        }
        let merged = apply(
            live.as_ref(),
            &applied,
            &opts.field_manager,
            force,
            &now,
            &rt.api_version(),
            subresource_name(sub),
            &KindLists::new(rt),
        )
        .map_err(|e| match e {
            ApplyError::Invalid(why) => ApiError::new(422, "Invalid", why),
            ApplyError::Conflicts(conflicts) => {
                let causes: Vec<Value> = conflicts
                    .iter()
                    .map(|c| {
                        let one = conflict_message(std::slice::from_ref(c));
                        let message = one.split_once(": ").map_or(one.clone(), |(_, rest)| rest.rsplit_once(": ").map_or(rest.to_string(), |(m, _)| m.to_string()));
                        json!({"reason": "FieldManagerConflict", "message": message, "field": c.field})
                    })
                    .collect();
                ApiError { details: Some(json!({"causes": causes})), ..ApiError::new(409, "Conflict", conflict_message(&conflicts)) }
            }
        })?;
        // An apply that changes nothing but the time of its managedFields entry is no write at all.
        if let Some(live) = &live
            && without_times(&merged) == without_times(live)
        {
            return Ok(live.clone());
        }
        // The apply already recorded its ownership; the write itself must not record an Update.
        let no_record = WriteOptions {
            field_manager: String::new(),
            ..opts.clone()
        };
        match live {
            None => self.create(rt, ns, merged, &no_record),
            Some(_) => {
                let main_or_status = if sub == Subresource::Status {
                    Subresource::Status
                } else {
                    Subresource::Main
                };
                // As a patch: a uid in the applied configuration is an immutable field (422),
                // not the storage precondition an update's is (409).
                self.update_from(rt, ns, name, merged, main_or_status, &no_record, true)
                    .map(|a| a.into_value(rt))
            }
        }
        .map(|v| render(rt, &v))
    }
}

/// A YAML syntax error as go-yaml words it: `yaml: line N: <problem>`, N being the line of what
/// was being parsed when there is one (go-yaml's context mark), else of the problem.
/// An applied configuration read from its YAML, outside the store's lock (reading is the slow
/// part of a large apply); the error is the whole message of the 400.
pub fn read_applied(body: &[u8]) -> Result<Value, String> {
    crate::semantics::yaml_depth::read(body, go_yaml_error)
        .map_err(|why| format!("error encoding patch: {why}"))
}

fn go_yaml_error(e: &serde_yaml::Error) -> String {
    let text = e.to_string();
    let problem = text
        .find(" at line ")
        .or_else(|| text.find(", while "))
        .map_or(text.as_str(), |i| &text[..i]);
    let context_line = text
        .split_once(", while ")
        .and_then(|(_, ctx)| ctx.rsplit_once(" at line "))
        .and_then(|(_, at)| at.split(' ').next()?.parse::<usize>().ok());
    match context_line.or_else(|| e.location().map(|l| l.line())) {
        Some(line) if line > 0 => format!("yaml: line {line}: {problem}"),
        _ => format!("yaml: {problem}"),
    }
}

/// The first field (dotted path from the root, sorted) of an applied configuration that the
/// kind does not declare; metadata is not looked into.
fn undeclared_field(rt: &ResourceType, applied: &Value) -> Option<String> {
    let mut probe = applied.clone();
    if let Some(m) = probe.as_object_mut() {
        m.insert("metadata".into(), json!({}));
    }
    let unknown = if let Some(check) = rt.decode_check {
        let known = check(&probe).ok()?;
        crate::semantics::meta::unknown_fields(&probe, &known)
    } else if let Some(schema) = &rt.structural {
        schema.prune_reporting(&mut probe)
    } else {
        Vec::new()
    };
    unknown.into_iter().min()
}

/// The object with the times of its managedFields entries left out.
fn without_times(obj: &Value) -> Value {
    let mut copy = obj.clone();
    if let Some(entries) = copy["metadata"]
        .get_mut("managedFields")
        .and_then(Value::as_array_mut)
    {
        for entry in entries.iter_mut().filter_map(Value::as_object_mut) {
            entry.remove("time");
        }
    }
    copy
}
