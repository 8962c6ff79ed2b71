//! The `/scale` subresource: an `autoscaling/v1` Scale view of a kind's replicas, and writes through it.

use serde_json::{Value, json};

use super::{Store, Subresource, WriteOptions};
use crate::catalog::{ResourceType, ScalePaths};
use crate::error::{ApiError, ApiResult};
use crate::semantics::patch::{PatchKind, apply_patch};

/// The object keys of a simple JSON path like `.spec.replicas`.
fn keys(path: &str) -> Vec<&str> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|k| !k.is_empty())
        .collect()
}

fn at<'a>(obj: &'a Value, path: &str) -> &'a Value {
    keys(path).iter().fold(obj, |v, k| &v[*k])
}

/// A label selector object (`matchLabels`/`matchExpressions`, or a plain map) in its string form,
/// as `labels.Selector.String()` prints it: requirements sorted by key, set values sorted.
fn selector_string(selector: &Value) -> String {
    if let Some(s) = selector.as_str() {
        return s.to_string();
    }
    let labels = selector.get("matchLabels").unwrap_or(selector);
    let mut parts: Vec<(String, String)> = labels
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), format!("{k}={v}"))))
                .collect()
        })
        .unwrap_or_default();
    for e in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = e["key"].as_str().unwrap_or("");
        let mut values: Vec<&str> = e["values"]
            .as_array()
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        values.sort_unstable();
        values.dedup();
        let text = match e["operator"].as_str().unwrap_or("") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            _ => format!("!{key}"),
        };
        parts.push((key.to_string(), text));
    }
    // A stable sort: two requirements on one key keep their order, as in Go's sort.Stable.
    parts.sort_by(|a, b| a.0.cmp(&b.0));
    parts
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(",")
}

/// The decoding error kube-apiserver gives for a body of another kind sent to /scale.
fn not_a_scale(body: &Value) -> Option<ApiError> {
    let kind = body.get("kind").and_then(Value::as_str)?;
    if kind == "Scale" || kind.is_empty() {
        return None;
    }
    let api_version = body["apiVersion"].as_str().unwrap_or("");
    // Go names the typed struct by its package, which is the version (`v1.ConfigMap`).
    let version = api_version.rsplit('/').next().unwrap_or(api_version);
    Some(ApiError::bad_request(format!(
        "{kind} in version \"{api_version}\" cannot be handled as a Scale: converting ({version}.{kind}) to (autoscaling.Scale): unknown conversion"
    )))
}

fn scale_of(rt: &ResourceType, paths: &ScalePaths, obj: &Value) -> Value {
    let meta = &obj["metadata"];
    let mut status = json!({"replicas": at(obj, &paths.status_replicas).as_i64().unwrap_or(0)});
    if let Some(selector) = paths
        .label_selector
        .as_deref()
        .map(|p| at(obj, p))
        .filter(|s| !s.is_null())
    {
        status["selector"] = json!(selector_string(selector));
    }
    let mut metadata = json!({
        "name": meta["name"], "uid": meta["uid"],
        "resourceVersion": meta["resourceVersion"], "creationTimestamp": meta["creationTimestamp"],
    });
    if rt.namespaced {
        metadata["namespace"] = meta["namespace"].clone();
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": metadata,
        "spec": {"replicas": at(obj, &paths.spec_replicas).as_i64().unwrap_or(0)},
        "status": status,
    })
}

fn paths(rt: &ResourceType) -> ApiResult<&ScalePaths> {
    rt.scale.as_ref().ok_or_else(ApiError::unknown_path)
}

/// The apiextensions server's check of a custom resource with a scale subresource, on every
/// write: the replicas its paths point at are non-negative integers (the path is the field).
pub(super) fn replicas_causes(rt: &ResourceType, obj: &Value) -> Vec<crate::error::FieldCause> {
    let Some(p) = rt.scale.as_ref().filter(|_| rt.crd.is_some()) else {
        return Vec::new();
    };
    [&p.spec_replicas, &p.status_replicas]
        .into_iter()
        .filter_map(|path| {
            let v = at(obj, path);
            let n = v.as_i64().filter(|n| *n < 0)?;
            Some(crate::error::FieldCause {
                message: format!("Invalid value: {n}: should be a non-negative integer"),
                ..crate::error::FieldCause::invalid(path, "", "")
            })
        })
        .collect()
}

impl Store {
    pub fn get_scale(&self, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<Value> {
        let obj = self.get(rt, ns, name)?;
        Ok(scale_of(rt, paths(rt)?, &obj))
    }

    /// Write `spec.replicas` of a Scale into the object (with the Scale's resourceVersion as the
    /// precondition, if it has one).
    pub fn update_scale(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        scale: &Value,
        opts: &WriteOptions,
    ) -> ApiResult<Value> {
        let p = paths(rt)?;
        if let Some(e) = not_a_scale(scale) {
            return Err(e);
        }
        if let Some(other) = scale["metadata"]["name"]
            .as_str()
            .filter(|n| !n.is_empty() && *n != name)
        {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({other}) does not match the name on the URL ({name})"
            )));
        }
        let replicas = scale["spec"]["replicas"].as_i64().ok_or_else(|| {
            ApiError::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![crate::error::FieldCause::required("spec.replicas", "")],
            )
        })?;
        // A custom resource's replicas are validated with the object (replicas_causes).
        if replicas < 0 && rt.crd.is_none() {
            // The value is an int32, quoted by no one: `Invalid value: -1`.
            let cause = crate::error::FieldCause {
                message: format!("Invalid value: {replicas}: must be greater than or equal to 0"),
                ..crate::error::FieldCause::invalid("spec.replicas", "", "")
            };
            return Err(ApiError::invalid("autoscaling", "Scale", name, vec![cause]));
        }
        let mut obj = self.get(rt, ns, name)?;
        if let Some(rv) = scale["metadata"]["resourceVersion"]
            .as_str()
            .filter(|rv| !rv.is_empty())
        {
            obj["metadata"]["resourceVersion"] = json!(rv);
        }
        let before = obj.clone();
        let ks = keys(&p.spec_replicas);
        let Some((last, parents)) = ks.split_last() else {
            return Err(ApiError::internal(
                "the scale subresource has no replicas path",
            ));
        };
        let target = parents.iter().fold(&mut obj, |v, k| {
            if !v.get(*k).is_some_and(Value::is_object) {
                v[*k] = json!({});
            }
            &mut v[*k]
        });
        target[*last] = json!(replicas);
        // The write is the writer's through /scale: an entry of its own (subresource scale), which
        // kube-apiserver's scale handler leaves without a time. The update then keeps it as sent.
        self.record_manager(
            rt,
            Some(&before),
            &mut obj,
            &opts.field_manager,
            Subresource::Scale,
        );
        if let Some(entries) = obj["metadata"]["managedFields"].as_array_mut() {
            for e in entries.iter_mut().filter(|e| e["subresource"] == "scale") {
                if let Some(e) = e.as_object_mut() {
                    e.remove("time");
                }
            }
            // No time sorts as the earliest among entries of its operation.
            entries.sort_by_key(|e| {
                (
                    e["operation"].as_str().map(str::to_string),
                    e.get("time").is_some(),
                )
            });
        }
        let unrecorded = WriteOptions {
            field_manager: String::new(),
            ..opts.clone()
        };
        let updated = self.update(rt, ns, name, obj, Subresource::Main, &unrecorded)?;
        Ok(scale_of(rt, p, &updated))
    }

    pub fn patch_scale(
        &mut self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
        kind: PatchKind,
        body: &[u8],
        opts: &WriteOptions,
    ) -> ApiResult<Value> {
        let current = self.get_scale(rt, ns, name)?;
        let patched = apply_patch(kind, "autoscaling", "Scale", &current, body)?;
        // A patched Scale that does not decode into the typed struct is refused whole.
        let replicas = &patched["spec"]["replicas"];
        if !replicas.is_null() && !replicas.is_i64() {
            // encoding/json names the JSON type, and a number by its text.
            let go_type = match replicas {
                Value::String(_) => "string".to_string(),
                Value::Number(n) => format!("number {n}"),
                Value::Bool(_) => "bool".to_string(),
                Value::Array(_) => "array".to_string(),
                _ => "object".to_string(),
            };
            return Err(ApiError::invalid_patch(
                &patched.to_string(),
                &format!(
                    "json: cannot unmarshal {go_type} into Go struct field ScaleSpec.spec.replicas of type int32"
                ),
            ));
        }
        self.update_scale(rt, ns, name, &patched, opts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_are_shown_in_string_form() {
        let s = json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]});
        assert_eq!(selector_string(&s), "app=web,tier in (a,b)");
        let unsorted = json!({"matchLabels": {"zone": "x"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]}, {"key": "gpu", "operator": "Exists"}]});
        assert_eq!(selector_string(&unsorted), "gpu,tier in (api,web),zone=x");
        assert_eq!(selector_string(&json!({"app": "rc"})), "app=rc");
        assert_eq!(selector_string(&json!("app=crd")), "app=crd");
    }
}
