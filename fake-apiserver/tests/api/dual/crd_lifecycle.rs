//! A CustomResourceDefinition's life as kube-apiserver writes it: created with no accepted names,
//! then named and established by its own controllers in status writes of their own; deleted
//! without a grace period under a Terminating condition. Also what clients of custom resources
//! notice around them: deprecated versions warn, replicas behind a scale subresource are
//! validated with the object, and paths the apiextensions server does not serve are kube-apiserver's
//! plain 404s.

use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, WatchEvent, WatchParams};
use serde_json::{Value, json};

use super::{EVENTUALLY, Env, Raw, assert_status, dual};

dual!(
    a_crd_is_created_unnamed_then_named_and_established_in_two_status_writes,
    deleting_a_crd_marks_it_terminating_without_grace_period_or_new_generation,
    deprecated_versions_warn_on_every_request,
    paths_the_apiextensions_server_does_not_serve_are_plain_404s,
    negative_replicas_behind_a_scale_subresource_are_refused_as_the_custom_resource,
    writes_through_scale_get_a_managed_fields_entry_of_their_own,
);

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// A CRD in the test's own group with these versions (the first is the storage version).
fn definition(env: &Env, plural: &str, kind: &str, versions: Value) -> Value {
    let group = format!("{}.example.com", env.ns);
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind, "categories": ["birds"]},
            "versions": versions,
        },
    })
}

fn open_schema() -> Value {
    json!({"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}})
}

/// POST a CRD as kubectl create does, deleted when the test ends.
async fn create(env: &Env, crd: &Value) -> Raw {
    let name = crd["metadata"]["name"].as_str().expect("a name");
    env.delete_at_end(format!("{CRDS}/{name}"));
    let raw = env
        .raw(
            "POST",
            &format!("{CRDS}?fieldManager=kubectl-create"),
            "application/json",
            crd.to_string(),
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    raw
}

/// The next `n` events of the CRD `name` after resourceVersion `rv`, as JSON.
async fn events_after(env: &Env, name: &str, rv: &str, n: usize) -> Vec<(String, Value)> {
    let api: Api<CustomResourceDefinition> = env.all();
    let params = WatchParams::default().fields(&format!("metadata.name={name}"));
    let stream = api.watch(&params, rv).await.expect("watch CRDs");
    let events = tokio::time::timeout(
        EVENTUALLY,
        stream
            .filter_map(|e| async move {
                match e.expect("a watch event") {
                    WatchEvent::Added(o) => Some(("ADDED".to_string(), o)),
                    WatchEvent::Modified(o) => Some(("MODIFIED".to_string(), o)),
                    WatchEvent::Deleted(o) => Some(("DELETED".to_string(), o)),
                    _ => None,
                }
            })
            .take(n)
            .collect::<Vec<_>>(),
    )
    .await
    .unwrap_or_else(|_| panic!("{n} events of {name} within {EVENTUALLY:?}"));
    events
        .into_iter()
        .map(|(t, o)| (t, serde_json::to_value(o).expect("CRD as JSON")))
        .collect()
}

/// `type/status/reason/message` of each condition, in order.
fn conditions(crd: &Value) -> Vec<String> {
    crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{}/{}/{}/{}",
                c["type"].as_str().unwrap_or(""),
                c["status"].as_str().unwrap_or(""),
                c["reason"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// The managedFields entries as `manager/operation/subresource` with their fields.
fn managers(obj: &Value) -> Vec<(String, Value)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            (
                format!(
                    "{}/{}/{}",
                    m["manager"].as_str().unwrap_or(""),
                    m["operation"].as_str().unwrap_or(""),
                    m["subresource"].as_str().unwrap_or("")
                ),
                m["fieldsV1"].clone(),
            )
        })
        .collect()
}

fn condition_fields() -> Value {
    json!({".": {}, "f:lastTransitionTime": {}, "f:message": {}, "f:reason": {}, "f:status": {}, "f:type": {}})
}

async fn a_crd_is_created_unnamed_then_named_and_established_in_two_status_writes(env: Env) {
    let crd = definition(
        &env,
        "ducks",
        "Duck",
        json!([{"name": "v1", "served": true, "storage": true, "schema": open_schema()}]),
    );
    let name = crd["metadata"]["name"].as_str().expect("name").to_string();
    let created = create(&env, &crd).await.body;
    // Nothing is accepted yet; the defaults are the creator's.
    assert_eq!(
        created["status"],
        json!({"conditions": null, "acceptedNames": {"plural": "", "kind": ""}, "storedVersions": ["v1"]})
    );
    assert_eq!(created["spec"]["conversion"], json!({"strategy": "None"}));
    let names = json!({"plural": "ducks", "singular": "duck", "kind": "Duck", "listKind": "DuckList", "categories": ["birds"]});
    assert_eq!(created["spec"]["names"], names);
    assert_eq!(
        managers(&created),
        vec![(
            "kubectl-create/Update/".to_string(),
            json!({"f:spec": {
                "f:conversion": {".": {}, "f:strategy": {}},
                "f:group": {},
                "f:names": {"f:categories": {}, "f:kind": {}, "f:listKind": {}, "f:plural": {}, "f:singular": {}},
                "f:scope": {},
                "f:versions": {},
            }})
        )]
    );

    let rv = created["metadata"]["resourceVersion"].as_str().expect("rv");
    let events = events_after(&env, &name, rv, 2).await;
    let (named, established) = (&events[0], &events[1]);
    assert_eq!(named.0, "MODIFIED");
    assert_eq!(named.1["status"]["acceptedNames"], names);
    assert_eq!(
        conditions(&named.1),
        [
            "NamesAccepted/True/NoConflicts/no conflicts found",
            "Established/False/Installing/the initial names have been accepted",
        ]
    );
    assert_eq!(established.0, "MODIFIED");
    assert_eq!(
        conditions(&established.1),
        [
            "NamesAccepted/True/NoConflicts/no conflicts found",
            "Established/True/InitialNamesAccepted/the initial names have been accepted",
        ]
    );
    assert_eq!(established.1["metadata"]["generation"], 1);
    // kube-apiserver's own status writes, in an entry of their own.
    let status_entry = managers(&established.1)
        .into_iter()
        .find(|(m, _)| m == "kube-apiserver/Update/status")
        .expect("a kube-apiserver status entry");
    assert_eq!(
        status_entry.1,
        json!({"f:status": {
            "f:acceptedNames": {"f:categories": {}, "f:kind": {}, "f:listKind": {}, "f:plural": {}, "f:singular": {}},
            "f:conditions": {
                "k:{\"type\":\"Established\"}": condition_fields(),
                "k:{\"type\":\"NamesAccepted\"}": condition_fields(),
            },
        }})
    );
}

async fn deleting_a_crd_marks_it_terminating_without_grace_period_or_new_generation(env: Env) {
    let crd = definition(
        &env,
        "geese",
        "Goose",
        json!([{"name": "v1", "served": true, "storage": true, "schema": open_schema()}]),
    );
    let name = crd["metadata"]["name"].as_str().expect("name").to_string();
    let typed: CustomResourceDefinition = serde_json::from_value(crd).expect("a CRD");
    env.create_crd(&typed).await;

    let deleted = env
        .raw("DELETE", &format!("{CRDS}/{name}"), "application/json", "")
        .await;
    assert_eq!(deleted.code, 200, "{}", deleted.text);
    let meta = &deleted.body["metadata"];
    assert_eq!(meta["generation"], 1);
    assert!(meta["deletionTimestamp"].is_string());
    assert_eq!(meta.get("deletionGracePeriodSeconds"), None);
    assert_eq!(
        meta["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    assert_eq!(
        conditions(&deleted.body)[2],
        "Terminating/True/InstanceDeletionPending/CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"
    );

    let rv = meta["resourceVersion"].as_str().expect("rv");
    let events = events_after(&env, &name, rv, 2).await;
    assert_eq!(events[0].0, "MODIFIED");
    assert_eq!(
        conditions(&events[0].1)[2],
        "Terminating/True/InstanceDeletionInProgress/CustomResource deletion is in progress"
    );
    let status_entry = managers(&events[0].1)
        .into_iter()
        .find(|(m, _)| m == "kube-apiserver/Update/status")
        .expect("a kube-apiserver status entry");
    assert_eq!(
        status_entry.1["f:status"]["f:conditions"]["k:{\"type\":\"Terminating\"}"],
        json!({"f:message": {}, "f:reason": {}})
    );
    assert_eq!(events[1].0, "DELETED");
}

async fn deprecated_versions_warn_on_every_request(env: Env) {
    let crd = definition(
        &env,
        "things",
        "Thing",
        json!([
            {"name": "v1", "served": true, "storage": true, "schema": open_schema()},
            {"name": "v1beta1", "served": true, "storage": false, "deprecated": true, "schema": open_schema()},
            {"name": "v1alpha1", "served": true, "storage": false, "deprecated": true,
                "deprecationWarning": "v1alpha1 Thing is going away; use v1", "schema": open_schema()},
        ]),
    );
    let typed: CustomResourceDefinition = serde_json::from_value(crd).expect("a CRD");
    env.create_crd(&typed).await;
    let group = format!("{}.example.com", env.ns);
    let path = |v: &str| format!("/apis/{group}/{v}/namespaces/{}/things", env.ns);
    let warning = |raw: &Raw| {
        raw.headers
            .get_all("warning")
            .iter()
            .map(|w| w.to_str().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };

    let created = env
        .raw(
            "POST",
            &path("v1alpha1"),
            "application/json",
            json!({"apiVersion": format!("{group}/v1alpha1"), "kind": "Thing", "metadata": {"name": "a"}})
                .to_string(),
        )
        .await;
    assert_eq!(created.code, 201, "{}", created.text);
    assert_eq!(
        warning(&created),
        [r#"299 - "v1alpha1 Thing is going away; use v1""#]
    );
    let listed = env.raw("GET", &path("v1beta1"), "", "").await;
    assert_eq!(
        warning(&listed),
        [format!(
            r#"299 - "{group}/v1beta1 Thing is deprecated; use {group}/v1 Thing""#
        )]
    );
    // Errors warn too.
    let missing = env
        .raw("GET", &format!("{}/nope", path("v1alpha1")), "", "")
        .await;
    assert_status(&missing, 404, "NotFound");
    assert_eq!(warning(&missing).len(), 1);
    let current = env.raw("GET", &format!("{}/a", path("v1")), "", "").await;
    assert_eq!(current.code, 200, "{}", current.text);
    assert!(warning(&current).is_empty());
}

async fn paths_the_apiextensions_server_does_not_serve_are_plain_404s(env: Env) {
    let crd = definition(
        &env,
        "swans",
        "Swan",
        json!([{"name": "v1", "served": true, "storage": true, "schema": open_schema()}]),
    );
    let typed: CustomResourceDefinition = serde_json::from_value(crd).expect("a CRD");
    env.create_crd(&typed).await;
    let group = format!("{}.example.com", env.ns);
    let plain_404 = |raw: &Raw, path: &str| {
        assert_eq!(raw.code, 404, "{path}: {}", raw.text);
        assert_eq!(raw.text, "404 page not found\n", "{path}");
        assert_eq!(
            raw.headers["content-type"], "text/plain; charset=utf-8",
            "{path}"
        );
    };
    for path in [
        format!("/apis/{group}/v1/nosuchresources"),
        format!("/apis/{group}/v1/namespaces/{}/nosuchresources", env.ns),
        format!("/apis/{group}/v2/namespaces/{}/swans", env.ns),
        // A namespaced kind addressed without its namespace.
        format!("/apis/{group}/v1/swans/a"),
    ] {
        plain_404(&env.raw("GET", &path, "", "").await, &path);
    }
    // A built-in group's handler answers a Status.
    let builtin = env
        .raw("GET", "/apis/apps/v1/nosuchresources", "", "")
        .await;
    assert_status(&builtin, 404, "NotFound");

    // A subresource the version does not have: as if the object were missing.
    let created = env
        .raw(
            "POST",
            &format!("/apis/{group}/v1/namespaces/{}/swans", env.ns),
            "application/json",
            json!({"apiVersion": format!("{group}/v1"), "kind": "Swan", "metadata": {"name": "a"}})
                .to_string(),
        )
        .await;
    assert_eq!(created.code, 201, "{}", created.text);
    let sub = env
        .raw(
            "GET",
            &format!("/apis/{group}/v1/namespaces/{}/swans/a/scale", env.ns),
            "",
            "",
        )
        .await;
    assert_status(&sub, 404, "NotFound");
    assert_eq!(
        sub.body["message"],
        format!("swans.{group} \"a\" not found")
    );
    assert_eq!(
        sub.body["details"],
        json!({"name": "a", "group": group, "kind": "swans"})
    );

    // The OpenAPI v3 handler: a bare 404, and a root kube-apiserver leaves to content sniffing.
    let openapi = env
        .raw("GET", "/openapi/v3/apis/nosuch.example.com/v1", "", "")
        .await;
    assert_eq!(openapi.code, 404);
    assert_eq!(openapi.text, "");
    assert_eq!(openapi.headers.get("content-type"), None);
    let root = env.raw("GET", "/openapi/v3", "", "").await;
    assert_eq!(root.code, 200);
    assert_eq!(root.headers["content-type"], "text/plain; charset=utf-8");
    assert!(root.body["paths"]["api/v1"].is_object(), "{}", root.text);
}

async fn negative_replicas_behind_a_scale_subresource_are_refused_as_the_custom_resource(env: Env) {
    let crd = definition(
        &env,
        "pools",
        "Pool",
        json!([{"name": "v1", "served": true, "storage": true, "schema": open_schema(),
            "subresources": {"status": {}, "scale": {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}}]),
    );
    let typed: CustomResourceDefinition = serde_json::from_value(crd).expect("a CRD");
    env.create_crd(&typed).await;
    let group = format!("{}.example.com", env.ns);
    let pools = format!("/apis/{group}/v1/namespaces/{}/pools", env.ns);
    let pool = |replicas: i64| {
        json!({"apiVersion": format!("{group}/v1"), "kind": "Pool", "metadata": {"name": "a"},
            "spec": {"replicas": replicas}})
        .to_string()
    };
    let refused = env.raw("POST", &pools, "application/json", pool(-1)).await;
    assert_status(&refused, 422, "Invalid");
    assert_eq!(
        refused.body["message"],
        format!(
            "Pool.{group} \"a\" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer"
        )
    );
    let created = env.raw("POST", &pools, "application/json", pool(1)).await;
    assert_eq!(created.code, 201, "{}", created.text);

    let scaled = env
        .raw(
            "PATCH",
            &format!("{pools}/a/scale"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":-3}}"#,
        )
        .await;
    assert_status(&scaled, 422, "Invalid");
    assert_eq!(
        scaled.body["details"],
        json!({"name": "a", "group": group, "kind": "Pool", "causes": [{
            "reason": "FieldValueInvalid",
            "message": "Invalid value: -3: should be a non-negative integer",
            "field": ".spec.replicas",
        }]})
    );
    let status = env
        .raw(
            "PATCH",
            &format!("{pools}/a/status"),
            "application/merge-patch+json",
            r#"{"status":{"replicas":-2}}"#,
        )
        .await;
    assert_status(&status, 422, "Invalid");
    assert_eq!(
        status.body["details"]["causes"][0]["field"],
        ".status.replicas"
    );
}

/// Each managedFields entry as `manager/operation/subresource/has-time` with its fields.
fn entries(obj: &Value) -> Vec<(String, Value)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            (
                format!(
                    "{}/{}/{}/{}",
                    m["manager"].as_str().unwrap_or(""),
                    m["operation"].as_str().unwrap_or(""),
                    m["subresource"].as_str().unwrap_or(""),
                    m.get("time").is_some()
                ),
                m["fieldsV1"].clone(),
            )
        })
        .collect()
}

async fn writes_through_scale_get_a_managed_fields_entry_of_their_own(env: Env) {
    let crd = definition(
        &env,
        "tanks",
        "Tank",
        json!([{"name": "v1", "served": true, "storage": true, "schema": open_schema(),
            "subresources": {"scale": {
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}}]),
    );
    let typed: CustomResourceDefinition = serde_json::from_value(crd).expect("a CRD");
    env.create_crd(&typed).await;
    let group = format!("{}.example.com", env.ns);
    let tanks = format!("/apis/{group}/v1/namespaces/{}/tanks", env.ns);
    let created = env
        .raw(
            "POST",
            &format!("{tanks}?fieldManager=kubectl-create"),
            "application/json",
            json!({"apiVersion": format!("{group}/v1"), "kind": "Tank", "metadata": {"name": "a"},
                "spec": {"replicas": 1}})
            .to_string(),
        )
        .await;
    assert_eq!(created.code, 201, "{}", created.text);
    let scaled = env
        .raw(
            "PATCH",
            &format!("{tanks}/a/scale?fieldManager=scaler"),
            "application/merge-patch+json",
            r#"{"spec":{"replicas":4}}"#,
        )
        .await;
    assert_eq!(scaled.code, 200, "{}", scaled.text);
    assert_eq!(scaled.body["spec"]["replicas"], 4);
    let tank = env.raw("GET", &format!("{tanks}/a"), "", "").await;
    assert_eq!(
        entries(&tank.body),
        vec![
            (
                "scaler/Update/scale/false".to_string(),
                json!({"f:spec": {"f:replicas": {}}})
            ),
            (
                "kubectl-create/Update//true".to_string(),
                json!({"f:spec": {}})
            ),
        ]
    );
}
