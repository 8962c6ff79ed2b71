//! What operations run with: the environment and its cluster, the scenario's namespace, the
//! kinds found through discovery, the watches the scenario opened, and the lookups several
//! operations share. An operation with `cluster: <worker>` runs with that worker's cluster in
//! place of the manager's ([`Context::target`]).

use std::collections::HashMap;
use std::sync::Arc;

use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::discovery::{ApiCapabilities, Scope};
use serde_json::Value;

use super::naming::{is_pattern, name_matches, object_label};
use super::watches::ScenarioWatch;
use crate::cluster::Cluster;
use crate::world::World;

pub struct Context<'a> {
    /// The whole world (the manager and its workers).
    pub env: &'a dyn World,
    /// The cluster the running operation addresses: the manager's, or a worker's.
    pub cluster: Arc<dyn Cluster>,
    /// The worker the running operation addresses; `None` for the manager.
    target: Option<String>,
    /// For namespaced objects that name none.
    namespace: &'a str,
    /// By cluster (`None`: the manager), apiVersion and kind.
    kinds: HashMap<(Option<String>, String, String), (ApiResource, ApiCapabilities)>,
    /// The scenario's `watch`es, in the order they started.
    pub watches: Vec<ScenarioWatch>,
    /// Asserts do not compare instants (`lastTransitionTime: "2026-01-01T00:10:00Z"`): under
    /// chaos, faults move when things happen, and an assert that waits for an instant that will
    /// not come would hold the run back while the world's own timers run on.
    pub any_instant: bool,
}

impl<'a> Context<'a> {
    pub fn new(env: &'a dyn World, namespace: &'a str) -> Self {
        Context {
            env,
            cluster: env.cluster(),
            target: None,
            namespace,
            kinds: HashMap::new(),
            watches: Vec::new(),
            any_instant: false,
        }
    }

    /// Address the worker `worker` (`None`: the manager) until told otherwise.
    pub fn target(&mut self, worker: Option<&str>) -> Result<(), String> {
        self.cluster = match worker {
            None => self.env.cluster(),
            Some(w) => self.env.worker(w).map_err(|e| e.to_string())?.cluster(),
        };
        self.target = worker.map(str::to_string);
        Ok(())
    }

    /// The world of the addressed cluster: its components.
    pub fn world(&self) -> Result<&'a dyn World, String> {
        match &self.target {
            None => Ok(self.env),
            Some(w) => self.env.worker(w).map_err(|e| e.to_string()),
        }
    }

    /// The API resource of an object's kind, from discovery (cached).
    pub async fn resource(
        &mut self,
        obj: &Value,
    ) -> Result<(ApiResource, ApiCapabilities), String> {
        let api_version = obj["apiVersion"].as_str().unwrap_or_default().to_string();
        let kind = obj["kind"].as_str().unwrap_or_default().to_string();
        let key = (self.target.clone(), api_version.clone(), kind.clone());
        if let Some(found) = self.kinds.get(&key) {
            return Ok(found.clone());
        }
        let (group, version) = match api_version.split_once('/') {
            Some((g, v)) => (g.to_string(), v.to_string()),
            None => (String::new(), api_version.clone()),
        };
        let gvk = kube::api::GroupVersionKind::gvk(&group, &version, &kind);
        let found = kube::discovery::pinned_kind(&self.cluster.client(), &gvk)
            .await
            .map_err(|e| format!("the cluster does not serve {api_version} {kind}: {e}"))?;
        self.kinds.insert(key, found.clone());
        Ok(found)
    }

    /// An `Api` for the object's kind and namespace (the scenario's namespace when it names none),
    /// and the object with that namespace filled in.
    pub async fn api_for(&mut self, obj: &Value) -> Result<(Api<DynamicObject>, Value), String> {
        let (ar, caps) = self.resource(obj).await?;
        let client = self.cluster.client();
        let mut obj = obj.clone();
        if caps.scope == Scope::Cluster {
            return Ok((Api::all_with(client, &ar), obj));
        }
        let ns = obj["metadata"]["namespace"]
            .as_str()
            .unwrap_or(self.namespace)
            .to_string();
        obj["metadata"]["namespace"] = Value::String(ns.clone());
        Ok((Api::namespaced_with(client, &ns, &ar), obj))
    }

    /// A write names one object: a name pattern (`job-sample-*`) becomes the name of the one
    /// object of its kind and namespace that matches it.
    pub async fn resolve_name(
        &self,
        api: &Api<DynamicObject>,
        obj: &mut Value,
    ) -> Result<(), String> {
        let Some(pattern) = obj["metadata"]["name"].as_str().filter(|n| is_pattern(n)) else {
            return Ok(());
        };
        let pattern = pattern.to_string();
        let names: Vec<String> = api
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .filter(|n| name_matches(&pattern, n))
            .collect();
        match &names[..] {
            [name] => {
                obj["metadata"]["name"] = Value::String(name.clone());
                Ok(())
            }
            [] => Err(format!("{}: no object matches the name", object_label(obj))),
            many => Err(format!(
                "{}: the name matches {} objects ({}); a write needs one",
                object_label(obj),
                many.len(),
                many.join(", ")
            )),
        }
    }

    /// Scenarios cannot know uids in advance: an ownerReference without one gets the uid of the
    /// owner it names, looked up in the object's namespace.
    pub async fn fill_owner_uids(&mut self, obj: &mut Value) -> Result<(), String> {
        let namespace = obj["metadata"]["namespace"].clone();
        let refs = obj
            .get_mut("metadata")
            .and_then(|m| m.get_mut("ownerReferences"))
            .and_then(Value::as_array_mut);
        let Some(refs) = refs else {
            return Ok(());
        };
        for owner_ref in refs.iter_mut().filter(|r| r.get("uid").is_none()) {
            let mut owner = serde_json::json!({
                "apiVersion": owner_ref["apiVersion"],
                "kind": owner_ref["kind"],
                "metadata": {"name": owner_ref["name"]},
            });
            if namespace.is_string() {
                owner["metadata"]["namespace"] = namespace.clone();
            }
            let (api, owner) = self.api_for(&owner).await?;
            let name = owner["metadata"]["name"].as_str().unwrap_or_default();
            let found = api
                .get_opt(name)
                .await
                .map_err(|e| e.to_string())?
                .ok_or_else(|| {
                    format!(
                        "ownerReferences: the owner {} does not exist, so its uid is unknown",
                        object_label(&owner)
                    )
                })?;
            owner_ref["uid"] = found.metadata.uid.map(Value::String).unwrap_or(Value::Null);
        }
        Ok(())
    }

    /// Labels and uids of the objects matching `obj` (by name, or by kind and labels) that exist.
    pub async fn present(&mut self, obj: &Value) -> Result<Vec<(String, String)>, String> {
        let (_, found) = self.find(obj).await?;
        Ok(found
            .iter()
            .map(|o| {
                let uid = o["metadata"]["uid"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                (object_label(o), uid)
            })
            .collect())
    }

    /// The objects `obj` names: the one called `metadata.name`, or without a name every object of
    /// its kind that has its labels. Also returns `obj` with its namespace filled in.
    pub async fn find(&mut self, obj: &Value) -> Result<(Value, Vec<Value>), String> {
        let (api, mut obj) = self.api_for(obj).await?;
        if let Some(pattern) = obj["metadata"]["name"].as_str().filter(|n| is_pattern(n)) {
            // Every object of the kind whose name matches; the pattern itself matches no field.
            let pattern = pattern.to_string();
            if let Some(meta) = obj["metadata"].as_object_mut() {
                meta.remove("name");
            }
            let found = api
                .list(&label_selector(&obj))
                .await
                .map_err(|e| e.to_string())?
                .items
                .iter()
                .filter(|o| name_matches(&pattern, o.metadata.name.as_deref().unwrap_or_default()))
                .map(to_value)
                .collect();
            return Ok((obj, found));
        }
        let found = match obj["metadata"]["name"].as_str() {
            Some(name) => api
                .get_opt(name)
                .await
                .map_err(|e| e.to_string())?
                .iter()
                .map(to_value)
                .collect(),
            None => api
                .list(&label_selector(&obj))
                .await
                .map_err(|e| e.to_string())?
                .items
                .iter()
                .map(to_value)
                .collect(),
        };
        Ok((obj, found))
    }

    /// Start a watch called `name` of a kind, in one namespace or all; it must be the only one of
    /// that name.
    pub async fn start_watch(
        &mut self,
        name: &str,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Result<(), String> {
        if self.watches.iter().any(|x| x.name == name) {
            return Err(format!("a watch named {name} is already running"));
        }
        let (ar, caps) = self.resource(&kind_probe(api_version, kind)).await?;
        let client = self.cluster.client();
        let api = match (namespace, caps.scope) {
            (Some(ns), Scope::Namespaced) => Api::namespaced_with(client, ns, &ar),
            _ => Api::all_with(client, &ar),
        };
        self.watches
            .push(ScenarioWatch::start(name.to_string(), ar.kind.clone(), api).await?);
        Ok(())
    }
}

/// An object naming only a kind, to look the kind up or to fill in before `find`.
pub fn kind_probe(api_version: &str, kind: &str) -> Value {
    serde_json::json!({"apiVersion": api_version, "kind": kind, "metadata": {}})
}

fn label_selector(obj: &Value) -> ListParams {
    let labels = obj["metadata"]["labels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    if labels.is_empty() {
        ListParams::default()
    } else {
        ListParams::default().labels(&labels)
    }
}

fn to_value(obj: &DynamicObject) -> Value {
    serde_json::to_value(obj).unwrap_or(Value::Null)
}

/// The object without the bookkeeping nobody asserts on.
pub fn without_noise(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(meta) = obj["metadata"].as_object_mut() {
        meta.remove("managedFields");
    }
    obj
}

pub fn to_yaml(v: &Value) -> String {
    serde_yaml::to_string(v).unwrap_or_else(|e| format!("(cannot show as YAML: {e})"))
}
