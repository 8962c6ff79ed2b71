//! The generator file of Kueue's scheduler performance test (its `generator.yaml` format), and the
//! plan it expands to: which ClusterQueues exist and which Workload is created when.
//!
//! Names follow Kueue's generator so that runs compare: cohort `<class>-<i>`, ClusterQueue,
//! Namespace and LocalQueue `<class>-<set>-<i>-<cohort>`, Workload `<class>-<set>-<n>-<i>`.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Deserialize;
use serde::de::Deserializer;

/// The checked-in baseline: Kueue's `test/performance/scheduler/configs/baseline`.
pub const BASELINE: &str = include_str!("../../perf/baseline.yaml");

/// The single ResourceFlavor every ClusterQueue uses, as in Kueue's generator.
pub const FLAVOR: &str = "rf";

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GeneratorConfig {
    pub cohorts: Vec<CohortSet>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CohortSet {
    pub class_name: String,
    pub count: usize,
    pub queues_sets: Vec<QueuesSet>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueuesSet {
    pub class_name: String,
    pub count: usize,
    #[serde(deserialize_with = "quantity")]
    pub nominal_quota: String,
    #[serde(default, deserialize_with = "optional_quantity")]
    pub borrowing_limit: Option<String>,
    #[serde(default = "never")]
    pub reclaim_within_cohort: String,
    #[serde(default = "never")]
    pub within_cluster_queue: String,
    pub workloads_sets: Vec<WorkloadsSet>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadsSet {
    pub count: usize,
    pub creation_interval_ms: u64,
    pub workloads: Vec<WorkloadTemplate>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadTemplate {
    pub class_name: String,
    pub runtime_ms: u64,
    #[serde(default)]
    pub priority: i32,
    #[serde(deserialize_with = "quantity")]
    pub request: String,
}

fn never() -> String {
    "Never".into()
}

/// Kueue's files write quantities bare (`nominalQuota: 20`); strings are accepted too.
fn quantity<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Q {
        Int(i64),
        Float(f64),
        Text(String),
    }
    Ok(match Q::deserialize(d)? {
        Q::Int(i) => i.to_string(),
        Q::Float(f) => f.to_string(),
        Q::Text(s) => s,
    })
}

fn optional_quantity<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    quantity(d).map(Some)
}

/// One ClusterQueue of the plan, with its Namespace and LocalQueue of the same name.
#[derive(Clone, Debug, PartialEq)]
pub struct QueuePlan {
    pub name: String,
    pub class: String,
    pub cohort: String,
    pub nominal_quota: String,
    pub borrowing_limit: Option<String>,
    pub reclaim_within_cohort: String,
    pub within_cluster_queue: String,
}

/// One Workload of the plan: created `at` after the start, in the namespace of its queue.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadPlan {
    pub at: Duration,
    pub queue: String,
    pub name: String,
    pub class: String,
    pub runtime: Duration,
    pub priority: i32,
    pub request: String,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    pub queues: Vec<QueuePlan>,
    /// In creation order.
    pub workloads: Vec<WorkloadPlan>,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("the generator file is not valid YAML for Kueue's generator format: {0}")]
    Parse(String),
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> PlanError {
    PlanError::Invalid {
        field: field.into(),
        message: message.into(),
    }
}

const PREEMPTION_POLICIES: [&str; 3] = ["Never", "LowerPriority", "Any"];

impl Plan {
    /// Reads a generator file and expands it.
    pub fn from_yaml(text: &str) -> Result<Plan, PlanError> {
        let config: GeneratorConfig =
            serde_saphyr::from_str(text).map_err(|e| PlanError::Parse(e.to_string()))?;
        Plan::expand(&config)
    }

    /// Every ClusterQueue and every Workload the generator creates, each Workload at the time
    /// Kueue's generator would create it: the n-th of a set after n intervals.
    pub fn expand(config: &GeneratorConfig) -> Result<Plan, PlanError> {
        if config.cohorts.is_empty() {
            return Err(invalid("cohorts", "at least one cohort set is needed"));
        }
        let mut queues = Vec::new();
        let mut workloads = Vec::new();
        let mut names = BTreeSet::new();
        for (c, cohort_set) in config.cohorts.iter().enumerate() {
            for cohort_index in 0..cohort_set.count {
                let cohort = format!("{}-{cohort_index}", cohort_set.class_name);
                for (q, queue_set) in cohort_set.queues_sets.iter().enumerate() {
                    let field = format!("cohorts[{c}].queuesSets[{q}]");
                    check_queue_set(queue_set, &field)?;
                    for queue_index in 0..queue_set.count {
                        let name = format!("{}-{q}-{queue_index}-{cohort}", queue_set.class_name);
                        if !names.insert(name.clone()) {
                            return Err(invalid(
                                format!("cohorts[{c}].className"),
                                format!(
                                    "ClusterQueue `{name}` would be generated twice; give cohort sets distinct class names"
                                ),
                            ));
                        }
                        for (s, set) in queue_set.workloads_sets.iter().enumerate() {
                            let interval = Duration::from_millis(set.creation_interval_ms);
                            let mut created = 0u32;
                            for n in 0..set.count {
                                for (i, template) in set.workloads.iter().enumerate() {
                                    created += 1;
                                    workloads.push(WorkloadPlan {
                                        at: interval * created,
                                        queue: name.clone(),
                                        name: format!("{}-{s}-{n}-{i}", template.class_name),
                                        class: template.class_name.clone(),
                                        runtime: Duration::from_millis(template.runtime_ms),
                                        priority: template.priority,
                                        request: template.request.clone(),
                                    });
                                }
                            }
                        }
                        queues.push(QueuePlan {
                            name,
                            class: queue_set.class_name.clone(),
                            cohort: cohort.clone(),
                            nominal_quota: queue_set.nominal_quota.clone(),
                            borrowing_limit: queue_set.borrowing_limit.clone(),
                            reclaim_within_cohort: queue_set.reclaim_within_cohort.clone(),
                            within_cluster_queue: queue_set.within_cluster_queue.clone(),
                        });
                    }
                }
            }
        }
        // Stable: equal times keep queue and set order, so every run creates in the same order.
        workloads.sort_by_key(|w| w.at);
        Ok(Plan { queues, workloads })
    }
}

fn check_queue_set(set: &QueuesSet, field: &str) -> Result<(), PlanError> {
    let quantities = [
        ("nominalQuota", Some(&set.nominal_quota)),
        ("borrowingLimit", set.borrowing_limit.as_ref()),
    ];
    for (name, value) in quantities {
        if let Some(value) = value {
            support::quantity::Amount::parse(value)
                .map_err(|e| invalid(format!("{field}.{name}"), format!("`{value}`: {e}")))?;
        }
    }
    for (name, value) in [
        ("reclaimWithinCohort", &set.reclaim_within_cohort),
        ("withinClusterQueue", &set.within_cluster_queue),
    ] {
        if !PREEMPTION_POLICIES.contains(&value.as_str()) {
            return Err(invalid(
                format!("{field}.{name}"),
                format!("`{value}` is not one of {}", PREEMPTION_POLICIES.join(", ")),
            ));
        }
    }
    for (s, wl_set) in set.workloads_sets.iter().enumerate() {
        if wl_set.creation_interval_ms == 0 {
            return Err(invalid(
                format!("{field}.workloadsSets[{s}].creationIntervalMs"),
                "must be at least 1",
            ));
        }
        for (i, template) in wl_set.workloads.iter().enumerate() {
            let at = format!("{field}.workloadsSets[{s}].workloads[{i}]");
            support::quantity::Amount::parse(&template.request).map_err(|e| {
                invalid(
                    format!("{at}.request"),
                    format!("`{}`: {e}", template.request),
                )
            })?;
            if template.class_name.is_empty() {
                return Err(invalid(format!("{at}.className"), "must not be empty"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[test]
    fn the_baseline_expands_to_kueues_15000_workloads() {
        let plan = Plan::from_yaml(BASELINE).expect("baseline");
        assert_eq!(plan.queues.len(), 30);
        assert_eq!(plan.workloads.len(), 15_000);
        let first = &plan.queues[0];
        assert_eq!(first.name, "cq-0-0-cohort-0");
        assert_eq!(first.cohort, "cohort-0");
        assert_eq!(first.nominal_quota, "20");
        assert_eq!(first.borrowing_limit.as_deref(), Some("100"));
        assert_eq!(first.reclaim_within_cohort, "Any");
        assert_eq!(first.within_cluster_queue, "LowerPriority");
        let count = |class: &str| plan.workloads.iter().filter(|w| w.class == class).count();
        assert_eq!(
            (count("small"), count("medium"), count("large")),
            (10_500, 3_000, 1_500)
        );
        // The last large workload of a queue comes 50 intervals of 1.2 s after the start.
        let last = plan.workloads.last().expect("workloads");
        assert_eq!(last.at, Duration::from_millis(60_000));
        assert_eq!(last.name, "large-2-49-0");
    }

    #[test]
    fn workloads_come_in_time_order_with_kueues_names() {
        let plan = Plan::from_yaml(
            "cohorts:
- className: c
  count: 1
  queuesSets:
  - className: q
    count: 1
    nominalQuota: 2
    workloadsSets:
    - count: 2
      creationIntervalMs: 300
      workloads:
      - {className: big, runtimeMs: 1000, priority: 7, request: 2}
    - count: 3
      creationIntervalMs: 200
      workloads:
      - {className: small, runtimeMs: 100, request: 500m}
",
        )
        .expect("plan");
        let order: Vec<(u128, &str)> = plan
            .workloads
            .iter()
            .map(|w| (w.at.as_millis(), w.name.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                (200, "small-1-0-0"),
                (300, "big-0-0-0"),
                (400, "small-1-1-0"),
                (600, "big-0-1-0"),
                (600, "small-1-2-0"),
            ]
        );
        assert_eq!(plan.queues[0].name, "q-0-0-c-0");
        assert_eq!(plan.queues[0].reclaim_within_cohort, "Never");
        assert_eq!(plan.workloads[1].priority, 7);
        assert_eq!(plan.workloads[0].request, "500m");
    }

    #[rstest]
    #[case::no_cohorts("cohorts: []", "cohorts: at least one cohort set")]
    #[case::bad_quota(
        "cohorts: [{className: c, count: 1, queuesSets: [{className: q, count: 1, nominalQuota: lots, workloadsSets: []}]}]",
        "cohorts[0].queuesSets[0].nominalQuota: `lots`"
    )]
    #[case::bad_policy(
        "cohorts: [{className: c, count: 1, queuesSets: [{className: q, count: 1, nominalQuota: 1, withinClusterQueue: Sometimes, workloadsSets: []}]}]",
        "cohorts[0].queuesSets[0].withinClusterQueue: `Sometimes` is not one of Never, LowerPriority, Any"
    )]
    #[case::zero_interval(
        "cohorts: [{className: c, count: 1, queuesSets: [{className: q, count: 1, nominalQuota: 1, workloadsSets: [{count: 1, creationIntervalMs: 0, workloads: []}]}]}]",
        "workloadsSets[0].creationIntervalMs: must be at least 1"
    )]
    #[case::tas_is_not_supported("topology: {levels: []}\ncohorts: []", "unknown field `topology`")]
    #[case::duplicate_names(
        "cohorts: [{className: c, count: 1, queuesSets: [{className: q, count: 1, nominalQuota: 1, workloadsSets: []}]}, {className: c, count: 1, queuesSets: [{className: q, count: 1, nominalQuota: 1, workloadsSets: []}]}]",
        "ClusterQueue `q-0-0-c-0` would be generated twice"
    )]
    fn bad_files_are_refused_naming_the_field(#[case] text: &str, #[case] expected: &str) {
        let error = Plan::from_yaml(text).expect_err("refused").to_string();
        assert!(error.contains(expected), "{error}");
    }
}
