//! The webhooks of the stored Mutating- and ValidatingWebhookConfigurations, read into what a
//! call needs, with kube-apiserver's defaults for what a configuration leaves out.

use serde_json::Value;

/// Which admission phase a webhook belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Mutating,
    Validating,
}

impl Phase {
    /// The configuration kind's plural.
    pub fn plural(self) -> &'static str {
        match self {
            Phase::Mutating => "mutatingwebhookconfigurations",
            Phase::Validating => "validatingwebhookconfigurations",
        }
    }
}

/// What a failed call does to the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    Fail,
    Ignore,
}

/// How a rule's resources match a request for another version of the same resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchPolicy {
    Exact,
    Equivalent,
}

/// One entry of a webhook's `rules`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub operations: Vec<String>,
    pub groups: Vec<String>,
    pub versions: Vec<String>,
    pub resources: Vec<String>,
    /// `*`, `Cluster` or `Namespaced`.
    pub scope: String,
}

/// Where the webhook is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientConfig {
    Url(String),
    Service {
        namespace: String,
        name: String,
        path: String,
        port: u16,
    },
}

/// One webhook of a configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Hook {
    pub phase: Phase,
    /// The configuration's name (the order webhooks are called in is by it).
    pub configuration: String,
    pub name: String,
    pub client: ClientConfig,
    /// The PEM certificates decoded from `caBundle`.
    pub ca_bundle: Vec<u8>,
    pub rules: Vec<Rule>,
    pub failure_policy: FailurePolicy,
    pub match_policy: MatchPolicy,
    /// A LabelSelector object (`{}` selects everything).
    pub namespace_selector: Value,
    pub object_selector: Value,
    /// `[{name, expression}]`.
    pub match_conditions: Vec<(String, String)>,
    /// `None`, `NoneOnDryRun`, `Some` or `Unknown`.
    pub side_effects: String,
    pub timeout_seconds: u64,
    /// The AdmissionReview versions the webhook accepts, in its order of preference.
    pub review_versions: Vec<String>,
    /// Mutating webhooks only: called again when a later one changed the object.
    pub reinvoke_if_needed: bool,
}

/// The seconds a webhook is given when its configuration says nothing.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 10;

/// Every webhook of `configurations` (objects of one phase's kind), sorted as kube-apiserver calls
/// them: configurations by name, webhooks in their order within one.
pub fn hooks<'a>(phase: Phase, configurations: impl IntoIterator<Item = &'a Value>) -> Vec<Hook> {
    let mut configs: Vec<&Value> = configurations.into_iter().collect();
    configs.sort_by(|a, b| name(a).cmp(name(b)));
    configs
        .into_iter()
        .flat_map(|config| {
            let configuration = name(config).to_string();
            config["webhooks"]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |w| hook(phase, &configuration, w))
        })
        .collect()
}

fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or("")
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

fn hook(phase: Phase, configuration: &str, w: &Value) -> Hook {
    use base64::Engine as _;
    let text = |k: &str| w[k].as_str().unwrap_or("").to_string();
    let client = &w["clientConfig"];
    let client_config = match client.get("service").filter(|s| s.is_object()) {
        Some(s) => ClientConfig::Service {
            namespace: s["namespace"].as_str().unwrap_or("").to_string(),
            name: s["name"].as_str().unwrap_or("").to_string(),
            path: s["path"].as_str().unwrap_or("").to_string(),
            port: s["port"]
                .as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443),
        },
        None => ClientConfig::Url(client["url"].as_str().unwrap_or("").to_string()),
    };
    let ca_bundle = client["caBundle"]
        .as_str()
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .unwrap_or_default();
    let rules = w["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| Rule {
            operations: strings(&r["operations"]),
            groups: strings(&r["apiGroups"]),
            versions: strings(&r["apiVersions"]),
            resources: strings(&r["resources"]),
            scope: r["scope"].as_str().unwrap_or("*").to_string(),
        })
        .collect();
    let selector = |k: &str| match &w[k] {
        Value::Object(m) => Value::Object(m.clone()),
        _ => serde_json::json!({}),
    };
    Hook {
        phase,
        configuration: configuration.to_string(),
        name: text("name"),
        client: client_config,
        ca_bundle,
        rules,
        failure_policy: match w["failurePolicy"].as_str() {
            Some("Ignore") => FailurePolicy::Ignore,
            _ => FailurePolicy::Fail,
        },
        match_policy: match w["matchPolicy"].as_str() {
            Some("Exact") => MatchPolicy::Exact,
            _ => MatchPolicy::Equivalent,
        },
        namespace_selector: selector("namespaceSelector"),
        object_selector: selector("objectSelector"),
        match_conditions: w["matchConditions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| {
                (
                    c["name"].as_str().unwrap_or("").to_string(),
                    c["expression"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect(),
        side_effects: text("sideEffects"),
        timeout_seconds: w["timeoutSeconds"]
            .as_u64()
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS),
        review_versions: strings(&w["admissionReviewVersions"]),
        reinvoke_if_needed: phase == Phase::Mutating
            && w["reinvocationPolicy"].as_str() == Some("IfNeeded"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn configurations_are_called_in_name_order_and_left_out_fields_take_the_defaults() {
        let b = json!({"metadata": {"name": "b"}, "webhooks": [
            {"name": "b1.example.com", "clientConfig": {"url": "https://127.0.0.1:1/b"},
             "sideEffects": "None", "admissionReviewVersions": ["v1"]},
        ]});
        let a = json!({"metadata": {"name": "a"}, "webhooks": [
            {"name": "a1.example.com", "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
             "failurePolicy": "Ignore", "matchPolicy": "Exact", "timeoutSeconds": 3,
             "reinvocationPolicy": "IfNeeded", "sideEffects": "NoneOnDryRun",
             "admissionReviewVersions": ["v1beta1", "v1"],
             "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                        "resources": ["pods"]}]},
            {"name": "a2.example.com", "clientConfig": {"url": "https://127.0.0.1:1/a2"}},
        ]});
        let hooks = hooks(Phase::Mutating, [&b, &a]);
        let names: Vec<&str> = hooks.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(
            names,
            ["a1.example.com", "a2.example.com", "b1.example.com"]
        );
        let a1 = &hooks[0];
        assert_eq!(a1.failure_policy, FailurePolicy::Ignore);
        assert_eq!(a1.match_policy, MatchPolicy::Exact);
        assert_eq!(a1.timeout_seconds, 3);
        assert!(a1.reinvoke_if_needed);
        assert_eq!(a1.rules[0].scope, "*");
        assert_eq!(
            a1.client,
            ClientConfig::Service {
                namespace: "ns".into(),
                name: "svc".into(),
                path: String::new(),
                port: 443
            }
        );
        let b1 = &hooks[2];
        assert_eq!(b1.failure_policy, FailurePolicy::Fail);
        assert_eq!(b1.match_policy, MatchPolicy::Equivalent);
        assert_eq!(b1.timeout_seconds, DEFAULT_TIMEOUT_SECONDS);
        assert!(!b1.reinvoke_if_needed);
        assert_eq!(b1.namespace_selector, json!({}));
    }
}
