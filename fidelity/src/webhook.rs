//! The corpus's admission webhook: one scripted webhook on loopback that both servers call, so
//! that what each makes of a webhook's answer can be compared. A sequence names it as
//! `{webhook}<path>` with `{webhook-ca}` as the caBundle; the path picks the behaviour:
//!
//! - `/label`: a JSONPatch adding the label `mutated: by-webhook`;
//! - `/echo`: a JSONPatch writing what the review asked into annotations of the object, one
//!   `review.fidelity.tollgate.dev/<field>` per field of the request, so that the requests the
//!   two servers send are compared as any answer is (its own annotations are taken out of the
//!   objects it echoes; `uid` and `userInfo` are left out: the first is random, the second names
//!   the corpus's client, which is another user on each server);
//! - `/deny`: denies, with a message and code 403;
//! - `/warn`: allows, with two warnings;
//! - `/bad-patch`: a JSONPatch that does not apply (it removes a label nobody set);
//! - `/wrong-uid`: a response for another review;
//! - `/garbage`: `200` with a body that is not an AdmissionReview;
//! - `/error`: `500` with a plain-text body;
//! - `/slow`: allows after [`SLOW`] (a configuration's `timeoutSeconds: 1` runs out first).
//!
//! Any other path is answered `404`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use fake_apiserver::webhooks::scripted::{self, Answered, Call, ScriptedError, Webhook, patched};
use serde_json::{Map, Value, json};

/// How long `/slow` takes to answer.
pub const SLOW: Duration = Duration::from_secs(3);

/// The prefix of `/echo`'s annotations.
pub const ECHO_PREFIX: &str = "review.fidelity.tollgate.dev/";

/// Start the corpus's webhook.
pub async fn start() -> Result<Webhook, ScriptedError> {
    scripted::serve(&["127.0.0.1"], Arc::new(respond)).await
}

fn respond(call: Call) -> Pin<Box<dyn Future<Output = Answered> + Send>> {
    Box::pin(answer(call))
}

async fn answer(call: Call) -> Answered {
    let request = &call.request;
    match call.path.as_str() {
        "/label" => Ok(patched(json!([add_to(
            request,
            "labels",
            "mutated",
            json!("by-webhook")
        )]))),
        "/echo" => Ok(patched(echo(request))),
        "/deny" => Ok(json!({"allowed": false, "status": {
            "code": 403, "message": "the corpus's webhook denies every request"}})),
        "/warn" => Ok(json!({"allowed": true, "warnings": [
            "the corpus's webhook warns", "and warns again"]})),
        "/bad-patch" => Ok(patched(json!([
            {"op": "remove", "path": "/metadata/labels/never-set"}
        ]))),
        "/wrong-uid" => Ok(json!({"uid": "not-the-reviews-uid", "allowed": true})),
        "/garbage" => Err((200, "this is not an AdmissionReview".into())),
        "/error" => Err((500, "the corpus's webhook failed".into())),
        "/slow" => {
            tokio::time::sleep(SLOW).await;
            Ok(json!({"allowed": true}))
        }
        other => Err((404, format!("the corpus's webhook has no {other}"))),
    }
}

/// A JSONPatch operation setting `metadata.<map>.<key>`, adding the map when the object has none.
fn add_to(request: &Value, map: &str, key: &str, value: Value) -> Value {
    if request["object"]["metadata"][map].is_object() {
        json!({"op": "add", "path": format!("/metadata/{map}/{key}"), "value": value})
    } else {
        json!({"op": "add", "path": format!("/metadata/{map}"), "value": {key: value}})
    }
}

/// The operations writing the request's fields into the object's annotations.
fn echo(request: &Value) -> Value {
    let mut shown = Map::new();
    for (field, value) in request.as_object().into_iter().flatten() {
        if matches!(field.as_str(), "uid" | "userInfo") {
            continue;
        }
        let mut value = value.clone();
        for object in ["object", "oldObject"] {
            if field == object {
                forget_echoes(&mut value);
            }
        }
        shown.insert(
            format!("{ECHO_PREFIX}{field}"),
            Value::String(value.to_string()),
        );
    }
    let annotations = &request["object"]["metadata"]["annotations"];
    let mut merged: Map<String, Value> = annotations.as_object().cloned().unwrap_or_default();
    merged.retain(|k, _| !k.starts_with(ECHO_PREFIX));
    merged.extend(shown);
    json!([{"op": "add", "path": "/metadata/annotations", "value": merged}])
}

/// Take the echo's own annotations out of an object it is shown (an update's old object holds
/// the create's).
fn forget_echoes(object: &mut Value) {
    if let Some(annotations) = object
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        annotations.retain(|k, _| !k.starts_with(ECHO_PREFIX));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_echo_writes_each_field_but_the_uid_and_user_and_not_its_own_annotations() {
        let request = json!({
            "uid": "u", "userInfo": {"username": "me"}, "operation": "UPDATE",
            "object": {"metadata": {"annotations": {"keep": "1", "review.fidelity.tollgate.dev/operation": "old"}}},
            "oldObject": {"metadata": {"annotations": {"review.fidelity.tollgate.dev/operation": "old"}}},
        });
        let ops = echo(&request);
        let written = &ops[0]["value"];
        assert_eq!(written["keep"], "1");
        assert_eq!(
            written["review.fidelity.tollgate.dev/operation"],
            "\"UPDATE\""
        );
        assert_eq!(
            written["review.fidelity.tollgate.dev/oldObject"],
            r#"{"metadata":{"annotations":{}}}"#
        );
        assert!(written.get("review.fidelity.tollgate.dev/uid").is_none());
        assert!(
            written
                .get("review.fidelity.tollgate.dev/userInfo")
                .is_none()
        );
    }

    #[test]
    fn a_label_is_added_to_the_labels_or_as_the_first() {
        let with = json!({"object": {"metadata": {"labels": {"a": "1"}}}});
        assert_eq!(
            add_to(&with, "labels", "mutated", json!("x"))["path"],
            "/metadata/labels/mutated"
        );
        let without = json!({"object": {"metadata": {}}});
        let op = add_to(&without, "labels", "mutated", json!("x"));
        assert_eq!(op["path"], "/metadata/labels");
        assert_eq!(op["value"], json!({"mutated": "x"}));
    }
}
