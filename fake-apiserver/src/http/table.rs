//! `meta.k8s.io` Table answers, which `kubectl get` asks for: the columns kube-apiserver prints
//! for each built-in kind, a CRD's `additionalPrinterColumns`, and kube-apiserver's default
//! columns for everything else.
//!
//! The column definitions of built-in kinds (names, types, formats, priorities and the
//! descriptions kube-apiserver takes from the fields' documentation) are data,
//! `table_columns.jsonl`, dumped from a reference kube-apiserver; the cells are computed here,
//! one function per column, as kube-apiserver's printers compute them. To regenerate the data
//! (after `discovery.jsonl`, see `discovery.rs`), list each resource of `discovery.jsonl` with
//! `limit=1` and `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` and write one line
//! `{"group","version","resource","columns": <columnDefinitions>}` per resource.

use std::collections::HashMap;
use std::sync::OnceLock;

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::catalog::ResourceType;
use crate::error::ApiError;

/// What `includeObject` asks each row to carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Include {
    None,
    Metadata,
    Object,
}

/// How a Table is asked for: its version (`meta.k8s.io/v1` or `v1beta1`) and `includeObject`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableOptions {
    pub beta: bool,
    pub include: Include,
}

/// Whether the first media type of an Accept header asks for a Table: `Some(Ok(beta))` for a
/// version kube-apiserver serves, `Some(Err(_))` for another version (or none), which
/// kube-apiserver refuses unless a later media type fits.
pub fn requested(accept: &str) -> Option<Result<bool, ApiError>> {
    let first = accept.split(',').next()?;
    let params: Vec<&str> = first.split(';').map(str::trim).collect();
    if !params.contains(&"as=Table") {
        return None;
    }
    Some(
        match (
            params.contains(&"g=meta.k8s.io"),
            params.iter().find_map(|p| p.strip_prefix("v=")),
        ) {
            (true, Some("v1")) => Ok(false),
            (true, Some("v1beta1")) => Ok(true),
            _ => Err(ApiError::new(
                406,
                "NotAcceptable",
                "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            )),
        },
    )
}

impl TableOptions {
    /// The options of a Table request with this `includeObject` parameter (absent or empty:
    /// Metadata); an unknown value is kube-apiserver's 400.
    pub fn new(beta: bool, include_object: Option<&str>) -> Result<Self, ApiError> {
        let include = match include_object.unwrap_or("") {
            "" | "Metadata" => Include::Metadata,
            "None" => Include::None,
            "Object" => Include::Object,
            other => {
                return Err(ApiError::bad_request(format!(
                    "Unable to convert to Table as requested: includeObject: Invalid value: \"{other}\": must be 'Metadata', 'Object', 'None', or empty"
                )));
            }
        };
        Ok(TableOptions { beta, include })
    }

    fn api_version(self) -> &'static str {
        if self.beta {
            "meta.k8s.io/v1beta1"
        } else {
            "meta.k8s.io/v1"
        }
    }
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            beta: false,
            include: Include::Metadata,
        }
    }
}

/// The captured column definitions, by group and resource.
fn captured() -> &'static HashMap<(String, String), Vec<Value>> {
    static COLUMNS: OnceLock<HashMap<(String, String), Vec<Value>>> = OnceLock::new();
    COLUMNS.get_or_init(|| {
        include_str!("table_columns.jsonl")
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .map(|v| {
                let key = (
                    v["group"].as_str().unwrap_or("").to_string(),
                    v["resource"].as_str().unwrap_or("").to_string(),
                );
                let columns = v["columns"].as_array().cloned().unwrap_or_default();
                (key, columns)
            })
            .collect()
    })
}

fn column_description(group: &str, resource: &str, column: &str) -> Value {
    captured()
        .get(&(group.to_string(), resource.to_string()))
        .and_then(|cols| cols.iter().find(|c| c["name"] == column))
        .map_or(json!(""), |c| c["description"].clone())
}

/// ObjectMeta's `name` and `creationTimestamp` documentation, which kube-apiserver gives the Name
/// and Age columns of every kind.
fn name_description() -> Value {
    column_description("", "configmaps", "Name")
}

fn age_description() -> Value {
    column_description("", "configmaps", "Age")
}

type Cell = fn(&Value, Timestamp) -> Value;

fn name(o: &Value, _: Timestamp) -> Value {
    o["metadata"]["name"].clone()
}

fn age(o: &Value, now: Timestamp) -> Value {
    json!(human_age(&o["metadata"]["creationTimestamp"], now))
}

fn created_at(o: &Value, _: Timestamp) -> Value {
    o["metadata"]["creationTimestamp"].clone()
}

/// A string field, or "" when unset (Go's zero value).
fn text(v: &Value) -> Value {
    json!(v.as_str().unwrap_or(""))
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn count(v: &Value) -> usize {
    v.as_object().map_or(0, |m| m.len()) + v.as_array().map_or(0, Vec::len)
}

fn items(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}

fn or_none(v: &Value) -> Value {
    match v.as_str() {
        Some(s) if !s.is_empty() => json!(s),
        _ => json!("<none>"),
    }
}

fn none_if_empty(s: String) -> Value {
    if s.is_empty() {
        json!("<none>")
    } else {
        json!(s)
    }
}

fn has_condition(o: &Value, kind: &str) -> Option<bool> {
    items(&o["status"]["conditions"])
        .iter()
        .find(|c| c["type"] == kind)
        .map(|c| c["status"] == "True")
}

/// `labels.FormatLabels`: `a=b,c=d` in key order, `<none>` when empty.
fn format_labels(labels: &Value) -> Value {
    let mut pairs: Vec<String> = labels
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default();
    pairs.sort();
    none_if_empty(pairs.join(","))
}

/// `metav1.FormatLabelSelector`: the selector's requirements in key order, `<none>` when empty.
fn format_selector(selector: &Value) -> Value {
    let mut reqs: Vec<(String, String)> = Vec::new();
    if let Some(m) = selector["matchLabels"].as_object() {
        for (k, v) in m {
            reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
        }
    }
    for e in items(&selector["matchExpressions"]) {
        let key = e["key"].as_str().unwrap_or("");
        let mut values: Vec<&str> = items(&e["values"])
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let values = values.join(",");
        let req = match e["operator"].as_str().unwrap_or("") {
            "In" => format!("{key} in ({values})"),
            "NotIn" => format!("{key} notin ({values})"),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key.to_string(), req));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    none_if_empty(
        reqs.into_iter()
            .map(|(_, r)| r)
            .collect::<Vec<_>>()
            .join(","),
    )
}

fn joined(list: &Value, field: &str) -> Value {
    json!(
        items(list)
            .iter()
            .map(|c| c[field].as_str().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// The Containers and Images columns of a pod template's spec.
fn containers_of(spec: &Value) -> Value {
    joined(&spec["containers"], "name")
}

fn images_of(spec: &Value) -> Value {
    joined(&spec["containers"], "image")
}

/// "ready/desired" replicas, as Deployments and StatefulSets show them.
fn ready_of_replicas(o: &Value, _: Timestamp) -> Value {
    json!(format!(
        "{}/{}",
        int(&o["status"]["readyReplicas"]),
        int(&o["spec"]["replicas"])
    ))
}

/// `kubectl`'s short human durations: 45s, 5m, 3h, 2d, 1y.
pub fn human_age(created: &Value, now: Timestamp) -> String {
    let Some(t) = created.as_str().and_then(|s| s.parse::<Timestamp>().ok()) else {
        return "<unknown>".into();
    };
    let secs = now.duration_since(t).as_secs().max(0);
    let with = |big: i64, unit: &str, small: i64, small_unit: &str| {
        if small == 0 {
            format!("{big}{unit}")
        } else {
            format!("{big}{unit}{small}{small_unit}")
        }
    };
    let (minutes, hours) = (secs / 60, secs / 3600);
    let days = hours / 24;
    match secs {
        s if s < 120 => format!("{s}s"),
        _ if minutes < 10 => with(minutes, "m", secs % 60, "s"),
        _ if minutes < 180 => format!("{minutes}m"),
        _ if hours < 8 => with(hours, "h", minutes % 60, "m"),
        _ if hours < 48 => format!("{hours}h"),
        _ if hours < 24 * 8 => with(days, "d", hours % 24, "h"),
        _ if days < 365 * 2 => format!("{days}d"),
        _ if days < 365 * 8 => with(days / 365, "y", days % 365, "d"),
        _ => format!("{}y", days / 365),
    }
}

/// A pod's Ready, Status and Restarts cells, computed together as kube-apiserver's printer does.
fn pod_summary(o: &Value, now: Timestamp) -> (String, String, String) {
    let status = &o["status"];
    let init_specs = items(&o["spec"]["initContainers"]);
    let sidecar = |name: &Value| {
        init_specs
            .iter()
            .any(|c| &c["name"] == name && c["restartPolicy"] == "Always")
    };
    let total = items(&o["spec"]["containers"]).len()
        + init_specs
            .iter()
            .filter(|c| c["restartPolicy"] == "Always")
            .count();
    let mut ready = 0;
    let mut restarts = 0;
    let mut sidecar_restarts = 0;
    let mut last_restart: Option<Timestamp> = None;
    let mut sidecar_last_restart: Option<Timestamp> = None;
    let finished = |c: &Value| {
        c["lastState"]["terminated"]["finishedAt"]
            .as_str()
            .and_then(|t| t.parse::<Timestamp>().ok())
    };
    let mut reason = status["phase"].as_str().unwrap_or("").to_string();
    if let Some(r) = status["reason"].as_str().filter(|r| !r.is_empty()) {
        reason = r.to_string();
    }
    if items(&status["conditions"])
        .iter()
        .any(|c| c["type"] == "PodScheduled" && c["reason"] == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }
    let mut initializing = false;
    for (i, c) in items(&status["initContainerStatuses"]).iter().enumerate() {
        restarts += int(&c["restartCount"]);
        if let Some(t) = finished(c) {
            last_restart = last_restart.max(Some(t));
        }
        if sidecar(&c["name"]) {
            sidecar_restarts += int(&c["restartCount"]);
            if let Some(t) = finished(c) {
                sidecar_last_restart = sidecar_last_restart.max(Some(t));
            }
            if c["started"] == true {
                if c["ready"] == true {
                    ready += 1;
                }
                continue;
            }
        }
        let terminated = &c["state"]["terminated"];
        let waiting = c["state"]["waiting"]["reason"].as_str().unwrap_or("");
        if terminated.is_object() && int(&terminated["exitCode"]) == 0 {
            continue;
        }
        reason = if terminated.is_object() {
            match terminated["reason"].as_str().filter(|r| !r.is_empty()) {
                Some(r) => format!("Init:{r}"),
                None if int(&terminated["signal"]) != 0 => {
                    format!("Init:Signal:{}", int(&terminated["signal"]))
                }
                None => format!("Init:ExitCode:{}", int(&terminated["exitCode"])),
            }
        } else if !waiting.is_empty() && waiting != "PodInitializing" {
            format!("Init:{waiting}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }
    if !initializing || has_condition(o, "Initialized") == Some(true) {
        restarts = sidecar_restarts;
        last_restart = sidecar_last_restart;
        let mut running = false;
        for c in items(&status["containerStatuses"]).iter().rev() {
            restarts += int(&c["restartCount"]);
            if let Some(t) = finished(c) {
                last_restart = last_restart.max(Some(t));
            }
            let state = &c["state"];
            let terminated = &state["terminated"];
            if let Some(r) = state["waiting"]["reason"]
                .as_str()
                .filter(|r| !r.is_empty())
            {
                reason = r.to_string();
            } else if let Some(r) = terminated["reason"].as_str().filter(|r| !r.is_empty()) {
                reason = r.to_string();
            } else if terminated.is_object() {
                reason = if int(&terminated["signal"]) != 0 {
                    format!("Signal:{}", int(&terminated["signal"]))
                } else {
                    format!("ExitCode:{}", int(&terminated["exitCode"]))
                };
            } else if c["ready"] == true && state["running"].is_object() {
                running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && running {
            reason = if has_condition(o, "Ready") == Some(true) {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }
    let deleting = o["metadata"]["deletionTimestamp"].is_string();
    let phase = status["phase"].as_str().unwrap_or("");
    if deleting && status["reason"] == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".into();
    }
    let restarts = match last_restart {
        Some(t) => format!("{restarts} ({} ago)", human_age(&json!(t.to_string()), now)),
        None => restarts.to_string(),
    };
    (format!("{ready}/{total}"), reason, restarts)
}

fn pod_readiness_gates(o: &Value, _: Timestamp) -> Value {
    let gates = items(&o["spec"]["readinessGates"]);
    if gates.is_empty() {
        return json!("<none>");
    }
    let met = gates
        .iter()
        .filter(|g| {
            items(&o["status"]["conditions"])
                .iter()
                .any(|c| c["type"] == g["conditionType"] && c["status"] == "True")
        })
        .count();
    json!(format!("{met}/{}", gates.len()))
}

fn node_status(o: &Value, _: Timestamp) -> Value {
    let mut status = match has_condition(o, "Ready") {
        Some(true) => vec!["Ready"],
        Some(false) => vec!["NotReady"],
        None => vec!["Unknown"],
    };
    if o["spec"]["unschedulable"] == true {
        status.push("SchedulingDisabled");
    }
    json!(status.join(","))
}

fn node_roles(o: &Value, _: Timestamp) -> Value {
    let mut roles: Vec<&str> = o["metadata"]["labels"]
        .as_object()
        .map(|l| {
            l.iter()
                .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
                    Some(role) => Some(role),
                    None if k == "kubernetes.io/role" => v.as_str(),
                    None => None,
                })
                .filter(|r| !r.is_empty())
                .collect()
        })
        .unwrap_or_default();
    roles.sort_unstable();
    roles.dedup();
    none_if_empty(roles.join(","))
}

fn node_address(o: &Value, kind: &str) -> Value {
    let found = items(&o["status"]["addresses"])
        .iter()
        .find(|a| a["type"] == kind)
        .map(|a| a["address"].clone());
    or_none(&found.unwrap_or(Value::Null))
}

fn node_info(o: &Value, field: &str) -> Value {
    match o["status"]["nodeInfo"][field].as_str() {
        Some(s) if !s.is_empty() => json!(s),
        _ => json!("<unknown>"),
    }
}

/// Event cells read both the core form and events.k8s.io/v1's names for the same fields.
fn event_field<'a>(o: &'a Value, core: &str, events_v1: &str) -> &'a Value {
    if o[core].is_null() {
        &o[events_v1]
    } else {
        &o[core]
    }
}

fn event_first_seen(o: &Value, now: Timestamp) -> Value {
    let first = event_field(o, "firstTimestamp", "deprecatedFirstTimestamp");
    let at = if first.is_string() {
        first
    } else {
        &o["eventTime"]
    };
    json!(human_age(at, now))
}

fn event_last_seen(o: &Value, now: Timestamp) -> Value {
    if let Some(t) = o["series"]["lastObservedTime"].as_str() {
        return json!(human_age(&json!(t), now));
    }
    let last = event_field(o, "lastTimestamp", "deprecatedLastTimestamp");
    if last.is_string() {
        json!(human_age(last, now))
    } else {
        event_first_seen(o, now)
    }
}

fn event_object(o: &Value, _: Timestamp) -> Value {
    let involved = event_field(o, "involvedObject", "regarding");
    let kind = involved["kind"].as_str().unwrap_or("").to_lowercase();
    match involved["name"].as_str().filter(|n| !n.is_empty()) {
        Some(n) => json!(format!("{kind}/{n}")),
        None => json!(kind),
    }
}

fn event_source(o: &Value, _: Timestamp) -> Value {
    let source = event_field(o, "source", "deprecatedSource");
    let pick = |a: &Value, b: &Value| {
        a.as_str()
            .filter(|s| !s.is_empty())
            .or(b.as_str())
            .unwrap_or("")
            .to_string()
    };
    let component = pick(&source["component"], &o["reportingController"]);
    let instance = pick(&source["host"], &o["reportingInstance"]);
    if instance.is_empty() {
        json!(component)
    } else {
        json!(format!("{component}, {instance}"))
    }
}

fn event_count(o: &Value, _: Timestamp) -> Value {
    if o["series"].is_object() {
        return json!(int(&o["series"]["count"]));
    }
    match int(event_field(o, "count", "deprecatedCount")) {
        0 => json!(1),
        n => json!(n),
    }
}

fn job_status(o: &Value, _: Timestamp) -> Value {
    let has = |t: &str| has_condition(o, t) == Some(true);
    let status = if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if o["metadata"]["deletionTimestamp"].is_string() {
        "Terminating"
    } else if has("Suspended") {
        "Suspended"
    } else if has("FailureTarget") {
        "FailureTarget"
    } else if has("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    json!(status)
}

fn job_completions(o: &Value, _: Timestamp) -> Value {
    let done = int(&o["status"]["succeeded"]);
    match o["spec"]["completions"].as_i64() {
        Some(n) => json!(format!("{done}/{n}")),
        None => json!(format!(
            "{done}/1 of {}",
            o["spec"]["parallelism"].as_i64().unwrap_or(1)
        )),
    }
}

/// How long a job ran (or has been running): completion minus start, or now minus start.
fn job_duration(o: &Value, now: Timestamp) -> Value {
    let Some(start) = o["status"]["startTime"]
        .as_str()
        .and_then(|s| s.parse::<Timestamp>().ok())
    else {
        return json!("");
    };
    let end = o["status"]["completionTime"]
        .as_str()
        .and_then(|s| s.parse::<Timestamp>().ok())
        .unwrap_or(now);
    json!(human_age(&json!(start.to_string()), end))
}

fn service_external_ip(o: &Value, _: Timestamp) -> Value {
    let external: Vec<&str> = items(&o["spec"]["externalIPs"])
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match o["spec"]["type"].as_str().unwrap_or("") {
        "ClusterIP" | "NodePort" => none_if_empty(external.join(",")),
        "LoadBalancer" => {
            let mut ips: Vec<&str> = items(&o["status"]["loadBalancer"]["ingress"])
                .iter()
                .filter_map(|i| {
                    i["ip"]
                        .as_str()
                        .filter(|s| !s.is_empty())
                        .or(i["hostname"].as_str())
                })
                .collect();
            if ips.is_empty() && external.is_empty() {
                return json!("<pending>");
            }
            ips.extend(external);
            json!(ips.join(","))
        }
        "ExternalName" => text(&o["spec"]["externalName"]),
        _ => json!("<unknown>"),
    }
}

fn service_ports(o: &Value, _: Timestamp) -> Value {
    let ports: Vec<String> = items(&o["spec"]["ports"])
        .iter()
        .map(|p| {
            let protocol = p["protocol"].as_str().unwrap_or("TCP");
            match int(&p["nodePort"]) {
                0 => format!("{}/{protocol}", int(&p["port"])),
                node => format!("{}:{node}/{protocol}", int(&p["port"])),
            }
        })
        .collect();
    none_if_empty(ports.join(","))
}

/// The Users, Groups and ServiceAccounts of a (Cluster)RoleBinding's subjects.
fn subjects(o: &Value, kind: &str) -> Value {
    let names: Vec<String> = items(&o["subjects"])
        .iter()
        .filter(|s| s["kind"] == kind)
        .map(|s| {
            let name = s["name"].as_str().unwrap_or("");
            match s["namespace"].as_str().filter(|ns| !ns.is_empty()) {
                Some(ns) if kind == "ServiceAccount" => format!("{ns}/{name}"),
                _ => name.to_string(),
            }
        })
        .collect();
    json!(names.join(", "))
}

fn endpoints(o: &Value, _: Timestamp) -> Value {
    let mut list = Vec::new();
    for subset in items(&o["subsets"]) {
        let ports = items(&subset["ports"]);
        for address in items(&subset["addresses"]) {
            let ip = address["ip"].as_str().unwrap_or("");
            if ports.is_empty() {
                list.push(ip.to_string());
            }
            for p in ports {
                list.push(format!("{ip}:{}", int(&p["port"])));
            }
        }
    }
    let shown = list.len().min(3);
    let mut s = list[..shown].join(",");
    if list.len() > 3 {
        s.push_str(&format!(" + {} more...", list.len() - 3));
    }
    none_if_empty(s)
}

fn crd_versions(o: &Value, _: Timestamp) -> Value {
    let versions: Vec<String> = items(&o["spec"]["versions"])
        .iter()
        .map(|v| {
            let name = v["name"].as_str().unwrap_or("");
            if v["storage"] == true {
                format!("{name}(storage)")
            } else {
                name.to_string()
            }
        })
        .collect();
    json!(versions.join(","))
}

/// The cells of a built-in kind's columns, in kube-apiserver's order, each with its column's
/// name; `None` for kinds printed with kube-apiserver's default columns (Name, Created At).
fn builtin_cells(group: &str, resource: &str) -> Option<Vec<(&'static str, Cell)>> {
    Some(match (group, resource) {
        ("", "pods") => vec![
            ("Name", name),
            ("Ready", |o, now| json!(pod_summary(o, now).0)),
            ("Status", |o, now| json!(pod_summary(o, now).1)),
            ("Restarts", |o, now| json!(pod_summary(o, now).2)),
            ("Age", age),
            ("IP", |o, _| or_none(&o["status"]["podIP"])),
            ("Node", |o, _| or_none(&o["spec"]["nodeName"])),
            ("Nominated Node", |o, _| {
                or_none(&o["status"]["nominatedNodeName"])
            }),
            ("Readiness Gates", pod_readiness_gates),
        ],
        ("", "configmaps") => vec![
            ("Name", name),
            ("Data", |o, _| {
                json!(count(&o["data"]) + count(&o["binaryData"]))
            }),
            ("Age", age),
        ],
        ("", "secrets") => vec![
            ("Name", name),
            ("Type", |o, _| text(&o["type"])),
            ("Data", |o, _| json!(count(&o["data"]))),
            ("Age", age),
        ],
        ("", "namespaces") => vec![
            ("Name", name),
            ("Status", |o, _| text(&o["status"]["phase"])),
            ("Age", age),
        ],
        ("", "serviceaccounts") => vec![("Name", name), ("Age", age)],
        ("", "services") => vec![
            ("Name", name),
            ("Type", |o, _| text(&o["spec"]["type"])),
            ("Cluster-IP", |o, _| or_none(&o["spec"]["clusterIP"])),
            ("External-IP", service_external_ip),
            ("Port(s)", service_ports),
            ("Age", age),
            ("Selector", |o, _| format_labels(&o["spec"]["selector"])),
        ],
        ("", "endpoints") => vec![("Name", name), ("Endpoints", endpoints), ("Age", age)],
        ("", "nodes") => vec![
            ("Name", name),
            ("Status", node_status),
            ("Roles", node_roles),
            ("Age", age),
            ("Version", |o, _| {
                text(&o["status"]["nodeInfo"]["kubeletVersion"])
            }),
            ("Internal-IP", |o, _| node_address(o, "InternalIP")),
            ("External-IP", |o, _| node_address(o, "ExternalIP")),
            ("OS-Image", |o, _| node_info(o, "osImage")),
            ("Kernel-Version", |o, _| node_info(o, "kernelVersion")),
            ("Container-Runtime", |o, _| {
                node_info(o, "containerRuntimeVersion")
            }),
        ],
        ("", "podtemplates") => vec![
            ("Name", name),
            ("Containers", |o, _| containers_of(&o["template"]["spec"])),
            ("Images", |o, _| images_of(&o["template"]["spec"])),
            ("Pod Labels", |o, _| {
                format_labels(&o["template"]["metadata"]["labels"])
            }),
        ],
        ("", "replicationcontrollers") => vec![
            ("Name", name),
            ("Desired", |o, _| json!(int(&o["spec"]["replicas"]))),
            ("Current", |o, _| json!(int(&o["status"]["replicas"]))),
            ("Ready", |o, _| json!(int(&o["status"]["readyReplicas"]))),
            ("Age", age),
            ("Containers", |o, _| {
                containers_of(&o["spec"]["template"]["spec"])
            }),
            ("Images", |o, _| images_of(&o["spec"]["template"]["spec"])),
            ("Selector", |o, _| format_labels(&o["spec"]["selector"])),
        ],
        ("", "events") | ("events.k8s.io", "events") => vec![
            ("Last Seen", event_last_seen),
            ("Type", |o, _| text(&o["type"])),
            ("Reason", |o, _| text(&o["reason"])),
            ("Object", event_object),
            ("Subobject", |o, _| {
                text(&event_field(o, "involvedObject", "regarding")["fieldPath"])
            }),
            ("Source", event_source),
            ("Message", |o, _| {
                json!(
                    event_field(o, "message", "note")
                        .as_str()
                        .unwrap_or("")
                        .trim()
                )
            }),
            ("First Seen", event_first_seen),
            ("Count", event_count),
            ("Name", name),
        ],
        ("", "componentstatuses") => vec![
            ("Name", name),
            ("Status", |o, _| {
                let healthy = items(&o["conditions"])
                    .iter()
                    .any(|c| c["type"] == "Healthy" && c["status"] == "True");
                json!(if healthy { "Healthy" } else { "Unhealthy" })
            }),
            ("Message", |o, _| {
                let c = items(&o["conditions"])
                    .iter()
                    .find(|c| c["type"] == "Healthy");
                text(&c.map_or(Value::Null, |c| c["message"].clone()))
            }),
            ("Error", |o, _| {
                let c = items(&o["conditions"])
                    .iter()
                    .find(|c| c["type"] == "Healthy");
                text(&c.map_or(Value::Null, |c| c["error"].clone()))
            }),
        ],
        ("apps", "deployments") => vec![
            ("Name", name),
            ("Ready", ready_of_replicas),
            ("Up-to-date", |o, _| {
                json!(int(&o["status"]["updatedReplicas"]))
            }),
            ("Available", |o, _| {
                json!(int(&o["status"]["availableReplicas"]))
            }),
            ("Age", age),
            ("Containers", |o, _| {
                containers_of(&o["spec"]["template"]["spec"])
            }),
            ("Images", |o, _| images_of(&o["spec"]["template"]["spec"])),
            ("Selector", |o, _| format_selector(&o["spec"]["selector"])),
        ],
        ("apps", "replicasets") => vec![
            ("Name", name),
            ("Desired", |o, _| json!(int(&o["spec"]["replicas"]))),
            ("Current", |o, _| json!(int(&o["status"]["replicas"]))),
            ("Ready", |o, _| json!(int(&o["status"]["readyReplicas"]))),
            ("Age", age),
            ("Containers", |o, _| {
                containers_of(&o["spec"]["template"]["spec"])
            }),
            ("Images", |o, _| images_of(&o["spec"]["template"]["spec"])),
            ("Selector", |o, _| format_selector(&o["spec"]["selector"])),
        ],
        ("apps", "statefulsets") => vec![
            ("Name", name),
            ("Ready", ready_of_replicas),
            ("Age", age),
            ("Containers", |o, _| {
                containers_of(&o["spec"]["template"]["spec"])
            }),
            ("Images", |o, _| images_of(&o["spec"]["template"]["spec"])),
        ],
        ("apps", "daemonsets") => vec![
            ("Name", name),
            ("Desired", |o, _| {
                json!(int(&o["status"]["desiredNumberScheduled"]))
            }),
            ("Current", |o, _| {
                json!(int(&o["status"]["currentNumberScheduled"]))
            }),
            ("Ready", |o, _| json!(int(&o["status"]["numberReady"]))),
            ("Up-to-date", |o, _| {
                json!(int(&o["status"]["updatedNumberScheduled"]))
            }),
            ("Available", |o, _| {
                json!(int(&o["status"]["numberAvailable"]))
            }),
            ("Node Selector", |o, _| {
                format_labels(&o["spec"]["template"]["spec"]["nodeSelector"])
            }),
            ("Age", age),
            ("Containers", |o, _| {
                containers_of(&o["spec"]["template"]["spec"])
            }),
            ("Images", |o, _| images_of(&o["spec"]["template"]["spec"])),
            ("Selector", |o, _| format_selector(&o["spec"]["selector"])),
        ],
        ("apps", "controllerrevisions") => vec![
            ("Name", name),
            ("Controller", |o, _| {
                let owner = items(&o["metadata"]["ownerReferences"])
                    .iter()
                    .find(|r| r["controller"] == true);
                json!(owner.map_or_else(
                    || "<none>".to_string(),
                    |r| {
                        let api_version = r["apiVersion"].as_str().unwrap_or("");
                        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
                        let kind = r["kind"].as_str().unwrap_or("").to_lowercase();
                        let kind = if group.is_empty() {
                            kind
                        } else {
                            format!("{kind}.{group}")
                        };
                        format!("{kind}/{}", r["name"].as_str().unwrap_or(""))
                    }
                ))
            }),
            ("Revision", |o, _| json!(int(&o["revision"]))),
            ("Age", age),
        ],
        ("batch", "jobs") => vec![
            ("Name", name),
            ("Status", job_status),
            ("Completions", job_completions),
            ("Duration", job_duration),
            ("Age", age),
            ("Containers", |o, _| {
                containers_of(&o["spec"]["template"]["spec"])
            }),
            ("Images", |o, _| images_of(&o["spec"]["template"]["spec"])),
            ("Selector", |o, _| format_selector(&o["spec"]["selector"])),
        ],
        ("batch", "cronjobs") => vec![
            ("Name", name),
            ("Schedule", |o, _| text(&o["spec"]["schedule"])),
            ("Timezone", |o, _| or_none(&o["spec"]["timeZone"])),
            ("Suspend", |o, _| json!(o["spec"]["suspend"] == true)),
            ("Active", |o, _| json!(count(&o["status"]["active"]))),
            (
                "Last Schedule",
                |o, now| match &o["status"]["lastScheduleTime"] {
                    t @ Value::String(_) => json!(human_age(t, now)),
                    _ => json!("<none>"),
                },
            ),
            ("Age", age),
            ("Containers", |o, _| {
                containers_of(&o["spec"]["jobTemplate"]["spec"]["template"]["spec"])
            }),
            ("Images", |o, _| {
                images_of(&o["spec"]["jobTemplate"]["spec"]["template"]["spec"])
            }),
            ("Selector", |o, _| {
                format_selector(&o["spec"]["jobTemplate"]["spec"]["selector"])
            }),
        ],
        ("coordination.k8s.io", "leases") => vec![
            ("Name", name),
            ("Holder", |o, _| text(&o["spec"]["holderIdentity"])),
            ("Age", age),
        ],
        ("scheduling.k8s.io", "priorityclasses") => vec![
            ("Name", name),
            ("Value", |o, _| json!(int(&o["value"]))),
            ("Global-Default", |o, _| json!(o["globalDefault"] == true)),
            ("Age", age),
            ("PreemptionPolicy", |o, _| {
                match o["preemptionPolicy"].as_str() {
                    Some(p) => json!(p),
                    None => json!("<unset>"),
                }
            }),
        ],
        ("rbac.authorization.k8s.io", "rolebindings" | "clusterrolebindings") => vec![
            ("Name", name),
            ("Role", |o, _| {
                json!(format!(
                    "{}/{}",
                    o["roleRef"]["kind"].as_str().unwrap_or(""),
                    o["roleRef"]["name"].as_str().unwrap_or("")
                ))
            }),
            ("Age", age),
            ("Users", |o, _| subjects(o, "User")),
            ("Groups", |o, _| subjects(o, "Group")),
            ("ServiceAccounts", |o, _| subjects(o, "ServiceAccount")),
        ],
        ("apiextensions.k8s.io", "customresourcedefinitions") => vec![
            ("Name", name),
            ("Scope", |o, _| text(&o["spec"]["scope"])),
            ("Versions", crd_versions),
            ("Created At", created_at),
            ("Group", |o, _| text(&o["spec"]["group"])),
            ("Kind", |o, _| text(&o["spec"]["names"]["kind"])),
            ("ShortNames", |o, _| {
                joined_strings(&o["spec"]["names"]["shortNames"])
            }),
            ("Established", |o, _| {
                json!(has_condition(o, "Established") == Some(true))
            }),
        ],
        ("apiregistration.k8s.io", "apiservices") => vec![
            ("Name", name),
            ("Service", |o, _| match o["spec"]["service"].as_object() {
                Some(s) => json!(format!(
                    "{}/{}",
                    s.get("namespace").and_then(Value::as_str).unwrap_or(""),
                    s.get("name").and_then(Value::as_str).unwrap_or("")
                )),
                None => json!("Local"),
            }),
            ("Available", |o, _| {
                let c = items(&o["status"]["conditions"])
                    .iter()
                    .find(|c| c["type"] == "Available");
                json!(c.map_or_else(
                    || "Unknown".to_string(),
                    |c| match (c["status"].as_str(), c["reason"].as_str()) {
                        (Some("True"), _) | (Some(_), None) => {
                            c["status"].as_str().unwrap_or("").to_string()
                        }
                        (status, Some(reason)) => format!("{} ({reason})", status.unwrap_or("")),
                        (None, None) => String::new(),
                    }
                ))
            }),
            ("Age", age),
        ],
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations",
        ) => vec![
            ("Name", name),
            ("Webhooks", |o, _| json!(count(&o["webhooks"]))),
            ("Age", age),
        ],
        ("node.k8s.io", "runtimeclasses") => vec![
            ("Name", name),
            ("Handler", |o, _| text(&o["handler"])),
            ("Age", age),
        ],
        ("networking.k8s.io", "networkpolicies") => vec![
            ("Name", name),
            ("Pod-Selector", |o, _| {
                format_selector(&o["spec"]["podSelector"])
            }),
            ("Age", age),
        ],
        ("networking.k8s.io", "ingressclasses") => vec![
            ("Name", name),
            ("Controller", |o, _| text(&o["spec"]["controller"])),
            ("Parameters", |o, _| {
                let p = &o["spec"]["parameters"];
                if !p.is_object() {
                    return json!("<none>");
                }
                let group = p["apiGroup"].as_str().unwrap_or("");
                let kind = p["kind"].as_str().unwrap_or("");
                let kind = if group.is_empty() {
                    kind.to_string()
                } else {
                    format!("{kind}.{group}")
                };
                json!(format!("{kind}/{}", p["name"].as_str().unwrap_or("")))
            }),
            ("Age", age),
        ],
        ("storage.k8s.io", "storageclasses") => vec![
            ("Name", name),
            ("Provisioner", |o, _| text(&o["provisioner"])),
            ("ReclaimPolicy", |o, _| {
                json!(o["reclaimPolicy"].as_str().unwrap_or("Delete"))
            }),
            ("VolumeBindingMode", |o, _| {
                json!(o["volumeBindingMode"].as_str().unwrap_or("Immediate"))
            }),
            ("AllowVolumeExpansion", |o, _| {
                json!(o["allowVolumeExpansion"] == true)
            }),
            ("Age", age),
        ],
        ("resource.k8s.io", "deviceclasses" | "resourceclaimtemplates") => {
            vec![("Name", name), ("Age", age)]
        }
        _ => return None,
    })
}

fn joined_strings(list: &Value) -> Value {
    json!(
        items(list)
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(",")
    )
}

/// The value at a simple JSONPath (`.spec.x`, `.status.conditions[0].type`,
/// `.status.conditions[?(@.type=="Ready")].status`), as printer columns use them.
pub fn json_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    let mut rest = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('.');
    while !rest.is_empty() {
        let end = rest.find(['.', '[']).unwrap_or(rest.len());
        let (field, tail) = rest.split_at(end);
        if !field.is_empty() {
            cur = cur.get(field)?;
        }
        rest = tail;
        if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']')?;
            let inner = &after[..close];
            cur = if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')'))
            {
                let (key, want) = filter.split_once("==")?;
                let want = want.trim().trim_matches(|c| c == '"' || c == '\'');
                cur.as_array()?
                    .iter()
                    .find(|item| item[key.trim()].as_str() == Some(want))?
            } else {
                cur.get(inner.parse::<usize>().ok()?)?
            };
            rest = &after[close + 1..];
        }
        rest = rest.trim_start_matches('.');
    }
    Some(cur)
}

/// A column definition as a Table carries it.
fn definition(
    name: &Value,
    kind: &Value,
    format: &Value,
    description: Value,
    priority: &Value,
) -> Value {
    json!({"name": name, "type": kind, "format": format, "description": description, "priority": priority})
}

/// The columns and the cells of `objects`, for a custom resource's printer columns (the CRD's,
/// or Age when it has none, as the apiextensions server adds).
fn custom_table(
    columns: &[Value],
    objects: &[Value],
    now: Timestamp,
) -> (Vec<Value>, Vec<Vec<Value>>) {
    let default_age =
        [json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"})];
    let defaulted = columns.is_empty();
    let columns = if defaulted { &default_age[..] } else { columns };
    let mut defs = vec![definition(
        &json!("Name"),
        &json!("string"),
        &json!("name"),
        name_description(),
        &json!(0),
    )];
    defs.extend(columns.iter().map(|c| {
        let path = c["jsonPath"].as_str().unwrap_or("");
        let description = match c["description"].as_str() {
            Some(d) if !d.is_empty() => json!(d),
            // Only the Age the server adds itself has ObjectMeta's description; a CRD's own
            // column without one is described by its JSONPath.
            _ if defaulted => age_description(),
            _ => json!(format!(
                "Custom resource definition column (in JSONPath format): {path}"
            )),
        };
        let format = c.get("format").cloned().unwrap_or(json!(""));
        definition(
            &c["name"],
            &c["type"],
            &format,
            description,
            c.get("priority").unwrap_or(&json!(0)),
        )
    }));
    let rows = objects
        .iter()
        .map(|o| {
            let mut cells = vec![o["metadata"]["name"].clone()];
            cells.extend(columns.iter().map(|c| {
                let value = c["jsonPath"]
                    .as_str()
                    .and_then(|p| json_path(o, p))
                    .cloned()
                    .unwrap_or(Value::Null);
                // Like the real server, date columns are shown as ages ("5m").
                if c["type"] == "date" && value.is_string() {
                    json!(human_age(&value, now))
                } else {
                    value
                }
            }));
            cells
        })
        .collect();
    (defs, rows)
}

/// A Table of `objects` (already rendered for `rt`). `metadata` is the list's metadata
/// (resourceVersion, continue, remainingItemCount), or one object's resourceVersion.
pub fn table(
    rt: &ResourceType,
    objects: &[Value],
    metadata: Value,
    now: Timestamp,
    opts: TableOptions,
) -> Value {
    let (definitions, cells): (Vec<Value>, Vec<Vec<Value>>) = if rt.crd.is_some() {
        let columns = rt
            .printer_columns
            .as_deref()
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        custom_table(columns, objects, now)
    } else {
        let (cols, defs) = match builtin_cells(&rt.group, &rt.plural) {
            Some(cols) => {
                let defs = captured()
                    .get(&(rt.group.clone(), rt.plural.clone()))
                    .cloned()
                    .unwrap_or_default();
                (cols, defs)
            }
            // kube-apiserver's default columns, for kinds without a printer.
            None => (
                vec![("Name", name as Cell), ("Created At", created_at)],
                captured()
                    .get(&("rbac.authorization.k8s.io".into(), "roles".into()))
                    .cloned()
                    .unwrap_or_default(),
            ),
        };
        let rows = objects
            .iter()
            .map(|o| cols.iter().map(|(_, cell)| cell(o, now)).collect())
            .collect();
        (defs, rows)
    };
    let rows: Vec<Value> = objects
        .iter()
        .zip(cells)
        .map(|(o, cells)| {
            let object = match opts.include {
                Include::None => Value::Null,
                Include::Metadata => json!({"kind": "PartialObjectMetadata", "apiVersion": opts.api_version(), "metadata": o["metadata"]}),
                Include::Object => o.clone(),
            };
            json!({"cells": cells, "object": object})
        })
        .collect();
    json!({"kind": "Table", "apiVersion": opts.api_version(), "metadata": metadata, "columnDefinitions": definitions, "rows": rows})
}

/// The Table metadata of one object: its resourceVersion, none for an object not stored (a
/// dry run's).
pub fn object_metadata(rv: &str) -> Value {
    if rv.is_empty() {
        json!({})
    } else {
        json!({"resourceVersion": rv})
    }
}

/// The Table metadata of a list page.
pub fn list_metadata(rv: u64, continue_token: Option<&str>, remaining: Option<u64>) -> Value {
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    if let Some(n) = remaining {
        metadata["remainingItemCount"] = json!(n);
    }
    metadata
}

/// kube-apiserver sends the column definitions in a Table watch's first event only.
pub fn drop_column_definitions(table: &mut Value) {
    if let Some(m) = table
        .as_object_mut()
        .filter(|m| m.contains_key("columnDefinitions"))
    {
        m.insert("columnDefinitions".into(), Value::Null);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_path_follows_fields_indexes_and_filters() {
        let o = json!({"status": {"conditions": [{"type": "A", "status": "False"}, {"type": "Ready", "status": "True"}]}});
        assert_eq!(
            json_path(&o, ".status.conditions[1].type"),
            Some(&json!("Ready"))
        );
        assert_eq!(
            json_path(&o, r#".status.conditions[?(@.type=="Ready")].status"#),
            Some(&json!("True"))
        );
        assert_eq!(json_path(&o, ".spec.missing"), None);
    }

    #[test]
    fn ages_read_like_kubectl() {
        let now: Timestamp = "2026-01-01T03:00:00Z".parse().unwrap();
        assert_eq!(human_age(&json!("2026-01-01T02:59:15Z"), now), "45s");
        assert_eq!(human_age(&json!("2026-01-01T02:55:00Z"), now), "5m");
        assert_eq!(human_age(&json!("2026-01-01T02:54:30Z"), now), "5m30s");
        assert_eq!(human_age(&json!("2026-01-01T01:00:00Z"), now), "120m");
        assert_eq!(human_age(&json!("2025-12-30T03:00:00Z"), now), "2d");
        assert_eq!(human_age(&json!("2025-12-30T01:00:00Z"), now), "2d2h");
    }

    #[test]
    fn asks_for_a_table_only_when_offered_first() {
        assert!(matches!(
            requested("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"),
            Some(Ok(false))
        ));
        assert!(requested("application/json").is_none());
        assert!(matches!(
            requested("application/json;as=Table;v=v9;g=meta.k8s.io"),
            Some(Err(_))
        ));
        assert!(matches!(
            requested("application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
            Some(Ok(true))
        ));
    }

    /// Every kind with cells has them for exactly kube-apiserver's columns, in its order.
    #[test]
    fn cells_follow_the_captured_columns() {
        let catalog = crate::catalog::Catalog::builtin();
        for rt in catalog.types() {
            let Some(cells) = builtin_cells(&rt.group, &rt.plural) else {
                continue;
            };
            let names: Vec<&str> = cells.iter().map(|(n, _)| *n).collect();
            let captured: Vec<&str> = captured()
                .get(&(rt.group.clone(), rt.plural.clone()))
                .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
                .unwrap_or_default();
            assert_eq!(names, captured, "{}/{}", rt.group, rt.plural);
        }
    }

    #[test]
    fn selectors_print_like_format_label_selector() {
        let sel = json!({"matchLabels": {"b": "2", "a": "1"}, "matchExpressions": [{"key": "c", "operator": "In", "values": ["y", "x"]}, {"key": "aa", "operator": "DoesNotExist"}]});
        assert_eq!(format_selector(&sel), json!("a=1,!aa,b=2,c in (x,y)"));
        assert_eq!(format_selector(&Value::Null), json!("<none>"));
    }
}
