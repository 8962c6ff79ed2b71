//! Services: ports (required, named when several, unique), protocols and types, and cluster IPs
//! that are never changed and never given twice.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{duplicate, go_json, invalid_rendered};
use crate::error::FieldCause;
use crate::semantics::names;

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const PORT_RANGE: &str = "must be between 1 and 65535, inclusive";

/// An update that leaves the cluster IPs out keeps the allocated ones, and a `clusterIP` alone
/// stands for the list, as kube-apiserver's service storage does before validating.
pub fn keep_allocated(svc: &mut Value, old: &Value) {
    let Some(spec) = svc.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if spec.get("type").and_then(Value::as_str) == Some("ExternalName") {
        return;
    }
    let ip_missing = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if ip_missing {
        for key in ["clusterIP", "clusterIPs"] {
            if let Some(v) = old["spec"].get(key) {
                spec.insert(key.into(), v.clone());
            }
        }
    } else if spec
        .get("clusterIPs")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        let ip = spec["clusterIP"].clone();
        spec.insert("clusterIPs".into(), json!([ip]));
    }
}

fn port_number(v: &Value) -> Option<i64> {
    v.as_i64()
}

pub fn service(
    svc: &Value,
    old: Option<&Value>,
    same_kind: &mut dyn Iterator<Item = Arc<Value>>,
) -> Vec<FieldCause> {
    let spec = &svc["spec"];
    let mut causes = Vec::new();
    let kind = spec["type"].as_str().unwrap_or("ClusterIP");
    let headless = spec["clusterIP"].as_str() == Some("None");
    let ports: &[Value] = spec["ports"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    if ports.is_empty() && !headless && kind != "ExternalName" {
        causes.push(FieldCause::required("spec.ports", ""));
    }
    let mut names_seen: Vec<&str> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let at = format!("spec.ports[{i}]");
        let name = port["name"].as_str().unwrap_or("");
        if ports.len() > 1 && name.is_empty() {
            causes.push(FieldCause::required(format!("{at}.name"), ""));
        } else if !name.is_empty() {
            causes.extend(
                names::is_dns1123_label(name)
                    .iter()
                    .map(|m| FieldCause::invalid(format!("{at}.name"), name, m)),
            );
            if names_seen.contains(&name) {
                causes.push(duplicate(
                    format!("{at}.name"),
                    &Value::from(name).to_string(),
                ));
            } else {
                names_seen.push(name);
            }
        }
        let number = port_number(&port["port"]).unwrap_or(0);
        if !(1..=65535).contains(&number) {
            causes.push(invalid_rendered(
                format!("{at}.port"),
                &number.to_string(),
                PORT_RANGE,
            ));
        }
        if let Some(protocol) = port["protocol"].as_str()
            && !PROTOCOLS.contains(&protocol)
        {
            causes.push(FieldCause::not_supported(
                format!("{at}.protocol"),
                protocol,
                PROTOCOLS,
            ));
        }
        // The target defaults to the port.
        let target = port.get("targetPort").unwrap_or(&port["port"]);
        if let Some(n) = target
            .as_i64()
            .or(if target.is_null() { Some(0) } else { None })
            && !(1..=65535).contains(&n)
        {
            causes.push(invalid_rendered(
                format!("{at}.targetPort"),
                &n.to_string(),
                PORT_RANGE,
            ));
        }
    }
    if !TYPES.contains(&kind) {
        causes.push(FieldCause::not_supported("spec.type", kind, TYPES));
    }
    // Go keys the ports by (protocol, port) and prints that key's struct.
    let mut keys: Vec<(String, i64)> = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let protocol = port["protocol"].as_str().unwrap_or("TCP").to_string();
        let number = port_number(&port["port"]).unwrap_or(0);
        let key = (protocol, number);
        if keys.contains(&key) {
            let rendered = format!(
                "{{\"Name\":\"\",\"Protocol\":{},\"AppProtocol\":null,\"Port\":{},\"TargetPort\":0,\"NodePort\":0}}",
                Value::from(key.0.as_str()),
                key.1
            );
            causes.push(duplicate(format!("spec.ports[{i}]"), &rendered));
        }
        keys.push(key);
    }
    let ips = &spec["clusterIPs"];
    match old {
        Some(old) => {
            let old_first = &old["spec"]["clusterIPs"][0];
            if kind != "ExternalName" && old_first.is_string() && &ips[0] != old_first {
                causes.push(invalid_rendered(
                    "spec.clusterIPs[0]",
                    &go_json(ips),
                    "may not change once set",
                ));
            }
        }
        None if causes.is_empty() => {
            // The allocator refuses an address another Service holds (after validation).
            let ip = spec["clusterIP"].as_str().unwrap_or("");
            let name = svc["metadata"]["name"].as_str();
            let ns = svc["metadata"]["namespace"].as_str();
            if !ip.is_empty() && ip != "None" {
                let held_by = |other: &Value| {
                    (
                        other["metadata"]["name"].as_str(),
                        other["metadata"]["namespace"].as_str(),
                    ) != (name, ns)
                        && other["spec"]["clusterIPs"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .chain(std::iter::once(&other["spec"]["clusterIP"]))
                            .any(|o| o.as_str() == Some(ip))
                };
                let mut taken = false;
                for other in same_kind {
                    if held_by(&other) {
                        taken = true;
                        break;
                    }
                }
                if taken {
                    let list = if ips.is_array() {
                        ips.clone()
                    } else {
                        json!([ip])
                    };
                    causes.push(invalid_rendered(
                        "spec.clusterIPs",
                        &go_json(&list),
                        &format!("failed to allocate IP {ip}: provided IP is already allocated"),
                    ));
                }
            }
        }
        None => {}
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(causes: Vec<FieldCause>) -> Vec<String> {
        causes
            .into_iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    fn check(svc: Value, old: Option<&Value>, others: &[Value]) -> Vec<String> {
        messages(service(
            &svc,
            old,
            &mut others.iter().cloned().map(Arc::new),
        ))
    }

    #[test]
    fn ports_are_required_named_and_unique() {
        assert_eq!(
            check(json!({"spec": {"selector": {"app": "s"}}}), None, &[]),
            ["spec.ports: Required value"]
        );
        assert!(check(json!({"spec": {"clusterIP": "None"}}), None, &[]).is_empty());
        assert_eq!(
            check(
                json!({"spec": {"ports": [{"port": 80, "name": "a", "protocol": "XX"}, {"port": 0}, {"port": 80, "name": "a", "protocol": "XX"}]}}),
                None,
                &[]
            ),
            [
                "spec.ports[0].protocol: Unsupported value: \"XX\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.ports[1].name: Required value",
                "spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[1].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive",
                "spec.ports[2].name: Duplicate value: \"a\"",
                "spec.ports[2].protocol: Unsupported value: \"XX\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.ports[2]: Duplicate value: {\"Name\":\"\",\"Protocol\":\"XX\",\"AppProtocol\":null,\"Port\":80,\"TargetPort\":0,\"NodePort\":0}",
            ]
        );
    }

    #[test]
    fn cluster_ips_are_kept_immutable_and_unique() {
        let old = json!({"spec": {"clusterIP": "10.0.0.201", "clusterIPs": ["10.0.0.201"], "ports": [{"port": 80}]}});
        let mut kept = json!({"spec": {"ports": [{"port": 80}]}});
        keep_allocated(&mut kept, &old);
        assert_eq!(kept["spec"]["clusterIPs"], json!(["10.0.0.201"]));
        let mut changed = json!({"spec": {"clusterIP": "10.0.0.202", "ports": [{"port": 80}]}});
        keep_allocated(&mut changed, &old);
        assert_eq!(
            check(changed, Some(&old), &[]),
            ["spec.clusterIPs[0]: Invalid value: [\"10.0.0.202\"]: may not change once set"]
        );
        let mut other = old.clone();
        other["metadata"] = json!({"name": "s", "namespace": "n"});
        assert_eq!(
            check(
                json!({"metadata": {"name": "t", "namespace": "n"}, "spec": {"clusterIP": "10.0.0.201", "ports": [{"port": 80}]}}),
                None,
                &[other]
            ),
            [
                "spec.clusterIPs: Invalid value: [\"10.0.0.201\"]: failed to allocate IP 10.0.0.201: provided IP is already allocated"
            ]
        );
    }
}
