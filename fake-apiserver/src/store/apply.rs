//! Server-side apply and field ownership: the store's side of `semantics::apply`.

use serde_json::{Value, json};

use super::{Store, Subresource, WriteOptions, render};
use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};
use crate::semantics::apply::{ApplyError, ListTypes, apply, conflict_message};
use crate::semantics::strategic::{ListStrategy, list_strategy};

/// How a kind's lists merge: its CRD schema's list types, or the built-in types' merge keys.
pub struct KindLists<'a>(pub &'a ResourceType);

impl ListTypes for KindLists<'_> {
    fn list_keys(&self, path: &[&str]) -> Option<Vec<String>> {
        if let Some(schema) = &self.0.structural {
            return schema.list_keys(path);
        }
        let (field, parents) = path.split_last()?;
        match list_strategy(&self.0.group, &self.0.kind, parents, field) {
            ListStrategy::MergeByKey(key) => Some(vec![key.to_string()]),
            ListStrategy::MergePrimitives => Some(Vec::new()),
            ListStrategy::Replace => None,
        }
    }
}

fn subresource_name(sub: Subresource) -> &'static str {
    match sub {
        Subresource::Status => "status",
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
            &KindLists(rt),
        );
    }

    /// A server-side apply (`application/apply-patch+yaml`): creates the object if it is missing.
    #[allow(clippy::too_many_arguments)]
    pub fn server_side_apply(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        body: &[u8],
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
        let mut applied: Value = serde_yaml::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
        if !applied.is_object() || applied.get("metadata").is_some_and(|m| !m.is_object()) {
            return Err(ApiError::bad_request(
                "an apply patch must be an object, with metadata an object",
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
                applied = only;
            }
            _ if rt.status => {
                if let Some(m) = applied.as_object_mut() {
                    m.remove("status");
                }
            }
            _ => {}
        }
        let live = self.get(rt, ns, name).ok();
        if live.is_none() && sub == Subresource::Status {
            return Err(ApiError::not_found(&rt.group, &rt.plural, name));
        }
        let now = self.clock.now_rfc3339();
        let merged = apply(
            live.as_ref(),
            &applied,
            &opts.field_manager,
            force,
            &now,
            &rt.api_version(),
            subresource_name(sub),
            &KindLists(rt),
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
                self.update(rt, ns, name, merged, main_or_status, &no_record)
            }
        }
        .map(|v| render(rt, &v))
    }
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
