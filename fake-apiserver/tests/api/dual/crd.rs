//! CustomResourceDefinitions on both targets: registering serves a kind (in discovery too) and
//! deleting it removes its objects; invalid definitions are refused; the structural schema
//! validates every keyword, prunes unknown fields and applies defaults (on write and on read);
//! `x-kubernetes-validations` CEL rules, transition rules with `oldSelf` included; the status and
//! scale subresources; printer columns in Tables; and field validation of custom resources.
//!
//! Every CRD lives in a group of its own (`<namespace>.example.com`), so tests sharing the
//! control plane never meet, and is deleted when its test ends.

use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams,
    PostParams, WatchEvent, WatchParams,
};
use kube::discovery::Discovery;
use serde_json::{Value, json};

use super::{EVENTUALLY, Env, Raw, api_err, assert_status, dual, eventually};

dual!(
    a_crd_is_established_and_its_kind_is_served_and_discovered,
    deleting_a_crd_removes_its_objects_ends_its_watches_and_stops_serving_it,
    an_invalid_crd_is_refused_with_its_causes,
    a_crd_scope_cannot_change,
    every_schema_keyword_is_validated_with_the_real_causes,
    schema_validation_ratchets_on_unchanged_values,
    unknown_fields_are_pruned_at_every_level,
    schema_defaults_apply_on_write,
    an_update_of_a_custom_resource_needs_a_resource_version,
    schema_defaults_also_apply_on_read,
    cel_rules_report_their_messages_reasons_and_field_paths,
    cel_transition_rules_compare_with_old_self,
    the_status_subresource_splits_spec_and_status_writes,
    the_scale_subresource_follows_its_paths,
    printer_columns_make_the_table_of_a_custom_resource,
    field_validation_strict_refuses_and_warn_names_unknown_fields_of_custom_resources,
    strategic_merge_patch_on_a_custom_resource_is_unsupported,
    provisioning_request_spec_is_immutable_through_its_cel_rule,
    provisioning_request_config_gets_the_default_retry_strategy,
);

/// A custom kind registered for one test.
struct Kind {
    group: String,
    kind: String,
    plural: String,
    /// The collection path in the test's namespace.
    path: String,
    api: Api<DynamicObject>,
}

impl Kind {
    fn object(&self, name: &str, fields: Value) -> Value {
        let mut v = json!({
            "apiVersion": format!("{}/v1", self.group),
            "kind": self.kind,
            "metadata": {"name": name},
        });
        if let (Some(m), Some(f)) = (v.as_object_mut(), fields.as_object()) {
            for (k, x) in f {
                match (k.as_str(), x.as_object(), m.get_mut("metadata")) {
                    ("metadata", Some(meta), Some(Value::Object(into))) => {
                        into.extend(meta.clone());
                    }
                    _ => {
                        m.insert(k.clone(), x.clone());
                    }
                }
            }
        }
        v
    }

    fn dynamic(&self, name: &str, fields: Value) -> DynamicObject {
        serde_json::from_value(self.object(name, fields)).expect("a custom object")
    }

    async fn create(&self, env: &Env, name: &str, fields: Value) -> Raw {
        env.raw(
            "POST",
            &self.path,
            "application/json",
            self.object(name, fields).to_string(),
        )
        .await
    }

    async fn get(&self, name: &str) -> DynamicObject {
        self.api.get(name).await.expect("get custom object")
    }
}

/// The CRD of `kind` (plural `plural`) in the test's own group, with one version `v1` given
/// by `version` (schema, subresources, columns), namespaced.
fn definition(env: &Env, kind: &str, plural: &str, version: Value) -> Value {
    let group = format!("{}.example.com", env.ns);
    let mut v1 = json!({"name": "v1", "served": true, "storage": true});
    if let (Some(m), Some(extra)) = (v1.as_object_mut(), version.as_object()) {
        m.extend(extra.clone());
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [v1],
        },
    })
}

/// Register a CRD (deleted at the end) and wait until it serves.
async fn install(env: &Env, crd: Value) -> Kind {
    let typed: CustomResourceDefinition = serde_json::from_value(crd.clone()).expect("a CRD");
    env.create_crd(&typed).await;
    let group = typed.spec.group.clone();
    let kind = typed.spec.names.kind.clone();
    let plural = typed.spec.names.plural.clone();
    let version = typed.spec.versions[0].name.clone();
    let gvk = GroupVersionKind::gvk(&group, &version, &kind);
    let ar = ApiResource::from_gvk_with_plural(&gvk, &plural);
    let (path, api) = if typed.spec.scope == "Namespaced" {
        (
            format!("/apis/{group}/{version}/namespaces/{}/{plural}", env.ns),
            Api::namespaced_with(env.client.clone(), &env.ns, &ar),
        )
    } else {
        (
            format!("/apis/{group}/{version}/{plural}"),
            Api::all_with(env.client.clone(), &ar),
        )
    };
    Kind {
        path,
        api,
        group,
        kind,
        plural,
    }
}

/// A CRD whose `spec` has this schema (and a free `status`), with the status subresource.
async fn with_spec_schema(env: &Env, kind: &str, plural: &str, spec: Value) -> Kind {
    let crd = definition(
        env,
        kind,
        plural,
        json!({
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": spec,
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            }}},
        }),
    );
    install(env, crd).await
}

/// The causes of a failure as `reason|field|message`, in the server's order.
fn causes(raw: &Raw) -> Vec<String> {
    raw.body["details"]["causes"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .map(|c| {
                    format!(
                        "{}|{}|{}",
                        c["reason"].as_str().unwrap_or(""),
                        c["field"].as_str().unwrap_or(""),
                        c["message"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

// --- registration -------------------------------------------------------------------------------

async fn a_crd_is_established_and_its_kind_is_served_and_discovered(env: Env) {
    let mut crd = definition(
        &env,
        "Widget",
        "widgets",
        json!({
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        }),
    );
    crd["spec"]["names"]["shortNames"] = json!(["wd"]);
    let widgets = install(&env, crd).await;
    let crds = env.all::<CustomResourceDefinition>();
    let got = crds
        .get(&format!("widgets.{}", widgets.group))
        .await
        .expect("get crd");
    let conditions = got.status.and_then(|s| s.conditions).unwrap_or_default();
    let established = conditions
        .iter()
        .find(|c| c.type_ == "Established")
        .expect("an Established condition");
    assert_eq!(
        (established.status.as_str(), established.reason.as_deref()),
        ("True", Some("InitialNamesAccepted"))
    );
    let names = conditions
        .iter()
        .find(|c| c.type_ == "NamesAccepted")
        .expect("a NamesAccepted condition");
    assert_eq!(
        (names.status.as_str(), names.reason.as_deref()),
        ("True", Some("NoConflicts"))
    );
    assert_eq!(got.metadata.generation, Some(1));

    // Discovery follows the CRD on the real server a moment later.
    let group = widgets.group.clone();
    let found = tokio::time::timeout(EVENTUALLY, async {
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tick.tick().await;
            let Ok(discovery) = Discovery::new(env.client.clone())
                .filter(&[&group])
                .run()
                .await
            else {
                continue;
            };
            if let Some(found) = discovery
                .groups()
                .flat_map(|g| g.recommended_resources())
                .find(|(ar, _)| ar.kind == "Widget")
            {
                return found;
            }
        }
    })
    .await;
    let (ar, caps) = found.expect("Widget discovered");
    assert_eq!((ar.plural.as_str(), ar.version.as_str()), ("widgets", "v1"));
    assert!(
        caps.subresources
            .iter()
            .any(|(sub, _)| sub.plural == "status")
    );

    let created = widgets
        .api
        .create(
            &PostParams::default(),
            &widgets.dynamic(
                "w1",
                json!({"spec": {"size": 3}, "status": {"ready": true}}),
            ),
        )
        .await
        .expect("create widget");
    assert!(
        created.data.get("status").is_none(),
        "status given on create is dropped"
    );
    assert_eq!(created.metadata.generation, Some(1));
}

async fn deleting_a_crd_removes_its_objects_ends_its_watches_and_stops_serving_it(env: Env) {
    let crd = definition(
        &env,
        "Widget",
        "widgets",
        json!({"schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}),
    );
    let widgets = install(&env, crd).await;
    widgets
        .api
        .create(&PostParams::default(), &widgets.dynamic("w1", json!({})))
        .await
        .expect("create");
    let mut stream = widgets
        .api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch")
        .boxed();
    // kube-apiserver may send a Bookmark (kube asks for them) before the object: a CI run
    // saw one first.
    let first = loop {
        match stream.try_next().await.expect("an event") {
            Some(WatchEvent::Bookmark(_)) => continue,
            other => break other,
        }
    };
    assert!(matches!(first, Some(WatchEvent::Added(_))), "{first:?}");

    let crds = env.all::<CustomResourceDefinition>();
    let name = format!("widgets.{}", widgets.group);
    crds.delete(&name, &DeleteParams::default())
        .await
        .expect("delete crd");
    // The object goes first (the CRD's cleanup finalizer), then the watch ends.
    let ended = tokio::time::timeout(EVENTUALLY, async {
        let mut seen = Vec::new();
        while let Ok(Some(ev)) = stream.try_next().await {
            seen.push(match ev {
                WatchEvent::Deleted(o) => {
                    format!("DELETED {}", o.metadata.name.unwrap_or_default())
                }
                WatchEvent::Added(_) => "ADDED".into(),
                WatchEvent::Modified(_) => "MODIFIED".into(),
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Error(e) => format!("ERROR {}", e.code),
            });
        }
        seen
    })
    .await
    .expect("the watch ends");
    assert_eq!(ended, ["DELETED w1"]);
    env.wait_gone(&crds, &name).await;
    assert_eq!(api_err(crds.get(&name).await).code, 404);

    // The group is no longer served: kube-apiserver's plain-text 404, not a Status.
    let path = widgets.path.clone();
    eventually("the group is no longer served", || {
        let env = env.clone();
        let path = path.clone();
        async move {
            let raw = env.raw("GET", &path, "", "").await;
            raw.code == 404 && raw.body.is_null()
        }
    })
    .await;
}

async fn refused(env: &Env, crd: Value) -> Raw {
    env.raw(
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        crd.to_string(),
    )
    .await
}

const OPEN: &str =
    r#"{"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}"#;

async fn an_invalid_crd_is_refused_with_its_causes(env: Env) {
    let open: Value = serde_json::from_str(OPEN).expect("json");
    // Named unlike its plural and group.
    let mut crd = definition(&env, "Widget", "widgets", json!({"schema": open}));
    let group = crd["spec"]["group"].as_str().unwrap_or("").to_string();
    crd["metadata"]["name"] = json!("wrong");
    let raw = refused(&env, crd).await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        causes(&raw),
        [
            "FieldValueInvalid|metadata.name|Invalid value: \"wrong\": must be spec.names.plural+\".\"+spec.group"
        ]
    );
    assert_eq!(
        raw.body["message"],
        "CustomResourceDefinition.apiextensions.k8s.io \"wrong\" is invalid: metadata.name: Invalid value: \"wrong\": must be spec.names.plural+\".\"+spec.group"
    );
    assert_eq!(raw.body["details"]["group"], "apiextensions.k8s.io");
    assert_eq!(raw.body["details"]["kind"], "CustomResourceDefinition");

    // A scope that does not exist.
    let mut crd = definition(&env, "Widget", "widgets", json!({"schema": open}));
    crd["spec"]["scope"] = json!("Galaxy");
    let raw = refused(&env, crd).await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        causes(&raw),
        [
            "FieldValueNotSupported|spec.scope|Unsupported value: \"Galaxy\": supported values: \"Cluster\", \"Namespaced\""
        ]
    );

    // No storage version.
    let mut crd = definition(&env, "Widget", "widgets", json!({"schema": open}));
    crd["spec"]["versions"][0]["storage"] = json!(false);
    let raw = refused(&env, crd).await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        causes(&raw),
        [
            "FieldValueInvalid|spec.versions|Invalid value: [{\"Name\":\"v1\",\"Served\":true,\"Storage\":false,\"Deprecated\":false,\"DeprecationWarning\":null,\"Schema\":null,\"Subresources\":null,\"AdditionalPrinterColumns\":null,\"SelectableFields\":null}]: must have exactly one version marked as storage version",
            "FieldValueInvalid|status.storedVersions|Invalid value: null: must have at least one stored version",
        ]
    );

    // A CEL rule that does not compile.
    let crd = definition(
        &env,
        "Widget",
        "widgets",
        json!({"schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self =="}],
        }}}}}),
    );
    let raw = refused(&env, crd).await;
    assert_status(&raw, 422, "Invalid");
    let got = causes(&raw);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].starts_with("FieldValueInvalid|spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule|Invalid value: {\"Rule\":\"self ==\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:8: Syntax error:"),
        "{got:?}"
    );

    // A map list without keys; a type that does not exist.
    let crd = definition(
        &env,
        "Widget",
        "widgets",
        json!({"schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {
                "l": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}},
                "t": {"type": "strung"},
            },
        }}}}}),
    );
    let raw = refused(&env, crd).await;
    assert_status(&raw, 422, "Invalid");
    // kube-apiserver walks `properties`, a Go map, in random order: compare the causes as a set.
    let mut got = causes(&raw);
    got.sort();
    assert_eq!(
        got,
        [
            "FieldValueNotSupported|spec.validation.openAPIV3Schema.properties[spec].properties[t].type|Unsupported value: \"strung\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\"",
            "FieldValueRequired|spec.validation.openAPIV3Schema.properties[spec].properties[l].x-kubernetes-list-map-keys|Required value: must not be empty if x-kubernetes-list-type is map",
        ]
    );

    // uniqueItems is forbidden in a CRD schema.
    let crd = definition(
        &env,
        "Widget",
        "widgets",
        json!({"schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {"u": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}},
        }}}}}),
    );
    let raw = refused(&env, crd).await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        causes(&raw),
        [
            "FieldValueForbidden|spec.validation.openAPIV3Schema.properties[spec].properties[u].uniqueItems|Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        ]
    );

    // A default with fields its own schema prunes.
    let crd = definition(
        &env,
        "Widget",
        "widgets",
        json!({"schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
            "type": "object",
            "properties": {"o": {"type": "object", "default": {"a": "x", "junk": 1}, "properties": {"a": {"type": "string"}}}},
        }}}}}),
    );
    let raw = refused(&env, crd).await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        causes(&raw),
        [
            "FieldValueInvalid|spec.validation.openAPIV3Schema.properties[spec].properties[o].default|Invalid value: {\"a\":\"x\",\"junk\":1}: must not have unknown fields"
        ]
    );

    // Nothing was registered.
    let crds = env.all::<CustomResourceDefinition>();
    assert_eq!(
        api_err(crds.get(&format!("widgets.{group}")).await).code,
        404
    );
}

async fn a_crd_scope_cannot_change(env: Env) {
    let open: Value = serde_json::from_str(OPEN).expect("json");
    let widgets = install(
        &env,
        definition(&env, "Widget", "widgets", json!({"schema": open})),
    )
    .await;
    let crds = env.all::<CustomResourceDefinition>();
    let name = format!("widgets.{}", widgets.group);
    let mut crd = crds.get(&name).await.expect("crd");
    crd.spec.scope = "Cluster".into();
    let e = api_err(crds.replace(&name, &PostParams::default(), &crd).await);
    assert_eq!((e.code, e.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        e.message,
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"{name}\" is invalid: spec.scope: Invalid value: \"Cluster\": field is immutable"
        )
    );
}

// --- the structural schema ------------------------------------------------------------------------

fn keyword_schema() -> Value {
    serde_json::from_str(KEYWORDS).expect("the keyword schema")
}

const KEYWORDS: &str = r#"{"type": "object", "properties": {
        "i": {"type": "integer"},
        "num": {"type": "number", "maximum": 2.5},
        "s": {"type": "string"},
        "o": {"type": "object", "properties": {"k": {"type": "integer"}}},
        "a": {"type": "array", "items": {"type": "string"}},
        "b": {"type": "boolean"},
        "req": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}},
        "e": {"type": "string", "enum": ["a", "b"]},
        "ei": {"type": "integer", "enum": [1, 2]},
        "p": {"type": "string", "pattern": "^[a-z]+$"},
        "min": {"type": "integer", "minimum": 1},
        "xmin": {"type": "integer", "minimum": 1, "exclusiveMinimum": true},
        "xmax": {"type": "integer", "maximum": 10, "exclusiveMaximum": true},
        "mult": {"type": "integer", "multipleOf": 5},
        "maxl": {"type": "string", "maxLength": 3},
        "minl": {"type": "string", "minLength": 2},
        "maxi": {"type": "array", "maxItems": 1, "items": {"type": "integer"}},
        "mini": {"type": "array", "minItems": 1, "items": {"type": "integer"}},
        "maxp": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
        "minp": {"type": "object", "minProperties": 1, "additionalProperties": {"type": "string"}},
        "addl": {"type": "object", "additionalProperties": {"type": "integer"}},
        "pods": {"type": "array", "items": {"type": "object", "properties": {"count": {"type": "integer", "minimum": 0}}}},
        "ios": {"x-kubernetes-int-or-string": true},
        "emb": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true},
        "dt": {"type": "string", "format": "date-time"},
        "byte": {"type": "string", "format": "byte"},
        "uuid": {"type": "string", "format": "uuid"},
        "i32": {"type": "integer", "format": "int32"},
        "nl": {"type": "string", "nullable": true},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
            "items": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}, "v": {"type": "integer"}}}}
}}"#;

async fn every_schema_keyword_is_validated_with_the_real_causes(env: Env) {
    let kind = with_spec_schema(&env, "Keyword", "keywords", keyword_schema()).await;
    let type_err = |f: &str, want: &str, got: &str| {
        format!(
            "FieldValueTypeInvalid|spec.{f}|Invalid value: \"{got}\": spec.{f} in body must be of type {want}: \"{got}\""
        )
    };
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        ("i", json!("x"), vec![type_err("i", "integer", "string")]),
        ("i", json!(1.5), vec![
            type_err("i", "integer", "number"),
            "FieldValueInvalid|<nil>|Invalid value: \"\": Checked value must be of type integer (default format) in spec.i".into(),
        ]),
        ("s", json!(true), vec![type_err("s", "string", "boolean")]),
        ("o", json!([1]), vec![type_err("o", "object", "array")]),
        ("a", json!({"x": 1}), vec![type_err("a", "array", "object")]),
        ("b", json!("true"), vec![type_err("b", "boolean", "string")]),
        ("ios", json!(true), vec![type_err("ios", "integer,string", "boolean")]),
        ("num", json!(3.5), vec!["FieldValueInvalid|spec.num|Invalid value: 3.5: spec.num in body should be less than or equal to 2.5".into()]),
        ("req", json!({}), vec!["FieldValueRequired|spec.req.name|Required value".into()]),
        ("e", json!("x"), vec!["FieldValueNotSupported|spec.e|Unsupported value: \"x\": supported values: \"a\", \"b\"".into()]),
        ("ei", json!(3), vec!["FieldValueNotSupported|spec.ei|Unsupported value: 3: supported values: \"1\", \"2\"".into()]),
        ("p", json!("AB"), vec!["FieldValueInvalid|spec.p|Invalid value: \"AB\": spec.p in body should match '^[a-z]+$'".into()]),
        ("min", json!(0), vec!["FieldValueInvalid|spec.min|Invalid value: 0: spec.min in body should be greater than or equal to 1".into()]),
        ("xmin", json!(1), vec!["FieldValueInvalid|spec.xmin|Invalid value: 1: spec.xmin in body should be greater than 1".into()]),
        ("xmax", json!(10), vec!["FieldValueInvalid|spec.xmax|Invalid value: 10: spec.xmax in body should be less than 10".into()]),
        ("mult", json!(7), vec!["FieldValueInvalid|spec.mult|Invalid value: 7: spec.mult in body should be a multiple of 5".into()]),
        ("maxl", json!("abcd"), vec!["FieldValueTooLong|spec.maxl|Too long: may not be more than 3 bytes".into()]),
        ("minl", json!("a"), vec!["FieldValueInvalid|spec.minl|Invalid value: \"a\": spec.minl in body should be at least 2 chars long".into()]),
        ("maxi", json!([1, 2]), vec!["FieldValueTooMany|spec.maxi|Too many: 2: must have at most 1 item".into()]),
        ("mini", json!([]), vec!["FieldValueInvalid|spec.mini|Invalid value: 0: spec.mini in body should have at least 1 items".into()]),
        ("maxp", json!({"a": "1", "b": "2"}), vec!["FieldValueTooMany|spec.maxp|Too many: 2: must have at most 1 item".into()]),
        ("minp", json!({}), vec!["FieldValueInvalid|spec.minp|Invalid value: 0: spec.minp in body should have at least 1 properties".into()]),
        ("addl", json!({"key": "v"}), vec![type_err("addl.key", "integer", "string")]),
        ("pods", json!([{"count": 1}, {"count": -1}]), vec!["FieldValueInvalid|spec.pods[1].count|Invalid value: -1: spec.pods[1].count in body should be greater than or equal to 0".into()]),
        ("emb", json!({"apiVersion": "v1"}), vec!["FieldValueRequired|spec.emb.kind|Required value".into()]),
        ("dt", json!("yesterday"), vec!["FieldValueTypeInvalid|spec.dt|Invalid value: \"yesterday\": spec.dt in body must be of type date-time: \"yesterday\"".into()]),
        ("byte", json!("not base64!"), vec!["FieldValueTypeInvalid|spec.byte|Invalid value: \"not base64!\": spec.byte in body must be of type byte: \"not base64!\"".into()]),
        ("uuid", json!("nope"), vec!["FieldValueTypeInvalid|spec.uuid|Invalid value: \"nope\": spec.uuid in body must be of type uuid: \"nope\"".into()]),
        ("i32", json!(5_000_000_000_i64), vec!["FieldValueInvalid|<nil>|Invalid value: \"\": Checked value must be of type integer with format int32 in spec.i32".into()]),
        ("set", json!(["a", "b", "a"]), vec!["FieldValueDuplicate|spec.set[2]|Duplicate value: \"a\"".into()]),
        ("map", json!([{"type": "A", "v": 1}, {"type": "B"}, {"type": "A", "v": 2}]), vec!["FieldValueDuplicate|spec.map[2]|Duplicate value: {\"type\":\"A\"}".into()]),
    ];
    let mut differences = Vec::new();
    for (i, (field, value, want)) in cases.into_iter().enumerate() {
        let raw = kind
            .create(&env, &format!("k{i}"), json!({"spec": {field: value}}))
            .await;
        let got = causes(&raw);
        if raw.code != 422 || raw.body["reason"] != "Invalid" || got != want {
            differences.push(format!(
                "{field} = {value}: {} {got:?}, want {want:?}",
                raw.code
            ));
        }
    }
    assert!(differences.is_empty(), "{differences:#?}");

    // Values each keyword accepts, and a null where the schema allows one.
    let ok = json!({"spec": {
        "i": 3, "num": 2, "ios": "50%", "nl": null, "e": "a",
        "xmax": 9, "mult": 15, "dt": "2024-01-02T03:04:05Z", "byte": "aGVsbG8=",
        "uuid": "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "set": ["a", "b"],
        "map": [{"type": "A"}, {"type": "B"}], "emb": {"apiVersion": "v1", "kind": "Pod"},
    }});
    let raw = kind.create(&env, "ok", ok.clone()).await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert_eq!(raw.body["spec"], ok["spec"]);
    // A null the schema does not allow is dropped, not refused.
    let raw = kind
        .create(&env, "null", json!({"spec": {"s": null, "i": 1}}))
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert_eq!(raw.body["spec"], json!({"i": 1}));
}

async fn schema_validation_ratchets_on_unchanged_values(env: Env) {
    // A value made invalid by a stricter schema may stay while other fields change.
    let loose = json!({"type": "object", "properties": {
        "n": {"type": "integer"}, "m": {"type": "integer"},
    }});
    let kind = with_spec_schema(&env, "Ratchet", "ratchets", loose).await;
    let raw = kind
        .create(&env, "r", json!({"spec": {"n": 9, "m": 1}}))
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    let crds = env.all::<CustomResourceDefinition>();
    let name = format!("ratchets.{}", kind.group);
    crds.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "n": {"type": "integer", "maximum": 3}, "m": {"type": "integer", "maximum": 3}}},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}})),
    )
    .await
    .expect("a stricter schema");
    // Wait until the stricter schema is in force: a new object over the maximum is refused.
    eventually("the new schema is in force", || {
        let env = env.clone();
        let kind = &kind;
        async move {
            let raw = kind.create(&env, "probe", json!({"spec": {"n": 9}})).await;
            if raw.code == 201 {
                let _ = kind.api.delete("probe", &DeleteParams::default()).await;
            }
            raw.code == 422
        }
    })
    .await;
    let patch = |m: i64| {
        let env = env.clone();
        let path = format!("{}/r", kind.path);
        async move {
            env.raw(
                "PATCH",
                &path,
                "application/merge-patch+json",
                json!({"spec": {"m": m}}).to_string(),
            )
            .await
        }
    };
    let raw = patch(2).await;
    assert_eq!(
        raw.code, 200,
        "unchanged n=9 is not failed again: {}",
        raw.text
    );
    let raw = patch(7).await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        causes(&raw),
        [
            "FieldValueInvalid|spec.m|Invalid value: 7: spec.m in body should be less than or equal to 3"
        ]
    );
}

async fn unknown_fields_are_pruned_at_every_level(env: Env) {
    let spec = json!({"type": "object", "properties": {
        "keep": {"type": "string"},
        "o": {"type": "object", "properties": {"k": {"type": "integer"}}},
        "l": {"type": "array", "items": {"type": "object", "properties": {"n": {"type": "string"}}}},
        "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "emb": {"type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}},
    }});
    let kind = with_spec_schema(&env, "Pruned", "pruneds", spec).await;
    let raw = kind
        .create(
            &env,
            "p",
            json!({
                "metadata": {"labels": {"a": "b"}},
                "top": "dropped",
                "spec": {
                    "keep": "x", "junk": 1,
                    "o": {"k": 1, "z": 2},
                    "l": [{"n": "a", "x": 1}, {"y": 2}],
                    "m": {"k1": {"v": "a", "junk": 1}, "k2": {}},
                    "free": {"any": [1, "b"], "deep": {"x": 1}},
                    "emb": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                        "spec": {"a": "1", "b": 2}, "other": 3},
                },
            }),
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    let want = json!({
        "keep": "x",
        "o": {"k": 1},
        "l": [{"n": "a"}, {}],
        "m": {"k1": {"v": "a"}, "k2": {}},
        "free": {"any": [1, "b"], "deep": {"x": 1}},
        "emb": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"a": "1"}},
    });
    assert_eq!(raw.body["spec"], want);
    assert!(raw.body.get("top").is_none());
    assert_eq!(raw.body["metadata"]["labels"], json!({"a": "b"}));
    assert_eq!(kind.get("p").await.data["spec"], want, "stored pruned");
}

async fn schema_defaults_apply_on_write(env: Env) {
    let spec = json!({"type": "object", "properties": {
        "r": {"type": "integer", "default": 1},
        "mode": {"type": "string", "enum": ["Fast", "Slow"], "default": "Slow"},
        "nl": {"type": "integer", "nullable": true, "default": 1},
        "o": {"type": "object", "default": {}, "properties": {
            "a": {"type": "string", "default": "x"}, "b": {"type": "integer"}}},
        "l": {"type": "array", "items": {"type": "object", "properties": {"p": {"type": "string", "default": "TCP"}}}},
        "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {"w": {"type": "integer", "default": 1}}}},
        "pruned": {"type": "object", "default": {"a": "x"}, "properties": {"a": {"type": "string"}}},
    }});
    let kind = with_spec_schema(&env, "Defaulted", "defaulteds", spec).await;
    let raw = kind
        .create(
            &env,
            "d",
            json!({"spec": {"r": null, "nl": null, "l": [{}, {"p": "UDP"}], "m": {"a": {}, "b": {"w": 3}}}}),
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    let want = json!({
        "r": 1, "mode": "Slow", "nl": null, "o": {"a": "x"},
        "l": [{"p": "TCP"}, {"p": "UDP"}], "m": {"a": {"w": 1}, "b": {"w": 3}},
        "pruned": {"a": "x"},
    });
    assert_eq!(raw.body["spec"], want);
    // An update that leaves a defaulted field out gets it again.
    let rv = raw.body["metadata"]["resourceVersion"].clone();
    let raw = env
        .raw(
            "PUT",
            &format!("{}/d", kind.path),
            "application/json",
            kind.object(
                "d",
                json!({"metadata": {"resourceVersion": rv}, "spec": {"r": 5}}),
            )
            .to_string(),
        )
        .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_eq!(
        raw.body["spec"],
        json!({"r": 5, "mode": "Slow", "nl": 1, "o": {"a": "x"}, "pruned": {"a": "x"}})
    );
}

async fn an_update_of_a_custom_resource_needs_a_resource_version(env: Env) {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let kind = with_spec_schema(&env, "Conditional", "conditionals", open).await;
    assert_eq!(
        kind.create(&env, "c", json!({"spec": {"a": 1}})).await.code,
        201
    );
    let raw = env
        .raw(
            "PUT",
            &format!("{}/c", kind.path),
            "application/json",
            kind.object("c", json!({"spec": {"a": 2}})).to_string(),
        )
        .await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        raw.body["message"],
        format!(
            "conditionals.{} \"c\" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update",
            kind.group
        )
    );
    assert_eq!(raw.body["details"]["kind"], "conditionals");
    assert_eq!(kind.get("c").await.data["spec"], json!({"a": 1}));
}

async fn schema_defaults_also_apply_on_read(env: Env) {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let kind = with_spec_schema(&env, "Later", "laters", open).await;
    let raw = kind.create(&env, "old", json!({"spec": {"size": 1}})).await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    let crds = env.all::<CustomResourceDefinition>();
    let name = format!("laters.{}", kind.group);
    crds.patch(
        &name,
        &PatchParams::default(),
        &Patch::Merge(
            json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true,
            "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                    "properties": {"color": {"type": "string", "default": "blue"}}},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}}]}}),
        ),
    )
    .await
    .expect("add a default to the CRD");
    // The object stored before the default existed reads with it, got and listed. On
    // kube-apiserver the CRD's new storage replaces the old one a moment after the schema
    // reaches reads, and a list in between is a 429 "storage is (re)initializing": both are
    // awaited.
    eventually(
        "the stored object reads and lists with the new default",
        || {
            let kind = &kind;
            async move {
                let listed = kind.api.list(&Default::default()).await;
                kind.get("old").await.data["spec"]["color"] == "blue"
                    && listed.is_ok_and(|l| l.items[0].data["spec"]["color"] == "blue")
            }
        },
    )
    .await;
    assert_eq!(
        kind.get("old").await.data["spec"],
        json!({"size": 1, "color": "blue"})
    );
}

// --- CEL ----------------------------------------------------------------------------------------------

fn cel_schema() -> Value {
    json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.minReplicas <= self.replicas", "message": "minReplicas must be <= replicas"},
            {"rule": "!has(self.prefixed) || self.prefixed.startsWith('p-')", "message": "needs prefix", "fieldPath": ".prefixed"},
        ],
        "properties": {
            "replicas": {"type": "integer", "default": 1},
            "minReplicas": {"type": "integer", "default": 0},
            "n": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0"}]},
            "m": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0", "messageExpression": "self < -5 ? 'very negative' : 'negative'"}]},
            "f": {"type": "string", "maxLength": 16, "x-kubernetes-validations": [{"rule": "self != 'root'", "message": "root not allowed", "reason": "FieldValueForbidden"}]},
            "prefixed": {"type": "string", "maxLength": 16},
            "q": {"x-kubernetes-int-or-string": true, "x-kubernetes-validations": [{"rule": "quantity(string(self)).isLessThan(quantity('1Gi'))", "message": "too big"}]},
        },
    })
}

async fn cel_rules_report_their_messages_reasons_and_field_paths(env: Env) {
    let kind = with_spec_schema(&env, "Rule", "rules", cel_schema()).await;
    let cases: Vec<(Value, Vec<&str>)> = vec![
        (
            json!({"replicas": 1, "minReplicas": 3}),
            vec!["FieldValueInvalid|spec|Invalid value: minReplicas must be <= replicas"],
        ),
        (
            json!({"n": -1}),
            vec!["FieldValueInvalid|spec.n|Invalid value: -1: failed rule: self >= 0"],
        ),
        (
            json!({"m": -6}),
            vec!["FieldValueInvalid|spec.m|Invalid value: -6: very negative"],
        ),
        (
            json!({"f": "root"}),
            vec!["FieldValueForbidden|spec.f|Forbidden: root not allowed"],
        ),
        (
            json!({"prefixed": "x"}),
            vec!["FieldValueInvalid|spec.prefixed|Invalid value: needs prefix"],
        ),
        (
            json!({"q": "2Gi"}),
            vec!["FieldValueInvalid|spec.q|Invalid value: \"2Gi\": too big"],
        ),
    ];
    let mut differences = Vec::new();
    for (i, (spec, want)) in cases.into_iter().enumerate() {
        let raw = kind
            .create(&env, &format!("c{i}"), json!({ "spec": spec }))
            .await;
        let got = causes(&raw);
        if raw.code != 422 || got != want {
            differences.push(format!("{spec}: {} {got:?}, want {want:?}", raw.code));
        }
    }
    assert!(differences.is_empty(), "{differences:#?}");
    let raw = kind
        .create(
            &env,
            "ok",
            json!({"spec": {"replicas": 3, "minReplicas": 1, "prefixed": "p-x", "q": "1Mi"}}),
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
}

async fn cel_transition_rules_compare_with_old_self(env: Env) {
    let spec = json!({"type": "object", "properties": {
        "class": {"type": "string", "maxLength": 16, "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "Value is immutable"}]},
        "grow": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= oldSelf.orValue(1)", "optionalOldSelf": true, "message": "may not shrink"}]},
        "l": {"type": "array", "maxItems": 8, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string", "maxLength": 8}, "size": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.size >= oldSelf.size", "message": "may not shrink"}]}},
    }});
    let kind = with_spec_schema(&env, "Transition", "transitions", spec).await;
    // optionalOldSelf rules run on create too, against the default.
    let raw = kind
        .create(&env, "zero", json!({"spec": {"grow": 0}}))
        .await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        causes(&raw),
        ["FieldValueInvalid|spec.grow|Invalid value: 0: may not shrink"]
    );
    let raw = kind
        .create(
            &env,
            "t",
            json!({"spec": {"grow": 2, "l": [{"name": "a", "size": 2}, {"name": "b", "size": 5}]}}),
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    let patch = |spec: Value| {
        let env = env.clone();
        let path = format!("{}/t", kind.path);
        async move {
            env.raw(
                "PATCH",
                &path,
                "application/merge-patch+json",
                json!({ "spec": spec }).to_string(),
            )
            .await
        }
    };
    // A field absent before may be set: the transition rule needs both values.
    assert_eq!(patch(json!({"class": "a"})).await.code, 200);
    let raw = patch(json!({"class": "b"})).await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        causes(&raw),
        ["FieldValueInvalid|spec.class|Invalid value: \"b\": Value is immutable"]
    );
    let raw = patch(json!({"grow": 1})).await;
    assert_eq!(
        causes(&raw),
        ["FieldValueInvalid|spec.grow|Invalid value: 1: may not shrink"]
    );
    assert_eq!(patch(json!({"grow": 4})).await.code, 200);
    // Map-list items meet their old selves by key, whatever their order.
    let raw = patch(json!({"l": [{"name": "b", "size": 4}, {"name": "a", "size": 3}, {"name": "c", "size": 1}]})).await;
    assert_eq!(
        causes(&raw),
        ["FieldValueInvalid|spec.l[0]|Invalid value: may not shrink"]
    );
    let stored = kind.get("t").await;
    assert_eq!(
        stored.data["spec"],
        json!({"class": "a", "grow": 4, "l": [{"name": "a", "size": 2}, {"name": "b", "size": 5}]})
    );
}

// --- subresources -------------------------------------------------------------------------------------

async fn the_status_subresource_splits_spec_and_status_writes(env: Env) {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let kind = with_spec_schema(&env, "Split", "splits", open).await;
    let raw = kind
        .create(
            &env,
            "s",
            json!({"spec": {"size": 3}, "status": {"ready": false}}),
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert!(
        raw.body.get("status").is_none(),
        "status given on create is dropped"
    );
    let patched = kind
        .api
        .patch_status(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}, "spec": {"size": 9}})),
        )
        .await
        .expect("patch status");
    assert_eq!(patched.data["status"], json!({"ready": true}));
    assert_eq!(
        patched.data["spec"],
        json!({"size": 3}),
        "spec is ignored on /status"
    );
    assert_eq!(
        patched.metadata.generation,
        Some(1),
        "status writes keep generation"
    );
    let main = kind
        .api
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": false}, "spec": {"size": 4}})),
        )
        .await
        .expect("patch main");
    assert_eq!(
        main.data["status"],
        json!({"ready": true}),
        "status is ignored on the main resource"
    );
    assert_eq!(main.data["spec"], json!({"size": 4}));
    assert_eq!(
        main.metadata.generation,
        Some(2),
        "spec changes bump generation"
    );
    let labelled = kind
        .api
        .patch(
            "s",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .expect("label");
    assert_eq!(
        labelled.metadata.generation,
        Some(2),
        "metadata changes do not"
    );
}

async fn the_scale_subresource_follows_its_paths(env: Env) {
    let crd = definition(
        &env,
        "Scaled",
        "scaleds",
        json!({
            "subresources": {"status": {}, "scale": {
                "specReplicasPath": ".spec.size",
                "statusReplicasPath": ".status.count",
                "labelSelectorPath": ".status.selector",
            }},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                "status": {"type": "object", "properties": {"count": {"type": "integer"}, "selector": {"type": "string"}}},
            }}},
        }),
    );
    let kind = install(&env, crd).await;
    let raw = kind.create(&env, "w", json!({"spec": {"size": 3}})).await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    kind.api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"count": 2, "selector": "app=w"}})),
        )
        .await
        .expect("status");
    let scale = env
        .raw("GET", &format!("{}/w/scale", kind.path), "", "")
        .await;
    assert_eq!(scale.code, 200, "{}", scale.text);
    assert_eq!(scale.body["kind"], "Scale");
    assert_eq!(scale.body["apiVersion"], "autoscaling/v1");
    assert_eq!(scale.body["spec"], json!({"replicas": 3}));
    assert_eq!(
        scale.body["status"],
        json!({"replicas": 2, "selector": "app=w"})
    );
    assert_eq!(scale.body["metadata"]["name"], "w");
    let patched = kind
        .api
        .patch_scale(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 7}})),
        )
        .await
        .expect("patch scale");
    assert_eq!(patched.spec.and_then(|s| s.replicas), Some(7));
    let stored = kind.get("w").await;
    assert_eq!(stored.data["spec"]["size"], json!(7));
    assert_eq!(stored.metadata.generation, Some(2));
}

// --- tables ---------------------------------------------------------------------------------------------

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

async fn printer_columns_make_the_table_of_a_custom_resource(env: Env) {
    let crd = definition(
        &env,
        "Gadget",
        "gadgets",
        json!({
            "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                {"name": "Mode", "type": "string", "jsonPath": ".spec.mode", "priority": 1, "description": "how it runs"},
            ],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "mode": {"type": "string"}}},
                "status": {"type": "object", "properties": {"conditions": {
                    "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                    "items": {"type": "object", "required": ["type"], "properties": {"type": {"type": "string"}, "status": {"type": "string"}}},
                }}},
            }}},
        }),
    );
    let kind = install(&env, crd).await;
    assert_eq!(
        kind.create(&env, "g", json!({"spec": {"size": 2}}))
            .await
            .code,
        201
    );
    kind.api
        .patch_status(
            "g",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}})),
        )
        .await
        .expect("status");
    let table = env
        .raw_with("GET", &kind.path, &[("accept", TABLE)], "")
        .await;
    assert_eq!(table.code, 200, "{}", table.text);
    assert_eq!(table.body["kind"], "Table");
    assert_eq!(table.body["apiVersion"], "meta.k8s.io/v1");
    let columns: Vec<Value> = table.body["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| json!([c["name"], c["type"], c["format"], c["priority"]]))
        .collect();
    assert_eq!(
        columns,
        [
            json!(["Name", "string", "name", 0]),
            json!(["Size", "integer", "", 0]),
            json!(["Ready", "string", "", 0]),
            json!(["Mode", "string", "", 1]),
        ],
        "Name, then only the CRD's own columns"
    );
    assert_eq!(
        table.body["columnDefinitions"][3]["description"],
        "how it runs"
    );
    assert_eq!(
        table.body["rows"][0]["cells"],
        json!(["g", 2, "True", null])
    );
    assert_eq!(
        table.body["rows"][0]["object"]["kind"],
        "PartialObjectMetadata"
    );

    // Without columns of its own, a CRD's table has Name and Age.
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let plain = with_spec_schema(&env, "Plain", "plains", open).await;
    assert_eq!(plain.create(&env, "p", json!({})).await.code, 201);
    let table = env
        .raw_with("GET", &plain.path, &[("accept", TABLE)], "")
        .await;
    let names: Vec<&str> = table.body["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["Name", "Age"]);
}

// --- field validation and patches -------------------------------------------------------------------

fn warnings(raw: &Raw) -> Vec<String> {
    raw.headers
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(String::from)
        .collect()
}

async fn field_validation_strict_refuses_and_warn_names_unknown_fields_of_custom_resources(
    env: Env,
) {
    let spec = json!({"type": "object", "properties": {"size": {"type": "integer"}}});
    let kind = with_spec_schema(&env, "Strict", "stricts", spec).await;
    let body = |name: &str| {
        kind.object(
            name,
            json!({"metadata": {"bogusMeta": 1}, "spec": {"size": 1, "junk": true}, "top": "x"}),
        )
        .to_string()
    };
    let raw = env
        .raw(
            "POST",
            &format!("{}?fieldValidation=Strict", kind.path),
            "application/json",
            body("s"),
        )
        .await;
    assert_status(&raw, 400, "BadRequest");
    assert_eq!(
        raw.body["message"],
        "Strict in version \"v1\" cannot be handled as a Strict: strict decoding error: unknown field \"metadata.bogusMeta\", unknown field \"spec.junk\", unknown field \"top\""
    );
    let raw = env
        .raw(
            "POST",
            &format!("{}?fieldValidation=Warn", kind.path),
            "application/json",
            body("w"),
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert_eq!(
        warnings(&raw),
        [
            "299 - \"unknown field \\\"metadata.bogusMeta\\\"\"",
            "299 - \"unknown field \\\"spec.junk\\\"\"",
            "299 - \"unknown field \\\"top\\\"\"",
        ]
    );
    assert_eq!(raw.body["spec"], json!({"size": 1}));
    let raw = env
        .raw(
            "POST",
            &format!("{}?fieldValidation=Ignore", kind.path),
            "application/json",
            body("i"),
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert!(warnings(&raw).is_empty(), "{:?}", warnings(&raw));
    // Duplicate fields: refused under Strict, warned about otherwise, the last one wins.
    let dup = format!(
        r#"{{"apiVersion":"{}/v1","kind":"Strict","metadata":{{"name":"d"}},"spec":{{"size":1,"size":2}}}}"#,
        kind.group
    );
    let raw = env
        .raw(
            "POST",
            &format!("{}?fieldValidation=Strict", kind.path),
            "application/json",
            dup.clone(),
        )
        .await;
    assert_status(&raw, 400, "BadRequest");
    assert_eq!(
        raw.body["message"],
        "Strict in version \"v1\" cannot be handled as a Strict: strict decoding error: duplicate field \"spec.size\""
    );
    let raw = env.raw("POST", &kind.path, "application/json", dup).await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert_eq!(
        warnings(&raw),
        ["299 - \"duplicate field \\\"spec.size\\\"\""]
    );
    assert_eq!(raw.body["spec"]["size"], 2);
}

async fn strategic_merge_patch_on_a_custom_resource_is_unsupported(env: Env) {
    let open = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    let kind = with_spec_schema(&env, "Merged", "mergeds", open).await;
    assert_eq!(kind.create(&env, "w", json!({})).await.code, 201);
    let raw = env
        .raw(
            "PATCH",
            &format!("{}/w", kind.path),
            "application/strategic-merge-patch+json",
            r#"{"spec":{"a":1}}"#,
        )
        .await;
    assert_status(&raw, 415, "UnsupportedMediaType");
    assert_eq!(
        raw.body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
}

// --- the project's own CRDs ---------------------------------------------------------------------

/// One of the project's CRDs (api/crds, generated by `cargo xtask crds`), moved into the test's
/// own group so that tests sharing the control plane never meet.
async fn project_crd(env: &Env, file: &str) -> Kind {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../api/crds")
        .join(file);
    let text = std::fs::read_to_string(&path).expect("read the project CRD");
    let mut crd: Value = serde_yaml::from_str(&text).expect("a YAML CRD");
    let group = format!("{}.example.com", env.ns);
    let plural = crd["spec"]["names"]["plural"]
        .as_str()
        .expect("a plural")
        .to_string();
    crd["spec"]["group"] = json!(group);
    crd["metadata"]["name"] = json!(format!("{plural}.{group}"));
    if let Some(versions) = crd["spec"]["versions"].as_array_mut() {
        // Keep the storage version only: the test speaks v1 of it.
        versions.retain(|v| v["storage"] == json!(true));
        versions[0]["name"] = json!("v1");
    }
    if let Some(m) = crd["metadata"]["annotations"].as_object_mut() {
        m.remove("api-approved.kubernetes.io");
    }
    install(env, crd).await
}

async fn provisioning_request_spec_is_immutable_through_its_cel_rule(env: Env) {
    let kind = project_crd(&env, "provisioningrequests.autoscaling.x-k8s.io.yaml").await;
    let pr = json!({"spec": {
        "provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
        "podSets": [{"podTemplateRef": {"name": "ppt"}, "count": 2}],
    }});
    let raw = kind.create(&env, "pr", pr.clone()).await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    let mut changed = raw.body.clone();
    changed["spec"]["podSets"][0]["count"] = json!(3);
    let raw = env
        .raw(
            "PUT",
            &format!("{}/pr", kind.path),
            "application/json",
            changed.to_string(),
        )
        .await;
    assert_status(&raw, 422, "Invalid");
    let got = causes(&raw);
    assert!(
        got.iter().any(|c| c.ends_with(": Value is immutable")),
        "{got:?}"
    );

    let mut zero = pr;
    zero["spec"]["podSets"][0]["count"] = json!(0);
    let raw = kind.create(&env, "zero", zero).await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        causes(&raw),
        [
            "FieldValueInvalid|spec.podSets[0].count|Invalid value: 0: spec.podSets[0].count in body should be greater than or equal to 1"
        ]
    );
}

async fn provisioning_request_config_gets_the_default_retry_strategy(env: Env) {
    let kind = project_crd(&env, "provisioningrequestconfigs.kueue.x-k8s.io.yaml").await;
    let raw = env
        .raw(
            "POST",
            &kind.path,
            "application/json",
            kind.object(
                &env.name("prc"),
                json!({"spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io"}}),
            )
            .to_string(),
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert_eq!(
        raw.body["spec"]["retryStrategy"],
        json!({"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800})
    );
}
