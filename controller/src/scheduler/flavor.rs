//! Flavor assignment: for each podset of a pending workload, which ResourceFlavor each requested
//! resource is counted in, and whether the workload fits now, could fit by preempting, or cannot
//! fit at all. Follows upstream Kueue's `flavorassigner`:
//!
//! - Podsets are assigned in order; a later podset sees the quota earlier podsets took
//!   ("previously considered podsets requests"). The first podset that gets no flavor ends the
//!   assignment (later podsets are not tried).
//! - Per resource group, flavors are tried in ClusterQueue order. A flavor is skipped when its
//!   taints are not tolerated or the podset's node selector / required node affinity excludes its
//!   labels.
//! - Per resource in a flavor: beyond the maximum capacity is NoFit; within what is available is
//!   Fit (possibly borrowing); otherwise preemption is simulated when the request fits in the
//!   queue's nominal quota.
//! - Flavor fungibility has upstream's defaults (the API has no field for it): `whenCanBorrow:
//!   MayStopSearch` (a fit, even borrowing, ends the search) and `whenCanPreempt: TryNextFlavor`
//!   (a flavor needing preemption is remembered and the next one tried), preferring borrowing
//!   over preemption when no flavor fits.

use std::collections::{BTreeMap, BTreeSet};

use api::kueue::ResourceFlavorSpec;
use k8s_openapi::api::core::v1::{NodeSelectorRequirement, Taint, Toleration};

use super::common::{Assignment, Mode, PendingWorkload, PodSetAssignment, PodSetRequest};
use super::preemption;
use super::snapshot::{
    ClusterQueueSnapshot, FlavorResource, Quotas, Recorded, SimulatedUsage, Snapshot, Usage,
};
use crate::resources::{Requests, format_units, requirement_matches, tolerates};

/// The resource that counts pods, when a ClusterQueue covers it.
const PODS: &str = "pods";

/// Assigns flavors to every podset of `wl` in ClusterQueue `cq`. An unknown queue gives an
/// empty NoFit assignment (the caller reports the missing queue).
pub fn assign_flavors(snapshot: &Snapshot, cq: &str, wl: &PendingWorkload) -> Assignment {
    let Some(queue) = snapshot.cluster_queues.get(cq) else {
        return Assignment::no_fit();
    };
    let assigner = Assigner {
        snapshot,
        cq: queue,
        wl,
        quotas: snapshot.recorded(),
    };
    assigner.assign()
}

/// How well a flavor serves a resource, worst first (upstream's internal preemption modes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Fitness {
    NoFit,
    /// Preemption could make room but the simulation found no candidates.
    NoCandidates,
    /// Preempting workloads of the same ClusterQueue makes room.
    Preempt,
    /// Reclaiming quota from other cohort members makes room.
    Reclaim,
    Fit,
}

impl Fitness {
    fn mode(self) -> Mode {
        match self {
            Fitness::NoFit => Mode::NoFit,
            Fitness::NoCandidates | Fitness::Preempt | Fitness::Reclaim => Mode::Preempt,
            Fitness::Fit => Mode::Fit,
        }
    }
}

/// A flavor's fitness plus how far its quota comes from (0: the queue itself; 1: the cohort).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Grade {
    fitness: Fitness,
    borrow: u32,
}

impl Grade {
    const BEST: Grade = Grade {
        fitness: Fitness::Fit,
        borrow: 0,
    };
    const WORST: Grade = Grade {
        fitness: Fitness::NoFit,
        borrow: u32::MAX,
    };

    /// Whether `self` is better than `other` under the default preference
    /// (BorrowingOverPreemption): the better fitness wins (so a flavor where preemption found
    /// candidates beats one where it found none, and reclaiming beats preempting in the own
    /// queue), then the more local quota. NoFit is never preferred.
    fn preferred_to(self, other: Grade) -> bool {
        if self.fitness == Fitness::NoFit {
            return false;
        }
        if self.fitness != other.fitness {
            return self.fitness > other.fitness;
        }
        self.borrow < other.borrow
    }

    /// Whether to look at the next flavor: always unless the flavor fits (whenCanBorrow:
    /// MayStopSearch stops even when it fits by borrowing); flavors needing preemption do not stop
    /// the search (whenCanPreempt: TryNextFlavor).
    fn try_next_flavor(self) -> bool {
        self.fitness != Fitness::Fit
    }
}

/// The flavor chosen for one resource.
#[derive(Clone, Debug)]
struct Chosen {
    flavor: String,
    fitness: Fitness,
    borrow: u32,
}

/// The outcome of searching a resource group's flavors for one podset.
struct Search {
    chosen: BTreeMap<String, Chosen>,
    reasons: Vec<String>,
}

struct Assigner<'a> {
    snapshot: &'a Snapshot,
    cq: &'a ClusterQueueSnapshot,
    wl: &'a PendingWorkload,
    quotas: Quotas<'a, Recorded>,
}

impl Assigner<'_> {
    fn assign(&self) -> Assignment {
        let mut assignment = Assignment {
            podsets: Vec::with_capacity(self.wl.podsets.len()),
            mode: Mode::Fit,
            borrows: false,
            usage: Usage::new(),
        };
        for podset in &self.wl.podsets {
            let requests = self.podset_requests(podset);
            let (chosen, reasons, failed) =
                self.assign_podset(podset, &requests, &assignment.usage);
            let mut ps = self.record(&mut assignment, podset, &requests, chosen, reasons);
            if failed {
                // A podset left without flavors never fits, even when no reason was recorded
                // (a resource group without flavors, which the API rejects).
                ps.mode = Mode::NoFit;
            }
            assignment.podsets.push(ps);
            if failed {
                break;
            }
        }
        assignment.mode = assignment
            .podsets
            .iter()
            .map(|ps| ps.mode)
            .min()
            .unwrap_or(Mode::NoFit);
        assignment
    }

    /// Requests of all the podset's pods, plus `pods: count` when the queue covers `pods`.
    fn podset_requests(&self, podset: &PodSetRequest) -> Requests {
        let count = i64::from(podset.count.max(0));
        let mut requests: Requests = podset
            .per_pod
            .iter()
            .map(|(resource, value)| (resource.clone(), value.saturating_mul(count)))
            .collect();
        if self.cq.resource_group(PODS).is_some() {
            requests.insert(PODS.to_string(), count);
        }
        requests
    }

    /// Chooses a flavor for every requested resource, group by group. Returns the choices, the
    /// reasons, and whether the podset failed (some resource got no flavor): then only that
    /// resource's reasons are kept, as upstream does.
    fn assign_podset(
        &self,
        podset: &PodSetRequest,
        requests: &Requests,
        previous: &Usage,
    ) -> (BTreeMap<String, Chosen>, Vec<String>, bool) {
        let mut chosen: BTreeMap<String, Chosen> = BTreeMap::new();
        let mut reasons = Vec::new();
        for (resource, quantity) in requests {
            let covered = self.cq.resource_group(resource).is_some();
            if (!covered && *quantity == 0) || chosen.contains_key(resource) {
                continue;
            }
            let search = self.search_flavors(podset, requests, resource, previous);
            if search.chosen.is_empty() {
                return (BTreeMap::new(), search.reasons, true);
            }
            chosen.extend(search.chosen);
            reasons.extend(search.reasons);
        }
        (chosen, reasons, false)
    }

    /// Adds the podset's choices to the assignment and builds its [`PodSetAssignment`].
    fn record(
        &self,
        assignment: &mut Assignment,
        podset: &PodSetRequest,
        requests: &Requests,
        chosen: BTreeMap<String, Chosen>,
        mut reasons: Vec<String>,
    ) -> PodSetAssignment {
        let mut flavors = BTreeMap::new();
        let mut modes = BTreeMap::new();
        let mut usage = Requests::new();
        for (resource, choice) in chosen {
            let amount = requests.get(&resource).copied().unwrap_or(0);
            if amount != 0 {
                let total = assignment
                    .usage
                    .entry((choice.flavor.clone(), resource.clone()))
                    .or_insert(0);
                *total = total.saturating_add(amount);
            }
            assignment.borrows |= choice.borrow > 0;
            usage.insert(resource.clone(), amount);
            modes.insert(resource.clone(), choice.fitness.mode());
            flavors.insert(resource, choice.flavor);
        }
        reasons.sort();
        let mode = if reasons.is_empty() {
            Mode::Fit
        } else {
            modes.values().copied().min().unwrap_or(Mode::NoFit)
        };
        PodSetAssignment {
            name: podset.name.clone(),
            count: podset.count,
            flavors,
            modes,
            usage,
            mode,
            reasons,
        }
    }

    /// Tries the flavors of the group covering `resource`, for every requested resource of that
    /// group at once (a group's resources always share a flavor).
    fn search_flavors(
        &self,
        podset: &PodSetRequest,
        requests: &Requests,
        resource: &str,
        previous: &Usage,
    ) -> Search {
        let Some(group) = self.cq.resource_group(resource) else {
            return Search {
                chosen: BTreeMap::new(),
                reasons: vec![format!("resource {resource} unavailable in ClusterQueue")],
            };
        };
        let group_requests: Vec<(&String, i64)> = requests
            .iter()
            .filter(|(r, _)| group.covered_resources.contains(r))
            .map(|(r, v)| (r, *v))
            .collect();
        let mut reasons = Vec::new();
        let mut best = BTreeMap::new();
        let mut best_grade = Grade::WORST;
        for flavor in &group.flavors {
            if let Some(reason) = check_flavor(self.snapshot, &flavor.name, podset) {
                reasons.push(reason);
                continue;
            }
            let (chosen, grade) =
                self.grade_flavor(&flavor.name, &group_requests, previous, &mut reasons);
            if !grade.try_next_flavor() {
                best = chosen;
                best_grade = grade;
                break;
            }
            if grade.preferred_to(best_grade) {
                best = chosen;
                best_grade = grade;
            }
        }
        if best_grade.fitness == Fitness::Fit {
            reasons.clear();
        }
        Search {
            chosen: best,
            reasons,
        }
    }

    /// How `flavor` serves every resource of the group; the flavor's grade is the worst of them.
    /// Every resource is checked (and reports its reason) even after one did not fit.
    fn grade_flavor(
        &self,
        flavor: &str,
        group_requests: &[(&String, i64)],
        previous: &Usage,
        reasons: &mut Vec<String>,
    ) -> (BTreeMap<String, Chosen>, Grade) {
        let mut chosen = BTreeMap::new();
        let mut grade = Grade::BEST;
        for (resource, request) in group_requests {
            let fr = (flavor.to_string(), (*resource).clone());
            let before = previous.get(&fr).copied().unwrap_or(0);
            let (fitness, borrow, reason) = self.fits_quota(&fr, before, *request);
            reasons.extend(reason);
            let resource_grade = Grade { fitness, borrow };
            if grade.preferred_to(resource_grade) {
                grade = resource_grade;
            }
            if grade.fitness == Fitness::NoFit {
                continue;
            }
            chosen.insert(
                (*resource).clone(),
                Chosen {
                    flavor: flavor.to_string(),
                    fitness,
                    borrow,
                },
            );
        }
        (chosen, grade)
    }

    /// Whether `request` more (after `before` taken by earlier podsets) fits in `fr`.
    fn fits_quota(
        &self,
        fr: &FlavorResource,
        before: i64,
        request: i64,
    ) -> (Fitness, u32, Option<String>) {
        let (flavor, resource) = fr;
        let available = self.quotas.available(self.cq, fr);
        let capacity = self.quotas.potential_available(self.cq, fr);
        let needed = before.saturating_add(request);
        if needed > capacity {
            let reason = format!(
                "insufficient quota for {resource} in flavor {flavor}, previously considered podsets requests ({}) + current podset request ({}) > maximum capacity ({})",
                format_units(resource, before),
                format_units(resource, request),
                format_units(resource, capacity),
            );
            return (Fitness::NoFit, 0, Some(reason));
        }
        let (borrow, may_reclaim) = self.quotas.borrowing_level(self.cq, fr, needed);
        if needed <= available {
            return (Fitness::Fit, borrow, None);
        }
        let reason = format!(
            "insufficient unused quota for {resource} in flavor {flavor}, {} more needed",
            format_units(resource, needed.saturating_sub(available)),
        );
        // Preemption can only help when the request fits in quota the queue may reclaim; the API
        // has no borrowWithinCohort, so preempting while borrowing is never allowed.
        if self.cq.quota(fr).nominal >= needed || may_reclaim {
            let (fitness, borrow) = self.simulate_preemption(fr, needed);
            return (fitness, borrow, Some(reason));
        }
        (Fitness::NoFit, borrow, Some(reason))
    }

    /// Whether preempting could make room for `needed` in `fr`, and where the quota would then
    /// come from.
    fn simulate_preemption(&self, fr: &FlavorResource, needed: i64) -> (Fitness, u32) {
        let frs = BTreeSet::from([fr.clone()]);
        let usage = Usage::from([(fr.clone(), needed)]);
        let targets = preemption::classical_targets(self.snapshot, self.cq, self.wl, &frs, &usage);
        if targets.is_empty() {
            let (borrow, _) = self.quotas.borrowing_level(self.cq, fr, needed);
            return (Fitness::NoCandidates, borrow);
        }
        let mut simulated = SimulatedUsage::default();
        for target in &targets {
            if let Some((queue, wl)) = preemption::lookup(self.snapshot, target) {
                simulated.remove(queue, wl);
            }
        }
        let after = Quotas {
            snapshot: self.snapshot,
            source: &simulated,
        };
        let (borrow, _) = after.borrowing_level(self.cq, fr, needed);
        let fitness = if targets.iter().any(|t| t.cluster_queue == self.cq.name) {
            Fitness::Preempt
        } else {
            Fitness::Reclaim
        };
        (fitness, borrow)
    }
}

/// Why `flavor` cannot host `podset` (missing flavor, untolerated taint, node affinity), if so.
fn check_flavor(snapshot: &Snapshot, flavor: &str, podset: &PodSetRequest) -> Option<String> {
    let Some(spec) = snapshot.flavors.get(flavor) else {
        return Some(format!("flavor {flavor} not found"));
    };
    if let Some(taint) = untolerated_taint(spec, &podset.tolerations) {
        return Some(format!(
            "untolerated taint {} in flavor {flavor}",
            go_taint(taint)
        ));
    }
    if !matches_node_affinity(podset, &spec.node_labels) {
        return Some(format!("flavor {flavor} doesn't match node affinity"));
    }
    None
}

/// The first NoSchedule/NoExecute taint of the flavor tolerated neither by the podset nor by the
/// flavor's own tolerations.
fn untolerated_taint<'a>(
    spec: &'a ResourceFlavorSpec,
    tolerations: &[Toleration],
) -> Option<&'a Taint> {
    spec.node_taints
        .iter()
        .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
        .find(|taint| {
            !tolerations
                .iter()
                .chain(&spec.tolerations)
                .any(|toleration| tolerates(toleration, taint))
        })
}

/// A taint as Go's `%s` prints the struct: `{key value effect timeAdded}` (`<nil>` when unset).
fn go_taint(taint: &Taint) -> String {
    let time = taint
        .time_added
        .as_ref()
        .map_or_else(|| "<nil>".to_string(), |t| go_time(t.0));
    format!(
        "{{{} {} {} {time}}}",
        taint.key,
        taint.value.as_deref().unwrap_or(""),
        taint.effect
    )
}

/// Go's `time.Time.String()` for a UTC time: `2006-01-02 15:04:05.999999999 +0000 UTC`.
fn go_time(ts: k8s_openapi::jiff::Timestamp) -> String {
    let base = ts.strftime("%Y-%m-%d %H:%M:%S").to_string();
    let nanos = ts.subsec_nanosecond();
    if nanos == 0 {
        format!("{base} +0000 UTC")
    } else {
        let frac = format!("{nanos:09}");
        format!("{base}.{} +0000 UTC", frac.trim_end_matches('0'))
    }
}

/// Whether the flavor's labels satisfy the podset's node selector and required node affinity,
/// looking only at label keys the flavor defines (other keys are left to kube-scheduler).
/// Affinity terms are ORed; a term left without expressions matches every flavor.
fn matches_node_affinity(podset: &PodSetRequest, labels: &BTreeMap<String, String>) -> bool {
    let selector_ok = podset
        .node_selector
        .iter()
        .filter(|(key, _)| labels.contains_key(*key))
        .all(|(key, value)| labels.get(key) == Some(value));
    if !selector_ok {
        return false;
    }
    let Some(affinity) = &podset.required_affinity else {
        return true;
    };
    let mut terms = Vec::new();
    for term in &affinity.node_selector_terms {
        let expressions: Vec<&NodeSelectorRequirement> = term
            .match_expressions
            .iter()
            .flatten()
            .filter(|e| labels.contains_key(&e.key))
            .collect();
        if expressions.is_empty() {
            return true;
        }
        terms.push(expressions);
    }
    terms.is_empty()
        || terms
            .iter()
            .any(|term| term.iter().all(|e| requirement_matches(e, labels)))
}

#[cfg(test)]
#[path = "flavor_tests.rs"]
mod tests;
