//! Turning an `apiextensions.k8s.io/v1` CustomResourceDefinition into served kinds.

use std::sync::Arc;

use serde_json::{Value, json};

use super::ResourceType;
use super::behavior::custom_resource_behavior;
use crate::error::FieldCause;
use crate::semantics::schema::Schema;

fn str_at<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    path.iter().fold(v, |v, k| &v[*k]).as_str().unwrap_or("")
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// A schema problem (`openAPIV3Schema...: Reason: detail`) as a cause under `prefix`.
fn schema_cause(prefix: &str, err: &str) -> FieldCause {
    use crate::error::CauseReason;
    let (path, message) = err.split_once(": ").unwrap_or(("openAPIV3Schema", err));
    let reason = if message.starts_with("Required value") {
        CauseReason::Required
    } else if message.starts_with("Unsupported value") {
        CauseReason::NotSupported
    } else if message.starts_with("Forbidden") {
        CauseReason::Forbidden
    } else {
        CauseReason::Invalid
    };
    FieldCause {
        reason,
        field: format!("{prefix}.{path}"),
        message: message.to_string(),
    }
}

/// The versions as the real server prints its internal form in a storage-version error (JSON
/// of the Go structs; schemas shared by all versions have moved to `spec.validation`).
fn internal_versions(versions: &[Value]) -> String {
    let shared = versions
        .windows(2)
        .all(|w| w[0]["schema"] == w[1]["schema"]);
    let items: Vec<String> = versions
        .iter()
        .map(|v| {
            let or_null = |k: &str| v.get(k).cloned().unwrap_or(Value::Null).to_string();
            let flag = |k: &str| v[k].as_bool().unwrap_or(false);
            format!(
                "{{\"Name\":{},\"Served\":{},\"Storage\":{},\"Deprecated\":{},\"DeprecationWarning\":{},\"Schema\":{},\"Subresources\":{},\"AdditionalPrinterColumns\":{},\"SelectableFields\":{}}}",
                or_null("name"),
                flag("served"),
                flag("storage"),
                flag("deprecated"),
                or_null("deprecationWarning"),
                if shared { "null".into() } else { or_null("schema") },
                or_null("subresources"),
                or_null("additionalPrinterColumns"),
                or_null("selectableFields"),
            )
        })
        .collect();
    format!("[{}]", items.join(","))
}

/// kube-apiserver's defaults of a CRD, applied when it decodes any write (so its writer owns
/// them): the singular and list kinds from the kind, the `None` conversion strategy, and port
/// 443 for a conversion webhook's service.
pub fn default_crd(crd: &mut Value) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(names) = spec.get_mut("names").and_then(Value::as_object_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let unset = |names: &serde_json::Map<String, Value>, k: &str| {
            names
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
        };
        if unset(names, "singular") && !kind.is_empty() {
            names.insert("singular".into(), json!(kind.to_lowercase()));
        }
        if unset(names, "listKind") && !kind.is_empty() {
            names.insert("listKind".into(), json!(format!("{kind}List")));
        }
    }
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
    if let Some(service) = spec
        .get_mut("conversion")
        .and_then(|c| c.pointer_mut("/webhook/clientConfig/service"))
        .and_then(Value::as_object_mut)
        && service.get("port").is_none_or(Value::is_null)
    {
        service.insert("port".into(), json!(443));
    }
}

/// The versions marked as storage, in order.
fn storage_versions(crd: &Value) -> impl Iterator<Item = &Value> {
    crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["storage"] == json!(true))
        .map(|v| &v["name"])
}

/// The status a CRD is created with: no conditions and no accepted names yet (kube-apiserver's
/// naming and establishing controllers write those afterwards), its storage version stored.
pub fn crd_created_status(crd: &Value) -> Value {
    json!({
        "conditions": null,
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": storage_versions(crd).cloned().collect::<Vec<_>>(),
    })
}

/// An update of a CRD keeps its status, adding a new storage version to `storedVersions`.
pub fn crd_updated_status(old: &Value, new: &mut Value) {
    let mut status = old.get("status").cloned().unwrap_or_else(|| json!({}));
    let mut stored: Vec<Value> = status["storedVersions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for v in storage_versions(new) {
        if !stored.contains(v) {
            stored.push(v.clone());
        }
    }
    status["storedVersions"] = Value::Array(stored);
    new["status"] = status;
}

/// Set a CRD condition as kube-apiserver's helper does: an existing condition of the type is
/// replaced in place (keeping its lastTransitionTime while its status stays), a new one appended.
/// True when anything changed.
pub fn set_crd_condition(
    crd: &mut Value,
    type_: &str,
    status: &str,
    reason: &str,
    message: &str,
    now: &str,
) -> bool {
    let mut conditions = crd["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut new = json!({"type": type_, "status": status, "lastTransitionTime": now, "reason": reason, "message": message});
    match conditions.iter_mut().find(|c| c["type"] == type_) {
        Some(old) => {
            if old["status"] == status {
                new["lastTransitionTime"] = old["lastTransitionTime"].clone();
            }
            if *old == new {
                return false;
            }
            *old = new;
        }
        None => conditions.push(new),
    }
    crd["status"]["conditions"] = Value::Array(conditions);
    true
}

/// Whether a CRD has a condition of this type with status True.
pub fn crd_condition_true(crd: &Value, type_: &str) -> bool {
    crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == type_ && c["status"] == "True")
}

/// The warning kube-apiserver sends with every request to a deprecated version of a CRD: its
/// `deprecationWarning`, or one naming the preferred served version that is not deprecated.
fn deprecation_warning(crd: &Value, version: &str) -> Option<String> {
    let versions = crd["spec"]["versions"].as_array()?;
    let this = versions.iter().find(|v| v["name"] == version)?;
    if this["deprecated"] != json!(true) {
        return None;
    }
    if let Some(text) = this["deprecationWarning"].as_str() {
        return Some(text.to_string());
    }
    let group = str_at(crd, &["spec", "group"]);
    let kind = str_at(crd, &["spec", "names", "kind"]);
    let mut warning = format!("{group}/{version} {kind} is deprecated");
    if let Some(preferred) = versions
        .iter()
        .filter(|v| v["served"] == json!(true) && v["deprecated"] != json!(true))
        .filter_map(|v| v["name"].as_str())
        .min_by_key(|v| super::version_priority(v))
    {
        warning.push_str(&format!("; use {group}/{preferred} {kind}"));
    }
    Some(warning)
}

/// The kinds a CRD serves (one per served version), or the field problems that make it invalid.
pub fn crd_types(crd: &Value) -> Result<Vec<ResourceType>, Vec<FieldCause>> {
    let mut causes = Vec::new();
    let name = str_at(crd, &["metadata", "name"]);
    let group = str_at(crd, &["spec", "group"]);
    let plural = str_at(crd, &["spec", "names", "plural"]);
    let kind = str_at(crd, &["spec", "names", "kind"]);
    let scope = str_at(crd, &["spec", "scope"]);
    if group.is_empty() {
        causes.push(FieldCause::required("spec.group", ""));
    }
    if plural.is_empty() {
        causes.push(FieldCause::required("spec.names.plural", ""));
    }
    if kind.is_empty() {
        causes.push(FieldCause::required("spec.names.kind", ""));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        causes.push(FieldCause::invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    let namespaced = match scope {
        "Namespaced" => true,
        "Cluster" => false,
        "" => {
            causes.push(FieldCause::required("spec.scope", ""));
            true
        }
        other => {
            causes.push(FieldCause {
                reason: crate::error::CauseReason::NotSupported,
                field: "spec.scope".into(),
                message: format!(
                    "Unsupported value: \"{other}\": supported values: \"Cluster\", \"Namespaced\""
                ),
            });
            true
        }
    };
    let versions = crd["spec"]["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if versions
        .iter()
        .filter(|v| v["storage"] == Value::Bool(true))
        .count()
        != 1
    {
        causes.push(FieldCause {
            reason: crate::error::CauseReason::Invalid,
            field: "spec.versions".into(),
            message: format!(
                "Invalid value: {}: must have exactly one version marked as storage version",
                internal_versions(&versions)
            ),
        });
        if !versions.iter().any(|v| v["storage"] == Value::Bool(true)) {
            causes.push(FieldCause {
                reason: crate::error::CauseReason::Invalid,
                field: "status.storedVersions".into(),
                message: "Invalid value: null: must have at least one stored version".into(),
            });
        }
    }
    // Each version's structural schema: a schema that does not parse (or a CEL rule that does not
    // compile) makes the CRD invalid. The real server validates its internal form, where schemas
    // shared by every version live in `spec.validation`.
    let shared = versions
        .windows(2)
        .all(|w| w[0]["schema"] == w[1]["schema"]);
    let mut schemas = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let prefix = if shared {
            "spec.validation".to_string()
        } else {
            format!("spec.versions[{i}].schema")
        };
        let schema = match v["schema"].get("openAPIV3Schema") {
            Some(s) if s.is_object() => match Schema::parse_all(s) {
                Ok(parsed) => Some(Arc::new(parsed)),
                Err(errs) => {
                    if i == 0 || !shared {
                        causes.extend(errs.iter().map(|e| schema_cause(&prefix, e)));
                    }
                    None
                }
            },
            _ => None,
        };
        schemas.push(schema);
    }
    if !causes.is_empty() {
        return Err(causes);
    }
    let names = &crd["spec"]["names"];
    let singular = match str_at(names, &["singular"]) {
        "" => kind.to_lowercase(),
        s => s.to_string(),
    };
    let list_kind = match str_at(names, &["listKind"]) {
        "" => format!("{kind}List"),
        s => s.to_string(),
    };
    let storage = ResourceType::storage_key(group, plural);
    Ok(versions
        .iter()
        .zip(schemas)
        .filter(|(v, _)| v["served"] != Value::Bool(false))
        .map(|(v, structural)| ResourceType {
            group: group.to_string(),
            version: str_at(v, &["name"]).to_string(),
            kind: kind.to_string(),
            list_kind: list_kind.clone(),
            plural: plural.to_string(),
            singular: singular.clone(),
            namespaced,
            status: v["subresources"]["status"].is_object(),
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            create_only: false,
            storage: storage.clone(),
            behavior: custom_resource_behavior(),
            crd: Some(name.to_string()),
            deprecation_warning: deprecation_warning(crd, str_at(v, &["name"])),
            decode_check: None,
            scale: v["subresources"]
                .get("scale")
                .filter(|s| s.is_object())
                .map(|s| super::ScalePaths {
                    spec_replicas: s["specReplicasPath"]
                        .as_str()
                        .unwrap_or(".spec.replicas")
                        .to_string(),
                    status_replicas: s["statusReplicasPath"]
                        .as_str()
                        .unwrap_or(".status.replicas")
                        .to_string(),
                    label_selector: s["labelSelectorPath"].as_str().map(String::from),
                }),
            structural,
            printer_columns: v
                .get("additionalPrinterColumns")
                .filter(|c| c.is_array())
                .cloned()
                .map(Arc::new),
            schema: super::SchemaSource::Custom(
                v["schema"]
                    .get("openAPIV3Schema")
                    .filter(|s| s.is_object())
                    .cloned()
                    .map(Arc::new),
            ),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serves_each_served_version_with_its_subresources() {
        let crd = json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [
                    {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
                    {"name": "v1beta1", "served": false, "storage": false}
                ]}
        });
        let types = crd_types(&crd).expect("valid");
        assert_eq!(types.len(), 1);
        assert_eq!(
            (types[0].singular.as_str(), types[0].list_kind.as_str()),
            ("widget", "WidgetList")
        );
        assert!(types[0].status);
        assert_eq!(types[0].short_names, vec!["wd"]);
    }

    #[test]
    fn a_crd_named_unlike_its_plural_and_group_is_invalid() {
        let crd = json!({"metadata": {"name": "x"}, "spec": {"group": "g.io", "scope": "Cluster",
            "names": {"plural": "ws", "kind": "W"}, "versions": [{"name": "v1", "served": true, "storage": true}]}});
        let causes = crd_types(&crd).expect_err("invalid");
        assert_eq!(causes[0].field, "metadata.name");
    }
}
