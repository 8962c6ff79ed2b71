//! Prometheus metrics, named as Kueue names them, in the text exposition format.

use std::sync::Mutex;

use api::kueue::ClusterQueueStatus;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QueueLabel {
    cluster_queue: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PendingLabel {
    cluster_queue: String,
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PreemptionLabel {
    preempting_cluster_queue: String,
    reason: String,
}

fn wait_histogram() -> Histogram {
    // Kueue's buckets: 1s to about 2.8h, doubling.
    Histogram::new(exponential_buckets(1.0, 2.0, 14))
}

/// The controller's metrics.
pub struct Metrics {
    registry: Registry,
    attempts: Family<ResultLabel, Counter>,
    pending: Family<PendingLabel, Gauge>,
    reserving: Family<QueueLabel, Gauge>,
    admitted_active: Family<QueueLabel, Gauge>,
    quota_reserved: Family<QueueLabel, Counter>,
    admitted: Family<QueueLabel, Counter>,
    quota_reserved_wait: Family<QueueLabel, Histogram, fn() -> Histogram>,
    admission_wait: Family<QueueLabel, Histogram, fn() -> Histogram>,
    checks_wait: Family<QueueLabel, Histogram, fn() -> Histogram>,
    preempted: Family<PreemptionLabel, Counter>,
    /// Encoding needs `&Registry`; a lock keeps scrapes consistent with updates.
    lock: Mutex<()>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("kueue");
        let attempts = Family::<ResultLabel, Counter>::default();
        registry.register(
            "admission_attempts",
            "Total number of attempts to admit workloads, by result (success or inadmissible)",
            attempts.clone(),
        );
        let pending = Family::<PendingLabel, Gauge>::default();
        registry.register(
            "pending_workloads",
            "Number of pending workloads, per cluster_queue and status (active or inadmissible)",
            pending.clone(),
        );
        let reserving = Family::<QueueLabel, Gauge>::default();
        registry.register(
            "reserving_active_workloads",
            "Number of workloads holding a quota reservation, per cluster_queue",
            reserving.clone(),
        );
        let admitted_active = Family::<QueueLabel, Gauge>::default();
        registry.register(
            "admitted_active_workloads",
            "Number of admitted workloads that are active (unsuspended and not finished), per cluster_queue",
            admitted_active.clone(),
        );
        let quota_reserved = Family::<QueueLabel, Counter>::default();
        registry.register(
            "quota_reserved_workloads",
            "Total number of quota reserved workloads per cluster_queue",
            quota_reserved.clone(),
        );
        let admitted = Family::<QueueLabel, Counter>::default();
        registry.register(
            "admitted_workloads",
            "Total number of admitted workloads per cluster_queue",
            admitted.clone(),
        );
        let quota_reserved_wait: Family<QueueLabel, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(wait_histogram);
        registry.register(
            "quota_reserved_wait_time_seconds",
            "The time between a workload was created or requeued until it got quota reservation, per cluster_queue",
            quota_reserved_wait.clone(),
        );
        let admission_wait: Family<QueueLabel, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(wait_histogram);
        registry.register(
            "admission_wait_time_seconds",
            "The time between a workload was created or requeued until admission, per cluster_queue",
            admission_wait.clone(),
        );
        let checks_wait: Family<QueueLabel, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(wait_histogram);
        registry.register(
            "admission_checks_wait_time_seconds",
            "The time from when a workload got the quota reservation until admission, per cluster_queue",
            checks_wait.clone(),
        );
        let preempted = Family::<PreemptionLabel, Counter>::default();
        registry.register(
            "preempted_workloads",
            "Total number of preempted workloads per preempting_cluster_queue and reason",
            preempted.clone(),
        );
        Metrics {
            registry,
            attempts,
            pending,
            reserving,
            admitted_active,
            quota_reserved,
            admitted,
            quota_reserved_wait,
            admission_wait,
            checks_wait,
            preempted,
            lock: Mutex::new(()),
        }
    }

    pub fn attempt(&self, success: bool) {
        let result = if success { "success" } else { "inadmissible" };
        self.attempts
            .get_or_create(&ResultLabel {
                result: result.into(),
            })
            .inc();
    }

    pub fn quota_reserved(&self, cq: &str, waited_seconds: f64) {
        let l = queue(cq);
        self.quota_reserved.get_or_create(&l).inc();
        self.quota_reserved_wait
            .get_or_create(&l)
            .observe(waited_seconds);
    }

    pub fn admitted(&self, cq: &str, waited_seconds: f64, checks_seconds: f64) {
        let l = queue(cq);
        self.admitted.get_or_create(&l).inc();
        self.admission_wait
            .get_or_create(&l)
            .observe(waited_seconds);
        self.checks_wait.get_or_create(&l).observe(checks_seconds);
    }

    pub fn preempted(&self, preempting_cq: &str, reason: &str) {
        self.preempted
            .get_or_create(&PreemptionLabel {
                preempting_cluster_queue: preempting_cq.into(),
                reason: reason.into(),
            })
            .inc();
    }

    /// Gauges from a ClusterQueue's status.
    pub fn cluster_queue(&self, cq: &str, status: &ClusterQueueStatus) {
        let l = queue(cq);
        self.reserving
            .get_or_create(&l)
            .set(i64::from(status.reserving_workloads));
        self.admitted_active
            .get_or_create(&l)
            .set(i64::from(status.admitted_workloads));
        self.pending
            .get_or_create(&PendingLabel {
                cluster_queue: cq.into(),
                status: "active".into(),
            })
            .set(i64::from(status.pending_workloads));
    }

    /// The text exposition of every metric.
    pub fn encode(&self) -> String {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

fn queue(cq: &str) -> QueueLabel {
    QueueLabel {
        cluster_queue: cq.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kueues() {
        let m = Metrics::new();
        m.attempt(true);
        m.quota_reserved("cq", 3.0);
        m.admitted("cq", 3.0, 0.0);
        let text = m.encode();
        for name in [
            "kueue_admission_attempts_total{result=\"success\"} 1",
            "kueue_quota_reserved_workloads_total{cluster_queue=\"cq\"} 1",
            "kueue_admitted_workloads_total{cluster_queue=\"cq\"} 1",
            "kueue_admission_checks_wait_time_seconds_count{cluster_queue=\"cq\"} 1",
        ] {
            assert!(text.contains(name), "{name} missing from:\n{text}");
        }
    }
}
