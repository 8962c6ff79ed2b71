//! Discovery documents: `/version`, `/api`, `/apis`, `/apis/<group>`, and the resource lists.

use serde_json::{Value, json};

use crate::catalog::{Catalog, ResourceType};

/// The Kubernetes version this server claims: the newest that k8s-openapi describes.
pub const KUBERNETES_MINOR: &str = "37";

pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": KUBERNETES_MINOR,
        "emulationMajor": "1",
        "emulationMinor": KUBERNETES_MINOR,
        "gitVersion": format!("v1.{KUBERNETES_MINOR}.0-tollgate"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

pub fn core_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}],
    })
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({
        "name": name,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(gv).unwrap_or(Value::Null),
    })
}

pub fn groups(catalog: &Catalog) -> Value {
    let groups: Vec<Value> = catalog
        .groups()
        .iter()
        .map(|g| group_json(&g.name, &g.versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub fn group(catalog: &Catalog, name: &str) -> Option<Value> {
    catalog
        .groups()
        .into_iter()
        .find(|g| g.name == name)
        .map(|g| {
            let mut v = group_json(&g.name, &g.versions);
            v["kind"] = json!("APIGroup");
            v["apiVersion"] = json!("v1");
            v
        })
}

fn resource_json(rt: &ResourceType) -> Value {
    let mut r = json!({
        "name": rt.plural,
        "singularName": rt.singular,
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": rt.verbs(),
    });
    if !rt.short_names.is_empty() {
        r["shortNames"] = json!(rt.short_names);
    }
    if !rt.categories.is_empty() {
        r["categories"] = json!(rt.categories);
    }
    r
}

pub fn resources(catalog: &Catalog, group: &str, version: &str) -> Option<Value> {
    let types = catalog.group_version(group, version)?;
    let mut list = Vec::new();
    for rt in &types {
        list.push(resource_json(rt));
        if rt.status {
            list.push(json!({
                "name": format!("{}/status", rt.plural),
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}),
    )
}
