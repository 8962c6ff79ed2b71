//! ClusterQueue and LocalQueue status, computed from the view of the cluster: counts, quota
//! reserved and used per flavor, and the Active condition with Kueue's reasons and messages.

use std::collections::BTreeMap;

use api::constants::queue_condition as qc;
use api::kueue::{
    ClusterQueue, ClusterQueueStatus, FlavorUsage, LocalQueue, LocalQueueStatus, ResourceUsage,
    StopPolicy, Workload,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::resources::{Amount, quantity, to_units};
use crate::state::World;
use crate::workload::{self, conditions};

/// `(flavor, resource) -> units` of quota.
pub type Usage = BTreeMap<(String, String), i64>;

/// The quota a workload's admission takes, per flavor and resource.
pub fn admission_usage(wl: &Workload) -> Usage {
    let mut usage = Usage::new();
    let Some(admission) = wl.status.as_ref().and_then(|s| s.admission.as_ref()) else {
        return usage;
    };
    for psa in &admission.pod_set_assignments {
        for (resource, q) in &psa.resource_usage {
            let Some(flavor) = psa.flavors.get(resource) else {
                continue;
            };
            let units = units_of(resource, q);
            let slot = usage.entry((flavor.clone(), resource.clone())).or_insert(0);
            *slot = slot.saturating_add(units);
        }
    }
    usage
}

/// Whether a ClusterQueue can admit, and why not: `(active, reason, message)`.
pub fn cluster_queue_active(cq: &ClusterQueue, world: &World) -> (bool, &'static str, String) {
    if cq.metadata.deletion_timestamp.is_some() {
        return (
            false,
            qc::REASON_TERMINATING,
            "Can't admit new workloads; clusterQueue is terminating".into(),
        );
    }
    let mut reasons: Vec<&'static str> = vec![];
    let mut messages: Vec<String> = vec![];
    if cq.spec.stop_policy.unwrap_or_default() != StopPolicy::None {
        reasons.push(qc::REASON_STOPPED);
        messages.push("is stopped".into());
    }
    let mut missing_flavors: Vec<&str> = cq
        .spec
        .resource_groups
        .iter()
        .flat_map(|g| g.flavors.iter().map(|f| f.name.as_str()))
        .filter(|f| world.flavors.get(f).is_none())
        .collect();
    missing_flavors.dedup();
    if !missing_flavors.is_empty() {
        reasons.push(qc::REASON_FLAVOR_NOT_FOUND);
        messages.push(format!(
            "references missing ResourceFlavor(s): {}",
            missing_flavors.join(",")
        ));
    }
    let checks = workload::checks::cluster_queue_checks(&cq.spec);
    let missing: Vec<&str> = checks
        .keys()
        .filter(|c| world.admission_checks.get(c).is_none())
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        reasons.push(qc::REASON_ADMISSION_CHECK_NOT_FOUND);
        messages.push(format!(
            "references missing AdmissionCheck(s): {}",
            missing.join(",")
        ));
    }
    let inactive: Vec<&str> = checks
        .keys()
        .filter(|c| {
            world.admission_checks.get(c).is_some_and(|ac| {
                !ac.status
                    .as_ref()
                    .is_some_and(|s| conditions::is_true(&s.conditions, qc::ACTIVE))
            })
        })
        .map(String::as_str)
        .collect();
    if !inactive.is_empty() {
        reasons.push(qc::REASON_ADMISSION_CHECK_INACTIVE);
        messages.push(format!(
            "references inactive AdmissionCheck(s): {}",
            inactive.join(",")
        ));
    }
    match reasons.first() {
        None => (true, qc::REASON_READY, "Can admit new workloads".into()),
        Some(reason) => (
            false,
            reason,
            format!("Can't admit new workloads: {}.", messages.join(", ")),
        ),
    }
}

/// Counts of a queue's workloads.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    pub pending: i32,
    pub reserving: i32,
    pub admitted: i32,
}

/// The status a ClusterQueue should have. `workloads` are the unfinished workloads holding quota
/// in it.
pub fn cluster_queue_status<'a>(
    cq: &ClusterQueue,
    world: &World,
    workloads: impl Iterator<Item = &'a Workload>,
    pending: i32,
    now: &Time,
) -> ClusterQueueStatus {
    let (reserved, used, counts) = usage_of(workloads, pending);
    let mut status = cq.status.clone().unwrap_or_default();
    status.pending_workloads = counts.pending;
    status.reserving_workloads = counts.reserving;
    status.admitted_workloads = counts.admitted;
    status.flavors_reservation = flavor_usage(cq, &reserved);
    status.flavors_usage = flavor_usage(cq, &used);
    let (active, reason, message) = cluster_queue_active(cq, world);
    let mut c = conditions::new(qc::ACTIVE, active, reason, &message, now);
    c.observed_generation = cq.metadata.generation;
    conditions::set(&mut status.conditions, c);
    status
}

/// The status a LocalQueue should have.
pub fn local_queue_status<'a>(
    lq: &LocalQueue,
    world: &World,
    workloads: impl Iterator<Item = &'a Workload>,
    pending: i32,
    now: &Time,
) -> LocalQueueStatus {
    let cq = world.cluster_queues.get(&lq.spec.cluster_queue);
    let (reserved, used, counts) = usage_of(workloads, pending);
    let mut status = lq.status.clone().unwrap_or_default();
    status.pending_workloads = counts.pending;
    status.reserving_workloads = counts.reserving;
    status.admitted_workloads = counts.admitted;
    match cq {
        Some(cq) => {
            status.flavors_reservation = flavor_usage(cq, &reserved);
            status.flavors_usage = flavor_usage(cq, &used);
        }
        None => {
            status.flavors_reservation.clear();
            status.flavors_usage.clear();
        }
    }
    let (active, reason, message) = if lq.spec.stop_policy.unwrap_or_default() != StopPolicy::None {
        (false, qc::REASON_STOPPED, "LocalQueue is stopped")
    } else {
        match cq {
            None => (
                false,
                qc::REASON_CLUSTER_QUEUE_DOES_NOT_EXIST,
                "Can't submit new workloads to clusterQueue",
            ),
            Some(cq)
                if !cq
                    .status
                    .as_ref()
                    .is_some_and(|s| conditions::is_true(&s.conditions, qc::ACTIVE)) =>
            {
                (
                    false,
                    qc::REASON_CLUSTER_QUEUE_IS_INACTIVE,
                    "Can't submit new workloads to clusterQueue",
                )
            }
            Some(_) => (
                true,
                qc::REASON_READY,
                "Can submit new workloads to localQueue",
            ),
        }
    };
    let mut c = conditions::new(qc::ACTIVE, active, reason, message, now);
    c.observed_generation = lq.metadata.generation;
    conditions::set(&mut status.conditions, c);
    status
}

fn usage_of<'a>(
    workloads: impl Iterator<Item = &'a Workload>,
    pending: i32,
) -> (Usage, Usage, Counts) {
    let mut reserved = Usage::new();
    let mut used = Usage::new();
    let mut counts = Counts {
        pending,
        ..Default::default()
    };
    for wl in workloads {
        let usage = admission_usage(wl);
        counts.reserving += 1;
        add(&mut reserved, &usage);
        if workload::is_admitted(wl) {
            counts.admitted += 1;
            add(&mut used, &usage);
        }
    }
    (reserved, used, counts)
}

fn add(total: &mut Usage, more: &Usage) {
    for (k, v) in more {
        let slot = total.entry(k.clone()).or_insert(0);
        *slot = slot.saturating_add(*v);
    }
}

/// Every flavor and covered resource of the queue, in its order, with the total and the part
/// above the nominal quota (borrowed).
fn flavor_usage(cq: &ClusterQueue, usage: &Usage) -> Vec<FlavorUsage> {
    let mut out: Vec<FlavorUsage> = vec![];
    for group in &cq.spec.resource_groups {
        for flavor in &group.flavors {
            let resources = flavor
                .resources
                .iter()
                .map(|quota| {
                    let total = usage
                        .get(&(flavor.name.clone(), quota.name.clone()))
                        .copied()
                        .unwrap_or(0);
                    let nominal = units_of(&quota.name, &quota.nominal_quota);
                    ResourceUsage {
                        name: quota.name.clone(),
                        total: Some(quantity(&quota.name, total)),
                        borrowed: Some(quantity(&quota.name, (total - nominal).max(0))),
                    }
                })
                .collect();
            out.push(FlavorUsage {
                name: flavor.name.clone(),
                resources,
            });
        }
    }
    out
}

/// A quantity in scheduler units; an unparsable one counts as zero (the API server validates
/// quantities, so this only guards against the impossible).
pub fn units_of(
    resource: &str,
    q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity,
) -> i64 {
    Amount::from_quantity(q)
        .map(|a| to_units(resource, &a))
        .unwrap_or(0)
}
