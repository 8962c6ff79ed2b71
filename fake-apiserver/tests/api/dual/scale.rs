//! The `/scale` subresource of built-in workloads on both targets: its selector string, and the
//! errors of a Scale body that is not one, names another object, or does not decode. Only write
//! answers are compared: the real server's workload controllers write status at moments of their
//! own, so a read after a write would race them.

use serde_json::{Value, json};

use super::{Env, assert_status, dual};

dual!(
    the_scale_selector_is_sorted_by_key_with_sorted_set_values,
    a_scale_body_of_another_kind_cannot_be_handled_as_a_scale,
    a_scale_naming_another_object_is_a_bad_request,
    negative_replicas_are_invalid_with_the_number_unquoted,
    a_patched_scale_whose_replicas_is_a_string_does_not_decode,
);

async fn paused_deployment(env: &Env) -> String {
    let path = format!("/apis/apps/v1/namespaces/{}/deployments", env.ns);
    let body = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {
            "paused": true, "replicas": 0,
            "selector": {
                "matchLabels": {"zone": "x", "app": "d"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]}],
            },
            "template": {
                "metadata": {"labels": {"app": "d", "zone": "x", "tier": "web"}},
                "spec": {"schedulerName": "none", "containers": [{"name": "c", "image": "pause"}]},
            },
        },
    });
    let made = env
        .raw("POST", &path, "application/json", body.to_string())
        .await;
    assert_eq!(made.code, 201, "{}", made.text);
    format!("{path}/d/scale")
}

async fn put(env: &Env, path: &str, body: Value) -> super::Raw {
    env.raw("PUT", path, "application/json", body.to_string())
        .await
}

async fn the_scale_selector_is_sorted_by_key_with_sorted_set_values(env: Env) {
    let scale = paused_deployment(&env).await;
    let body = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": 2}});
    let answer = put(&env, &scale, body).await;
    assert_eq!(answer.code, 200, "{}", answer.text);
    assert_eq!(answer.body["spec"]["replicas"], 2);
    assert_eq!(
        answer.body["status"]["selector"],
        "app=d,tier in (api,web),zone=x"
    );
}

async fn a_scale_body_of_another_kind_cannot_be_handled_as_a_scale(env: Env) {
    let scale = paused_deployment(&env).await;
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}, "data": {"replicas": "3"}});
    let answer = put(&env, &scale, body).await;
    assert_status(&answer, 400, "BadRequest");
    assert_eq!(
        answer.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a Scale: converting (v1.ConfigMap) to (autoscaling.Scale): unknown conversion"
    );
}

async fn a_scale_naming_another_object_is_a_bad_request(env: Env) {
    let scale = paused_deployment(&env).await;
    let body = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "other"}, "spec": {"replicas": 3}});
    let answer = put(&env, &scale, body).await;
    assert_status(&answer, 400, "BadRequest");
    assert_eq!(
        answer.body["message"],
        "the name of the object (other) does not match the name on the URL (d)"
    );
}

async fn negative_replicas_are_invalid_with_the_number_unquoted(env: Env) {
    let scale = paused_deployment(&env).await;
    let body = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d"}, "spec": {"replicas": -1}});
    let answer = put(&env, &scale, body).await;
    assert_status(&answer, 422, "Invalid");
    assert_eq!(
        answer.body["message"],
        "Scale.autoscaling \"d\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    );
    assert_eq!(
        answer.body["details"]["causes"][0]["message"],
        "Invalid value: -1: must be greater than or equal to 0"
    );
}

async fn a_patched_scale_whose_replicas_is_a_string_does_not_decode(env: Env) {
    let scale = paused_deployment(&env).await;
    let answer = env
        .raw(
            "PATCH",
            &scale,
            "application/merge-patch+json",
            r#"{"spec":{"replicas":"3"}}"#,
        )
        .await;
    assert_status(&answer, 422, "Invalid");
    let cause = &answer.body["details"]["causes"][0];
    assert_eq!(cause["field"], "patch", "{}", answer.text);
    let message = cause["message"].as_str().unwrap_or_default();
    assert!(
        message.ends_with(
            "json: cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32"
        ),
        "{message}"
    );
    assert!(message.contains(r#"\"replicas\":\"3\""#), "{message}");
}
