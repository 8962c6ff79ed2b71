//! The HTTP adapter: one `tower::Service` that serves the store. `kube::Client` uses it directly
//! in-process (no socket); the TCP server wraps the same service for kubectl and other processes.

pub mod auth;
mod authorize;
mod discovery;
pub(crate) mod encode;
pub mod media;
mod openapi;
pub mod protobuf;
mod route;
mod subresources;
mod table;
mod watch;
mod webhook_targets;

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, Limited, combinators::UnsyncBoxBody};
use serde_json::{Value, json};

use crate::catalog::ResourceType;
use crate::clock::Clock;
use crate::error::{ApiError, ApiResult, FieldCause};
use crate::faults::{DropWhen, Faults, RequestInfo, Verb};
use crate::semantics::patch::{PatchKind, unsupported_patch};
use crate::semantics::rbac::User;
use crate::semantics::selectors::{FieldSelector, LabelSelector};
use crate::store::webhook_points::{AdmissionPass, RequestFacts};
use crate::store::{
    Answer, DeleteOptions, ListOptions, Propagation, Store, Subresource, WriteOptions,
};
use crate::webhooks::config::Phase;
use route::{ResourcePath, Route};

pub use discovery::KUBERNETES_MINOR;

/// Response bodies: whole JSON documents or a streamed watch.
pub type ResponseBody = UnsyncBoxBody<Bytes, Infallible>;

/// The largest request body the real server takes.
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// State shared by every connection of one server.
pub struct Shared {
    pub store: Mutex<Store>,
    pub clock: Clock,
    pub faults: Faults,
}

impl Shared {
    pub fn store(&self) -> MutexGuard<'_, Store> {
        self.store
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The API server as a `tower::Service`. Its error is the transport's: during a partition it
/// refuses requests like a closed port would.
#[derive(Clone)]
pub struct ApiService {
    pub(crate) shared: Arc<Shared>,
    /// Who may call: everyone in-process; a TCP endpoint may require a bearer token.
    pub(crate) auth: Option<Arc<auth::Authenticator>>,
    /// Who the connection's client certificate says its client is.
    pub(crate) peer: Option<crate::tls::Peer>,
}

impl<B> tower::Service<Request<B>> for ApiService
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<ResponseBody>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let shared = self.shared.clone();
        let auth = self.auth.clone();
        let peer = self.peer.clone();
        Box::pin(async move {
            if shared.faults.is_partitioned() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionRefused,
                    "partitioned by a fault",
                ));
            }
            let accepted = media::Accept::parse(
                req.headers()
                    .get(header::ACCEPT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or(""),
            );
            let user =
                match auth::authenticate(auth.as_deref(), &shared, req.headers(), peer.as_ref()) {
                    Ok(user) => user,
                    Err(e) => {
                        let (parts, body) = req.into_parts();
                        let resp = encoded(error_response(&e), &accepted).await;
                        return Ok(before_the_body(&parts.headers, body, resp).await);
                    }
                };
            let mut dropped = None;
            // How long each answer took to start (a watch's stream goes on after it), for
            // telling a slow server from a slow client.
            let began = std::time::Instant::now();
            let (method, uri) = (req.method().clone(), req.uri().clone());
            let resp = handle(shared, req, user.as_ref(), &accepted, &mut dropped).await;
            let resp = encoded(resp, &accepted).await;
            tracing::debug!(%method, %uri, status = resp.status().as_u16(), elapsed_ms = began.elapsed().as_secs_f64() * 1e3, "answered");
            match dropped {
                // Served or not, the client sees its connection reset.
                Some(_) => Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "connection dropped by a fault",
                )),
                None => Ok(resp),
            }
        })
    }
}

/// Go's HTTP server reads at most this much of a body its handler left unread (`net/http`'s
/// `maxPostHandlerReadBytes`); with more left, it hangs up after the answer.
const MAX_UNREAD_BODY_BYTES: usize = 256 << 10;

/// How long a refused request's body may take to arrive before its connection is ended anyway.
const UNREAD_BODY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// An answer given before the request's body was read (a 401 or 403, as kube-apiserver's filters
/// answer): the rest of the body is read first, as Go's HTTP server does, so that a keep-alive
/// connection serves the client's next request. A body too long for Go to read that way, a
/// broken or stalled one, or one the client waits to be asked for (`Expect: 100-continue`) ends
/// the connection instead, and the answer says so with `Connection: close`, as Go's answer does.
/// A long body is still read and thrown away (up to the most the server takes, for at most
/// [`UNREAD_BODY_WAIT`]) before the connection ends: a connection closed with unread data is
/// reset, and the reset can destroy the answer before the client reads it (Go's server waits in
/// a lingering close for the same reason).
async fn before_the_body<B>(
    headers: &http::HeaderMap,
    body: B,
    resp: Response<ResponseBody>,
) -> Response<ResponseBody>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    let expects_continue = headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if expects_continue && declared != Some(0) {
        return closing(resp);
    }
    let read = tokio::time::timeout(UNREAD_BODY_WAIT, discard(body, MAX_BODY_BYTES)).await;
    match read {
        Ok(Some(n))
            if n <= MAX_UNREAD_BODY_BYTES && declared.is_none_or(|d| d < MAX_UNREAD_BODY_BYTES) =>
        {
            resp
        }
        _ => closing(resp),
    }
}

/// Read a body to its end without keeping it: how many bytes it had, or `None` when it broke or
/// went past `limit`.
async fn discard<B>(body: B, limit: usize) -> Option<usize>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
{
    let mut body = std::pin::pin!(body);
    let mut read = 0usize;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.ok()?.into_data() {
            read += data.len();
            if read > limit {
                return None;
            }
        }
    }
    Some(read)
}

/// An answer after which the connection ends (the rest of the request's body is unread), saying
/// so: a client then opens a new connection for its next request instead of failing on this one.
fn closing(mut resp: Response<ResponseBody>) -> Response<ResponseBody> {
    resp.headers_mut().insert(
        header::CONNECTION,
        header::HeaderValue::from_static("close"),
    );
    resp
}

/// Who asks, as a write records it for the answers that depend on it: `None` for the endpoint's
/// admin, so that the admin's writes copy nothing. (Another member of `system:masters`, such as
/// envtest's client-certificate admin, is its own user.)
fn requester(user: &User) -> Option<User> {
    // Nearly every request is the admin's own static user: a pointer check settles those.
    let admin = auth::admin();
    (!std::ptr::eq(user, admin) && user != admin).then(|| user.clone())
}

/// A JSON answer, written as kube-apiserver writes it (Go's field order, a trailing newline).
fn json_response(code: u16, body: &Value) -> Response<ResponseBody> {
    json_bytes_response(code, Bytes::from(encode::document(body)))
}

fn json_bytes_response(code: u16, bytes: Bytes) -> Response<ResponseBody> {
    let mut resp = Response::new(Full::new(bytes).boxed_unsync());
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    resp
}

fn error_response(e: &ApiError) -> Response<ResponseBody> {
    if e.is_page_not_found() {
        return text_response(404, "404 page not found\n");
    }
    let mut resp = json_response(e.code, &e.to_status());
    add_warnings(&mut resp, e.warnings.to_vec());
    // kube-apiserver repeats a Status' retryAfterSeconds as the Retry-After header.
    let retry_after = e
        .details
        .as_ref()
        .and_then(|d| d["retryAfterSeconds"].as_u64());
    if let Some(seconds) = retry_after.filter(|s| *s > 0) {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
    }
    resp
}

/// kube-apiserver's OpenAPI v3 handler answers a path it has no document for with a bare 404.
fn empty_not_found() -> Response<ResponseBody> {
    let mut resp = Response::new(Full::new(Bytes::new()).boxed_unsync());
    *resp.status_mut() = StatusCode::NOT_FOUND;
    resp
}

fn text_response(code: u16, text: &'static str) -> Response<ResponseBody> {
    let mut resp = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed_unsync());
    *resp.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::OK);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// Query parameters; tolerates empty pairs (`?&watch=true`, as kube-rs sends).
struct Query(HashMap<String, String>);

impl Query {
    fn parse(q: Option<&str>) -> Self {
        let mut params = HashMap::new();
        for (k, v) in url::form_urlencoded::parse(q.unwrap_or("").as_bytes()).into_owned() {
            // A parameter given twice counts with its first value, as in the real server.
            if !k.is_empty() {
                params.entry(k).or_insert(v);
            }
        }
        Query(params)
    }
    fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }
    /// A boolean parameter as apimachinery reads it: absent, `0` and any case of `false` are
    /// false; anything else (`True`, `yes`, an empty value) is true. The Python client sends `True`.
    fn flag(&self, k: &str) -> bool {
        self.optional_flag(k).unwrap_or(false)
    }
    fn optional_flag(&self, k: &str) -> Option<bool> {
        self.get(k)
            .map(|v| !(v == "0" || v.eq_ignore_ascii_case("false")))
    }
}

/// Serve one request. A fault may drop its connection: `dropped` says so, and when (the answer
/// is then thrown away).
async fn handle<B>(
    shared: Arc<Shared>,
    req: Request<B>,
    user: &User,
    accepted: &media::Accept,
    dropped: &mut Option<DropWhen>,
) -> Response<ResponseBody>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (parts, body) = req.into_parts();
    let Some(path) = route::decode_path(parts.uri.path()) else {
        // Go's HTTP server answers a malformed URL itself, in plain text, and hangs up.
        return closing(text_response(400, "400 Bad Request"));
    };
    let mut query = Query::parse(parts.uri.query());
    // Before the body is read, as kube-apiserver's filters do.
    if let Err(e) = authorize::check(&shared, user, &parts.method, &path, &query) {
        return before_the_body(&parts.headers, body, error_response(&e)).await;
    }
    let legacy_watch = match parts.method {
        Method::GET => route::legacy_watch(&path, &mut query),
        _ => None,
    };
    let route = match legacy_watch {
        Some(Ok(route)) => route,
        Some(Err(e)) => return error_response(&e),
        None => route::route(&path),
    };
    let body = match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return closing(error_response(&ApiError::too_large()));
        }
        Err(e) => {
            return closing(error_response(&ApiError::bad_request(format!(
                "reading the request body: {e}"
            ))));
        }
    };
    if shared.faults.has_rules() {
        let mut info = request_info(&parts.method, &route, &query);
        info.user_agent = parts
            .headers
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        if info.verb == Some(Verb::Create) && info.name.is_empty() {
            // A create names its object in the body, not the URL.
            info.name = serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v["metadata"]["name"].as_str().map(String::from))
                .unwrap_or_default();
        }
        let verdict = shared.faults.judge(&info);
        // Which request drew which fault, in the order they were drawn: two runs of one seed
        // that end differently differ first here.
        tracing::trace!(target: "fake_apiserver::faults", at = %shared.clock.now(), verb = ?info.verb, resource = %info.resource, subresource = %info.subresource, namespace = %info.namespace, name = %info.name, agent = %info.user_agent, ?verdict, "judged");
        if !verdict.delay.is_zero() {
            shared.clock.sleep(verdict.delay).await;
        }
        *dropped = verdict.drop;
        if verdict.drop == Some(DropWhen::Request) {
            return empty_not_found();
        }
        if let Some(e) = verdict.fail {
            return error_response(&e);
        }
    }
    tracing::debug!(method = %parts.method, uri = %parts.uri, "request");
    let pretty = wants_pretty(&query, &parts.headers);
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let aggregated = discovery::wants_aggregated(accept);
    // `/version`, `/api` and a group version's resource list serve GET only, as kube-apiserver's
    // go-restful routes do; `/apis` and a group's versions answer any method.
    let get_only = parts.method == Method::GET;
    // Discovery documents have protobuf forms; `/version` has none.
    let discovery = matches!(
        route,
        Route::CoreVersions | Route::Groups | Route::Group(_) | Route::Resources { .. }
    );
    if route == Route::Version && accepted.choose(false).is_none() {
        return error_response(&not_acceptable_media());
    }
    let result = match route {
        Route::Version | Route::CoreVersions if !get_only => {
            Err(ApiError::method_not_allowed("a discovery document"))
        }
        Route::Version => Ok(json_bytes_response(
            200,
            Bytes::from(encode::version_document(&discovery::version())),
        )),
        Route::Health => return text_response(200, "ok"),
        Route::CoreVersions | Route::Groups if aggregated.is_some() => {
            let media_type = aggregated.unwrap_or(discovery::AGGREGATED_V2);
            let body =
                discovery::aggregated(shared.store().catalog(), route == Route::CoreVersions);
            let mut resp = json_response(200, &body);
            if let Ok(v) = header::HeaderValue::from_str(media_type) {
                resp.headers_mut().insert(header::CONTENT_TYPE, v);
            }
            Ok(resp)
        }
        Route::CoreVersions | Route::Groups if discovery::not_acceptable(accept).is_some() => {
            Err(discovery::not_acceptable(accept).unwrap_or_else(ApiError::unknown_path))
        }
        Route::CoreVersions => Ok(json_response(200, &discovery::core_versions())),
        Route::Groups => Ok(json_response(
            200,
            &discovery::groups(shared.store().catalog()),
        )),
        Route::Group(g) => discovery::group(shared.store().catalog(), &g)
            .map(|v| json_response(200, &v))
            .ok_or_else(|| discovery::not_served(&g)),
        Route::Resources { group, version } => {
            match discovery::resources(&shared.store(), &group, &version) {
                None => Err(discovery::not_served(&group)),
                Some(_) if !get_only => Err(ApiError::method_not_allowed("a resource list")),
                Some(v) => Ok(json_response(200, &v)),
            }
        }
        Route::Resource(path) => {
            let deprecated = (
                path.group.clone(),
                path.version.clone(),
                path.plural.clone(),
            );
            let view = match View::from_accept(accept, query.get("includeObject")) {
                Ok(view) => view,
                Err(e) => return error_response(&e),
            };
            let user_agent = parts
                .headers
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let req = RequestParts {
                method: &parts.method,
                query: &query,
                content_type: &content_type,
                body: &body,
                view,
                accepted,
                user_agent,
                user,
            };
            let answer = serve_resource(&shared, path, req).await;
            Ok(warn_deprecated(answer, &shared, &deprecated))
        }
        Route::OpenApiRoot => {
            // kube-apiserver leaves the type of its root document to Go's content sniffing.
            let mut resp = json_response(200, &openapi::root(shared.store().catalog()));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                header::HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            Ok(resp)
        }
        Route::OpenApi { group, version } => {
            // Build from a snapshot of the catalogue, so schema generation does not hold the lock.
            let catalog = shared.store().catalog().clone();
            Ok(openapi::document(&catalog, &group, &version)
                .map_or_else(empty_not_found, |v| json_response(200, &v)))
        }
        Route::OpenApiUnknown => Ok(empty_not_found()),
        Route::NotFound => Err(ApiError::page_not_found()),
    };
    let mut resp = result.unwrap_or_else(|e| error_response(&e));
    if discovery && resp.status().is_success() {
        resp.extensions_mut()
            .insert(accepted.choose(true).unwrap_or(media::Media::Json));
    }
    if pretty { indented(resp).await } else { resp }
}

/// kube-apiserver's 406 when no media type the Accept header offers can carry the answer.
fn not_acceptable_media() -> ApiError {
    ApiError::new(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
    )
}

/// Whether kube-apiserver would indent the answer: `?pretty=true` (as Go's ParseBool reads it),
/// `pretty=1` on the Accept header's media type, or a curl, wget or browser user agent.
fn wants_pretty(query: &Query, headers: &http::HeaderMap) -> bool {
    if let Some(p) = query.get("pretty").filter(|p| !p.is_empty()) {
        return matches!(p, "1" | "t" | "T" | "true" | "TRUE" | "True");
    }
    let header = |h| headers.get(h).and_then(|v| v.to_str().ok()).unwrap_or("");
    header(header::ACCEPT)
        .split([',', ';'])
        .any(|p| p.trim() == "pretty=1")
        || ["curl", "Wget", "Mozilla/5.0"]
            .iter()
            .any(|ua| header(header::USER_AGENT).starts_with(ua))
}

/// A JSON answer indented as Go's `json.Indent` does it, without the trailing newline. Watch
/// streams and documents already indented are left alone.
async fn indented(resp: Response<ResponseBody>) -> Response<ResponseBody> {
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if !json || resp.headers().contains_key(header::TRANSFER_ENCODING) {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let Ok(bytes) = body
        .collect()
        .await
        .map(http_body_util::Collected::to_bytes);
    let compact = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let body = if compact.contains(&b'\n') {
        bytes.clone()
    } else {
        Bytes::from(encode::indent(compact))
    };
    Response::from_parts(parts, Full::new(body).boxed_unsync())
}

/// The answer in the encoding negotiated. Answers are made as JSON; one whose kind has a protobuf
/// form is rewritten when protobuf was chosen: a resource's answer carries the choice made for
/// it (a [`media::Media`] extension), and a Status elsewhere follows the Accept header's first
/// range, as kube-apiserver encodes its errors. Watch streams choose for themselves.
async fn encoded(resp: Response<ResponseBody>, accepted: &media::Accept) -> Response<ResponseBody> {
    use media::Media;
    let chosen = resp.extensions().get::<Media>().copied();
    let json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let wanted = chosen.unwrap_or_else(|| accepted.for_status());
    if wanted != Media::Protobuf || !json || resp.headers().contains_key(header::TRANSFER_ENCODING)
    {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(bytes) = body
        .collect()
        .await
        .map(http_body_util::Collected::to_bytes);
    let keep = |parts, bytes| Response::from_parts(parts, Full::new(bytes).boxed_unsync());
    let Ok(value) = serde_json::from_slice::<Value>(&bytes) else {
        return keep(parts, bytes);
    };
    let is_status = value["kind"] == "Status" && value["apiVersion"] == "v1";
    if chosen.is_none() && !is_status {
        return keep(parts, bytes);
    }
    let encoded = match protobuf::document(&value) {
        None => return keep(parts, bytes),
        Some(Ok(pb)) => pb,
        Some(Err(e)) => {
            // A stored object that does not fit its Go type: the real server cannot have one.
            tracing::error!(%e, "an answer does not encode as protobuf");
            let status =
                ApiError::internal(format!("encoding the answer as protobuf: {e}")).to_status();
            parts.status = StatusCode::INTERNAL_SERVER_ERROR;
            match protobuf::document(&status) {
                Some(Ok(pb)) => pb,
                _ => return keep(parts, Bytes::from(encode::document(&status))),
            }
        }
    };
    // Aggregated discovery names its type in the media type, as its JSON does.
    let content_type = match (value["kind"].as_str(), value["apiVersion"].as_str()) {
        (Some("APIGroupDiscoveryList"), Some(v)) => format!(
            "{};g=apidiscovery.k8s.io;v={};as=APIGroupDiscoveryList",
            protobuf::MEDIA_TYPE,
            v.rsplit('/').next().unwrap_or("")
        ),
        _ => protobuf::MEDIA_TYPE.to_string(),
    };
    if let Ok(v) = header::HeaderValue::from_str(&content_type) {
        parts.headers.insert(header::CONTENT_TYPE, v);
    }
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Full::new(Bytes::from(encoded)).boxed_unsync())
}

fn request_info(method: &Method, route: &Route, query: &Query) -> RequestInfo {
    let Route::Resource(p) = route else {
        return RequestInfo {
            verb: Some(Verb::Get),
            ..Default::default()
        };
    };
    let verb = match (method, p.name.is_some()) {
        (&Method::GET, true) => Verb::Get,
        (&Method::GET, false) if query.flag("watch") => Verb::Watch,
        (&Method::GET, false) => Verb::List,
        (&Method::POST, _) => Verb::Create,
        (&Method::PUT, _) => Verb::Update,
        (&Method::PATCH, _) => Verb::Patch,
        (&Method::DELETE, true) => Verb::Delete,
        (&Method::DELETE, false) => Verb::DeleteCollection,
        _ => return RequestInfo::default(),
    };
    RequestInfo {
        verb: Some(verb),
        group: p.group.clone(),
        resource: p.plural.clone(),
        subresource: p.subresource.clone().unwrap_or_default(),
        namespace: p.namespace.clone().unwrap_or_default(),
        name: p.name.clone().unwrap_or_default(),
        user_agent: String::new(),
    }
}

/// Decode a create or update body (JSON or YAML) as kube-apiserver does: first its apiVersion and
/// kind, in the decoder's words when it cannot ([`check_kind`] compares them with the URL's), then
/// (in the store) the kind's typed form.
/// A request body as JSON, with the fields a JSON body names twice (found in the same pass).
fn decode_body(
    rt: &ResourceType,
    content_type: &str,
    body: &[u8],
) -> ApiResult<(Value, Vec<String>)> {
    use crate::semantics::go_decode;
    let mime = content_type.split(';').next().unwrap_or("").trim();
    let unrecognized = |why: &str| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type {}): {why} ({})",
            rt.kind,
            go_decode::summarize(body)
        ))
    };
    let (value, duplicates) = match mime {
        "" | "application/json" | "*/*" => {
            if let Some(why) = go_decode::find_kind_error(body) {
                return Err(unrecognized(&why));
            }
            crate::semantics::meta::parse_json(body).map_err(|e| unrecognized(&e.to_string()))?
        }
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            let value = crate::semantics::yaml_depth::read(body, go_decode::yaml_error)
                .map_err(|why| unrecognized(&why))?;
            if let Some(why) = go_decode::find_kind_error(value.to_string().as_bytes()) {
                return Err(unrecognized(&why));
            }
            (value, Vec::new())
        }
        // Custom resources have no protobuf form. (kube-apiserver v1.37 panics on such a body
        // and drops the stream; this is the 415 it gives every other type it cannot read.)
        protobuf::MEDIA_TYPE if rt.crd.is_some() => {
            return Err(ApiError::unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
            ));
        }
        protobuf::MEDIA_TYPE => (
            protobuf::decode(body, (&rt.api_version(), &rt.kind))
                .map_err(|why| unrecognized(&why))?,
            Vec::new(),
        ),
        _ => {
            return Err(ApiError::unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            ));
        }
    };
    // A body of `null` decodes as an empty object.
    let value = if value.is_null() { json!({}) } else { value };
    Ok((value, duplicates))
}

/// A body's apiVersion and kind checked against the URL's, in kube-apiserver's words: built-in
/// kinds default what the body leaves out and name the scheme's complaint; custom resources need
/// both and refuse another kind as an invalid field.
fn check_kind(
    catalog: &crate::catalog::Catalog,
    rt: &ResourceType,
    value: &Value,
    body: &[u8],
) -> ApiResult<()> {
    let given = |k: &str| value[k].as_str().filter(|s| !s.is_empty());
    if rt.crd.is_some() {
        let Some(kind) = given("kind") else {
            let shown = if body.first() == Some(&b'{') {
                String::from_utf8_lossy(body).into_owned()
            } else {
                value.to_string()
            };
            return Err(ApiError::bad_request(format!(
                "the object provided is unrecognized (must be of type {}): Object 'Kind' is missing in '{shown}' ({})",
                rt.kind,
                crate::semantics::go_decode::summarize(body)
            )));
        };
        let api_version = given("apiVersion").unwrap_or("");
        if api_version != rt.api_version() {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({api_version}) does not match the expected API version ({})",
                rt.api_version()
            )));
        }
        if kind != rt.kind {
            return Err(ApiError::invalid(
                &rt.group,
                kind,
                value["metadata"]["name"].as_str().unwrap_or(""),
                vec![FieldCause::invalid(
                    "kind",
                    kind,
                    &format!("must be {}", rt.kind),
                )],
            ));
        }
        return Ok(());
    }
    let own_version = rt.api_version();
    let kind = given("kind").unwrap_or(&rt.kind);
    let api_version = given("apiVersion").unwrap_or(&own_version);
    if kind == rt.kind && api_version == own_version {
        return Ok(());
    }
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let registered = catalog.group_version(group, version).and_then(|types| {
        types
            .into_iter()
            .find(|t| t.kind == kind && t.crd.is_none())
    });
    let why = match registered {
        // Another version of the same objects: the store refuses what it cannot convert.
        Some(t) if t.storage == rt.storage => return Ok(()),
        Some(_) => format!(
            "converting ({version}.{kind}) to ({}): unknown conversion",
            View::go_type(rt, false).trim_start_matches('*')
        ),
        None => format!(
            "no kind \"{kind}\" is registered for version \"{api_version}\" in scheme \"pkg/runtime/scheme.go:111\""
        ),
    };
    Err(ApiError::bad_request(format!(
        "{kind} in version \"{version}\" cannot be handled as a {}: {why}",
        rt.kind
    )))
}

fn list_options(query: &Query) -> ApiResult<ListOptions> {
    let bad = |e: crate::semantics::selectors::SelectorError| ApiError::bad_request(e.0);
    // In the order kube-apiserver converts ListOptions' fields.
    let labels = LabelSelector::parse(query.get("labelSelector").unwrap_or("")).map_err(bad)?;
    let fields = FieldSelector::parse(query.get("fieldSelector").unwrap_or("")).map_err(bad)?;
    if let Some(t) = query.get("timeoutSeconds").filter(|t| !t.is_empty()) {
        crate::semantics::go_decode::parse_int(t).map_err(ApiError::bad_request)?;
    }
    Ok(ListOptions {
        labels,
        fields,
        // Parsed as Go parses it; zero or negative means no limit, as in kube-apiserver.
        limit: match query.get("limit") {
            None | Some("") => None,
            Some(l) => usize::try_from(
                crate::semantics::go_decode::parse_int(l).map_err(ApiError::bad_request)?,
            )
            .ok()
            .filter(|l| *l > 0)
            // kube-apiserver's watch cache serves resourceVersion=0 whole, ignoring the limit.
            .filter(|_| query.get("resourceVersion") != Some("0")),
        },
        continue_token: query.get("continue").map(String::from),
        ..ListOptions::default()
    })
}

/// The resourceVersion a list (not a watch) asks for and whether it must match exactly, checked
/// like the real server's ListOptions validation.
fn list_version(query: &Query) -> ApiResult<(Option<u64>, bool)> {
    let rv = query.get("resourceVersion").unwrap_or("");
    let continued = query.get("continue").is_some_and(|c| !c.is_empty());
    let matching = query.get("resourceVersionMatch").unwrap_or("");
    if !matching.is_empty() {
        let forbid = |why: &str| FieldCause::forbidden("resourceVersionMatch", why);
        let mut causes = Vec::new();
        if rv.is_empty() {
            causes.push(forbid(
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if continued {
            causes.push(forbid(
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if matching != "Exact" && matching != "NotOlderThan" {
            causes.push(FieldCause::not_supported(
                "resourceVersionMatch",
                matching,
                &["Exact", "NotOlderThan", ""],
            ));
        }
        if matching == "Exact" && rv == "0" {
            causes.push(forbid(
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
        if !causes.is_empty() {
            return Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", causes));
        }
    }
    if rv.is_empty() || rv == "0" {
        return Ok((None, false));
    }
    let parsed = rv.parse::<u64>().map_err(|e| {
        ApiError::bad_request(format!(
            "invalid resource version: resourceVersion: Invalid value: {rv:?}: strconv.ParseUint: parsing {rv:?}: {}",
            match e.kind() {
                std::num::IntErrorKind::PosOverflow => "value out of range",
                _ => "invalid syntax",
            }
        ))
    })?;
    if continued {
        return Err(ApiError::bad_request(
            "specifying resource version is not allowed when using continue",
        ));
    }
    Ok((Some(parsed), matching == "Exact"))
}

/// A watch's ListOptions checked as kube-apiserver checks them; the answer is `sendInitialEvents`
/// as given. A watch without resourceVersion (or at "0") and without these options is checked as
/// the streaming list kube-apiserver serves it as, which is why it may not `continue`.
fn watch_options(query: &Query) -> ApiResult<Option<bool>> {
    let initial = query
        .get("sendInitialEvents")
        .filter(|v| !v.is_empty())
        .map(|_| query.flag("sendInitialEvents"));
    let rv = query.get("resourceVersion").unwrap_or("");
    let mut matching = query.get("resourceVersionMatch").unwrap_or("");
    let mut checked = initial;
    if checked.is_none() && matching.is_empty() && (rv.is_empty() || rv == "0") {
        checked = Some(true);
        matching = "NotOlderThan";
    }
    let field = "resourceVersionMatch";
    let mut causes = Vec::new();
    if checked.is_some() && matching != "NotOlderThan" {
        causes.push(FieldCause::forbidden(
            field,
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if !matching.is_empty() {
        if checked.is_none() {
            causes.push(FieldCause::forbidden(
                field,
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if matching != "NotOlderThan" {
            causes.push(FieldCause::not_supported(
                field,
                matching,
                &["NotOlderThan"],
            ));
        }
        if query.get("continue").is_some_and(|c| !c.is_empty()) {
            causes.push(FieldCause::forbidden(
                field,
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid("meta.k8s.io", "ListOptions", "", causes));
    }
    Ok(initial)
}

/// The resourceVersion a watch starts after (`None`: none, or "0"). The watch cache answers a
/// malformed one as an unclassified 500.
fn watch_resource_version(query: &Query) -> ApiResult<Option<u64>> {
    match query.get("resourceVersion") {
        None | Some("") | Some("0") => Ok(None),
        Some(rv) => crate::semantics::go_decode::parse_uint(rv)
            .map(Some)
            .map_err(|e| {
                ApiError::new(
                    500,
                    "",
                    format!("resourceVersion: Invalid value: {rv:?}: {e}"),
                )
            }),
    }
}

/// How an answer is shaped, from the Accept header: whole objects, a Table (kubectl get), or
/// metadata only (`PartialObjectMetadata` for one object, `PartialObjectMetadataList` for a list,
/// as kube-rs metadata calls ask). It applies to every verb's answer, writes included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    Full,
    Table(table::TableOptions),
    Metadata,
    MetadataList,
}

impl View {
    fn from_accept(accept: &str, include_object: Option<&str>) -> ApiResult<View> {
        let first = accept.split(',').next().unwrap_or("");
        let params: Vec<&str> = first.split(';').map(str::trim).collect();
        Ok(if let Some(asked) = table::requested(accept) {
            match asked {
                Ok(beta) => View::Table(table::TableOptions::new(beta, include_object)?),
                // A Table version that is not served: the next media type, if any, answers.
                Err(_) if Self::has_fallback(accept) => View::Full,
                Err(e) => return Err(e),
            }
        } else if !params.contains(&"g=meta.k8s.io") {
            View::Full
        } else if params.contains(&"as=PartialObjectMetadata") {
            View::Metadata
        } else if params.contains(&"as=PartialObjectMetadataList") {
            View::MetadataList
        } else {
            View::Full
        })
    }

    /// Whether the Accept header offers plain objects after its first choice, for a Table version
    /// that is not served (the real server then takes the next media type). A metadata view that
    /// does not fit the answer is 406 whatever follows: the choice is made before the answer.
    fn has_fallback(accept: &str) -> bool {
        accept.split(',').skip(1).any(|media| {
            let mut params = media.split(';').map(str::trim);
            let mime = params.next().unwrap_or("");
            matches!(mime, "application/json" | "*/*" | "application/*")
                && params.all(|p| !p.starts_with("as="))
        })
    }

    fn metadata_only(obj: &Value) -> Value {
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": obj["metadata"]})
    }

    /// One object (a GET, or a watch event's object).
    pub(crate) fn single(
        self,
        rt: &ResourceType,
        obj: Value,
        rv: &str,
        now: jiff::Timestamp,
    ) -> Value {
        match self {
            View::Full => obj,
            View::Metadata | View::MetadataList => Self::metadata_only(&obj),
            View::Table(opts) => table::table(rt, &[obj], table::object_metadata(rv), now, opts),
        }
    }

    /// The Go type the real server names when a view does not fit: `*core.ConfigMap`,
    /// `*batch.JobList`, `*unstructured.Unstructured` for custom resources.
    fn go_type(rt: &ResourceType, list: bool) -> String {
        let (package, kind) = if rt.crd.is_some() {
            ("unstructured", "Unstructured")
        } else if rt.group.is_empty() {
            ("core", rt.kind.as_str())
        } else {
            (rt.group.split('.').next().unwrap_or(""), rt.kind.as_str())
        };
        format!("*{package}.{kind}{}", if list { "List" } else { "" })
    }

    fn not_acceptable(rt: &ResourceType, list: bool) -> ApiError {
        let (asked, is) = if list {
            ("PartialObjectMetadata", "is a list")
        } else {
            ("PartialObjectMetadataList", "is not a list")
        };
        ApiError::new(
            406,
            "NotAcceptable",
            format!(
                "you requested {asked}, but the requested object {is} ({})",
                Self::go_type(rt, list)
            ),
        )
    }

    /// The answer to a request about one object, in this view. A Status (a delete's) is sent as
    /// it is.
    fn object_answer(
        self,
        rt: &ResourceType,
        obj: Value,
        now: jiff::Timestamp,
    ) -> ApiResult<Value> {
        if obj["kind"] == "Status" && obj["apiVersion"] == "v1" {
            return Ok(obj);
        }
        let view = match self {
            View::MetadataList => return Err(Self::not_acceptable(rt, false)),
            v => v,
        };
        let rv = obj["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string();
        Ok(view.single(rt, obj, &rv, now))
    }

    /// The answer to a request about a collection (a list, a deletecollection), in this view.
    fn list_answer(
        self,
        rt: &ResourceType,
        page: &crate::store::ListPage,
        now: jiff::Timestamp,
    ) -> ApiResult<Value> {
        Ok(match self {
            View::Full => page.to_json(rt),
            View::Metadata => return Err(Self::not_acceptable(rt, true)),
            View::MetadataList => {
                let mut list = page.to_json(rt);
                list["kind"] = json!("PartialObjectMetadataList");
                list["apiVersion"] = json!("meta.k8s.io/v1");
                list["items"] = Value::Array(page.items.iter().map(Self::metadata_only).collect());
                // A typed ListMeta leaves an empty continue out, also for custom resources.
                if list["metadata"]["continue"] == ""
                    && let Some(m) = list["metadata"].as_object_mut()
                {
                    m.remove("continue");
                }
                list
            }
            View::Table(opts) => table::table(
                rt,
                &page.items,
                table::list_metadata(
                    page.resource_version,
                    page.continue_token.as_deref(),
                    page.remaining,
                ),
                now,
                opts,
            ),
        })
    }
}

/// A deprecated custom resource version's `Warning`, first on every answer (errors too).
fn warn_deprecated(
    answer: ApiResult<Response<ResponseBody>>,
    shared: &Shared,
    (group, version, plural): &(String, String, String),
) -> Response<ResponseBody> {
    let mut resp = answer.unwrap_or_else(|e| error_response(&e));
    let warning = shared
        .store()
        .catalog()
        .lookup(group, version, plural)
        .and_then(|rt| rt.deprecation_warning.clone());
    if let Some(w) = warning {
        let value = format!("299 - {}", serde_json::to_string(&w).unwrap_or_default());
        if let Ok(v) = header::HeaderValue::from_str(&value) {
            let later: Vec<_> = resp
                .headers()
                .get_all(header::WARNING)
                .iter()
                .cloned()
                .collect();
            resp.headers_mut().insert(header::WARNING, v);
            for w in later {
                resp.headers_mut().append(header::WARNING, w);
            }
        }
    }
    resp
}

/// Run a write and answer with its result and a `Warning` header per warning it raised.
#[allow(clippy::too_many_arguments)]
async fn written(
    shared: &Shared,
    rt: &ResourceType,
    view: View,
    code: u16,
    mut warnings: Vec<String>,
    admission: Option<RequestFacts>,
    write: impl Fn(&mut Store) -> ApiResult<Answer>,
) -> ApiResult<Response<ResponseBody>> {
    let (result, raised) = admitted(shared, admission, write).await;
    warnings.extend(raised);
    let answer = match result {
        Ok(answer) => answer,
        Err(e) => {
            return Err(ApiError {
                warnings: warnings.into(),
                ..e
            });
        }
    };
    let mut resp = match view {
        View::Full => json_bytes_response(code, answer.json(rt)),
        _ => json_response(
            code,
            &view.object_answer(rt, answer.into_value(rt), shared.clock.now())?,
        ),
    };
    add_warnings(&mut resp, warnings);
    Ok(resp)
}

/// A `Warning` header per warning, each once, in the order raised.
fn add_warnings(resp: &mut Response<ResponseBody>, warnings: Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    for w in warnings {
        if !seen.insert(w.clone()) {
            continue;
        }
        let value = format!("299 - {}", serde_json::to_string(&w).unwrap_or_default());
        if let Ok(v) = header::HeaderValue::from_str(&value) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
}

/// How many times one request's write may run: each webhook phase stops it once, and each write
/// that changes what it was computed from meanwhile once more.
const MAX_WRITE_RUNS: usize = 16;

/// Run `write` under the store's lock, as often as its admission webhooks need: a run that stops
/// at a webhook point (store/webhook_points.rs) is followed by the webhooks' calls, without the
/// lock, and a run with their answers. The warnings are the store's (of the last run) and the
/// webhooks'.
async fn admitted<T>(
    shared: &Shared,
    facts: Option<RequestFacts>,
    write: impl Fn(&mut Store) -> ApiResult<T>,
) -> (ApiResult<T>, Vec<String>) {
    let mut pass = facts.map(AdmissionPass::new);
    let mut from_webhooks = Vec::new();
    for _ in 0..MAX_WRITE_RUNS {
        let (result, mut raised, ended) = {
            let mut store = shared.store();
            store.take_warnings();
            if let Some(pass) = pass.take() {
                store.begin_admission(pass);
            }
            let result = write(&mut store);
            (result, store.take_warnings(), store.end_admission())
        };
        let Some(mut ended) = ended else {
            raised.extend(from_webhooks);
            return (result, raised);
        };
        let Some(pending) = ended.take_pending() else {
            raised.extend(from_webhooks);
            return (result, raised);
        };
        // The run stopped for webhooks: its result is only that.
        drop(result);
        let targets = webhook_targets::Targets { shared };
        match crate::webhooks::dispatch::dispatch(&pending, &ended.request, &targets).await {
            Ok(outcome) => {
                from_webhooks.extend(outcome.warnings);
                let shown = pending
                    .object
                    .clone()
                    .or_else(|| pending.old.clone())
                    .unwrap_or(Value::Null);
                match pending.phase {
                    Phase::Mutating => {
                        let made = outcome.object.unwrap_or_else(|| shown.clone());
                        ended.record_mutation(shown, made);
                    }
                    Phase::Validating => ended.record_validation(shown),
                }
                pass = Some(ended);
            }
            Err((e, raised)) => {
                from_webhooks.extend(raised);
                return (Err(e), from_webhooks);
            }
        }
    }
    (
        Err(ApiError::new(
            409,
            "Conflict",
            "the object has been modified; please apply your changes to the latest version and try again",
        )),
        from_webhooks,
    )
}

/// The request as admission shows it to webhooks: who asks, the options its query set, dry run.
fn admission_facts(
    rt: &Arc<ResourceType>,
    sub: Subresource,
    user: &User,
    query: &Query,
    dry_run: bool,
) -> RequestFacts {
    let mut options = json!({});
    if dry_run {
        options["dryRun"] = json!(["All"]);
    }
    for field in ["fieldManager", "fieldValidation"] {
        if let Some(v) = query.get(field).filter(|v| !v.is_empty()) {
            options[field] = json!(v);
        }
    }
    RequestFacts {
        rt: rt.clone(),
        subresource: crate::store::subresource_name(sub).to_string(),
        user: user.info.clone(),
        options,
        delete_options: None,
        dry_run,
    }
}

/// Fields a JSON body names twice: refused under Strict, warned about under Warn (serde keeps the last).
fn duplicates(rt: &ResourceType, found: &[String], opts: &WriteOptions) -> ApiResult<Vec<String>> {
    use crate::store::FieldValidation;
    if opts.field_validation == FieldValidation::Ignore {
        return Ok(Vec::new());
    }
    let named: Vec<String> = found
        .iter()
        .map(|f| format!("duplicate field \"{f}\""))
        .collect();
    if opts.field_validation == FieldValidation::Strict && !named.is_empty() {
        return Err(ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {}",
            rt.kind,
            rt.version,
            rt.kind,
            named.join(", ")
        )));
    }
    Ok(named)
}

fn field_validation(query: &Query, options: &str) -> ApiResult<crate::store::FieldValidation> {
    use crate::store::FieldValidation;
    match query.get("fieldValidation") {
        None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
        Some("Strict") => Ok(FieldValidation::Strict),
        Some("Ignore") => Ok(FieldValidation::Ignore),
        Some(other) => Err(invalid_options(
            options,
            FieldCause::not_supported("fieldValidation", other, &["", "Ignore", "Strict", "Warn"]),
        )),
    }
}

/// Whether the request is a dry run; `options` names the options kind in errors (CreateOptions...).
fn dry_run(query: &Query, body: Option<&Value>, options: &str) -> ApiResult<bool> {
    let from_body = body
        .and_then(|b| b["dryRun"].as_array())
        .is_some_and(|a| a.iter().any(|v| v == "All"));
    match query.get("dryRun") {
        None | Some("") => Ok(from_body),
        Some("All") => Ok(true),
        // The real server shows the whole list it was given.
        Some(other) => Err(invalid_options(
            options,
            FieldCause {
                reason: crate::error::CauseReason::NotSupported,
                field: "dryRun".into(),
                message: format!(
                    "Unsupported value: {}: supported values: \"All\"",
                    serde_json::to_string(&[other]).unwrap_or_default()
                ),
            },
        )),
    }
}

fn invalid_options(options: &str, cause: FieldCause) -> ApiError {
    ApiError::invalid("meta.k8s.io", options, "", vec![cause])
}

/// A delete's options: from its body when it has one (kube-apiserver then ignores the query's),
/// else from the query.
fn delete_options(query: &Query, content_type: &str, body: &[u8]) -> ApiResult<DeleteOptions> {
    let no_query = Query(HashMap::new());
    let (body, query) = if body.is_empty() {
        (json!({}), query)
    } else {
        (delete_options_body(content_type, body)?, &no_query)
    };
    let policy = query
        .get("propagationPolicy")
        .or_else(|| body["propagationPolicy"].as_str());
    let propagation = match policy {
        None | Some("") => None,
        Some("Background") => Some(Propagation::Background),
        Some("Foreground") => Some(Propagation::Foreground),
        Some("Orphan") => Some(Propagation::Orphan),
        Some(other) => {
            return Err(invalid_options(
                "DeleteOptions",
                FieldCause::not_supported(
                    "propagationPolicy",
                    other,
                    &["Foreground", "Background", "Orphan", "nil"],
                ),
            ));
        }
    };
    let orphan = body["orphanDependents"]
        .as_bool()
        .or_else(|| query.optional_flag("orphanDependents"));
    if let (Some(_), Some(policy)) = (orphan, policy.filter(|_| propagation.is_some())) {
        return Err(invalid_options(
            "DeleteOptions",
            FieldCause::invalid(
                "propagationPolicy",
                policy,
                "orphanDependents and deletionPropagation cannot be both set",
            ),
        ));
    }
    let propagation = match (propagation, orphan) {
        (None, Some(true)) => Some(Propagation::Orphan),
        (p, _) => p,
    };
    Ok(DeleteOptions {
        dry_run: dry_run(query, Some(&body), "DeleteOptions")?,
        propagation,
        precondition_uid: body["preconditions"]["uid"].as_str().map(String::from),
        precondition_rv: body["preconditions"]["resourceVersion"]
            .as_str()
            .map(String::from),
    })
}

/// The DeleteOptions as admission shows them: the body's (already checked), typed.
fn delete_options_object(content_type: &str, body: &[u8], dry_run: bool) -> Value {
    let mut options = match body.iter().all(u8::is_ascii_whitespace) {
        true => json!({}),
        false => delete_options_body(content_type, body).unwrap_or_else(|_| json!({})),
    };
    if !options.is_object() {
        options = json!({});
    }
    options["kind"] = json!("DeleteOptions");
    options["apiVersion"] = json!("meta.k8s.io/v1");
    if dry_run {
        options["dryRun"] = json!(["All"]);
    }
    options
}

/// A DeleteOptions body decoded as kube-apiserver decodes it, errors in its words.
fn delete_options_body(content_type: &str, body: &[u8]) -> ApiResult<Value> {
    use crate::semantics::go_decode;
    let bad = |why: String| ApiError::bad_request(why);
    let value: Value = match content_type.split(';').next().unwrap_or("").trim() {
        "" | "application/json" | "*/*" => {
            if let Some(why) = go_decode::find_kind_error(body) {
                return Err(bad(why));
            }
            serde_json::from_slice(body).map_err(|e| bad(e.to_string()))?
        }
        protobuf::MEDIA_TYPE => {
            protobuf::decode(body, ("meta.k8s.io/v1", "DeleteOptions")).map_err(bad)?
        }
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            let value =
                crate::semantics::yaml_depth::read(body, go_decode::yaml_error).map_err(bad)?;
            if let Some(why) = go_decode::find_kind_error(value.to_string().as_bytes()) {
                return Err(bad(why));
            }
            value
        }
        _ => {
            return Err(ApiError::unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            ));
        }
    };
    if value.is_null() {
        return Ok(json!({}));
    }
    if let Some(kind) = value["kind"]
        .as_str()
        .filter(|k| !k.is_empty() && *k != "DeleteOptions")
    {
        let version = value["apiVersion"]
            .as_str()
            .filter(|v| !v.is_empty())
            .unwrap_or("meta.k8s.io/v1");
        return Err(bad(format!(
            "no kind {kind:?} is registered for version {version:?} in scheme \"pkg/runtime/scheme.go:111\""
        )));
    }
    fn schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        g.subschema_for::<k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions>()
    }
    if let Some(why) = go_decode::unmarshal_error(schema, &value) {
        return Err(bad(why));
    }
    Ok(value)
}

/// What a resource request brings besides its path.
struct RequestParts<'a> {
    method: &'a Method,
    query: &'a Query,
    content_type: &'a str,
    body: &'a [u8],
    view: View,
    accepted: &'a media::Accept,
    user_agent: &'a str,
    user: &'a User,
}

/// A resource request, answered in the encoding chosen for it (see [`encoded`]).
async fn serve_resource(
    shared: &Arc<Shared>,
    path: ResourcePath,
    req: RequestParts<'_>,
) -> ApiResult<Response<ResponseBody>> {
    let rt = resolve(shared, &path)?;
    // Protobuf carries built-in kinds and the metadata-only views of any kind; never a Table.
    let protobuf_form = match req.view {
        View::Full => rt.crd.is_none(),
        View::Metadata | View::MetadataList => true,
        View::Table(_) => false,
    };
    let media = req
        .accepted
        .choose(protobuf_form)
        .ok_or_else(not_acceptable_media)?;
    let mut resp = serve_found(shared, rt, path, req, media).await?;
    resp.extensions_mut().insert(media);
    Ok(resp)
}

/// The resource type a path names, or the real server's answer for one it does not serve.
fn resolve(shared: &Shared, path: &ResourcePath) -> ApiResult<Arc<ResourceType>> {
    let rt = {
        let store = shared.store();
        let catalog = store.catalog();
        match catalog.lookup(&path.group, &path.version, &path.plural) {
            Some(rt) => rt,
            // The real server's handler chain ends in a plain-text 404 for groups it does not serve
            // (an unknown version of a served group is a Status).
            None if route::is_custom_group(catalog, &path.group) => {
                return Err(ApiError::page_not_found());
            }
            None => return Err(ApiError::unknown_path()),
        }
    };
    if let Some(e) = route::custom_resource_miss(&rt, path) {
        return Err(e);
    }
    if path.namespace.is_some() && !rt.namespaced {
        return Err(ApiError::unknown_path());
    }
    Ok(rt)
}

async fn serve_found(
    shared: &Arc<Shared>,
    rt: Arc<ResourceType>,
    path: ResourcePath,
    req: RequestParts<'_>,
    media: media::Media,
) -> ApiResult<Response<ResponseBody>> {
    let RequestParts {
        method,
        query,
        content_type,
        body,
        view,
        accepted: _,
        user_agent,
        user,
    } = req;
    let call = subresources::Call {
        method,
        query,
        content_type,
        body,
        user_agent,
        view,
        user,
    };
    if let Some(answer) = subresources::serve(shared, &rt, &path, &call) {
        return answer;
    }
    let sub = match path.subresource.as_deref() {
        None => Subresource::Main,
        Some("status") if rt.status => Subresource::Status,
        Some("scale") if rt.scale.is_some() => Subresource::Scale,
        Some("finalize") if rt.behavior.lifecycle == crate::catalog::Lifecycle::Namespace => {
            if method != Method::PUT {
                return Err(ApiError::method_not_allowed(format!(
                    "the server does not allow this method on the requested resource: {method}"
                )));
            }
            Subresource::Finalize
        }
        Some(_) => return Err(ApiError::unknown_path()),
    };
    let ns = path.namespace.clone().unwrap_or_default();
    if rt.namespaced && path.name.is_some() && ns.is_empty() {
        return Err(ApiError::unknown_path());
    }
    let name = path.name.clone();
    // Like the real server: the fieldManager parameter, else the client's user agent up to its '/'.
    let manager = match query.get("fieldManager") {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => user_agent
            .split('/')
            .next()
            .filter(|p| !p.is_empty())
            .unwrap_or("unknown")
            .to_string(),
    };
    let write = |body: Option<&Value>, options: &str| -> ApiResult<WriteOptions> {
        if query.get("fieldManager").is_some_and(|m| m.len() > 128) {
            return Err(invalid_options(
                options,
                FieldCause {
                    reason: crate::error::CauseReason::TooLong,
                    field: "fieldManager".into(),
                    message: "Too long: may not be more than 128 bytes".into(),
                },
            ));
        }
        Ok(WriteOptions {
            dry_run: dry_run(query, body, options)?,
            field_validation: field_validation(query, options)?,
            field_manager: manager.clone(),
            requester: requester(user),
        })
    };
    match (method, name) {
        (&Method::GET, Some(name)) if sub == Subresource::Scale => Ok(json_response(
            200,
            &shared.store().get_scale(&rt, &ns, &name)?,
        )),
        (&Method::GET, Some(name)) => {
            if let Some(rv) = query.get("resourceVersion").filter(|rv| !rv.is_empty()) {
                // The storage layer parses it, and answers a malformed one as an unclassified 500.
                let asked = crate::semantics::go_decode::parse_uint(rv).map_err(|e| {
                    ApiError::new(
                        500,
                        "",
                        format!("resourceVersion: Invalid value: {rv:?}: {e}"),
                    )
                })?;
                // Like a list, a get waits up to 3 s for a resourceVersion not reached yet.
                if asked > shared.store().resource_version() {
                    shared.clock.sleep(std::time::Duration::from_secs(3)).await;
                    let current = shared.store().resource_version();
                    if asked > current {
                        return Err(Store::too_large_rv(asked, current));
                    }
                }
            }
            let obj = shared.store().get(&rt, &ns, &name)?;
            let answer = view.object_answer(&rt, obj, shared.clock.now())?;
            Ok(json_response(200, &answer))
        }
        (&Method::GET, None) => {
            let opts = list_options(query)?;
            let ns_filter = path.namespace.as_deref();
            if query.flag("watch") {
                return watch::serve_watch(
                    shared.clone(),
                    rt,
                    ns_filter.map(String::from),
                    opts,
                    query,
                    view,
                    media,
                );
            }
            let (resource_version, exact) = list_version(query)?;
            let opts = ListOptions {
                resource_version,
                exact,
                ..opts
            };
            let listed = shared.store().list(&rt, ns_filter, &opts);
            let page = match listed {
                // The real server waits up to 3 s for a resourceVersion it has not reached yet.
                Err(e) if e.code == 504 => {
                    shared.clock.sleep(std::time::Duration::from_secs(3)).await;
                    shared.store().list(&rt, ns_filter, &opts)?
                }
                other => other?,
            };
            let answer = view.list_answer(&rt, &page, shared.clock.now())?;
            Ok(json_response(200, &answer))
        }
        (&Method::POST, None) if sub == Subresource::Main => {
            let (obj, twice) = decode_body(&rt, content_type, body)?;
            check_kind(shared.store().catalog(), &rt, &obj, body)?;
            let opts = write(Some(&obj), "CreateOptions")?;
            let warnings = duplicates(&rt, &twice, &opts)?;
            let facts = admission_facts(&rt, sub, user, query, opts.dry_run);
            written(shared, &rt, view, 201, warnings, Some(facts), |store| {
                store.create_answer(&rt, &ns, obj.clone(), &opts)
            })
            .await
        }
        (&Method::PUT, Some(name)) => {
            let (obj, twice) = decode_body(&rt, content_type, body)?;
            // A Scale is checked as one by the store.
            if sub != Subresource::Scale {
                check_kind(shared.store().catalog(), &rt, &obj, body)?;
            }
            let opts = write(Some(&obj), "UpdateOptions")?;
            let warnings = duplicates(&rt, &twice, &opts)?;
            let facts = admission_facts(&rt, sub, user, query, opts.dry_run);
            written(shared, &rt, view, 200, warnings, Some(facts), |store| {
                store.update_answer(&rt, &ns, &name, obj.clone(), sub, &opts)
            })
            .await
        }
        (&Method::PATCH, Some(name)) => {
            let kind = PatchKind::from_content_type(content_type)
                .ok_or_else(|| unsupported_patch(rt.crd.is_some()))?;
            let mut opts = write(None, "PatchOptions")?;
            if kind == PatchKind::Apply {
                // Apply needs an explicit manager; the user agent does not count.
                opts.field_manager = query.get("fieldManager").unwrap_or("").to_string();
                let exists = shared.store().get(&rt, &ns, &name).is_ok();
                let force = query.flag("force");
                let applied = crate::store::read_applied(body);
                let facts = admission_facts(&rt, sub, user, query, opts.dry_run);
                return written(
                    shared,
                    &rt,
                    view,
                    if exists { 200 } else { 201 },
                    Vec::new(),
                    Some(facts),
                    |store| {
                        store
                            .server_side_apply(&rt, &ns, &name, applied.clone(), force, sub, &opts)
                            .map(Answer::Uncommitted)
                    },
                )
                .await;
            }
            if query.flag("force") {
                return Err(ApiError::invalid(
                    "meta.k8s.io",
                    "PatchOptions",
                    "",
                    vec![crate::error::FieldCause::forbidden(
                        "force",
                        "may not be specified for non-apply patch",
                    )],
                ));
            }
            // kube-apiserver checks that a patch is JSON at all before it looks for the object.
            if serde_json::from_slice::<Value>(body).is_err() {
                return Err(ApiError::bad_request("invalid JSON patch"));
            }
            let facts = admission_facts(&rt, sub, user, query, opts.dry_run);
            written(shared, &rt, view, 200, Vec::new(), Some(facts), |store| {
                store.patch_answer(&rt, &ns, &name, kind, body, sub, &opts)
            })
            .await
        }
        (&Method::DELETE, Some(name)) if sub == Subresource::Main => {
            let opts = delete_options(query, content_type, body)?;
            let facts = RequestFacts {
                delete_options: Some(delete_options_object(content_type, body, opts.dry_run)),
                ..admission_facts(&rt, sub, user, query, opts.dry_run)
            };
            let (deleted, warnings) = admitted(shared, Some(facts), |store| {
                store.delete(&rt, &ns, &name, &opts)
            })
            .await;
            // The real server answers 200 even when finalizers keep the object.
            let (crate::store::Deleted::Pending(obj) | crate::store::Deleted::Gone(obj)) =
                match deleted {
                    Ok(deleted) => deleted,
                    Err(e) => {
                        return Err(ApiError {
                            warnings: warnings.into(),
                            ..e
                        });
                    }
                };
            let answer = view.object_answer(&rt, obj, shared.clock.now())?;
            let mut resp = json_response(200, &answer);
            add_warnings(&mut resp, warnings);
            Ok(resp)
        }
        // Namespaces are deleted one by one: kube-apiserver serves no deletecollection for them.
        (&Method::DELETE, None)
            if rt.behavior.lifecycle == crate::catalog::Lifecycle::Namespace =>
        {
            Err(ApiError::method_not_allowed(
                "deletecollection of namespaces",
            ))
        }
        (&Method::DELETE, None) => {
            let list = list_options(query)?;
            let opts = delete_options(query, content_type, body)?;
            let ns_filter = path.namespace.as_deref();
            let deleted = shared
                .store()
                .delete_collection(&rt, ns_filter, &list, &opts)?;
            if view == View::Full {
                return Ok(json_response(200, &deleted));
            }
            // The real server deletes first, then shapes (or refuses to shape) its answer.
            let page = crate::store::ListPage {
                resource_version: deleted["metadata"]["resourceVersion"]
                    .as_str()
                    .and_then(|rv| rv.parse().ok())
                    .unwrap_or_default(),
                items: match deleted["items"].clone() {
                    Value::Array(items) => items,
                    _ => Vec::new(),
                },
                continue_token: None,
                remaining: None,
            };
            let answer = view.list_answer(&rt, &page, shared.clock.now())?;
            Ok(json_response(200, &answer))
        }
        (m, _) => Err(ApiError::method_not_allowed(format!(
            "the server does not allow this method on the requested resource: {m}"
        ))),
    }
}
