//! JSON patch (RFC 6902) and JSON merge patch (RFC 7386) on whole objects. Patches are applied to
//! a copy, so a failing patch (a failed `test`, a bad path) leaves nothing half-written.

use serde_json::Value;

use crate::error::{ApiError, ApiResult};

/// The patch content types the server understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    Json,
    Merge,
    StrategicMerge,
    Apply,
}

impl PatchKind {
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let mime = content_type.split(';').next().unwrap_or("").trim();
        match mime {
            "application/json-patch+json" => Some(PatchKind::Json),
            "application/merge-patch+json" => Some(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Some(PatchKind::StrategicMerge),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
                Some(PatchKind::Apply)
            }
            _ => None,
        }
    }
}

/// The answer to a PATCH whose content type is no patch type: on built-in kinds, the generic
/// 415 of kube-apiserver's router; the apiextensions server's own handler words it for custom
/// resources.
pub fn unsupported_patch(custom_resource: bool) -> ApiError {
    if custom_resource {
        return ApiError::unsupported_media_type(CUSTOM_RESOURCE_PATCH_TYPES);
    }
    ApiError {
        details: Some(serde_json::json!({})),
        ..ApiError::unsupported_media_type("415: Unsupported Media Type")
    }
}

const CUSTOM_RESOURCE_PATCH_TYPES: &str = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

/// Refuse, before anything is looked up, the patch types a kind cannot take: strategic merge patch
/// needs the Go types' patch strategies, which custom resources do not have (as on the real server).
pub fn ensure_supported(kind: PatchKind, custom_resource: bool) -> ApiResult<()> {
    match kind {
        PatchKind::Json | PatchKind::Merge => Ok(()),
        PatchKind::StrategicMerge if !custom_resource => Ok(()),
        PatchKind::StrategicMerge => Err(ApiError::unsupported_media_type(
            CUSTOM_RESOURCE_PATCH_TYPES,
        )),
        PatchKind::Apply => Ok(()),
    }
}

/// Go's word for the JSON type of `v`, as `encoding/json` names it in an `UnmarshalTypeError`.
pub(crate) fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// kube-apiserver answers any JSON patch operation that does not apply with this generic 422,
/// the operation's own complaint left out.
fn patch_rejected() -> ApiError {
    ApiError {
        details: Some(serde_json::json!({})),
        ..ApiError::new(
            422,
            "Invalid",
            "the server rejected our request due to an error in our request",
        )
    }
}

/// Apply a patch to `target` (an object of `group`/`kind`), returning the patched copy.
pub fn apply_patch(
    kind: PatchKind,
    group: &str,
    type_kind: &str,
    target: &Value,
    body: &[u8],
) -> ApiResult<Value> {
    if kind == PatchKind::Apply {
        return Err(ApiError::internal(
            "server-side apply is handled by the store, not as a patch",
        ));
    }
    // Every patch type is first checked to be JSON at all, with one wording.
    let patch: Value =
        serde_json::from_slice(body).map_err(|_| ApiError::bad_request("invalid JSON patch"))?;
    let mut doc = target.clone();
    match kind {
        PatchKind::Json => {
            let ops = decode_json_patch(&patch)?;
            for op in ops {
                json_patch_op(&mut doc, op).map_err(|_| patch_rejected())?;
            }
        }
        PatchKind::Merge => match &patch {
            Value::Object(_) => json_patch::merge(&mut doc, &patch),
            // evanphx/json-patch's own word for a null merge patch.
            Value::Null => return Err(ApiError::bad_request("Invalid JSON Patch")),
            other => {
                return Err(ApiError::bad_request(format!(
                    "error decoding patch: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                    go_type(other)
                )));
            }
        },
        PatchKind::StrategicMerge => {
            let patch = match patch {
                Value::Null => Value::Object(Default::default()),
                Value::Object(_) => patch,
                other => {
                    return Err(ApiError::bad_request(format!(
                        "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                        go_type(&other)
                    )));
                }
            };
            doc = super::strategic::strategic_merge(group, type_kind, target, &patch).map_err(
                |e| match e.code {
                    // Upstream's strategic merge errors reach the client as bare 500s.
                    500 => ApiError::new(500, "", e.message),
                    _ => ApiError::bad_request(e.message),
                },
            )?;
        }
        PatchKind::Apply => unreachable!("refused above"),
    }
    if !doc.is_object() {
        return Err(ApiError::bad_request(
            "the patched object is not a JSON object",
        ));
    }
    Ok(doc)
}

/// A patched built-in object read as kube-apiserver's decoder reads it into its Go type: null
/// map and slice elements become zero values, and a result the type cannot hold, or (with
/// `fieldValidation=Strict`) one with unknown fields, is a 422 on the field `patch` quoting it.
pub fn decode_patched(
    rt: &crate::catalog::ResourceType,
    patched: &mut Value,
    validation: crate::store::FieldValidation,
) -> ApiResult<()> {
    if rt.crd.is_some() {
        // A custom resource is unstructured but for its metadata, which is decoded into
        // ObjectMeta (a finalizers string is refused, not stored; a null label becomes "").
        if patched["metadata"].is_object() {
            super::go_decode::zero_nulls(OBJECT_META, &mut patched["metadata"]);
        }
        return match decode_metadata(&patched["metadata"]) {
            Some(why) => Err(ApiError::invalid_patch(&quoted(patched), &why)),
            None => Ok(()),
        };
    }
    let (Some(check), crate::catalog::SchemaSource::Builtin(schema)) =
        (rt.decode_check, &rt.schema)
    else {
        return Ok(());
    };
    super::go_decode::zero_nulls(*schema, patched);
    let why = match check(patched) {
        Err(e) => super::go_decode::unmarshal_error(*schema, patched).unwrap_or(e),
        Ok(known) if validation == crate::store::FieldValidation::Strict => {
            let unknown = super::meta::unknown_fields(patched, &known);
            if unknown.is_empty() {
                return Ok(());
            }
            let named: Vec<String> = unknown
                .iter()
                .map(|f| format!("unknown field \"{f}\""))
                .collect();
            format!("strict decoding error: {}", named.join(", "))
        }
        Ok(_) => return Ok(()),
    };
    Err(ApiError::invalid_patch(&quoted(patched), &why))
}

/// Go's decoder's error for metadata that ObjectMeta cannot hold (`json: cannot unmarshal
/// string into Go struct field ObjectMeta.finalizers of type []string`), if any.
fn decode_metadata(meta: &Value) -> Option<String> {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    if meta.is_null() {
        return None;
    }
    // Go reads a null label, annotation or finalizer as its zero value, and refuses nothing for it.
    let mut probe = meta.clone();
    super::go_decode::zero_nulls(OBJECT_META, &mut probe);
    let err = <ObjectMeta as serde::Deserialize>::deserialize(&probe).err()?;
    Some(super::go_decode::unmarshal_error(OBJECT_META, &probe).unwrap_or_else(|| err.to_string()))
}

/// ObjectMeta's schema, for Go's decoding of metadata.
const OBJECT_META: crate::catalog::SchemaFn =
    |g| g.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>();

/// The patched object as kube-apiserver's error quotes it (see `encode::quoted_object`).
fn quoted(patched: &Value) -> String {
    let typed = decode_metadata(&patched["metadata"]).is_none();
    String::from_utf8_lossy(&crate::http::encode::quoted_object(patched, typed)).into_owned()
}

/// One JSON patch operation, as kube-apiserver decodes it before applying.
struct JsonPatchOp<'a> {
    op: Option<&'a str>,
    path: Option<&'a str>,
    from: Option<&'a str>,
    /// Absent and `null` are one for evanphx/json-patch.
    value: Value,
}

/// Decode a JSON patch with the words of Go's decoder into kube-apiserver's `[]jsonPatchOp`.
fn decode_json_patch(patch: &Value) -> ApiResult<Vec<JsonPatchOp<'_>>> {
    let decoding =
        |what: String| ApiError::bad_request(format!("error decoding patch: json: {what}"));
    let items = match patch {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(decoding(format!(
                "cannot unmarshal {} into Go value of type []handlers.jsonPatchOp",
                go_type(other)
            )));
        }
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        let map = match item {
            Value::Object(map) => map,
            Value::Null => {
                ops.push(JsonPatchOp {
                    op: None,
                    path: None,
                    from: None,
                    value: Value::Null,
                });
                continue;
            }
            other => {
                return Err(decoding(format!(
                    "cannot unmarshal {} into Go value of type handlers.jsonPatchOp",
                    go_type(other)
                )));
            }
        };
        let field = |name: &str| -> ApiResult<Option<&str>> {
            match map.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.as_str())),
                Some(other) => Err(decoding(format!(
                    "cannot unmarshal {} into Go struct field jsonPatchOp.{name} of type string",
                    go_type(other)
                ))),
            }
        };
        ops.push(JsonPatchOp {
            op: field("op")?,
            path: field("path")?,
            from: field("from")?,
            value: map.get("value").cloned().unwrap_or(Value::Null),
        });
    }
    Ok(ops)
}

/// Apply one operation the way evanphx/json-patch v4 (kube-apiserver's) does; when it does not
/// apply, the library's own words (a webhook's patch fails with them; a PATCH request leaves them
/// out). Its quirks are kept: `replace` of a missing key adds it, `copy` from a missing key copies
/// null, a path is split on `/` after dropping whatever precedes the first one, and negative
/// array indices count from the end.
fn json_patch_op(doc: &mut Value, op: JsonPatchOp<'_>) -> Result<(), String> {
    let kind = op.op.unwrap_or("unknown");
    let path = || {
        op.path.ok_or(format!(
            "{kind} operation failed to decode path: missing value"
        ))
    };
    let from = || {
        op.from.ok_or(format!(
            "{kind} operation failed to decode from: operation, missing from field: missing value"
        ))
    };
    // What a container says of a key it cannot reach.
    let unreachable = |parent: &Value, key: &str| match parent {
        Value::Array(_) => {
            format!("Unable to access invalid index: {key}: invalid index referenced")
        }
        _ => format!("Unable to remove nonexistent key: {key}: missing value"),
    };
    match kind {
        "add" => {
            let path = path()?;
            let (parent, key) = parent_of(doc, path).ok_or_else(|| {
                format!(
                    "add operation does not apply: doc is missing path: \"{path}\": missing value"
                )
            })?;
            let why = unreachable(parent, &key);
            add(parent, &key, op.value)
                .ok_or_else(|| format!("error in add for path: '{path}': {why}"))
        }
        "remove" => {
            let path = path()?;
            let (parent, key) = parent_of(doc, path).ok_or_else(|| {
                format!("remove operation does not apply: doc is missing path: \"{path}\": missing value")
            })?;
            let why = unreachable(parent, &key);
            remove(parent, &key)
                .map(drop)
                .ok_or_else(|| format!("error in remove for path: '{path}': {why}"))
        }
        "replace" => {
            let path = op.path.ok_or_else(|| {
                "replace operation failed to decode path: operation missing path field: missing value"
                    .to_string()
            })?;
            let (parent, key) = parent_of(doc, path).ok_or_else(|| {
                format!(
                    "replace operation does not apply: doc is missing path: {path}: missing value"
                )
            })?;
            get(parent, &key).ok_or_else(|| {
                format!(
                    "replace operation does not apply: doc is missing key: {path}: missing value"
                )
            })?;
            let why = unreachable(parent, &key);
            set(parent, &key, op.value)
                .ok_or_else(|| format!("error in remove for path: '{path}': {why}"))
        }
        "move" => {
            let from = from()?;
            let (parent, key) = parent_of(doc, from).ok_or_else(|| {
                format!(
                    "move operation does not apply: doc is missing from path: {from}: missing value"
                )
            })?;
            let why = unreachable(parent, &key);
            get(parent, &key).ok_or_else(|| format!("error in move for path: '{key}': {why}"))?;
            let value = remove(parent, &key)
                .ok_or_else(|| format!("error in move for path: '{key}': {why}"))?;
            let path = path()?;
            let (parent, key) = parent_of(doc, path).ok_or_else(|| {
                format!("move operation does not apply: doc is missing destination path: {path}: missing value")
            })?;
            let why = unreachable(parent, &key);
            add(parent, &key, value)
                .ok_or_else(|| format!("error in move for path: '{path}': {why}"))
        }
        "copy" => {
            let from = from()?;
            let (parent, key) = parent_of(doc, from).ok_or_else(|| {
                format!(
                    "copy operation does not apply: doc is missing from path: {from}: missing value"
                )
            })?;
            let why = unreachable(parent, &key);
            let value = get(parent, &key)
                .ok_or_else(|| format!("error in copy for from: '{from}': {why}"))?
                .cloned()
                .unwrap_or(Value::Null);
            let path = path()?;
            let (parent, key) = parent_of(doc, path).ok_or_else(|| {
                format!("copy operation does not apply: doc is missing destination path: {path}: missing value")
            })?;
            let why = unreachable(parent, &key);
            add(parent, &key, value)
                .ok_or_else(|| format!("error while adding value during copy: {why}"))
        }
        "test" => {
            let path = op.path.ok_or_else(|| {
                "test operation failed to decode path: operation missing path field: missing value"
                    .to_string()
            })?;
            let failed = || format!("testing value {path} failed: test failed");
            let (parent, key) = parent_of(doc, path).ok_or_else(|| {
                format!("test operation does not apply: is missing path: {path}: missing value")
            })?;
            let why = unreachable(parent, &key);
            match (
                get(parent, &key)
                    .ok_or_else(|| format!("error in test for path: '{path}': {why}"))?,
                &op.value,
            ) {
                (None, Value::Null) => Ok(()),
                (Some(found), wanted) if found == wanted => Ok(()),
                _ => Err(failed()),
            }
        }
        _ => Err(format!("Unexpected kind: {kind}")),
    }
}

/// Apply a JSON patch (RFC 6902) to a copy of `target` as evanphx/json-patch v4 does: what an
/// admission webhook's `JSONPatch` answer makes of the object. The error is the library's.
pub fn apply_json_patch(target: &Value, patch: &Value) -> Result<Value, String> {
    let ops = decode_json_patch(patch).map_err(|e| e.message)?;
    let mut doc = target.clone();
    for op in ops {
        json_patch_op(&mut doc, op)?;
    }
    Ok(doc)
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// The container a path's last token is in, and that token.
fn parent_of<'d>(doc: &'d mut Value, path: &str) -> Option<(&'d mut Value, String)> {
    let tokens: Vec<&str> = path.split('/').collect();
    if tokens.len() < 2 {
        return None;
    }
    let mut current = doc;
    for token in &tokens[1..tokens.len() - 1] {
        let token = unescape(token);
        let next = match current {
            Value::Object(map) => map.get_mut(&token)?,
            Value::Array(items) => {
                let i = index(&token, items.len())?;
                items.get_mut(i)?
            }
            _ => return None,
        };
        if !(next.is_object() || next.is_array()) {
            return None;
        }
        current = next;
    }
    Some((current, unescape(tokens[tokens.len() - 1])))
}

/// An array index as Go's `strconv.Atoi` reads it, negative counting from `len`.
fn index(token: &str, len: usize) -> Option<usize> {
    let i: i64 = token.parse().ok()?;
    let i = if i < 0 { i + len as i64 } else { i };
    (0..len as i64).contains(&i).then_some(i as usize)
}

/// The value at `key` (`None` for a missing key or null); `None` outside when it cannot be read.
fn get<'v>(parent: &'v Value, key: &str) -> Option<Option<&'v Value>> {
    match parent {
        Value::Object(map) => Some(map.get(key).filter(|v| !v.is_null())),
        Value::Array(items) => {
            let i = index(key, items.len())?;
            Some(items.get(i).filter(|v| !v.is_null()))
        }
        _ => None,
    }
}

fn add(parent: &mut Value, key: &str, value: Value) -> Option<()> {
    match parent {
        Value::Object(map) => {
            map.insert(key.to_owned(), value);
        }
        Value::Array(items) if key == "-" => items.push(value),
        Value::Array(items) => {
            let i = index(key, items.len() + 1)?;
            items.insert(i, value);
        }
        _ => return None,
    }
    Some(())
}

fn set(parent: &mut Value, key: &str, value: Value) -> Option<()> {
    match parent {
        Value::Object(map) => {
            map.insert(key.to_owned(), value);
        }
        Value::Array(items) => {
            let i = index(key, items.len())?;
            items[i] = value;
        }
        _ => return None,
    }
    Some(())
}

fn remove(parent: &mut Value, key: &str) -> Option<Value> {
    match parent {
        Value::Object(map) => map.remove(key),
        Value::Array(items) => {
            let i = index(key, items.len())?;
            Some(items.remove(i))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_failed_test_operation_changes_nothing() {
        let target = json!({"metadata": {"finalizers": ["a"]}, "data": {"k": "v"}});
        let body = br#"[{"op":"replace","path":"/data/k","value":"w"},{"op":"test","path":"/metadata/finalizers/0","value":"b"}]"#;
        let err =
            apply_patch(PatchKind::Json, "", "ConfigMap", &target, body).expect_err("test fails");
        assert_eq!((err.code, err.reason), (422, "Invalid"));
    }

    #[test]
    fn testing_a_missing_path_for_null_passes() {
        let target = json!({"metadata": {"name": "x"}});
        let body = br#"[{"op":"test","path":"/metadata/finalizers","value":null},{"op":"add","path":"/metadata/finalizers","value":["f"]}]"#;
        let out = apply_patch(PatchKind::Json, "", "ConfigMap", &target, body).expect("passes");
        assert_eq!(out["metadata"]["finalizers"], json!(["f"]));
        let body = br#"[{"op":"test","path":"/metadata/name","value":null}]"#;
        assert!(apply_patch(PatchKind::Json, "", "ConfigMap", &target, body).is_err());
    }

    #[test]
    fn merge_patch_removes_nulls() {
        let target = json!({"data": {"a": "1", "b": "2"}});
        let out = apply_patch(
            PatchKind::Merge,
            "",
            "ConfigMap",
            &target,
            br#"{"data":{"a":null,"c":"3"}}"#,
        )
        .expect("ok");
        assert_eq!(out, json!({"data": {"b": "2", "c": "3"}}));
    }

    #[test]
    fn content_types_are_recognised_with_parameters() {
        assert_eq!(
            PatchKind::from_content_type("application/merge-patch+json; charset=utf-8"),
            Some(PatchKind::Merge)
        );
        assert_eq!(PatchKind::from_content_type("text/plain"), None);
    }
}
