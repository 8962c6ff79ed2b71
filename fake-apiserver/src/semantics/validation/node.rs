//! Nodes: taints (the real server reports them under `metadata.taints`, a path its validation
//! has always used) and pod CIDRs.

use std::net::IpAddr;

use serde_json::{Value, json};

use super::{duplicate, go_json, invalid_rendered};
use crate::error::FieldCause;
use crate::semantics::names;

const EFFECTS: &[&str] = &["NoSchedule", "PreferNoSchedule", "NoExecute"];
const CIDR_ERR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// The v1 Node's `podCIDR` is `podCIDRs[0]` in kube-apiserver's internal form: a `podCIDR` alone
/// becomes the list, a list sets it.
pub fn convert_pod_cidrs(node: &mut Value) {
    let Some(spec) = node.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let list_empty = spec
        .get("podCIDRs")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    let single = spec
        .get("podCIDR")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    if list_empty {
        if let Some(cidr) = single {
            spec.insert("podCIDRs".into(), json!([cidr]));
        }
    } else if let Some(first) = spec["podCIDRs"][0].as_str().map(str::to_string) {
        spec.insert("podCIDR".into(), json!(first));
    }
}

pub fn node(node: &Value) -> Vec<FieldCause> {
    let mut causes = taints(&node["spec"]["taints"]);
    causes.extend(pod_cidrs(&node["spec"]["podCIDRs"]));
    causes
}

fn taints(list: &Value) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for (i, taint) in list.as_array().into_iter().flatten().enumerate() {
        let at = format!("metadata.taints[{i}]");
        let key = taint["key"].as_str().unwrap_or("");
        let value = taint["value"].as_str().unwrap_or("");
        let effect = taint["effect"].as_str().unwrap_or("");
        causes.extend(
            names::is_qualified_name(key)
                .iter()
                .map(|m| FieldCause::invalid(format!("{at}.key"), key, m)),
        );
        let value_errs = names::is_valid_label_value(value);
        if !value_errs.is_empty() {
            causes.push(FieldCause::invalid(
                format!("{at}.value"),
                value,
                &value_errs.join(";"),
            ));
        }
        if effect.is_empty() {
            causes.push(FieldCause::required(format!("{at}.effect"), ""));
        } else if !EFFECTS.contains(&effect) {
            causes.push(FieldCause::not_supported(
                format!("{at}.effect"),
                effect,
                EFFECTS,
            ));
        }
        let pair = (effect.to_string(), key.to_string());
        if seen.contains(&pair) {
            // Go prints the internal Taint struct.
            let rendered = format!(
                "{{\"Key\":{},\"Value\":{},\"Effect\":{},\"TimeAdded\":{}}}",
                Value::from(key),
                Value::from(value),
                Value::from(effect),
                taint.get("timeAdded").unwrap_or(&Value::Null)
            );
            let mut cause = duplicate(&at, &rendered);
            cause
                .message
                .push_str(": taints must be unique by key and effect pair");
            causes.push(cause);
            continue;
        }
        seen.push(pair);
    }
    causes
}

enum Cidr {
    V4,
    V6,
}

/// A CIDR's family, or the message kube-apiserver gives for it.
fn parse_cidr(value: &str) -> Result<Cidr, &'static str> {
    let (ip, prefix) = value.split_once('/').ok_or(CIDR_ERR)?;
    let ip: IpAddr = ip.parse().map_err(|_| CIDR_ERR)?;
    let prefix: u32 = prefix
        .parse()
        .ok()
        .filter(|p| prefix.bytes().all(|b| b.is_ascii_digit()) && !prefix.is_empty() && *p <= 128)
        .ok_or(CIDR_ERR)?;
    let (bits, host_bits_set, family) = match ip {
        IpAddr::V4(v4) => {
            let n = u32::from(v4);
            let mask = if prefix >= 32 { 0 } else { u32::MAX >> prefix };
            (32, n & mask != 0, Cidr::V4)
        }
        IpAddr::V6(v6) => {
            let n = u128::from(v6);
            let mask = if prefix >= 128 {
                0
            } else {
                u128::MAX >> prefix
            };
            (128, n & mask != 0, Cidr::V6)
        }
    };
    if prefix > bits {
        return Err(CIDR_ERR);
    }
    if host_bits_set {
        return Err("must not have bits set beyond the prefix length");
    }
    Ok(family)
}

fn pod_cidrs(list: &Value) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let cidrs: Vec<&str> = list
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| v.as_str().unwrap_or(""))
        .collect();
    let mut families = Vec::new();
    for (i, cidr) in cidrs.iter().enumerate() {
        match parse_cidr(cidr) {
            Ok(f) => families.push(f),
            Err(msg) => causes.push(FieldCause::invalid(
                format!("spec.podCIDRs[{i}]"),
                cidr,
                msg,
            )),
        }
    }
    if cidrs.len() > 1 {
        let v4 = families.iter().filter(|f| matches!(f, Cidr::V4)).count();
        let dual = families.len() == cidrs.len() && v4 == 1 && families.len() - v4 == 1;
        if !dual {
            causes.push(invalid_rendered(
                "spec.podCIDRs",
                &go_json(list),
                "may specify no more than one CIDR for each IP family",
            ));
        }
        for (i, cidr) in cidrs.iter().enumerate() {
            if cidrs[..i].contains(cidr) {
                causes.push(duplicate(
                    format!("spec.podCIDRs[{i}]"),
                    &go_json(&json!(cidr)),
                ));
            }
        }
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

    #[test]
    fn taint_effects_and_duplicates() {
        let n = json!({"spec": {"taints": [
            {"key": "fid", "effect": "Sometimes"},
            {"key": "fid", "effect": "NoSchedule"},
            {"key": "fid", "effect": "NoSchedule"}
        ]}});
        assert_eq!(
            messages(node(&n)),
            [
                "metadata.taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
                "metadata.taints[2]: Duplicate value: {\"Key\":\"fid\",\"Value\":\"\",\"Effect\":\"NoSchedule\",\"TimeAdded\":null}: taints must be unique by key and effect pair",
            ]
        );
    }

    #[test]
    fn pod_cidrs_come_from_pod_cidr_and_are_checked() {
        let mut n = json!({"spec": {"podCIDR": "not-a-cidr"}});
        convert_pod_cidrs(&mut n);
        assert_eq!(
            messages(node(&n)),
            [format!(
                "spec.podCIDRs[0]: Invalid value: \"not-a-cidr\": {CIDR_ERR}"
            )]
        );
        let n = json!({"spec": {"podCIDRs": ["10.0.0.1/24", "10.1.0.0/24"]}});
        assert_eq!(
            messages(node(&n)),
            [
                "spec.podCIDRs[0]: Invalid value: \"10.0.0.1/24\": must not have bits set beyond the prefix length",
                "spec.podCIDRs: Invalid value: [\"10.0.0.1/24\",\"10.1.0.0/24\"]: may specify no more than one CIDR for each IP family",
            ]
        );
        assert!(node(&json!({"spec": {"podCIDRs": ["10.0.0.0/24", "fd00::/64"]}})).is_empty());
    }
}
