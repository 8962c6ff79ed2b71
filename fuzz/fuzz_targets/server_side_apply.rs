//! Server-side apply of any YAML body, through the server: created by one manager, applied again
//! unchanged (which must change nothing, not even the resourceVersion, unless it names one), then by a second manager
//! without and with `force`. No panic, and every failure a `Status`.
//!
//! Input: the applied configuration. Its `apiVersion` and `kind` choose the resource (a
//! ConfigMap when they name none of the kinds below).
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tollgate_fuzz::{Request, runtime, send_checked, server};

/// Kinds an apply may go to: (apiVersion, kind, collection path).
const KINDS: &[(&str, &str, &str)] = &[
    ("v1", "ConfigMap", "/api/v1/namespaces/default/configmaps"),
    ("v1", "Pod", "/api/v1/namespaces/default/pods"),
    ("v1", "Namespace", "/api/v1/namespaces"),
    (
        "apps/v1",
        "Deployment",
        "/apis/apps/v1/namespaces/default/deployments",
    ),
    ("batch/v1", "Job", "/apis/batch/v1/namespaces/default/jobs"),
    (
        "fuzz.example.com/v1",
        "Widget",
        "/apis/fuzz.example.com/v1/namespaces/default/widgets",
    ),
    (
        "fuzz.example.com/v1beta1",
        "Widget",
        "/apis/fuzz.example.com/v1beta1/namespaces/default/widgets",
    ),
];

const APPLY: &str = "application/apply-patch+yaml";

fuzz_target!(|input: &[u8]| {
    let parsed: Value = serde_yaml::from_slice(input).unwrap_or_default();
    let collection = KINDS
        .iter()
        .find(|(v, k, _)| parsed["apiVersion"] == *v && parsed["kind"] == *k)
        .map_or(KINDS[0].2, |(_, _, path)| path);
    let name = parsed["metadata"]["name"]
        .as_str()
        .filter(|n| {
            !n.is_empty()
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        })
        .unwrap_or("a");
    let target = |query: &str| format!("{collection}/{name}?{query}");
    runtime().block_on(async {
        let server = server();
        let alice = Request::new("PATCH", &target("fieldManager=alice"), APPLY, input);
        let first = send_checked(&server, &alice)
            .await
            .expect("a valid request");
        // A configuration that names a resourceVersion is checked against the live one.
        let unversioned = parsed["metadata"]["resourceVersion"].is_null();
        if first.code < 300 && unversioned {
            let again = send_checked(&server, &alice)
                .await
                .expect("a valid request");
            assert_eq!(again.code, 200, "the same apply again: {}", again.json());
            let rv = |v: &Value| v["metadata"]["resourceVersion"].clone();
            assert_eq!(
                rv(&again.json()),
                rv(&first.json()),
                "an unchanged apply wrote"
            );
        }
        let bob = Request::new("PATCH", &target("fieldManager=bob"), APPLY, input);
        send_checked(&server, &bob).await;
        let forced = Request::new(
            "PATCH",
            &target("fieldManager=bob&force=true"),
            APPLY,
            input,
        );
        send_checked(&server, &forced).await;
    });
});
