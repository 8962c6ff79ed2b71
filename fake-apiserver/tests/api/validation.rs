//! Request validation and robustness: dry runs, body limits, names, malformed and mismatched
//! bodies, unknown paths, unsupported content types, and hostile input on every verb.

use std::time::Duration;

use fake_apiserver::FakeApiServer;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, PostParams};
use rstest::rstest;
use serde_json::{Value, json};

use crate::common::{api_err, raw, server};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const TARGET: &str = "/api/v1/namespaces/default/configmaps/target";

const SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

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

#[tokio::test(start_paused = true)]
async fn dry_run_create_answers_like_a_create_but_stores_nothing() {
    let s = server();
    let api = configmaps(&s);
    let rv_before = s.resource_version();
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let answer = api
        .create(&pp, &cm("x", "v"))
        .await
        .expect("dry-run create");
    assert_eq!(answer.metadata.name.as_deref(), Some("x"));
    assert_eq!(answer.metadata.namespace.as_deref(), Some("default"));
    assert!(
        answer.metadata.uid.is_some(),
        "defaulted like a real create"
    );
    assert!(answer.metadata.creation_timestamp.is_some());
    assert_eq!(answer.data, cm("x", "v").data);

    let err = api_err(api.get("x").await);
    assert_eq!(err.code, 404);
    assert_eq!(s.resource_version(), rv_before, "nothing was written");

    // The query form, as kubectl --dry-run=server sends it.
    let (code, body) = raw(
        &s,
        "POST",
        &format!("{CMS}?dryRun=All"),
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"}}"#,
    )
    .await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["metadata"]["name"], "y");
    assert_eq!(api_err(api.get("y").await).code, 404);
    assert_eq!(s.resource_version(), rv_before);
}

#[tokio::test(start_paused = true)]
async fn dry_run_create_still_validates_and_detects_conflicts() {
    let s = server();
    let api = configmaps(&s);
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let err = api_err(api.create(&pp, &cm("Bad_Name", "v")).await);
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, "Invalid");

    api.create(&PostParams::default(), &cm("x", "v"))
        .await
        .expect("create");
    let err = api_err(api.create(&pp, &cm("x", "other")).await);
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "AlreadyExists");
    assert_eq!(err.message, "configmaps \"x\" already exists");
}

#[tokio::test(start_paused = true)]
async fn dry_run_update_answers_the_new_object_but_keeps_the_original() {
    let s = server();
    let api = configmaps(&s);
    let original = api
        .create(&PostParams::default(), &cm("x", "old"))
        .await
        .expect("create");
    let mut changed = original.clone();
    changed.data = cm("x", "new").data;
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let answer = api
        .replace("x", &pp, &changed)
        .await
        .expect("dry-run update");
    assert_eq!(answer.data, cm("x", "new").data);

    let stored = api.get("x").await.expect("get");
    assert_eq!(stored.data, cm("x", "old").data);
    assert_eq!(
        stored.metadata.resource_version,
        original.metadata.resource_version
    );
}

#[tokio::test(start_paused = true)]
async fn dry_run_delete_answers_success_but_keeps_the_object() {
    let s = server();
    let api = configmaps(&s);
    let created = api
        .create(&PostParams::default(), &cm("x", "v"))
        .await
        .expect("create");
    let dp = DeleteParams {
        dry_run: true,
        ..Default::default()
    };
    let status = api
        .delete("x", &dp)
        .await
        .expect("dry-run delete")
        .right_or_else(|obj| panic!("expected a Success Status like a real delete, got {obj:?}"));
    assert!(status.is_success(), "{status:?}");

    let (code, body) = raw(&s, "DELETE", &format!("{CMS}/x?dryRun=All"), "", "").await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["kind"], "Status", "{body}");
    assert_eq!(body["status"], "Success", "{body}");

    let stored = api.get("x").await.expect("still there");
    assert_eq!(
        stored.metadata.resource_version,
        created.metadata.resource_version
    );
    assert!(stored.metadata.deletion_timestamp.is_none());
}

// --- body size ----------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_body_over_three_mebibytes_is_rejected_with_413() {
    let s = server();
    let before = snapshot(&s).await;
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"k":"{}"}}}}"#,
        "a".repeat(3 * 1024 * 1024)
    );
    let (code, body) = raw(&s, "POST", CMS, "application/json", big).await;
    assert_status(code, &body, 413, "RequestEntityTooLarge");
    assert_eq!(
        body["message"],
        "Request entity too large: limit is 3145728"
    );
    assert_eq!(snapshot(&s).await, before);
}

// --- names --------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn an_invalid_name_is_rejected_with_a_field_cause() {
    let s = server();
    let api = configmaps(&s);
    let err = api_err(
        api.create(&PostParams::default(), &cm("Bad_Name", "v"))
            .await,
    );
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, "Invalid");
    assert_eq!(
        err.message,
        format!(
            "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": {SUBDOMAIN_ERR}"
        )
    );
    let details = err.details.expect("details");
    assert_eq!(details.name, "Bad_Name");
    assert_eq!(details.kind, "ConfigMap");
    assert_eq!(details.causes.len(), 1, "{:?}", details.causes);
    assert_eq!(details.causes[0].field, "metadata.name");
    assert_eq!(details.causes[0].reason, "FieldValueInvalid");
    assert_eq!(
        details.causes[0].message,
        format!("Invalid value: \"Bad_Name\": {SUBDOMAIN_ERR}")
    );
}

#[tokio::test(start_paused = true)]
async fn a_name_longer_than_253_characters_is_invalid() {
    let s = server();
    let api = configmaps(&s);
    let name = "a".repeat(254);
    let err = api_err(api.create(&PostParams::default(), &cm(&name, "v")).await);
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        format!(
            "ConfigMap \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": must be no more than 253 characters"
        )
    );
}

#[rstest]
// A valid subdomain that is not a valid label: upstream singles out the dots.
#[case::dotted("a.b", "must not contain dots")]
#[case::not_a_label("Bad_Name", LABEL_ERR)]
#[tokio::test(start_paused = true)]
async fn a_namespace_name_must_be_a_dns_label(#[case] name: &str, #[case] problem: &str) {
    let s = server();
    let namespaces: Api<Namespace> = Api::all(s.client());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let err = api_err(namespaces.create(&PostParams::default(), &ns).await);
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, "Invalid");
    assert_eq!(
        err.message,
        format!(
            "Namespace \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": {problem}"
        )
    );
    let details = err.details.expect("details");
    assert_eq!(details.kind, "Namespace");
    assert_eq!(details.causes.len(), 1, "{:?}", details.causes);
    assert_eq!(details.causes[0].field, "metadata.name");
    assert_eq!(details.causes[0].reason, "FieldValueInvalid");
}

#[tokio::test(start_paused = true)]
async fn a_dotted_name_is_a_valid_config_map_name() {
    let s = server();
    let created = configmaps(&s)
        .create(&PostParams::default(), &cm("a.b", "v"))
        .await
        .expect("a dotted configmap name is a valid DNS subdomain");
    assert_eq!(created.metadata.name.as_deref(), Some("a.b"));
}

#[tokio::test(start_paused = true)]
async fn a_create_without_name_or_generate_name_is_required() {
    let s = server();
    let before = snapshot(&s).await;
    let (code, body) = raw(
        &s,
        "POST",
        CMS,
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{},"data":{"k":"v"}}"#,
    )
    .await;
    assert_status(code, &body, 422, "Invalid");
    assert_eq!(
        body["message"],
        "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    assert_eq!(body["details"]["kind"], "ConfigMap");
    assert_eq!(body["details"]["causes"][0]["field"], "metadata.name");
    assert_eq!(body["details"]["causes"][0]["reason"], "FieldValueRequired");
    assert_eq!(snapshot(&s).await, before);
}

// --- malformed and mismatched bodies --------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn malformed_json_is_a_bad_request() {
    let s = server();
    let before = snapshot(&s).await;
    let (code, body) = raw(
        &s,
        "POST",
        CMS,
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x""#,
    )
    .await;
    assert_status(code, &body, 400, "BadRequest");
    assert_eq!(snapshot(&s).await, before);
}

#[tokio::test(start_paused = true)]
async fn a_field_of_the_wrong_type_cannot_be_handled_as_a_config_map() {
    let s = server();
    let before = snapshot(&s).await;
    let (code, body) = raw(
        &s,
        "POST",
        CMS,
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"k":1}}"#,
    )
    .await;
    assert_status(code, &body, 400, "BadRequest");
    let message = body["message"].as_str().expect("message");
    assert!(
        message.starts_with("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: "),
        "{message}"
    );
    assert_eq!(snapshot(&s).await, before);
}

#[rstest]
#[case::other_kind(r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}"#)]
#[case::other_group(r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}"#)]
#[case::right_kind_wrong_version(
    r#"{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"x"}}"#
)]
#[tokio::test(start_paused = true)]
async fn a_body_whose_type_does_not_match_the_url_is_a_bad_request(#[case] body: &str) {
    let s = server();
    let before = snapshot(&s).await;
    let (code, answer) = raw(&s, "POST", CMS, "application/json", body.to_string()).await;
    assert_status(code, &answer, 400, "BadRequest");
    assert_eq!(snapshot(&s).await, before);
}

#[tokio::test(start_paused = true)]
async fn a_put_whose_body_name_differs_from_the_url_is_a_bad_request() {
    let s = server();
    let api = configmaps(&s);
    api.create(&PostParams::default(), &cm("a", "v"))
        .await
        .expect("create");
    let before = snapshot(&s).await;
    let (code, body) = raw(
        &s,
        "PUT",
        &format!("{CMS}/a"),
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"k":"w"}}"#,
    )
    .await;
    assert_status(code, &body, 400, "BadRequest");
    assert_eq!(
        body["message"],
        "the name of the object (b) does not match the name on the URL (a)"
    );
    assert_eq!(snapshot(&s).await, before);
}

// --- paths and content types --------------------------------------------------------------------

#[rstest]
#[case::unknown_group("/apis/nope/v1/things")]
#[case::unknown_resource("/api/v1/namespaces/default/nothings")]
#[case::unknown_version("/api/v7/namespaces")]
#[case::not_an_api_path("/garbage")]
#[tokio::test(start_paused = true)]
async fn unknown_paths_answer_a_not_found_status(#[case] path: &str) {
    let s = server();
    let (code, body) = raw(&s, "GET", path, "", "").await;
    assert_status(code, &body, 404, "NotFound");
    assert_eq!(
        body["message"],
        "the server could not find the requested resource"
    );
}

#[tokio::test(start_paused = true)]
async fn protobuf_bodies_are_an_unsupported_media_type() {
    let s = server();
    let before = snapshot(&s).await;
    let mut body = b"k8s\0".to_vec();
    body.extend_from_slice(b"\x0a\x0c\x0a\x02v1\x12\x09ConfigMap");
    let (code, answer) = raw(&s, "POST", CMS, "application/vnd.kubernetes.protobuf", body).await;
    assert_status(code, &answer, 415, "UnsupportedMediaType");
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
#[case::watch_bad_resource_version(
    "GET",
    "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1&resourceVersion=abc"
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

#[rstest]
#[case::limit_not_a_number("limit=abc")]
#[case::unclosed_label_selector("labelSelector=a%20in%20(b")]
#[tokio::test(start_paused = true)]
async fn an_unparsable_list_parameter_is_a_bad_request(#[case] query: &str) {
    let s = with_target().await;
    let (code, body) = raw(&s, "GET", &format!("{CMS}?{query}"), "", "").await;
    assert_status(code, &body, 400, "BadRequest");
}

#[tokio::test(start_paused = true)]
async fn an_unknown_propagation_policy_is_invalid_delete_options() {
    let s = with_target().await;
    let before = snapshot(&s).await;
    let (code, body) = raw(
        &s,
        "DELETE",
        TARGET,
        "application/json",
        r#"{"propagationPolicy":"Nope"}"#,
    )
    .await;
    assert_status(code, &body, 422, "Invalid");
    assert_eq!(
        body["message"],
        r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Nope": supported values: "Foreground", "Background", "Orphan", "nil""#
    );
    assert_eq!(body["details"]["group"], "meta.k8s.io");
    assert_eq!(body["details"]["kind"], "DeleteOptions");
    assert_eq!(body["details"]["causes"][0]["field"], "propagationPolicy");
    assert_eq!(
        body["details"]["causes"][0]["reason"],
        "FieldValueNotSupported"
    );
    assert_eq!(snapshot(&s).await, before, "nothing was deleted");
}

#[tokio::test(start_paused = true)]
async fn an_unknown_dry_run_value_is_invalid_create_options() {
    let s = server();
    let before = snapshot(&s).await;
    let (code, body) = raw(
        &s,
        "POST",
        &format!("{CMS}?dryRun=Bogus"),
        "application/json",
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#,
    )
    .await;
    assert_status(code, &body, 422, "Invalid");
    let message = body["message"].as_str().expect("message");
    assert!(
        message
            .starts_with(r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: "#),
        "{message}"
    );
    assert_eq!(snapshot(&s).await, before);
}

#[tokio::test(start_paused = true)]
async fn a_patch_that_breaks_the_typed_form_is_refused_and_changes_nothing() {
    let s = with_target().await;
    let before = snapshot(&s).await;
    let (code, body) = raw(
        &s,
        "PATCH",
        TARGET,
        "application/merge-patch+json",
        r#"{"data":{"k":5}}"#,
    )
    .await;
    assert_status(code, &body, 400, "BadRequest");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("cannot be handled as a ConfigMap")),
        "{body}"
    );
    assert_eq!(snapshot(&s).await, before);
}
