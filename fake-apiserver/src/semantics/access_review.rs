//! The answers to access reviews, from RBAC ([`super::rbac`]): SubjectAccessReview,
//! LocalSubjectAccessReview and SelfSubjectAccessReview (may this user do this?),
//! SelfSubjectRulesReview (what may I do here?) and SelfSubjectReview (who am I?), with
//! kube-apiserver's validation of what they ask.

use serde_json::{Value, json};

use super::rbac::{self, Attributes, Policy, User};
use crate::error::{ApiError, ApiResult, FieldCause};

/// What a review is answered from: who asks, and the cluster's RBAC.
pub struct Reviewer<'a> {
    pub user: &'a User,
    pub policy: &'a dyn Policy,
}

const GROUP: &str = "authorization.k8s.io";
const EXACTLY_ONE: &str =
    "exactly one of nonResourceAttributes or resourceAttributes must be specified";

/// SubjectAccessReview: the spec names the user.
pub fn subject_access(review: &mut Value, reviewer: &Reviewer<'_>) -> ApiResult<()> {
    let spec = &review["spec"];
    let mut causes = attribute_causes(spec);
    causes.extend(subject_causes(spec));
    refuse(causes)?;
    answer(review, &named_user(spec), reviewer.policy);
    Ok(())
}

/// LocalSubjectAccessReview: a SubjectAccessReview within the namespace of its URL.
pub fn local_subject_access(review: &mut Value, reviewer: &Reviewer<'_>) -> ApiResult<()> {
    let spec = &review["spec"];
    let mut causes = attribute_causes(spec);
    causes.extend(subject_causes(spec));
    let namespace = review["metadata"]["namespace"].as_str().unwrap_or("");
    if let Some(attrs) = spec["resourceAttributes"].as_object() {
        let asked = attrs.get("namespace").and_then(Value::as_str).unwrap_or("");
        if asked != namespace {
            causes.push(FieldCause::invalid(
                "spec.resourceAttributes.namespace",
                asked,
                "must match metadata.namespace",
            ));
        }
    }
    if let Some(attrs) = spec["nonResourceAttributes"].as_object() {
        causes.push(FieldCause::invalid_printed(
            "spec.nonResourceAttributes",
            &go_non_resource_attributes(attrs),
            "disallowed on this kind of request",
        ));
    }
    refuse(causes)?;
    answer(review, &named_user(spec), reviewer.policy);
    Ok(())
}

/// SelfSubjectAccessReview: may the one asking do this?
pub fn self_subject_access(review: &mut Value, reviewer: &Reviewer<'_>) -> ApiResult<()> {
    refuse(attribute_causes(&review["spec"]))?;
    answer(review, reviewer.user, reviewer.policy);
    Ok(())
}

/// SelfSubjectRulesReview: the rules that apply to the one asking in `spec.namespace`. As on
/// kube-apiserver, the answer carries the status only, not what was sent.
pub fn self_subject_rules(review: &mut Value, reviewer: &Reviewer<'_>) -> ApiResult<()> {
    let namespace = review["spec"]["namespace"].as_str().unwrap_or("");
    if namespace.is_empty() {
        return Err(ApiError::bad_request("no namespace on request"));
    }
    let (rules, errors) = rbac::rules_for(reviewer.policy, reviewer.user, namespace);
    let keep = |rule: &Value, keys: &[&str]| -> Value {
        keys.iter()
            .filter_map(|k| {
                let v = rule
                    .get(*k)
                    .filter(|v| v.as_array().is_some_and(|a| !a.is_empty()));
                v.map(|v| (k.to_string(), v.clone()))
            })
            .chain(std::iter::once((
                "verbs".to_string(),
                rule["verbs"].clone(),
            )))
            .collect::<serde_json::Map<_, _>>()
            .into()
    };
    let non_empty = |rule: &Value, key: &str| rule[key].as_array().is_some_and(|a| !a.is_empty());
    let resource_rules: Vec<Value> = rules
        .iter()
        .filter(|r| non_empty(r, "resources"))
        .map(|r| keep(r, &["apiGroups", "resources", "resourceNames"]))
        .collect();
    let non_resource_rules: Vec<Value> = rules
        .iter()
        .filter(|r| non_empty(r, "nonResourceURLs"))
        .map(|r| keep(r, &["nonResourceURLs"]))
        .collect();
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": false,
    });
    if !errors.is_empty() {
        status["evaluationError"] = json!(rbac::aggregate(&errors));
    }
    *review = json!({
        "kind": review["kind"],
        "apiVersion": review["apiVersion"],
        "metadata": {},
        "spec": {},
        "status": status,
    });
    Ok(())
}

/// SelfSubjectReview: who the one asking is.
pub fn self_subject(review: &mut Value, reviewer: &Reviewer<'_>) -> ApiResult<()> {
    review["status"] = json!({"userInfo": reviewer.user.info});
    Ok(())
}

/// The user a SubjectAccessReview's spec names.
fn named_user(spec: &Value) -> User {
    let mut info = json!({"username": spec["user"].as_str().unwrap_or("")});
    if spec["groups"].is_array() {
        info["groups"] = spec["groups"].clone();
    }
    User::from_info(info)
}

/// Fill in the status: the decision and, when there is one, its reason.
fn answer(review: &mut Value, user: &User, policy: &dyn Policy) {
    let decision = rbac::authorize(policy, user, &attributes(&review["spec"]));
    let mut status = json!({"allowed": decision.allowed});
    if !decision.reason.is_empty() {
        status["reason"] = json!(decision.reason);
    }
    review["status"] = status;
}

/// What the spec asks about.
fn attributes(spec: &Value) -> Attributes {
    let field = |attrs: &Value, key: &str| attrs[key].as_str().unwrap_or("").to_string();
    match spec.get("resourceAttributes").filter(|a| a.is_object()) {
        Some(a) => Attributes {
            verb: field(a, "verb"),
            resource_request: true,
            group: field(a, "group"),
            resource: field(a, "resource"),
            subresource: field(a, "subresource"),
            namespace: field(a, "namespace"),
            name: field(a, "name"),
            path: String::new(),
        },
        None => {
            let a = &spec["nonResourceAttributes"];
            Attributes {
                verb: field(a, "verb"),
                path: field(a, "path"),
                ..Default::default()
            }
        }
    }
}

/// Exactly one of `resourceAttributes` and `nonResourceAttributes`. kube-apiserver names the
/// non-resource attributes as the value, in Go's syntax.
fn attribute_causes(spec: &Value) -> Vec<FieldCause> {
    let resource = spec["resourceAttributes"].is_object();
    let non_resource = spec["nonResourceAttributes"].as_object();
    if resource == non_resource.is_some() {
        let value = non_resource.map_or_else(|| "null".to_string(), go_non_resource_attributes);
        return vec![FieldCause::invalid_printed("spec", &value, EXACTLY_ONE)];
    }
    Vec::new()
}

fn subject_causes(spec: &Value) -> Vec<FieldCause> {
    let user = spec["user"].as_str().unwrap_or("");
    let groups = spec["groups"].as_array().is_some_and(|g| !g.is_empty());
    if user.is_empty() && !groups {
        return vec![FieldCause::invalid(
            "spec.user",
            user,
            "at least one of user or group must be specified",
        )];
    }
    Vec::new()
}

/// The internal NonResourceAttributes as a field error prints a struct: JSON with Go's field
/// names, in their order.
fn go_non_resource_attributes(attrs: &serde_json::Map<String, Value>) -> String {
    let field = |k: &str| Value::from(attrs.get(k).and_then(Value::as_str).unwrap_or(""));
    format!(r#"{{"Path":{},"Verb":{}}}"#, field("path"), field("verb"))
}

/// kube-apiserver's 422 for a review. Its kind is blank (`.authorization.k8s.io "" is invalid`):
/// the review's REST handler sees the object after decoding has cleared its type.
fn refuse(causes: Vec<FieldCause>) -> ApiResult<()> {
    if causes.is_empty() {
        return Ok(());
    }
    let mut e = ApiError::invalid(GROUP, "", "", causes);
    if let Some(details) = e.details.as_mut().and_then(Value::as_object_mut) {
        details.remove("kind");
    }
    Err(e)
}
