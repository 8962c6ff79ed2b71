//! Jobs that run under a Workload made for them beforehand (a prebuilt Workload). MultiKueue
//! creates the Workload on a worker first, then the Job that names it with
//! `kueue.x-k8s.io/prebuilt-workload-name`; the worker's Kueue must use that Workload instead of
//! making one of its own.
//!
//! Mirrors upstream `pkg/controller/jobframework` (`PrebuiltWorkloadNameFor`,
//! `SetPrebuiltWorkloadName`, `EnsurePrebuiltWorkloadOwnership`, `EquivalentToWorkload`): the
//! Job adopts the Workload (controller reference and job-uid label), and a Workload that no
//! longer matches its Job is finished with reason `OutOfSync`, which sends MultiKueue back to
//! dispatching.

use std::collections::BTreeMap;

use api::constants::label;
use api::kueue::{PodSet, ResourceFlavorSpec, Workload};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Container;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::Value;
use support::quantity::Amount;

use super::job::{is_suspended, merge_into_template, podsets_from_job};
use super::podset::admitted_infos;
use crate::workload;

/// The label Kueue puts on a job's Workload with the job's uid.
pub const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";
/// The annotation that names the prebuilt Workload when its name is too long for a label value
/// (same key as the label, as upstream).
pub const PREBUILT_WORKLOAD_ANNOTATION: &str = label::PREBUILT_WORKLOAD_NAME;
/// `Finished` reason of a prebuilt Workload that no longer matches its Job.
pub const OUT_OF_SYNC_REASON: &str = "OutOfSync";
/// Its message (upstream's `ensurePrebuiltWorkloadInSync`).
pub const OUT_OF_SYNC_MESSAGE: &str = "The prebuilt workload is out of sync with its user job";

/// Longest label value Kubernetes accepts.
const LABEL_VALUE_MAX_LENGTH: usize = 63;

/// The prebuilt Workload an object names: its label, or else its annotation when the name is too
/// long for a label (upstream without the WorkloadIdentifierAnnotations gate).
pub fn prebuilt_workload_name(meta: &ObjectMeta) -> Option<&str> {
    let from_label = meta
        .labels
        .as_ref()
        .and_then(|l| l.get(label::PREBUILT_WORKLOAD_NAME))
        .filter(|n| !n.is_empty());
    let from_annotation = || {
        meta.annotations
            .as_ref()
            .and_then(|a| a.get(PREBUILT_WORKLOAD_ANNOTATION))
            .filter(|n| n.len() > LABEL_VALUE_MAX_LENGTH)
    };
    from_label.or_else(from_annotation).map(String::as_str)
}

/// Names the prebuilt Workload on an object: a label, or an annotation when the name is longer
/// than a label value may be (Workload names reach 253 characters).
pub fn set_prebuilt_workload_name(meta: &mut ObjectMeta, name: &str) {
    let map = if name.len() > LABEL_VALUE_MAX_LENGTH {
        &mut meta.annotations
    } else {
        &mut meta.labels
    };
    map.get_or_insert_with(BTreeMap::new)
        .insert(label::PREBUILT_WORKLOAD_NAME.to_owned(), name.to_owned());
}

/// The owner reference marked `controller`, if any.
pub fn controller_of(wl: &Workload) -> Option<&OwnerReference> {
    wl.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
}

/// Whether the job may use the Workload: nothing else controls it. Upstream ignores a prebuilt
/// Workload controlled by another object, and the job waits as if it were missing.
pub fn adoptable_by(wl: &Workload, job: &Job) -> bool {
    controller_of(wl).is_none_or(|c| Some(&c.uid) == job.metadata.uid.as_ref())
}

/// Makes the job the Workload's controller and labels the Workload with the job's uid, unless it
/// already is; returns whether the Workload changed. Call only when [`adoptable_by`].
pub fn adopt(wl: &mut Workload, job: &Job) -> bool {
    let uid = job.metadata.uid.clone().unwrap_or_default();
    if controller_of(wl).is_some_and(|c| c.uid == uid) {
        return false;
    }
    let owner = OwnerReference {
        api_version: "batch/v1".to_owned(),
        kind: "Job".to_owned(),
        name: job.metadata.name.clone().unwrap_or_default(),
        uid: uid.clone(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    };
    let owners = wl.metadata.owner_references.get_or_insert_with(Vec::new);
    owners.retain(|o| o.uid != uid);
    owners.push(owner);
    wl.metadata
        .labels
        .get_or_insert_with(BTreeMap::new)
        .insert(JOB_UID_LABEL.to_owned(), uid);
    true
}

/// Upstream's `EquivalentToWorkload`: whether the Workload still describes the job. The
/// Workload's controller must carry the job's name, and the job's podsets must match the
/// Workload's, as it runs (admitted flavors and check updates merged in) when it holds quota:
/// same counts, containers and init containers, and tolerations unless it is admitted (the
/// admitted flavors add theirs). A suspended job whose Workload holds quota may also match the
/// Workload's spec as written.
pub fn in_sync(job: &Job, wl: &Workload, flavors: &BTreeMap<String, ResourceFlavorSpec>) -> bool {
    if controller_of(wl).map(|c| c.name.as_str()) != job.metadata.name.as_deref() {
        return false;
    }
    let ours = podsets_from_job(job);
    let ignore_tolerations = workload::is_admitted(wl);
    let same = |theirs: &[PodSet]| same_pod_sets(&ours, theirs, ignore_tolerations);
    match running_pod_sets(wl, flavors) {
        Some(running) => same(&running) || (is_suspended(job) && same(&wl.spec.pod_sets)),
        None => same(&wl.spec.pod_sets),
    }
}

/// The podsets as they run once the admission is applied; `None` without quota, or when the
/// admission cannot be applied (upstream's `expectedRunningPodSets`).
fn running_pod_sets(
    wl: &Workload,
    flavors: &BTreeMap<String, ResourceFlavorSpec>,
) -> Option<Vec<PodSet>> {
    if !workload::has_quota_reservation(wl) {
        return None;
    }
    let infos = admitted_infos(wl, flavors).ok()?;
    let partial = wl.spec.pod_sets.iter().any(|ps| ps.min_count.is_some());
    let mut running = wl.spec.pod_sets.clone();
    for ps in &mut running {
        let info = infos.iter().find(|i| i.name == ps.name)?;
        merge_into_template(&mut ps.template, info).ok()?;
        if partial && ps.min_count.is_some() {
            ps.count = info.count;
        }
    }
    Some(running)
}

/// Upstream's `ComparePodSetSlices`: what decides scheduling, position by position.
fn same_pod_sets(a: &[PodSet], b: &[PodSet], ignore_tolerations: bool) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(a, b)| {
            let spec = |ps: &PodSet| ps.template.spec.clone().unwrap_or_default();
            let (sa, sb) = (spec(a), spec(b));
            a.count == b.count
                && a.min_count == b.min_count
                && (ignore_tolerations
                    || semantic(&sa.tolerations.unwrap_or_default())
                        == semantic(&sb.tolerations.unwrap_or_default()))
                && same_containers(
                    &sa.init_containers.unwrap_or_default(),
                    &sb.init_containers.unwrap_or_default(),
                )
                && same_containers(&sa.containers, &sb.containers)
        })
}

fn same_containers(a: &[Container], b: &[Container]) -> bool {
    semantic(a) == semantic(b)
}

/// A value as apimachinery's semantic equality sees it: an absent list or map equals an empty
/// one, and quantities compare by amount (`1000m` is `1`).
fn semantic<T: serde::Serialize + ?Sized>(value: &T) -> Value {
    normalized(serde_json::to_value(value).unwrap_or(Value::Null), false)
}

fn normalized(value: Value, quantities: bool) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let q = quantities || matches!(k.as_str(), "requests" | "limits");
                    (k, normalized(v, q))
                })
                .filter(|(_, v)| !is_empty(v))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| normalized(v, false)).collect())
        }
        Value::String(s) if quantities => match Amount::parse(&s) {
            Ok(amount) => Value::String(amount.to_canonical_string()),
            Err(_) => Value::String(s),
        },
        other => other,
    }
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}
