//! MultiKueue's invariant, checked after every step of every scenario with workers (and usable by
//! a chaos test): what a user of the manager must never see, whatever the network does.
//!
//! - (a) A job never runs on two workers at once: no two workers hold a non-suspended, unfinished
//!   Job for the same manager Workload. Upstream's semantics allow one exception: a worker the
//!   manager has not reached for longer than `workerLostTimeout` may still run its old job (the
//!   manager has moved the workload elsewhere and cannot tell it to stop); it is excused while it
//!   stays unreachable and for a grace period after it is reached again, in which the manager
//!   must remove the stale copy.
//! - (b) No remote object (Workload or Job with our origin label) without a live local owner (the
//!   manager's Workload, existing and not being deleted) survives one GC interval once
//!   connectivity is back.
//!
//! Both need time: since when a worker has been unreachable, since when an orphan has been seen
//! while its worker was reachable. [`Invariant`] keeps that between checks; [`Invariant::observe`]
//! is the pure decision over a [`Snapshot`], [`Invariant::check`] gathers one through clients.
//!
//! "Reachable" (connected) is what the harness and the manager both say: the manager's link to the
//! worker is not cut, and the manager's MultiKueueCluster for it is `Active`. A healed link the
//! manager has not reconnected to yet (its backoff) is not connectivity back.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use api::constants::label::{MULTIKUEUE_ORIGIN, PREBUILT_WORKLOAD_NAME};
use api::kueue::{MultiKueueCluster, Workload};
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, ListParams};
use kube::{Resource, ResourceExt};

/// Slack on top of the GC interval for an orphan to go: the collector's own deletes and the
/// worker's finalizers take a moment.
const ORPHAN_SLACK: Duration = Duration::from_secs(10);

/// How long after a long-lost worker is reached again its stale job may still run, when
/// collection is disabled (otherwise one GC interval).
const STALE_GRACE_WITHOUT_GC: Duration = Duration::from_secs(60);

/// The manager's settings the invariant depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// The origin label's value on remote objects.
    pub origin: String,
    /// Zero: collection disabled, (b) not checked.
    pub gc_interval: Duration,
    pub worker_lost_timeout: Duration,
}

impl Rules {
    pub fn from_config(config: &api::config::Configuration) -> Self {
        Rules {
            origin: config.multi_kueue.origin.clone(),
            gc_interval: config.multi_kueue.gc_interval.0,
            worker_lost_timeout: config.multi_kueue.worker_lost_timeout.0,
        }
    }

    fn stale_grace(&self) -> Duration {
        if self.gc_interval.is_zero() {
            STALE_GRACE_WITHOUT_GC
        } else {
            self.gc_interval
        }
    }
}

/// A remote object of ours, as the invariant needs it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Remote {
    /// `Job` or `Workload`.
    pub kind: &'static str,
    /// `namespace/name` on the worker.
    pub key: String,
    /// The manager's Workload it belongs to, `namespace/name`.
    pub owner: String,
    /// A Job that is not suspended and not finished (always false for a Workload).
    pub running: bool,
}

/// What one worker holds of ours, and whether the manager reaches it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerView {
    pub connected: bool,
    pub objects: Vec<Remote>,
}

/// Everything the decision looks at, at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// The manager's Workloads that exist and are not being deleted, `namespace/name`.
    pub live: BTreeSet<String>,
    pub workers: BTreeMap<String, WorkerView>,
}

/// What broke the invariant, naming the objects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Violation(pub String);

/// A worker as the check reaches it: the client that sees inside it (not through the manager's
/// link), and whether the manager's link to it is up.
#[derive(Clone)]
pub struct WorkerAccess {
    pub client: kube::Client,
    pub link_up: bool,
}

/// The invariant's memory between checks.
#[derive(Debug, Clone)]
pub struct Invariant {
    rules: Rules,
    /// Since when each worker has been unreachable (absent: reachable).
    down_since: BTreeMap<String, Timestamp>,
    /// Workers reached again after a loss longer than the timeout: excused until then.
    excused_until: BTreeMap<String, Timestamp>,
    /// Since when each orphan has been seen with its worker reachable: (worker, kind, key).
    orphaned_since: BTreeMap<(String, &'static str, String), Timestamp>,
}

impl Invariant {
    pub fn new(rules: Rules) -> Self {
        Invariant {
            rules,
            down_since: BTreeMap::new(),
            excused_until: BTreeMap::new(),
            orphaned_since: BTreeMap::new(),
        }
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Gather a snapshot through the clients, then decide.
    pub async fn check(
        &mut self,
        now: Timestamp,
        manager: &kube::Client,
        workers: &BTreeMap<String, WorkerAccess>,
    ) -> Result<(), Violation> {
        let snapshot = gather(manager, workers, &self.rules.origin)
            .await
            .map_err(|e| Violation(format!("could not check the MultiKueue invariant: {e}")))?;
        self.observe(now, &snapshot)
    }

    /// The decision: update what is remembered with `snapshot`, taken at `now`, and say whether
    /// it breaks the invariant.
    pub fn observe(&mut self, now: Timestamp, snapshot: &Snapshot) -> Result<(), Violation> {
        let mut problems = Vec::new();
        let mut excused = BTreeSet::new();
        for (worker, view) in &snapshot.workers {
            if view.connected {
                if let Some(since) = self.down_since.remove(worker)
                    && elapsed(since, now) >= self.rules.worker_lost_timeout
                {
                    let until = now + self.rules.stale_grace();
                    self.excused_until.insert(worker.clone(), until);
                }
                match self.excused_until.get(worker) {
                    Some(until) if now <= *until => {
                        excused.insert(worker.clone());
                    }
                    Some(_) => {
                        self.excused_until.remove(worker);
                    }
                    None => {}
                }
            } else {
                let since = *self.down_since.entry(worker.clone()).or_insert(now);
                // The manager moves the workload once the loss reaches the timeout.
                if elapsed(since, now) >= self.rules.worker_lost_timeout {
                    excused.insert(worker.clone());
                }
            }
        }

        // (a) one running job per manager workload, among the workers not excused.
        let mut running: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (worker, view) in &snapshot.workers {
            if excused.contains(worker) {
                continue;
            }
            for object in view.objects.iter().filter(|o| o.running) {
                running
                    .entry(object.owner.as_str())
                    .or_default()
                    .push(format!("Job {} on {worker}", object.key));
            }
        }
        for (owner, jobs) in running.iter().filter(|(_, jobs)| jobs.len() > 1) {
            problems.push(format!(
                "Workload {owner} runs on two workers at once: {}",
                jobs.join(", ")
            ));
        }

        // (b) orphans go within a GC interval of their worker being reachable.
        let mut seen = BTreeSet::new();
        if !self.rules.gc_interval.is_zero() {
            for (worker, view) in snapshot.workers.iter().filter(|(_, v)| v.connected) {
                for object in &view.objects {
                    if snapshot.live.contains(&object.owner) {
                        continue;
                    }
                    let key = (worker.clone(), object.kind, object.key.clone());
                    let since = *self.orphaned_since.entry(key.clone()).or_insert(now);
                    seen.insert(key);
                    let age = elapsed(since, now);
                    if age > self.rules.gc_interval + ORPHAN_SLACK {
                        problems.push(format!(
                            "{} {} on {worker} has had no live Workload {} on the manager for {} \
                             while {worker} was reachable, longer than the GC interval ({})",
                            object.kind,
                            object.key,
                            object.owner,
                            human(age),
                            human(self.rules.gc_interval),
                        ));
                    }
                }
            }
        }
        self.orphaned_since.retain(|key, _| seen.contains(key));

        if problems.is_empty() {
            Ok(())
        } else {
            Err(Violation(format!(
                "MultiKueue invariant broken:\n{}",
                problems.join("\n")
            )))
        }
    }
}

fn elapsed(since: Timestamp, now: Timestamp) -> Duration {
    now.duration_since(since).unsigned_abs()
}

fn human(d: Duration) -> String {
    format!("{}s", d.as_secs())
}

/// Read what the decision needs: the manager's live Workloads and MultiKueueClusters, and each
/// worker's objects carrying `origin`.
pub async fn gather(
    manager: &kube::Client,
    workers: &BTreeMap<String, WorkerAccess>,
    origin: &str,
) -> Result<Snapshot, kube::Error> {
    let params = ListParams::default();
    let workloads: Api<Workload> = Api::all(manager.clone());
    let live = workloads
        .list(&params)
        .await?
        .items
        .into_iter()
        .filter(|w| w.meta().deletion_timestamp.is_none())
        .map(|w| key(&w))
        .collect();
    let clusters: Api<MultiKueueCluster> = Api::all(manager.clone());
    let clusters = clusters.list(&params).await?.items;
    let ours = ListParams::default().labels(&format!("{MULTIKUEUE_ORIGIN}={origin}"));
    let mut views = BTreeMap::new();
    for (worker, access) in workers {
        let mut objects = Vec::new();
        let remote: Api<Workload> = Api::all(access.client.clone());
        for w in remote.list(&ours).await?.items {
            let k = key(&w);
            objects.push(Remote {
                kind: "Workload",
                key: k.clone(),
                owner: k,
                running: false,
            });
        }
        let jobs: Api<Job> = Api::all(access.client.clone());
        for job in jobs.list(&ours).await?.items {
            let Some(workload) = job.labels().get(PREBUILT_WORKLOAD_NAME) else {
                continue;
            };
            objects.push(Remote {
                kind: "Job",
                key: key(&job),
                owner: format!("{}/{workload}", job.namespace().unwrap_or_default()),
                running: running(&job),
            });
        }
        let connected = access.link_up && active(&clusters, worker);
        views.insert(worker.clone(), WorkerView { connected, objects });
    }
    Ok(Snapshot {
        live,
        workers: views,
    })
}

fn key<K: Resource>(object: &K) -> String {
    format!(
        "{}/{}",
        object.meta().namespace.clone().unwrap_or_default(),
        object.meta().name.clone().unwrap_or_default()
    )
}

/// Not suspended and neither Complete nor Failed.
fn running(job: &Job) -> bool {
    let suspended = job.spec.as_ref().and_then(|s| s.suspend).unwrap_or(false);
    let finished = job
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True");
    !suspended && !finished
}

/// Whether the manager's MultiKueueCluster for `worker` (the one whose kubeconfig is the worker's
/// Secret or file, else the one named after it) is Active.
fn active(clusters: &[MultiKueueCluster], worker: &str) -> bool {
    let points_at =
        |c: &&MultiKueueCluster| {
            c.spec.cluster_source.kube_config.as_ref().is_some_and(|k| {
                k.location == worker || k.location.rsplit('/').next() == Some(worker)
            })
        };
    clusters
        .iter()
        .find(points_at)
        .or_else(|| clusters.iter().find(|c| c.name_any() == worker))
        .and_then(|c| c.status.as_ref())
        .is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == "Active" && c.status == "True")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    const T0: &str = "2026-01-01T00:00:00Z";

    fn rules() -> Rules {
        Rules {
            origin: "multikueue".into(),
            gc_interval: Duration::from_secs(60),
            worker_lost_timeout: Duration::from_secs(120),
        }
    }

    fn at(seconds: i64) -> Timestamp {
        T0.parse::<Timestamp>().expect("a time") + jiff::SignedDuration::from_secs(seconds)
    }

    fn job(owner: &str, running: bool) -> Remote {
        Remote {
            kind: "Job",
            key: format!("default/{owner}-job"),
            owner: format!("default/{owner}"),
            running,
        }
    }

    fn view(connected: bool, objects: Vec<Remote>) -> WorkerView {
        WorkerView { connected, objects }
    }

    fn snapshot(live: &[&str], workers: Vec<(&str, WorkerView)>) -> Snapshot {
        Snapshot {
            live: live.iter().map(|w| format!("default/{w}")).collect(),
            workers: workers
                .into_iter()
                .map(|(n, v)| (n.to_string(), v))
                .collect(),
        }
    }

    /// Observes each (seconds, snapshot) in order; the last observation's verdict.
    fn verdict(history: Vec<(i64, Snapshot)>) -> Result<(), String> {
        let mut invariant = Invariant::new(rules());
        let mut last = Ok(());
        for (t, s) in history {
            last = invariant.observe(at(t), &s).map_err(|v| v.0);
        }
        last
    }

    #[rstest]
    #[case::one_running_job(
        vec![(0, snapshot(&["a"], vec![("w1", view(true, vec![job("a", true)])), ("w2", view(true, vec![]))]))],
        None)]
    #[case::a_job_on_two_workers(
        vec![(0, snapshot(&["a"], vec![("w1", view(true, vec![job("a", true)])), ("w2", view(true, vec![job("a", true)]))]))],
        Some("Workload default/a runs on two workers at once: Job default/a-job on w1, Job default/a-job on w2"))]
    #[case::one_of_them_suspended(
        vec![(0, snapshot(&["a"], vec![("w1", view(true, vec![job("a", true)])), ("w2", view(true, vec![job("a", false)]))]))],
        None)]
    #[case::two_jobs_of_different_workloads(
        vec![(0, snapshot(&["a", "b"], vec![("w1", view(true, vec![job("a", true)])), ("w2", view(true, vec![job("b", true)]))]))],
        None)]
    #[case::unreachable_shorter_than_the_timeout_is_no_excuse(
        vec![(0, snapshot(&["a"], vec![("w1", view(false, vec![job("a", true)])), ("w2", view(true, vec![]))])),
             (100, snapshot(&["a"], vec![("w1", view(false, vec![job("a", true)])), ("w2", view(true, vec![job("a", true)]))]))],
        Some("runs on two workers at once"))]
    #[case::unreachable_longer_than_the_timeout_may_keep_its_old_job(
        vec![(0, snapshot(&["a"], vec![("w1", view(false, vec![job("a", true)])), ("w2", view(true, vec![]))])),
             (150, snapshot(&["a"], vec![("w1", view(false, vec![job("a", true)])), ("w2", view(true, vec![job("a", true)]))]))],
        None)]
    #[case::back_after_a_long_loss_within_the_grace(
        vec![(0, snapshot(&["a"], vec![("w1", view(false, vec![job("a", true)])), ("w2", view(true, vec![]))])),
             (150, snapshot(&["a"], vec![("w1", view(true, vec![job("a", true)])), ("w2", view(true, vec![job("a", true)]))])),
             (200, snapshot(&["a"], vec![("w1", view(true, vec![job("a", true)])), ("w2", view(true, vec![job("a", true)]))]))],
        None)]
    #[case::back_after_a_long_loss_and_the_stale_job_stays(
        vec![(0, snapshot(&["a"], vec![("w1", view(false, vec![job("a", true)])), ("w2", view(true, vec![]))])),
             (150, snapshot(&["a"], vec![("w1", view(true, vec![job("a", true)])), ("w2", view(true, vec![job("a", true)]))])),
             (300, snapshot(&["a"], vec![("w1", view(true, vec![job("a", true)])), ("w2", view(true, vec![job("a", true)]))]))],
        Some("runs on two workers at once"))]
    #[case::orphan_younger_than_the_interval(
        vec![(0, snapshot(&[], vec![("w1", view(true, vec![job("a", false)]))])),
             (60, snapshot(&[], vec![("w1", view(true, vec![job("a", false)]))]))],
        None)]
    #[case::orphan_older_than_the_interval(
        vec![(0, snapshot(&[], vec![("w1", view(true, vec![job("a", false)]))])),
             (90, snapshot(&[], vec![("w1", view(true, vec![job("a", false)]))]))],
        Some("Job default/a-job on w1 has had no live Workload default/a on the manager for 90s while w1 was reachable, longer than the GC interval (60s)"))]
    #[case::orphan_on_an_unreachable_worker_waits(
        vec![(0, snapshot(&[], vec![("w1", view(false, vec![job("a", false)]))])),
             (600, snapshot(&[], vec![("w1", view(false, vec![job("a", false)]))])),
             (630, snapshot(&[], vec![("w1", view(true, vec![job("a", false)]))]))],
        None)]
    #[case::orphan_clock_starts_when_reachable_again(
        vec![(0, snapshot(&[], vec![("w1", view(false, vec![job("a", false)]))])),
             (600, snapshot(&[], vec![("w1", view(true, vec![job("a", false)]))])),
             (700, snapshot(&[], vec![("w1", view(true, vec![job("a", false)]))]))],
        Some("for 100s while w1 was reachable"))]
    #[case::an_owned_copy_is_no_orphan(
        vec![(0, snapshot(&["a"], vec![("w1", view(true, vec![job("a", false)]))])),
             (600, snapshot(&["a"], vec![("w1", view(true, vec![job("a", false)]))]))],
        None)]
    fn decision(#[case] history: Vec<(i64, Snapshot)>, #[case] expected: Option<&str>) {
        let got = verdict(history);
        match expected {
            None => assert_eq!(got, Ok(())),
            Some(part) => {
                let message = got.expect_err("a violation");
                assert!(message.contains(part), "{message:?} should say {part:?}");
            }
        }
    }

    #[test]
    fn collection_disabled_leaves_orphans_alone() {
        let mut invariant = Invariant::new(Rules {
            gc_interval: Duration::ZERO,
            ..rules()
        });
        let s = snapshot(&[], vec![("w1", view(true, vec![job("a", false)]))]);
        assert_eq!(invariant.observe(at(0), &s), Ok(()));
        assert_eq!(invariant.observe(at(3600), &s), Ok(()));
    }

    /// The scenario runner checks the invariant after every step of a scenario with workers: a
    /// Job of ours running on two workers for one Workload fails the scenario at that step.
    #[tokio::test(start_paused = true)]
    async fn a_scenario_with_a_job_on_two_workers_fails_at_that_step() {
        const JOB: &str = r#"
        object:
          apiVersion: batch/v1
          kind: Job
          metadata:
            name: twice
            labels:
              kueue.x-k8s.io/multikueue-origin: multikueue
              kueue.x-k8s.io/prebuilt-workload-name: job-twice
          spec:
            template:
              spec:
                restartPolicy: Never
                containers: [{name: c, image: busybox}]
"#;
        let text = format!(
            "name: twice\ndescription: d\nworkers:\n  worker-1: {{}}\n  worker-2: {{}}\nsteps:\n\
             - name: on worker-1\n  cluster: worker-1\n  create:{JOB}\
             - name: on worker-2\n  cluster: worker-2\n  create:{JOB}\
             - name: never reached\n  advance: 1s\n"
        );
        let scenario = crate::scenario::parse("inline.yaml", &text, std::path::Path::new("."))
            .expect("the scenario parses");
        let outcome = crate::scenario::run(&scenario, &crate::scenario::Registry::standard())
            .await
            .expect("the scenario runs");
        let failure = outcome.failure.expect("the invariant fails the scenario");
        assert_eq!(
            (failure.verb, failure.step.as_str()),
            ("invariant", "step 2 on worker-2")
        );
        assert!(
            failure.message.contains(
                "Workload default/job-twice runs on two workers at once: \
                 Job default/twice on worker-1, Job default/twice on worker-2"
            ),
            "{}",
            failure.message
        );
    }
}
