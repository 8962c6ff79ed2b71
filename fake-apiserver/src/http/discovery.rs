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
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": format!("{}", KUBERNETES_MINOR.parse::<u32>().unwrap_or(1) - 1),
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
        if rt.scale.is_some() {
            list.push(json!({
                "name": format!("{}/scale", rt.plural),
                "singularName": "",
                "namespaced": rt.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
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

/// The media type of aggregated discovery, which kubectl and kube-rs ask for first.
pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
const AGGREGATED_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";

/// Which aggregated discovery version an Accept header asks for, if any (the first acceptable one).
pub fn wants_aggregated(accept: &str) -> Option<&'static str> {
    for choice in accept.split(',') {
        let params: Vec<&str> = choice.split(';').map(str::trim).collect();
        let has = |p: &str| params.contains(&p);
        if has("g=apidiscovery.k8s.io") && has("as=APIGroupDiscoveryList") {
            if has("v=v2") {
                return Some(AGGREGATED_V2);
            }
            if has("v=v2beta1") {
                return Some(AGGREGATED_V2BETA1);
            }
        }
    }
    None
}

fn gvk(rt: &ResourceType) -> Value {
    json!({"group": rt.group, "version": rt.version, "kind": rt.kind})
}

fn resource_discovery(rt: &ResourceType) -> Value {
    let mut r = json!({
        "resource": rt.plural,
        "responseKind": gvk(rt),
        "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": rt.singular,
        "verbs": rt.verbs(),
    });
    if !rt.short_names.is_empty() {
        r["shortNames"] = json!(rt.short_names);
    }
    if !rt.categories.is_empty() {
        r["categories"] = json!(rt.categories);
    }
    let mut subresources = Vec::new();
    if rt.status {
        subresources.push(json!({"subresource": "status", "responseKind": gvk(rt), "verbs": ["get", "patch", "update"]}));
    }
    if rt.scale.is_some() {
        subresources.push(json!({
            "subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": ["get", "patch", "update"],
        }));
    }
    if !subresources.is_empty() {
        r["subresources"] = Value::Array(subresources);
    }
    r
}

/// `APIGroupDiscoveryList` for the core group (`core == true`, at `/api`) or every other group (`/apis`).
pub fn aggregated(catalog: &Catalog, core: bool, media_type: &str) -> Value {
    let version = if media_type == AGGREGATED_V2 {
        "v2"
    } else {
        "v2beta1"
    };
    let mut items: Vec<Value> = Vec::new();
    let groups: Vec<(String, Vec<String>)> = if core {
        vec![(String::new(), vec!["v1".to_string()])]
    } else {
        catalog
            .groups()
            .into_iter()
            .map(|g| (g.name, g.versions))
            .collect()
    };
    for (group, versions) in groups {
        let versions: Vec<Value> = versions
            .iter()
            .filter_map(|v| {
                let types = catalog.group_version(&group, v)?;
                let resources: Vec<Value> = types.iter().map(|rt| resource_discovery(rt)).collect();
                Some(json!({"version": v, "resources": resources, "freshness": "Current"}))
            })
            .collect();
        let metadata = if group.is_empty() {
            json!({})
        } else {
            json!({"name": group})
        };
        items.push(json!({"metadata": metadata, "versions": versions}));
    }
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}
