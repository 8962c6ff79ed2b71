//! Paged lists' continue tokens as kube-apiserver writes and reads them, and what it answers for
//! an Accept it cannot serve.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::{Env, assert_status, dual};

dual!(
    continue_tokens_carry_the_key_after_the_page_relative_to_the_list,
    malformed_continue_tokens_are_refused_in_kube_apiservers_words,
    continue_at_resource_version_zero_reads_the_rest_of_the_first_pages_snapshot,
    deprecated_watch_paths_watch_the_list_or_the_named_object,
);

async fn get(env: &Env, path: &str) -> super::Raw {
    env.raw_with("GET", path, &[("accept", "application/json")], "")
        .await
}

async fn secrets(env: &Env, names: &[&str]) -> String {
    let base = format!("/api/v1/namespaces/{}/secrets", env.ns);
    for name in names {
        let raw = env
            .raw_with(
                "POST",
                &base,
                &[("content-type", "application/json")],
                json!({"metadata": {"name": name}}).to_string(),
            )
            .await;
        assert_eq!(raw.code, 201, "{}", raw.text);
    }
    base
}

/// A token's decoded bytes (tokens are unpadded URL-safe base64).
fn decoded(list: &Value) -> String {
    let token = list["metadata"]["continue"]
        .as_str()
        .expect("a continue token");
    let raw = URL_SAFE_NO_PAD
        .decode(token)
        .expect("unpadded url-safe base64");
    String::from_utf8(raw).expect("utf-8")
}

fn names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap_or(""))
        .collect()
}

async fn continue_tokens_carry_the_key_after_the_page_relative_to_the_list(env: Env) {
    let base = secrets(&env, &["a", "b", "c", "d", "e"]).await;
    let page = get(&env, &format!("{base}?limit=2")).await.body;
    let rv = page["metadata"]["resourceVersion"]
        .as_str()
        .expect("a resourceVersion");
    assert_eq!(
        decoded(&page),
        format!(r#"{{"v":"meta.k8s.io/v1","rv":{rv},"start":"/b\u0000"}}"#)
    );
    assert_eq!(page["metadata"]["remainingItemCount"], 3);
    let token = page["metadata"]["continue"]
        .as_str()
        .expect("a continue token");
    let next = get(&env, &format!("{base}?limit=2&continue={token}"))
        .await
        .body;
    assert_eq!(names(&next), ["c", "d"]);
    assert_eq!(
        decoded(&next),
        format!(r#"{{"v":"meta.k8s.io/v1","rv":{rv},"start":"/d\u0000"}}"#)
    );

    // Across namespaces the key carries the namespace, unless a field selector pins it.
    let all = get(&env, "/api/v1/secrets?limit=1").await.body;
    let first = &all["items"][0]["metadata"];
    let (ns, name) = (first["namespace"].as_str(), first["name"].as_str());
    let start = format!(
        "/{}/{}\\u0000",
        ns.expect("a namespace"),
        name.expect("a name")
    );
    assert!(decoded(&all).contains(&start), "{}", decoded(&all));
    let pinned = format!(
        "/api/v1/secrets?limit=1&fieldSelector=metadata.namespace%3D{}",
        env.ns
    );
    let pinned = get(&env, &pinned).await.body;
    assert!(decoded(&pinned).ends_with(r#""start":"/a\u0000"}"#));

    // A token whose start is not a key the list wrote still reads from there on, inclusively.
    let from_c =
        URL_SAFE_NO_PAD.encode(format!(r#"{{"v":"meta.k8s.io/v1","rv":{rv},"start":"c"}}"#));
    let rest = get(&env, &format!("{base}?limit=2&continue={from_c}"))
        .await
        .body;
    assert_eq!(names(&rest), ["c", "d"]);
}

async fn malformed_continue_tokens_are_refused_in_kube_apiservers_words(env: Env) {
    let base = secrets(&env, &["a", "b", "c"]).await;
    let page = get(&env, &format!("{base}?limit=2")).await.body;
    let good = page["metadata"]["continue"]
        .as_str()
        .expect("a continue token");
    let token = |json: &str| URL_SAFE_NO_PAD.encode(json);
    let cases = [
        (
            "not-a-token".to_string(),
            r"invalid character '\u009e' looking for beginning of value",
        ),
        (
            format!("{good}="),
            "illegal base64 data at input byte {len}",
        ),
        ("a".to_string(), "illegal base64 data at input byte 0"),
        (
            token(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"/b\u0000"}"#),
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ),
        (
            token(r#"{"v":"meta.k8s.io/v2","rv":5,"start":"/b\u0000"}"#),
            "server does not recognize this encoded version meta.k8s.io/v2",
        ),
        (
            token(r#"{"v":"meta.k8s.io/v1","rv":5,"start":""}"#),
            "encoded start key empty (version meta.k8s.io/v1)",
        ),
        (
            token(r#"{"v":"meta.k8s.io/v1","rv":5,"start":"/../x"}"#),
            "/../x",
        ),
        (
            token(r#"{"v":"meta.k8s.io/v1","rv":"5","start":"/b"}"#),
            "json: cannot unmarshal string into Go struct field continueToken.rv of type int64",
        ),
        (
            token("[]"),
            "json: cannot unmarshal array into Go value of type storage.continueToken",
        ),
    ];
    for (token, why) in cases {
        let why = why.replace("{len}", &good.len().to_string());
        let raw = get(&env, &format!("{base}?limit=2&continue={token}")).await;
        assert_status(&raw, 400, "BadRequest");
        assert_eq!(
            raw.body["message"],
            format!("invalid continue token: continue key is not valid: {why}"),
            "{token}"
        );
    }
}

async fn continue_at_resource_version_zero_reads_the_rest_of_the_first_pages_snapshot(env: Env) {
    let base = secrets(&env, &["a", "b", "c", "d", "e"]).await;
    let page = get(&env, &format!("{base}?limit=2")).await.body;
    let token = page["metadata"]["continue"]
        .as_str()
        .expect("a continue token");
    let deleted = env.raw_with("DELETE", &format!("{base}/c"), &[], "").await;
    assert_eq!(deleted.code, 200, "{}", deleted.text);

    // The watch cache serves it whole: no limit, no further token, c as it was.
    let rest = get(
        &env,
        &format!("{base}?limit=2&continue={token}&resourceVersion=0"),
    )
    .await;
    assert_eq!(rest.code, 200, "{}", rest.text);
    assert_eq!(names(&rest.body), ["c", "d", "e"]);
    assert_eq!(
        rest.body["metadata"],
        json!({"resourceVersion": page["metadata"]["resourceVersion"]})
    );
    // resourceVersion=0 alone ignores the limit too.
    let zero = get(&env, &format!("{base}?limit=2&resourceVersion=0"))
        .await
        .body;
    assert_eq!(names(&zero), ["a", "b", "d", "e"]);
    assert!(zero["metadata"].get("continue").is_none(), "{zero}");

    let pinned = get(
        &env,
        &format!("{base}?limit=2&continue={token}&resourceVersion=5"),
    )
    .await;
    assert_status(&pinned, 400, "BadRequest");
    assert_eq!(
        pinned.body["message"],
        "specifying resource version is not allowed when using continue"
    );
}

/// The (type, name) of each event of a finished watch.
fn events(raw: &super::Raw) -> Vec<(String, String)> {
    assert_eq!(raw.code, 200, "{}", raw.text);
    raw.text
        .lines()
        .map(|line| {
            let event: Value = serde_json::from_str(line).expect("one JSON event a line");
            let name = event["object"]["metadata"]["name"].as_str().unwrap_or("");
            (
                event["type"].as_str().unwrap_or("").to_string(),
                name.to_string(),
            )
        })
        .collect()
}

async fn deprecated_watch_paths_watch_the_list_or_the_named_object(env: Env) {
    secrets(&env, &["a", "b"]).await;
    let added = |name: &str| ("ADDED".to_string(), name.to_string());
    // Without a resourceVersion a watch starts with the objects there are; it ends at the timeout.
    let base = format!("/api/v1/watch/namespaces/{}/secrets", env.ns);
    let all = get(&env, &format!("{base}?timeoutSeconds=1")).await;
    assert_eq!(events(&all), [added("a"), added("b")]);
    // The path is a watch whatever the query says.
    let forced = get(&env, &format!("{base}?timeoutSeconds=1&watch=false")).await;
    assert_eq!(events(&forced), [added("a"), added("b")]);
    let one = get(&env, &format!("{base}/b?timeoutSeconds=1")).await;
    assert_eq!(events(&one), [added("b")]);
    let namespace = format!("/api/v1/watch/namespaces/{}?timeoutSeconds=1", env.ns);
    assert_eq!(events(&get(&env, &namespace).await), [added(&env.ns)]);

    let other = get(
        &env,
        &format!("{base}/b?timeoutSeconds=1&fieldSelector=metadata.name%3Da"),
    )
    .await;
    assert_status(&other, 400, "BadRequest");
    assert_eq!(
        other.body["message"],
        "fieldSelector metadata.name doesn't match requested name"
    );
}
