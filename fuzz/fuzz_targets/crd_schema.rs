//! CRD structural schemas: a CustomResourceDefinition with any `openAPIV3Schema`, then objects
//! against it (validation, pruning, defaulting), through the server and as pure functions.
//! No panic, every failure a `Status`, and defaulting and pruning reach a fixed point in one pass.
//!
//! Input: YAML documents: the `openAPIV3Schema`, then the objects (their `spec`, `status` and
//! other fields; apiVersion, kind and name are filled in).
#![no_main]

use fake_apiserver::semantics::schema::Schema;
use fake_apiserver::semantics::yaml_depth;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use tollgate_fuzz::{MAX_REQUESTS, Request, plain_server, runtime, send_checked};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/fuzz.example.com/v1/namespaces/default/widgets";

fuzz_target!(|input: &[u8]| {
    // Deep flow nesting makes libyaml quadratic; the server refuses it before parsing too.
    if yaml_depth::too_deep(input, yaml_depth::MAX_DEPTH).is_some() {
        return;
    }
    let Ok(text) = std::str::from_utf8(input) else {
        return;
    };
    let mut docs = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text).take(MAX_REQUESTS) {
        match serde::Deserialize::deserialize(doc) {
            Ok(v) => docs.push(v),
            Err(_) => return,
        }
    }
    let Some((schema, objects)) = docs.split_first() else {
        return;
    };
    let objects: Vec<Value> = objects
        .iter()
        .enumerate()
        .map(|(i, o)| widget(o, i))
        .collect();
    pure_functions(schema, &objects);
    // A transition rule (one reading `oldSelf`) runs on updates only, so an update may fail
    // where the create passed (a field it reads is absent), as on kube-apiserver.
    let transition_rules = schema.to_string().contains("oldSelf");
    runtime().block_on(async {
        let server = plain_server();
        let crd = Request::new("POST", CRDS, "application/json", crd(schema).to_string());
        let created = send_checked(&server, &crd).await.expect("a valid request");
        if created.code >= 300 {
            return;
        }
        for object in &objects {
            let post = Request::new("POST", WIDGETS, "application/json", object.to_string());
            let answer = send_checked(&server, &post).await.expect("a valid request");
            if answer.code >= 300 {
                continue;
            }
            // What the server stored it takes back unchanged.
            let stored = answer.json();
            let name = stored["metadata"]["name"].as_str().unwrap_or("");
            let put = Request::new(
                "PUT",
                &format!("{WIDGETS}/{name}"),
                "application/json",
                stored.to_string(),
            );
            let updated = send_checked(&server, &put).await.expect("a valid request");
            assert!(
                updated.code == 200 || transition_rules,
                "updating an object with itself: {}",
                updated.json()
            );
        }
    });
});

/// The checks that need no server: parsing never panics; defaulting and pruning are idempotent.
fn pure_functions(schema: &Value, objects: &[Value]) {
    let Ok(schema) = Schema::parse(schema) else {
        return;
    };
    for object in objects {
        let mut obj = object.clone();
        schema.prune(&mut obj);
        schema.apply_defaults(&mut obj);
        assert!(
            !schema.needs_defaults(&obj),
            "defaulted, yet still needs defaults: {obj}"
        );
        let mut again = obj.clone();
        schema.apply_defaults(&mut again);
        assert_eq!(again, obj, "defaulting twice");
        let mut pruned = obj.clone();
        schema.prune(&mut pruned);
        let mut twice = pruned.clone();
        schema.prune(&mut twice);
        assert_eq!(twice, pruned, "pruning twice");
        schema.validate(&obj, None);
        schema.validate(&obj, Some(object));
    }
}

/// An object of the fuzzed kind with the given fields.
fn widget(fields: &Value, i: usize) -> Value {
    let mut obj = match fields {
        Value::Object(_) => fields.clone(),
        other => json!({"spec": other}),
    };
    obj["apiVersion"] = json!("fuzz.example.com/v1");
    obj["kind"] = json!("Widget");
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    obj["metadata"]["name"] = json!(format!("w{i}"));
    obj
}

fn crd(schema: &Value) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.fuzz.example.com"},
        "spec": {
            "group": "fuzz.example.com",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": schema},
                "subresources": {"status": {}}
            }]
        }
    })
}
