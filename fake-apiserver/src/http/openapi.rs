//! OpenAPI v3 documents: `/openapi/v3` lists one document per group/version, each with the schemas
//! of its kinds (from k8s-openapi for built-ins, from the CRD for custom resources) and the paths
//! kubectl inspects. kubectl needs them for `create -f` and `apply -f`, uses the `fieldValidation`
//! parameter on PATCH to decide that the server validates fields, and reads schemas for `explain`.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    DeleteOptions, ListMeta, ObjectMeta, Patch, Status,
};
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

use super::discovery::KUBERNETES_MINOR;
use crate::catalog::{Catalog, ResourceType, SchemaSource};

/// The group/version part of an OpenAPI v3 path: `api/v1` or `apis/<group>/<version>`.
fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// A hash of what a group/version serves, so clients re-fetch a document only when it changed.
fn gv_hash(types: &[std::sync::Arc<ResourceType>]) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for rt in types {
        (&rt.group, &rt.version, &rt.plural, &rt.kind, &rt.crd).hash(&mut h);
        if let SchemaSource::Custom(Some(schema)) = &rt.schema {
            schema.to_string().hash(&mut h);
        }
    }
    format!("{:016X}", h.finish())
}

/// `/openapi/v3`: where each group/version's document is.
pub fn root(catalog: &Catalog) -> Value {
    let mut paths = Map::new();
    let mut gvs: Vec<(String, String)> = catalog
        .types()
        .iter()
        .map(|rt| (rt.group.clone(), rt.version.clone()))
        .collect();
    gvs.dedup();
    for (group, version) in gvs {
        if let Some(types) = catalog.group_version(&group, &version) {
            let path = gv_path(&group, &version);
            let url = format!("/openapi/v3/{path}?hash={}", gv_hash(&types));
            paths.insert(path, json!({"serverRelativeURL": url}));
        }
    }
    json!({"paths": paths})
}

/// The component name of a custom resource's schema, the way the real server names it.
fn custom_schema_name(rt: &ResourceType) -> String {
    let reversed: Vec<&str> = rt.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), rt.version, rt.kind)
}

fn parameter(name: &str, location: &str, description: &str) -> Value {
    json!({"name": name, "in": location, "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn operation(
    rt: &ResourceType,
    verb: &str,
    action: &str,
    schema_ref: &str,
    extra: Vec<Value>,
) -> Value {
    let mut op = json!({
        "operationId": format!("{verb}{}", rt.kind),
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": schema_ref}}}}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
    });
    if !extra.is_empty() {
        op["parameters"] = Value::Array(extra);
    }
    op
}

/// The paths of one kind: collection and item, with the operations the server answers.
fn paths_for(rt: &ResourceType, schema_ref: &str, paths: &mut Map<String, Value>) {
    let base = if rt.group.is_empty() {
        format!("/api/{}", rt.version)
    } else {
        format!("/apis/{}/{}", rt.group, rt.version)
    };
    let prefix = if rt.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", rt.plural)
    } else {
        format!("{base}/{}", rt.plural)
    };
    let field_validation = || {
        parameter(
            "fieldValidation",
            "query",
            "How the server handles unknown or duplicate fields: Ignore, Warn or Strict.",
        )
    };
    let dry_run = || {
        parameter(
            "dryRun",
            "query",
            "When present (All), nothing is persisted.",
        )
    };
    let mut collection = json!({
        "post": operation(rt, "create", "post", schema_ref, vec![dry_run(), field_validation()]),
    });
    if !rt.create_only {
        collection["get"] = operation(rt, "list", "list", schema_ref, vec![]);
        collection["delete"] = operation(
            rt,
            "deletecollection",
            "deletecollection",
            schema_ref,
            vec![dry_run()],
        );
        let item = json!({
            "get": operation(rt, "read", "get", schema_ref, vec![]),
            "put": operation(rt, "replace", "put", schema_ref, vec![dry_run(), field_validation()]),
            "patch": operation(rt, "patch", "patch", schema_ref, vec![dry_run(), field_validation()]),
            "delete": operation(rt, "delete", "delete", schema_ref, vec![dry_run()]),
        });
        paths.insert(format!("{prefix}/{{name}}"), item.clone());
        if rt.status {
            let mut status = item;
            if let Some(m) = status.as_object_mut() {
                m.remove("delete");
            }
            paths.insert(format!("{prefix}/{{name}}/status"), status);
        }
    }
    paths.insert(prefix, collection);
}

const API_VERSION_DOC: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const KIND_DOC: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// A custom resource's schema as published: `apiVersion`, `kind` and `metadata` (a reference to
/// ObjectMeta) replace whatever the CRD says of them.
fn with_type_meta(mut body: Value, object_meta: &Value) -> Value {
    int_or_string_any_of(&mut body);
    if let Some(m) = body.as_object_mut() {
        let props = m
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(props) = props.as_object_mut() {
            props.insert(
                "apiVersion".into(),
                json!({"description": API_VERSION_DOC, "type": "string"}),
            );
            props.insert(
                "kind".into(),
                json!({"description": KIND_DOC, "type": "string"}),
            );
            props.insert(
                "metadata".into(),
                json!({
                    "description": "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
                    "allOf": [{"$ref": object_meta}],
                }),
            );
        }
    }
    body
}

/// kube-apiserver publishes an `x-kubernetes-int-or-string` field with
/// `anyOf: [{type: integer}, {type: string}]` when its schema has no `anyOf` of its own.
fn int_or_string_any_of(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if m.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
                && !m.contains_key("anyOf")
            {
                m.insert(
                    "anyOf".into(),
                    json!([{"type": "integer"}, {"type": "string"}]),
                );
            }
            m.values_mut().for_each(int_or_string_any_of);
        }
        Value::Array(items) => items.iter_mut().for_each(int_or_string_any_of),
        _ => {}
    }
}

/// The schema of a custom resource's list kind, as kube-apiserver publishes it.
fn list_schema(rt: &ResourceType, item: &str, list_meta: &Value) -> Value {
    json!({
        "description": format!("{} is a list of {}", rt.list_kind, rt.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": API_VERSION_DOC, "type": "string"},
            "items": {
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", rt.plural),
                "type": "array",
                "items": {"$ref": format!("#/components/schemas/{item}")},
            },
            "kind": {"description": KIND_DOC, "type": "string"},
            "metadata": {
                "description": "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                "allOf": [{"$ref": list_meta}],
            },
        },
    })
}

/// The OpenAPI v3 document of one group/version, or None if it is not served.
pub fn document(catalog: &Catalog, group: &str, version: &str) -> Option<Value> {
    let types = catalog.group_version(group, version)?;
    let mut generator = SchemaSettings::openapi3().into_generator();
    let mut custom = Map::new();
    let mut paths = Map::new();
    let mut gvk_of: Vec<(String, &ResourceType)> = Vec::new();
    for rt in &types {
        let name = match &rt.schema {
            SchemaSource::Builtin(schema) => {
                let reference = schema(&mut generator);
                let r = reference
                    .get("$ref")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                r.rsplit('/').next().unwrap_or("").to_string()
            }
            SchemaSource::Custom(schema) => {
                let name = custom_schema_name(rt);
                let body = schema.as_deref().cloned().unwrap_or_else(
                    || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
                );
                // Like apiextensions-apiserver: TypeMeta and ObjectMeta described (kubectl
                // explain follows metadata to ObjectMeta), and a schema of the list kind.
                let object_meta = generator.subschema_for::<ObjectMeta>();
                let list_meta = generator.subschema_for::<ListMeta>();
                let reference =
                    |s: &schemars::Schema| s.as_value().get("$ref").cloned().unwrap_or(Value::Null);
                let refs = BTreeMap::from([
                    ("ObjectMeta", reference(&object_meta)),
                    ("ListMeta", reference(&list_meta)),
                ]);
                custom.insert(name.clone(), with_type_meta(body, &refs["ObjectMeta"]));
                custom.insert(
                    format!("{name}List"),
                    list_schema(rt, &name, &refs["ListMeta"]),
                );
                name
            }
        };
        gvk_of.push((name.clone(), rt));
        paths_for(rt, &format!("#/components/schemas/{name}"), &mut paths);
    }
    // A CRD group's document is built by apiextensions-apiserver, with its own title and the
    // apimachinery kinds its operations answer or take.
    let info = if types.iter().all(|rt| rt.crd.is_some()) {
        generator.subschema_for::<DeleteOptions>();
        generator.subschema_for::<Patch>();
        generator.subschema_for::<Status>();
        json!({"title": "Kubernetes CRD Swagger", "version": "v0.1.0"})
    } else {
        json!({"title": "Kubernetes", "version": format!("1.{KUBERNETES_MINOR}")})
    };
    let mut schemas = generator.take_definitions(true);
    schemas.extend(custom);
    for (name, rt) in gvk_of {
        if let Some(s) = schemas.get_mut(&name).and_then(Value::as_object_mut) {
            s.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([{"group": rt.group, "version": rt.version, "kind": rt.kind}]),
            );
        }
        if rt.crd.is_some()
            && let Some(s) = schemas
                .get_mut(&format!("{name}List"))
                .and_then(Value::as_object_mut)
        {
            s.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([{"group": rt.group, "version": rt.version, "kind": rt.list_kind}]),
            );
        }
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": info,
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}
