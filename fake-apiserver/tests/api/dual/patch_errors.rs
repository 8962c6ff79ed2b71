//! What a PATCH answers when it does not apply, on both targets: JSON patch with the quirks of
//! kube-apiserver's evanphx/json-patch (a `replace` of a missing key adds it, a missing `value`
//! is null, a failing operation is one generic 422), the decoding errors of each patch type, a
//! strategic merge patch's unclassified 500s, and the 405 and 415 of the router.

use serde_json::{Value, json};

use super::{Env, Raw, assert_status, dual};

dual!(
    json_patch_applies_like_evanphx,
    json_patch_failures_are_one_generic_422,
    patch_bodies_that_do_not_decode,
    strategic_merge_directive_errors_are_bare_500s,
    methods_and_media_types_the_router_refuses,
);

async fn configmap(env: &Env) -> String {
    let path = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1"}});
    let raw = env
        .raw("POST", &path, "application/json", body.to_string())
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    format!("{path}/a")
}

async fn patch(env: &Env, path: &str, content_type: &str, body: &str) -> Raw {
    env.raw("PATCH", path, content_type, body.to_owned()).await
}

const JSON_PATCH: &str = "application/json-patch+json";

async fn json_patch_applies_like_evanphx(env: Env) {
    let cm = configmap(&env).await;
    // `replace` of a missing key adds it, `copy` too, an index of -1 appends, and `test` of a
    // missing key for null passes.
    let raw = patch(
        &env,
        &cm,
        JSON_PATCH,
        r#"[{"op":"replace","path":"/data/new","value":"r"},
            {"op":"copy","from":"/data/x","path":"/data/copied"},
            {"op":"add","path":"/metadata/finalizers","value":["example.com/a","example.com/b"]},
            {"op":"add","path":"/metadata/finalizers/-1","value":"example.com/c"},
            {"op":"test","path":"/data/absent","value":null}]"#,
    )
    .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_eq!(
        raw.body["data"],
        json!({"copied": "1", "new": "r", "x": "1"})
    );
    assert_eq!(
        raw.body["metadata"]["finalizers"],
        json!(["example.com/a", "example.com/b", "example.com/c"])
    );
    let raw = patch(
        &env,
        &cm,
        JSON_PATCH,
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    )
    .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
}

async fn json_patch_failures_are_one_generic_422(env: Env) {
    let cm = configmap(&env).await;
    for ops in [
        r#"[{"op":"test","path":"/data/x","value":"2"}]"#,
        r#"[{"op":"remove","path":"/data/nothing"}]"#,
        r#"[{"op":"add","path":"/spec/a/b","value":1}]"#,
        r#"[{"op":"add","path":"/metadata/finalizers","value":[]},{"op":"add","path":"/metadata/finalizers/5","value":"x"}]"#,
        r#"[{"op":"frobnicate","path":"/data/x"}]"#,
        r#"[{"op":"move","path":"/data/y"}]"#,
        r#"[{"op":"add","path":"","value":{}}]"#,
    ] {
        let raw = patch(&env, &cm, JSON_PATCH, ops).await;
        assert_status(&raw, 422, "Invalid");
        assert_eq!(
            raw.body["message"], "the server rejected our request due to an error in our request",
            "{ops}"
        );
        assert_eq!(raw.body["details"], json!({}), "{ops}");
    }
    // Nothing of a failed patch is written.
    let raw = env.raw("GET", &cm, "", Vec::new()).await;
    assert_eq!(raw.body["data"], json!({"x": "1"}));
    assert_eq!(raw.body["metadata"]["finalizers"], Value::Null);
}

async fn patch_bodies_that_do_not_decode(env: Env) {
    let cm = configmap(&env).await;
    let cases = [
        (JSON_PATCH, "[{", "invalid JSON patch"),
        (
            JSON_PATCH,
            r#"{"op":"add"}"#,
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
        ),
        (
            JSON_PATCH,
            r#"[{"op":1,"path":"/data/x"}]"#,
            "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string",
        ),
        (
            "application/merge-patch+json",
            r#"{"data": "#,
            "invalid JSON patch",
        ),
        (
            "application/merge-patch+json",
            "[1]",
            "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}",
        ),
        ("application/merge-patch+json", "null", "Invalid JSON Patch"),
        (
            "application/strategic-merge-patch+json",
            "{template",
            "invalid JSON patch",
        ),
        (
            "application/strategic-merge-patch+json",
            r#""x""#,
            "json: cannot unmarshal string into Go value of type map[string]interface {}",
        ),
    ];
    for (content_type, body, message) in cases {
        let raw = patch(&env, &cm, content_type, body).await;
        assert_status(&raw, 400, "BadRequest");
        assert_eq!(raw.body["message"], message, "{content_type} {body}");
    }
}

async fn strategic_merge_directive_errors_are_bare_500s(env: Env) {
    let path = format!("/api/v1/namespaces/{}/podtemplates", env.ns);
    let body = json!({"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"},
        "template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}});
    let raw = env
        .raw("POST", &path, "application/json", body.to_string())
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    let t = format!("{path}/t");
    let cases = [
        (
            r#"{"template":{"spec":{"containers":[{"name":"a","$patch":"merge"}]}}}"#,
            "merging lists cannot yet be specified in the patch",
        ),
        (
            r#"{"template":{"spec":{"containers":[{"image":"q","x":{"b":1}}]}}}"#,
            "map: map[image:q x:map[b:1]] does not contain declared merge key: name",
        ),
        (
            r#"{"template":{"spec":{"containers":[{"name":"a","$patch":"frob","env":[{"name":"q"}]}]}}}"#,
            "unknown patch type: frob in map: map[$patch:frob env:[map[name:q]] name:a]",
        ),
        (
            r#"{"template":{"spec":{"$patch":"frob"}}}"#,
            "unknown patch type: frob in map: map[$patch:frob]",
        ),
    ];
    for body in [
        r#"{"template":{"spec":{"$retainKeys":["containers"],"hostname":"h"}}}"#,
        r#"{"template":{"spec":{"containers":[{"name":"a","$retainKeys":[1]}]}}}"#,
    ] {
        let raw = patch(&env, &t, "application/strategic-merge-patch+json", body).await;
        assert_status(&raw, 400, "BadRequest");
        assert_eq!(raw.body["message"], "invalid patch format of retainKeys");
    }
    // Deleting the whole object leaves one without a name, which the update refuses.
    let raw = patch(
        &env,
        &t,
        "application/strategic-merge-patch+json",
        r#"{"$patch":"delete"}"#,
    )
    .await;
    assert_status(&raw, 400, "BadRequest");
    for (body, message) in cases {
        let raw = patch(&env, &t, "application/strategic-merge-patch+json", body).await;
        assert_eq!(raw.code, 500, "{}", raw.text);
        assert_eq!(raw.body["message"], message, "{body}");
        // No reason and no details: the real server passes the error on unclassified.
        assert_eq!(raw.body["reason"], Value::Null, "{}", raw.text);
        assert_eq!(raw.body["details"], Value::Null, "{}", raw.text);
    }
}

async fn methods_and_media_types_the_router_refuses(env: Env) {
    let cms = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let cm = configmap(&env).await;
    for (method, path) in [("PUT", &cms), ("POST", &cm)] {
        let raw = env.raw(method, path, "application/json", "{}").await;
        assert_status(&raw, 405, "MethodNotAllowed");
        assert_eq!(
            raw.body["message"], "the server does not allow this method on the requested resource",
            "{method} {path}"
        );
        assert_eq!(raw.body["details"], json!({}), "{method} {path}");
    }
    let raw = patch(&env, &cm, "application/json", "{}").await;
    assert_status(&raw, 415, "UnsupportedMediaType");
    assert_eq!(raw.body["message"], "415: Unsupported Media Type");
    assert_eq!(raw.body["details"], json!({}));
}
