//! The quota model one scheduling cycle works on: every ClusterQueue's quotas (parsed once into
//! scheduler units), the quota its reserving workloads hold, and the cohort arithmetic that says
//! how much a queue may still take.
//!
//! Cohorts are one level deep, as a ClusterQueue's `cohortName` makes them: a cohort has no quota
//! of its own, it is the pool its members lend into. For each flavor/resource:
//!
//! - a member lends `min(nominal, lendingLimit)` (all of its nominal quota without a lending
//!   limit) and keeps the rest, its *guaranteed* quota, for itself;
//! - the cohort's pool is the sum of what its members lend, and the pool's usage is the sum of
//!   each member's usage beyond its guaranteed quota;
//! - a member may take its unused guaranteed quota plus what is unused in the pool, and never
//!   more than `borrowingLimit` beyond its nominal quota.
//!
//! This is upstream Kueue's resource-node arithmetic (`pkg/cache/scheduler/resource_node.go`)
//! restricted to a tree of height one. All sums saturate instead of overflowing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;

use api::kueue::{
    ClusterQueuePreemption, ClusterQueueSpec, FlavorUsage, ResourceFlavorSpec, ResourceGroup,
    ResourceUsage,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use crate::resources::format_units;

/// A `(flavor, resource)` pair: the unit quota is counted in.
pub type FlavorResource = (String, String);

/// Quantities per flavor and resource, in scheduler units (cpu millicores, others whole units).
pub type Usage = BTreeMap<FlavorResource, i64>;

/// Builds a [`FlavorResource`] key.
pub fn flavor_resource(flavor: &str, resource: &str) -> FlavorResource {
    (flavor.to_string(), resource.to_string())
}

/// Why a ClusterQueue's quotas could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SnapshotError {
    /// A quota quantity could not be converted into scheduler units.
    #[error(
        "ClusterQueue {cluster_queue}: invalid {field} for resource {resource} in flavor {flavor}: {message}"
    )]
    InvalidQuantity {
        /// The ClusterQueue.
        cluster_queue: String,
        /// The flavor whose quota is invalid.
        flavor: String,
        /// The resource whose quota is invalid.
        resource: String,
        /// `nominalQuota`, `borrowingLimit` or `lendingLimit`.
        field: &'static str,
        /// What the conversion reported.
        message: String,
    },
}

/// The quota of one flavor/resource in one ClusterQueue, in scheduler units.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResourceQuota {
    /// What the queue owns.
    pub nominal: i64,
    /// How far beyond `nominal` the queue may borrow; `None` is unlimited.
    pub borrowing_limit: Option<i64>,
    /// How much of `nominal` the queue lends to its cohort; `None` lends all of it.
    pub lending_limit: Option<i64>,
}

impl ResourceQuota {
    /// The part of the nominal quota that is never lent (nominal beyond the lending limit):
    /// other cohort members cannot see it, so the queue can always use it.
    pub fn guaranteed(&self) -> i64 {
        self.lending_limit
            .map_or(0, |limit| self.nominal.saturating_sub(limit).max(0))
    }

    /// The part of the nominal quota this queue puts into its cohort's pool.
    pub fn lendable(&self) -> i64 {
        self.nominal.saturating_sub(self.guaranteed())
    }
}

/// A workload holding a quota reservation in a ClusterQueue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReservedWorkload {
    /// `namespace/name`.
    pub key: String,
    /// The Workload's UID; the last tie-breaker when ordering preemption candidates.
    pub uid: String,
    /// Effective priority.
    pub priority: i32,
    /// When the quota was reserved (e.g. unix seconds of `QuotaReserved`): among candidates of
    /// equal priority, the most recently reserved is preempted first.
    pub reserved_at: i64,
    /// The workload's queue-order timestamp (its creation time, unix seconds): the policy
    /// `LowerOrNewerEqualPriority` compares it with the preemptor's.
    pub queue_order_time: i64,
    /// Whether the workload is already being evicted (still holding quota): such workloads are
    /// preempted first, as upstream does, since their quota is about to be released anyway.
    pub evicted: bool,
    /// The quota it reserves.
    pub usage: Usage,
}

impl ReservedWorkload {
    /// Whether it reserves quota in any of `frs`.
    pub fn uses_any(&self, frs: &BTreeSet<FlavorResource>) -> bool {
        self.usage.keys().any(|fr| frs.contains(fr))
    }
}

/// One ClusterQueue: its spec, quotas parsed once, and the quota held by its reserving workloads.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClusterQueueSnapshot {
    /// The ClusterQueue's name.
    pub name: String,
    /// The spec as written (resource groups give the flavor order; preemption the policies).
    pub spec: ClusterQueueSpec,
    /// `spec`'s quotas in scheduler units.
    pub quotas: BTreeMap<FlavorResource, ResourceQuota>,
    /// Quota reserved by every workload in `workloads`.
    pub usage: Usage,
    /// Workloads holding a reservation, by `namespace/name`.
    pub workloads: BTreeMap<String, ReservedWorkload>,
}

impl ClusterQueueSnapshot {
    /// Reads `spec`'s quotas once, converting each quantity with `to_units(resource, quantity)`
    /// (the controller passes `resources::to_units`), so the scheduler never parses quantities.
    pub fn new<E: Display>(
        name: impl Into<String>,
        spec: ClusterQueueSpec,
        to_units: impl Fn(&str, &Quantity) -> Result<i64, E>,
    ) -> Result<Self, SnapshotError> {
        let name = name.into();
        let mut quotas = BTreeMap::new();
        for group in &spec.resource_groups {
            for flavor in &group.flavors {
                for quota in &flavor.resources {
                    let convert = |field: &'static str, quantity: &Quantity| {
                        to_units(&quota.name, quantity).map_err(|e| {
                            SnapshotError::InvalidQuantity {
                                cluster_queue: name.clone(),
                                flavor: flavor.name.clone(),
                                resource: quota.name.clone(),
                                field,
                                message: e.to_string(),
                            }
                        })
                    };
                    let parsed = ResourceQuota {
                        nominal: convert("nominalQuota", &quota.nominal_quota)?,
                        borrowing_limit: quota
                            .borrowing_limit
                            .as_ref()
                            .map(|q| convert("borrowingLimit", q))
                            .transpose()?,
                        lending_limit: quota
                            .lending_limit
                            .as_ref()
                            .map(|q| convert("lendingLimit", q))
                            .transpose()?,
                    };
                    quotas.insert(flavor_resource(&flavor.name, &quota.name), parsed);
                }
            }
        }
        Ok(Self {
            name,
            spec,
            quotas,
            usage: Usage::new(),
            workloads: BTreeMap::new(),
        })
    }

    /// The cohort this queue belongs to; an empty `cohortName` is no cohort.
    pub fn cohort(&self) -> Option<&str> {
        self.spec.cohort_name.as_deref().filter(|c| !c.is_empty())
    }

    /// The quota of `fr`; zero when the queue does not list it.
    pub fn quota(&self, fr: &FlavorResource) -> ResourceQuota {
        self.quotas.get(fr).copied().unwrap_or_default()
    }

    /// Quota reserved in `fr`.
    pub fn usage_of(&self, fr: &FlavorResource) -> i64 {
        self.usage.get(fr).copied().unwrap_or(0)
    }

    /// The resource group covering `resource`, if any.
    pub fn resource_group(&self, resource: &str) -> Option<&ResourceGroup> {
        self.spec
            .resource_groups
            .iter()
            .find(|g| g.covered_resources.iter().any(|r| r == resource))
    }

    /// The preemption policies (both `Never` when unset).
    pub fn preemption(&self) -> ClusterQueuePreemption {
        self.spec.preemption.clone().unwrap_or_default()
    }

    /// How much of the reserved quota in `fr` exceeds the nominal quota.
    pub fn borrowed(&self, fr: &FlavorResource) -> i64 {
        self.usage_of(fr)
            .saturating_sub(self.quota(fr).nominal)
            .max(0)
    }

    /// Per flavor (resource-group order) and resource (sorted by name): what `usage` amounts to
    /// and how much of it is borrowed (always 0 outside a cohort), the shape of
    /// `status.flavorsReservation` (pass [`Self::usage`]) and `status.flavorsUsage` (pass the
    /// usage of admitted workloads only).
    pub fn usage_report(&self, usage: &Usage) -> Vec<FlavorReservation> {
        let in_cohort = self.cohort().is_some();
        let mut report = Vec::new();
        for group in &self.spec.resource_groups {
            let mut resources: Vec<&String> = group.covered_resources.iter().collect();
            resources.sort();
            resources.dedup();
            for flavor in &group.flavors {
                let resources = resources
                    .iter()
                    .map(|resource| {
                        let fr = flavor_resource(&flavor.name, resource);
                        let total = usage.get(&fr).copied().unwrap_or(0);
                        let borrowed = if in_cohort {
                            total.saturating_sub(self.quota(&fr).nominal).max(0)
                        } else {
                            0
                        };
                        ResourceReservation {
                            resource: (*resource).clone(),
                            total,
                            borrowed,
                        }
                    })
                    .collect();
                report.push(FlavorReservation {
                    flavor: flavor.name.clone(),
                    resources,
                });
            }
        }
        report
    }

    /// [`Self::usage_report`] of the reserved quota, as the API's `flavorsReservation`.
    pub fn flavors_reservation_status(&self) -> Vec<FlavorUsage> {
        self.usage_report(&self.usage)
            .iter()
            .map(FlavorReservation::to_api)
            .collect()
    }
}

/// Usage of one flavor, for the ClusterQueue status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlavorReservation {
    /// The flavor.
    pub flavor: String,
    /// Its resources, sorted by name.
    pub resources: Vec<ResourceReservation>,
}

/// Usage of one resource in one flavor, for the ClusterQueue status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceReservation {
    /// The resource.
    pub resource: String,
    /// Everything used, borrowed quota included.
    pub total: i64,
    /// The part of `total` beyond the nominal quota.
    pub borrowed: i64,
}

impl FlavorReservation {
    /// The API form; both quantities are always written, `0` included, as Go does for a
    /// non-pointer `resource.Quantity`.
    pub fn to_api(&self) -> FlavorUsage {
        FlavorUsage {
            name: self.flavor.clone(),
            resources: self
                .resources
                .iter()
                .map(|r| ResourceUsage {
                    name: r.resource.clone(),
                    total: Some(Quantity(format_units(&r.resource, r.total))),
                    borrowed: Some(Quantity(format_units(&r.resource, r.borrowed))),
                })
                .collect(),
        }
    }
}

/// Every ResourceFlavor and ClusterQueue, as one scheduling cycle sees them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// ResourceFlavors by name.
    pub flavors: BTreeMap<String, ResourceFlavorSpec>,
    /// ClusterQueues by name.
    pub cluster_queues: BTreeMap<String, ClusterQueueSnapshot>,
}

impl Snapshot {
    /// Adds (or replaces) a ClusterQueue.
    pub fn insert_cluster_queue(&mut self, cq: ClusterQueueSnapshot) {
        self.cluster_queues.insert(cq.name.clone(), cq);
    }

    /// Records that `wl` reserves quota in `cq`, replacing an earlier entry with the same key.
    /// Returns false (and changes nothing) when `cq` is unknown.
    pub fn add_workload(&mut self, cq: &str, wl: ReservedWorkload) -> bool {
        let Some(queue) = self.cluster_queues.get_mut(cq) else {
            return false;
        };
        if let Some(old) = queue.workloads.remove(&wl.key) {
            subtract_usage(&mut queue.usage, &old.usage);
        }
        add_usage(&mut queue.usage, &wl.usage);
        queue.workloads.insert(wl.key.clone(), wl);
        true
    }

    /// Sets `usage` aside in `cq` for the rest of a scheduling cycle, held by no workload (so it
    /// cannot be preempted): a preemptor's share while its victims are being evicted.
    pub fn set_aside(&mut self, cq: &str, usage: &Usage) -> bool {
        let Some(queue) = self.cluster_queues.get_mut(cq) else {
            return false;
        };
        add_usage(&mut queue.usage, usage);
        true
    }

    /// Releases the quota of workload `key` in `cq`, returning it.
    pub fn remove_workload(&mut self, cq: &str, key: &str) -> Option<ReservedWorkload> {
        let queue = self.cluster_queues.get_mut(cq)?;
        let wl = queue.workloads.remove(key)?;
        subtract_usage(&mut queue.usage, &wl.usage);
        Some(wl)
    }

    /// What `cq` can take now in `flavor`/`resource` without preempting: its unused guaranteed
    /// quota plus what is unused in its cohort, capped by its borrowing limit. Never negative
    /// (an over-admitted queue has 0); 0 for an unknown queue.
    pub fn available(&self, cq: &str, flavor: &str, resource: &str) -> i64 {
        let fr = flavor_resource(flavor, resource);
        self.cluster_queues
            .get(cq)
            .map_or(0, |q| self.recorded().available(q, &fr))
    }

    /// The largest amount `cq` could ever hold in `flavor`/`resource`: its nominal quota plus
    /// everything it could borrow if nothing else in the cohort were used.
    pub fn potential_available(&self, cq: &str, flavor: &str, resource: &str) -> i64 {
        let fr = flavor_resource(flavor, resource);
        self.cluster_queues
            .get(cq)
            .map_or(0, |q| self.recorded().potential_available(q, &fr))
    }

    /// How much of `cq`'s reserved quota in `flavor`/`resource` exceeds its nominal quota.
    pub fn borrowing(&self, cq: &str, flavor: &str, resource: &str) -> i64 {
        let fr = flavor_resource(flavor, resource);
        self.cluster_queues.get(cq).map_or(0, |q| q.borrowed(&fr))
    }

    /// The members of `cohort`, in name order.
    pub fn cohort_members<'a>(
        &'a self,
        cohort: &'a str,
    ) -> impl Iterator<Item = &'a ClusterQueueSnapshot> + 'a {
        self.cluster_queues
            .values()
            .filter(move |q| q.cohort() == Some(cohort))
    }

    /// The queue's path from the root as the preemption message writes it: `/<cohort>/<cq>`, or
    /// `/<cq>` outside a cohort.
    pub fn cq_path(&self, cq: &str) -> String {
        match self.cluster_queues.get(cq).and_then(|q| q.cohort()) {
            Some(cohort) => format!("/{cohort}/{cq}"),
            None => format!("/{cq}"),
        }
    }

    /// Quota arithmetic over the recorded usage.
    pub(crate) fn recorded(&self) -> Quotas<'_, Recorded> {
        Quotas {
            snapshot: self,
            source: &Recorded,
        }
    }
}

fn add_usage(total: &mut Usage, delta: &Usage) {
    for (fr, value) in delta {
        let entry = total.entry(fr.clone()).or_insert(0);
        *entry = entry.saturating_add(*value);
    }
}

fn subtract_usage(total: &mut Usage, delta: &Usage) {
    for (fr, value) in delta {
        let entry = total.entry(fr.clone()).or_insert(0);
        *entry = entry.saturating_sub(*value);
        if *entry == 0 {
            total.remove(fr);
        }
    }
}

/// Where quota arithmetic reads a queue's usage from: the snapshot itself, or a simulation in
/// which some workloads were removed (preemption), without cloning the snapshot.
pub(crate) trait UsageSource {
    fn usage(&self, cq: &ClusterQueueSnapshot, fr: &FlavorResource) -> i64;
}

/// The usage recorded in the snapshot.
pub(crate) struct Recorded;

impl UsageSource for Recorded {
    fn usage(&self, cq: &ClusterQueueSnapshot, fr: &FlavorResource) -> i64 {
        cq.usage_of(fr)
    }
}

/// A simulation: some queues' usage replaced (only the queues touched are copied).
#[derive(Debug, Default)]
pub(crate) struct SimulatedUsage {
    overrides: BTreeMap<String, Usage>,
}

impl SimulatedUsage {
    /// Releases `wl`'s quota from `cq` in the simulation.
    pub(crate) fn remove(&mut self, cq: &ClusterQueueSnapshot, wl: &ReservedWorkload) {
        subtract_usage(self.usage_mut(cq), &wl.usage);
    }

    /// Puts `wl`'s quota back into `cq` in the simulation.
    pub(crate) fn add(&mut self, cq: &ClusterQueueSnapshot, wl: &ReservedWorkload) {
        add_usage(self.usage_mut(cq), &wl.usage);
    }

    fn usage_mut(&mut self, cq: &ClusterQueueSnapshot) -> &mut Usage {
        self.overrides
            .entry(cq.name.clone())
            .or_insert_with(|| cq.usage.clone())
    }
}

impl UsageSource for SimulatedUsage {
    fn usage(&self, cq: &ClusterQueueSnapshot, fr: &FlavorResource) -> i64 {
        match self.overrides.get(&cq.name) {
            Some(usage) => usage.get(fr).copied().unwrap_or(0),
            None => cq.usage_of(fr),
        }
    }
}

/// Quota arithmetic for one cycle, reading usage from `source`.
pub(crate) struct Quotas<'a, U> {
    pub(crate) snapshot: &'a Snapshot,
    pub(crate) source: &'a U,
}

impl<U: UsageSource> Quotas<'_, U> {
    /// Usage of `cq` in `fr`.
    pub(crate) fn usage(&self, cq: &ClusterQueueSnapshot, fr: &FlavorResource) -> i64 {
        self.source.usage(cq, fr)
    }

    /// The cohort pool in `fr`: what the members lend, and how much of it they use.
    fn cohort_pool(&self, cohort: &str, fr: &FlavorResource) -> (i64, i64) {
        self.snapshot
            .cohort_members(cohort)
            .fold((0i64, 0i64), |(quota, used), member| {
                let q = member.quota(fr);
                let beyond_guaranteed =
                    self.usage(member, fr).saturating_sub(q.guaranteed()).max(0);
                (
                    quota.saturating_add(q.lendable()),
                    used.saturating_add(beyond_guaranteed),
                )
            })
    }

    /// Unused guaranteed (never lent) quota of `cq`.
    pub(crate) fn local_available(&self, cq: &ClusterQueueSnapshot, fr: &FlavorResource) -> i64 {
        cq.quota(fr)
            .guaranteed()
            .saturating_sub(self.usage(cq, fr))
            .max(0)
    }

    /// What `cq` can take now, clamped at 0 (see [`Snapshot::available`]).
    pub(crate) fn available(&self, cq: &ClusterQueueSnapshot, fr: &FlavorResource) -> i64 {
        let quota = cq.quota(fr);
        let used = self.usage(cq, fr);
        let Some(cohort) = cq.cohort() else {
            return quota.nominal.saturating_sub(used).max(0);
        };
        let (pool, pool_used) = self.cohort_pool(cohort, fr);
        let mut from_pool = pool.saturating_sub(pool_used);
        if let Some(limit) = quota.borrowing_limit {
            // What the queue put in the pool and does not use itself, plus what it may borrow.
            let guaranteed = quota.guaranteed();
            let used_in_pool = used.saturating_sub(guaranteed).max(0);
            let cap = quota
                .lendable()
                .saturating_sub(used_in_pool)
                .saturating_add(limit);
            from_pool = from_pool.min(cap);
        }
        self.local_available(cq, fr)
            .saturating_add(from_pool)
            .max(0)
    }

    /// The most `cq` could ever hold (see [`Snapshot::potential_available`]).
    pub(crate) fn potential_available(
        &self,
        cq: &ClusterQueueSnapshot,
        fr: &FlavorResource,
    ) -> i64 {
        let quota = cq.quota(fr);
        let Some(cohort) = cq.cohort() else {
            return quota.nominal;
        };
        let (pool, _) = self.cohort_pool(cohort, fr);
        let potential = quota.guaranteed().saturating_add(pool);
        match quota.borrowing_limit {
            Some(limit) => potential.min(quota.nominal.saturating_add(limit)),
            None => potential,
        }
    }

    /// Whether holding `extra` more in `fr` would take `cq` beyond its nominal quota.
    pub(crate) fn borrowing_with(
        &self,
        cq: &ClusterQueueSnapshot,
        fr: &FlavorResource,
        extra: i64,
    ) -> bool {
        cq.quota(fr).nominal < self.usage(cq, fr).saturating_add(extra)
    }

    /// Whether `cq` holds no more than its nominal quota in every one of `frs`.
    pub(crate) fn within_nominal(
        &self,
        cq: &ClusterQueueSnapshot,
        frs: &BTreeSet<FlavorResource>,
    ) -> bool {
        frs.iter().all(|fr| !self.borrowing_with(cq, fr, 0))
    }

    /// How far from `cq` quota for `extra` more in `fr` comes from: 0 when it fits in the
    /// queue's nominal quota (or the queue has no cohort), 1 when it needs the cohort. The
    /// second value says whether the queue could reclaim lent quota from its cohort (it is in a
    /// cohort and `extra` fits in its nominal quota), which lets preemption be simulated.
    pub(crate) fn borrowing_level(
        &self,
        cq: &ClusterQueueSnapshot,
        fr: &FlavorResource,
        extra: i64,
    ) -> (u32, bool) {
        let in_cohort = cq.cohort().is_some();
        if !in_cohort || !self.borrowing_with(cq, fr, extra) {
            return (0, in_cohort);
        }
        (1, false)
    }
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
