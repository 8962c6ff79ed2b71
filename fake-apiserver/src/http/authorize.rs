//! Authorization of a request, after authentication and before anything is read: what the
//! request asks to do, read from its method, path and query as kube-apiserver's RequestInfo reads
//! them, decided by RBAC ([`crate::semantics::rbac`]), and a 403 in kube-apiserver's words.

use http::Method;

use super::{Query, Shared};
use crate::error::ApiError;
use crate::semantics::rbac::{self, Attributes, User};
use crate::semantics::selectors::FieldSelector;

/// `Ok` when `user` may make this request, else the 403 to answer. The admin's requests (nearly
/// all) are let through without taking the store's lock.
pub(super) fn check(
    shared: &Shared,
    user: &User,
    method: &Method,
    path: &str,
    query: &Query,
) -> Result<(), ApiError> {
    if user.is_master() {
        return Ok(());
    }
    let attrs = attributes(method, path, query);
    let decision = rbac::authorize(&*shared.store(), user, &attrs);
    if decision.allowed {
        return Ok(());
    }
    Err(forbidden(user, &attrs, &decision.reason))
}

/// kube-apiserver's 403: the message, and details naming the resource (empty for a path).
pub fn forbidden(user: &User, attrs: &Attributes, reason: &str) -> ApiError {
    let mut details = serde_json::Map::new();
    if !attrs.name.is_empty() {
        details.insert("name".into(), attrs.name.clone().into());
    }
    if !attrs.group.is_empty() {
        details.insert("group".into(), attrs.group.clone().into());
    }
    if !attrs.resource.is_empty() {
        details.insert("kind".into(), attrs.resource.clone().into());
    }
    ApiError {
        details: Some(details.into()),
        ..ApiError::new(
            403,
            "Forbidden",
            rbac::forbidden_message(user, attrs, reason),
        )
    }
}

/// The verbs that may stand before a resource in a path (`/api/v1/watch/pods`); `proxy` takes no
/// subresource.
const PATH_VERBS: [&str; 2] = ["proxy", "watch"];
/// A namespace's own subresources: `/api/v1/namespaces/<ns>/status` is the namespace's status.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// What a request asks to do, as kube-apiserver's RequestInfoFactory reads it. `path` is the
/// decoded path.
pub fn attributes(method: &Method, path: &str, query: &Query) -> Attributes {
    let mut attrs = Attributes {
        verb: method.as_str().to_ascii_lowercase(),
        path: path.to_string(),
        ..Default::default()
    };
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let mut parts: &[&str] = match parts.as_slice() {
        ["api", _, _, ..] => &parts[1..],
        ["apis", group, _, _, ..] => {
            attrs.group = group.to_string();
            &parts[2..]
        }
        _ => return attrs,
    };
    attrs.resource_request = true;
    parts = &parts[1..]; // the version
    let by_path = PATH_VERBS.contains(&parts[0]);
    if by_path {
        if parts.len() < 2 {
            return attrs;
        }
        attrs.verb = parts[0].to_string();
        parts = &parts[1..];
    } else {
        attrs.verb = match *method {
            Method::POST => "create",
            Method::GET | Method::HEAD => "get",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE => "delete",
            _ => "",
        }
        .to_string();
    }
    if parts[0] == "namespaces" && parts.len() > 1 {
        attrs.namespace = parts[1].to_string();
        if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2]) {
            parts = &parts[2..];
        }
    }
    if parts.len() >= 3 && attrs.verb != "proxy" {
        attrs.subresource = parts[2].to_string();
    }
    if parts.len() >= 2 {
        attrs.name = parts[1].to_string();
    }
    attrs.resource = parts[0].to_string();
    if attrs.name.is_empty() && attrs.verb == "get" {
        attrs.verb = if query.flag("watch") { "watch" } else { "list" }.to_string();
        let named = query
            .get("fieldSelector")
            .and_then(|s| FieldSelector::parse(s).ok())
            .and_then(|s| s.exact("metadata.name").map(String::from));
        if let Some(name) = named.filter(|n| is_path_segment_name(n)) {
            attrs.name = name;
        }
    }
    if attrs.name.is_empty() && attrs.verb == "delete" {
        attrs.verb = "deletecollection".into();
    }
    attrs
}

/// Whether a name may stand in a path: not `.` or `..`, no `/` or `%`.
fn is_path_segment_name(name: &str) -> bool {
    name != "." && name != ".." && !name.contains(['/', '%'])
}

#[cfg(test)]
mod tests {
    use rstest::rstest;

    use super::*;

    #[rstest]
    #[case::get("GET", "/api/v1/namespaces/a/configmaps/x", "", ("get", "", "configmaps", "", "a", "x"))]
    #[case::list("GET", "/apis/batch/v1/jobs", "", ("list", "batch", "jobs", "", "", ""))]
    #[case::watch("GET", "/api/v1/namespaces/a/pods", "watch=1", ("watch", "", "pods", "", "a", ""))]
    #[case::watch_by_path("GET", "/api/v1/watch/namespaces/a/pods/p", "", ("watch", "", "pods", "", "a", "p"))]
    #[case::list_of_one("GET", "/api/v1/namespaces/a/pods", "fieldSelector=metadata.name%3Dp", ("list", "", "pods", "", "a", "p"))]
    #[case::create("POST", "/api/v1/namespaces/a/pods", "", ("create", "", "pods", "", "a", ""))]
    #[case::status("PUT", "/apis/batch/v1/namespaces/a/jobs/j/status", "", ("update", "batch", "jobs", "status", "a", "j"))]
    #[case::patch("PATCH", "/api/v1/nodes/n", "", ("patch", "", "nodes", "", "", "n"))]
    #[case::delete_collection("DELETE", "/api/v1/namespaces/a/secrets", "", ("deletecollection", "", "secrets", "", "a", ""))]
    #[case::a_namespace_is_in_itself("GET", "/api/v1/namespaces/a", "", ("get", "", "namespaces", "", "a", "a"))]
    #[case::namespace_status("PUT", "/api/v1/namespaces/a/status", "", ("update", "", "namespaces", "status", "a", "a"))]
    #[case::token("POST", "/api/v1/namespaces/a/serviceaccounts/s/token", "", ("create", "", "serviceaccounts", "token", "a", "s"))]
    fn resource_requests_are_read_as_kube_apiserver_reads_them(
        #[case] method: &str,
        #[case] path: &str,
        #[case] query: &str,
        #[case] expected: (&str, &str, &str, &str, &str, &str),
    ) {
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let a = attributes(&method, path, &Query::parse(Some(query)));
        assert!(a.resource_request);
        let got = (
            a.verb.as_str(),
            a.group.as_str(),
            a.resource.as_str(),
            a.subresource.as_str(),
            a.namespace.as_str(),
            a.name.as_str(),
        );
        assert_eq!(got, expected);
    }

    #[rstest]
    #[case("/version")]
    #[case("/api")]
    #[case("/api/v1")]
    #[case("/apis/batch/v1")]
    #[case("/openapi/v3/apis/batch/v1")]
    fn other_paths_are_not_resource_requests(#[case] path: &str) {
        let a = attributes(&Method::GET, path, &Query::parse(None));
        assert!(!a.resource_request);
        assert_eq!((a.verb.as_str(), a.path.as_str()), ("get", path));
    }
}
