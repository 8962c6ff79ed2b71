//! Which admission checks a workload needs, and keeping its `status.admissionChecks` in step.

use std::collections::{BTreeMap, BTreeSet};

use api::kueue::{AdmissionCheckState, CheckState, ClusterQueueSpec, Workload};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

/// The checks a ClusterQueue requires, each with the flavors it applies to (empty: every flavor).
pub fn cluster_queue_checks(spec: &ClusterQueueSpec) -> BTreeMap<String, BTreeSet<String>> {
    spec.admission_checks_strategy
        .iter()
        .flat_map(|s| &s.admission_checks)
        .map(|rule| (rule.name.clone(), rule.on_flavors.iter().cloned().collect()))
        .collect()
}

/// The checks this workload must pass in this ClusterQueue. With a quota reservation: the checks
/// whose flavors meet the assigned flavors. Without one: only the checks that apply to every flavor
/// of the queue, since the flavors are not known yet.
pub fn required_for(wl: &Workload, spec: &ClusterQueueSpec) -> BTreeSet<String> {
    let all_flavors: BTreeSet<String> = spec
        .resource_groups
        .iter()
        .flat_map(|g| g.flavors.iter().map(|f| f.name.clone()))
        .collect();
    let assigned: Option<BTreeSet<String>> = wl
        .status
        .as_ref()
        .and_then(|s| s.admission.as_ref())
        .map(|a| {
            a.pod_set_assignments
                .iter()
                .flat_map(|p| p.flavors.values().cloned())
                .collect()
        });
    cluster_queue_checks(spec)
        .into_iter()
        .filter(|(_, on)| {
            let on = if on.is_empty() { &all_flavors } else { on };
            match &assigned {
                Some(assigned) => !assigned.is_disjoint(on),
                None => on.is_superset(&all_flavors),
            }
        })
        .map(|(name, _)| name)
        .collect()
}

/// Adds missing checks as Pending and drops checks no longer required, sorted by name as Kueue
/// keeps them. Returns whether anything changed.
pub fn sync(
    states: &mut Vec<AdmissionCheckState>,
    required: &BTreeSet<String>,
    now: &Time,
) -> bool {
    let before = states.clone();
    states.retain(|s| required.contains(&s.name));
    for name in required {
        if !states.iter().any(|s| &s.name == name) {
            states.push(AdmissionCheckState {
                name: name.clone(),
                state: CheckState::Pending,
                last_transition_time: now.clone(),
                message: String::new(),
                requeue_after_seconds: None,
                retry_count: None,
                pod_set_updates: vec![],
            });
        }
    }
    states.sort_by(|a, b| a.name.cmp(&b.name));
    *states != before
}

/// `AdmissionCheck in Retry state: "a" (msg); "b"`, as Kueue words it (checks sorted by name).
pub fn checks_message(states: &[AdmissionCheckState], state: CheckState) -> String {
    let mut matching: Vec<&AdmissionCheckState> =
        states.iter().filter(|s| s.state == state).collect();
    matching.sort_by(|a, b| a.name.cmp(&b.name));
    let parts: Vec<String> = matching
        .iter()
        .map(|s| {
            if s.message.is_empty() {
                format!("{:?}", s.name)
            } else {
                format!("{:?} ({})", s.name, s.message)
            }
        })
        .collect();
    let noun = if matching.len() > 1 {
        "AdmissionChecks"
    } else {
        "AdmissionCheck"
    };
    format!("{noun} in {state} state: {}", parts.join("; "))
}

/// Resets every non-Pending check after an eviction; a check that was in Retry counts one more
/// retry. Any other keeps its `retryCount`: Kueue's workload controller leaves it out of its
/// server-side apply, and the check's own controller, which wrote it, still owns it.
pub fn reset_on_eviction(states: &mut [AdmissionCheckState], now: &Time) {
    for s in states.iter_mut().filter(|s| s.state != CheckState::Pending) {
        if s.state == CheckState::Retry {
            s.retry_count = Some(s.retry_count.unwrap_or(0) + 1);
        }
        s.message = format!("Reset to Pending after eviction. Previously: {}", s.state);
        s.state = CheckState::Pending;
        s.last_transition_time = now.clone();
        s.pod_set_updates.clear();
    }
}

/// The latest `lastTransitionTime + requeueAfterSeconds` of the checks in Retry.
pub fn max_retry_time(states: &[AdmissionCheckState]) -> Option<jiff::Timestamp> {
    states
        .iter()
        .filter(|s| s.state == CheckState::Retry)
        .filter_map(|s| {
            let after = jiff::SignedDuration::from_secs(i64::from(s.requeue_after_seconds?));
            s.last_transition_time.0.checked_add(after).ok()
        })
        .max()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use api::kueue::{
        Admission, AdmissionCheckStrategyRule, AdmissionChecksStrategy, FlavorQuotas,
        PodSetAssignment, ResourceGroup, WorkloadStatus,
    };
    use rstest::rstest;

    use super::*;

    fn cq(rules: &[(&str, &[&str])]) -> ClusterQueueSpec {
        ClusterQueueSpec {
            resource_groups: vec![ResourceGroup {
                covered_resources: vec!["cpu".into()],
                flavors: ["on-demand", "spot"]
                    .iter()
                    .map(|f| FlavorQuotas {
                        name: (*f).into(),
                        resources: vec![],
                    })
                    .collect(),
            }],
            admission_checks_strategy: Some(AdmissionChecksStrategy {
                admission_checks: rules
                    .iter()
                    .map(|(n, on)| AdmissionCheckStrategyRule {
                        name: (*n).into(),
                        on_flavors: on.iter().map(|s| (*s).into()).collect(),
                    })
                    .collect(),
            }),
            ..Default::default()
        }
    }

    fn admitted_in(flavor: Option<&str>) -> Workload {
        let mut wl = Workload::new("w", Default::default());
        if let Some(f) = flavor {
            wl.status = Some(WorkloadStatus {
                admission: Some(Admission {
                    cluster_queue: "cq".into(),
                    pod_set_assignments: vec![PodSetAssignment {
                        name: "main".into(),
                        flavors: [("cpu".to_string(), f.to_string())].into(),
                        ..Default::default()
                    }],
                }),
                ..Default::default()
            });
        }
        wl
    }

    #[rstest]
    #[case::pending_sees_only_all_flavor_checks(None, &["all", "spot-too"])]
    #[case::spot_admission_sees_spot_checks(Some("spot"), &["all", "spot-only", "spot-too"])]
    #[case::on_demand_admission(Some("on-demand"), &["all", "spot-too"])]
    fn per_flavor_strategy(#[case] flavor: Option<&str>, #[case] expected: &[&str]) {
        let spec = cq(&[
            ("all", &[]),
            ("spot-only", &["spot"]),
            ("spot-too", &["spot", "on-demand"]),
        ]);
        let got: Vec<String> = required_for(&admitted_in(flavor), &spec)
            .into_iter()
            .collect();
        assert_eq!(got, expected);
    }

    fn state(name: &str, state: CheckState, message: &str) -> AdmissionCheckState {
        AdmissionCheckState {
            name: name.into(),
            state,
            last_transition_time: Time("2026-01-01T00:00:00Z".parse().unwrap()),
            message: message.into(),
            requeue_after_seconds: Some(60),
            retry_count: None,
            pod_set_updates: vec![],
        }
    }

    #[test]
    fn sync_adds_pending_and_drops_unrequired() {
        let now = Time("2026-01-01T00:05:00Z".parse().unwrap());
        let mut states = vec![state("old", CheckState::Ready, "")];
        let required = ["b".to_string(), "a".to_string()].into();
        assert!(sync(&mut states, &required, &now));
        let names: Vec<_> = states.iter().map(|s| (s.name.as_str(), s.state)).collect();
        assert_eq!(
            names,
            [("a", CheckState::Pending), ("b", CheckState::Pending)]
        );
        assert!(!sync(&mut states, &required, &now));
    }

    #[rstest]
    #[case::one(&[("prov", CheckState::Retry, "no capacity")], CheckState::Retry, "AdmissionCheck in Retry state: \"prov\" (no capacity)")]
    #[case::two_sorted(&[("b", CheckState::Rejected, ""), ("a", CheckState::Rejected, "bad")], CheckState::Rejected, "AdmissionChecks in Rejected state: \"a\" (bad); \"b\"")]
    fn messages_as_upstream(
        #[case] checks: &[(&str, CheckState, &str)],
        #[case] which: CheckState,
        #[case] expected: &str,
    ) {
        let states: Vec<_> = checks.iter().map(|(n, s, m)| state(n, *s, m)).collect();
        assert_eq!(checks_message(&states, which), expected);
    }

    #[test]
    fn eviction_resets_and_counts_retries() {
        let now = Time("2026-01-01T00:05:00Z".parse().unwrap());
        let mut states = vec![
            state("a", CheckState::Retry, "x"),
            state("b", CheckState::Ready, ""),
            state("c", CheckState::Pending, "waiting"),
            state("d", CheckState::Rejected, "no capacity"),
        ];
        states[3].retry_count = Some(2);
        reset_on_eviction(&mut states, &now);
        assert_eq!(states[0].retry_count, Some(1));
        assert_eq!(
            states[3].message,
            "Reset to Pending after eviction. Previously: Rejected"
        );
        assert_eq!(
            states[3].retry_count,
            Some(2),
            "kept, as under SSA upstream"
        );
        assert_eq!(
            states[0].message,
            "Reset to Pending after eviction. Previously: Retry"
        );
        assert_eq!(
            states[1].message,
            "Reset to Pending after eviction. Previously: Ready"
        );
        assert_eq!(states[1].retry_count, None);
        assert_eq!(states[2].message, "waiting");
        assert!(states.iter().all(|s| s.state == CheckState::Pending));
        assert_eq!(states[0].requeue_after_seconds, Some(60));
    }

    #[test]
    fn retry_time_is_the_latest() {
        let mut a = state("a", CheckState::Retry, "");
        a.requeue_after_seconds = Some(120);
        let b = state("b", CheckState::Retry, "");
        let c = state("c", CheckState::Ready, "");
        assert_eq!(
            max_retry_time(&[a, b, c]).unwrap().to_string(),
            "2026-01-01T00:02:00Z"
        );
    }
}
