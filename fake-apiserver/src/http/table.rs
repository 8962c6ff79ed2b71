//! `meta.k8s.io/v1` Table answers, which `kubectl get` asks for: the columns a real server shows
//! for common built-in kinds, a CRD's `additionalPrinterColumns`, and Name/Age for everything else.

use jiff::Timestamp;
use serde_json::{Value, json};

use crate::catalog::ResourceType;

/// Whether an Accept header asks for a Table (kubectl offers it first, then plain JSON).
pub fn wants_table(accept: &str) -> bool {
    accept.split(',').next().is_some_and(|first| {
        let params: Vec<&str> = first.split(';').map(str::trim).collect();
        params.contains(&"as=Table") && params.contains(&"g=meta.k8s.io")
    })
}

struct Column {
    name: &'static str,
    kind: &'static str,
    format: &'static str,
    priority: u8,
    cell: fn(&Value, Timestamp) -> Value,
}

const fn col(name: &'static str, cell: fn(&Value, Timestamp) -> Value) -> Column {
    Column {
        name,
        kind: "string",
        format: "",
        priority: 0,
        cell,
    }
}

const fn wide(name: &'static str, cell: fn(&Value, Timestamp) -> Value) -> Column {
    Column {
        name,
        kind: "string",
        format: "",
        priority: 1,
        cell,
    }
}

fn name(o: &Value, _: Timestamp) -> Value {
    o["metadata"]["name"].clone()
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

fn age(o: &Value, now: Timestamp) -> Value {
    json!(human_age(&o["metadata"]["creationTimestamp"], now))
}

/// "ready/desired" replicas, as Deployments and StatefulSets show them.
fn ready_of_replicas(o: &Value, _: Timestamp) -> Value {
    json!(format!(
        "{}/{}",
        int(&o["status"]["readyReplicas"]),
        int(&o["spec"]["replicas"])
    ))
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn count(v: &Value) -> usize {
    v.as_object().map_or(0, |m| m.len()) + v.as_array().map_or(0, Vec::len)
}

fn or_none(v: &Value) -> Value {
    match v.as_str() {
        Some(s) if !s.is_empty() => json!(s),
        _ => json!("<none>"),
    }
}

fn pod_ready(o: &Value, _: Timestamp) -> Value {
    let total = o["spec"]["containers"].as_array().map_or(0, Vec::len);
    let ready = o["status"]["containerStatuses"].as_array().map_or(0, |s| {
        s.iter().filter(|c| c["ready"] == json!(true)).count()
    });
    json!(format!("{ready}/{total}"))
}

fn pod_restarts(o: &Value, _: Timestamp) -> Value {
    let n: i64 = o["status"]["containerStatuses"].as_array().map_or(0, |s| {
        s.iter().filter_map(|c| c["restartCount"].as_i64()).sum()
    });
    json!(n)
}

fn pod_status(o: &Value, _: Timestamp) -> Value {
    if o["metadata"]
        .get("deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        return json!("Terminating");
    }
    match o["status"]["reason"].as_str() {
        Some(r) if !r.is_empty() => json!(r),
        _ => o["status"]["phase"].clone(),
    }
}

fn job_status(o: &Value, _: Timestamp) -> Value {
    let conditions = o["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let has = |t: &str| {
        conditions
            .iter()
            .any(|c| c["type"] == json!(t) && c["status"] == json!("True"))
    };
    let status = if has("Complete") {
        "Complete"
    } else if has("Failed") {
        "Failed"
    } else if has("Suspended") || o["spec"]["suspend"] == json!(true) {
        "Suspended"
    } else {
        "Running"
    };
    json!(status)
}

fn job_completions(o: &Value, _: Timestamp) -> Value {
    let done = o["status"]["succeeded"].as_i64().unwrap_or(0);
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

fn service_ports(o: &Value, _: Timestamp) -> Value {
    let ports: Vec<String> = o["spec"]["ports"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| format!("{}/{}", p["port"], p["protocol"].as_str().unwrap_or("TCP")))
                .collect()
        })
        .unwrap_or_default();
    if ports.is_empty() {
        json!("<none>")
    } else {
        json!(ports.join(","))
    }
}

fn node_status(o: &Value, _: Timestamp) -> Value {
    let ready = o["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == json!("Ready")))
        .map(|c| c["status"] == json!("True"));
    let mut status = match ready {
        Some(true) => "Ready".to_string(),
        _ => "NotReady".to_string(),
    };
    if o["spec"]["unschedulable"] == json!(true) {
        status.push_str(",SchedulingDisabled");
    }
    json!(status)
}

fn node_roles(o: &Value, _: Timestamp) -> Value {
    let roles: Vec<&str> = o["metadata"]["labels"]
        .as_object()
        .map(|l| {
            l.keys()
                .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                .collect()
        })
        .unwrap_or_default();
    if roles.is_empty() {
        json!("<none>")
    } else {
        json!(roles.join(","))
    }
}

fn columns(rt: &ResourceType) -> Vec<Column> {
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => vec![
            col("Name", name),
            col("Ready", pod_ready),
            col("Status", pod_status),
            Column {
                kind: "integer",
                ..col("Restarts", pod_restarts)
            },
            col("Age", age),
            wide("IP", |o, _| or_none(&o["status"]["podIP"])),
            wide("Node", |o, _| or_none(&o["spec"]["nodeName"])),
        ],
        ("", "configmaps") => vec![
            col("Name", name),
            Column {
                kind: "integer",
                ..col("Data", |o, _| {
                    json!(count(&o["data"]) + count(&o["binaryData"]))
                })
            },
            col("Age", age),
        ],
        ("", "secrets") => vec![
            col("Name", name),
            col("Type", |o, _| o["type"].clone()),
            Column {
                kind: "integer",
                ..col("Data", |o, _| json!(count(&o["data"])))
            },
            col("Age", age),
        ],
        ("", "namespaces") => vec![
            col("Name", name),
            col("Status", |o, _| o["status"]["phase"].clone()),
            col("Age", age),
        ],
        ("", "services") => vec![
            col("Name", name),
            col("Type", |o, _| o["spec"]["type"].clone()),
            col("Cluster-IP", |o, _| or_none(&o["spec"]["clusterIP"])),
            col("External-IP", |o, _| {
                let ips = o["spec"]["externalIPs"].as_array().map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .collect::<Vec<_>>()
                        .join(",")
                });
                or_none(&json!(ips.unwrap_or_default()))
            }),
            col("Port(s)", service_ports),
            col("Age", age),
        ],
        ("", "serviceaccounts") => vec![
            col("Name", name),
            Column {
                kind: "integer",
                ..col("Secrets", |o, _| json!(count(&o["secrets"])))
            },
            col("Age", age),
        ],
        ("", "nodes") => vec![
            col("Name", name),
            col("Status", node_status),
            col("Roles", node_roles),
            col("Age", age),
            col("Version", |o, _| {
                o["status"]["nodeInfo"]["kubeletVersion"].clone()
            }),
        ],
        ("", "podtemplates") => vec![
            Column {
                name: "Template",
                ..col("Name", name)
            },
            col("Containers", |o, _| {
                let names: Vec<&str> = o["template"]["spec"]["containers"]
                    .as_array()
                    .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
                    .unwrap_or_default();
                json!(names.join(","))
            }),
            col("Age", age),
        ],
        ("apps", "deployments") => vec![
            col("Name", name),
            col("Ready", ready_of_replicas),
            Column {
                kind: "integer",
                ..col("Up-to-date", |o, _| {
                    json!(int(&o["status"]["updatedReplicas"]))
                })
            },
            Column {
                kind: "integer",
                ..col("Available", |o, _| {
                    json!(int(&o["status"]["availableReplicas"]))
                })
            },
            col("Age", age),
        ],
        ("apps", "statefulsets") => vec![
            col("Name", name),
            col("Ready", ready_of_replicas),
            col("Age", age),
        ],
        ("apps", "replicasets") => vec![
            col("Name", name),
            Column {
                kind: "integer",
                ..col("Desired", |o, _| json!(int(&o["spec"]["replicas"])))
            },
            Column {
                kind: "integer",
                ..col("Current", |o, _| json!(int(&o["status"]["replicas"])))
            },
            Column {
                kind: "integer",
                ..col("Ready", |o, _| json!(int(&o["status"]["readyReplicas"])))
            },
            col("Age", age),
        ],
        ("", "events") => vec![
            col("Last Seen", |o, now| {
                let last = ["lastTimestamp", "eventTime"]
                    .iter()
                    .map(|k| &o[*k])
                    .find(|v| v.is_string())
                    .cloned();
                json!(last.map_or_else(|| "<unknown>".to_string(), |t| human_age(&t, now)))
            }),
            col("Type", |o, _| o["type"].clone()),
            col("Reason", |o, _| o["reason"].clone()),
            col("Object", |o, _| {
                let kind = o["involvedObject"]["kind"]
                    .as_str()
                    .unwrap_or("")
                    .to_lowercase();
                json!(format!(
                    "{kind}/{}",
                    o["involvedObject"]["name"].as_str().unwrap_or("")
                ))
            }),
            col("Message", |o, _| o["message"].clone()),
        ],
        ("batch", "jobs") => vec![
            col("Name", name),
            col("Status", job_status),
            col("Completions", job_completions),
            col("Duration", job_duration),
            col("Age", age),
        ],
        ("coordination.k8s.io", "leases") => vec![
            col("Name", name),
            col("Holder", |o, _| o["spec"]["holderIdentity"].clone()),
            col("Age", age),
        ],
        ("apiextensions.k8s.io", "customresourcedefinitions") => vec![
            col("Name", name),
            Column {
                format: "date-time",
                ..col("Created At", |o, _| {
                    o["metadata"]["creationTimestamp"].clone()
                })
            },
        ],
        _ => vec![col("Name", name), col("Age", age)],
    }
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

/// A Table of `objects` (already rendered for `rt`) with its printer columns.
pub fn table(
    rt: &ResourceType,
    printer_columns: Option<&Value>,
    objects: &[Value],
    rv: &str,
    continue_token: Option<&str>,
    now: Timestamp,
) -> Value {
    // A CRD without printer columns gets Name and Age, like the built-in default.
    let custom_columns = printer_columns
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty());
    let (definitions, rows): (Vec<Value>, Vec<Value>) = match custom_columns {
        Some(custom) => {
            let mut defs = vec![
                json!({"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace.", "priority": 0}),
            ];
            defs.extend(custom.iter().map(|c| {
                json!({
                    "name": c["name"], "type": c["type"], "format": c.get("format").cloned().unwrap_or(json!("")),
                    "description": c.get("description").cloned().unwrap_or(json!("")),
                    "priority": c.get("priority").cloned().unwrap_or(json!(0)),
                })
            }));
            let rows = objects
                .iter()
                .map(|o| {
                    let mut cells = vec![o["metadata"]["name"].clone()];
                    cells.extend(custom.iter().map(|c| {
                        let value = c["jsonPath"]
                            .as_str()
                            .and_then(|p| json_path(o, p))
                            .cloned()
                            .unwrap_or(Value::Null);
                        // Like the real server, date columns are shown as ages ("5m").
                        if c["type"] == json!("date") && value.is_string() {
                            json!(human_age(&value, now))
                        } else {
                            value
                        }
                    }));
                    row(o, cells)
                })
                .collect();
            (defs, rows)
        }
        None => {
            let cols = columns(rt);
            let defs = cols
                .iter()
                .map(|c| {
                    let format = if c.name == "Name" && c.format.is_empty() { "name" } else { c.format };
                    json!({"name": c.name, "type": c.kind, "format": format, "description": "", "priority": c.priority})
                })
                .collect();
            let rows = objects
                .iter()
                .map(|o| row(o, cols.iter().map(|c| (c.cell)(o, now)).collect()))
                .collect();
            (defs, rows)
        }
    };
    let mut metadata = json!({"resourceVersion": rv});
    if let Some(token) = continue_token {
        metadata["continue"] = json!(token);
    }
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": metadata, "columnDefinitions": definitions, "rows": rows})
}

fn row(o: &Value, cells: Vec<Value>) -> Value {
    json!({
        "cells": cells,
        "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]},
    })
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
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
    }
}
