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

/// The message for an unsupported patch content type.
pub fn unsupported_patch(content_type: &str) -> ApiError {
    ApiError::unsupported_media_type(format!(
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json (got {content_type:?})"
    ))
}

/// Refuse, before anything is looked up, the patch types a kind cannot take: strategic merge patch
/// needs the Go types' patch strategies, which custom resources do not have (as on the real server).
pub fn ensure_supported(kind: PatchKind, custom_resource: bool) -> ApiResult<()> {
    match kind {
        PatchKind::Json | PatchKind::Merge => Ok(()),
        PatchKind::StrategicMerge if !custom_resource => Ok(()),
        PatchKind::StrategicMerge => Err(ApiError::unsupported_media_type(
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        )),
        PatchKind::Apply => Ok(()),
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
    let mut doc = target.clone();
    match kind {
        PatchKind::Json => {
            let ops: json_patch::Patch = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            for op in ops.0 {
                // Like the real server, `test` for null passes where the path does not exist: the
                // kube-rs finalizer helper relies on it when adding the first finalizer.
                if let json_patch::PatchOperation::Test(t) = &op
                    && t.value.is_null()
                    && doc.pointer(t.path.as_str()).is_none()
                {
                    continue;
                }
                json_patch::patch(&mut doc, &[op]).map_err(|e| {
                    ApiError::new(
                        422,
                        "Invalid",
                        format!(
                            "the server rejected our request due to an error in our request: {e}"
                        ),
                    )
                })?;
            }
        }
        PatchKind::Merge => {
            let patch: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            if !patch.is_object() {
                return Err(ApiError::bad_request("a merge patch must be a JSON object"));
            }
            json_patch::merge(&mut doc, &patch);
        }
        PatchKind::StrategicMerge => {
            let patch: Value = serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            doc = super::strategic::strategic_merge(group, type_kind, target, &patch)
                .map_err(|e| ApiError::bad_request(e.0))?;
        }
        PatchKind::Apply => {
            return Err(ApiError::internal(
                "server-side apply is handled by the store, not as a patch",
            ));
        }
    }
    if !doc.is_object() {
        return Err(ApiError::bad_request(
            "the patched object is not a JSON object",
        ));
    }
    Ok(doc)
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
