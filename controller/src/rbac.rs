//! Every API request the controller makes, as RBAC rules: the one table the installed ClusterRole
//! and Role are generated from ([`crate::install`]).
//!
//! The code that makes requests checks its request against this table ([`check`]): the watches
//! in [`crate::manager`], the [`crate::writer::Writer`], the event [`crate::events::Recorder`] and
//! the [`crate::leader::Lease`]. In debug builds (every test and scenario) a request with no rule
//! panics naming the missing rule, so a new watch or write cannot ship without its permission;
//! release builds skip the check.

use std::borrow::Cow;

use kube::Resource;

/// Where a rule applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Everywhere: the ClusterRole.
    Cluster,
    /// In the controller's namespace only (the Configuration's `namespace`, where the
    /// leader-election Lease and MultiKueue's kubeconfig Secrets are): the Role.
    ControllerNamespace,
    /// Only the leader-election Lease itself: the Role, with the Lease's name as `resourceNames`.
    TheLease,
}

/// One permission: `verbs` on `resource` (`plural` or `plural/subresource`) of `group`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The API group; `""` is the core group.
    pub group: &'static str,
    pub resource: &'static str,
    pub verbs: &'static [&'static str],
    pub scope: Scope,
    /// Which code needs it, for the generated manifests' comments.
    pub why: &'static str,
}

const KUEUE: &str = "kueue.x-k8s.io";

/// What the controller needs, and nothing else.
pub const RULES: &[Rule] = &[
    Rule {
        group: KUEUE,
        resource: "resourceflavors",
        verbs: &["list", "watch"],
        scope: Scope::Cluster,
        why: "watched for flavor assignment",
    },
    Rule {
        group: KUEUE,
        resource: "clusterqueues",
        verbs: &["list", "watch"],
        scope: Scope::Cluster,
        why: "watched for quota",
    },
    Rule {
        group: KUEUE,
        resource: "clusterqueues/status",
        verbs: &["update"],
        scope: Scope::Cluster,
        why: "the queue status pass writes usage, pending counts and conditions",
    },
    Rule {
        group: KUEUE,
        resource: "localqueues",
        verbs: &["list", "watch"],
        scope: Scope::Cluster,
        why: "watched to route workloads to ClusterQueues",
    },
    Rule {
        group: KUEUE,
        resource: "localqueues/status",
        verbs: &["update"],
        scope: Scope::Cluster,
        why: "the queue status pass",
    },
    Rule {
        group: KUEUE,
        resource: "admissionchecks",
        verbs: &["list", "watch"],
        scope: Scope::Cluster,
        why: "watched for the checks workloads must pass",
    },
    Rule {
        group: KUEUE,
        resource: "admissionchecks/status",
        verbs: &["update"],
        scope: Scope::Cluster,
        why: "the ProvisioningRequest and MultiKueue checks set their AdmissionChecks' Active \
              condition",
    },
    Rule {
        group: KUEUE,
        resource: "workloads",
        verbs: &["create", "list", "update", "watch"],
        scope: Scope::Cluster,
        why: "a Job's Workload is created, its finalizer removed once finished",
    },
    Rule {
        group: KUEUE,
        resource: "workloads/status",
        verbs: &["update"],
        scope: Scope::Cluster,
        why: "quota reservation, admission, check states, eviction, finish",
    },
    Rule {
        group: KUEUE,
        resource: "workloads/finalizers",
        verbs: &["update"],
        scope: Scope::Cluster,
        why: "PodTemplates and ProvisioningRequests are created with a blockOwnerDeletion \
              reference to their Workload (the OwnerReferencesPermissionEnforcement admission \
              plugin checks this)",
    },
    Rule {
        group: KUEUE,
        resource: "provisioningrequestconfigs",
        verbs: &["list", "watch"],
        scope: Scope::Cluster,
        why: "watched: the ProvisioningRequest check's parameters",
    },
    Rule {
        group: KUEUE,
        resource: "multikueueclusters",
        verbs: &["list", "watch"],
        scope: Scope::Cluster,
        why: "watched: MultiKueue's worker clusters and where their kubeconfigs are",
    },
    Rule {
        group: KUEUE,
        resource: "multikueueclusters/status",
        verbs: &["update"],
        scope: Scope::Cluster,
        why: "MultiKueue sets each worker cluster's Active condition",
    },
    Rule {
        group: KUEUE,
        resource: "multikueueconfigs",
        verbs: &["list", "watch"],
        scope: Scope::Cluster,
        why: "watched: the worker clusters of each MultiKueue AdmissionCheck",
    },
    Rule {
        group: "",
        resource: "secrets",
        verbs: &["list", "watch"],
        scope: Scope::ControllerNamespace,
        why: "MultiKueue reads worker kubeconfigs from Secrets in the controller's namespace, \
              and reconnects when one changes",
    },
    Rule {
        group: "batch",
        resource: "jobs",
        verbs: &["list", "update", "watch"],
        scope: Scope::Cluster,
        why: "labelled Jobs are suspended, then started with the admitted flavors' node \
              selectors, and stopped when evicted",
    },
    Rule {
        group: "batch",
        resource: "jobs/status",
        verbs: &["update"],
        scope: Scope::Cluster,
        why: "a stopped Job's startTime is cleared, as Kueue does",
    },
    Rule {
        group: "batch",
        resource: "jobs/finalizers",
        verbs: &["update"],
        scope: Scope::Cluster,
        why: "Workloads are created with a blockOwnerDeletion reference to their Job \
              (OwnerReferencesPermissionEnforcement)",
    },
    Rule {
        group: "autoscaling.x-k8s.io",
        resource: "provisioningrequests",
        verbs: &["create", "delete", "list", "watch"],
        scope: Scope::Cluster,
        why: "the ProvisioningRequest check creates a request per attempt and deletes the \
              ones no longer needed",
    },
    Rule {
        group: "",
        resource: "podtemplates",
        verbs: &["create", "delete", "list", "update", "watch"],
        scope: Scope::Cluster,
        why: "the pod sets of a ProvisioningRequest: created with it, handed over to the \
              request, deleted with it (only those labelled kueue.x-k8s.io/managed are watched)",
    },
    Rule {
        group: "events.k8s.io",
        resource: "events",
        verbs: &["create", "patch"],
        scope: Scope::Cluster,
        why: "Events about Workloads, Jobs and queues, in their namespaces (cluster-scoped \
              objects' in `default`); a repeat patches the event's series",
    },
    Rule {
        group: "coordination.k8s.io",
        resource: "leases",
        verbs: &["create"],
        scope: Scope::ControllerNamespace,
        why: "--leader-elect-lease: the first replica creates the Lease (create cannot be \
              limited by name)",
    },
    Rule {
        group: "coordination.k8s.io",
        resource: "leases",
        verbs: &["get", "update"],
        scope: Scope::TheLease,
        why: "--leader-elect-lease: replicas read the Lease and take or renew it",
    },
];

/// Whether some rule allows `verb` on `resource` (`plural` or `plural/subresource`) of `group`.
pub fn allows(group: &str, resource: &str, verb: &str) -> bool {
    RULES
        .iter()
        .any(|r| r.group == group && r.resource == resource && r.verbs.contains(&verb))
}

/// `plural` or `plural/subresource` of `K`.
pub fn resource_of<K: Resource<DynamicType = ()>>(subresource: Option<&str>) -> Cow<'static, str> {
    let plural = K::plural(&());
    match subresource {
        Some(sub) => Cow::Owned(format!("{plural}/{sub}")),
        None => plural,
    }
}

/// In debug builds, panics when no rule allows `verb` on `K` (or its `subresource`): the request
/// would be refused by the installed RBAC.
#[track_caller]
pub fn check<K: Resource<DynamicType = ()>>(subresource: Option<&str>, verb: &str) {
    if cfg!(debug_assertions) {
        let group = K::group(&());
        let resource = resource_of::<K>(subresource);
        assert!(
            allows(&group, &resource, verb),
            "the controller's RBAC has no rule for {verb} {resource} in group {group:?}: add one \
             to controller::rbac::RULES"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_watched_kind_may_be_listed_and_watched() {
        let server = fake_apiserver::FakeApiServer::builder()
            .build()
            .expect("server");
        // The same list `manager::run` watches; the streams are never polled.
        let options = crate::Options {
            config: Default::default(),
            clock: crate::Clock::system(),
            metrics: Default::default(),
            workers: Default::default(),
        };
        let checks = crate::admissionchecks::registered(&options);
        let watches = crate::manager::watches(&server.client(), &checks);
        assert!(!watches.is_empty());
        for (_, w) in &watches {
            // Not a watch of this API server: what MultiKueue's links to workers report.
            if w.resource == crate::admissionchecks::multikueue::REMOTE_EVENTS {
                continue;
            }
            for verb in ["list", "watch"] {
                assert!(
                    allows(&w.group, &w.resource, verb),
                    "the controller watches {} in {:?} but may not {verb} them",
                    w.resource,
                    w.group
                );
            }
        }
    }

    #[test]
    fn every_kind_the_writer_writes_has_a_write_rule() {
        for (group, resource) in crate::writer::written_kinds() {
            let writes = RULES.iter().any(|r| {
                r.group == group
                    && (r.resource == resource || r.resource == format!("{resource}/status"))
                    && r.verbs
                        .iter()
                        .any(|v| ["create", "update", "patch", "delete"].contains(v))
            });
            assert!(
                writes,
                "the writer writes {resource} in {group:?}, no rule lets it"
            );
        }
    }

    #[test]
    fn events_and_the_lease_have_their_rules() {
        use k8s_openapi::api::coordination::v1::Lease;
        use k8s_openapi::api::events::v1::Event;
        for verb in ["create", "patch"] {
            check::<Event>(None, verb);
        }
        for verb in ["get", "create", "update"] {
            check::<Lease>(None, verb);
        }
    }

    #[test]
    #[should_panic(expected = "no rule for delete workloads")]
    fn a_request_with_no_rule_panics_in_debug_builds() {
        check::<api::kueue::Workload>(None, "delete");
    }

    #[test]
    fn nothing_is_granted_twice_or_on_kinds_the_controller_never_touches() {
        let mut seen = std::collections::BTreeSet::new();
        for r in RULES {
            for v in r.verbs {
                assert!(
                    seen.insert((r.group, r.resource, *v, r.scope == Scope::Cluster)),
                    "{v} {} granted twice",
                    r.resource
                );
            }
            assert!(
                !["pods", "configmaps", "nodes", "namespaces"].contains(&r.resource),
                "{} is not something the controller uses",
                r.resource
            );
            // Kubeconfig Secrets are read in the controller's namespace only.
            assert!(
                r.resource != "secrets" || r.scope == Scope::ControllerNamespace,
                "Secrets may be read only in the controller's namespace"
            );
        }
    }
}
