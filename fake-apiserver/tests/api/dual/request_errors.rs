//! Bad requests answered in kube-apiserver's words: bodies its decoders cannot read, bodies of
//! another kind, malformed query parameters of lists, gets and watches, DeleteOptions, write
//! options, routing errors, and `?pretty` answers.

use serde_json::{Value, json};

use super::{Env, Raw, assert_status, dual};

dual!(
    malformed_bodies_are_refused_in_the_decoders_words,
    bodies_nested_a_million_deep_are_refused,
    a_body_of_another_kind_or_version_is_refused_as_the_scheme_refuses_it,
    wrongly_typed_fields_of_a_create_or_update_are_named_as_go_names_them,
    names_and_resource_versions_that_cannot_be_read,
    list_parameters_are_parsed_as_go_parses_them,
    watch_options_are_checked_as_kube_apiserver_checks_them,
    delete_options_come_from_the_body_when_there_is_one,
    write_options_are_checked,
    routing_errors,
    pretty_answers_are_indented,
    selectors_kube_apiserver_reads_its_own_way,
);

fn configmaps(env: &Env) -> String {
    format!("/api/v1/namespaces/{}/configmaps", env.ns)
}

async fn post(env: &Env, content_type: &str, body: &str) -> Raw {
    env.raw("POST", &configmaps(env), content_type, body).await
}

async fn get(env: &Env, path: &str) -> Raw {
    env.raw("GET", path, "", "").await
}

fn bad_request(raw: &Raw, message: &str) {
    assert_status(raw, 400, "BadRequest");
    assert_eq!(raw.body["message"], message, "{}", raw.text);
}

/// An unclassified error: no reason, as kube-apiserver passes on errors of its storage layer.
fn unclassified(raw: &Raw, code: u16, message: &str) {
    assert_eq!(raw.code, code, "{}", raw.text);
    assert_eq!(raw.body["reason"], Value::Null, "{}", raw.text);
    assert_eq!(raw.body["message"], message, "{}", raw.text);
}

fn causes(raw: &Raw) -> Vec<(String, String)> {
    raw.body["details"]["causes"]
        .as_array()
        .unwrap_or_else(|| panic!("causes in {}", raw.text))
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or("").to_string(),
                c["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

const FIND_KIND: &str = "struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }";

/// Nesting beyond what the decoders read is a 400 on every body type. kube-apiserver reads up to
/// 10,000 levels, the fake 128; both refuse a million, and the fake in one linear pass (libyaml
/// alone took seconds).
async fn bodies_nested_a_million_deep_are_refused(env: Env) {
    let deep = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
    let yaml = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata: {deep}\n");
    let json = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"deep"}},"data":{deep}}}"#
    );
    let one = format!("{}/deep", configmaps(&env));
    let cases = [
        (
            "POST",
            configmaps(&env),
            "application/yaml",
            &yaml,
            "yaml: line 5: exceeded max depth of ",
        ),
        ("POST", configmaps(&env), "application/json", &json, ""),
        (
            "PATCH",
            format!("{one}?fieldManager=m"),
            "application/apply-patch+yaml",
            &yaml,
            "error encoding patch: yaml: line 5: exceeded max depth of ",
        ),
        (
            "PATCH",
            one.clone(),
            "application/merge-patch+json",
            &json,
            "",
        ),
    ];
    for (method, path, media, body, message) in cases {
        let raw = env.raw(method, &path, media, body.as_str()).await;
        assert_eq!(raw.code, 400, "{media}: {}", raw.text);
        assert_status(&raw, 400, "BadRequest");
        let said = raw.body["message"].as_str().unwrap_or("");
        assert!(said.contains(message), "{media}: {said}");
    }
    assert_eq!(get(&env, &one).await.code, 404, "nothing was written");
}

async fn malformed_bodies_are_refused_in_the_decoders_words(env: Env) {
    let json = "application/json";
    let unrecognized = "the object provided is unrecognized (must be of type ConfigMap)";
    let cases = [
        (
            "",
            format!(
                "{unrecognized}: couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)"
            ),
        ),
        (
            r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"#,
            format!(
                "{unrecognized}: couldn't get version/kind; json parse error: unexpected end of JSON input ({{\"apiVersion\": \"v1\", \"kind\": \" ...)"
            ),
        ),
        (
            r#"{"a":1,}"#,
            format!(
                "{unrecognized}: couldn't get version/kind; json parse error: invalid character '}}' looking for beginning of object key string ({{\"a\":1,}})"
            ),
        ),
        (
            r#"{"a":tru}"#,
            format!(
                "{unrecognized}: couldn't get version/kind; json parse error: invalid character '}}' in literal true (expecting 'e') ({{\"a\":tru}})"
            ),
        ),
        (
            "[1]",
            format!(
                "{unrecognized}: couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type {FIND_KIND} (5b315d)"
            ),
        ),
        (
            r#"{"kind":5}"#,
            format!(
                "{unrecognized}: couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string ({{\"kind\":5}})"
            ),
        ),
    ];
    for (body, message) in cases {
        bad_request(&post(&env, json, body).await, &message);
    }
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n";
    bad_request(
        &post(&env, "application/yaml", yaml).await,
        &format!(
            "{unrecognized}: yaml: line 3: did not find expected ',' or '}}' (61706956657273696f6e3a2076310a6b696e643a20436f6e6669674d6170 ...)"
        ),
    );
    let raw = post(&env, "text/plain", "{}").await;
    assert_status(&raw, 415, "UnsupportedMediaType");
    assert_eq!(
        raw.body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    // A body of null reads as an empty object.
    let raw = post(&env, json, "null").await;
    assert_status(&raw, 422, "Invalid");
}

async fn a_body_of_another_kind_or_version_is_refused_as_the_scheme_refuses_it(env: Env) {
    let json = "application/json";
    let cases = [
        (
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "a"}}),
            "Secret in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Secret) to (core.ConfigMap): unknown conversion",
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "a"}}),
            "Deployment in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Deployment) to (core.ConfigMap): unknown conversion",
        ),
        (
            json!({"apiVersion": "v1", "kind": "Bogus", "metadata": {"name": "a"}}),
            "Bogus in version \"v1\" cannot be handled as a ConfigMap: no kind \"Bogus\" is registered for version \"v1\" in scheme \"pkg/runtime/scheme.go:111\"",
        ),
        (
            json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "a"}}),
            "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: no kind \"ConfigMap\" is registered for version \"apps/v1\" in scheme \"pkg/runtime/scheme.go:111\"",
        ),
        // The kind defaults to the URL's when the body has none.
        (
            json!({"apiVersion": "v2", "metadata": {"name": "a"}}),
            "ConfigMap in version \"v2\" cannot be handled as a ConfigMap: no kind \"ConfigMap\" is registered for version \"v2\" in scheme \"pkg/runtime/scheme.go:111\"",
        ),
    ];
    for (body, message) in cases {
        bad_request(&post(&env, json, &body.to_string()).await, message);
    }
    // Neither apiVersion nor kind: both come from the URL.
    let raw = post(&env, json, r#"{"metadata":{"name":"plain"}}"#).await;
    assert_eq!(raw.code, 201, "{}", raw.text);
}

async fn wrongly_typed_fields_of_a_create_or_update_are_named_as_go_names_them(env: Env) {
    let json = "application/json";
    let cannot = "ConfigMap in version \"v1\" cannot be handled as a ConfigMap";
    let cases = [
        (
            json!({"metadata": {"name": "a"}, "data": {"k": 1}}),
            format!(
                "{cannot}: json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
            ),
        ),
        (
            json!({"metadata": {"name": "a", "labels": []}}),
            format!(
                "{cannot}: json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string"
            ),
        ),
        (
            json!({"metadata": 5}),
            format!(
                "{cannot}: json: cannot unmarshal number into Go struct field ConfigMap.metadata of type v1.ObjectMeta"
            ),
        ),
    ];
    for (body, message) in &cases {
        bad_request(&post(&env, json, &body.to_string()).await, message);
    }
    assert_eq!(
        post(&env, json, r#"{"metadata":{"name":"a"}}"#).await.code,
        201
    );
    let raw = env
        .raw(
            "PUT",
            &format!("{}/a", configmaps(&env)),
            json,
            json!({"metadata": {"name": "a"}, "data": {"k": true}}).to_string(),
        )
        .await;
    bad_request(
        &raw,
        &format!(
            "{cannot}: json: cannot unmarshal bool into Go struct field ConfigMap.data of type string"
        ),
    );
}

async fn names_and_resource_versions_that_cannot_be_read(env: Env) {
    let json = "application/json";
    assert_eq!(
        post(&env, json, r#"{"metadata":{"name":"a"}}"#).await.code,
        201
    );
    let one = format!("{}/a", configmaps(&env));
    let raw = env
        .raw(
            "PUT",
            &format!("{}/yml", configmaps(&env)),
            json,
            r#"{"metadata":{}}"#,
        )
        .await;
    bad_request(
        &raw,
        "the name of the object (yml based on URL) was undeterminable: name must be provided",
    );
    let raw = env
        .raw(
            "PUT",
            &one,
            json,
            r#"{"metadata":{"name":"a","resourceVersion":"abc"}}"#,
        )
        .await;
    unclassified(
        &raw,
        500,
        "strconv.ParseUint: parsing \"abc\": invalid syntax",
    );
    let raw = env
        .raw(
            "PATCH",
            &one,
            "application/merge-patch+json",
            r#"{"metadata":{"resourceVersion":"1.5"}}"#,
        )
        .await;
    unclassified(
        &raw,
        500,
        "strconv.ParseUint: parsing \"1.5\": invalid syntax",
    );
    for rv in ["abc", "0x10", "-1"] {
        let raw = get(&env, &format!("{one}?resourceVersion={rv}")).await;
        unclassified(
            &raw,
            500,
            &format!(
                "resourceVersion: Invalid value: \"{rv}\": strconv.ParseUint: parsing \"{rv}\": invalid syntax"
            ),
        );
    }
    let raw = get(&env, &format!("{one}?resourceVersion=99999999999999999999")).await;
    unclassified(
        &raw,
        500,
        "resourceVersion: Invalid value: \"99999999999999999999\": strconv.ParseUint: parsing \"99999999999999999999\": value out of range",
    );
    assert_eq!(
        get(&env, &format!("{one}?resourceVersion=1")).await.code,
        200
    );
}

async fn list_parameters_are_parsed_as_go_parses_them(env: Env) {
    let json = "application/json";
    for name in ["a", "b", "c"] {
        let body = json!({"metadata": {"name": name}}).to_string();
        assert_eq!(post(&env, json, &body).await.code, 201);
    }
    let list = configmaps(&env);
    for (param, message) in [
        (
            "limit=abc",
            "strconv.ParseInt: parsing \"abc\": invalid syntax",
        ),
        (
            "limit=1.5",
            "strconv.ParseInt: parsing \"1.5\": invalid syntax",
        ),
        (
            "limit=99999999999999999999",
            "strconv.ParseInt: parsing \"99999999999999999999\": value out of range",
        ),
        (
            "timeoutSeconds=abc",
            "strconv.ParseInt: parsing \"abc\": invalid syntax",
        ),
        (
            "watch=1&timeoutSeconds=x",
            "strconv.ParseInt: parsing \"x\": invalid syntax",
        ),
        (
            "watch=1&limit=x",
            "strconv.ParseInt: parsing \"x\": invalid syntax",
        ),
    ] {
        bad_request(&get(&env, &format!("{list}?{param}")).await, message);
    }
    // A negative limit is no limit.
    let raw = get(&env, &format!("{list}?limit=-1")).await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    let names: Vec<&str> = raw.body["items"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .filter(|n| n.len() == 1)
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    assert!(
        raw.body["metadata"].get("continue").is_none(),
        "{}",
        raw.text
    );
    assert_eq!(
        get(&env, &format!("{list}?timeoutSeconds=-1")).await.code,
        200
    );
}

async fn watch_options_are_checked_as_kube_apiserver_checks_them(env: Env) {
    let watch = format!("{}?watch=1", configmaps(&env));
    let raw = get(&env, &format!("{watch}&resourceVersion=abc")).await;
    unclassified(
        &raw,
        500,
        "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax",
    );
    let match_field = "resourceVersionMatch".to_string();
    let requires =
        "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan";
    let unless = "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided";
    let cases: [(&str, Vec<&str>); 6] = [
        (
            "resourceVersion=0&resourceVersionMatch=Exact",
            vec![
                unless,
                "Unsupported value: \"Exact\": supported values: \"NotOlderThan\"",
            ],
        ),
        (
            "resourceVersion=5&resourceVersionMatch=NotOlderThan",
            vec![unless],
        ),
        (
            "sendInitialEvents=true&allowWatchBookmarks=true",
            vec![requires],
        ),
        ("sendInitialEvents=false", vec![requires]),
        (
            "sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=5",
            vec![
                requires,
                "Unsupported value: \"Exact\": supported values: \"NotOlderThan\"",
            ],
        ),
        // Without a resourceVersion a watch is served as a streaming list, which cannot continue.
        (
            "continue=abc",
            vec!["Forbidden: resourceVersionMatch is forbidden when continue is provided"],
        ),
    ];
    for (param, want) in cases {
        let raw = get(&env, &format!("{watch}&{param}")).await;
        assert_status(&raw, 422, "Invalid");
        assert_eq!(raw.body["details"]["kind"], "ListOptions");
        let want: Vec<(String, String)> = want
            .iter()
            .map(|m| (match_field.clone(), (*m).to_string()))
            .collect();
        assert_eq!(causes(&raw), want, "{param}");
    }
}

async fn delete_options_come_from_the_body_when_there_is_one(env: Env) {
    let json = "application/json";
    for name in ["a", "b"] {
        let body = json!({"metadata": {"name": name}}).to_string();
        assert_eq!(post(&env, json, &body).await.code, 201);
    }
    let a = format!("{}/a", configmaps(&env));
    for (body, message) in [
        (
            r#"{"kind":"ConfigMap","apiVersion":"v1"}"#,
            "no kind \"ConfigMap\" is registered for version \"v1\" in scheme \"pkg/runtime/scheme.go:111\"",
        ),
        (
            r#"{"kind":"Bogus"}"#,
            "no kind \"Bogus\" is registered for version \"meta.k8s.io/v1\" in scheme \"pkg/runtime/scheme.go:111\"",
        ),
        (
            r#"{p}"#,
            "couldn't get version/kind; json parse error: invalid character 'p' looking for beginning of object key string",
        ),
        (
            r#"{"dryRun":"All"}"#,
            "json: cannot unmarshal string into Go struct field DeleteOptions.dryRun of type []string",
        ),
    ] {
        bad_request(&env.raw("DELETE", &a, json, body).await, message);
    }
    // With a body, the query's options (even invalid ones) are not read: this deletes.
    let raw = env
        .raw(
            "DELETE",
            &format!("{a}?dryRun=All&propagationPolicy=Bad"),
            json,
            "{}",
        )
        .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_eq!(get(&env, &a).await.code, 404);
    // Without one, they are.
    let b = format!("{}/b", configmaps(&env));
    let raw = env.raw("DELETE", &format!("{b}?dryRun=All"), "", "").await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_eq!(get(&env, &b).await.code, 200);
}

async fn write_options_are_checked(env: Env) {
    let json = "application/json";
    let body = r#"{"metadata":{"name":"w"}}"#;
    let list = configmaps(&env);
    let long = "m".repeat(129);
    let cases = [
        (
            format!("fieldManager={long}"),
            "fieldManager",
            "Too long: may not be more than 128 bytes",
        ),
        (
            "fieldValidation=Sometimes".into(),
            "fieldValidation",
            "Unsupported value: \"Sometimes\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
        ),
        (
            "dryRun=Sometimes".into(),
            "dryRun",
            "Unsupported value: [\"Sometimes\"]: supported values: \"All\"",
        ),
    ];
    for (param, field, message) in cases {
        let raw = env
            .raw("POST", &format!("{list}?{param}"), json, body)
            .await;
        assert_status(&raw, 422, "Invalid");
        assert_eq!(raw.body["details"]["kind"], "CreateOptions");
        assert_eq!(
            causes(&raw),
            [(field.to_string(), message.to_string())],
            "{}",
            raw.text
        );
    }
    let raw = env
        .raw(
            "POST",
            &format!("{list}?fieldManager={}", "m".repeat(128)),
            json,
            body,
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
}

async fn routing_errors(env: Env) {
    // An unknown version of a served group is a Status; an unknown group is the plain 404 page.
    let raw = get(&env, "/apis/apps/v9/namespaces/default/deployments").await;
    assert_status(&raw, 404, "NotFound");
    assert_eq!(
        raw.body["message"],
        "the server could not find the requested resource"
    );
    assert_eq!(raw.body["details"], json!({}));
    let raw = get(&env, "/apis/example.com/v1/widgets").await;
    assert_eq!(raw.code, 404);
    assert_eq!(raw.headers["content-type"], "text/plain; charset=utf-8");
    // Namespaces have no deletecollection.
    let raw = env.raw("DELETE", "/api/v1/namespaces", "", "").await;
    assert_status(&raw, 405, "MethodNotAllowed");
    assert_eq!(
        raw.body["message"],
        "the server does not allow this method on the requested resource"
    );
    assert_eq!(get(&env, "/api/v1/namespaces/default").await.code, 200);
    // Paths are percent-decoded before routing; a malformed escape is refused by the HTTP server
    // itself, in plain text.
    let raw = get(&env, "/api/v1/namespaces/%64efault").await;
    assert_eq!(raw.body["metadata"]["name"], "default", "{}", raw.text);
    let raw = get(&env, "/api/v1/namespaces/default/configmaps/a%2Fb").await;
    assert_status(&raw, 404, "NotFound");
    assert_eq!(
        raw.body["message"],
        "the server could not find the requested resource"
    );
    let raw = get(&env, "/api/v1/namespaces/%zz").await;
    assert_eq!((raw.code, raw.text.as_str()), (400, "400 Bad Request"));
    assert_eq!(raw.headers["content-type"], "text/plain; charset=utf-8");
    // Discovery documents served by GET alone refuse every other method; `/apis` and a group's
    // versions answer any.
    for method in ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"] {
        for path in ["/version", "/api", "/api/v1", "/apis/batch/v1"] {
            let raw = env.raw(method, path, "application/json", "{}").await;
            assert_status(&raw, 405, "MethodNotAllowed");
            assert_eq!(raw.body["details"], json!({}), "{method} {path}");
        }
        for path in ["/apis", "/apis/batch"] {
            let raw = env.raw(method, path, "application/json", "{}").await;
            assert_eq!(raw.code, 200, "{method} {path}: {}", raw.text);
        }
        // A group version nobody serves is not found whatever the method.
        let raw = env.raw(method, "/apis/example.com/v1", "", "").await;
        assert_eq!(raw.code, 404, "{method}: {}", raw.text);
    }
}

async fn pretty_answers_are_indented(env: Env) {
    let json = "application/json";
    assert_eq!(
        post(&env, json, r#"{"metadata":{"name":"a"}}"#).await.code,
        201
    );
    let a = format!("{}/a", configmaps(&env));
    let plain = get(&env, &a).await;
    assert!(
        plain.text.starts_with("{\"kind\":\"ConfigMap\""),
        "{}",
        plain.text
    );
    assert!(plain.text.ends_with("}\n"), "{:?}", plain.text);
    for param in ["pretty=true", "pretty=1"] {
        let pretty = get(&env, &format!("{a}?{param}")).await;
        assert!(
            pretty.text.starts_with("{\n  \"kind\": \"ConfigMap\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {\n    \"name\": \"a\","),
            "{}",
            pretty.text
        );
        assert!(pretty.text.ends_with("\n}"), "{:?}", pretty.text);
        assert_eq!(pretty.body, plain.body);
    }
    let compact = get(&env, &format!("{a}?pretty=yes")).await;
    assert_eq!(compact.text, plain.text);
    // Errors too.
    let missing = get(&env, &format!("{}/zz?pretty=true", configmaps(&env))).await;
    assert!(
        missing.text.starts_with("{\n  \"kind\": \"Status\","),
        "{}",
        missing.text
    );
}

async fn selectors_kube_apiserver_reads_its_own_way(env: Env) {
    let json = "application/json";
    let body = json!({"metadata": {"name": "a", "labels": {"tier": "web"}}}).to_string();
    assert_eq!(post(&env, json, &body).await.code, 201);
    let list = configmaps(&env);
    let names = |raw: &Raw| -> Vec<String> {
        assert_eq!(raw.code, 200, "{}", raw.text);
        raw.body["items"]
            .as_array()
            .expect("a list")
            .iter()
            .filter_map(|i| i["metadata"]["name"].as_str().map(String::from))
            .collect()
    };
    // `()` is read as the empty value.
    let raw = get(&env, &format!("{list}?labelSelector=tier%20in%20()")).await;
    assert!(names(&raw).is_empty(), "{}", raw.text);
    let raw = get(&env, &format!("{list}?labelSelector=tier%20notin%20()")).await;
    assert!(names(&raw).contains(&"a".to_string()), "{}", raw.text);
    // Kinds without field selectors of their own answer the scheme's words.
    let raw = get(
        &env,
        &format!(
            "/apis/apps/v1/namespaces/{}/deployments?fieldSelector=spec.replicas%3D1",
            env.ns
        ),
    )
    .await;
    bad_request(
        &raw,
        "\"spec.replicas\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
    );
}
