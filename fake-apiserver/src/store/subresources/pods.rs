//! The pod subresources that act: `binding` (and the `bindings` collection), `eviction`,
//! `ephemeralcontainers`, and the refusals of the streaming ones (`log`, `exec`, `attach`,
//! `portforward`), which need a kubelet the fake does not have.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult, FieldCause};
use crate::semantics::patch::{PatchKind, apply_patch};
use crate::semantics::selectors::label_selector_selects as selects;
use crate::store::{
    ChangeType, DeleteOptions, ListOptions, Propagation, Store, Stored, Subresource, WriteOptions,
    render,
};

/// What a successful binding or eviction answers with.
pub fn created_status() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

/// What a streaming subresource answers.
#[derive(Debug, PartialEq, Eq)]
pub enum Stream {
    /// `log` of a pod that has no node yet: an empty 204.
    NoContent,
}

impl Store {
    fn pods(&self) -> ApiResult<std::sync::Arc<ResourceType>> {
        self.catalog
            .lookup("", "v1", "pods")
            .ok_or_else(ApiError::unknown_path)
    }

    /// `pods/log`, `exec`, `attach`, `portforward`: the pod must exist and have a node; there is no
    /// kubelet behind any node here, so a pod with one is answered as the node being unreachable.
    pub fn pod_stream(&self, ns: &str, name: &str, sub: &str) -> ApiResult<Stream> {
        let pods = self.pods()?;
        let pod = self.get(&pods, ns, name)?;
        match pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
            None if sub == "log" => Ok(Stream::NoContent),
            None => Err(ApiError::bad_request(format!(
                "pod {name} does not have a host assigned"
            ))),
            Some(node) => Err(ApiError::internal(format!(
                "no kubelet answers for node {node:?}: the fake API server runs no containers"
            ))),
        }
    }

    /// `POST pods/<name>/binding` and `POST bindings`: set the pod's node and its PodScheduled
    /// condition, as the scheduler's bind does. Written as the storage layer does it: no
    /// generation bump, no managedFields entry.
    pub fn bind_pod(
        &mut self,
        ns: &str,
        url_name: Option<&str>,
        binding: &Value,
    ) -> ApiResult<Value> {
        let name = binding["metadata"]["name"].as_str().unwrap_or("");
        if let Some(url_name) = url_name
            && url_name != name
        {
            return Err(ApiError::bad_request(
                "name in URL does not match name in Binding object",
            ));
        }
        let node = binding["target"]["name"].as_str().unwrap_or("");
        if node.is_empty() {
            // kube-apiserver answers this validation failure as an internal error.
            return Err(ApiError::new(500, "", "target.name: Required value"));
        }
        let pods = self.pods()?;
        let key = Store::key(&pods, ns, name);
        let Some(old) = self.objects.get(&key).map(Stored::object) else {
            return Err(ApiError::not_found("", "pods", name));
        };
        if let Some(uid) = binding["metadata"]["uid"]
            .as_str()
            .filter(|u| !u.is_empty())
            && Some(uid) != old["metadata"]["uid"].as_str()
        {
            return Err(ApiError::conflict(
                "",
                "pods/binding",
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    old["metadata"]["uid"].as_str().unwrap_or("")
                ),
            ));
        }
        if old["metadata"]["deletionTimestamp"].is_string() {
            return Err(ApiError::conflict(
                "",
                "pods/binding",
                name,
                &format!("pod {name} is being deleted, cannot be assigned to a host"),
            ));
        }
        if let Some(bound) = old["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
            return Err(ApiError::conflict(
                "",
                "pods/binding",
                name,
                &format!("pod {name} is already assigned to node {bound:?}"),
            ));
        }
        let mut pod = (*old).clone();
        pod["spec"]["nodeName"] = json!(node);
        if let Some(annotations) = binding["metadata"]["annotations"].as_object() {
            for (k, v) in annotations {
                pod["metadata"]["annotations"][k] = v.clone();
            }
        }
        let now = self.clock.now_rfc3339();
        set_condition(
            &mut pod,
            json!({"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": now}),
        );
        self.commit(key, pod, ChangeType::Modified);
        Ok(created_status())
    }

    /// `POST pods/<name>/eviction`: delete the pod unless a PodDisruptionBudget forbids it.
    ///
    /// Without a disruption controller, a budget's numbers are taken from its status when that is
    /// current (a test may play the controller), else counted from the pods as the controller
    /// would for a budget over bare pods.
    pub fn evict_pod(&mut self, ns: &str, name: &str, eviction: &Value) -> ApiResult<Value> {
        let sent = eviction["metadata"]["name"].as_str().unwrap_or("");
        if !sent.is_empty() && sent != name {
            return Err(ApiError::bad_request(
                "name in URL does not match name in Eviction object",
            ));
        }
        let opts = &eviction["deleteOptions"];
        let delete = DeleteOptions {
            dry_run: opts["dryRun"]
                .as_array()
                .is_some_and(|a| a.iter().any(|v| v == "All")),
            propagation: None,
            precondition_uid: opts["preconditions"]["uid"].as_str().map(String::from),
            precondition_rv: opts["preconditions"]["resourceVersion"]
                .as_str()
                .map(String::from),
        };
        let pods = self.pods()?;
        let pod = self.get(&pods, ns, name)?;
        let phase = pod["status"]["phase"].as_str().unwrap_or("");
        let ignore_budgets = matches!(phase, "Succeeded" | "Failed" | "Pending")
            || pod["metadata"]["deletionTimestamp"].is_string();
        if !ignore_budgets {
            let budgets = self.budgets_of(ns, &pod)?;
            if budgets.len() > 1 {
                return Err(ApiError::internal(
                    "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
                ));
            }
            if let Some(pdb) = budgets.first() {
                self.check_budget(ns, pdb, &pod)?;
            }
        }
        if delete.dry_run {
            return Ok(created_status());
        }
        // Like kube-apiserver: mark the pod with DisruptionTarget, then delete it.
        let mut marked = pod.clone();
        let now = self.clock.now_rfc3339();
        set_condition(
            &mut marked,
            json!({"type": "DisruptionTarget", "status": "True", "lastProbeTime": null, "lastTransitionTime": now, "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}),
        );
        // The delete's preconditions are checked before anything is written.
        self.delete(
            &pods,
            ns,
            name,
            &DeleteOptions {
                dry_run: true,
                ..delete.clone()
            },
        )?;
        let key = Store::key(&pods, ns, name);
        self.commit(key, marked, ChangeType::Modified);
        let delete = DeleteOptions {
            propagation: Some(Propagation::Background),
            precondition_rv: None,
            ..delete
        };
        self.delete(&pods, ns, name, &delete)?;
        Ok(created_status())
    }

    /// The PodDisruptionBudgets of the pod's namespace whose selector selects it.
    fn budgets_of(&self, ns: &str, pod: &Value) -> ApiResult<Vec<Value>> {
        let Some(pdbs) = self.catalog.lookup("policy", "v1", "poddisruptionbudgets") else {
            return Ok(Vec::new());
        };
        let labels = pod["metadata"]["labels"].clone();
        Ok(self
            .list(&pdbs, Some(ns), &ListOptions::default())?
            .items
            .into_iter()
            .filter(|pdb| selects(&pdb["spec"]["selector"], &labels))
            .collect())
    }

    fn check_budget(&self, ns: &str, pdb: &Value, _pod: &Value) -> ApiResult<()> {
        let pdb_name = pdb["metadata"]["name"].as_str().unwrap_or("");
        let status = &pdb["status"];
        let current_status = status["observedGeneration"]
            .as_i64()
            .is_some_and(|g| g >= pdb["metadata"]["generation"].as_i64().unwrap_or(0));
        let (allowed, desired, healthy) = if current_status {
            (
                status["disruptionsAllowed"].as_i64().unwrap_or(0),
                status["desiredHealthy"].as_i64().unwrap_or(0),
                status["currentHealthy"].as_i64().unwrap_or(0),
            )
        } else {
            self.count_budget(ns, pdb)?
        };
        if allowed < 0 {
            return Err(ApiError::forbidden(
                "",
                "pods",
                "",
                "pdb disruptions allowed is negative",
            ));
        }
        if allowed == 0 {
            return Err(ApiError {
                details: Some(json!({"causes": [{
                    "reason": "DisruptionBudget",
                    "message": format!("The disruption budget {pdb_name} needs {desired} healthy pods and has {healthy} currently"),
                }]})),
                ..ApiError::new(
                    429,
                    "TooManyRequests",
                    "Cannot evict pod as it would violate the pod's disruption budget.",
                )
            });
        }
        Ok(())
    }

    /// (disruptionsAllowed, desiredHealthy, currentHealthy) as the disruption controller counts
    /// them for a budget over the pods it selects.
    fn count_budget(&self, ns: &str, pdb: &Value) -> ApiResult<(i64, i64, i64)> {
        let pods = self.pods()?;
        let selected: Vec<Value> = self
            .list(&pods, Some(ns), &ListOptions::default())?
            .items
            .into_iter()
            .filter(|p| selects(&pdb["spec"]["selector"], &p["metadata"]["labels"]))
            .collect();
        let expected = selected.len() as i64;
        let healthy = selected
            .iter()
            .filter(|p| {
                !p["metadata"]["deletionTimestamp"].is_string()
                    && p["status"]["phase"] == "Running"
                    && p["status"]["conditions"].as_array().is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    })
            })
            .count() as i64;
        let scaled = |v: &Value, round_up: bool| -> i64 {
            match v {
                Value::String(s) if s.ends_with('%') => {
                    let pct: i64 = s.trim_end_matches('%').parse().unwrap_or(0);
                    let n = expected * pct;
                    if round_up { (n + 99) / 100 } else { n / 100 }
                }
                other => other.as_i64().unwrap_or(0),
            }
        };
        let spec = &pdb["spec"];
        let desired = if !spec["maxUnavailable"].is_null() {
            (expected - scaled(&spec["maxUnavailable"], true)).max(0)
        } else if !spec["minAvailable"].is_null() {
            scaled(&spec["minAvailable"], true)
        } else {
            expected
        };
        Ok(((healthy - desired).max(0), desired, healthy))
    }

    /// `PUT`/`PATCH pods/<name>/ephemeralcontainers`: only `spec.ephemeralContainers` of the
    /// result is written; containers may be added, never changed or removed.
    #[allow(clippy::too_many_arguments)]
    pub fn write_ephemeral_containers(
        &mut self,
        ns: &str,
        name: &str,
        patch: Option<PatchKind>,
        body: Value,
        raw: &[u8],
        opts: &WriteOptions,
    ) -> ApiResult<Value> {
        let pods = self.pods()?;
        let old = self.get(&pods, ns, name)?;
        let sent = match patch {
            Some(kind) => apply_patch(kind, "", "Pod", &old, raw)?,
            None => {
                let body_name = body["metadata"]["name"].as_str().unwrap_or("");
                if body_name != name {
                    return Err(ApiError::bad_request(format!(
                        "the name of the object ({body_name}) does not match the name on the URL ({name})"
                    )));
                }
                body
            }
        };
        let mut wanted: Vec<Value> = sent["spec"]["ephemeralContainers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for c in &mut wanted {
            default_ephemeral_container(c);
        }
        let had: Vec<Value> = old["spec"]["ephemeralContainers"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let causes = check_ephemeral(&old, &had, &wanted);
        if !causes.is_empty() {
            return Err(ApiError::invalid("", "Pod", name, causes));
        }
        let mut pod = old.clone();
        pod["spec"]["ephemeralContainers"] = json!(wanted);
        if let Some(rv) = sent["metadata"]["resourceVersion"].as_str() {
            pod["metadata"]["resourceVersion"] = json!(rv);
        }
        self.update(&pods, ns, name, pod, Subresource::Main, opts)
            .map(|v| render(&pods, &v))
    }
}

fn default_ephemeral_container(c: &mut Value) {
    let Some(m) = c.as_object_mut() else {
        return;
    };
    let image = m.get("image").and_then(Value::as_str).unwrap_or("");
    // The image's tag decides, as SetDefaults_EphemeralContainer does: ":latest" or none pulls always.
    let last = image.rsplit('/').next().unwrap_or("");
    let tag = if image.contains('@') {
        Some("digest")
    } else {
        last.split_once(':').map(|(_, t)| t)
    };
    let policy = match tag {
        None | Some("latest") => "Always",
        _ => "IfNotPresent",
    };
    m.entry("resources").or_insert(json!({}));
    m.entry("terminationMessagePath")
        .or_insert(json!("/dev/termination-log"));
    m.entry("terminationMessagePolicy").or_insert(json!("File"));
    m.entry("imagePullPolicy").or_insert(json!(policy));
}

/// kube-apiserver's checks of an ephemeral containers update, in its words.
fn check_ephemeral(pod: &Value, had: &[Value], wanted: &[Value]) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let mut names: BTreeSet<&str> = BTreeSet::new();
    for list in ["containers", "initContainers"] {
        for c in pod["spec"][list].as_array().into_iter().flatten() {
            names.extend(c["name"].as_str());
        }
    }
    for (i, c) in wanted.iter().enumerate() {
        let field = format!("spec.ephemeralContainers[{i}]");
        let name = c["name"].as_str().unwrap_or("");
        if name.is_empty() {
            causes.push(FieldCause::required(format!("{field}.name"), ""));
        } else if !names.insert(name) {
            causes.push(FieldCause {
                reason: crate::error::CauseReason::Duplicate,
                field: format!("{field}.name"),
                message: format!("Duplicate value: {name:?}"),
            });
        }
        if c["image"].as_str().unwrap_or("").is_empty() {
            causes.push(FieldCause::required(format!("{field}.image"), ""));
        }
        for forbidden in [
            "ports",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "lifecycle",
            "resizePolicy",
        ] {
            if c.get(forbidden).is_some_and(|v| !v.is_null()) {
                causes.push(FieldCause::forbidden(
                    format!("{field}.{forbidden}"),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
    }
    for old in had {
        let name = old["name"].as_str().unwrap_or("");
        match wanted.iter().find(|c| c["name"].as_str() == Some(name)) {
            None => causes.push(FieldCause::forbidden(
                "spec.ephemeralContainers",
                &format!("existing ephemeral containers {name:?} may not be removed\n"),
            )),
            Some(now) if now != old => causes.push(FieldCause::forbidden(
                "spec.ephemeralContainers",
                &format!("existing ephemeral containers {name:?} may not be changed"),
            )),
            Some(_) => {}
        }
    }
    causes
}

/// Add or replace a pod condition by type; the transition time moves only with the status.
fn set_condition(pod: &mut Value, mut condition: Value) {
    if !pod["status"]["conditions"].is_array() {
        pod["status"]["conditions"] = json!([]);
    }
    let Some(list) = pod["status"]["conditions"].as_array_mut() else {
        return;
    };
    match list.iter_mut().find(|c| c["type"] == condition["type"]) {
        Some(existing) => {
            if existing["status"] == condition["status"] {
                condition["lastTransitionTime"] = existing["lastTransitionTime"].clone();
            }
            *existing = condition;
        }
        None => list.push(condition),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match_labels_and_expressions() {
        let labels = json!({"app": "a", "tier": "web"});
        assert!(selects(&json!({}), &labels));
        assert!(!selects(&Value::Null, &labels));
        assert!(selects(&json!({"matchLabels": {"app": "a"}}), &labels));
        assert!(!selects(&json!({"matchLabels": {"app": "b"}}), &labels));
        assert!(selects(
            &json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web"]}]}),
            &labels
        ));
        assert!(!selects(
            &json!({"matchExpressions": [{"key": "x", "operator": "Exists"}]}),
            &labels
        ));
    }

    #[test]
    fn ephemeral_containers_pull_policy_follows_the_tag() {
        for (image, policy) in [
            ("busybox", "Always"),
            ("busybox:latest", "Always"),
            ("busybox:1.36", "IfNotPresent"),
            ("localhost:5000/busybox", "Always"),
        ] {
            let mut c = json!({"name": "d", "image": image});
            default_ephemeral_container(&mut c);
            assert_eq!(c["imagePullPolicy"], policy, "{image}");
        }
    }
}
