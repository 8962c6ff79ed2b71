//! What a failed answer of the fake API server must look like, for the proptest properties and the
//! `cargo fuzz` targets (which include this file): a `metav1.Status` whose code is the HTTP code,
//! except where kube-apiserver itself answers otherwise and the fake copies it.
//!
//! A 5xx is a bug unless it is one kube-apiserver gives too for the same request; those are
//! listed in [`DELIBERATE_SERVER_ERRORS`].

use serde_json::Value;

/// The beginnings of the 5xx messages the fake gives because kube-apiserver gives them.
pub const DELIBERATE_SERVER_ERRORS: &[&str] = &[
    // The storage layer and the watch cache parse resourceVersion and answer a bad one as 500.
    "resourceVersion: Invalid value: ",
    "strconv.ParseUint: parsing ",
    // A resourceVersion not reached within 3 s: the watch cache's 504.
    "Timeout: Too large resource version: ",
    // Strategic merge patch's unclassified errors.
    "unknown patch type: ",
    "map: ",
    "merging lists cannot yet be specified in the patch",
    // structured-merge-diff refusing an applied field a custom resource's schema does not declare.
    "failed to create typed patch object ",
    // Binding validation that kube-apiserver answers as an internal error.
    "target.name: Required value",
    // Pod subresources that need a kubelet, and eviction with two disruption budgets.
    "no kubelet answers for node ",
    "This pod has more than one PodDisruptionBudget",
];

/// What is wrong with an answer, if anything. `path` is the request's path; only failures
/// (codes of 400 and more) are checked.
pub fn problem(path: &str, code: u16, content_type: &str, body: &[u8]) -> Option<String> {
    if code < 400 {
        return None;
    }
    // kube-apiserver's mux answers paths nobody serves in plain text.
    if code == 404 && content_type.starts_with("text/plain") && body == b"404 page not found\n" {
        return None;
    }
    // Go's HTTP server answers a path with a malformed percent-escape itself, in plain text.
    if code == 400
        && content_type.starts_with("text/plain")
        && body == b"400 Bad Request"
        && has_malformed_escape(path)
    {
        return None;
    }
    // Its OpenAPI v3 handler answers a document it does not have with an empty 404.
    if code == 404 && body.is_empty() && path.starts_with("/openapi/v3") {
        return None;
    }
    if !content_type.starts_with("application/json") {
        return Some(format!(
            "a {code} of type {content_type:?}, not a JSON Status"
        ));
    }
    let status: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Some(format!("a {code} whose body is not JSON: {e}")),
    };
    if status["kind"] != "Status" || status["apiVersion"] != "v1" {
        return Some(format!("a {code} whose body is not a v1 Status: {status}"));
    }
    if status["status"] != "Failure" {
        return Some(format!("a {code} whose Status is not a Failure: {status}"));
    }
    if status["code"] != code {
        return Some(format!("a {code} whose Status has another code: {status}"));
    }
    let message = status["message"].as_str().unwrap_or("");
    if code >= 500
        && !DELIBERATE_SERVER_ERRORS
            .iter()
            .any(|m| message.starts_with(m))
    {
        return Some(format!("a {code} kube-apiserver would not give: {status}"));
    }
    None
}

/// Whether a raw path has a `%` that two hex digits do not follow.
fn has_malformed_escape(path: &str) -> bool {
    let bytes = path.split('?').next().unwrap_or("").as_bytes();
    bytes.iter().enumerate().any(|(i, b)| {
        *b == b'%'
            && !(bytes.get(i + 1).is_some_and(u8::is_ascii_hexdigit)
                && bytes.get(i + 2).is_some_and(u8::is_ascii_hexdigit))
    })
}
