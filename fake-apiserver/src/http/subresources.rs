//! The HTTP side of the subresources that are more than a view of the stored object (pod binding,
//! eviction, ephemeral containers and streaming; CSR approval and status; service account tokens
//! and TokenReview) and of the virtual ComponentStatus list. The decisions live in the store.

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::Value;

use super::{
    Query, ResponseBody, Shared, View, decode_body, dry_run, field_validation, json_response,
    route::ResourcePath,
};
use crate::catalog::ResourceType;
use crate::catalog::bootstrap::component_statuses;
use crate::error::{ApiError, ApiResult};
use crate::semantics::patch::{PatchKind, unsupported_patch};
use crate::semantics::rbac::User;
use crate::store::{CsrWrite, ListPage, WriteOptions};

/// What a request brings besides its path.
pub(super) struct Call<'a> {
    pub method: &'a Method,
    pub query: &'a Query,
    pub content_type: &'a str,
    pub body: &'a [u8],
    pub user_agent: &'a str,
    pub view: View,
    pub user: &'a User,
}

type Answer = ApiResult<Response<ResponseBody>>;

fn not_allowed() -> ApiError {
    ApiError::method_not_allowed("a subresource that does not take this method")
}

fn no_content() -> Response<ResponseBody> {
    let mut resp = Response::new(Full::new(Bytes::new()).boxed_unsync());
    *resp.status_mut() = StatusCode::NO_CONTENT;
    resp
}

impl Call<'_> {
    fn manager(&self) -> String {
        match self.query.get("fieldManager") {
            Some(m) if !m.is_empty() => m.to_string(),
            _ => self
                .user_agent
                .split('/')
                .next()
                .filter(|p| !p.is_empty())
                .unwrap_or("unknown")
                .to_string(),
        }
    }

    fn write_options(&self, body: Option<&Value>, options: &str) -> ApiResult<WriteOptions> {
        Ok(WriteOptions {
            dry_run: dry_run(self.query, body, options)?,
            field_validation: field_validation(self.query, options)?,
            field_manager: self.manager(),
            requester: super::requester(self.user),
        })
    }

    /// The body of a create on `kind`, decoded as the real server decodes it.
    fn decode(&self, rt: &ResourceType) -> ApiResult<Value> {
        decode_body(rt, self.content_type, self.body).map(|(v, _)| v)
    }

    /// A PUT's body or a PATCH's type, for subresources that take both.
    fn put_or_patch(&self, rt: &ResourceType) -> ApiResult<(Option<PatchKind>, Value)> {
        match *self.method {
            Method::PUT => Ok((None, self.decode(rt)?)),
            Method::PATCH => {
                let kind = PatchKind::from_content_type(self.content_type)
                    .ok_or_else(|| unsupported_patch(rt.crd.is_some()))?;
                if kind == PatchKind::Apply {
                    return Err(unsupported_patch(rt.crd.is_some()));
                }
                Ok((Some(kind), Value::Null))
            }
            _ => Err(not_allowed()),
        }
    }
}

/// Serve the request if it is one of these; `None` leaves it to the generic handlers.
pub(super) fn serve(
    shared: &Shared,
    rt: &ResourceType,
    path: &ResourcePath,
    call: &Call<'_>,
) -> Option<Answer> {
    let ns = path.namespace.as_deref().unwrap_or("");
    let name = path.name.as_deref();
    let sub = path.subresource.as_deref();
    let answer = match (rt.group.as_str(), rt.plural.as_str(), name, sub) {
        ("", "componentstatuses", _, None) => component_status(shared, rt, name, call),
        ("", "bindings", None, None) if *call.method == Method::POST => (|| {
            let binding = call.decode(rt)?;
            let answer = shared.store().bind_pod(ns, None, &binding)?;
            Ok(json_response(201, &answer))
        })(),
        ("", "pods", Some(name), Some(sub)) => pod(shared, rt, ns, name, sub, call)?,
        ("", "serviceaccounts", Some(name), Some("token")) => {
            if *call.method != Method::POST {
                return Some(Err(not_allowed()));
            }
            token_request(shared, ns, name, call)
        }
        ("authentication.k8s.io", "tokenreviews", None, None) if *call.method == Method::POST => {
            (|| {
                let review = call.decode(rt)?;
                let answer = shared.store().token_review(review, &call.manager())?;
                Ok(json_response(201, &answer))
            })()
        }
        ("certificates.k8s.io", "certificatesigningrequests", Some(name), Some(s))
            if s == "approval" || s == "status" && *call.method != Method::GET =>
        {
            let which = if s == "approval" {
                CsrWrite::Approval
            } else {
                CsrWrite::Status
            };
            csr(shared, rt, name, which, call)
        }
        _ => return None,
    };
    Some(answer)
}

fn component_status(
    shared: &Shared,
    rt: &ResourceType,
    name: Option<&str>,
    call: &Call<'_>,
) -> Answer {
    if *call.method != Method::GET {
        return Err(not_allowed());
    }
    let now = shared.clock.now();
    let all = component_statuses();
    match name {
        Some(name) => {
            let found = all
                .into_iter()
                .find(|c| c["metadata"]["name"] == name)
                .ok_or_else(|| ApiError::not_found("", "componentstatus", name))?;
            let answer = call.view.object_answer(rt, found, now)?;
            Ok(json_response(200, &answer))
        }
        None if call.query.flag("watch") => Err(ApiError {
            details: Some(serde_json::json!({"kind": "componentstatuses"})),
            ..ApiError::new(
                405,
                "MethodNotAllowed",
                "watch is not supported on resources of kind \"componentstatuses\"",
            )
        }),
        None => {
            let page = ListPage {
                items: all,
                resource_version: 0,
                continue_token: None,
                remaining: None,
            };
            let mut list = call.view.list_answer(rt, &page, now)?;
            // A virtual list has no resourceVersion.
            if list["kind"] == "ComponentStatusList" {
                list["metadata"] = serde_json::json!({});
            }
            Ok(json_response(200, &list))
        }
    }
}

fn pod(
    shared: &Shared,
    rt: &ResourceType,
    ns: &str,
    name: &str,
    sub: &str,
    call: &Call<'_>,
) -> Option<Answer> {
    let method = call.method;
    Some(match sub {
        "binding" | "eviction" if *method != Method::POST => Err(not_allowed()),
        "binding" => (|| {
            // One statement per lock: the store's mutex is not reentrant.
            let bindings = shared.store().catalog().lookup("", "v1", "bindings");
            let binding = call.decode(bindings.as_deref().unwrap_or(rt))?;
            let answer = shared.store().bind_pod(ns, Some(name), &binding)?;
            Ok(json_response(201, &answer))
        })(),
        "eviction" => (|| {
            let eviction = call.decode(rt)?;
            let answer = shared.store().evict_pod(ns, name, &eviction)?;
            Ok(json_response(201, &answer))
        })(),
        "log" if *method != Method::GET => Err(not_allowed()),
        "exec" | "attach" | "portforward" if !matches!(*method, Method::GET | Method::POST) => {
            Err(not_allowed())
        }
        "log" | "exec" | "attach" | "portforward" => shared
            .store()
            .pod_stream(ns, name, sub)
            .map(|_| no_content()),
        "ephemeralcontainers" => match *method {
            Method::GET => shared
                .store()
                .get(rt, ns, name)
                .map(|p| json_response(200, &p)),
            Method::PUT | Method::PATCH => (|| {
                let (patch, body) = call.put_or_patch(rt)?;
                let opts = call.write_options(None, "UpdateOptions")?;
                let pod = shared
                    .store()
                    .write_ephemeral_containers(ns, name, patch, body, call.body, &opts)?;
                Ok(json_response(200, &pod))
            })(),
            _ => Err(not_allowed()),
        },
        _ => return None,
    })
}

fn token_request(shared: &Shared, ns: &str, name: &str, call: &Call<'_>) -> Answer {
    // TokenRequest is no served kind of its own: its body decodes like any other (and protobuf,
    // which `kubectl create token` sends, gets the same 415).
    let sa = shared.store().catalog().lookup("", "v1", "serviceaccounts");
    let sa = sa.ok_or_else(ApiError::unknown_path)?;
    let body = call.decode(&sa)?;
    let answer = shared
        .store()
        .token_request(ns, name, body, &call.manager())?;
    Ok(json_response(201, &answer))
}

fn csr(shared: &Shared, rt: &ResourceType, name: &str, which: CsrWrite, call: &Call<'_>) -> Answer {
    if *call.method == Method::GET {
        return shared
            .store()
            .get(rt, "", name)
            .map(|c| json_response(200, &c));
    }
    let (patch, body) = call.put_or_patch(rt)?;
    let opts = call.write_options(None, "UpdateOptions")?;
    let csr = shared
        .store()
        .write_csr(rt, name, which, patch, body, call.body, &opts)?;
    Ok(json_response(200, &csr))
}
