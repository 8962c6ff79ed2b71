//! Strategic merge patch (`application/strategic-merge-patch+json`) for the built-in kinds.
//!
//! Maps merge recursively and `null` deletes a key. Lists merge according to the strategy the
//! built-in Go types declare in their `patchStrategy`/`patchMergeKey` tags (see
//! [`list_strategy`]); lists without a declared strategy are replaced wholesale. The patch
//! directives `$patch` (`replace`, `delete`; like the apiserver, `merge` is refused),
//! `$retainKeys`, `$setElementOrder/<field>` and `$deleteFromPrimitiveList/<field>` are
//! understood; any other `$`-key is an error.
//!
//! Merged lists are ordered as the apiserver orders them: the elements the patch names (in its
//! list or its `$setElementOrder`) in the patch's order, interleaved with the elements only the
//! server has in their server order, a server-only element going first only when it preceded the
//! named one on the server. So a new element without `$setElementOrder` lands before the
//! server-only elements, as `kubectl patch` users see; clients that care send the order.
//!
//! Unlike the apiserver, which decodes the result into the typed object, values added by the
//! patch are cleaned here: `null`s and directives inside them are dropped rather than stored.

use serde_json::{Map, Value};

/// How a list field merges, from the Go struct tags of the built-in types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    Replace,
    MergeByKey(&'static str),
    MergePrimitives,
}

/// The error of a patch that cannot be applied; the message names the problem. `code` is the
/// HTTP status kube-apiserver answers with: 400, or 500 for the errors its strategic merge code
/// returns unclassified (a bad `$patch`, a missing merge key), worded as upstream words them.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{message}")]
pub struct StrategicError {
    pub code: u16,
    pub message: String,
}

fn invalid(msg: impl std::fmt::Display) -> StrategicError {
    StrategicError {
        code: 400,
        message: format!("invalid patch: {msg}"),
    }
}

fn unclassified(message: String) -> StrategicError {
    StrategicError { code: 500, message }
}

/// A value as Go's `%v` prints the `interface{}` it decodes to: `map[k:v ...]` with sorted
/// keys, `[a b]`, bare strings, `<nil>`.
fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{f:.0}"),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let items: Vec<String> = items.iter().map(go_value).collect();
            format!("[{}]", items.join(" "))
        }
        Value::Object(map) => go_map(map),
    }
}

fn go_map(map: &Map<String, Value>) -> String {
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    let entries: Vec<String> = entries
        .into_iter()
        .map(|(k, v)| format!("{k}:{}", go_value(v)))
        .collect();
    format!("map[{}]", entries.join(" "))
}

fn bad_patch_type(value: &Value, map: &Map<String, Value>) -> StrategicError {
    unclassified(format!(
        "unknown patch type: {} in map: {}",
        go_value(value),
        go_map(map)
    ))
}

/// Upstream's one answer to any malformed `$retainKeys` (not a list of strings, or a patched key
/// missing from it).
fn bad_retain_keys() -> StrategicError {
    StrategicError {
        code: 400,
        message: "invalid patch format of retainKeys".into(),
    }
}

fn missing_merge_key(map: &Map<String, Value>, key: &str) -> StrategicError {
    unclassified(format!(
        "map: {} does not contain declared merge key: {key}",
        go_map(map)
    ))
}

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// The length of the pod spec prefix of `path` for an object of `group`/`kind`, if `path` is at
/// or below a pod spec: `spec` of a Pod, or any `template.spec` reached through `spec`,
/// `template` and `jobTemplate` of the workload kinds and PodTemplate.
fn pod_spec_len(group: &str, kind: &str, path: &[&str]) -> Option<usize> {
    match (group, kind) {
        ("", "Pod") => (path.first() == Some(&"spec")).then_some(1),
        ("", "PodTemplate")
        | ("apps", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("batch", "Job" | "CronJob")
        | ("", "ReplicationController") => {
            // Walk the chain of spec / template / jobTemplate; the pod spec is the `spec` that
            // directly follows a `template`.
            let mut prev = "";
            for (i, seg) in path.iter().enumerate() {
                match *seg {
                    "spec" if prev == "template" => return Some(i + 1),
                    "spec" | "template" | "jobTemplate" => prev = seg,
                    _ => return None,
                }
            }
            None
        }
        _ => None,
    }
}

/// The strategy of a field directly in a pod spec.
fn pod_spec_field(field: &str) -> ListStrategy {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "imagePullSecrets"
        | "resourceClaims"
        | "schedulingGates" => ListStrategy::MergeByKey("name"),
        "hostAliases" => ListStrategy::MergeByKey("ip"),
        "topologySpreadConstraints" => ListStrategy::MergeByKey("topologyKey"),
        _ => ListStrategy::Replace,
    }
}

/// The strategy of a field directly in a container (or ephemeral container).
fn container_field(field: &str) -> ListStrategy {
    match field {
        "env" => ListStrategy::MergeByKey("name"),
        "ports" => ListStrategy::MergeByKey("containerPort"),
        "volumeMounts" => ListStrategy::MergeByKey("mountPath"),
        "volumeDevices" => ListStrategy::MergeByKey("devicePath"),
        _ => ListStrategy::Replace,
    }
}

/// The list strategy of `field` when it appears under the JSON path `path` (e.g.
/// `["spec","template","spec","containers"]`) of an object of `group`/`kind`.
///
/// The path holds object keys only: the elements of a list are addressed by the list's field
/// name, so a container's `env` is `field = "env"` under `[.., "spec", "containers"]`.
pub fn list_strategy(group: &str, kind: &str, path: &[&str], field: &str) -> ListStrategy {
    // ObjectMeta, wherever it appears (the object's, a template's, a claim template's).
    if path.last() == Some(&"metadata") {
        return match field {
            "ownerReferences" => ListStrategy::MergeByKey("uid"),
            "finalizers" => ListStrategy::MergePrimitives,
            _ => ListStrategy::Replace,
        };
    }
    if let Some(len) = pod_spec_len(group, kind, path) {
        return match &path[len..] {
            [] => pod_spec_field(field),
            [c] if matches!(*c, "containers" | "initContainers" | "ephemeralContainers") => {
                container_field(field)
            }
            _ => ListStrategy::Replace,
        };
    }
    match (group, kind, path, field) {
        ("", "Pod", ["status"], "conditions") => ListStrategy::MergeByKey("type"),
        ("", "Pod", ["status"], "podIPs" | "hostIPs") => ListStrategy::MergeByKey("ip"),
        ("", "Node", ["spec"], "podCIDRs") => ListStrategy::MergePrimitives,
        ("", "Node", ["status"], "conditions" | "addresses") => ListStrategy::MergeByKey("type"),
        ("", "Service", ["spec"], "ports") => ListStrategy::MergeByKey("port"),
        ("", "Service", ["status"], "conditions") => ListStrategy::MergeByKey("type"),
        ("", "ReplicationController", ["status"], "conditions")
        | (
            "apps",
            "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet",
            ["status"],
            "conditions",
        )
        | ("batch", "Job", ["status"], "conditions") => ListStrategy::MergeByKey("type"),
        _ => ListStrategy::Replace,
    }
}

/// Apply a strategic merge patch (as sent with Content-Type
/// `application/strategic-merge-patch+json`) to `original`, returning the result. Pure;
/// `original` is untouched.
pub fn strategic_merge(
    group: &str,
    kind: &str,
    original: &serde_json::Value,
    patch: &serde_json::Value,
) -> Result<serde_json::Value, StrategicError> {
    let Value::Object(patch) = patch else {
        return Err(invalid("a strategic merge patch must be a JSON object"));
    };
    let original = match original {
        Value::Object(map) => Some(map),
        Value::Null => None,
        _ => {
            return Err(invalid("the original object is not a JSON object"));
        }
    };
    let merger = Merger { group, kind };
    match merger.merge_map(&mut Vec::new(), original, patch)? {
        Some(map) => Ok(Value::Object(map)),
        // Deleting everything leaves an object without a name, which the update then refuses.
        None => Ok(Value::Object(Map::new())),
    }
}

struct Merger<'a> {
    group: &'a str,
    kind: &'a str,
}

/// The `$patch` directive of a map, if any.
fn patch_directive(map: &Map<String, Value>) -> Result<Option<&str>, StrategicError> {
    match map.get(PATCH) {
        None => Ok(None),
        Some(Value::String(s)) if matches!(s.as_str(), "replace" | "delete") => {
            Ok(Some(s.as_str()))
        }
        Some(other) => Err(bad_patch_type(other, map)),
    }
}

/// Name the place of a problem: the field path, or "the object" at the top.
fn location(path: &[String]) -> String {
    if path.is_empty() {
        "the object".to_owned()
    } else {
        path.join(".")
    }
}

impl Merger<'_> {
    fn strategy(&self, path: &[String], field: &str) -> ListStrategy {
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        list_strategy(self.group, self.kind, &path, field)
    }

    /// Merge `patch` into `original` (absent: merge into nothing). `None` means the map is
    /// deleted (`$patch: delete`).
    fn merge_map(
        &self,
        path: &mut Vec<String>,
        original: Option<&Map<String, Value>>,
        patch: &Map<String, Value>,
    ) -> Result<Option<Map<String, Value>>, StrategicError> {
        // Validate the directives first, so that a bad one never goes unnoticed.
        for key in patch.keys() {
            if key.starts_with('$')
                && key != PATCH
                && key != RETAIN_KEYS
                && !key.starts_with(SET_ELEMENT_ORDER)
                && !key.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            {
                return Err(invalid(format!(
                    "unknown directive {key:?} in {}",
                    location(path)
                )));
            }
        }
        match patch_directive(patch)? {
            Some("delete") => return Ok(None),
            Some(_) => {
                let mut rest = patch.clone();
                rest.remove(PATCH);
                return self.merge_map(path, None, &rest);
            }
            None => {}
        }
        let retain = match patch.get(RETAIN_KEYS) {
            None => None,
            Some(Value::Array(keys)) => Some(
                keys.iter()
                    .map(|k| k.as_str().map(str::to_owned).ok_or_else(bad_retain_keys))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            Some(_) => return Err(bad_retain_keys()),
        };

        let mut result = original.cloned().unwrap_or_default();
        if let Some(retain) = &retain {
            for (key, value) in patch {
                if !key.starts_with('$') && !value.is_null() && !retain.contains(key) {
                    return Err(bad_retain_keys());
                }
            }
            result.retain(|k, _| retain.contains(k));
        }

        // $deleteFromPrimitiveList/<field> removes values from the original list before the
        // patch's own list (if any) merges in.
        for (key, value) in patch {
            let Some(field) = key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) else {
                continue;
            };
            let Value::Array(remove) = value else {
                return Err(invalid(format!(
                    "{key} in {} must be a list",
                    location(path)
                )));
            };
            match result.get_mut(field) {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) => items.retain(|item| !remove.contains(item)),
                Some(_) => {
                    return Err(invalid(format!(
                        "{key}: {field} in {} is not a list",
                        location(path)
                    )));
                }
            }
        }

        for (key, value) in patch {
            if key.starts_with('$') {
                continue;
            }
            match value {
                Value::Null => {
                    result.remove(key);
                }
                Value::Object(sub) => {
                    let original_sub = match result.get(key) {
                        Some(Value::Object(m)) => Some(m),
                        _ => None,
                    };
                    path.push(key.clone());
                    let merged = self.merge_map(path, original_sub, sub);
                    path.pop();
                    match merged? {
                        Some(m) => {
                            result.insert(key.clone(), Value::Object(m));
                        }
                        None => {
                            result.remove(key);
                        }
                    }
                }
                Value::Array(items) => {
                    let strategy = self.strategy(path, key);
                    let merged = self.merge_list(path, key, strategy, result.get(key), items)?;
                    result.insert(key.clone(), Value::Array(merged));
                }
                scalar => {
                    result.insert(key.clone(), scalar.clone());
                }
            }
        }

        // $setElementOrder/<field> reorders the merged list: the listed elements take the listed
        // order, the others (only on the server) keep their place relative to the original.
        for (key, value) in patch {
            let Some(field) = key.strip_prefix(SET_ELEMENT_ORDER) else {
                continue;
            };
            let Value::Array(order) = value else {
                return Err(invalid(format!(
                    "{key} in {} must be a list",
                    location(path)
                )));
            };
            let merge_key = match self.strategy(path, field) {
                ListStrategy::MergeByKey(k) => Some(k),
                ListStrategy::MergePrimitives => None,
                // The order of a replaced list is the patch's own.
                ListStrategy::Replace => continue,
            };
            let order = order
                .iter()
                .map(|item| {
                    identity(item, merge_key)
                        .cloned()
                        .ok_or_else(|| match (item, merge_key) {
                            (Value::Object(m), Some(k)) => missing_merge_key(m, k),
                            _ => no_merge_key(key, merge_key),
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            if let Some(Value::Array(items)) = patch.get(field) {
                for item in items {
                    if item.get(PATCH).is_some() {
                        continue;
                    }
                    if identity(item, merge_key).is_none_or(|id| !order.contains(id)) {
                        return Err(invalid(format!(
                            "element {item} of {field} is missing from {key}"
                        )));
                    }
                }
            }
            let server: &[Value] = match original.and_then(|o| o.get(field)) {
                Some(Value::Array(items)) => items,
                _ => &[],
            };
            if let Some(Value::Array(items)) = result.get_mut(field) {
                let merged = std::mem::take(items);
                *items = normalize_order(merged, &order, server, merge_key);
            }
        }

        Ok(Some(result))
    }

    /// Merge the patch list `patch` of `field` (a field of the map at `path`) into `original`.
    fn merge_list(
        &self,
        path: &mut Vec<String>,
        field: &str,
        strategy: ListStrategy,
        original: Option<&Value>,
        patch: &[Value],
    ) -> Result<Vec<Value>, StrategicError> {
        let original: &[Value] = match original {
            Some(Value::Array(items)) => items,
            _ => &[],
        };
        match strategy {
            ListStrategy::Replace => Ok(patch.to_vec()),
            ListStrategy::MergePrimitives => {
                let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
                for item in original.iter().chain(patch) {
                    if item.is_object() || item.is_array() {
                        return Err(invalid(format!(
                            "{field} is a list of primitives, got element {item}"
                        )));
                    }
                    if !merged.contains(item) {
                        merged.push(item.clone());
                    }
                }
                Ok(normalize_order(merged, patch, original, None))
            }
            ListStrategy::MergeByKey(key) => {
                path.push(field.to_owned());
                let merged = self.merge_keyed(path, field, key, original, patch);
                path.pop();
                merged
            }
        }
    }

    /// Merge a list of maps by `key`; `path` already ends with `field`.
    fn merge_keyed(
        &self,
        path: &mut Vec<String>,
        field: &str,
        key: &'static str,
        original: &[Value],
        patch: &[Value],
    ) -> Result<Vec<Value>, StrategicError> {
        // First the directive elements: deletions (from the original) and replacement.
        let mut server = original.to_vec();
        let mut plain = Vec::with_capacity(patch.len());
        let mut replace = false;
        for item in patch {
            let Value::Object(map) = item else {
                return Err(invalid(format!(
                    "element of {field} is not an object: {item}"
                )));
            };
            match map.get(PATCH) {
                None => plain.push(map),
                Some(Value::String(d)) if d == "delete" => {
                    let id = map
                        .get(key)
                        .filter(|v| !v.is_null())
                        .ok_or_else(|| missing_merge_key(map, key))?;
                    server.retain(|e| e.get(key) != Some(id));
                }
                Some(Value::String(d)) if d == "replace" => replace = true,
                Some(Value::String(d)) if d == "merge" => {
                    return Err(unclassified(
                        "merging lists cannot yet be specified in the patch".into(),
                    ));
                }
                Some(other) => return Err(bad_patch_type(other, map)),
            }
        }
        if replace {
            // The list is the patch's plain elements, in the patch's order.
            let mut result = Vec::with_capacity(plain.len());
            for map in plain {
                if let Some(m) = self.merge_map(path, None, map)? {
                    result.push(Value::Object(m));
                }
            }
            return Ok(result);
        }

        let mut merged = server.clone();
        let mut patch_ids = Vec::with_capacity(plain.len());
        for map in plain {
            let Some(id) = map.get(key).filter(|v| !v.is_null()) else {
                return Err(missing_merge_key(map, key));
            };
            patch_ids.push(id.clone());
            match merged.iter().position(|e| e.get(key) == Some(id)) {
                Some(i) => {
                    if let Some(m) = self.merge_map(path, merged[i].as_object(), map)? {
                        merged[i] = Value::Object(m);
                    }
                }
                None => {
                    if let Some(m) = self.merge_map(path, None, map)? {
                        merged.push(Value::Object(m));
                    }
                }
            }
        }
        Ok(normalize_order(merged, &patch_ids, &server, Some(key)))
    }
}

/// The error for an element without its merge key.
fn no_merge_key(list: &str, merge_key: Option<&str>) -> StrategicError {
    match merge_key {
        Some(k) => invalid(format!("element of {list} has no {k:?}")),
        None => invalid(format!("element of {list} is not a primitive")),
    }
}

/// What identifies a list element: its merge key's value, or for primitives the value itself.
fn identity<'v>(item: &'v Value, merge_key: Option<&str>) -> Option<&'v Value> {
    match merge_key {
        Some(k) => item.get(k).filter(|v| !v.is_null()),
        None => (!item.is_object() && !item.is_array()).then_some(item),
    }
}

/// Order a merged list the way the apiserver does. The elements named in `order` (the patch
/// list, or `$setElementOrder`) come in that order; the others, which only the server had, keep
/// their order from `server`. The two runs are then interleaved: a server-only element goes
/// before a named one only when both are on the server and it came first there, so elements new
/// to the list land before the server-only elements that follow them.
fn normalize_order(
    merged: Vec<Value>,
    order: &[Value],
    server: &[Value],
    merge_key: Option<&str>,
) -> Vec<Value> {
    let rank_in = |list: &[Value], item: &Value| {
        let id = identity(item, merge_key)?;
        list.iter()
            .position(|o| identity(o, merge_key).unwrap_or(o) == id)
    };
    let (mut named, mut server_only): (Vec<Value>, Vec<Value>) = merged
        .into_iter()
        .partition(|item| rank_in(order, item).is_some());
    named.sort_by_key(|item| rank_in(order, item));
    server_only.sort_by_key(|item| rank_in(server, item));

    let mut result = Vec::with_capacity(named.len() + server_only.len());
    let mut named = named.into_iter().peekable();
    let mut server_only = server_only.into_iter().peekable();
    loop {
        let take_server_only = match (server_only.peek(), named.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(left), Some(right)) => {
                matches!((rank_in(server, left), rank_in(server, right)), (Some(l), Some(r)) if l < r)
            }
        };
        let next = if take_server_only {
            server_only.next()
        } else {
            named.next()
        };
        result.extend(next);
    }
    result
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::{Value, json};

    use super::*;

    fn deployment(containers: Value) -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"app": "web", "tier": "fe"}},
            "spec": {"replicas": 1, "template": {"spec": {"containers": containers}}}
        })
    }

    fn containers_of(v: &Value) -> &Value {
        &v["spec"]["template"]["spec"]["containers"]
    }

    #[rstest]
    #[case::pod_containers("", "Pod", &["spec"], "containers", ListStrategy::MergeByKey("name"))]
    #[case::deploy_containers("apps", "Deployment", &["spec", "template", "spec"], "containers", ListStrategy::MergeByKey("name"))]
    #[case::cronjob_init("batch", "CronJob", &["spec", "jobTemplate", "spec", "template", "spec"], "initContainers", ListStrategy::MergeByKey("name"))]
    #[case::podtemplate_volumes("", "PodTemplate", &["template", "spec"], "volumes", ListStrategy::MergeByKey("name"))]
    #[case::env("batch", "Job", &["spec", "template", "spec", "containers"], "env", ListStrategy::MergeByKey("name"))]
    #[case::env_from("", "Pod", &["spec", "containers"], "envFrom", ListStrategy::Replace)]
    #[case::args("", "Pod", &["spec", "containers"], "args", ListStrategy::Replace)]
    #[case::container_ports("", "Pod", &["spec", "containers"], "ports", ListStrategy::MergeByKey("containerPort"))]
    #[case::service_ports("", "Service", &["spec"], "ports", ListStrategy::MergeByKey("port"))]
    #[case::mounts("apps", "StatefulSet", &["spec", "template", "spec", "initContainers"], "volumeMounts", ListStrategy::MergeByKey("mountPath"))]
    #[case::devices("apps", "DaemonSet", &["spec", "template", "spec", "ephemeralContainers"], "volumeDevices", ListStrategy::MergeByKey("devicePath"))]
    #[case::pull_secrets("apps", "ReplicaSet", &["spec", "template", "spec"], "imagePullSecrets", ListStrategy::MergeByKey("name"))]
    #[case::host_aliases("", "Pod", &["spec"], "hostAliases", ListStrategy::MergeByKey("ip"))]
    #[case::claims("", "Pod", &["spec"], "resourceClaims", ListStrategy::MergeByKey("name"))]
    #[case::tsc("", "Pod", &["spec"], "topologySpreadConstraints", ListStrategy::MergeByKey("topologyKey"))]
    #[case::tolerations("", "Pod", &["spec"], "tolerations", ListStrategy::Replace)]
    #[case::pod_conditions("", "Pod", &["status"], "conditions", ListStrategy::MergeByKey("type"))]
    #[case::node_conditions("", "Node", &["status"], "conditions", ListStrategy::MergeByKey("type"))]
    #[case::node_addresses("", "Node", &["status"], "addresses", ListStrategy::MergeByKey("type"))]
    #[case::node_taints("", "Node", &["spec"], "taints", ListStrategy::Replace)]
    #[case::job_conditions("batch", "Job", &["status"], "conditions", ListStrategy::MergeByKey("type"))]
    #[case::deploy_conditions("apps", "Deployment", &["status"], "conditions", ListStrategy::MergeByKey("type"))]
    #[case::owner_refs("", "ConfigMap", &["metadata"], "ownerReferences", ListStrategy::MergeByKey("uid"))]
    #[case::finalizers("", "Secret", &["metadata"], "finalizers", ListStrategy::MergePrimitives)]
    #[case::template_finalizers("apps", "Deployment", &["spec", "template", "metadata"], "finalizers", ListStrategy::MergePrimitives)]
    #[case::pod_containers_wrong_group("example.com", "Pod", &["spec"], "containers", ListStrategy::Replace)]
    #[case::not_a_pod_spec("apps", "Deployment", &["spec"], "containers", ListStrategy::Replace)]
    #[case::unknown("", "ConfigMap", &["data"], "x", ListStrategy::Replace)]
    fn strategies(
        #[case] group: &str,
        #[case] kind: &str,
        #[case] path: &[&str],
        #[case] field: &str,
        #[case] expected: ListStrategy,
    ) {
        assert_eq!(list_strategy(group, kind, path, field), expected);
    }

    #[rstest]
    #[case::add_key(json!({"a": 1}), json!({"b": 2}), json!({"a": 1, "b": 2}))]
    #[case::replace_scalar(json!({"a": 1}), json!({"a": "x"}), json!({"a": "x"}))]
    #[case::null_deletes(json!({"a": 1, "b": 2}), json!({"a": null}), json!({"b": 2}))]
    #[case::null_missing(json!({"a": 1}), json!({"z": null}), json!({"a": 1}))]
    #[case::nested(
        json!({"m": {"x": 1, "y": {"p": 1, "q": 2}}}),
        json!({"m": {"y": {"q": null, "r": 3}, "z": 4}}),
        json!({"m": {"x": 1, "y": {"p": 1, "r": 3}, "z": 4}})
    )]
    #[case::map_replaces_scalar(json!({"m": 1}), json!({"m": {"a": null, "b": 1}}), json!({"m": {"b": 1}}))]
    #[case::map_replace_directive(
        json!({"data": {"a": "1", "b": "2"}}),
        json!({"data": {"$patch": "replace", "c": "3"}}),
        json!({"data": {"c": "3"}})
    )]
    #[case::map_delete_directive(
        json!({"data": {"a": "1"}, "k": 1}),
        json!({"data": {"$patch": "delete"}}),
        json!({"k": 1})
    )]
    #[case::retain_keys(
        json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}),
        json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        json!({"spec": {"strategy": {"type": "Recreate"}}})
    )]
    #[case::retain_keys_keeps_merged(
        json!({"m": {"a": 1, "b": 2, "c": 3}}),
        json!({"m": {"$retainKeys": ["a", "d"], "d": 4}}),
        json!({"m": {"a": 1, "d": 4}})
    )]
    #[case::plain_list_replaced(
        json!({"data": {"l": [1, 2]}}),
        json!({"data": {"l": [3]}}),
        json!({"data": {"l": [3]}})
    )]
    fn maps(#[case] original: Value, #[case] patch: Value, #[case] expected: Value) {
        let got = strategic_merge("", "ConfigMap", &original, &patch);
        assert_eq!(got, Ok(expected));
    }

    #[rstest]
    #[case::image_of_one(
        json!([{"name": "a", "image": "a:1", "args": ["x"]}, {"name": "b", "image": "b:1"}]),
        json!([{"name": "b", "image": "b:2"}]),
        json!([{"name": "a", "image": "a:1", "args": ["x"]}, {"name": "b", "image": "b:2"}])
    )]
    // As in the apiserver, an element new to the list goes before the server-only elements
    // (that are not ordered after it by `$setElementOrder`).
    #[case::add_new(
        json!([{"name": "a", "image": "a:1"}]),
        json!([{"name": "c", "image": "c:1", "gone": null}]),
        json!([{"name": "c", "image": "c:1"}, {"name": "a", "image": "a:1"}])
    )]
    #[case::append_new_with_order(
        json!([{"name": "a", "image": "a:1"}]),
        json!({"$order": [{"name": "a"}, {"name": "c"}], "list": [{"name": "c", "image": "c:1"}]}),
        json!([{"name": "a", "image": "a:1"}, {"name": "c", "image": "c:1"}])
    )]
    #[case::add_after_patched(
        json!([{"name": "a"}, {"name": "b"}]),
        json!([{"name": "a", "image": "a:2"}, {"name": "c"}]),
        json!([{"name": "a", "image": "a:2"}, {"name": "c"}, {"name": "b"}])
    )]
    #[case::delete_one(
        json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]),
        json!([{"$patch": "delete", "name": "a"}]),
        json!([{"name": "b", "image": "b:1"}])
    )]
    #[case::delete_missing_is_noop(
        json!([{"name": "a"}]),
        json!([{"$patch": "delete", "name": "zz"}]),
        json!([{"name": "a"}])
    )]
    #[case::replace_list(
        json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]),
        json!([{"$patch": "replace"}, {"name": "c", "image": "c:1"}]),
        json!([{"name": "c", "image": "c:1"}])
    )]
    #[case::env_by_name(
        json!([{"name": "a", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]}]),
        json!([{"name": "a", "env": [{"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}]}]),
        json!([{"name": "a", "env": [
            {"name": "X", "value": "1"}, {"name": "Y", "value": "3"}, {"name": "Z", "value": "4"}
        ]}])
    )]
    #[case::env_field_deleted(
        json!([{"name": "a", "env": [{"name": "X", "value": "1"}]}]),
        json!([{"name": "a", "env": [{"name": "X", "value": null, "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}]),
        json!([{"name": "a", "env": [{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]}])
    )]
    #[case::container_ports_by_container_port(
        json!([{"name": "a", "ports": [{"containerPort": 80, "name": "http"}, {"containerPort": 443}]}]),
        json!([{"name": "a", "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 9090}]}]),
        json!([{"name": "a", "ports": [
            {"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 9090}, {"containerPort": 443}
        ]}])
    )]
    #[case::args_replaced(
        json!([{"name": "a", "args": ["1", "2"], "command": ["sh"]}]),
        json!([{"name": "a", "args": ["3"]}]),
        json!([{"name": "a", "args": ["3"], "command": ["sh"]}])
    )]
    #[case::set_element_order(
        json!([{"name": "a"}, {"name": "b"}, {"name": "c"}]),
        json!({"$order": [{"name": "c"}, {"name": "a"}, {"name": "b"}], "list": [{"name": "c", "image": "c:2"}]}),
        json!([{"name": "c", "image": "c:2"}, {"name": "a"}, {"name": "b"}])
    )]
    #[case::set_element_order_with_new(
        json!([{"name": "a"}, {"name": "b"}]),
        json!({"$order": [{"name": "n"}, {"name": "b"}, {"name": "a"}], "list": [{"name": "n"}]}),
        json!([{"name": "n"}, {"name": "b"}, {"name": "a"}])
    )]
    #[case::set_element_order_unlisted_stay(
        json!([{"name": "x"}, {"name": "a"}, {"name": "y"}, {"name": "b"}]),
        json!({"$order": [{"name": "b"}, {"name": "a"}], "list": []}),
        json!([{"name": "x"}, {"name": "y"}, {"name": "b"}, {"name": "a"}])
    )]
    fn containers(#[case] original: Value, #[case] patch: Value, #[case] expected: Value) {
        // `$order`/`list` in the case stand for `$setElementOrder/containers`/`containers`.
        let patch_spec = match patch {
            Value::Object(mut m) => {
                let mut spec = Map::new();
                if let Some(order) = m.remove("$order") {
                    spec.insert("$setElementOrder/containers".into(), order);
                }
                spec.insert("containers".into(), m.remove("list").unwrap_or(Value::Null));
                Value::Object(spec)
            }
            list => json!({"containers": list}),
        };
        let original = deployment(original);
        let patch = json!({"spec": {"template": {"spec": patch_spec}}});
        let got = strategic_merge("apps", "Deployment", &original, &patch).expect("patch applies");
        assert_eq!(containers_of(&got), &expected);
        // Everything else is untouched.
        assert_eq!(got["metadata"], original["metadata"]);
        assert_eq!(got["spec"]["replicas"], json!(1));
    }

    #[test]
    fn original_is_untouched() {
        let original = deployment(json!([{"name": "a", "image": "a:1"}]));
        let before = original.clone();
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "a:2"}]}}}});
        let got = strategic_merge("apps", "Deployment", &original, &patch);
        assert!(got.is_ok());
        assert_eq!(original, before);
    }

    #[rstest]
    #[case::finalizers_union(
        json!({"metadata": {"finalizers": ["a", "b"]}}),
        json!({"metadata": {"finalizers": ["b", "c"]}}),
        json!({"metadata": {"finalizers": ["a", "b", "c"]}})
    )]
    #[case::delete_from_primitive_list(
        json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["b", "zz"]}}),
        json!({"metadata": {"finalizers": ["a", "c"]}})
    )]
    #[case::delete_then_add(
        json!({"metadata": {"finalizers": ["a", "b"]}}),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "finalizers": ["d"]}}),
        json!({"metadata": {"finalizers": ["d", "b"]}})
    )]
    #[case::primitive_order(
        json!({"metadata": {"finalizers": ["a", "b", "c"]}}),
        json!({"metadata": {"$setElementOrder/finalizers": ["c", "a", "b"]}}),
        json!({"metadata": {"finalizers": ["c", "a", "b"]}})
    )]
    #[case::finalizers_null(
        json!({"metadata": {"finalizers": ["a"], "name": "n"}}),
        json!({"metadata": {"finalizers": null}}),
        json!({"metadata": {"name": "n"}})
    )]
    #[case::owner_refs_by_uid(
        json!({"metadata": {"ownerReferences": [
            {"uid": "1", "kind": "ReplicaSet", "name": "rs"}, {"uid": "2", "kind": "Job", "name": "j"}
        ]}}),
        json!({"metadata": {"ownerReferences": [
            {"uid": "2", "controller": true}, {"uid": "3", "kind": "Pod", "name": "p"}
        ]}}),
        json!({"metadata": {"ownerReferences": [
            {"uid": "1", "kind": "ReplicaSet", "name": "rs"},
            {"uid": "2", "kind": "Job", "name": "j", "controller": true},
            {"uid": "3", "kind": "Pod", "name": "p"}
        ]}})
    )]
    #[case::owner_ref_delete(
        json!({"metadata": {"ownerReferences": [{"uid": "1"}, {"uid": "2"}]}}),
        json!({"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "1"}]}}),
        json!({"metadata": {"ownerReferences": [{"uid": "2"}]}})
    )]
    #[case::tolerations_replaced(
        json!({"spec": {"tolerations": [{"key": "a", "operator": "Exists"}], "nodeName": "n"}}),
        json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}),
        json!({"spec": {"tolerations": [{"key": "b", "operator": "Exists"}], "nodeName": "n"}})
    )]
    #[case::pod_conditions(
        json!({"status": {"conditions": [{"type": "Ready", "status": "False"}, {"type": "PodScheduled", "status": "True"}]}}),
        json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        json!({"status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}})
    )]
    #[case::volumes_by_name(
        json!({"spec": {"volumes": [{"name": "a", "emptyDir": {}}, {"name": "b", "secret": {"secretName": "s"}}]}}),
        json!({"spec": {"volumes": [{"name": "a", "$retainKeys": ["name", "configMap"], "configMap": {"name": "c"}}]}}),
        json!({"spec": {"volumes": [{"name": "a", "configMap": {"name": "c"}}, {"name": "b", "secret": {"secretName": "s"}}]}})
    )]
    fn pods(#[case] original: Value, #[case] patch: Value, #[case] expected: Value) {
        assert_eq!(strategic_merge("", "Pod", &original, &patch), Ok(expected));
    }

    #[test]
    fn service_ports_merge_by_port() {
        let original = json!({"spec": {"ports": [
            {"port": 80, "targetPort": 8080, "name": "http"},
            {"port": 443, "targetPort": 8443, "name": "https"}
        ]}});
        let patch = json!({"spec": {"ports": [{"port": 80, "targetPort": 9090}]}});
        let got = strategic_merge("", "Service", &original, &patch);
        assert_eq!(
            got,
            Ok(json!({"spec": {"ports": [
                {"port": 80, "targetPort": 9090, "name": "http"},
                {"port": 443, "targetPort": 8443, "name": "https"}
            ]}}))
        );
        // A patch element without `port` (only `containerPort`) is not a Service port.
        let bad = json!({"spec": {"ports": [{"containerPort": 80}]}});
        assert_eq!(
            strategic_merge("", "Service", &original, &bad).map_err(|e| e.message),
            Err("map: map[containerPort:80] does not contain declared merge key: port".into())
        );
    }

    #[test]
    fn node_lists() {
        let original = json!({
            "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}], "podCIDRs": ["10.0.0.0/24"]},
            "status": {"addresses": [{"type": "InternalIP", "address": "1.1.1.1"}, {"type": "Hostname", "address": "n"}]}
        });
        let patch = json!({
            "spec": {"taints": [{"key": "b", "effect": "NoExecute"}], "podCIDRs": ["fd00::/64"]},
            "status": {"addresses": [{"type": "InternalIP", "address": "2.2.2.2"}]}
        });
        let got = strategic_merge("", "Node", &original, &patch);
        assert_eq!(
            got,
            Ok(json!({
                "spec": {"taints": [{"key": "b", "effect": "NoExecute"}], "podCIDRs": ["fd00::/64", "10.0.0.0/24"]},
                "status": {"addresses": [{"type": "InternalIP", "address": "2.2.2.2"}, {"type": "Hostname", "address": "n"}]}
            }))
        );
    }

    #[test]
    fn cronjob_pod_spec_is_found() {
        let original = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]
        }}}}}});
        let patch = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "a", "image": "a:2"}]
        }}}}}});
        let got = strategic_merge("batch", "CronJob", &original, &patch).expect("applies");
        assert_eq!(
            got["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "a:2"}, {"name": "b", "image": "b:1"}])
        );
    }

    #[test]
    fn top_level_replace() {
        let got = strategic_merge(
            "",
            "ConfigMap",
            &json!({"a": 1}),
            &json!({"$patch": "replace", "b": 2}),
        );
        assert_eq!(got, Ok(json!({"b": 2})));
    }

    #[rstest]
    #[case::not_an_object("", "Pod", json!([1]), "invalid patch: a strategic merge patch must be a JSON object")]
    #[case::string_patch("", "Pod", json!("x"), "invalid patch: a strategic merge patch must be a JSON object")]
    #[case::no_merge_key(
        "apps", "Deployment",
        json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
        "map: map[image:x] does not contain declared merge key: name"
    )]
    #[case::delete_without_key(
        "", "Pod",
        json!({"spec": {"containers": [{"$patch": "delete"}]}}),
        "map: map[$patch:delete] does not contain declared merge key: name"
    )]
    #[case::element_not_object(
        "", "Pod",
        json!({"spec": {"containers": ["x"]}}),
        r#"invalid patch: element of containers is not an object: "x""#
    )]
    #[case::unknown_directive(
        "", "Pod",
        json!({"spec": {"$frobnicate": 1}}),
        r#"invalid patch: unknown directive "$frobnicate" in spec"#
    )]
    #[case::unknown_directive_top(
        "", "Pod",
        json!({"$foo": 1}),
        r#"invalid patch: unknown directive "$foo" in the object"#
    )]
    #[case::unknown_patch_value(
        "", "Pod",
        json!({"metadata": {"$patch": "explode"}}),
        "unknown patch type: explode in map: map[$patch:explode]"
    )]
    #[case::unknown_patch_value_in_element(
        "", "Pod",
        json!({"spec": {"containers": [{"name": "a", "$patch": 1}]}}),
        "unknown patch type: 1 in map: map[$patch:1 name:a]"
    )]
    #[case::merge_directive_in_map(
        "", "Pod",
        json!({"metadata": {"$patch": "merge", "a": 1}}),
        "unknown patch type: merge in map: map[$patch:merge a:1]"
    )]
    #[case::merge_directive_in_list(
        "", "Pod",
        json!({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}),
        "merging lists cannot yet be specified in the patch"
    )]
    #[case::retain_keys_missing_patch_key(
        "", "Pod",
        json!({"spec": {"$retainKeys": ["a"], "b": 1}}),
        "invalid patch format of retainKeys"
    )]
    #[case::order_missing_patch_element(
        "", "Pod",
        json!({"spec": {"$setElementOrder/containers": [{"name": "a"}], "containers": [{"name": "b"}]}}),
        r#"invalid patch: element {"name":"b"} of containers is missing from $setElementOrder/containers"#
    )]
    #[case::retain_keys_not_list(
        "", "Pod",
        json!({"spec": {"$retainKeys": "x"}}),
        "invalid patch format of retainKeys"
    )]
    #[case::delete_from_non_list(
        "", "Pod",
        json!({"metadata": {"$deleteFromPrimitiveList/name": ["x"]}}),
        "invalid patch: $deleteFromPrimitiveList/name: name in metadata is not a list"
    )]
    #[case::order_without_key(
        "", "Pod",
        json!({"spec": {"$setElementOrder/containers": [{"image": "x"}]}}),
        "map: map[image:x] does not contain declared merge key: name"
    )]
    #[case::object_in_primitive_list(
        "", "Pod",
        json!({"metadata": {"finalizers": [{"a": 1}]}}),
        r#"invalid patch: finalizers is a list of primitives, got element {"a":1}"#
    )]
    fn errors(
        #[case] group: &str,
        #[case] kind: &str,
        #[case] patch: Value,
        #[case] message: &str,
    ) {
        let original = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}});
        let err = strategic_merge(group, kind, &original, &patch).expect_err("refused");
        assert_eq!(err.message, message);
        // Upstream answers its strategic merge code's own errors as 500s.
        let unclassified = !message.starts_with("invalid patch");
        assert_eq!(err.code == 500, unclassified, "{message}");
    }

    #[test]
    fn deleting_the_whole_object_leaves_nothing() {
        let original = json!({"metadata": {"name": "p"}});
        assert_eq!(
            strategic_merge("", "Pod", &original, &json!({"$patch": "delete"})),
            Ok(json!({}))
        );
    }
}
