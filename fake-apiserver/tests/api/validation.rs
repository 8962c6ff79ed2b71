//! Request validation and robustness: dry runs, body limits, names, malformed and mismatched
//! bodies, unknown paths, unsupported content types, and hostile input on every verb.

use std::time::Duration;

use fake_apiserver::FakeApiServer;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, PostParams};
use rstest::rstest;
use serde_json::{Value, json};

use crate::common::{raw, server};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const TARGET: &str = "/api/v1/namespaces/default/configmaps/target";

fn cm(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some([("k".to_string(), value.to_string())].into()),
        ..Default::default()
    }
}

fn configmaps(s: &FakeApiServer) -> Api<ConfigMap> {
    Api::namespaced(s.client(), "default")
}

/// Assert a raw answer is a failure Status with this code and reason.
fn assert_status(code: u16, body: &Value, want_code: u16, want_reason: &str) {
    assert_eq!(code, want_code, "{body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["apiVersion"], "v1", "{body}");
    assert_eq!(body["status"], "Failure", "{body}");
    assert_eq!(body["code"], json!(want_code), "{body}");
    assert_eq!(body["reason"], want_reason, "{body}");
}

/// Every configmap in the default namespace with its resourceVersion, to prove nothing changed.
async fn snapshot(s: &FakeApiServer) -> Vec<(String, String)> {
    let (code, body) = raw(s, "GET", CMS, "", "").await;
    assert_eq!(code, 200, "{body}");
    body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            (
                i["metadata"]["name"].as_str().unwrap_or("").to_string(),
                i["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

// --- dry run ------------------------------------------------------------------------------------

// --- body size ----------------------------------------------------------------------------------

// --- names --------------------------------------------------------------------------------------

// --- malformed and mismatched bodies --------------------------------------------------------------

// --- paths and content types --------------------------------------------------------------------

/// A protobuf body whose envelope is cut short (its TypeMeta says 12 bytes and holds fewer than
/// its kind needs): the Go decoder's "unexpected EOF", and nothing written.
#[tokio::test(start_paused = true)]
async fn a_truncated_protobuf_body_is_a_bad_request_and_writes_nothing() {
    let s = server();
    let before = snapshot(&s).await;
    let mut body = b"k8s\0".to_vec();
    body.extend_from_slice(b"\x0a\x0c\x0a\x02v1\x12\x09ConfigMap");
    let (code, answer) = raw(&s, "POST", CMS, "application/vnd.kubernetes.protobuf", body).await;
    assert_status(code, &answer, 400, "BadRequest");
    assert_eq!(
        answer["message"],
        "the object provided is unrecognized (must be of type ConfigMap): unexpected EOF (6b3873000a0c0a0276311209436f6e6669674d6170)"
    );
    assert_eq!(snapshot(&s).await, before);
}

// --- robustness -----------------------------------------------------------------------------------

/// One way to call the server.
#[derive(Debug, Clone, Copy)]
enum Call {
    Create,
    Update,
    MergePatch,
    JsonPatch,
    Delete,
    DeleteCollection,
    List,
    Get,
}

impl Call {
    fn request(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Call::Create => ("POST", CMS, "application/json"),
            Call::Update => ("PUT", TARGET, "application/json"),
            Call::MergePatch => ("PATCH", TARGET, "application/merge-patch+json"),
            Call::JsonPatch => ("PATCH", TARGET, "application/json-patch+json"),
            Call::Delete => ("DELETE", TARGET, "application/json"),
            Call::DeleteCollection => ("DELETE", CMS, "application/json"),
            Call::List => ("GET", CMS, ""),
            Call::Get => ("GET", TARGET, ""),
        }
    }
}

fn nested(open: &str, close: &str, inner: &str, depth: usize) -> Vec<u8> {
    format!("{}{inner}{}", open.repeat(depth), close.repeat(depth)).into_bytes()
}

/// Hostile bodies, with the content type they come with (None: the call's own).
fn hostile(which: &str) -> (Vec<u8>, Option<&'static str>) {
    match which {
        "empty" => (Vec::new(), None),
        "null" => (b"null".to_vec(), None),
        "array" => (b"[]".to_vec(), None),
        "string" => (br#""just a string""#.to_vec(), None),
        "number" => (b"42".to_vec(), None),
        "deep-array" => (nested("[", "]", "", 10_000), None),
        "deep-object" => (nested(r#"{"a":"#, "}", "1", 10_000), None),
        "deep-metadata" => {
            let mut b = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"target","labels":"#.to_vec();
            b.extend(nested(r#"{"a":"#, "}", "1", 10_000));
            b.extend_from_slice(b"}}");
            (b, None)
        }
        "deep-yaml" => (nested("[", "]", "", 10_000), Some("application/yaml")),
        "invalid-utf8" => (
            b"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"target\"},\"data\":{\"k\":\"\xff\xfe\xfd\"}}".to_vec(),
            None,
        ),
        "invalid-utf8-yaml" => (
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: target\ndata:\n  k: \xff\xfe\n".to_vec(),
            Some("application/yaml"),
        ),
        "huge-integer" => (
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"target","generation":123456789012345678901234567890}}"#.to_vec(),
            None,
        ),
        "huge-exponent" => (
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"target"},"data":{"k":1e999999}}"#.to_vec(),
            None,
        ),
        "metadata-not-an-object" => (
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":[1,2,3]}"#.to_vec(),
            None,
        ),
        "name-not-a-string" => (
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":{"x":1}}}"#.to_vec(),
            None,
        ),
        "renamed" => (
            br#"{"metadata":{"name":"other","namespace":"kube-system"}}"#.to_vec(),
            None,
        ),
        "json-patch-drop-metadata" => (
            br#"[{"op":"remove","path":"/metadata"}]"#.to_vec(),
            None,
        ),
        "json-patch-bad-op" => (
            br#"[{"op":"explode","path":"/data"}]"#.to_vec(),
            None,
        ),
        "oversized" => {
            let mut b = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"target"},"data":{"k":""#.to_vec();
            b.extend(std::iter::repeat_n(b'a', 3 * 1024 * 1024 + 1));
            b.extend_from_slice(br#""}}"#);
            (b, None)
        }
        other => panic!("no hostile body {other}"),
    }
}

/// Send one request and check the server kept its composure: an answer in bounded time, a 2xx or
/// a 4xx Status (never a 5xx or a non-Status error), and no trace of a failed write.
async fn survives(s: &FakeApiServer, method: &str, path: &str, content_type: &str, body: Vec<u8>) {
    let before = snapshot(s).await;
    let rv_before = s.resource_version();
    let (code, answer) = tokio::time::timeout(
        Duration::from_secs(60),
        raw(s, method, path, content_type, body),
    )
    .await
    .unwrap_or_else(|_| panic!("{method} {path} hung"));
    assert!(
        (200..300).contains(&code) || (400..500).contains(&code),
        "{method} {path}: {code} {answer}"
    );
    if code >= 400 {
        assert_eq!(answer["kind"], "Status", "{method} {path}: {code} {answer}");
        assert_eq!(answer["status"], "Failure", "{answer}");
        assert_eq!(answer["code"], json!(code), "{answer}");
        assert!(
            answer["reason"].as_str().is_some_and(|r| !r.is_empty()),
            "{answer}"
        );
        assert_eq!(
            snapshot(s).await,
            before,
            "{method} {path} failed but changed the stored objects"
        );
        assert_eq!(s.resource_version(), rv_before, "{method} {path}");
    }
    // Whatever happened, the server still serves.
    let (code, _) = raw(s, "GET", "/version", "", "").await;
    assert_eq!(code, 200);
}

async fn with_target() -> FakeApiServer {
    let s = server();
    configmaps(&s)
        .create(&PostParams::default(), &cm("target", "v"))
        .await
        .expect("create target");
    configmaps(&s)
        .create(&PostParams::default(), &cm("bystander", "v"))
        .await
        .expect("create bystander");
    s
}

#[rstest]
#[tokio::test(start_paused = true)]
async fn hostile_bodies_get_a_status_or_a_success_on_every_verb(
    #[values(
        Call::Create,
        Call::Update,
        Call::MergePatch,
        Call::JsonPatch,
        Call::Delete,
        Call::DeleteCollection,
        Call::List,
        Call::Get
    )]
    call: Call,
    #[values(
        "empty",
        "null",
        "array",
        "string",
        "number",
        "deep-array",
        "deep-object",
        "deep-metadata",
        "deep-yaml",
        "invalid-utf8",
        "invalid-utf8-yaml",
        "huge-integer",
        "huge-exponent",
        "metadata-not-an-object",
        "name-not-a-string",
        "renamed",
        "json-patch-drop-metadata",
        "json-patch-bad-op",
        "oversized"
    )]
    which: &str,
) {
    let s = with_target().await;
    let (method, path, call_type) = call.request();
    let (body, content_type) = hostile(which);
    survives(&s, method, path, content_type.unwrap_or(call_type), body).await;
}

#[rstest]
#[case::limit_not_a_number("GET", "/api/v1/namespaces/default/configmaps?limit=abc")]
#[case::limit_negative("GET", "/api/v1/namespaces/default/configmaps?limit=-1")]
#[case::limit_huge(
    "GET",
    "/api/v1/namespaces/default/configmaps?limit=99999999999999999999999"
)]
#[case::timeout_negative_list("GET", "/api/v1/namespaces/default/configmaps?timeoutSeconds=-1")]
#[case::timeout_negative_watch(
    "GET",
    "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=-1"
)]
#[case::timeout_not_a_number_watch(
    "GET",
    "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=abc"
)]
// (A watch at resourceVersion=abc is kube-apiserver's unclassified 500: dual::request_errors.)
#[case::watch_bad_resource_version(
    "GET",
    "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1&resourceVersionMatch=Exact"
)]
#[case::label_selector_percent("GET", "/api/v1/namespaces/default/configmaps?labelSelector=%%%")]
#[case::label_selector_unclosed(
    "GET",
    "/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20(b"
)]
#[case::label_selector_bad_key("GET", "/api/v1/namespaces/default/configmaps?labelSelector=-a-=b")]
#[case::field_selector_unknown(
    "GET",
    "/api/v1/namespaces/default/configmaps?fieldSelector=spec.bogus%3Dx"
)]
#[case::field_selector_garbage("GET", "/api/v1/namespaces/default/configmaps?fieldSelector=%%%")]
#[case::continue_garbage(
    "GET",
    "/api/v1/namespaces/default/configmaps?limit=1&continue=garbage"
)]
#[case::continue_forged(
    "GET",
    "/api/v1/namespaces/default/configmaps?limit=1&continue=eyJydiI6LTF9"
)]
#[case::resource_version_garbage(
    "GET",
    "/api/v1/namespaces/default/configmaps?resourceVersion=abc"
)]
#[case::get_invalid_utf8_name("GET", "/api/v1/namespaces/default/configmaps/%FF%FE")]
#[case::empty_pairs("GET", "/api/v1/namespaces/default/configmaps?&&=&=x&limit")]
#[case::propagation_unknown(
    "DELETE",
    "/api/v1/namespaces/default/configmaps/target?propagationPolicy=Nope"
)]
#[case::propagation_unknown_collection(
    "DELETE",
    "/api/v1/namespaces/default/configmaps?propagationPolicy=Nope"
)]
#[case::delete_dry_run_unknown(
    "DELETE",
    "/api/v1/namespaces/default/configmaps/target?dryRun=Bogus"
)]
#[case::delete_grace_not_a_number(
    "DELETE",
    "/api/v1/namespaces/default/configmaps/target?gracePeriodSeconds=abc"
)]
#[case::delete_collection_bad_selector(
    "DELETE",
    "/api/v1/namespaces/default/configmaps?labelSelector=%%%"
)]
#[case::create_dry_run_unknown("POST", "/api/v1/namespaces/default/configmaps?dryRun=Bogus")]
#[case::create_field_validation_unknown(
    "POST",
    "/api/v1/namespaces/default/configmaps?fieldValidation=Nope"
)]
#[case::update_dry_run_unknown("PUT", "/api/v1/namespaces/default/configmaps/target?dryRun=Bogus")]
#[tokio::test(start_paused = true)]
async fn hostile_query_strings_get_a_status_or_a_success(#[case] method: &str, #[case] path: &str) {
    let s = with_target().await;
    let body: &[u8] = match method {
        "POST" => br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"new"}}"#,
        "PUT" => br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"target"},"data":{"k":"changed"}}"#,
        _ => b"",
    };
    survives(&s, method, path, "application/json", body.to_vec()).await;
}
