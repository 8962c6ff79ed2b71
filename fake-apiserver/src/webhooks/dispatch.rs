//! Calling the webhooks a write stopped for, without the store's lock: mutating webhooks one
//! after another, each shown what the one before made (and called once more under
//! `reinvocationPolicy: IfNeeded` when a later one changed the object), validating webhooks
//! side by side. Errors are kube-apiserver's, in its words.

use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};

use super::call::{self, Target};
use super::config::{ClientConfig, FailurePolicy, Hook, Phase};
use super::matching::{self, Decision};
use super::request::{Invocation, Operation, Pending, RequestFacts};
use super::review::{self, About};
use crate::catalog::ResourceType;
use crate::catalog::render::render;
use crate::error::ApiError;

/// Why a webhook's address could not be found, and the URL it was to be called at, if known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    pub url: Option<String>,
    pub why: String,
}

/// Finds where a webhook's `clientConfig` is served: a URL as it is, a Service through its
/// endpoints.
pub trait Resolve: Sync {
    fn target(&self, client: &ClientConfig, timeout: Duration) -> Result<Target, Unresolved>;
}

/// What the webhooks answered: for mutating webhooks the object they made (storage form;
/// `None` when the write has none), and every webhook's warnings (kept with an error too).
#[derive(Debug, Default)]
pub struct Outcome {
    pub object: Option<Value>,
    pub warnings: Vec<String>,
}

/// Call the webhooks `pending` names; an error comes with the warnings raised before it.
pub async fn dispatch(
    pending: &Pending,
    facts: &RequestFacts,
    resolve: &dyn Resolve,
) -> Result<Outcome, (ApiError, Vec<String>)> {
    let mut outcome = Outcome {
        object: pending.object.clone(),
        warnings: Vec::new(),
    };
    let result = match pending.phase {
        Phase::Mutating => mutate(pending, facts, resolve, &mut outcome).await,
        Phase::Validating => validate(pending, facts, resolve, &mut outcome.warnings).await,
    };
    match result {
        Ok(()) => Ok(outcome),
        Err(e) => Err((e, outcome.warnings)),
    }
}

/// What one webhook's turn came to.
enum Turn {
    /// Its selectors or conditions left it out.
    Skipped,
    /// It failed, under `failurePolicy: Ignore`.
    FailedOpen,
    /// It allowed the request.
    Allowed(review::Verdict),
}

async fn mutate(
    pending: &Pending,
    facts: &RequestFacts,
    resolve: &dyn Resolve,
    outcome: &mut Outcome,
) -> Result<(), ApiError> {
    // Reinvocable webhooks called since the last change, and those a later change queued again.
    let mut since_change: Vec<usize> = Vec::new();
    let mut queued: Vec<usize> = Vec::new();
    let mut any_change = false;
    for (i, invocation) in pending.invocations.iter().enumerate() {
        let Some(changed) = call_mutating(invocation, pending, facts, resolve, outcome).await?
        else {
            continue;
        };
        if changed {
            any_change = true;
            queued.append(&mut since_change);
        }
        if invocation.hook.reinvoke_if_needed {
            since_change.push(i);
        }
    }
    // One more round, only for the queued webhooks that still match; its changes queue nothing.
    if any_change {
        queued.sort_unstable();
        for i in queued {
            call_mutating(&pending.invocations[i], pending, facts, resolve, outcome).await?;
        }
    }
    // What a custom resource cannot hold is pruned once all have had their turn.
    if let (Some(object), Some(schema)) = (outcome.object.as_mut(), &facts.rt.structural) {
        schema.prune(object);
    }
    Ok(())
}

/// One mutating webhook's turn: `None` when its selectors left it out, else whether its patch
/// changed the object (a failure under Ignore changes nothing, but counts as a turn).
async fn call_mutating(
    invocation: &Invocation,
    pending: &Pending,
    facts: &RequestFacts,
    resolve: &dyn Resolve,
    outcome: &mut Outcome,
) -> Result<Option<bool>, ApiError> {
    let rt = &invocation.rt;
    let shown = outcome.object.as_ref().map(|o| render(rt, o));
    let old = pending.old.as_ref().map(|o| render(rt, o));
    let turn = call_one(
        invocation,
        pending,
        facts,
        resolve,
        shown.as_ref(),
        old.as_ref(),
        &mut outcome.warnings,
    )
    .await?;
    let verdict = match turn {
        Turn::Skipped => return Ok(None),
        Turn::FailedOpen => return Ok(Some(false)),
        Turn::Allowed(verdict) => verdict,
    };
    let hook = &invocation.hook;
    let Some(patch) = verdict.patch else {
        return Ok(Some(false));
    };
    // jsonpatch.DecodePatch takes any array of objects; an operation it cannot apply fails below.
    let ops = match serde_json::from_slice::<Value>(&patch) {
        Ok(ops @ Value::Array(_)) => ops,
        Ok(other) => {
            let why = format!(
                "received undecodable patch in webhook response: json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                crate::semantics::patch::go_type(&other)
            );
            return failed(hook, &why).map(|()| Some(false));
        }
        Err(e) => {
            let why = format!("received undecodable patch in webhook response: {e}");
            return failed(hook, &why).map(|()| Some(false));
        }
    };
    if ops.as_array().is_some_and(Vec::is_empty) {
        return Ok(Some(false));
    }
    let Some(shown_now) = shown.as_ref() else {
        return Err(ApiError::internal_error(format!(
            "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
            hook.name
        )));
    };
    match verdict.patch_type.as_deref() {
        Some("JSONPatch") => {}
        other => {
            let why = format!("unsupported patch type {:?}", other.unwrap_or(""));
            return failed(hook, &why).map(|()| Some(false));
        }
    }
    // A patch that does not apply is no call failure: it fails the request whatever the
    // failurePolicy, in the patch library's words.
    let mut patched = crate::semantics::patch::apply_json_patch(shown_now, &ops)
        .map_err(ApiError::internal_error)?;
    // Changed is judged before defaulting, as kube-apiserver judges it.
    let changed = Some(&patched) != shown.as_ref();
    redecode(rt, &mut patched).map_err(ApiError::internal_error)?;
    outcome.object = Some(to_storage(rt, &patched));
    Ok(Some(changed))
}

async fn validate(
    pending: &Pending,
    facts: &RequestFacts,
    resolve: &dyn Resolve,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    let calls = pending.invocations.iter().map(|invocation| async move {
        let rt = &invocation.rt;
        let shown = pending.object.as_ref().map(|o| render(rt, o));
        let old = pending.old.as_ref().map(|o| render(rt, o));
        let mut raised = Vec::new();
        let turn = call_one(
            invocation,
            pending,
            facts,
            resolve,
            shown.as_ref(),
            old.as_ref(),
            &mut raised,
        )
        .await;
        (turn, raised)
    });
    // All are called at once; the first error (in their order here) is the answer.
    let mut first_error = None;
    for (turn, raised) in futures::future::join_all(calls).await {
        warnings.extend(raised);
        if let Err(e) = turn
            && first_error.is_none()
        {
            first_error = Some(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// The options object a webhook is shown: a patch is admitted as the create or update it makes.
fn options_for(facts: &RequestFacts, operation: Operation) -> Value {
    let kind = match operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
    };
    let mut options = match (&facts.delete_options, operation) {
        (Some(delete), Operation::Delete) => delete.clone(),
        _ => facts.options.clone(),
    };
    if !options.is_object() {
        options = json!({});
    }
    options["kind"] = json!(kind);
    options["apiVersion"] = json!("meta.k8s.io/v1");
    options
}

/// Decide, call and check one webhook. `Err`: the request fails (a denial, a failure under
/// Fail, or what no failurePolicy covers).
async fn call_one(
    invocation: &Invocation,
    pending: &Pending,
    facts: &RequestFacts,
    resolve: &dyn Resolve,
    object: Option<&Value>,
    old: Option<&Value>,
    warnings: &mut Vec<String>,
) -> Result<Turn, ApiError> {
    let hook = &invocation.hook;
    let uid = crate::semantics::names::uuid_from(rand::random());
    let options = options_for(facts, pending.operation);
    let about = About {
        uid: &uid,
        shown: &invocation.rt,
        requested: &facts.rt,
        subresource: &facts.subresource,
        name: &pending.name,
        namespace: &pending.namespace,
        operation: pending.operation.as_str(),
        user: &facts.user,
        options: &options,
        dry_run: facts.dry_run,
    };
    let request = review::request(&about, object, old);
    match matching::decide(hook, &pending.namespace_labels, object, old, &request) {
        Decision::Call => {}
        Decision::Skip => return Ok(Turn::Skipped),
        Decision::NamespaceMissing(ns) => return Err(ApiError::not_found("", "namespaces", &ns)),
        Decision::ConditionsFailed(why) => return Err(forbidden(facts, &pending.name, &why)),
    }
    if facts.dry_run && !matches!(hook.side_effects.as_str(), "None" | "NoneOnDryRun") {
        return Err(ApiError::bad_request(format!(
            "admission webhook {:?} does not support dry run",
            hook.name
        )));
    }
    let Some(version) = review::version(&hook.review_versions) else {
        let why = "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)";
        return failed(hook, why).map(|()| Turn::FailedOpen);
    };
    if let Err(why) = call::check_bundle(&hook.ca_bundle) {
        let why = format!("could not get REST client: unable to load root certificates: {why}");
        return failed(hook, &why).map(|()| Turn::FailedOpen);
    }
    let timeout = Duration::from_secs(hook.timeout_seconds.max(1));
    let target = match resolve.target(&hook.client, timeout) {
        Ok(t) => Target {
            ca_bundle: hook.ca_bundle.clone(),
            ..t
        },
        Err(Unresolved { url, why }) => {
            let why = match url {
                Some(url) => format!("failed to call webhook: Post {url:?}: {why}"),
                None => format!("failed to call webhook: {why}"),
            };
            return failed(hook, &why).map(|()| Turn::FailedOpen);
        }
    };
    let body = serde_json::to_vec(&review::review(version, request)).unwrap_or_default();
    let began = std::time::Instant::now();
    let posted = call::post(&target, Bytes::from(body), timeout).await;
    tracing::debug!(webhook = %hook.name, url = %target.url, elapsed_ms = began.elapsed().as_secs_f64() * 1e3, "called");
    let answer = match posted {
        Ok(a) => a,
        Err(failure) => {
            let why = format!("failed to call webhook: Post {:?}: {failure}", target.url);
            return failed(hook, &why).map(|()| Turn::FailedOpen);
        }
    };
    let decoded = match decode_answer(&answer) {
        Ok(v) => v,
        Err(why) => {
            return failed(hook, &format!("failed to call webhook: {why}"))
                .map(|()| Turn::FailedOpen);
        }
    };
    let mutating = hook.phase == Phase::Mutating;
    let verdict = match review::verify(version, &uid, mutating, &decoded) {
        Ok(v) => v,
        Err(why) => {
            let why = format!("received invalid webhook response: {why}");
            return failed(hook, &why).map(|()| Turn::FailedOpen);
        }
    };
    // Warnings count whatever the verdict.
    warnings.extend(verdict.warnings.iter().filter(|w| !w.is_empty()).cloned());
    if !verdict.allowed {
        return Err(review::denied(&hook.name, verdict.result.as_ref()));
    }
    Ok(Turn::Allowed(verdict))
}

/// matchConditions that failed to evaluate under Fail: the request's resource is forbidden.
fn forbidden(facts: &RequestFacts, name: &str, why: &str) -> ApiError {
    let rt = &facts.rt;
    let resource = match rt.group.as_str() {
        "" => rt.plural.clone(),
        group => format!("{}.{group}", rt.plural),
    };
    let message = match name {
        "" => format!("{resource} is forbidden: {why}"),
        _ => format!("{resource} {name:?} is forbidden: {why}"),
    };
    ApiError {
        details: Some(json!({"name": name, "group": rt.group, "kind": rt.plural})),
        ..ApiError::new(403, "Forbidden", message)
    }
}

/// A call that could not be made or gave no usable answer: the request fails under `Fail`
/// (`Err`, as a 500 whatever the webhook answered), goes on under `Ignore` (`Ok`).
fn failed(hook: &Hook, why: &str) -> Result<(), ApiError> {
    match hook.failure_policy {
        FailurePolicy::Ignore => {
            tracing::warn!(webhook = %hook.name, "failed calling webhook, failing open: {why}");
            Ok(())
        }
        FailurePolicy::Fail => Err(ApiError::internal_error(format!(
            "failed calling webhook {:?}: {why}",
            hook.name
        ))),
    }
}

/// A webhook's HTTP answer decoded as client-go's REST client decodes it: a 2xx body as JSON
/// (whatever its content type), anything else as the error it reports.
fn decode_answer(answer: &call::Answer) -> Result<Value, String> {
    let content_type = answer.content_type.as_deref().unwrap_or("");
    if !(200..=206).contains(&answer.status) {
        return Err(unexpected_answer(answer.status, content_type, &answer.body));
    }
    if answer.body.is_empty() {
        return Err(format!(
            "0-length response with status code: {} and content type: {content_type}",
            answer.status
        ));
    }
    // client-go's universal decoder reads what is not JSON as YAML, and first finds the kind.
    let json = match serde_json::from_slice::<Value>(&answer.body) {
        Ok(v) => v,
        Err(_) => serde_yaml::from_slice::<Value>(&answer.body).map_err(|e| {
            format!("couldn't get version/kind; json parse error: error converting YAML to JSON: yaml: {e}")
        })?,
    };
    let bytes = serde_json::to_vec(&json).unwrap_or_default();
    match crate::semantics::go_decode::find_kind_error(&bytes) {
        Some(why) => Err(why),
        None => Ok(json),
    }
}

/// A non-2xx answer as client-go reports it: a failed Status' message, else its words for the
/// code.
fn unexpected_answer(code: u16, content_type: &str, body: &[u8]) -> String {
    if let Ok(status) = serde_json::from_slice::<Value>(body)
        && status["kind"] == "Status"
        && status["status"] == "Failure"
        && let Some(message) = status["message"].as_str()
    {
        return message.to_string();
    }
    let server_message = if content_type.is_empty() || content_type.starts_with("text/") {
        let text = String::from_utf8_lossy(&body[..body.len().min(2048)]);
        text.trim().to_string()
    } else {
        "unknown".to_string()
    };
    let or_server = |fallback: &str| match server_message.as_str() {
        "" => fallback.to_string(),
        m => m.to_string(),
    };
    match code {
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 => server_message,
        404 => "the server could not find the requested resource".into(),
        405 => "the server does not allow this method on the requested resource".into(),
        406 => or_server("the server was unable to respond with a content type that the client supports"),
        409 => "the server reported a conflict".into(),
        415 => server_message,
        422 => "the server rejected our request due to an error in our request".into(),
        429 => "the server has received too many requests and has asked us to try again later".into(),
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        c if c >= 500 => format!("an error on the server ({server_message:?}) has prevented the request from succeeding"),
        c => format!("the server responded with the status code {c} but did not return more information"),
    }
}

/// A patched object decoded again, as kube-apiserver decodes a webhook's result into its type and
/// defaults it: a built-in kind loses what its type cannot hold; a custom resource keeps unknown
/// fields until every webhook has had its turn (then they are pruned).
fn redecode(rt: &ResourceType, obj: &mut Value) -> Result<(), String> {
    if let Some(check) = rt.decode_check {
        let known = check(obj)?;
        let unknown = crate::semantics::meta::unknown_fields(obj, &known);
        crate::semantics::meta::remove_fields(obj, &unknown);
        if let Some(defaults) = rt.behavior.decode_defaults {
            defaults(obj);
        }
    } else if let Some(schema) = &rt.structural {
        schema.apply_defaults(obj);
    }
    Ok(())
}

fn to_storage(rt: &ResourceType, shown: &Value) -> Value {
    match rt.behavior.convert {
        Some(c) => (c.to_storage)(shown),
        None => shown.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_without_a_status_body_is_reported_in_client_go_words_for_its_code() {
        let answer = |status: u16, ct: &str, body: &str| call::Answer {
            status,
            content_type: Some(ct.to_string()),
            body: Bytes::from(body.to_string()),
        };
        assert_eq!(
            decode_answer(&answer(500, "text/plain", "boom")),
            Err(
                "an error on the server (\"boom\") has prevented the request from succeeding"
                    .into()
            )
        );
        assert_eq!(
            decode_answer(&answer(404, "text/plain", "")),
            Err("the server could not find the requested resource".into())
        );
        let status = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"nope"}"#;
        assert_eq!(
            decode_answer(&answer(403, "application/json", status)),
            Err("nope".into())
        );
        assert_eq!(
            decode_answer(&answer(200, "application/json", "")),
            Err(
                "0-length response with status code: 200 and content type: application/json".into()
            )
        );
    }
}
