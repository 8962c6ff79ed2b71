//! The OpenAPI v3 document of a CRD's group, as kubectl explain and client-go read it: the kind's
//! schema with apiVersion, kind and metadata (a reference to ObjectMeta), int-or-string fields
//! with their `anyOf`, the list kind's schema, and the apimachinery kinds the operations use.

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::{Value, json};

use super::{EVENTUALLY, Env, dual};

dual!(a_crd_kind_is_published_with_type_meta_and_its_list_kind);

async fn a_crd_kind_is_published_with_type_meta_and_its_list_kind(env: Env) {
    let group = format!("{}.example.com", env.ns);
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("docs.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "docs", "kind": "Doc"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "description": "A document.",
                "properties": {"spec": {"type": "object", "properties": {
                    "port": {"x-kubernetes-int-or-string": true},
                    "size": {"type": "integer"},
                }}},
            }}}],
        },
    }))
    .expect("a CRD");
    env.create_crd(&crd).await;
    let reversed: Vec<&str> = group.split('.').rev().collect();
    let name = format!("{}.v1.Doc", reversed.join("."));
    let path = format!("/openapi/v3/apis/{group}/v1");
    // kube-apiserver publishes a new CRD's document asynchronously.
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    let document = loop {
        let raw = env.raw("GET", &path, "", "").await;
        if raw.body["components"]["schemas"].get(&name).is_some()
            || tokio::time::Instant::now() > deadline
        {
            break raw.body;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        document["info"],
        json!({"title": "Kubernetes CRD Swagger", "version": "v0.1.0"})
    );
    let schemas = &document["components"]["schemas"];
    let doc = &schemas[&name];
    let props = &doc["properties"];
    assert_eq!(
        props["metadata"]["allOf"],
        json!([{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]),
        "{doc}"
    );
    assert!(
        props["apiVersion"]["description"]
            .as_str()
            .unwrap_or("")
            .starts_with("APIVersion defines the versioned schema"),
        "{doc}"
    );
    assert_eq!(props["kind"]["type"], "string", "{doc}");
    assert_eq!(
        props["spec"]["properties"]["port"],
        json!({"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]})
    );
    assert_eq!(
        doc["x-kubernetes-group-version-kind"],
        json!([{"group": group, "kind": "Doc", "version": "v1"}])
    );
    let list = &schemas[&format!("{name}List")];
    assert_eq!(list["description"], "DocList is a list of Doc", "{list}");
    assert_eq!(list["required"], json!(["items"]));
    assert_eq!(
        list["properties"]["items"]["items"],
        json!({"$ref": format!("#/components/schemas/{name}")})
    );
    assert_eq!(
        list["properties"]["metadata"]["allOf"],
        json!([{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"}])
    );
    assert_eq!(
        list["x-kubernetes-group-version-kind"],
        json!([{"group": group, "kind": "DocList", "version": "v1"}])
    );
    for meta in ["ObjectMeta", "ListMeta", "DeleteOptions", "Patch", "Status"] {
        let key = format!("io.k8s.apimachinery.pkg.apis.meta.v1.{meta}");
        assert!(schemas.get(&key).is_some_and(Value::is_object), "{key}");
    }
}
