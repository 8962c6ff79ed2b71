//! The 422 causes of bad metadata on both targets, in kube-apiserver's order and words: label
//! values on the field `metadata.labels`, a bad generateName before the name made from it,
//! owner references' required fields and their one controller, and finalizer names checked twice
//! on built-in kinds (as qualified names, then as standard-or-domain names).

use serde_json::{Value, json};

use super::{Env, assert_status, dual};

dual!(
    label_values_and_generate_names_are_reported_like_upstream,
    owner_references_and_finalizers_are_reported_like_upstream,
);

/// The causes (field, message) of creating this ConfigMap metadata, which must be refused.
async fn causes(env: &Env, metadata: Value) -> Vec<(String, String)> {
    let path = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata});
    let raw = env
        .raw("POST", &path, "application/json", body.to_string())
        .await;
    assert_status(&raw, 422, "Invalid");
    raw.body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| {
            (
                c["field"].as_str().unwrap_or("").to_owned(),
                c["message"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

async fn label_values_and_generate_names_are_reported_like_upstream(env: Env) {
    let got = causes(&env, json!({"name": "a", "labels": {"ok": "-x"}})).await;
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].0, "metadata.labels");
    assert!(
        got[0]
            .1
            .starts_with("Invalid value: \"-x\": a valid label must be"),
        "{got:?}"
    );

    let got = causes(&env, json!({"generateName": "x_"})).await;
    let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        ["metadata.generateName", "metadata.name"],
        "{got:?}"
    );
    assert!(
        got[0]
            .1
            .starts_with("Invalid value: \"x_\": a lowercase RFC 1123 subdomain"),
        "{got:?}"
    );
}

async fn owner_references_and_finalizers_are_reported_like_upstream(env: Env) {
    let got = causes(
        &env,
        json!({"name": "o", "ownerReferences": [{"apiVersion": "", "kind": "", "name": "", "uid": ""}]}),
    )
    .await;
    let want: Vec<(String, String)> = ["apiVersion", "kind", "name", "uid"]
        .iter()
        .map(|f| {
            (
                format!("metadata.ownerReferences[0].{f}"),
                "Required value: must not be empty".to_owned(),
            )
        })
        .collect();
    assert_eq!(got, want);

    let got = causes(
        &env,
        json!({"name": "o", "ownerReferences": [
            {"apiVersion": "v1", "kind": "A", "name": "n", "uid": "u", "controller": true},
            {"apiVersion": "v1", "kind": "B", "name": "n", "uid": "u2", "controller": true}
        ]}),
    )
    .await;
    assert_eq!(
        got,
        [(
            "metadata.ownerReferences".to_owned(),
            r#"Invalid value: [{"apiVersion":"v1","kind":"A","name":"n","uid":"u","controller":true},{"apiVersion":"v1","kind":"B","name":"n","uid":"u2","controller":true}]: Only one reference can have Controller set to true. Found "true" in references for A/n and B/n"#.to_owned()
        )]
    );

    let got = causes(
        &env,
        json!({"name": "f", "finalizers": ["not a finalizer", "kubernetes", "a", "example.com/ok"]}),
    )
    .await;
    let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        [
            "metadata.finalizers",
            "metadata.finalizers[0]",
            "metadata.finalizers[2]"
        ],
        "{got:?}"
    );
    assert!(got[0].1.contains("name part must consist of"), "{got:?}");
    assert_eq!(
        got[2].1,
        r#"Invalid value: "a": name is neither a standard finalizer name nor is it fully qualified"#
    );

    let got = causes(
        &env,
        json!({"name": "f", "finalizers": ["orphan", "foregroundDeletion"]}),
    )
    .await;
    assert_eq!(
        got,
        [(
            "metadata.finalizers".to_owned(),
            r#"Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and foregroundDeletion cannot be both set"#.to_owned()
        )]
    );
}
