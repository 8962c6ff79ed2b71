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

/// A label selector object (`matchLabels`/`matchExpressions`, or a plain map) in its string form.
fn selector_string(selector: &Value) -> String {
    if let Some(s) = selector.as_str() {
        return s.to_string();
    }
    let labels = selector.get("matchLabels").unwrap_or(selector);
    let mut parts: Vec<String> = labels
        .as_object()
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}")))
                .collect()
        })
        .unwrap_or_default();
    for e in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = e["key"].as_str().unwrap_or("");
        let values: Vec<&str> = e["values"]
            .as_array()
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        parts.push(match e["operator"].as_str().unwrap_or("") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            _ => format!("!{key}"),
        });
    }
    parts.join(",")
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
        if scale
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k != "Scale")
        {
            return Err(ApiError::bad_request(
                "the body of a scale request must be an autoscaling/v1 Scale",
            ));
        }
        let replicas = scale["spec"]["replicas"].as_i64().ok_or_else(|| {
            ApiError::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![crate::error::FieldCause::required("spec.replicas", "")],
            )
        })?;
        if replicas < 0 {
            return Err(ApiError::invalid(
                "autoscaling",
                "Scale",
                name,
                vec![crate::error::FieldCause::invalid(
                    "spec.replicas",
                    &replicas.to_string(),
                    "must be greater than or equal to 0",
                )],
            ));
        }
        let mut obj = self.get(rt, ns, name)?;
        if let Some(rv) = scale["metadata"]["resourceVersion"]
            .as_str()
            .filter(|rv| !rv.is_empty())
        {
            obj["metadata"]["resourceVersion"] = json!(rv);
        }
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
        let updated = self.update(rt, ns, name, obj, Subresource::Main, opts)?;
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
        assert_eq!(selector_string(&json!({"app": "rc"})), "app=rc");
        assert_eq!(selector_string(&json!("app=crd")), "app=crd");
    }
}
