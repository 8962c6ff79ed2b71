//! OpenAPI v3 documents: `/openapi/v3` lists one document per group/version, each with the schemas
//! of its kinds (from k8s-openapi for built-ins, from the CRD for custom resources) and the paths
//! kubectl inspects. kubectl needs them for `create -f` and `apply -f`, uses the `fieldValidation`
//! parameter on PATCH to decide that the server validates fields, and reads schemas for `explain`.

use std::hash::{Hash, Hasher};

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
                custom.insert(name.clone(), body);
                name
            }
        };
        gvk_of.push((name.clone(), rt));
        paths_for(rt, &format!("#/components/schemas/{name}"), &mut paths);
    }
    let mut schemas = generator.take_definitions(true);
    schemas.extend(custom);
    for (name, rt) in gvk_of {
        if let Some(s) = schemas.get_mut(&name).and_then(Value::as_object_mut) {
            s.insert(
                "x-kubernetes-group-version-kind".into(),
                json!([{"group": rt.group, "version": rt.version, "kind": rt.kind}]),
            );
        }
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{KUBERNETES_MINOR}.0")},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}
