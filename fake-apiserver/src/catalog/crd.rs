//! Turning an `apiextensions.k8s.io/v1` CustomResourceDefinition into served kinds.

use std::sync::Arc;

use serde_json::Value;

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
    use serde_json::json;

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
