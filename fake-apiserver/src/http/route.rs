//! URL paths to what they address.

use crate::catalog::{Catalog, ResourceType};
use crate::error::ApiError;

/// A resource request path: `/api/v1/namespaces/ns/pods/name/status` and the like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub plural: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Version,
    Health,
    /// `/api`: the core group's versions.
    CoreVersions,
    /// `/apis`: every other group.
    Groups,
    Group(String),
    /// `/api/v1` or `/apis/<group>/<version>`.
    Resources {
        group: String,
        version: String,
    },
    Resource(ResourcePath),
    /// `/openapi/v3`.
    OpenApiRoot,
    /// `/openapi/v3/api/v1` or `/openapi/v3/apis/<group>/<version>`.
    OpenApi {
        group: String,
        version: String,
    },
    /// Any other path under `/openapi/v3/`.
    OpenApiUnknown,
    NotFound,
}

/// A request path with its percent escapes decoded, as Go's URL parsing gives handlers their
/// path (`%61` is `a`, `%2F` a separator). `None` for an escape that is not `%` and two hex digits,
/// which Go's HTTP server refuses before any handler sees it.
pub fn decode_path(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let well_formed = bytes.iter().enumerate().all(|(i, b)| {
        *b != b'%'
            || bytes
                .get(i + 1..i + 3)
                .is_some_and(|hex| hex.iter().all(u8::is_ascii_hexdigit))
    });
    well_formed.then(|| {
        percent_encoding::percent_decode_str(raw)
            .decode_utf8_lossy()
            .into_owned()
    })
}

pub fn route(path: &str) -> Route {
    let segs: Vec<&str> = path
        .trim_matches('/')
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    match segs.as_slice() {
        ["version"] => Route::Version,
        ["openapi", "v3"] => Route::OpenApiRoot,
        ["openapi", "v3", "api", version] => Route::OpenApi {
            group: String::new(),
            version: version.to_string(),
        },
        ["openapi", "v3", "apis", group, version] => Route::OpenApi {
            group: group.to_string(),
            version: version.to_string(),
        },
        ["openapi", "v3", ..] => Route::OpenApiUnknown,
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", group] => Route::Group(group.to_string()),
        ["api", version] => Route::Resources {
            group: String::new(),
            version: version.to_string(),
        },
        ["apis", group, version] => Route::Resources {
            group: group.to_string(),
            version: version.to_string(),
        },
        ["api", version, rest @ ..] => resource("", version, rest),
        ["apis", group, version, rest @ ..] => resource(group, version, rest),
        _ => Route::NotFound,
    }
}

/// kube-apiserver's deprecated watch paths (`/api/v1/watch/namespaces/ns/configmaps[/name]`,
/// still used by old clients) for a GET: the list route they watch, with the query made a watch
/// narrowed to the object they name. A field selector must then pin that same name.
pub(super) fn legacy_watch(
    path: &str,
    query: &mut super::Query,
) -> Option<Result<Route, ApiError>> {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", version, "watch", rest @ ..] => ("", *version, rest),
        ["apis", group, version, "watch", rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let (list, name) = match rest {
        [_] | ["namespaces", _, _] => (rest, None),
        [_, name] => (&rest[..1], Some(*name)),
        ["namespaces", _, _, name] => (&rest[..3], Some(*name)),
        _ => return None,
    };
    if let Some(name) = name {
        let fields = query.get("fieldSelector").unwrap_or("");
        if fields.is_empty() {
            query
                .0
                .insert("fieldSelector".into(), format!("metadata.name={name}"));
        } else if let Ok(selector) = crate::semantics::selectors::FieldSelector::parse(fields)
            && selector.exact("metadata.name") != Some(name)
        {
            return Some(Err(ApiError::bad_request(
                "fieldSelector metadata.name doesn't match requested name",
            )));
        }
    }
    query.0.insert("watch".into(), "true".into());
    Some(Ok(resource(group, version, list)))
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Route {
    let path = |namespace: Option<&str>, plural: &str, name: Option<&&str>, sub: Option<&&str>| {
        Route::Resource(ResourcePath {
            group: group.to_string(),
            version: version.to_string(),
            namespace: namespace.map(String::from),
            plural: plural.to_string(),
            name: name.map(|s| s.to_string()),
            subresource: sub.map(|s| s.to_string()),
        })
    };
    match rest {
        // A namespace object itself, or one of its subresources.
        ["namespaces"] => path(None, "namespaces", None, None),
        ["namespaces", name] => path(None, "namespaces", Some(name), None),
        ["namespaces", name, sub @ ("status" | "finalize")] => {
            path(None, "namespaces", Some(name), Some(sub))
        }
        ["namespaces", ns, plural] => path(Some(ns), plural, None, None),
        ["namespaces", ns, plural, name] => path(Some(ns), plural, Some(name), None),
        ["namespaces", ns, plural, name, sub] => path(Some(ns), plural, Some(name), Some(sub)),
        [plural] => path(None, plural, None, None),
        [plural, name] => path(None, plural, Some(name), None),
        [plural, name, sub] => path(None, plural, Some(name), Some(sub)),
        _ => Route::NotFound,
    }
}

/// Whether kube-apiserver hands paths of this group to the apiextensions server (no built-in
/// kind lives in it): there a path it cannot serve falls through to the plain-text
/// `404 page not found`, where a built-in group's handler answers a NotFound Status.
pub fn is_custom_group(catalog: &Catalog, group: &str) -> bool {
    !group.is_empty()
        && !catalog
            .types()
            .iter()
            .any(|t| t.group == group && t.crd.is_none())
}

/// How the apiextensions server refuses a path to a custom resource it serves: a path of the
/// other scope falls through to the plain-text 404; a subresource the version does not have is
/// answered as if the object were missing.
pub fn custom_resource_miss(rt: &ResourceType, path: &ResourcePath) -> Option<ApiError> {
    rt.crd.as_ref()?;
    let other_scope = match rt.namespaced {
        true => path.namespace.is_none() && path.name.is_some(),
        false => path.namespace.is_some(),
    };
    if other_scope {
        return Some(ApiError::page_not_found());
    }
    match path.subresource.as_deref() {
        None => None,
        Some("status") if rt.status => None,
        Some("scale") if rt.scale.is_some() => None,
        Some(_) => Some(ApiError::not_found(
            &rt.group,
            &rt.plural,
            path.name.as_deref().unwrap_or(""),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_percent_decoded_and_malformed_escapes_refused() {
        assert_eq!(
            decode_path("/api/v1/namespaces/%64efault").as_deref(),
            Some("/api/v1/namespaces/default")
        );
        assert_eq!(decode_path("/a%2Fb").as_deref(), Some("/a/b"));
        for bad in ["/api/%zz", "/api/%4", "/api/%"] {
            assert_eq!(decode_path(bad), None, "{bad}");
        }
    }

    fn rp(
        group: &str,
        ns: Option<&str>,
        plural: &str,
        name: Option<&str>,
        sub: Option<&str>,
    ) -> Route {
        Route::Resource(ResourcePath {
            group: group.into(),
            version: "v1".into(),
            namespace: ns.map(Into::into),
            plural: plural.into(),
            name: name.map(Into::into),
            subresource: sub.map(Into::into),
        })
    }

    #[test]
    fn routes_resource_paths() {
        assert_eq!(
            route("/api/v1/namespaces"),
            rp("", None, "namespaces", None, None)
        );
        assert_eq!(
            route("/api/v1/namespaces/ns"),
            rp("", None, "namespaces", Some("ns"), None)
        );
        assert_eq!(
            route("/api/v1/namespaces/ns/status"),
            rp("", None, "namespaces", Some("ns"), Some("status"))
        );
        assert_eq!(
            route("/api/v1/namespaces/ns/pods"),
            rp("", Some("ns"), "pods", None, None)
        );
        assert_eq!(
            route("/apis/batch/v1/namespaces/ns/jobs/j/status"),
            rp("batch", Some("ns"), "jobs", Some("j"), Some("status"))
        );
        assert_eq!(
            route("/api/v1/nodes/n1"),
            rp("", None, "nodes", Some("n1"), None)
        );
        assert_eq!(route("/apis/apps"), Route::Group("apps".into()));
        assert_eq!(route("/nonsense/path"), Route::NotFound);
    }
}
