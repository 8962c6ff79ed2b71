//! How kube-apiserver's decoder reads what it is sent and what a patch produced, on both targets:
//! bad base64 in a Secret in Go's words, null elements of maps read as zero values, unknown
//! fields of a patch result under `fieldValidation=Strict`, and the 415 of a custom resource's
//! PATCH with no patch content type.

use serde_json::{Value, json};

use super::{Env, assert_status, dual};

dual!(
    secret_bad_base64_is_worded_as_go_words_it,
    null_map_values_are_read_as_empty_strings,
    strict_unknown_field_in_a_patch_is_422_on_patch,
    custom_resource_patch_with_plain_json_is_refused_in_apiextensions_words,
);

async fn post(env: &Env, path: &str, body: Value) -> super::Raw {
    env.raw("POST", path, "application/json", body.to_string())
        .await
}

async fn secret_bad_base64_is_worded_as_go_words_it(env: Env) {
    let path = format!("/api/v1/namespaces/{}/secrets", env.ns);
    for (data, at) in [("not base64!", 3), ("dQ=x", 2), ("dQ", 0), ("YWI=x", 4)] {
        let raw = post(
            &env,
            &path,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"a": data}}),
        )
        .await;
        assert_status(&raw, 400, "BadRequest");
        assert_eq!(
            raw.body["message"],
            format!(
                "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte {at}"
            ),
            "{data}"
        );
    }
}

async fn null_map_values_are_read_as_empty_strings(env: Env) {
    let path = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let raw = post(
        &env,
        &path,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1", "q": null}}),
    )
    .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert_eq!(raw.body["data"], json!({"q": "", "x": "1"}));
    // A JSON patch's `add` without a value adds a null: decoded as "" too.
    let raw = env
        .raw(
            "PATCH",
            &format!("{path}/a"),
            "application/json-patch+json",
            r#"[{"op":"add","path":"/data/n"}]"#,
        )
        .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_eq!(raw.body["data"], json!({"n": "", "q": "", "x": "1"}));
}

async fn strict_unknown_field_in_a_patch_is_422_on_patch(env: Env) {
    let path = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let raw = post(
        &env,
        &path,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1"}}),
    )
    .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    let raw = env
        .raw(
            "PATCH",
            &format!("{path}/a?fieldValidation=Strict"),
            "application/merge-patch+json",
            r#"{"spec":{"a":1}}"#,
        )
        .await;
    assert_status(&raw, 422, "Invalid");
    let message = raw.body["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: ")
            && message.ends_with(": strict decoding error: unknown field \"spec\""),
        "{message}"
    );
    assert_eq!(raw.body["details"]["causes"][0]["field"], "patch");
    // Without Strict the unknown field is dropped and the patch applies.
    let raw = env
        .raw(
            "PATCH",
            &format!("{path}/a?fieldValidation=Ignore"),
            "application/merge-patch+json",
            r#"{"spec":{"a":1},"data":{"y":"2"}}"#,
        )
        .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_eq!(raw.body["data"], json!({"x": "1", "y": "2"}));
    assert!(raw.body.get("spec").is_none(), "{}", raw.text);
}

async fn custom_resource_patch_with_plain_json_is_refused_in_apiextensions_words(env: Env) {
    let group = env.create_open_widgets("podev").await;
    let base = format!("/apis/{group}/v1/namespaces/{}/widgets", env.ns);
    let raw = post(
        &env,
        &base,
        json!({"apiVersion": format!("{group}/v1"), "kind": "Widget", "metadata": {"name": "w"}}),
    )
    .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    let raw = env
        .raw(
            "PATCH",
            &format!("{base}/w"),
            "application/json",
            r#"{"spec":{}}"#,
        )
        .await;
    assert_status(&raw, 415, "UnsupportedMediaType");
    assert_eq!(
        raw.body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
    assert!(raw.body.get("details").is_none(), "{}", raw.text);
}
