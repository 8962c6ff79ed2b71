//! API errors, rendered as the `metav1.Status` bodies the real kube-apiserver writes.

use serde_json::{Value, json};

/// A `Status` reason a webhook or another server sent, as one of metav1's `StatusReason`s
/// (`""` for one that is not).
pub fn known_reason(reason: &str) -> &'static str {
    const REASONS: [&str; 19] = [
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "StoreReadError",
        "Timeout",
        "TooManyRequests",
        "BadRequest",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
    ];
    REASONS.into_iter().find(|r| *r == reason).unwrap_or("")
}

/// The reason of one cause inside an Invalid error's `details.causes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CauseReason {
    Invalid,
    Required,
    Forbidden,
    Duplicate,
    NotSupported,
    TooLong,
    TypeInvalid,
    TooMany,
}

impl CauseReason {
    /// The reason as a Status cause spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            CauseReason::Invalid => "FieldValueInvalid",
            CauseReason::Required => "FieldValueRequired",
            CauseReason::Forbidden => "FieldValueForbidden",
            CauseReason::Duplicate => "FieldValueDuplicate",
            CauseReason::NotSupported => "FieldValueNotSupported",
            CauseReason::TooLong => "FieldValueTooLong",
            CauseReason::TypeInvalid => "FieldValueTypeInvalid",
            CauseReason::TooMany => "FieldValueTooMany",
        }
    }
}

/// One field problem. `message` is the body without the field path, as the real server writes it
/// (`Invalid value: "x": detail`), so that the Status message can be composed the real way.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldCause {
    pub reason: CauseReason,
    pub field: String,
    pub message: String,
}

impl FieldCause {
    pub fn invalid(field: impl Into<String>, value: &str, detail: &str) -> Self {
        let value = serde_json::to_string(value).unwrap_or_default();
        FieldCause {
            reason: CauseReason::Invalid,
            field: field.into(),
            message: format!("Invalid value: {value}: {detail}"),
        }
    }

    /// An invalid value that Go prints as it is (`null`, a struct in `%#v`), not as a string.
    pub fn invalid_printed(field: impl Into<String>, printed: &str, detail: &str) -> Self {
        FieldCause {
            reason: CauseReason::Invalid,
            field: field.into(),
            message: format!("Invalid value: {printed}: {detail}"),
        }
    }

    pub fn required(field: impl Into<String>, detail: &str) -> Self {
        let message = if detail.is_empty() {
            "Required value".to_string()
        } else {
            format!("Required value: {detail}")
        };
        FieldCause {
            reason: CauseReason::Required,
            field: field.into(),
            message,
        }
    }

    pub fn forbidden(field: impl Into<String>, detail: &str) -> Self {
        FieldCause {
            reason: CauseReason::Forbidden,
            field: field.into(),
            message: format!("Forbidden: {detail}"),
        }
    }

    /// `Too long: may not be more than N bytes`, kube-apiserver's words for a size limit.
    pub fn too_long(field: impl Into<String>, max_bytes: usize) -> Self {
        FieldCause {
            reason: CauseReason::TooLong,
            field: field.into(),
            message: format!("Too long: may not be more than {max_bytes} bytes"),
        }
    }

    pub fn not_supported(field: impl Into<String>, value: &str, supported: &[&str]) -> Self {
        let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
        FieldCause {
            reason: CauseReason::NotSupported,
            field: field.into(),
            message: format!(
                "Unsupported value: {value:?}: supported values: {}",
                quoted.join(", ")
            ),
        }
    }

    fn to_json(&self) -> Value {
        json!({"reason": self.reason.as_str(), "message": self.message, "field": self.field})
    }
}

/// An error answer of the API server. Every failing request ends as one of these.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{code} {reason}: {message}")]
pub struct ApiError {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
    /// A continue token offered with an expired list (the Status' `metadata.continue`).
    pub list_continue: Option<String>,
    /// `Warning` headers raised before the request failed (by admission webhooks): kube-apiserver
    /// sends them with the error too. A boxed slice: an empty one allocates nothing, and it keeps
    /// every `Result` carrying the error small.
    pub warnings: Box<[String]>,
}

/// Names a resource in messages the way the real server does: `configmaps` or `jobs.batch`.
pub fn qualified_resource(group: &str, plural: &str) -> String {
    if group.is_empty() {
        plural.to_string()
    } else {
        format!("{plural}.{group}")
    }
}

fn name_details(group: &str, plural: &str, name: &str) -> Value {
    let mut d = json!({"name": name, "kind": plural});
    if !group.is_empty() {
        d["group"] = json!(group);
    }
    d
}

impl ApiError {
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
            list_continue: None,
            warnings: Box::default(),
        }
    }

    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        ApiError {
            details: Some(name_details(group, plural, name)),
            ..Self::new(
                404,
                "NotFound",
                format!("{} \"{name}\" not found", qualified_resource(group, plural)),
            )
        }
    }

    /// What the real server answers, as plain text, for a path outside every API group it serves
    /// (`/garbage`, `/apis/<unknown group>/...`).
    pub const PAGE_NOT_FOUND: &'static str = "404 page not found";

    pub fn page_not_found() -> Self {
        Self::new(404, "NotFound", Self::PAGE_NOT_FOUND)
    }

    /// Whether this error is answered as plain text rather than a Status.
    pub fn is_page_not_found(&self) -> bool {
        self.code == 404 && self.details.is_none() && self.message == Self::PAGE_NOT_FOUND
    }

    pub fn unknown_path() -> Self {
        ApiError {
            details: Some(json!({})),
            ..Self::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )
        }
    }

    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        ApiError {
            details: Some(name_details(group, plural, name)),
            ..Self::new(
                409,
                "AlreadyExists",
                format!(
                    "{} \"{name}\" already exists",
                    qualified_resource(group, plural)
                ),
            )
        }
    }

    pub fn conflict(group: &str, plural: &str, name: &str, why: &str) -> Self {
        ApiError {
            details: Some(name_details(group, plural, name)),
            ..Self::new(
                409,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{name}\": {why}",
                    qualified_resource(group, plural)
                ),
            )
        }
    }

    pub fn stale(group: &str, plural: &str, name: &str) -> Self {
        Self::conflict(
            group,
            plural,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid: `Kind.group "name" is invalid: <field>: <message>` (several causes in brackets).
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<FieldCause>) -> Self {
        let parts: Vec<String> = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        let summary = if parts.len() == 1 {
            parts[0].clone()
        } else {
            format!("[{}]", parts.join(", "))
        };
        let mut details = json!({
            "name": name,
            "kind": kind,
            "causes": causes.iter().map(FieldCause::to_json).collect::<Vec<_>>(),
        });
        if !group.is_empty() {
            details["group"] = json!(group);
        }
        // An empty name is left out, as Go's omitempty does.
        if name.is_empty()
            && let Some(m) = details.as_object_mut()
        {
            m.remove("name");
        }
        ApiError {
            details: Some(details),
            ..Self::new(
                422,
                "Invalid",
                format!(
                    "{} \"{name}\" is invalid: {summary}",
                    qualified_resource(group, kind)
                ),
            )
        }
    }

    /// 422 Invalid for a patch whose result does not decode: the cause is on the field `patch`,
    /// the object nameless, as kube-apiserver words it.
    pub fn invalid_patch(patched: &str, why: &str) -> Self {
        let quoted = serde_json::to_string(patched).unwrap_or_default();
        let message = format!("Invalid value: {quoted}: {why}");
        ApiError {
            details: Some(json!({
                "causes": [{"reason": "FieldValueInvalid", "message": message, "field": "patch"}],
            })),
            ..Self::new(
                422,
                "Invalid",
                format!(" \"\" is invalid: patch: {message}"),
            )
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }

    pub fn forbidden(group: &str, plural: &str, name: &str, why: &str) -> Self {
        ApiError {
            details: Some(name_details(group, plural, name)),
            ..Self::new(
                403,
                "Forbidden",
                format!(
                    "{} \"{name}\" is forbidden: {why}",
                    qualified_resource(group, plural)
                ),
            )
        }
    }

    /// 405 Method Not Allowed. kube-apiserver words every one alike, whatever the method and
    /// resource, with empty details; `_context` is for the reader of the calling code only.
    pub fn method_not_allowed(_context: impl Into<String>) -> Self {
        ApiError {
            details: Some(json!({})),
            ..Self::new(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )
        }
    }

    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self::new(415, "UnsupportedMediaType", message)
    }

    pub fn too_large() -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            "Request entity too large: limit is 3145728",
        )
    }

    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }

    /// kube-apiserver's `NewInternalError(err)`: the error as the only cause, prefixed.
    pub fn internal_error(err: impl std::fmt::Display) -> Self {
        let err = err.to_string();
        ApiError {
            details: Some(json!({"causes": [{"message": err}]})),
            ..Self::internal(format!("Internal error occurred: {err}"))
        }
    }

    /// The `metav1.Status` body of this error.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        // Errors kube-apiserver passes on unclassified (a strategic merge patch's) have none.
        if self.reason.is_empty()
            && let Some(m) = status.as_object_mut()
        {
            m.remove("reason");
        }
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        if let Some(token) = &self.list_continue {
            status["metadata"] = json!({"continue": token});
        }
        status
    }
}

/// The Status a successful delete answers with (for kinds that do not return the deleted object).
pub fn success_status(group: &str, plural: &str, name: &str, uid: &str) -> Value {
    let mut details = name_details(group, plural, name);
    details["uid"] = json!(uid);
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_update_message_matches_the_real_server() {
        let e = ApiError::stale("batch", "jobs", "x");
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on jobs.batch \"x\": the object has been modified; please apply your changes to the latest version and try again"
        );
        assert_eq!(
            e.to_status()["details"],
            json!({"name": "x", "kind": "jobs", "group": "batch"})
        );
    }

    #[test]
    fn invalid_joins_several_causes_in_brackets() {
        let e = ApiError::invalid(
            "",
            "ConfigMap",
            "x",
            vec![
                FieldCause::required("metadata.name", ""),
                FieldCause::forbidden("metadata.finalizers", "no"),
            ],
        );
        assert_eq!(
            e.message,
            "ConfigMap \"x\" is invalid: [metadata.name: Required value, metadata.finalizers: Forbidden: no]"
        );
        assert_eq!(
            e.to_status()["details"]["causes"][1]["reason"],
            "FieldValueForbidden"
        );
    }
}
