//! CertificateSigningRequest `approval` and `status`: kube-apiserver's rules on the Approved,
//! Denied and Failed conditions and on the issued certificate.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult, FieldCause};
use crate::semantics::patch::{PatchKind, apply_patch};
use crate::store::{Store, Subresource, WriteOptions};

/// Which CSR subresource a write goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsrWrite {
    /// `approval`: only `status.conditions` change (kubectl certificate approve/deny).
    Approval,
    /// `status`: conditions other than Approved/Denied, and the certificate once.
    Status,
}

const DECISIONS: [&str; 3] = ["Approved", "Denied", "Failed"];

fn conditions(v: &Value) -> Vec<Value> {
    v["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn has(list: &[Value], ty: &str) -> bool {
    list.iter().any(|c| c["type"] == ty)
}

impl Store {
    /// A PUT (`patch` None) or PATCH of a CSR's `approval` or `status`.
    #[allow(clippy::too_many_arguments)]
    pub fn write_csr(
        &mut self,
        rt: &ResourceType,
        name: &str,
        which: CsrWrite,
        patch: Option<PatchKind>,
        body: Value,
        raw: &[u8],
        opts: &WriteOptions,
    ) -> ApiResult<Value> {
        let old = self.get(rt, "", name)?;
        let sent = match patch {
            Some(kind) => apply_patch(kind, &rt.group, &rt.kind, &old, raw)?,
            None => {
                let body_name = body["metadata"]["name"].as_str().unwrap_or("");
                if body_name != name {
                    return Err(ApiError::bad_request(format!(
                        "the name of the object ({body_name}) does not match the name on the URL ({name})"
                    )));
                }
                body
            }
        };
        let before = conditions(&old);
        let mut after = conditions(&sent);
        let now = self.clock.now_rfc3339();
        for c in &mut after {
            if c["lastUpdateTime"].is_null() {
                c["lastUpdateTime"] = json!(now);
            }
            if c["lastTransitionTime"].is_null() {
                let kept = before
                    .iter()
                    .find(|o| o["type"] == c["type"] && o["status"] == c["status"])
                    .map(|o| o["lastTransitionTime"].clone())
                    .filter(|t| !t.is_null());
                c["lastTransitionTime"] = kept.unwrap_or_else(|| json!(now));
            }
        }
        let mut new = old.clone();
        new["status"]["conditions"] = json!(after);
        if which == CsrWrite::Status {
            new["status"]["certificate"] = sent["status"]["certificate"].clone();
        }
        if let Some(m) = new["status"].as_object_mut() {
            m.retain(|_, v| !v.is_null() && v != &json!([]) && v != &json!(""));
        }
        match sent["metadata"]["resourceVersion"].as_str() {
            Some(rv) => new["metadata"]["resourceVersion"] = json!(rv),
            None => {
                if let Some(m) = new["metadata"].as_object_mut() {
                    m.remove("resourceVersion");
                }
            }
        }
        let causes = check(which, &old, &before, &new, &after);
        if !causes.is_empty() {
            return Err(ApiError::invalid(&rt.group, &rt.kind, name, causes));
        }
        self.update(rt, "", name, new, Subresource::Status, opts)
    }
}

fn check(
    which: CsrWrite,
    old: &Value,
    before: &[Value],
    new: &Value,
    after: &[Value],
) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    for (i, c) in after.iter().enumerate() {
        let ty = c["type"].as_str().unwrap_or("");
        let status = c["status"].as_str().unwrap_or("");
        let field = format!("status.conditions[{i}]");
        if ty.is_empty() {
            causes.push(FieldCause::required(format!("{field}.type"), ""));
        }
        if DECISIONS.contains(&ty) {
            if status != "True" {
                causes.push(FieldCause::not_supported(
                    format!("{field}.status"),
                    status,
                    &["True"],
                ));
            }
        } else if !matches!(status, "True" | "False" | "Unknown") {
            causes.push(FieldCause::not_supported(
                format!("{field}.status"),
                status,
                &["False", "True", "Unknown"],
            ));
        }
    }
    if has(after, "Approved") && has(after, "Denied") {
        causes.push(FieldCause::invalid(
            "status.conditions",
            r#"{conditions[{"type": "Approved"}], conditions[{"type": "Denied"}]}"#,
            r#"must specify at most one of: `conditions[{"type": "Approved"}]`, `conditions[{"type": "Denied"}]`"#,
        ));
    }
    // Once decided, a decision stays, whichever subresource writes.
    for ty in DECISIONS {
        if has(before, ty) && !has(after, ty) {
            causes.push(FieldCause::forbidden(
                "status.conditions",
                &format!("updates may not remove a condition of type {ty:?}"),
            ));
        }
    }
    if which == CsrWrite::Status {
        for ty in ["Approved", "Denied"] {
            if !has(before, ty) && has(after, ty) {
                causes.push(FieldCause::forbidden(
                    "status.conditions",
                    &format!("updates may not add a condition of type {ty:?}"),
                ));
            }
        }
        let cert = new["status"]["certificate"].as_str().unwrap_or("");
        if !cert.is_empty() {
            let pem = STANDARD.decode(cert).unwrap_or_default();
            if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
                causes.push(FieldCause {
                    reason: crate::error::CauseReason::Invalid,
                    field: "status.certificate".into(),
                    message: "Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block".into(),
                });
            }
        }
        let had = old["status"]["certificate"].as_str().unwrap_or("");
        if !had.is_empty() && had != cert {
            causes.push(FieldCause::forbidden(
                "status.certificate",
                "updates may not modify existing certificate content",
            ));
        }
    }
    causes
}
