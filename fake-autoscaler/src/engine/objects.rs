//! What the objects say: a request's conditions, parameters and pods, the pods consuming it, the
//! node a pod holds. Plain reads, shared by every class.

use std::collections::BTreeMap;
use std::time::Duration;

use api::autoscaling::ProvisioningRequest;
use api::constants::annotation;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

use super::{Key, World};
use crate::capacity::{PodGroup, PodShape};
use crate::messages;

/// Why a request's pods cannot be built.
#[derive(Debug)]
pub(super) enum PodsError {
    Missing {
        referenced: usize,
        missing: Vec<String>,
    },
    Invalid {
        template: String,
        error: String,
    },
}

impl PodsError {
    /// Some PodTemplates do not exist (as opposed to existing and being invalid).
    pub(super) fn is_missing(&self) -> bool {
        matches!(self, PodsError::Missing { .. })
    }
}

impl std::fmt::Display for PodsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PodsError::Missing {
                referenced,
                missing,
            } => f.write_str(&messages::missing_templates(*referenced, missing)),
            PodsError::Invalid { template, error } => write!(f, "pod template {template}: {error}"),
        }
    }
}

/// The request's pods: each podset's PodTemplate, `count` times.
pub(super) fn request_pods(
    request: &ProvisioningRequest,
    world: &World,
) -> Result<Vec<PodGroup>, PodsError> {
    let namespace = request.metadata.namespace.clone().unwrap_or_default();
    let mut pods = vec![];
    let mut missing = vec![];
    for set in &request.spec.pod_sets {
        let name = &set.pod_template_ref.name;
        let Some(template) = world.templates.get(&(namespace.clone(), name.clone())) else {
            missing.push(name.clone());
            continue;
        };
        let spec = template
            .template
            .as_ref()
            .and_then(|t| t.spec.clone())
            .unwrap_or_default();
        let shape = PodShape::from_spec(&spec).map_err(|error| PodsError::Invalid {
            template: name.clone(),
            error,
        })?;
        pods.push((shape, u32::try_from(set.count).unwrap_or(0)));
    }
    if missing.is_empty() {
        Ok(pods)
    } else {
        Err(PodsError::Missing {
            referenced: request.spec.pod_sets.len(),
            missing,
        })
    }
}

/// Scheduled, unfinished pods that consume this request's capacity (by annotation, in its namespace).
pub(super) fn consumed(request: &ProvisioningRequest, world: &World) -> u32 {
    let namespace = request.metadata.namespace.as_deref().unwrap_or("");
    let name = request.metadata.name.as_deref().unwrap_or("");
    world
        .pods
        .values()
        .filter(|p| p.metadata.namespace.as_deref() == Some(namespace) && bound_node(p).is_some())
        .filter(|p| {
            p.metadata.annotations.as_ref().is_some_and(|a| {
                [
                    annotation::CONSUME_PROVISIONING_REQUEST,
                    annotation::LEGACY_CONSUME_PROVISIONING_REQUEST,
                ]
                .iter()
                .any(|k| a.get(*k).map(String::as_str) == Some(name))
            })
        })
        .count() as u32
}

/// The pods still to come: the booked pods minus those already consuming.
pub(super) fn unconsumed(pods: &[PodGroup], mut consumed: u32) -> Vec<PodGroup> {
    pods.iter()
        .map(|(shape, count)| {
            let used = consumed.min(*count);
            consumed -= used;
            (shape.clone(), count - used)
        })
        .collect()
}

/// The node a running (or pending but scheduled) pod holds.
pub(super) fn bound_node(pod: &Pod) -> Option<&str> {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) || pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    pod.spec.as_ref()?.node_name.as_deref()
}

pub(super) fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_none_or(|cs| {
            cs.iter()
                .find(|c| c.type_ == "Ready")
                .is_none_or(|c| c.status == "True")
        })
}

pub(super) fn condition<'a>(
    request: &'a ProvisioningRequest,
    type_: &str,
) -> Option<&'a Condition> {
    request
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

pub(super) fn is_true(request: &ProvisioningRequest, type_: &str) -> bool {
    condition(request, type_).is_some_and(|c| c.status == "True")
}

/// A parameter holding a number of seconds.
pub(super) fn parameter_seconds(request: &ProvisioningRequest, name: &str) -> Option<u64> {
    request.spec.parameters.get(name)?.trim().parse().ok()
}

/// `templates` with `{request}` and `{nodeGroup}` replaced.
pub(super) fn render_all(
    templates: &BTreeMap<String, String>,
    request: &ProvisioningRequest,
    group: &str,
) -> BTreeMap<String, String> {
    templates
        .iter()
        .map(|(k, v)| {
            let value = v
                .replace("{request}", name(request))
                .replace("{nodeGroup}", group);
            (k.clone(), value)
        })
        .collect()
}

/// When the request was created (now, if the server did not say).
pub(super) fn created(request: &ProvisioningRequest, now: Timestamp) -> Timestamp {
    request
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(now, |t| t.0)
}

pub(super) fn uid(request: &ProvisioningRequest) -> &str {
    request.metadata.uid.as_deref().unwrap_or("")
}

pub(super) fn name(request: &ProvisioningRequest) -> &str {
    request.metadata.name.as_deref().unwrap_or("")
}

pub fn key_of(request: &ProvisioningRequest) -> Key {
    (
        request.metadata.namespace.clone().unwrap_or_default(),
        request.metadata.name.clone().unwrap_or_default(),
    )
}

pub(super) fn plus(t: Timestamp, d: Duration) -> Timestamp {
    t.saturating_add(SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX))
        .unwrap_or(t)
}
