//! Discovery documents: `/version`, `/api`, `/apis`, `/apis/<group>`, the resource lists, and
//! aggregated discovery (`apidiscovery.k8s.io/v2`).
//!
//! What kube-apiserver says about its built-in kinds (group order, verbs, short names,
//! categories, subresources with their verbs and kinds, storage version hashes) is data,
//! `discovery.jsonl`: one group a line, as kube-apiserver's aggregated discovery lists it, each
//! resource with the `storageVersionHash` of its legacy list. The legacy lists are derived from it.
//! Custom resources are described from their CRDs, as the apiextensions server does. To
//! regenerate the data from a reference control plane: for each item of `/api` and `/apis` asked
//! with `Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList` whose group
//! is no CRD's, write `{"group": <name or "">, "versions": <versions without freshness>}`, with
//! each resource's `storageVersionHash` copied from `/api/v1` or `/apis/<group>/<version>`.

use std::sync::OnceLock;

use base64::Engine;
use serde_json::{Value, json};

use crate::catalog::{Catalog, GroupInfo, ResourceType};
use crate::error::ApiError;
use crate::store::Store;

/// The Kubernetes version this server claims: the newest that k8s-openapi describes.
pub const KUBERNETES_MINOR: &str = "37";
/// The exact release the fake emulates: the reference control plane's (`control-plane`).
pub const KUBERNETES_VERSION: &str = "v1.37.2";

/// `/version`. The fake claims exactly the release it emulates, with no pre-release suffix:
/// semver checks (`>=1.37.0`, as Helm charts' `kubeVersion` and operators write them) would
/// refuse `v1.37.0-tollgate`. What tells it apart is `gitCommit`, all zeros, the one field
/// that names a build rather than a release; the build fields are those of the reference
/// (`buildDate` of an unstamped build, its Go version), the platform the host's.
pub fn version() -> Value {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    json!({
        "major": "1",
        "minor": KUBERNETES_MINOR,
        "emulationMajor": "1",
        "emulationMinor": KUBERNETES_MINOR,
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": format!("{}", KUBERNETES_MINOR.parse::<u32>().unwrap_or(1) - 1),
        "gitVersion": KUBERNETES_VERSION,
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "go1.26.8",
        "compiler": "gc",
        "platform": format!("{}/{arch}", std::env::consts::OS),
    })
}

pub fn core_versions() -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1:6443"}],
    })
}

/// One built-in group of the captured discovery data.
struct BuiltinGroup {
    name: String,
    /// Versions in kube-apiserver's order (the preferred first), each with its resources in
    /// aggregated form plus `storageVersionHash`.
    versions: Vec<(String, Vec<Value>)>,
}

fn builtin_groups() -> &'static [BuiltinGroup] {
    static GROUPS: OnceLock<Vec<BuiltinGroup>> = OnceLock::new();
    GROUPS.get_or_init(|| {
        include_str!("discovery.jsonl")
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .map(|g| BuiltinGroup {
                name: g["group"].as_str().unwrap_or("").to_string(),
                versions: g["versions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|v| {
                        let resources = v["resources"].as_array().cloned().unwrap_or_default();
                        (v["version"].as_str().unwrap_or("").to_string(), resources)
                    })
                    .collect(),
            })
            .collect()
    })
}

fn builtin_version(group: &str, version: &str) -> Option<&'static [Value]> {
    builtin_groups()
        .iter()
        .find(|g| g.name == group)?
        .versions
        .iter()
        .find(|(v, _)| v == version)
        .map(|(_, r)| r.as_slice())
}

/// Served groups without the core group, in kube-apiserver's order: the built-in groups by their
/// priority, then the CRDs' groups by name.
fn ordered_groups(catalog: &Catalog) -> Vec<GroupInfo> {
    let rank = |name: &str| {
        builtin_groups()
            .iter()
            .position(|g| g.name == name)
            .unwrap_or(usize::MAX)
    };
    let mut groups = catalog.groups();
    groups.sort_by(|a, b| {
        rank(&a.name)
            .cmp(&rank(&b.name))
            .then_with(|| a.name.cmp(&b.name))
    });
    groups
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
    let groups: Vec<Value> = ordered_groups(catalog)
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

/// The answer to a discovery path naming a group or version not served: a built-in group's
/// handler answers a NotFound Status, any other path is kube-apiserver's plain-text 404.
pub fn not_served(group: &str) -> ApiError {
    if builtin_groups().iter().any(|g| g.name == group) {
        ApiError::unknown_path()
    } else {
        ApiError::page_not_found()
    }
}

/// The verbs of a custom resource, in the apiextensions server's order.
fn crd_verbs() -> Value {
    json!([
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "create",
        "update",
        "watch"
    ])
}

/// `storageVersionHash`: the first 8 bytes of the SHA-256 of the storage version's
/// `group/version/kind`, in base64, as kube-apiserver computes it.
fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{group}/{version}/{kind}").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

/// The storage version of a custom resource's CRD (which need not be served).
fn crd_storage_version(store: &Store, rt: &ResourceType) -> String {
    let crd = rt.crd.as_deref().and_then(|name| {
        let crds =
            store
                .catalog()
                .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")?;
        store.get(&crds, "", name).ok()
    });
    crd.and_then(|crd| {
        crd["spec"]["versions"]
            .as_array()?
            .iter()
            .find(|v| v["storage"] == true)?["name"]
            .as_str()
            .map(String::from)
    })
    .unwrap_or_else(|| rt.version.clone())
}

/// A built-in resource's legacy entries (the resource, then its subresources) from its
/// aggregated form.
fn legacy_entries(r: &Value, list: &mut Vec<Value>) {
    let namespaced = r["scope"] == "Namespaced";
    let mut entry = json!({
        "name": r["resource"],
        "singularName": r["singularResource"],
        "namespaced": namespaced,
        "kind": r["responseKind"]["kind"],
        "verbs": r["verbs"],
    });
    for key in ["shortNames", "categories", "storageVersionHash"] {
        if let Some(v) = r.get(key) {
            entry[key] = v.clone();
        }
    }
    list.push(entry);
    for s in r["subresources"].as_array().into_iter().flatten() {
        let kind = &s["responseKind"];
        let mut entry = json!({
            "name": format!("{}/{}", r["resource"].as_str().unwrap_or(""), s["subresource"].as_str().unwrap_or("")),
            "singularName": "",
            "namespaced": namespaced,
        });
        for key in ["group", "version"] {
            if kind[key].as_str().is_some_and(|s| !s.is_empty()) {
                entry[key] = kind[key].clone();
            }
        }
        entry["kind"] = kind["kind"].clone();
        entry["verbs"] = s["verbs"].clone();
        list.push(entry);
    }
}

pub fn resources(store: &Store, group: &str, version: &str) -> Option<Value> {
    let catalog = store.catalog();
    let types = catalog.group_version(group, version)?;
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    if let Some(builtin) = builtin_version(group, version) {
        let mut list = Vec::new();
        for r in builtin {
            let plural = r["resource"].as_str().unwrap_or("");
            if catalog.lookup(group, version, plural).is_some() {
                legacy_entries(r, &mut list);
            }
        }
        let mut doc = json!({"kind": "APIResourceList", "groupVersion": gv, "resources": list});
        // Only the core group's list (`/api/v1`) is written without an apiVersion.
        if !group.is_empty() {
            doc["apiVersion"] = json!("v1");
        }
        return Some(doc);
    }
    let mut list = Vec::new();
    for rt in &types {
        let mut r = json!({
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": crd_verbs(),
        });
        if !rt.short_names.is_empty() {
            r["shortNames"] = json!(rt.short_names);
        }
        if !rt.categories.is_empty() {
            r["categories"] = json!(rt.categories);
        }
        let storage = crd_storage_version(store, rt);
        r["storageVersionHash"] = json!(storage_version_hash(&rt.group, &storage, &rt.kind));
        list.push(r);
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
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}),
    )
}

/// The media type of aggregated discovery, which kubectl and kube-rs ask for first.
pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn aggregated_choice(choice: &str) -> Option<bool> {
    let params: Vec<&str> = choice.split(';').map(str::trim).collect();
    let has = |p: &str| params.contains(&p);
    (has("g=apidiscovery.k8s.io") && has("as=APIGroupDiscoveryList")).then(|| has("v=v2"))
}

/// Whether an Accept header asks for aggregated discovery (v2; kube-apiserver 1.37 no longer
/// serves v2beta1, whose requests get the legacy document when they offer it).
pub fn wants_aggregated(accept: &str) -> Option<&'static str> {
    accept
        .split(',')
        .any(|choice| aggregated_choice(choice) == Some(true))
        .then_some(AGGREGATED_V2)
}

/// kube-apiserver's 406 for an Accept header of discovery that offers only aggregated discovery
/// versions it does not serve.
pub fn not_acceptable(accept: &str) -> Option<ApiError> {
    let all_unserved = !accept.trim().is_empty()
        && accept
            .split(',')
            .all(|choice| aggregated_choice(choice) == Some(false));
    all_unserved.then(|| {
        ApiError::new(
            406,
            "NotAcceptable",
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
        )
    })
}

fn gvk(rt: &ResourceType) -> Value {
    json!({"group": rt.group, "version": rt.version, "kind": rt.kind})
}

/// A custom resource as aggregated discovery lists it.
fn crd_resource_discovery(rt: &ResourceType) -> Value {
    let mut r = json!({
        "resource": rt.plural,
        "responseKind": gvk(rt),
        "scope": if rt.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": rt.singular,
        "verbs": crd_verbs(),
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

/// The resources of one served group/version in aggregated form.
fn version_resources(catalog: &Catalog, group: &str, version: &str) -> Option<Vec<Value>> {
    let types = catalog.group_version(group, version)?;
    Some(match builtin_version(group, version) {
        Some(builtin) => builtin
            .iter()
            .filter(|r| {
                let plural = r["resource"].as_str().unwrap_or("");
                catalog.lookup(group, version, plural).is_some()
            })
            .map(|r| {
                let mut r = r.clone();
                if let Some(m) = r.as_object_mut() {
                    m.remove("storageVersionHash");
                }
                r
            })
            .collect(),
        None => types.iter().map(|rt| crd_resource_discovery(rt)).collect(),
    })
}

/// `APIGroupDiscoveryList` for the core group (`core == true`, at `/api`) or every other group (`/apis`).
pub fn aggregated(catalog: &Catalog, core: bool) -> Value {
    let groups: Vec<GroupInfo> = if core {
        vec![GroupInfo {
            name: String::new(),
            versions: vec!["v1".to_string()],
        }]
    } else {
        ordered_groups(catalog)
    };
    let items: Vec<Value> = groups
        .iter()
        .map(|g| {
            let versions: Vec<Value> = g
                .versions
                .iter()
                .filter_map(|v| {
                    let resources = version_resources(catalog, &g.name, v)?;
                    Some(json!({"version": v, "resources": resources, "freshness": "Current"}))
                })
                .collect();
            let metadata = if g.name.is_empty() {
                json!({})
            } else {
                json!({"name": g.name})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_version_hashes_are_kube_apiservers() {
        // Values kube-apiserver 1.37.2 lists for configmaps and a Kueue CRD.
        assert_eq!(storage_version_hash("", "v1", "ConfigMap"), "qFsyl6wFWjQ=");
        assert_eq!(
            storage_version_hash("kueue.x-k8s.io", "v1beta2", "AdmissionCheck"),
            "nDNWsR6h/qo="
        );
    }

    /// The captured data describes exactly the built-in kinds the fake serves.
    #[test]
    fn discovery_data_covers_the_served_builtins() {
        let catalog = Catalog::builtin();
        for rt in catalog.types() {
            assert!(
                builtin_version(&rt.group, &rt.version)
                    .is_some_and(|rs| rs.iter().any(|r| r["resource"] == rt.plural.as_str())),
                "{}/{} {} is not in discovery.jsonl",
                rt.group,
                rt.version,
                rt.plural
            );
        }
    }

    #[test]
    fn v2beta1_alone_is_not_acceptable() {
        let beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
        assert!(wants_aggregated(beta).is_none());
        assert!(not_acceptable(beta).is_some());
        assert!(not_acceptable(&format!("{beta},application/json")).is_none());
        assert_eq!(
            wants_aggregated(&format!("{beta},{AGGREGATED_V2}")),
            Some(AGGREGATED_V2)
        );
    }
}
