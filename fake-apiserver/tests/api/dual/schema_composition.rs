//! Structural-schema validation details found by the fidelity corpus (fidelity/corpus/crd.yaml,
//! kueue.yaml): the value validations `anyOf`, `oneOf`, `allOf` and `not` (controller-gen's
//! int-or-string `anyOf` included), and the cause kube-apiserver adds instead of running CEL
//! rules on an object that already failed its type, enum, required or size checks; and CRDs
//! whose schema is not structural (no type at the root or on a field, an array without items).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use super::{Env, Raw, dual};

dual!(
    value_validations_report_like_kube_openapi,
    cel_rules_are_not_run_on_an_object_of_the_wrong_shape,
    a_schema_that_is_not_structural_is_refused,
);

/// Register a namespaced kind `Probe` whose `spec` has this schema; the collection's path.
async fn install(env: &Env, plural: &str, spec: Value) -> (String, String) {
    let group = format!("{}.example.com", env.ns);
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": "Probe"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {
                "openAPIV3Schema": {"type": "object", "properties": {"spec": spec}},
            }}],
        },
    }))
    .expect("a CRD");
    env.create_crd(&crd).await;
    (
        format!("/apis/{group}/v1/namespaces/{}/{plural}", env.ns),
        format!("{group}/v1"),
    )
}

async fn create(env: &Env, path: &str, api_version: &str, spec: Value) -> Raw {
    let body = json!({"apiVersion": api_version, "kind": "Probe", "metadata": {"name": "p"}, "spec": spec});
    env.raw(
        "POST",
        &format!("{path}?dryRun=All"),
        "application/json",
        body.to_string(),
    )
    .await
}

/// `reason|field|message` of each cause, in the server's order.
fn causes(raw: &Raw) -> Vec<String> {
    raw.body["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}|{}|{}",
                c["reason"].as_str().unwrap_or(""),
                c["field"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            )
        })
        .collect()
}

async fn value_validations_report_like_kube_openapi(env: Env) {
    let two =
        json!({"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "string"}}});
    let mut any = two.clone();
    any["anyOf"] = json!([{"required": ["x"]}, {"required": ["y"]}]);
    let mut one = two.clone();
    one["oneOf"] = json!([{"required": ["x"]}, {"required": ["y"]}]);
    let (path, av) = install(
        &env,
        "probes",
        json!({"type": "object", "properties": {
            "a": any,
            "b": one,
            "c": {"type": "integer", "allOf": [{"minimum": 2}, {"maximum": 5}]},
            "d": {"type": "string", "not": {"pattern": "^x"}},
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "pct": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}],
                    "allOf": [{"pattern": "^[0-9]+%$"}]},
        }}),
    )
    .await;
    let composite = |p: &str, what: &str| {
        format!("FieldValueInvalid|<nil>|Invalid value: \"\": \"spec.{p}\" {what}")
    };
    let cases: Vec<(Value, Vec<String>)> = vec![
        (
            json!({"a": {}}),
            vec![
                composite("a", "must validate at least one schema (anyOf)"),
                "FieldValueRequired|spec.a.x|Required value".into(),
            ],
        ),
        (
            json!({"b": {}}),
            vec![
                composite("b", "must validate one and only one schema (oneOf). Found none valid"),
                "FieldValueRequired|spec.b.x|Required value".into(),
            ],
        ),
        (
            json!({"b": {"x": "1", "y": "2"}}),
            vec![composite("b", "must validate one and only one schema (oneOf). Found 2 valid alternatives")],
        ),
        (
            json!({"c": 9}),
            vec![
                "FieldValueInvalid|spec.c|Invalid value: 9: spec.c in body should be less than or equal to 5".into(),
                composite("c", "must validate all the schemas (allOf)"),
            ],
        ),
        (
            json!({"d": "xyz"}),
            vec![composite("d", "must not validate the schema (not)")],
        ),
        (
            json!({"port": true}),
            vec![
                "FieldValueTypeInvalid|spec.port|Invalid value: \"boolean\": spec.port in body must be of type integer,string: \"boolean\"".into(),
                composite("port", "must validate at least one schema (anyOf)"),
                "FieldValueTypeInvalid|spec.port|Invalid value: \"boolean\": spec.port in body must be of type integer: \"boolean\"".into(),
            ],
        ),
        (
            json!({"pct": "abc"}),
            vec![
                "FieldValueInvalid|spec.pct|Invalid value: \"abc\": spec.pct in body should match '^[0-9]+%$'".into(),
                composite("pct", "must validate all the schemas (allOf). None validated"),
            ],
        ),
    ];
    let mut differences = Vec::new();
    for (spec, want) in cases {
        let raw = create(&env, &path, &av, spec.clone()).await;
        let got = causes(&raw);
        if raw.code != 422 || got != want {
            differences.push(format!("{spec}: {} {got:#?}, want {want:#?}", raw.code));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
    let valid =
        json!({"a": {"x": "1"}, "b": {"y": "1"}, "c": 3, "d": "a", "port": "http", "pct": "5%"});
    let raw = create(&env, &path, &av, valid).await;
    assert_eq!(raw.code, 201, "{}", raw.text);
}

async fn cel_rules_are_not_run_on_an_object_of_the_wrong_shape(env: Env) {
    let (path, av) = install(
        &env,
        "shapes",
        json!({"type": "object", "required": ["size"],
            "x-kubernetes-validations": [{"rule": "self.size != 'big' || self.name.startsWith('b')", "message": "big needs b"}],
            "properties": {
                "size": {"type": "string", "enum": ["big", "small"]},
                "name": {"type": "string", "maxLength": 8, "pattern": "^[a-z]+$"},
            }}),
    )
    .await;
    let skipped = "FieldValueInvalid|<nil>|Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";
    let raw = create(&env, &path, &av, json!({"size": "huge", "name": "a"})).await;
    assert_eq!(
        causes(&raw),
        [
            "FieldValueNotSupported|spec.size|Unsupported value: \"huge\": supported values: \"big\", \"small\"",
            skipped
        ]
    );
    assert!(
        raw.body["message"]
            .as_str()
            .unwrap_or("")
            .ends_with(", <nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation]"),
        "{}",
        raw.text
    );
    let raw = create(&env, &path, &av, json!({"name": "a"})).await;
    assert_eq!(
        causes(&raw),
        ["FieldValueRequired|spec.size|Required value", skipped]
    );
    // A pattern failure does not block the rules: both are reported.
    let raw = create(&env, &path, &av, json!({"size": "big", "name": "A"})).await;
    assert_eq!(
        causes(&raw),
        [
            "FieldValueInvalid|spec.name|Invalid value: \"A\": spec.name in body should match '^[a-z]+$'",
            "FieldValueInvalid|spec|Invalid value: big needs b"
        ]
    );
}

async fn a_schema_that_is_not_structural_is_refused(env: Env) {
    let group = format!("{}.example.com", env.ns);
    let cases = [
        (
            json!({"properties": {"spec": {"type": "object"}}}),
            vec![
                "FieldValueRequired|spec.validation.openAPIV3Schema.type|Required value: must not be empty at the root",
            ],
        ),
        (
            json!({"type": "string"}),
            vec![
                "FieldValueInvalid|spec.validation.openAPIV3Schema.type|Invalid value: \"string\": must be object at the root",
            ],
        ),
        (
            json!({"type": "object", "properties": {
                "spec": {"properties": {"a": {"type": "string"}}},
                "other": {"description": "x"},
                "free": {"x-kubernetes-preserve-unknown-fields": true},
                "port": {"x-kubernetes-int-or-string": true},
            }}),
            vec![
                "FieldValueRequired|spec.validation.openAPIV3Schema.properties[other].type|Required value: must not be empty for specified object fields",
                "FieldValueRequired|spec.validation.openAPIV3Schema.properties[spec].type|Required value: must not be empty for specified object fields",
            ],
        ),
        (
            json!({"type": "object", "properties": {"spec": {"type": "array"}}}),
            vec![
                "FieldValueRequired|spec.validation.openAPIV3Schema.properties[spec].items|Required value: must be specified",
            ],
        ),
    ];
    let mut differences = Vec::new();
    for (schema, want) in cases {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("cats.{group}")},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": "cats", "kind": "Cat"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                              "schema": {"openAPIV3Schema": schema.clone()}}],
            },
        });
        let raw = env
            .raw(
                "POST",
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All",
                "application/json",
                crd.to_string(),
            )
            .await;
        let got = causes(&raw);
        if raw.code != 422 || got != want {
            differences.push(format!("{schema}: {} {got:#?}, want {want:#?}", raw.code));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
