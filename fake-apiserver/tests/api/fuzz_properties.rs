//! Properties of what `cargo xtask fuzz` fuzzes (fuzz/), checked on every test run with
//! proptest: the request router and query parsing, selectors, the three patch types, server-side
//! apply, CRD schemas and the YAML depth pre-read. The fuzzers run long; these run in seconds.

use bytes::Bytes;
use fake_apiserver::FakeApiServer;
use fake_apiserver::semantics::patch::{PatchKind, apply_patch};
use fake_apiserver::semantics::schema::Schema;
use fake_apiserver::semantics::selectors::{FieldSelector, LabelSelector};
use fake_apiserver::semantics::yaml_depth;
use http_body_util::{BodyExt, Full};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tower::ServiceExt;

use crate::answer_check::problem;
use crate::common::server;

/// A paused current-thread runtime, as `#[tokio::test(start_paused = true)]` makes.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("runtime builds")
}

/// Send one request; (code, content type, body). Watches are never generated.
async fn send(
    server: &FakeApiServer,
    method: &str,
    target: &str,
    content_type: &str,
    body: &str,
) -> (u16, String, Bytes) {
    let mut req = http::Request::builder().method(method).uri(target);
    if !content_type.is_empty() {
        req = req.header("content-type", content_type);
    }
    let req = req
        .body(Full::new(Bytes::from(body.to_owned())))
        .expect("request builds");
    let resp = server
        .service()
        .oneshot(req)
        .await
        .expect("service answers");
    let code = resp.status().as_u16();
    let content_type = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (code, content_type, body)
}

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

fn collection() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/pods",
        "/api/v1/namespaces",
        "/api/v1/nodes",
        "/apis/apps/v1/namespaces/default/deployments",
        "/apis/batch/v1/namespaces/default/jobs",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "/apis/events.k8s.io/v1/namespaces/default/events",
        "/api/v1/namespaces/nowhere/secrets",
        "/apis/nothing.example.com/v1/things",
        "/api/v2/pods",
        "/openapi/v3/apis/apps/v1",
        "/apis",
        "/version",
        "",
    ])
}

fn suffix() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("/a".to_string()),
        Just("/a/status".to_string()),
        Just("/a/scale".to_string()),
        Just("/a/finalize".to_string()),
        "/[a-z%/.:-]{0,12}",
    ]
}

fn query() -> impl Strategy<Value = String> {
    let key = prop::sample::select(vec![
        "labelSelector",
        "fieldSelector",
        "limit",
        "continue",
        "resourceVersion",
        "resourceVersionMatch",
        "sendInitialEvents",
        "timeoutSeconds",
        "dryRun",
        "fieldManager",
        "fieldValidation",
        "force",
        "propagationPolicy",
        "orphanDependents",
        "pretty",
        "includeObject",
    ]);
    let value = prop_oneof![
        Just(String::new()),
        Just("0".to_string()),
        Just("1".to_string()),
        Just("All".to_string()),
        Just("Strict".to_string()),
        Just("18446744073709551616".to_string()),
        "[ -~]{0,10}",
    ];
    prop::collection::vec((key, value), 0..4).prop_map(|pairs| {
        url::form_urlencoded::Serializer::new(String::new())
            .extend_pairs(pairs)
            .finish()
    })
}

fn content_type() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "",
        "application/json",
        "application/yaml",
        "application/merge-patch+json",
        "application/json-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
        "application/vnd.kubernetes.protobuf",
        "text/plain",
    ])
}

fn body() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        Just("null".to_string()),
        Just(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}"#
                .to_string()
        ),
        Just(r#"{"metadata":{"name":"a","labels":{"x":"y"}},"spec":{"replicas":2}}"#.to_string()),
        Just(
            r#"[{"op":"add","path":"/data/k","value":"v"},{"op":"test","path":"/x","value":1}]"#
                .to_string()
        ),
        Just("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n".to_string()),
        Just(r#"{"kind":"DeleteOptions","propagationPolicy":"Orphan"}"#.to_string()),
        "[ -~]{0,40}",
    ]
}

fn method() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any request gets an answer; a failure is a Status whose code is the HTTP code (or one of
    /// the answers kube-apiserver gives otherwise).
    #[test]
    fn any_request_gets_a_status_for_its_failure(
        create_first in any::<bool>(),
        method in method(),
        collection in collection(),
        suffix in suffix(),
        query in query(),
        content_type in content_type(),
        body in body(),
    ) {
        let target = format!("{collection}{suffix}?{query}");
        prop_assume!(target.parse::<http::Uri>().is_ok());
        // A list is no watch here: watches stream until the client hangs up.
        prop_assume!(!(method == "GET" && target.contains("watch")));
        runtime().block_on(async {
            let server = server();
            if create_first {
                let cm = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"v"}}"#;
                send(&server, "POST", "/api/v1/namespaces/default/configmaps", "application/json", cm).await;
            }
            let (code, ct, bytes) = send(&server, method, &target, content_type, &body).await;
            let path = target.split('?').next().unwrap_or("");
            if let Some(why) = problem(path, code, &ct, &bytes) {
                panic!("{method} {target} ({content_type}) {body:?}: {why}");
            }
        });
    }

    /// An apply that changes nothing writes nothing: the same resourceVersion, 200.
    #[test]
    fn applying_the_same_configuration_twice_writes_once(
        data in prop::collection::btree_map("[a-z]{1,4}", "[a-z0-9]{0,4}", 0..4),
        labels in prop::collection::btree_map("[a-z]{1,4}", "[a-z0-9]{0,4}", 0..3),
    ) {
        let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "labels": labels}, "data": data});
        let target = "/api/v1/namespaces/default/configmaps/a?fieldManager=alice";
        runtime().block_on(async {
            let server = server();
            let apply = "application/apply-patch+yaml";
            let (first, _, one) = send(&server, "PATCH", target, apply, &applied.to_string()).await;
            let (second, _, two) = send(&server, "PATCH", target, apply, &applied.to_string()).await;
            assert_eq!((first, second), (201, 200));
            let rv = |b: &Bytes| serde_json::from_slice::<Value>(b).expect("JSON")["metadata"]["resourceVersion"].clone();
            assert_eq!(rv(&one), rv(&two));
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Selectors
// ---------------------------------------------------------------------------------------------

fn label_key() -> impl Strategy<Value = String> {
    "([a-z]{1,3}\\.)?[a-z]{1,3}(/[a-z0-9]([a-z0-9_.-]{0,4}[a-z0-9])?)?".prop_map(|k| k.to_string())
}

fn label_value() -> impl Strategy<Value = String> {
    "([a-z0-9]([a-z0-9_.-]{0,4}[a-z0-9])?)?"
}

/// The key a written requirement is on.
fn key_of(requirement: &str) -> &str {
    let r = requirement.strip_prefix('!').unwrap_or(requirement);
    r.split(['=', '!', ' ']).next().unwrap_or(r)
}

/// One requirement, as written.
fn requirement() -> impl Strategy<Value = String> {
    (
        label_key(),
        prop::collection::vec(label_value(), 0..3),
        0..6u8,
    )
        .prop_map(|(k, mut values, op)| {
            // A set needs values that are not all empty.
            values.push("v".into());
            (k, values, op)
        })
        .prop_map(|(k, values, op)| match op {
            0 => format!("{k}={}", values[0]),
            1 => format!("{k}!={}", values[values.len() - 1]),
            2 => format!("{k} in ({})", values.join(",")),
            3 => format!("{k} notin ({})", values.join(",")),
            4 => k,
            _ => format!("!{k}"),
        })
}

proptest! {
    /// Parsing never panics, whatever the text.
    #[test]
    fn selectors_parse_any_text_without_panicking(text in "\\PC{0,40}") {
        let _ = LabelSelector::parse(&text);
        let _ = FieldSelector::parse(&text);
    }

    /// Requirements are ANDed: the order of requirements on different keys does not change the
    /// selector. (Those on one key keep their order, as in apimachinery, whose sort by key is
    /// stable for the few requirements a selector has.)
    #[test]
    fn label_requirements_in_any_order_are_one_selector(
        reqs in prop::collection::vec(requirement(), 1..5),
    ) {
        let mut keys = std::collections::BTreeSet::new();
        let reqs: Vec<String> = reqs.into_iter().filter(|r| keys.insert(key_of(r).to_string())).collect();
        let forward = LabelSelector::parse(&reqs.join(",")).expect("valid requirements parse");
        let mut reversed = reqs.clone();
        reversed.reverse();
        prop_assert_eq!(forward, LabelSelector::parse(&reversed.join(",")).expect("parses"));
    }

    /// `k=v` selects exactly the objects whose label k is v; `k!=v` the others.
    #[test]
    fn an_equality_selects_the_label_it_names(
        key in label_key(),
        value in label_value(),
        other in label_value(),
    ) {
        let obj = json!({"metadata": {"labels": {key.clone(): other.clone()}}});
        let equal = LabelSelector::parse(&format!("{key}={value}")).expect("parses");
        let unequal = LabelSelector::parse(&format!("{key}!={value}")).expect("parses");
        prop_assert_eq!(equal.matches(&obj), value == other);
        prop_assert_eq!(unequal.matches(&obj), value != other);
    }

    /// Any value, escaped as a client escapes it, reads back as itself.
    #[test]
    fn an_escaped_field_value_reads_back(value in "[a-z=,!\\\\ ]{0,12}") {
        let escaped = value.replace('\\', "\\\\").replace(',', "\\,").replace('=', "\\=");
        let selector = FieldSelector::parse(&format!("metadata.name={escaped}")).expect("parses");
        prop_assert_eq!(selector.exact("metadata.name"), Some(value.as_str()));
        let obj = json!({"metadata": {"name": value}});
        prop_assert!(selector.matches(&obj));
    }
}

// ---------------------------------------------------------------------------------------------
// Patches
// ---------------------------------------------------------------------------------------------

/// JSON documents without nulls (a null in a merge patch means "remove").
fn json_without_nulls() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-z]{0,4}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-c]{1,2}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn object_without_nulls() -> impl Strategy<Value = Value> {
    prop::collection::btree_map("[a-c]{1,2}", json_without_nulls(), 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

/// Objects without lists or nulls: where strategic merge patch has nothing of its own to do.
fn object_without_lists() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        any::<bool>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        "[a-z]{0,4}".prop_map(Value::from),
    ];
    let value = leaf.prop_recursive(3, 24, 4, |inner| {
        prop::collection::btree_map("[a-c]{1,2}", inner, 0..4)
            .prop_map(|m| Value::Object(m.into_iter().collect::<Map<_, _>>()))
    });
    prop::collection::btree_map("[a-c]{1,2}", value, 0..4)
        .prop_map(|m| Value::Object(m.into_iter().collect()))
}

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("JSON serialises")
}

proptest! {
    /// A document merged with itself is itself; a merge patch applied twice is applied once.
    #[test]
    fn merge_patch_is_idempotent(doc in object_without_nulls(), patch in object_without_nulls()) {
        let merge = |target: &Value, patch: &Value| {
            apply_patch(PatchKind::Merge, "", "ConfigMap", target, &bytes(patch)).expect("an object patch applies")
        };
        prop_assert_eq!(&merge(&doc, &doc), &doc);
        let once = merge(&doc, &patch);
        prop_assert_eq!(merge(&once, &patch), once);
    }

    /// Adding a new key then removing it leaves the document as it was; a `test` of what was
    /// added holds.
    #[test]
    fn json_patch_add_then_remove_is_nothing(doc in object_without_nulls(), value in json_without_nulls()) {
        let key = "added";
        prop_assume!(doc.get(key).is_none());
        let ops = json!([
            {"op": "add", "path": "/added", "value": value},
            {"op": "test", "path": "/added", "value": value},
            {"op": "remove", "path": "/added"},
        ]);
        let patched = apply_patch(PatchKind::Json, "", "ConfigMap", &doc, &bytes(&ops)).expect("applies");
        prop_assert_eq!(patched, doc);
    }

    /// Any bytes as a patch of any type: a result or a 4xx (or upstream's unclassified 500 for
    /// strategic merge patch), never a panic.
    #[test]
    fn any_patch_body_is_applied_or_refused(doc in object_without_nulls(), body in "\\PC{0,40}") {
        for kind in [PatchKind::Json, PatchKind::Merge, PatchKind::StrategicMerge] {
            if let Err(e) = apply_patch(kind, "apps", "Deployment", &doc, body.as_bytes()) {
                prop_assert!((400..500).contains(&e.code) || (kind == PatchKind::StrategicMerge && e.code == 500), "{kind:?}: {} {}", e.code, e.message);
            }
        }
    }

    /// Without lists, nulls or directives, a strategic merge patch is a merge patch; and an empty
    /// one changes nothing.
    #[test]
    fn strategic_merge_without_lists_is_a_merge_patch(
        doc in object_without_lists(),
        patch in object_without_lists(),
    ) {
        let strategic = apply_patch(PatchKind::StrategicMerge, "", "ConfigMap", &doc, &bytes(&patch)).expect("applies");
        let merge = apply_patch(PatchKind::Merge, "", "ConfigMap", &doc, &bytes(&patch)).expect("applies");
        prop_assert_eq!(strategic, merge);
        let empty = apply_patch(PatchKind::StrategicMerge, "", "ConfigMap", &doc, b"{}").expect("applies");
        prop_assert_eq!(empty, doc);
    }
}

// ---------------------------------------------------------------------------------------------
// CRD structural schemas
// ---------------------------------------------------------------------------------------------

/// Structural schemas of objects, strings, integers and arrays, some with defaults.
fn schema_node() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "string", "default": "d"})),
        Just(json!({"type": "integer", "default": 3, "minimum": 0})),
        Just(json!({"type": "boolean", "nullable": true})),
        Just(json!({"type": "string", "enum": ["a", "b"]})),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::btree_map("[a-c]", inner.clone(), 1..3)
                .prop_map(|props| json!({"type": "object", "properties": props})),
            prop::collection::btree_map("[a-c]", inner.clone(), 1..3)
                .prop_map(|props| json!({"type": "object", "properties": props, "default": {}})),
            inner.prop_map(|items| json!({"type": "array", "items": items})),
        ]
    })
}

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-5i64..5).prop_map(Value::from),
        "[a-c]{0,2}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::btree_map("[a-c]", inner, 0..3)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Defaulting and pruning reach their fixed point in one pass, and validation of whatever
    /// results does not panic.
    #[test]
    fn defaulting_and_pruning_are_idempotent(spec in schema_node(), obj in any_json()) {
        let root = json!({"type": "object", "properties": {"spec": spec}});
        let schema = Schema::parse(&root).expect("a structural schema parses");
        let mut obj = json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"}, "spec": obj});
        schema.prune(&mut obj);
        schema.apply_defaults(&mut obj);
        prop_assert!(!schema.needs_defaults(&obj), "still needs defaults: {}", obj);
        let mut again = obj.clone();
        schema.apply_defaults(&mut again);
        schema.prune(&mut again);
        prop_assert_eq!(&again, &obj);
        let _ = schema.validate(&obj, None);
    }
}

// ---------------------------------------------------------------------------------------------
// YAML depth
// ---------------------------------------------------------------------------------------------

proptest! {
    /// Flow collections nested `depth` deep are too deep exactly beyond the limit; the same
    /// brackets inside quotes or a comment are text.
    #[test]
    fn flow_nesting_is_counted_outside_text(depth in 0usize..200, square in any::<bool>()) {
        let (open, close) = if square { ("[", "]") } else { ("{a: ", "}") };
        let nested = format!("k: {}1{}\n", open.repeat(depth), close.repeat(depth));
        let too_deep = yaml_depth::too_deep(nested.as_bytes(), yaml_depth::MAX_DEPTH);
        prop_assert_eq!(too_deep.is_some(), depth > yaml_depth::MAX_DEPTH);
        let quoted = format!("k: \"{}\"\n# {}\n", open.repeat(depth), open.repeat(depth));
        prop_assert_eq!(yaml_depth::too_deep(quoted.as_bytes(), 1), None);
    }

    /// Any bytes are read or refused with a message, never a panic.
    #[test]
    fn any_yaml_is_read_or_refused(text in "[\\[\\]{}:,'\"#|> \na-c-]{0,60}") {
        if let Err(why) = yaml_depth::read(text.as_bytes(), |e| e.to_string()) {
            prop_assert!(!why.is_empty());
        }
    }
}
