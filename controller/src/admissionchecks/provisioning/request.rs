//! What the check creates for a workload holding quota: one PodTemplate per (merged) podset, with
//! the assigned flavors' node labels and tolerations, and the ProvisioningRequest naming them
//! with the admitted counts; and, once the request is Provisioned, the podSetUpdates that pin the
//! pods to the capacity. Kueue's `provisioning` package does the same, with two deliberate
//! differences: Kueue gives a merged podset's other members no podSetUpdate (kueue#14408), Tollgate
//! gives every member the update of the request podset it was merged into; and when merging by
//! scheduling requirements, a limit counts as the request it stands for.

use std::collections::{BTreeMap, BTreeSet};

use api::autoscaling::{self, ProvisioningRequest, ProvisioningRequestSpec};
use api::constants::{annotation, label};
use api::kueue::{
    PodSet, PodSetAssignment, PodSetMergePolicy, PodSetUpdate, ProvisioningRequestConfigSpec,
    ResourceFlavorSpec, Workload,
};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplate, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::{Resource, ResourceExt};

use super::names;
use crate::jobs::{PodSetInfo, PodSetInfoError};
use crate::resources::Amount;

/// Why the objects of a request cannot be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RequestError {
    /// The workload's podsets and its admission's assignments do not match (Kueue's
    /// `errInconsistentPodSetAssignments`).
    #[error("inconsistent podSet assignments: missing assignment for PodSet {0:?}")]
    MissingAssignment(String),
    /// The workload holds no quota, so there are no counts or flavors to ask for.
    #[error("the workload has no admission")]
    NoAdmission,
    /// The assigned flavors cannot be applied to the pod template.
    #[error(transparent)]
    PodSet(#[from] PodSetInfoError),
}

/// A podset of the request: one of the workload's podsets, with the others merged into it.
#[derive(Debug, Clone, PartialEq)]
pub struct MergedPodSet<'a> {
    /// The first member: it names the PodTemplate and gives its template and flavors.
    pub pod_set: &'a PodSet,
    pub assignment: &'a PodSetAssignment,
    /// Every member's name, the first one included, in the workload's order.
    pub members: Vec<&'a str>,
    /// The admitted counts of all members added up.
    pub count: i32,
}

/// Whether the workload needs a request: a podset with pods admitted that uses a managed
/// resource (any resource when the config names none).
pub fn is_needed(
    wl: &Workload,
    config: &ProvisioningRequestConfigSpec,
) -> Result<bool, RequestError> {
    for admitted in managed_admitted(wl, config)? {
        if admitted?.2 > 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The request's podsets: the podsets that need capacity, merged by the config's policy (greedily:
/// each joins the first earlier group it may share a template with; counts add up).
pub fn merged_pod_sets<'a>(
    wl: &'a Workload,
    config: &ProvisioningRequestConfigSpec,
) -> Result<Vec<MergedPodSet<'a>>, RequestError> {
    let mut merged: Vec<MergedPodSet<'a>> = vec![];
    for admitted in managed_admitted(wl, config)? {
        let (ps, assignment, count) = admitted?;
        if count <= 0 {
            continue;
        }
        let group = config
            .pod_set_merge_policy
            .and_then(|policy| merged.iter_mut().find(|g| can_merge(g.pod_set, ps, policy)));
        match group {
            Some(g) => {
                g.count += count;
                g.members.push(&ps.name);
            }
            None => merged.push(MergedPodSet {
                pod_set: ps,
                assignment,
                members: vec![&ps.name],
                count,
            }),
        }
    }
    Ok(merged)
}

/// The PodTemplate of a request podset: the podset's template with the assigned flavors' node
/// labels and tolerations, limits standing in for missing requests, owned by the workload until
/// the request takes it over.
pub fn pod_template(
    wl: &Workload,
    name: &str,
    merged: &MergedPodSet,
    flavors: &BTreeMap<String, ResourceFlavorSpec>,
) -> Result<PodTemplate, RequestError> {
    let mut template = merged.pod_set.template.clone();
    let info = PodSetInfo::from_assignment(merged.assignment, merged.pod_set, flavors)?;
    crate::jobs::merge_into_template(&mut template, &info)?;
    if let Some(spec) = template.spec.as_mut() {
        use_limits_as_missing_requests(spec);
    }
    Ok(PodTemplate {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: wl.namespace(),
            labels: Some(managed_label()),
            owner_references: Some(vec![controller_of(wl)]),
            ..Default::default()
        },
        template: Some(template),
    })
}

/// The ProvisioningRequest of an attempt: the config's class and parameters, overlaid by the
/// workload's `provreq.kueue.x-k8s.io/` annotations (prefix stripped), and one podset per merged
/// podset naming its PodTemplate.
pub fn provisioning_request(
    wl: &Workload,
    check: &str,
    attempt: u32,
    config: &ProvisioningRequestConfigSpec,
    merged: &[MergedPodSet],
) -> ProvisioningRequest {
    let name = names::request_name(&wl.name_any(), check, attempt);
    let parameters = parameters(wl, config);
    let pod_sets = merged
        .iter()
        .map(|m| autoscaling::PodSet {
            pod_template_ref: autoscaling::Reference {
                name: names::pod_template_name(&name, &m.pod_set.name),
            },
            count: m.count,
        })
        .collect();
    let mut request = ProvisioningRequest::new(
        &name,
        ProvisioningRequestSpec {
            pod_sets,
            provisioning_class_name: config.provisioning_class_name.clone(),
            parameters,
        },
    );
    request.metadata.namespace = wl.namespace();
    request.metadata.labels = Some(managed_label());
    request.metadata.owner_references = Some(vec![controller_of(wl)]);
    request
}

/// A request's parameters: the config's, overlaid by the workload's `provreq.kueue.x-k8s.io/`
/// annotations (prefix stripped; the annotation wins).
pub fn parameters(
    wl: &Workload,
    config: &ProvisioningRequestConfigSpec,
) -> BTreeMap<String, String> {
    let mut parameters = config.parameters.clone();
    for (key, value) in wl.annotations() {
        if let Some(param) = key.strip_prefix(annotation::PROVREQ_PREFIX) {
            parameters.insert(param.into(), value.clone());
        }
    }
    parameters
}

/// Whether a request still matches its config: same class, and every parameter it should have
/// present with the same value. A request that does not is replaced. Kueue compares with the
/// config's parameters alone, so a workload annotation overriding one of them makes Kueue delete
/// and recreate the request forever; Tollgate compares with what the request was created with.
pub fn synced_with_config(
    request: &ProvisioningRequest,
    wl: &Workload,
    config: &ProvisioningRequestConfigSpec,
) -> bool {
    request.spec.provisioning_class_name == config.provisioning_class_name
        && parameters(wl, config)
            .iter()
            .all(|(k, v)| request.spec.parameters.get(k) == Some(v))
}

/// What a Ready check hands to the pods of each podset the request covers: the annotations that
/// tie the pods to the request and its class, and the node selector entries the config takes from
/// `status.provisioningClassDetails` (a detail the class did not report is skipped).
pub fn pod_set_updates(
    wl: &Workload,
    request: &ProvisioningRequest,
    config: &ProvisioningRequestConfigSpec,
) -> Vec<PodSetUpdate> {
    let details = request
        .status
        .as_ref()
        .map(|s| &s.provisioning_class_details);
    let node_selector: BTreeMap<String, String> = config
        .pod_set_updates
        .iter()
        .flat_map(|u| &u.node_selector)
        .filter_map(|entry| {
            let value = details?.get(&entry.value_from_provisioning_class_detail)?;
            Some((entry.key.clone(), value.clone()))
        })
        .collect();
    let annotations: BTreeMap<String, String> = [
        (
            annotation::CONSUME_PROVISIONING_REQUEST.to_string(),
            request.name_any(),
        ),
        (
            annotation::PROVISIONING_CLASS_NAME.to_string(),
            request.spec.provisioning_class_name.clone(),
        ),
    ]
    .into();
    // Which workload podsets each PodTemplate stands for, merged members included.
    let groups = merged_pod_sets(wl, config).unwrap_or_default();
    let mut updates = vec![];
    let mut named = BTreeSet::new();
    for ps in &request.spec.pod_sets {
        let template = &ps.pod_template_ref.name;
        let members: Vec<&str> = match groups
            .iter()
            .find(|g| names::pod_template_name(&request.name_any(), &g.pod_set.name) == *template)
        {
            Some(group) => group.members.clone(),
            // The config's merge policy changed since: the template still names its first member.
            None => wl
                .spec
                .pod_sets
                .iter()
                .filter(|p| names::pod_template_name(&request.name_any(), &p.name) == *template)
                .map(|p| p.name.as_str())
                .collect(),
        };
        for member in members {
            if named.insert(member) {
                updates.push(PodSetUpdate {
                    name: member.into(),
                    annotations: annotations.clone(),
                    node_selector: node_selector.clone(),
                    ..Default::default()
                });
            }
        }
    }
    updates
}

/// The podsets using a managed resource, in the workload's order, each with its assignment and
/// admitted count, or the error of a podset the admission does not assign (callers stop there,
/// as Kueue does: a request found needed before it is still needed).
fn managed_admitted<'a>(
    wl: &'a Workload,
    config: &ProvisioningRequestConfigSpec,
) -> Result<Vec<Admitted<'a>>, RequestError> {
    let admission = wl
        .status
        .as_ref()
        .and_then(|s| s.admission.as_ref())
        .ok_or(RequestError::NoAdmission)?;
    let assignments: BTreeMap<&str, &PodSetAssignment> = admission
        .pod_set_assignments
        .iter()
        .map(|a| (a.name.as_str(), a))
        .collect();
    Ok(wl
        .spec
        .pod_sets
        .iter()
        .filter(|ps| uses_managed(ps, config))
        .map(|ps| {
            let assignment = *assignments
                .get(ps.name.as_str())
                .ok_or_else(|| RequestError::MissingAssignment(ps.name.clone()))?;
            Ok((ps, assignment, assignment.count.unwrap_or(ps.count)))
        })
        .collect())
}

/// A podset, its assignment and its admitted count.
type Admitted<'a> = Result<(&'a PodSet, &'a PodSetAssignment, i32), RequestError>;

/// A podset with pods that requests or limits a managed resource in any container or init
/// container (every podset with pods when the config manages no resource in particular).
fn uses_managed(ps: &PodSet, config: &ProvisioningRequestConfigSpec) -> bool {
    if ps.count <= 0 {
        return false;
    }
    if config.managed_resources.is_empty() {
        return true;
    }
    let Some(spec) = ps.template.spec.as_ref() else {
        return false;
    };
    let managed: BTreeSet<&str> = config
        .managed_resources
        .iter()
        .map(String::as_str)
        .collect();
    let uses = |c: &Container| {
        c.resources.as_ref().is_some_and(|r| {
            let named = |m: &Option<BTreeMap<String, _>>| {
                m.as_ref()
                    .is_some_and(|m| m.keys().any(|k| managed.contains(k.as_str())))
            };
            named(&r.requests) || named(&r.limits)
        })
    };
    spec.init_containers.iter().flatten().any(uses) || spec.containers.iter().any(uses)
}

fn can_merge(a: &PodSet, b: &PodSet, policy: PodSetMergePolicy) -> bool {
    match policy {
        PodSetMergePolicy::IdenticalPodTemplates => a.template == b.template,
        PodSetMergePolicy::IdenticalWorkloadSchedulingRequirements => {
            let (Some(x), Some(y)) = (a.template.spec.as_ref(), b.template.spec.as_ref()) else {
                return a.template.spec == b.template.spec;
            };
            same_requests(&x.containers, &y.containers)
                && same_requests(
                    x.init_containers.as_deref().unwrap_or_default(),
                    y.init_containers.as_deref().unwrap_or_default(),
                )
                && effective_requests(x.resources.as_ref())
                    == effective_requests(y.resources.as_ref())
                && x.node_selector == y.node_selector
                && x.tolerations == y.tolerations
                && x.affinity == y.affinity
                && x.resource_claims == y.resource_claims
        }
    }
}

/// Containers pairwise with equal requests. A limit counts as the request it stands for, as it
/// does for the scheduler and in the PodTemplates: Kueue compares the written requests only, and
/// so merges a podset whose GPUs are set as limits with a CPU-only one. Quantities compare by
/// value (`1` and `1000m` are equal), as Kubernetes' semantic equality does.
fn same_requests(a: &[Container], b: &[Container]) -> bool {
    let requests = |c: &Container| effective_requests(c.resources.as_ref());
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| requests(x) == requests(y))
}

/// Requests with limits filling in, each quantity by value (text if it does not parse).
fn effective_requests(
    resources: Option<&ResourceRequirements>,
) -> BTreeMap<String, Result<Amount, String>> {
    let Some(resources) = resources else {
        return BTreeMap::new();
    };
    let mut merged = resources.requests.clone().unwrap_or_default();
    for (name, value) in resources.limits.clone().unwrap_or_default() {
        merged.entry(name).or_insert(value);
    }
    merged
        .into_iter()
        .map(|(name, q)| (name, Amount::from_quantity(&q).map_err(|_| q.0.clone())))
        .collect()
}

/// A container's limit stands for a request it does not make (the scheduler does the same), so
/// the autoscaler sees what the pods will ask for.
fn use_limits_as_missing_requests(spec: &mut PodSpec) {
    let containers = spec
        .containers
        .iter_mut()
        .chain(spec.init_containers.iter_mut().flatten())
        .filter_map(|c| c.resources.as_mut());
    // Pod-level resources too, when the pod sets them.
    for resources in containers.chain(spec.resources.as_mut()) {
        let Some(limits) = resources.limits.clone() else {
            continue;
        };
        let requests = resources.requests.get_or_insert_with(BTreeMap::new);
        for (name, value) in limits {
            requests.entry(name).or_insert(value);
        }
    }
}

fn managed_label() -> BTreeMap<String, String> {
    [(label::MANAGED.to_string(), "true".to_string())].into()
}

/// The workload as controller owner, as `SetControllerReference` writes it.
fn controller_of(wl: &Workload) -> OwnerReference {
    OwnerReference {
        api_version: Workload::api_version(&()).into_owned(),
        kind: Workload::kind(&()).into_owned(),
        name: wl.name_any(),
        uid: wl.uid().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
