//! What Kueue injects into a podset's pods once it is admitted: the labels, annotations, node selector and
//! tolerations coming from the assigned flavors and from the admission checks' podSetUpdates.
//!
//! Mirrors upstream `pkg/podset`: a [`PodSetInfo`] is built from the admission ([`PodSetInfo::from_assignment`]),
//! every admission check's update is merged into it ([`PodSetInfo::merge`], which refuses conflicting keys), and
//! the result is merged into the job's pod template when the job starts.

use std::collections::{BTreeMap, BTreeSet};

use api::constants::label;
use api::kueue::{PodSet, PodSetAssignment, PodSetUpdate, ResourceFlavorSpec, Workload};
use k8s_openapi::api::core::v1::{PodTemplateSpec, Toleration};

/// Pod label naming the podset a pod belongs to; set on every admitted podset.
pub const PODSET_LABEL: &str = "kueue.x-k8s.io/podset";
/// Pod label with the Workload's LocalQueue (upstream feature AssignQueueLabelsForPods, on by default).
pub const LOCAL_QUEUE_LABEL: &str = "kueue.x-k8s.io/local-queue-name";
/// Pod label with the admitting ClusterQueue, when its name is a valid label value (AssignQueueLabelsForPods).
pub const CLUSTER_QUEUE_LABEL: &str = "kueue.x-k8s.io/cluster-queue-name";
/// Pod template annotation naming the Workload (upstream TopologyAwareScheduling, on by default).
pub const WORKLOAD_ANNOTATION: &str = "kueue.x-k8s.io/workload";
/// Pod label marking pods that run on a MultiKueue worker for a manager's Workload.
pub const MULTIKUEUE_WORKER_WORKLOAD_POD_LABEL: &str =
    "kueue.x-k8s.io/multikueue-worker-workload-pod";

/// Why podset information could not be built or applied.
///
/// The messages are upstream's, because they end up in the Workload's `Finished` condition.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodSetInfoError {
    /// The job has a different number of podsets than the information given (upstream `BadPodSetsInfoLenError`).
    #[error("invalid podset infos: expecting {want} podset, got {got}")]
    BadLength {
        /// Podsets the job has.
        want: usize,
        /// Infos given.
        got: usize,
    },
    /// A key is already present with another value (upstream `BadPodSetsUpdateError`).
    #[error(
        "invalid admission check PodSetUpdate: conflict for {field}: conflict for key={key}, value1={existing}, value2={incoming}"
    )]
    Conflict {
        /// `annotations`, `labels` or `nodeSelector`.
        field: &'static str,
        /// The conflicting key.
        key: String,
        /// The value already there.
        existing: String,
        /// The value that was to be merged.
        incoming: String,
    },
    /// A conflict while merging one admission check's podSetUpdate.
    #[error("in admission check {check:?}: {source}")]
    InAdmissionCheck {
        /// Name of the admission check.
        check: String,
        /// The conflict.
        source: Box<PodSetInfoError>,
    },
    /// An assigned ResourceFlavor is not known (the API server's NotFound wording).
    #[error("resourceflavors.kueue.x-k8s.io {0:?} not found")]
    FlavorNotFound(String),
    /// The admission names a podset the Workload does not have (upstream would index out of range).
    #[error("podset {0:?} of the admission is not in the workload spec")]
    PodSetNotFound(String),
}

impl PodSetInfoError {
    /// Whether retrying cannot help: upstream then finishes the Workload with reason `FailedToStart`.
    pub fn is_permanent(&self) -> bool {
        match self {
            PodSetInfoError::BadLength { .. } | PodSetInfoError::Conflict { .. } => true,
            PodSetInfoError::InAdmissionCheck { source, .. } => source.is_permanent(),
            PodSetInfoError::FlavorNotFound(_) | PodSetInfoError::PodSetNotFound(_) => false,
        }
    }
}

/// What to inject into (or restore on) the pods of one podset.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PodSetInfo {
    /// Name of the podset.
    pub name: String,
    /// Number of pods admitted.
    pub count: i32,
    /// Pod labels.
    pub labels: BTreeMap<String, String>,
    /// Pod annotations.
    pub annotations: BTreeMap<String, String>,
    /// Pod node selector.
    pub node_selector: BTreeMap<String, String>,
    /// Pod tolerations.
    pub tolerations: Vec<Toleration>,
}

impl PodSetInfo {
    /// The information implied by a podset's flavor assignment: the node labels of every assigned flavor
    /// become the node selector and the flavors' tolerations are added.
    ///
    /// `count` is the admitted count, or the podset's count when the admission does not say (no partial
    /// admission). Flavors are visited in resource-name order, each once; an unknown flavor is an error,
    /// as upstream's lookup of the ResourceFlavor object fails.
    pub fn from_assignment(
        assignment: &PodSetAssignment,
        pod_set: &PodSet,
        flavors: &BTreeMap<String, ResourceFlavorSpec>,
    ) -> Result<PodSetInfo, PodSetInfoError> {
        let mut info = PodSetInfo {
            name: assignment.name.clone(),
            count: assignment.count.unwrap_or(pod_set.count),
            ..PodSetInfo::default()
        };
        let mut seen = BTreeSet::new();
        for flavor_name in assignment.flavors.values() {
            if !seen.insert(flavor_name.as_str()) {
                continue;
            }
            let flavor = flavors
                .get(flavor_name)
                .ok_or_else(|| PodSetInfoError::FlavorNotFound(flavor_name.clone()))?;
            info.node_selector.extend(flavor.node_labels.clone());
            info.tolerations.extend(flavor.tolerations.iter().cloned());
        }
        Ok(info)
    }

    /// The information an admission check asks for in one podSetUpdate.
    pub fn from_update(update: &PodSetUpdate) -> PodSetInfo {
        PodSetInfo {
            name: update.name.clone(),
            count: 0,
            labels: update.labels.clone(),
            annotations: update.annotations.clone(),
            node_selector: update.node_selector.clone(),
            tolerations: update.tolerations.clone(),
        }
    }

    /// The information a podset's template carries, e.g. to restore a stopped job's template.
    pub fn from_pod_set(pod_set: &PodSet) -> PodSetInfo {
        PodSetInfo {
            name: pod_set.name.clone(),
            count: pod_set.count,
            ..PodSetInfo::from_template(&pod_set.template)
        }
    }

    /// The mergeable fields of a pod template as they are now (name and count left empty).
    pub(crate) fn from_template(template: &PodTemplateSpec) -> PodSetInfo {
        let meta = template.metadata.as_ref();
        let spec = template.spec.as_ref();
        PodSetInfo {
            name: String::new(),
            count: 0,
            labels: meta.and_then(|m| m.labels.clone()).unwrap_or_default(),
            annotations: meta.and_then(|m| m.annotations.clone()).unwrap_or_default(),
            node_selector: spec
                .and_then(|s| s.node_selector.clone())
                .unwrap_or_default(),
            tolerations: spec.and_then(|s| s.tolerations.clone()).unwrap_or_default(),
        }
    }

    /// Adds `other`'s labels, annotations and node selector, and those of its tolerations not already present.
    ///
    /// A key already present with a different value is refused and nothing is changed: the two parties
    /// (flavor, admission check, user template) disagree on where the pods must run, and silently picking
    /// one would break the other's guarantee. Annotations are checked first, then labels, then nodeSelector.
    pub fn merge(&mut self, other: &PodSetInfo) -> Result<(), PodSetInfoError> {
        check_conflict("annotations", &self.annotations, &other.annotations)?;
        check_conflict("labels", &self.labels, &other.labels)?;
        check_conflict("nodeSelector", &self.node_selector, &other.node_selector)?;
        self.annotations.extend(other.annotations.clone());
        self.labels.extend(other.labels.clone());
        self.node_selector.extend(other.node_selector.clone());
        for toleration in &other.tolerations {
            if !self
                .tolerations
                .iter()
                .any(|t| same_toleration(t, toleration))
            {
                self.tolerations.push(toleration.clone());
            }
        }
        Ok(())
    }
}

/// Refuses a key of `incoming` that `existing` has with another value; reports the first such key.
fn check_conflict(
    field: &'static str,
    existing: &BTreeMap<String, String>,
    incoming: &BTreeMap<String, String>,
) -> Result<(), PodSetInfoError> {
    for (key, value) in existing {
        if let Some(other) = incoming.get(key)
            && other != value
        {
            return Err(PodSetInfoError::Conflict {
                field,
                key: key.clone(),
                existing: value.clone(),
                incoming: other.clone(),
            });
        }
    }
    Ok(())
}

/// Tolerations are the same when key, effect, operator and value match (tolerationSeconds is ignored, as in
/// Kubernetes' `MatchToleration`); an empty operator means `Equal`, its API default.
pub(crate) fn same_toleration(a: &Toleration, b: &Toleration) -> bool {
    fn operator(t: &Toleration) -> &str {
        match t.operator.as_deref() {
            None | Some("") => "Equal",
            Some(op) => op,
        }
    }
    let text = |s: &Option<String>| s.clone().unwrap_or_default();
    text(&a.key) == text(&b.key)
        && text(&a.effect) == text(&b.effect)
        && operator(a) == operator(b)
        && text(&a.value) == text(&b.value)
}

/// The information to inject into each admitted podset, in the order of the admission's podset assignments.
///
/// Each podset gets its flavors' node labels and tolerations, the labels and annotation upstream Kueue adds by
/// default (podset, local and cluster queue, Workload name, MultiKueue worker), then the podSetUpdate of every
/// admission check that has one for it, checks taken in the order of `status.admissionChecks` (the first
/// update naming the podset in a check counts). A conflicting key is a permanent error naming the check.
/// No admission gives no infos.
pub fn admitted_infos(
    workload: &Workload,
    flavors: &BTreeMap<String, ResourceFlavorSpec>,
) -> Result<Vec<PodSetInfo>, PodSetInfoError> {
    let Some(status) = workload.status.as_ref() else {
        return Ok(Vec::new());
    };
    let Some(admission) = status.admission.as_ref() else {
        return Ok(Vec::new());
    };
    let mut infos = Vec::with_capacity(admission.pod_set_assignments.len());
    for (index, assignment) in admission.pod_set_assignments.iter().enumerate() {
        let pod_set = admitted_pod_set(workload, index, &assignment.name)?;
        let mut info = PodSetInfo::from_assignment(assignment, pod_set, flavors)?;
        add_kueue_metadata(&mut info, workload, &admission.cluster_queue);
        for check in &status.admission_checks {
            let Some(update) = check.pod_set_updates.iter().find(|u| u.name == info.name) else {
                continue;
            };
            info.merge(&PodSetInfo::from_update(update))
                .map_err(|source| PodSetInfoError::InAdmissionCheck {
                    check: check.name.clone(),
                    source: Box::new(source),
                })?;
        }
        infos.push(info);
    }
    Ok(infos)
}

/// The Workload podset an assignment is for: the one at the same position, as upstream assumes, or else
/// the one with the same name.
fn admitted_pod_set<'a>(
    workload: &'a Workload,
    index: usize,
    name: &str,
) -> Result<&'a PodSet, PodSetInfoError> {
    let pod_sets = &workload.spec.pod_sets;
    pod_sets
        .get(index)
        .filter(|ps| ps.name == name)
        .or_else(|| pod_sets.iter().find(|ps| ps.name == name))
        .ok_or_else(|| PodSetInfoError::PodSetNotFound(name.to_owned()))
}

/// The labels and annotation upstream Kueue (default feature gates) puts on every admitted podset's pods.
fn add_kueue_metadata(info: &mut PodSetInfo, workload: &Workload, cluster_queue: &str) {
    let workload_name = workload.metadata.name.clone().unwrap_or_default();
    info.annotations
        .insert(WORKLOAD_ANNOTATION.to_owned(), workload_name);
    info.labels
        .insert(PODSET_LABEL.to_owned(), info.name.clone());
    let from_multikueue = workload
        .metadata
        .labels
        .as_ref()
        .is_some_and(|l| l.contains_key(label::MULTIKUEUE_ORIGIN));
    if from_multikueue {
        info.labels.insert(
            MULTIKUEUE_WORKER_WORKLOAD_POD_LABEL.to_owned(),
            "true".to_owned(),
        );
    }
    // Upstream sets the LocalQueue label even when the Workload has no queue name.
    let queue = workload.spec.queue_name.clone().unwrap_or_default();
    info.labels.insert(LOCAL_QUEUE_LABEL.to_owned(), queue);
    if is_dns1123_label(cluster_queue) {
        info.labels
            .insert(CLUSTER_QUEUE_LABEL.to_owned(), cluster_queue.to_owned());
    }
}

/// RFC 1123 label: at most 63 lowercase alphanumerics or '-', starting and ending alphanumeric.
fn is_dns1123_label(s: &str) -> bool {
    let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(&first), Some(&last)) => {
            bytes.len() <= 63
                && alnum(first)
                && alnum(last)
                && bytes.iter().all(|&c| alnum(c) || c == b'-')
        }
        _ => false,
    }
}
