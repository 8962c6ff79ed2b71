//! The AdmissionReview a webhook is sent, and the checks kube-apiserver makes of the one it
//! answers with (`admission.k8s.io/v1`, or `v1beta1` for a webhook that accepts only that).

use serde_json::{Map, Value, json};

use crate::catalog::ResourceType;
use crate::error::ApiError;

/// The AdmissionReview versions kube-apiserver speaks, in its order of preference.
const SPOKEN: [&str; 2] = ["v1", "v1beta1"];

/// The version to send: the first of the webhook's list that the server speaks.
pub fn version(accepted: &[String]) -> Option<&'static str> {
    accepted
        .iter()
        .find_map(|v| SPOKEN.iter().find(|s| **s == v.as_str()).copied())
}

/// What the request says, apart from the objects.
pub struct About<'a> {
    pub uid: &'a str,
    /// The version the webhook is shown the object in.
    pub shown: &'a ResourceType,
    /// The version the request named.
    pub requested: &'a ResourceType,
    pub subresource: &'a str,
    pub name: &'a str,
    pub namespace: &'a str,
    pub operation: &'a str,
    pub user: &'a Value,
    pub options: &'a Value,
    pub dry_run: bool,
}

/// The `request` of an AdmissionReview, as webhooks and `matchConditions` see it.
pub fn request(about: &About<'_>, object: Option<&Value>, old: Option<&Value>) -> Value {
    let kind =
        |rt: &ResourceType| json!({"group": rt.group, "version": rt.version, "kind": rt.kind});
    let resource = |rt: &ResourceType| json!({"group": rt.group, "version": rt.version, "resource": rt.plural});
    let mut r = Map::new();
    r.insert("uid".into(), json!(about.uid));
    r.insert("kind".into(), kind(about.shown));
    r.insert("resource".into(), resource(about.shown));
    if !about.subresource.is_empty() {
        r.insert("subResource".into(), json!(about.subresource));
    }
    r.insert("requestKind".into(), kind(about.requested));
    r.insert("requestResource".into(), resource(about.requested));
    if !about.subresource.is_empty() {
        r.insert("requestSubResource".into(), json!(about.subresource));
    }
    if !about.name.is_empty() {
        r.insert("name".into(), json!(about.name));
    }
    if !about.namespace.is_empty() {
        r.insert("namespace".into(), json!(about.namespace));
    }
    r.insert("operation".into(), json!(about.operation));
    r.insert("userInfo".into(), about.user.clone());
    r.insert("object".into(), object.cloned().unwrap_or(Value::Null));
    r.insert("oldObject".into(), old.cloned().unwrap_or(Value::Null));
    r.insert("dryRun".into(), json!(about.dry_run));
    r.insert("options".into(), about.options.clone());
    Value::Object(r)
}

/// The whole review sent to a webhook.
pub fn review(version: &str, request: Value) -> Value {
    json!({
        "kind": "AdmissionReview",
        "apiVersion": format!("admission.k8s.io/{version}"),
        "request": request,
    })
}

/// A webhook's verdict, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub allowed: bool,
    /// The `status` of a denial.
    pub result: Option<Value>,
    /// The patch, decoded from base64, and its type.
    pub patch: Option<Vec<u8>>,
    pub patch_type: Option<String>,
    pub warnings: Vec<String>,
}

/// Check a webhook's answer (the decoded review) as kube-apiserver does; the error is the reason
/// it gives. v1 answers are checked for their uid, kind and patch fields; v1beta1 answers only for
/// a response (their patch is a JSONPatch whatever they say, and a validating one's is ignored).
pub fn verify(version: &str, uid: &str, mutating: bool, review: &Value) -> Result<Verdict, String> {
    let Some(response) = review.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let mut patch = match response["patch"].as_str() {
        Some(p) if !p.is_empty() => Some(decode_patch(p)?),
        _ => None,
    };
    let mut patch_type = response
        .get("patchType")
        .and_then(Value::as_str)
        .map(str::to_string);
    if version == "v1" {
        let got_uid = response["uid"].as_str().unwrap_or("");
        if got_uid != uid {
            return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
        }
        let gvk = group_version_kind(review);
        if gvk != "admission.k8s.io/v1, Kind=AdmissionReview" {
            return Err(format!(
                "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {gvk}"
            ));
        }
        if mutating {
            match (&patch, &patch_type) {
                (Some(_), None) => {
                    return Err("webhook returned response.patch but not response.patchType".into());
                }
                (None, Some(_)) => {
                    return Err("webhook returned response.patchType but not response.patch".into());
                }
                (Some(_), Some(t)) if t.is_empty() => {
                    return Err(format!(
                        "webhook returned invalid response.patchType of {t:?}"
                    ));
                }
                _ => {}
            }
        } else if patch.is_some() {
            return Err("validating webhook may not return response.patch".into());
        } else if patch_type.is_some() {
            return Err("validating webhook may not return response.patchType".into());
        }
    } else if mutating {
        if patch.is_some() {
            patch_type = Some("JSONPatch".into());
        }
    } else {
        patch = None;
    }
    Ok(Verdict {
        allowed: response["allowed"].as_bool().unwrap_or(false),
        result: response.get("status").filter(|s| s.is_object()).cloned(),
        patch,
        patch_type,
        warnings: response["warnings"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
    })
}

/// A review's type as Go prints a GroupVersionKind (`group/version, Kind=kind`).
fn group_version_kind(review: &Value) -> String {
    let api_version = review["apiVersion"].as_str().unwrap_or("");
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let kind = review["kind"].as_str().unwrap_or("");
    format!("{group}/{version}, Kind={kind}")
}

fn decode_patch(p: &str) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(p)
        .map_err(|e| format!("illegal base64 data: {e}"))
}

/// A denial as the client sees it: the webhook's status, its message prefixed with who denied.
pub fn denied(webhook: &str, result: Option<&Value>) -> ApiError {
    let result = result.cloned().unwrap_or_else(|| json!({}));
    let code = result["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let by = format!("admission webhook {webhook:?} denied the request");
    let message = match (result["message"].as_str(), result["reason"].as_str()) {
        (Some(m), _) if !m.is_empty() => format!("{by}: {m}"),
        (_, Some(r)) if !r.is_empty() => format!("{by}: {r}"),
        _ => format!("{by} without explanation"),
    };
    let reason = result["reason"].as_str().unwrap_or("");
    ApiError {
        details: result.get("details").filter(|d| d.is_object()).cloned(),
        ..ApiError::new(code, crate::error::known_reason(reason), message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_version_the_webhook_accepts_and_the_server_speaks_is_sent() {
        let v = |list: &[&str]| version(&list.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(v(&["v1", "v1beta1"]), Some("v1"));
        assert_eq!(v(&["v2", "v1beta1"]), Some("v1beta1"));
        assert_eq!(v(&["v2"]), None);
    }

    #[test]
    fn a_v1_answer_is_checked_for_its_uid_kind_and_patch_type() {
        let answer = |r: Value| json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r});
        let ok = verify(
            "v1",
            "u1",
            true,
            &answer(json!({"uid": "u1", "allowed": true})),
        );
        assert_eq!(ok.map(|v| v.allowed), Ok(true));
        assert_eq!(
            verify(
                "v1",
                "u1",
                true,
                &answer(json!({"uid": "u2", "allowed": true}))
            ),
            Err("expected response.uid=\"u1\", got \"u2\"".into())
        );
        assert_eq!(
            verify(
                "v1",
                "u1",
                true,
                &answer(json!({"uid": "u1", "allowed": true, "patch": "W10="}))
            ),
            Err("webhook returned response.patch but not response.patchType".into())
        );
        assert_eq!(
            verify(
                "v1",
                "u1",
                false,
                &answer(
                    json!({"uid": "u1", "allowed": true, "patch": "W10=", "patchType": "JSONPatch"})
                )
            ),
            Err("validating webhook may not return response.patch".into())
        );
        let wrong_kind = json!({"apiVersion": "v1", "kind": "Status", "response": {"uid": "u1"}});
        assert_eq!(
            verify("v1", "u1", true, &wrong_kind),
            Err("expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /v1, Kind=Status".into())
        );
        assert_eq!(
            verify(
                "v1",
                "u1",
                true,
                &json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"})
            ),
            Err("webhook response was absent".into())
        );
    }

    #[test]
    fn a_v1beta1_answer_needs_only_a_response_and_its_patch_is_a_json_patch() {
        let answer = json!({"response": {"uid": "other", "allowed": true, "patch": "W10="}});
        let verdict = verify("v1beta1", "u1", true, &answer).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(verdict.patch_type.as_deref(), Some("JSONPatch"));
        let verdict = verify("v1beta1", "u1", false, &answer).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(verdict.patch, None);
    }

    #[test]
    fn a_denial_is_at_least_a_400_and_names_the_webhook() {
        let e = denied(
            "deny.example.com",
            Some(&json!({"code": 403, "reason": "Forbidden", "message": "no"})),
        );
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                403,
                "admission webhook \"deny.example.com\" denied the request: no"
            )
        );
        let e = denied("deny.example.com", None);
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                400,
                "admission webhook \"deny.example.com\" denied the request without explanation"
            )
        );
    }
}
