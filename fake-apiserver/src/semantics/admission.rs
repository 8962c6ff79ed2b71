//! What kube-apiserver's built-in mutating admission plugins and registry strategies write into
//! an object after the writer's fields are recorded (so never in managedFields): a Pod's service
//! account and its token volume (ServiceAccount), its priority (Priority), the two 300 s NoExecute
//! tolerations (DefaultTolerationSeconds) and its Pending status; a Namespace's name label,
//! finalizer and phase; the fields Go's JSON encoder always writes for Nodes and Events.

use std::sync::Arc;

use serde_json::{Map, Value, json};

/// Which write is being admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
}

/// The objects admission may read.
pub trait Cluster {
    fn get(&self, group: &str, plural: &str, ns: &str, name: &str) -> Option<Arc<Value>>;
    fn list(&self, group: &str, plural: &str) -> Vec<Arc<Value>>;
}

/// An admission plugin's refusal: kube-apiserver answers it 403 Forbidden.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

pub struct AdmitCtx<'a> {
    pub op: Operation,
    /// The stored object an update replaces.
    pub old: Option<&'a Value>,
    pub uid: &'a str,
    pub cluster: &'a dyn Cluster,
}

pub type Admit = fn(&mut Value, &AdmitCtx<'_>) -> Result<(), Refused>;

/// Where the ServiceAccount admission plugin mounts the token volume.
const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

pub fn admit_pod(pod: &mut Value, ctx: &AdmitCtx<'_>) -> Result<(), Refused> {
    if ctx.op == Operation::Create {
        // Mirror pods (made by a kubelet from a static manifest) skip the service account.
        if pod["metadata"]["annotations"]
            .get("kubernetes.io/config.mirror")
            .is_none()
        {
            service_account(pod, ctx)?;
        }
        priority(pod, ctx)?;
    } else if let Some(old) = ctx.old {
        // The priority admission gave on create is kept by an update that leaves it out.
        let spec = spec_mut(pod);
        for field in ["priority", "preemptionPolicy"] {
            if spec.get(field).is_none_or(Value::is_null)
                && let Some(v) = old["spec"].get(field)
            {
                spec.insert(field.into(), v.clone());
            }
        }
    }
    default_tolerations(pod);
    if ctx.op == Operation::Create {
        let qos = qos_class(pod);
        pod["status"] = json!({"phase": "Pending", "qosClass": qos});
    }
    Ok(())
}

fn spec_mut(pod: &mut Value) -> &mut Map<String, Value> {
    if !pod["spec"].is_object() {
        pod["spec"] = json!({});
    }
    match pod["spec"].as_object_mut() {
        Some(m) => m,
        None => unreachable!("just made an object"),
    }
}

fn service_account(pod: &mut Value, ctx: &AdmitCtx<'_>) -> Result<(), Refused> {
    let ns = pod["metadata"]["namespace"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let spec = spec_mut(pod);
    let name = match spec.get("serviceAccountName").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => "default".to_string(),
    };
    let Some(sa) = ctx.cluster.get("", "serviceaccounts", &ns, &name) else {
        return Err(Refused(format!(
            "error looking up service account {ns}/{name}: serviceaccount \"{name}\" not found"
        )));
    };
    spec.insert("serviceAccountName".into(), json!(name));
    spec.insert("serviceAccount".into(), json!(name));
    // The pod's own setting wins over its service account's; both default to mounting.
    let automount = spec
        .get("automountServiceAccountToken")
        .or_else(|| sa.get("automountServiceAccountToken"))
        .and_then(Value::as_bool)
        .unwrap_or(true);
    if !automount {
        return Ok(());
    }
    let volume = format!("kube-api-access-{}", suffix_from(ctx.uid));
    let mut mounted = false;
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            let mounts = c.entry("volumeMounts").or_insert_with(|| json!([]));
            let Some(mounts) = mounts.as_array_mut() else {
                continue;
            };
            // A container that mounts something at the token path keeps its own.
            if mounts
                .iter()
                .any(|m| m["mountPath"].as_str() == Some(TOKEN_MOUNT_PATH))
            {
                continue;
            }
            mounts.push(json!({"name": volume, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH}));
            mounted = true;
        }
    }
    if mounted {
        let volumes = spec.entry("volumes").or_insert_with(|| json!([]));
        if let Some(volumes) = volumes.as_array_mut() {
            volumes.push(token_volume(&volume));
        }
    }
    Ok(())
}

/// The projected volume the ServiceAccount plugin adds: a bound token, the cluster CA and the
/// namespace.
fn token_volume(name: &str) -> Value {
    json!({
        "name": name,
        "projected": {
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
            "defaultMode": 420,
        },
    })
}

/// Five characters of the alphabet generated names use, derived from the pod's uid: random-looking
/// like kube-apiserver's, without drawing from the store's generator (which names objects).
fn suffix_from(uid: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in uid.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    (0..5)
        .map(|i| {
            let n = (h >> (i * 8)) as usize % ALPHABET.len();
            char::from(ALPHABET[n])
        })
        .collect()
}

fn priority(pod: &mut Value, ctx: &AdmitCtx<'_>) -> Result<(), Refused> {
    let spec = spec_mut(pod);
    let class_name = spec
        .get("priorityClassName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let class = if class_name.is_empty() {
        // The cluster's globalDefault class, if any, names the pod's priority.
        let default = ctx
            .cluster
            .list("scheduling.k8s.io", "priorityclasses")
            .into_iter()
            .filter(|pc| pc["globalDefault"] == json!(true))
            .min_by_key(|pc| pc["value"].as_i64().unwrap_or(0));
        if let Some(pc) = &default {
            spec.insert("priorityClassName".into(), pc["metadata"]["name"].clone());
        }
        default
    } else {
        let found = ctx
            .cluster
            .get("scheduling.k8s.io", "priorityclasses", "", &class_name);
        if found.is_none() {
            return Err(Refused(format!(
                "no PriorityClass with name {class_name} was found"
            )));
        }
        found
    };
    let value = class
        .as_ref()
        .and_then(|pc| pc["value"].as_i64())
        .unwrap_or(0);
    let policy = class
        .as_ref()
        .and_then(|pc| pc.get("preemptionPolicy").cloned())
        .unwrap_or_else(|| json!("PreemptLowerPriority"));
    if let Some(given) = spec.get("priority").and_then(Value::as_i64)
        && given != value
    {
        return Err(Refused(format!(
            "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
        )));
    }
    spec.insert("priority".into(), json!(value));
    if let Some(given) = spec.get("preemptionPolicy").and_then(Value::as_str)
        && Some(given) != policy.as_str()
    {
        return Err(Refused(format!(
            "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {} from the given PriorityClass name",
            policy.as_str().unwrap_or("")
        )));
    }
    spec.insert("preemptionPolicy".into(), policy);
    Ok(())
}

/// DefaultTolerationSeconds: tolerate a not-ready or unreachable node for 300 s unless the pod
/// already tolerates that NoExecute taint (a toleration with no key or no effect counts).
fn default_tolerations(pod: &mut Value) {
    let spec = spec_mut(pod);
    let existing = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let tolerates = |key: &str| {
        existing.iter().any(|t| {
            let k = t["key"].as_str().unwrap_or("");
            let effect = t["effect"].as_str().unwrap_or("");
            (k.is_empty() || k == key) && (effect.is_empty() || effect == "NoExecute")
        })
    };
    let mut added = Vec::new();
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        if !tolerates(key) {
            added.push(json!({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}));
        }
    }
    if added.is_empty() {
        return;
    }
    let mut all = existing;
    all.extend(added);
    spec.insert("tolerations".into(), Value::Array(all));
}

/// The pod's QoS class from its containers' requests and limits.
pub fn qos_class(pod: &Value) -> &'static str {
    let containers = pod["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut any = false;
    let mut guaranteed = !containers.is_empty();
    for c in &containers {
        let requests = c["resources"]["requests"].as_object();
        let limits = c["resources"]["limits"].as_object();
        if requests.is_some_and(|r| !r.is_empty()) || limits.is_some_and(|l| !l.is_empty()) {
            any = true;
        }
        for res in ["cpu", "memory"] {
            let limit = limits.and_then(|l| l.get(res));
            let request = requests.and_then(|r| r.get(res)).or(limit);
            if limit.is_none() || request != limit {
                guaranteed = false;
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// The Namespace strategy: the name label is forced back on every write (also for a generated
/// name, which the decode-time default could not know), `spec.finalizers` and the Active phase
/// on create.
pub fn admit_namespace(ns: &mut Value, ctx: &AdmitCtx<'_>) -> Result<(), Refused> {
    let name = ns["metadata"]["name"].clone();
    if !ns["metadata"]["labels"].is_object() {
        ns["metadata"]["labels"] = json!({});
    }
    ns["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
    if ctx.op == Operation::Create {
        if !ns["spec"].is_object() {
            ns["spec"] = json!({});
        }
        if ns["spec"].get("finalizers").is_none() {
            ns["spec"]["finalizers"] = json!(["kubernetes"]);
        }
        ns["status"] = json!({"phase": "Active"});
    }
    Ok(())
}

/// Go writes a Node's status structs without `omitempty`: an empty kubelet endpoint and node info.
pub fn admit_node(node: &mut Value, _: &AdmitCtx<'_>) -> Result<(), Refused> {
    if !node["status"].is_object() {
        node["status"] = json!({});
    }
    let Some(status) = node["status"].as_object_mut() else {
        return Ok(());
    };
    status
        .entry("daemonEndpoints")
        .or_insert_with(|| json!({"kubeletEndpoint": {"Port": 0}}));
    let info = status.entry("nodeInfo").or_insert_with(|| json!({}));
    if let Some(info) = info.as_object_mut() {
        for key in [
            "machineID",
            "systemUUID",
            "bootID",
            "kernelVersion",
            "osImage",
            "containerRuntimeVersion",
            "kubeletVersion",
            "kubeProxyVersion",
            "operatingSystem",
            "architecture",
        ] {
            info.entry(key).or_insert_with(|| json!(""));
        }
    }
    Ok(())
}

/// Go writes a core/v1 Event's source, timestamps (null when unset) and reporting fields without
/// `omitempty`.
pub fn admit_event(event: &mut Value, _: &AdmitCtx<'_>) -> Result<(), Refused> {
    if let Some(m) = event.as_object_mut() {
        m.entry("source").or_insert_with(|| json!({}));
        m.entry("firstTimestamp").or_insert(Value::Null);
        m.entry("lastTimestamp").or_insert(Value::Null);
        m.entry("eventTime").or_insert(Value::Null);
        m.entry("reportingComponent").or_insert_with(|| json!(""));
        m.entry("reportingInstance").or_insert_with(|| json!(""));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Empty;
    impl Cluster for Empty {
        fn get(&self, group: &str, plural: &str, _: &str, name: &str) -> Option<Arc<Value>> {
            (group.is_empty() && plural == "serviceaccounts" && name == "default")
                .then(|| Arc::new(json!({"metadata": {"name": "default"}})))
        }
        fn list(&self, _: &str, _: &str) -> Vec<Arc<Value>> {
            Vec::new()
        }
    }

    fn create(pod: &mut Value) -> Result<(), Refused> {
        admit_pod(
            pod,
            &AdmitCtx {
                op: Operation::Create,
                old: None,
                uid: "u",
                cluster: &Empty,
            },
        )
    }

    #[test]
    fn a_pod_gets_the_default_service_account_token_priority_and_tolerations() {
        let mut pod =
            json!({"metadata": {"namespace": "n"}, "spec": {"containers": [{"name": "c"}]}});
        create(&mut pod).unwrap();
        let spec = &pod["spec"];
        assert_eq!(spec["serviceAccountName"], "default");
        assert_eq!(spec["priority"], 0);
        assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority");
        assert_eq!(spec["tolerations"].as_array().map(Vec::len), Some(2));
        let volume = spec["volumes"][0]["name"].as_str().unwrap();
        assert!(volume.starts_with("kube-api-access-") && volume.len() == 21);
        assert_eq!(spec["containers"][0]["volumeMounts"][0]["name"], volume);
    }

    #[test]
    fn a_toleration_of_everything_needs_no_defaults() {
        let mut pod = json!({"metadata": {"namespace": "n"}, "spec": {"automountServiceAccountToken": false, "tolerations": [{"operator": "Exists"}], "containers": [{"name": "c"}]}});
        create(&mut pod).unwrap();
        assert_eq!(pod["spec"]["tolerations"], json!([{"operator": "Exists"}]));
        assert!(pod["spec"].get("volumes").is_none());
    }

    #[test]
    fn a_missing_service_account_or_class_is_refused() {
        let mut pod = json!({"metadata": {"namespace": "n"}, "spec": {"serviceAccountName": "x", "containers": []}});
        assert!(
            create(&mut pod)
                .unwrap_err()
                .0
                .contains("serviceaccount \"x\" not found")
        );
        let mut pod = json!({"metadata": {"namespace": "n"}, "spec": {"priorityClassName": "p", "containers": []}});
        assert_eq!(
            create(&mut pod).unwrap_err().0,
            "no PriorityClass with name p was found"
        );
    }
}
