//! Builders shared by the scheduler's unit tests.

use std::collections::BTreeMap;

use api::kueue::{
    ClusterQueuePreemption, ClusterQueueSpec, FlavorQuotas, PreemptionPolicy, ResourceFlavorSpec,
    ResourceGroup, ResourceQuota,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

use super::common::{PendingWorkload, PodSetRequest};
use super::snapshot::{ClusterQueueSnapshot, ReservedWorkload, Snapshot, Usage};

/// A small quantity parser for tests: an integer with an optional `m`, `k`, `M`, `G`, `Ki`, `Mi`
/// or `Gi` suffix; cpu in millicores, everything else in whole units.
pub fn to_units(resource: &str, quantity: &Quantity) -> Result<i64, String> {
    let text = quantity.0.as_str();
    let suffixes: [(&str, i64); 7] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("m", 0),
    ];
    let (digits, factor) = suffixes
        .iter()
        .find_map(|(s, f)| text.strip_suffix(s).map(|d| (d, *f)))
        .unwrap_or((text, 1));
    let number: i64 = digits
        .parse()
        .map_err(|_| format!("quantities must match the regular expression: {text}"))?;
    let milli = resource == "cpu";
    Ok(match (factor, milli) {
        (0, true) => number,
        (0, false) => (number + 999) / 1000,
        (f, true) => number.saturating_mul(f).saturating_mul(1000),
        (f, false) => number.saturating_mul(f),
    })
}

/// `name: nominal` with optional borrowing and lending limits.
pub fn quota(
    name: &str,
    nominal: &str,
    borrowing: Option<&str>,
    lending: Option<&str>,
) -> ResourceQuota {
    ResourceQuota {
        name: name.to_string(),
        nominal_quota: Quantity(nominal.to_string()),
        borrowing_limit: borrowing.map(|b| Quantity(b.to_string())),
        lending_limit: lending.map(|l| Quantity(l.to_string())),
    }
}

/// A flavor's quotas.
pub fn flavor_quotas(name: &str, resources: Vec<ResourceQuota>) -> FlavorQuotas {
    FlavorQuotas {
        name: name.to_string(),
        resources,
    }
}

/// Builds a ClusterQueue.
pub struct CqBuilder {
    name: String,
    spec: ClusterQueueSpec,
}

/// Starts a ClusterQueue named `name`.
pub fn cq(name: &str) -> CqBuilder {
    CqBuilder {
        name: name.to_string(),
        spec: ClusterQueueSpec::default(),
    }
}

impl CqBuilder {
    pub fn cohort(mut self, cohort: &str) -> Self {
        self.spec.cohort_name = Some(cohort.to_string());
        self
    }

    pub fn group(mut self, covered: &[&str], flavors: Vec<FlavorQuotas>) -> Self {
        self.spec.resource_groups.push(ResourceGroup {
            covered_resources: covered.iter().map(|r| r.to_string()).collect(),
            flavors,
        });
        self
    }

    /// One group covering `cpu` with one flavor `flavor` of `nominal` cpu.
    pub fn cpu(
        self,
        flavor: &str,
        nominal: &str,
        borrowing: Option<&str>,
        lending: Option<&str>,
    ) -> Self {
        self.group(
            &["cpu"],
            vec![flavor_quotas(
                flavor,
                vec![quota("cpu", nominal, borrowing, lending)],
            )],
        )
    }

    pub fn preemption(mut self, within: PreemptionPolicy, reclaim: PreemptionPolicy) -> Self {
        self.spec.preemption = Some(ClusterQueuePreemption {
            reclaim_within_cohort: reclaim,
            within_cluster_queue: within,
        });
        self
    }

    pub fn spec(self) -> ClusterQueueSpec {
        self.spec
    }

    pub fn build(self) -> ClusterQueueSnapshot {
        ClusterQueueSnapshot::new(self.name, self.spec, to_units).expect("valid test quotas")
    }
}

/// A snapshot with plain (label-less, untainted) flavors and the given queues.
pub fn snapshot(flavors: &[&str], queues: Vec<ClusterQueueSnapshot>) -> Snapshot {
    let mut snapshot = Snapshot {
        flavors: flavors
            .iter()
            .map(|f| (f.to_string(), ResourceFlavorSpec::default()))
            .collect(),
        cluster_queues: BTreeMap::new(),
    };
    for queue in queues {
        snapshot.insert_cluster_queue(queue);
    }
    snapshot
}

/// Usage from `(flavor, resource, value)` triples.
pub fn usage(entries: &[(&str, &str, i64)]) -> Usage {
    entries
        .iter()
        .map(|(f, r, v)| ((f.to_string(), r.to_string()), *v))
        .collect()
}

/// A reserving workload `ns/<name>` with uid `uid-<name>`.
pub fn reserved(
    name: &str,
    priority: i32,
    reserved_at: i64,
    entries: &[(&str, &str, i64)],
) -> ReservedWorkload {
    ReservedWorkload {
        key: format!("ns/{name}"),
        uid: format!("uid-{name}"),
        priority,
        reserved_at,
        queue_order_time: reserved_at,
        evicted: false,
        usage: usage(entries),
    }
}

/// A podset of `count` pods, each requesting `per_pod`.
pub fn podset(name: &str, count: i32, per_pod: &[(&str, i64)]) -> PodSetRequest {
    PodSetRequest {
        name: name.to_string(),
        count,
        per_pod: per_pod.iter().map(|(r, v)| (r.to_string(), *v)).collect(),
        ..PodSetRequest::default()
    }
}

/// A pending workload `ns/<name>` with uid `uid-<name>`.
pub fn pending(name: &str, priority: i32, podsets: Vec<PodSetRequest>) -> PendingWorkload {
    PendingWorkload {
        key: format!("ns/{name}"),
        uid: format!("uid-{name}"),
        priority,
        queue_order_time: 1_000,
        podsets,
    }
}

/// One podset `main` of one pod requesting `cpu` millicores.
pub fn pending_cpu(name: &str, priority: i32, cpu: i64) -> PendingWorkload {
    pending(name, priority, vec![podset("main", 1, &[("cpu", cpu)])])
}
