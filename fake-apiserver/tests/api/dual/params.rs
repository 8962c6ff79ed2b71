//! Request parameters read like kube-apiserver reads them: booleans the apimachinery way (the
//! Python client sends `True`), `resourceVersionMatch=Exact` on lists, and the Accept header's
//! `as=PartialObjectMetadata` / `as=Table` on the answers of every verb.

use fake_apiserver::FakeApiServer;
use futures::future::join_all;
use serde_json::{Value, json};

use super::{Env, Raw, assert_status, dual};

dual!(
    boolean_parameters_read_like_apimachinery,
    force_true_takes_over_an_applied_field,
    initial_events_and_bookmarks_read_true,
    orphan_dependents_from_the_query_conflicts_with_a_propagation_policy,
    exact_list_answers_the_collection_as_it_was,
    exact_list_pages_stay_at_the_asked_version,
    resource_version_match_is_validated,
    a_list_at_a_future_resource_version_times_out,
    metadata_view_applies_to_every_verb,
    table_view_applies_to_every_verb,
    a_view_that_does_not_fit_is_not_acceptable,
);

const METADATA: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const METADATA_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
const TABLE: &str = "application/json;as=Table;g=meta.k8s.io;v=v1";

fn configmaps(env: &Env) -> String {
    format!("/api/v1/namespaces/{}/configmaps", env.ns)
}

async fn create(env: &Env, body: Value) -> Raw {
    let raw = env
        .raw(
            "POST",
            &configmaps(env),
            "application/json",
            body.to_string(),
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    raw
}

async fn get(env: &Env, path: &str) -> Raw {
    env.raw("GET", path, "", "").await
}

fn rv(raw: &Raw) -> String {
    raw.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_else(|| panic!("a resourceVersion in {}", raw.text))
        .to_string()
}

/// Whether a GET on a collection answered a watch stream (rather than a list).
fn is_watch(raw: &Raw) -> bool {
    let first = raw.text.lines().next().unwrap_or("");
    serde_json::from_str::<Value>(first).is_ok_and(|e| e["type"].is_string())
}

async fn boolean_parameters_read_like_apimachinery(env: Env) {
    create(&env, json!({"metadata": {"name": "a"}})).await;
    let base = configmaps(&env);
    // Each watch ends after a second; they run side by side.
    let cases = [
        ("watch=true", true),
        ("watch=True", true),
        ("watch=TRUE", true),
        ("watch=1", true),
        ("watch=yes", true),
        ("watch=", true),
        ("watch", true),
        ("watch=0", false),
        ("watch=false", false),
        ("watch=False", false),
        ("watch=FALSE", false),
        // A parameter given twice counts with its first value.
        ("watch=false&watch=true", false),
        ("watch=true&watch=false", true),
    ];
    let answers = join_all(cases.iter().map(|(q, _)| {
        let env = env.clone();
        let path = format!("{base}?{q}&timeoutSeconds=1");
        async move { get(&env, &path).await }
    }))
    .await;
    for ((q, watches), raw) in cases.iter().zip(answers) {
        assert_eq!(raw.code, 200, "{q}: {}", raw.text);
        assert_eq!(is_watch(&raw), *watches, "{q}: {}", raw.text);
        if !watches {
            assert_eq!(raw.body["kind"], "ConfigMapList", "{q}: {}", raw.text);
        }
    }
}

async fn force_true_takes_over_an_applied_field(env: Env) {
    let path = format!("{}/applied", configmaps(&env));
    let apply = |manager: &'static str, value: &'static str, force: &'static str| {
        let env = env.clone();
        let path = format!("{path}?fieldManager={manager}{force}");
        async move {
            let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "applied"}, "data": {"owned": value}});
            env.raw(
                "PATCH",
                &path,
                "application/apply-patch+yaml",
                body.to_string(),
            )
            .await
        }
    };
    assert_eq!(apply("first", "one", "").await.code, 201);
    assert_status(&apply("second", "two", "").await, 409, "Conflict");
    assert_status(
        &apply("second", "two", "&force=False").await,
        409,
        "Conflict",
    );
    // The Python client's spelling.
    let forced = apply("second", "two", "&force=True").await;
    assert_eq!(forced.code, 200, "{}", forced.text);
    assert_eq!(forced.body["data"]["owned"], "two", "{}", forced.text);
}

async fn initial_events_and_bookmarks_read_true(env: Env) {
    create(&env, json!({"metadata": {"name": "a"}})).await;
    let raw = get(
        &env,
        &format!(
            "{}?watch=True&sendInitialEvents=True&allowWatchBookmarks=True&resourceVersionMatch=NotOlderThan&resourceVersion=&timeoutSeconds=1",
            configmaps(&env)
        ),
    )
    .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    let events: Vec<Value> = raw
        .text
        .lines()
        .map(|l| serde_json::from_str(l).expect("an event per line"))
        .collect();
    assert!(
        events
            .iter()
            .any(|e| e["type"] == "ADDED" && e["object"]["metadata"]["name"] == "a"),
        "{}",
        raw.text
    );
    assert!(
        events.iter().any(|e| e["type"] == "BOOKMARK"
            && e["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"),
        "{}",
        raw.text
    );
}

async fn orphan_dependents_from_the_query_conflicts_with_a_propagation_policy(env: Env) {
    create(&env, json!({"metadata": {"name": "a"}})).await;
    let raw = env
        .raw(
            "DELETE",
            &format!(
                "{}/a?orphanDependents=yes&propagationPolicy=Background",
                configmaps(&env)
            ),
            "",
            "",
        )
        .await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        raw.body["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Background\": orphanDependents and deletionPropagation cannot be both set"
    );
    assert_eq!(
        get(&env, &format!("{}/a", configmaps(&env))).await.code,
        200
    );
}

/// Names and `data.v` of a list's items.
fn items(raw: &Raw) -> Vec<(String, Value)> {
    raw.body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("items in {}", raw.text))
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap_or("").to_string(),
                i["data"]["v"].clone(),
            )
        })
        .collect()
}

async fn exact_list_answers_the_collection_as_it_was(env: Env) {
    let base = configmaps(&env);
    let labelled = |name: &str, v: &str| json!({"metadata": {"name": name, "labels": {"exact": "yes"}}, "data": {"v": v}});
    create(&env, labelled("a", "1")).await;
    create(&env, labelled("b", "1")).await;
    let then = rv(&get(&env, &format!("{base}?labelSelector=exact")).await);
    env.raw(
        "PATCH",
        &format!("{base}/a"),
        "application/merge-patch+json",
        r#"{"data":{"v":"2"}}"#,
    )
    .await;
    env.raw("DELETE", &format!("{base}/b"), "", "").await;
    create(&env, labelled("c", "1")).await;

    let past = get(
        &env,
        &format!("{base}?labelSelector=exact&resourceVersion={then}&resourceVersionMatch=Exact"),
    )
    .await;
    assert_eq!(past.code, 200, "{}", past.text);
    assert_eq!(rv(&past), then);
    assert_eq!(
        items(&past),
        vec![("a".to_string(), json!("1")), ("b".to_string(), json!("1"))]
    );
    // Without Exact the same resourceVersion means "not older than": the latest state.
    let latest = get(
        &env,
        &format!("{base}?labelSelector=exact&resourceVersion={then}"),
    )
    .await;
    assert_eq!(
        items(&latest),
        vec![("a".to_string(), json!("2")), ("c".to_string(), json!("1"))]
    );
    assert_ne!(rv(&latest), then);
}

async fn exact_list_pages_stay_at_the_asked_version(env: Env) {
    let base = configmaps(&env);
    for name in ["a", "b"] {
        create(
            &env,
            json!({"metadata": {"name": name, "labels": {"exact": "yes"}}, "data": {"v": "1"}}),
        )
        .await;
    }
    let then = rv(&get(&env, &format!("{base}?labelSelector=exact")).await);
    env.raw("DELETE", &format!("{base}/b"), "", "").await;
    let first = get(
        &env,
        &format!(
            "{base}?labelSelector=exact&resourceVersion={then}&resourceVersionMatch=Exact&limit=1"
        ),
    )
    .await;
    assert_eq!(rv(&first), then, "{}", first.text);
    assert_eq!(items(&first), vec![("a".to_string(), json!("1"))]);
    let token = first.body["metadata"]["continue"]
        .as_str()
        .unwrap_or_else(|| panic!("a continue token in {}", first.text));
    let rest = get(
        &env,
        &format!("{base}?labelSelector=exact&limit=1&continue={token}"),
    )
    .await;
    assert_eq!(rv(&rest), then, "{}", rest.text);
    assert_eq!(items(&rest), vec![("b".to_string(), json!("1"))]);
}

async fn resource_version_match_is_validated(env: Env) {
    let base = configmaps(&env);
    let then = rv(&get(&env, &base).await);
    let invalid = |raw: &Raw, message: &str| {
        assert_status(raw, 422, "Invalid");
        assert_eq!(
            raw.body["message"],
            format!("ListOptions.meta.k8s.io \"\" is invalid: {message}")
        );
        assert_eq!(raw.body["details"]["kind"], "ListOptions");
    };
    invalid(
        &get(&env, &format!("{base}?resourceVersionMatch=Exact")).await,
        "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
    );
    invalid(
        &get(
            &env,
            &format!("{base}?resourceVersion=0&resourceVersionMatch=Exact"),
        )
        .await,
        "resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
    );
    invalid(
        &get(
            &env,
            &format!("{base}?resourceVersion={then}&resourceVersionMatch=exact"),
        )
        .await,
        "resourceVersionMatch: Unsupported value: \"exact\": supported values: \"Exact\", \"NotOlderThan\", \"\"",
    );
    // A real token, so only the parameters' combination is wrong. Two ConfigMaps of the test's
    // own: kube-controller-manager publishes kube-root-ca.crt into a new namespace a moment later,
    // and a CI run listed before it had (one item, no token).
    create(&env, json!({"metadata": {"name": "first"}})).await;
    create(&env, json!({"metadata": {"name": "second"}})).await;
    let page = get(&env, &format!("{base}?limit=1")).await;
    let token = page.body["metadata"]["continue"]
        .as_str()
        .map(String::from)
        .unwrap_or_else(|| panic!("a continue token: {}", page.text));
    invalid(
        &get(
            &env,
            &format!("{base}?resourceVersion={then}&resourceVersionMatch=Exact&continue={token}"),
        )
        .await,
        "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided",
    );
    let raw = get(
        &env,
        &format!("{base}?resourceVersion={then}&continue={token}"),
    )
    .await;
    assert_status(&raw, 400, "BadRequest");
    assert_eq!(
        raw.body["message"],
        "specifying resource version is not allowed when using continue"
    );
    let raw = get(
        &env,
        &format!("{base}?resourceVersion=abc&resourceVersionMatch=Exact"),
    )
    .await;
    assert_status(&raw, 400, "BadRequest");
    assert_eq!(
        raw.body["message"],
        "invalid resource version: resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"
    );
}

async fn a_list_at_a_future_resource_version_times_out(env: Env) {
    let base = configmaps(&env);
    let now: u64 = rv(&get(&env, &base).await).parse().expect("a number");
    let future = now + 1_000_000;
    let raw = get(
        &env,
        &format!("{base}?resourceVersion={future}&resourceVersionMatch=Exact"),
    )
    .await;
    assert_status(&raw, 504, "Timeout");
    let message = raw.body["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(&format!(
            "Timeout: Too large resource version: {future}, current: "
        )),
        "{}",
        raw.text
    );
    assert_eq!(
        raw.body["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
}

fn assert_metadata_of(raw: &Raw, name: &str) {
    assert_eq!(raw.body["kind"], "PartialObjectMetadata", "{}", raw.text);
    assert_eq!(raw.body["apiVersion"], "meta.k8s.io/v1", "{}", raw.text);
    assert_eq!(raw.body["metadata"]["name"], name, "{}", raw.text);
    assert!(raw.body.get("data").is_none(), "{}", raw.text);
}

fn assert_table_of(raw: &Raw, name: &str) {
    assert_eq!(raw.body["kind"], "Table", "{}", raw.text);
    assert_eq!(raw.body["apiVersion"], "meta.k8s.io/v1", "{}", raw.text);
    assert_eq!(raw.body["rows"][0]["cells"][0], name, "{}", raw.text);
    assert_eq!(
        raw.body["rows"][0]["object"]["kind"], "PartialObjectMetadata",
        "{}",
        raw.text
    );
}

/// Every write of a ConfigMap with this Accept header, each answer checked by `check`.
async fn every_verb(env: &Env, accept: &str, check: fn(&Raw, &str)) {
    let base = configmaps(env);
    let send = |method: &'static str, path: String, content_type: &'static str, body: Value| {
        let env = env.clone();
        let accept = accept.to_string();
        async move {
            env.raw_with(
                method,
                &path,
                &[("content-type", content_type), ("accept", &accept)],
                if body.is_null() {
                    String::new()
                } else {
                    body.to_string()
                },
            )
            .await
        }
    };
    let cm = |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"v": v}});
    let raw = send("POST", base.clone(), "application/json", cm("1")).await;
    assert_eq!(raw.code, 201, "POST: {}", raw.text);
    check(&raw, "a");
    let raw = send("PUT", format!("{base}/a"), "application/json", cm("2")).await;
    assert_eq!(raw.code, 200, "PUT: {}", raw.text);
    check(&raw, "a");
    let raw = send(
        "PATCH",
        format!("{base}/a"),
        "application/merge-patch+json",
        json!({"data": {"v": "3"}}),
    )
    .await;
    assert_eq!(raw.code, 200, "PATCH: {}", raw.text);
    check(&raw, "a");
    let raw = send(
        "PATCH",
        format!("{base}/a?fieldManager=tester&force=true"),
        "application/apply-patch+yaml",
        cm("4"),
    )
    .await;
    assert_eq!(raw.code, 200, "apply: {}", raw.text);
    check(&raw, "a");
    // A dry-run create answers in the view too.
    let mut b = cm("1");
    b["metadata"]["name"] = json!("b");
    let raw = send("POST", format!("{base}?dryRun=All"), "application/json", b).await;
    assert_eq!(raw.code, 201, "dry-run POST: {}", raw.text);
    check(&raw, "b");
    // A delete that removes the object answers a Status whatever the view.
    let raw = send("DELETE", format!("{base}/a"), "", Value::Null).await;
    assert_eq!(raw.code, 200, "DELETE: {}", raw.text);
    assert_eq!(raw.body["kind"], "Status", "DELETE: {}", raw.text);
    assert_eq!(raw.body["status"], "Success", "DELETE: {}", raw.text);
    // A delete that finalizers hold answers the object, in the view.
    let mut held = cm("1");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    send("POST", base.clone(), "application/json", held).await;
    let raw = send("DELETE", format!("{base}/a"), "", Value::Null).await;
    assert_eq!(raw.code, 200, "DELETE held: {}", raw.text);
    check(&raw, "a");
    let raw = env
        .raw(
            "PATCH",
            &format!("{base}/a"),
            "application/merge-patch+json",
            r#"{"metadata":{"finalizers":null}}"#,
        )
        .await;
    assert_eq!(raw.code, 200, "release: {}", raw.text);
}

async fn metadata_view_applies_to_every_verb(env: Env) {
    every_verb(&env, METADATA, assert_metadata_of).await;
}

async fn table_view_applies_to_every_verb(env: Env) {
    every_verb(&env, TABLE, assert_table_of).await;
    // A deletecollection answers a Table of what it deleted.
    let base = configmaps(&env);
    create(
        &env,
        json!({"metadata": {"name": "gone", "labels": {"dc": "yes"}}}),
    )
    .await;
    let raw = env
        .raw_with(
            "DELETE",
            &format!("{base}?labelSelector=dc"),
            &[("accept", TABLE)],
            "",
        )
        .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_table_of(&raw, "gone");
}

async fn a_view_that_does_not_fit_is_not_acceptable(env: Env) {
    let base = configmaps(&env);
    create(
        &env,
        json!({"metadata": {"name": "a", "labels": {"dc": "yes"}}}),
    )
    .await;
    let with = |method: &'static str, path: String, accept: &'static str| {
        let env = env.clone();
        async move { env.raw_with(method, &path, &[("accept", accept)], "").await }
    };
    let raw = with("GET", base.clone(), METADATA).await;
    assert_status(&raw, 406, "NotAcceptable");
    assert_eq!(
        raw.body["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
    );
    let raw = with("GET", format!("{base}/a"), METADATA_LIST).await;
    assert_status(&raw, 406, "NotAcceptable");
    assert_eq!(
        raw.body["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"
    );
    // Plain JSON offered next does not help: the first media type is chosen before the answer
    // is known to be one object or a list.
    let raw = with(
        "GET",
        format!("{base}/a"),
        "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
    )
    .await;
    assert_status(&raw, 406, "NotAcceptable");
    let raw = with(
        "GET",
        base.clone(),
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
    )
    .await;
    assert_status(&raw, 406, "NotAcceptable");
    let raw = with("GET", base.clone(), METADATA_LIST).await;
    assert_eq!(
        raw.body["kind"], "PartialObjectMetadataList",
        "{}",
        raw.text
    );
    // A deletecollection deletes, then cannot answer one object's metadata.
    let raw = with("DELETE", format!("{base}?labelSelector=dc"), METADATA).await;
    assert_status(&raw, 406, "NotAcceptable");
    assert_eq!(get(&env, &format!("{base}/a")).await.code, 404);
}

/// The fake alone can drop history on demand: an Exact list older than what it keeps is 410.
#[tokio::test]
async fn exact_list_older_than_the_history_is_gone() {
    let server = FakeApiServer::builder()
        .history_limit(2)
        .build()
        .expect("server starts");
    let client = server.client();
    let send = |method: &'static str, path: String, body: String| {
        let client = client.clone();
        async move {
            let req = http::Request::builder()
                .method(method)
                .uri(path)
                .header("content-type", "application/json")
                .body(kube::client::Body::from(body.into_bytes()))
                .expect("request builds");
            let resp = client.send(req).await.expect("the server answers");
            let code = resp.status().as_u16();
            let bytes = http_body_util::BodyExt::collect(resp.into_body())
                .await
                .expect("the body arrives")
                .to_bytes();
            (
                code,
                serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null),
            )
        }
    };
    let base = "/api/v1/namespaces/default/configmaps".to_string();
    let (_, created) = send(
        "POST",
        base.clone(),
        json!({"metadata": {"name": "a"}}).to_string(),
    )
    .await;
    let then = created["metadata"]["resourceVersion"]
        .as_str()
        .expect("rv")
        .to_string();
    let exact = format!("{base}?resourceVersion={then}&resourceVersionMatch=Exact");
    let (code, _) = send("GET", exact.clone(), String::new()).await;
    assert_eq!(code, 200);
    for name in ["b", "c", "d"] {
        send(
            "POST",
            base.clone(),
            json!({"metadata": {"name": name}}).to_string(),
        )
        .await;
    }
    let (code, status) = send("GET", exact, String::new()).await;
    assert_eq!(code, 410, "{status}");
    assert_eq!(status["reason"], "Expired");
    assert_eq!(
        status["message"],
        "The resourceVersion for the provided list is too old."
    );
}
