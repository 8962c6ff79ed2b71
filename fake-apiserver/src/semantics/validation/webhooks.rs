//! Mutating- and ValidatingWebhookConfigurations: the defaults kube-apiserver stores them with,
//! and what it refuses in them (the checks a webhook call depends on; names and selectors are
//! checked by the object-wide validation).

use serde_json::{Value, json};

use crate::error::FieldCause;

/// Decode-time defaults of either kind (admissionregistration/v1 `defaults.go`).
pub fn default_configuration(config: &mut Value) {
    let mutating = config["kind"].as_str() == Some("MutatingWebhookConfiguration");
    let Some(webhooks) = config.get_mut("webhooks").and_then(Value::as_array_mut) else {
        return;
    };
    for webhook in webhooks.iter_mut().filter_map(Value::as_object_mut) {
        let mut default = |key: &str, value: Value| {
            if webhook.get(key).is_none_or(Value::is_null) {
                webhook.insert(key.to_string(), value);
            }
        };
        default("failurePolicy", json!("Fail"));
        default("matchPolicy", json!("Equivalent"));
        default("namespaceSelector", json!({}));
        default("objectSelector", json!({}));
        default("timeoutSeconds", json!(10));
        if mutating {
            default("reinvocationPolicy", json!("Never"));
        }
        if let Some(rules) = webhook.get_mut("rules").and_then(Value::as_array_mut) {
            for rule in rules.iter_mut().filter_map(Value::as_object_mut) {
                if rule.get("scope").is_none_or(Value::is_null) {
                    rule.insert("scope".into(), json!("*"));
                }
            }
        }
        if let Some(service) = webhook
            .get_mut("clientConfig")
            .and_then(|c| c.get_mut("service"))
            .and_then(Value::as_object_mut)
            && service.get("port").is_none_or(Value::is_null)
        {
            service.insert("port".into(), json!(443));
        }
    }
}

const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];

/// What kube-apiserver refuses in a configuration's webhooks, in its order and words.
pub fn configuration(config: &Value) -> Vec<FieldCause> {
    let mutating = config["kind"].as_str() == Some("MutatingWebhookConfiguration");
    let mut causes = Vec::new();
    let webhooks = config["webhooks"].as_array().cloned().unwrap_or_default();
    let mut names: Vec<&str> = Vec::new();
    for (i, webhook) in webhooks.iter().enumerate() {
        let at = |field: &str| format!("webhooks[{i}].{field}");
        let name = webhook["name"].as_str().unwrap_or("");
        if name.is_empty() {
            causes.push(FieldCause::required(at("name"), ""));
        } else if name.split('.').count() < 3 {
            causes.push(FieldCause::invalid(
                at("name"),
                name,
                "should be a domain with at least three segments separated by dots",
            ));
        } else if names.contains(&name) {
            causes.push(FieldCause {
                reason: crate::error::CauseReason::Duplicate,
                field: at("name"),
                message: format!("Duplicate value: {}", json!(name)),
            });
        }
        names.push(name);
        rules(webhook, &at, &mut causes);
        if let Some(policy) = webhook["failurePolicy"].as_str()
            && !["Fail", "Ignore"].contains(&policy)
        {
            causes.push(FieldCause::not_supported(
                at("failurePolicy"),
                policy,
                &["Fail", "Ignore"],
            ));
        }
        if let Some(policy) = webhook["matchPolicy"].as_str()
            && !["Equivalent", "Exact"].contains(&policy)
        {
            causes.push(FieldCause::not_supported(
                at("matchPolicy"),
                policy,
                &["Equivalent", "Exact"],
            ));
        }
        match webhook["sideEffects"].as_str() {
            None => causes.push(FieldCause::required(
                at("sideEffects"),
                "must specify one of None, NoneOnDryRun",
            )),
            Some(s) if !["None", "NoneOnDryRun"].contains(&s) => causes.push(
                FieldCause::not_supported(at("sideEffects"), s, &["None", "NoneOnDryRun"]),
            ),
            Some(_) => {}
        }
        if let Some(t) = webhook["timeoutSeconds"].as_i64()
            && !(1..=30).contains(&t)
        {
            causes.push(FieldCause::invalid_printed(
                at("timeoutSeconds"),
                &t.to_string(),
                "the timeout value must be between 1 and 30 seconds",
            ));
        }
        review_versions(webhook, &at, &mut causes);
        client_config(webhook, &at, &mut causes);
        if mutating
            && let Some(policy) = webhook["reinvocationPolicy"].as_str()
            && !["IfNeeded", "Never"].contains(&policy)
        {
            causes.push(FieldCause::not_supported(
                at("reinvocationPolicy"),
                policy,
                &["IfNeeded", "Never"],
            ));
        }
    }
    causes
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn rules(webhook: &Value, at: &dyn Fn(&str) -> String, causes: &mut Vec<FieldCause>) {
    for (j, rule) in webhook["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let field = |f: &str| at(&format!("rules[{j}].{f}"));
        let listed = |key: &str, what: &str, causes: &mut Vec<FieldCause>| {
            let values = strings(&rule[key]);
            if values.is_empty() {
                causes.push(FieldCause::required(field(key), ""));
            } else if values.len() > 1 && values.contains(&"*") {
                causes.push(FieldCause::invalid_printed(
                    field(key),
                    &json!(values).to_string(),
                    &format!("if '*' is present, must not specify other {what}"),
                ));
            }
            values
        };
        for op in listed("operations", "operations", causes) {
            if !OPERATIONS.contains(&op) {
                causes.push(FieldCause::not_supported(
                    field("operations"),
                    op,
                    OPERATIONS,
                ));
            }
        }
        listed("apiGroups", "API groups", causes);
        listed("apiVersions", "API versions", causes);
        let resources = strings(&rule["resources"]);
        if resources.is_empty() {
            causes.push(FieldCause::required(field("resources"), ""));
        } else if resources.len() > 1 && resources.contains(&"*/*") {
            causes.push(FieldCause::invalid_printed(
                field("resources"),
                &json!(resources).to_string(),
                "if '*/*' is present, must not specify other resources",
            ));
        }
        if let Some(scope) = rule["scope"].as_str()
            && !["*", "Cluster", "Namespaced"].contains(&scope)
        {
            causes.push(FieldCause::not_supported(
                field("scope"),
                scope,
                &["*", "Cluster", "Namespaced"],
            ));
        }
    }
}

fn review_versions(webhook: &Value, at: &dyn Fn(&str) -> String, causes: &mut Vec<FieldCause>) {
    let versions = strings(&webhook["admissionReviewVersions"]);
    if versions.is_empty() {
        causes.push(FieldCause::required(
            at("admissionReviewVersions"),
            "must specify one of v1, v1beta1",
        ));
    } else if !versions.iter().any(|v| ["v1", "v1beta1"].contains(v)) {
        causes.push(FieldCause::invalid_printed(
            at("admissionReviewVersions"),
            &json!(versions).to_string(),
            "must include at least one of v1, v1beta1",
        ));
    }
}

fn client_config(webhook: &Value, at: &dyn Fn(&str) -> String, causes: &mut Vec<FieldCause>) {
    let client = &webhook["clientConfig"];
    let url = client["url"].as_str();
    let service = client.get("service").filter(|s| s.is_object());
    match (url, service) {
        (Some(_), Some(_)) | (None, None) => causes.push(FieldCause::required(
            at("clientConfig"),
            "exactly one of url or service is required",
        )),
        (Some(url), None) => {
            let field = at("clientConfig.url");
            const FORMAT: &str = "desired format: https://host[/path]";
            match url::Url::parse(url) {
                Err(e) => causes.push(FieldCause::required(
                    field,
                    &format!("url must be a valid URL: {e}; {FORMAT}"),
                )),
                Ok(u) if u.scheme() != "https" => causes.push(FieldCause::invalid(
                    field,
                    u.scheme(),
                    &format!("'https' is the only allowed URL scheme; {FORMAT}"),
                )),
                Ok(u) if u.host_str().is_none_or(str::is_empty) => causes.push(
                    FieldCause::invalid(field, "", &format!("host must be specified; {FORMAT}")),
                ),
                Ok(u) if !u.username().is_empty() || u.password().is_some() => {
                    causes.push(FieldCause::invalid(
                        field,
                        u.as_ref(),
                        "user information is not permitted in the URL",
                    ))
                }
                Ok(u) if u.fragment().is_some() => causes.push(FieldCause::invalid(
                    field,
                    u.fragment().unwrap_or(""),
                    "fragments are not permitted in the URL",
                )),
                Ok(u) if u.query().is_some() => causes.push(FieldCause::invalid(
                    field,
                    u.query().unwrap_or(""),
                    "query parameters are not permitted in the URL",
                )),
                Ok(_) => {}
            }
        }
        (None, Some(service)) => {
            for key in ["name", "namespace"] {
                if service[key].as_str().is_none_or(str::is_empty) {
                    causes.push(FieldCause::required(
                        at(&format!("clientConfig.service.{key}")),
                        "",
                    ));
                }
            }
            if let Some(port) = service["port"].as_i64()
                && !(1..=65535).contains(&port)
            {
                causes.push(FieldCause::invalid_printed(
                    at("clientConfig.service.port"),
                    &port.to_string(),
                    "port is not valid: must be between 1 and 65535, inclusive",
                ));
            }
            if let Some(path) = service["path"].as_str()
                && !path.is_empty()
                && !path.starts_with('/')
            {
                causes.push(FieldCause::invalid(
                    at("clientConfig.service.path"),
                    path,
                    "must start with a '/'",
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn left_out_fields_are_stored_with_their_defaults() {
        let mut config = json!({"kind": "MutatingWebhookConfiguration", "webhooks": [{
            "name": "a.b.c", "clientConfig": {"service": {"namespace": "n", "name": "s"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        }]});
        default_configuration(&mut config);
        let w = &config["webhooks"][0];
        assert_eq!(w["failurePolicy"], "Fail");
        assert_eq!(w["matchPolicy"], "Equivalent");
        assert_eq!(w["timeoutSeconds"], 10);
        assert_eq!(w["reinvocationPolicy"], "Never");
        assert_eq!(w["namespaceSelector"], json!({}));
        assert_eq!(w["rules"][0]["scope"], "*");
        assert_eq!(w["clientConfig"]["service"]["port"], 443);
    }

    #[test]
    fn a_webhook_needs_its_side_effects_review_versions_and_one_client_config() {
        let config = json!({"kind": "ValidatingWebhookConfiguration", "webhooks": [{"name": "a.b.c", "clientConfig": {}}]});
        let messages: Vec<String> = configuration(&config)
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
        assert_eq!(
            messages,
            [
                "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
                "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
                "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
            ]
        );
    }
}
