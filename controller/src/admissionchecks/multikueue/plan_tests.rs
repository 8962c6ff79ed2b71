//! The workload controller's decisions: given the manager's workload, what the workers' watches
//! show and whether they are reachable, what it does next.

use super::*;
use api::kueue::{PodSet, WorkloadSpec, WorkloadStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use rstest::rstest;

const CHECK: &str = "mk";
const START: &str = "2026-01-01T00:00:00Z";
const TIMEOUT: Duration = Duration::from_secs(15 * 60);

fn at(minutes: i64) -> Timestamp {
    let start: Timestamp = START.parse().expect("a time");
    start
        .checked_add(jiff::SignedDuration::from_mins(minutes))
        .expect("in range")
}

fn condition(type_: &str, reason: &str, message: &str, minute: i64) -> Condition {
    Condition {
        type_: type_.into(),
        status: "True".into(),
        reason: reason.into(),
        message: message.into(),
        last_transition_time: Time(at(minute)),
        observed_generation: None,
    }
}

fn spec() -> WorkloadSpec {
    WorkloadSpec {
        pod_sets: vec![PodSet {
            name: "main".into(),
            template: Default::default(),
            count: 1,
            min_count: None,
        }],
        queue_name: Some("queue".into()),
        ..Default::default()
    }
}

/// A copy on a worker, as its watch shows it.
#[derive(Clone)]
struct Copy(Workload);

fn copy() -> Copy {
    let mut wl = remote_copy(&Case::new().local, "multikueue");
    wl.status = Some(WorkloadStatus::default());
    Copy(wl)
}

impl Copy {
    fn with(mut self, c: Condition) -> Self {
        let status = self.0.status.get_or_insert_with(Default::default);
        conditions::set(&mut status.conditions, c);
        self
    }
    fn admitted(self, minute: i64) -> Self {
        self.with(condition(cond::QUOTA_RESERVED, "QuotaReserved", "", minute))
            .with(condition(cond::ADMITTED, "Admitted", "", minute))
    }
    fn evicted(self) -> Self {
        let mut c = self.with(condition(
            cond::EVICTED,
            "Preempted",
            "preempted on the worker",
            9,
        ));
        if let Some(s) = c.0.status.as_mut() {
            conditions::remove(&mut s.conditions, cond::ADMITTED);
        }
        c
    }
    fn finished(self, reason: &str, message: &str) -> Self {
        self.with(condition(cond::FINISHED, reason, message, 20))
    }
    fn deactivated(mut self) -> Self {
        self.0.spec.active = Some(false);
        self
    }
    fn priority(mut self, p: i32) -> Self {
        self.0.spec.priority = Some(p);
        self
    }
    fn queue(mut self, q: &str) -> Self {
        self.0.spec.queue_name = Some(q.into());
        self
    }
    fn terminating(mut self) -> Self {
        self.0.metadata.deletion_timestamp = Some(Time(at(0)));
        self
    }
    fn asked_to_evict(self) -> Self {
        self.with(condition(
            cond::DEACTIVATION_TARGET,
            EVICTED_ON_MANAGER_CLUSTER,
            "Evicted on manager: preempted",
            9,
        ))
    }
    /// What the worker makes of [`Copy::asked_to_evict`].
    fn deactivated_for_the_manager(self) -> Self {
        let mut c = self.deactivated().with(condition(
            cond::EVICTED,
            "DeactivatedDueToEvictedOnManagerCluster",
            "The workload is deactivated due to Evicted on manager: preempted",
            9,
        ));
        if let Some(s) = c.0.status.as_mut() {
            conditions::remove(&mut s.conditions, cond::ADMITTED);
        }
        c
    }
}

#[derive(Clone, Default)]
struct Worker {
    active: bool,
    lost_since: Option<i64>,
    copy: Option<Copy>,
    job: bool,
    /// The manager asked the copy to evict; the worker's watch does not show it yet.
    asked_unseen: bool,
}

/// A workload and its workers: by default reserved, check Pending, two reachable workers
/// `w1` and `w2` without copies, AllAtOnce, at minute 10.
#[derive(Clone)]
struct Case {
    local: Workload,
    deleted: bool,
    owner: Owner,
    clusters: Option<Vec<String>>,
    workers: BTreeMap<String, Worker>,
    excluded: BTreeSet<String>,
    dispatcher: Dispatcher,
    round_start: Option<i64>,
    now: i64,
}

impl Case {
    fn new() -> Self {
        let mut local = Workload::new("job-a-1234", spec());
        local.metadata.namespace = Some("default".into());
        local.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "batch/v1".into(),
            kind: "Job".into(),
            name: "a".into(),
            uid: "uid-a".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }]);
        local.status = Some(WorkloadStatus {
            conditions: vec![condition(cond::QUOTA_RESERVED, "QuotaReserved", "", 0)],
            admission_checks: vec![AdmissionCheckState {
                name: CHECK.into(),
                state: CheckState::Pending,
                last_transition_time: Time(at(0)),
                message: String::new(),
                requeue_after_seconds: None,
                retry_count: None,
                pod_set_updates: vec![],
            }],
            ..Default::default()
        });
        let reachable = Worker {
            active: true,
            ..Worker::default()
        };
        Case {
            local,
            deleted: false,
            owner: Owner::Managed,
            clusters: Some(vec!["w1".into(), "w2".into()]),
            workers: [("w1".into(), reachable.clone()), ("w2".into(), reachable)].into(),
            excluded: BTreeSet::new(),
            dispatcher: Dispatcher::AllAtOnce,
            round_start: None,
            now: 10,
        }
    }

    fn status(&mut self) -> &mut WorkloadStatus {
        self.local.status.get_or_insert_with(Default::default)
    }
    fn check(mut self, state: CheckState) -> Self {
        self.status().admission_checks[0].state = state;
        self
    }
    fn other_check(mut self, state: CheckState) -> Self {
        let mut other = self.status().admission_checks[0].clone();
        other.name = "capacity".into();
        other.state = state;
        self.status().admission_checks.push(other);
        self
    }
    /// Ready on `cluster`, as the controller leaves it.
    fn running_on(self, cluster: &str) -> Self {
        let mut c = self
            .check(CheckState::Ready)
            .cluster_name(cluster)
            .copy(cluster, copy().admitted(2))
            .job(cluster);
        c.status().admission_checks[0].message = admitted_message(cluster);
        c
    }
    fn cluster_name(mut self, c: &str) -> Self {
        self.status().cluster_name = Some(c.into());
        self
    }
    fn nominated(mut self, list: &[&str]) -> Self {
        self.status().nominated_cluster_names = list.iter().map(|s| s.to_string()).collect();
        self
    }
    fn local_condition(mut self, c: Condition) -> Self {
        conditions::set(&mut self.status().conditions, c);
        self
    }
    fn unreserved(mut self) -> Self {
        conditions::remove(&mut self.status().conditions, cond::QUOTA_RESERVED);
        self
    }
    fn finished(self) -> Self {
        self.local_condition(condition(cond::FINISHED, "Succeeded", "done", 30))
    }
    fn evicted(self) -> Self {
        self.local_condition(condition(cond::EVICTED, "Preempted", "preempted", 9))
    }
    fn deleted(mut self) -> Self {
        self.deleted = true;
        self
    }
    fn owner(mut self, owner: Owner) -> Self {
        self.owner = owner;
        self
    }
    fn no_config(mut self) -> Self {
        self.clusters = None;
        self
    }
    fn worker(&mut self, name: &str) -> &mut Worker {
        self.workers.entry(name.into()).or_default()
    }
    fn copy(mut self, cluster: &str, copy: Copy) -> Self {
        self.worker(cluster).copy = Some(copy);
        self
    }
    fn job(mut self, cluster: &str) -> Self {
        self.worker(cluster).job = true;
        self
    }
    fn asked_unseen(mut self, cluster: &str) -> Self {
        self.worker(cluster).asked_unseen = true;
        self
    }
    fn reachable(mut self, cluster: &str) -> Self {
        self.worker(cluster).active = true;
        self
    }
    fn lost(mut self, cluster: &str, since: i64) -> Self {
        let w = self.worker(cluster);
        w.active = false;
        w.lost_since = Some(since);
        self
    }
    fn workers(mut self, names: &[&str]) -> Self {
        self.clusters = Some(names.iter().map(|s| s.to_string()).collect());
        for name in names {
            self.worker(name).active = true;
        }
        self
    }
    fn excluded(mut self, cluster: &str) -> Self {
        self.excluded.insert(cluster.into());
        self
    }
    fn dispatcher(mut self, d: Dispatcher) -> Self {
        self.dispatcher = d;
        self
    }
    fn at(mut self, minute: i64) -> Self {
        self.now = minute;
        self
    }

    fn plan(&self) -> Plan {
        let check = &self
            .local
            .status
            .as_ref()
            .expect("a status")
            .admission_checks[0];
        let remotes = self
            .workers
            .iter()
            .map(|(name, w)| {
                let remote = Remote {
                    active: w.active,
                    lost_since: w.lost_since.map(at),
                    copy: w.copy.as_ref().map(|c| &c.0),
                    job: w.job,
                    asked_to_evict: w.asked_unseen
                        || w.copy.as_ref().is_some_and(|c| asked_to_evict(&c.0)),
                };
                (name.clone(), remote)
            })
            .collect();
        plan(&Facts {
            local: &self.local,
            check,
            deleted: self.deleted,
            owner: self.owner.clone(),
            clusters: self.clusters.as_deref(),
            remotes,
            excluded: &self.excluded,
            dispatcher: self.dispatcher,
            round_start: self.round_start.map(at),
            now: at(self.now),
            worker_lost_timeout: TIMEOUT,
        })
    }
}

fn remove(cluster: &str, job: bool, copy: bool) -> Action {
    Action::Remove {
        cluster: cluster.into(),
        job,
        copy,
    }
}
fn create(cluster: &str) -> Action {
    Action::Create {
        cluster: cluster.into(),
    }
}
fn sync(cluster: &str, winner: bool) -> Action {
    Action::SyncJob {
        cluster: cluster.into(),
        winner,
    }
}
fn admitted(cluster: &str) -> Action {
    Action::Admitted {
        cluster: cluster.into(),
    }
}
fn nominate(list: &[&str]) -> Action {
    Action::Nominate(list.iter().map(|s| s.to_string()).collect())
}
fn set(state: CheckState, message: &str) -> Action {
    Action::SetCheck {
        state,
        message: message.into(),
        note: None,
    }
}
fn set_noted(state: CheckState, message: &str, warning: bool) -> Action {
    Action::SetCheck {
        state,
        message: message.into(),
        note: Some(Note {
            warning,
            message: message.into(),
        }),
    }
}

#[rstest]
#[case::deleted_workload_loses_every_reachable_copy(
    Case::new().deleted().copy("w1", copy()).copy("w2", copy()),
    vec![remove("w1", false, true), remove("w2", false, true)])]
#[case::the_admitting_workers_job_goes_with_it(
    Case::new().running_on("w1").deleted(),
    vec![remove("w1", true, true)])]
#[case::finished_workload_loses_its_copies(
    Case::new().running_on("w1").finished(),
    vec![remove("w1", true, true)])]
#[case::workload_without_quota_loses_its_copies(
    Case::new().unreserved().copy("w1", copy()).copy("w2", copy()),
    vec![remove("w1", false, true), remove("w2", false, true)])]
#[case::unreachable_workers_are_left_to_the_garbage_collector(
    Case::new().unreserved().copy("w1", copy()).copy("w2", copy()).lost("w2", 5),
    vec![remove("w1", false, true)])]
#[case::nothing_to_remove_nothing_done(Case::new().finished(), vec![])]
#[case::a_deleted_workload_is_cleaned_up_even_when_it_could_not_be_dispatched(
    Case::new().deleted().owner(Owner::Unmanaged("No multikueue adapter found".into()))
        .copy("w1", copy()),
    vec![remove("w1", false, true)])]
fn copies_do_not_outlive_the_workloads_run(#[case] case: Case, #[case] expected: Vec<Action>) {
    assert_eq!(case.plan().actions, expected);
}

#[rstest]
#[case::no_adapter_for_the_owner_kind(
    "No multikueue adapter found for owner kind \"kubeflow.org/v2beta1, Kind=MPIJob\"",
    CheckState::Pending,
    "No multikueue adapter found for owner kind \"kubeflow.org/v2beta1, Kind=MPIJob\", Previously: \"Pending\""
)]
#[case::job_not_managed_by_multikueue(
    "The owner is not managed by Kueue: Expecting spec.managedBy to be \"kueue.x-k8s.io/multikueue\" not \"\"",
    CheckState::Pending,
    "The owner is not managed by Kueue: Expecting spec.managedBy to be \"kueue.x-k8s.io/multikueue\" not \"\", Previously: \"Pending\""
)]
fn a_workload_that_cannot_be_dispatched_is_rejected(
    #[case] why: &str,
    #[case] state: CheckState,
    #[case] message: &str,
) {
    let case = Case::new().check(state).owner(Owner::Unmanaged(why.into()));
    assert_eq!(
        case.plan().actions,
        vec![set(CheckState::Rejected, message)]
    );
}

#[rstest]
#[case::unknown_job(Case::new().owner(Owner::Unknown))]
#[case::unreadable_config(Case::new().no_config())]
#[case::other_checks_not_ready_yet(Case::new().other_check(CheckState::Pending))]
#[case::evicted_on_the_manager(Case::new().evicted())]
#[case::admitted_already(Case::new().running_on("w1"))]
fn nothing_is_dispatched_until_it_may_be(#[case] case: Case) {
    assert!(
        !case
            .plan()
            .actions
            .iter()
            .any(|a| matches!(a, Action::Create { .. } | Action::Nominate(_))),
        "{:?}",
        case.plan()
    );
}

#[rstest]
#[case::every_reachable_worker_gets_a_copy(
    Case::new(),
    vec![nominate(&["w1", "w2"]), create("w1"), create("w2")])]
#[case::a_nominated_worker_with_its_copy_is_left_as_is(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy()).copy("w2", copy()),
    vec![])]
#[case::a_missing_copy_on_a_live_worker_is_recreated(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy()),
    vec![create("w2")])]
#[case::a_lost_worker_is_not_nominated(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy()).lost("w2", 5),
    vec![nominate(&["w1"])])]
#[case::a_copy_being_deleted_is_waited_for(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy()).copy("w2", copy().terminating()),
    vec![])]
#[case::a_worker_that_left_the_config_loses_its_copy(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy()).copy("w2", copy())
        .copy("w3", copy()).job("w3").reachable("w3").workers(&["w1", "w2"]),
    vec![remove("w3", true, true)])]
#[case::a_worker_excluded_for_a_foreign_job_gets_no_copy(
    Case::new().excluded("w1"),
    vec![nominate(&["w2"]), create("w2")])]
#[case::external_removing_a_nomination_removes_that_copy(
    Case::new().dispatcher(Dispatcher::External).nominated(&["w2"])
        .copy("w1", copy()).copy("w2", copy()),
    vec![remove("w1", false, true)])]
#[case::external_nothing_nominated_nothing_created(
    Case::new().dispatcher(Dispatcher::External), vec![])]
#[case::incremental_first_round(
    Case::new().dispatcher(Dispatcher::Incremental).workers(&["w1", "w2", "w3", "w4"]),
    vec![nominate(&["w1", "w2", "w3"]), create("w1"), create("w2"), create("w3")])]
fn copies_follow_the_dispatcher(#[case] case: Case, #[case] expected: Vec<Action>) {
    assert_eq!(case.plan().actions, expected);
}

#[test]
fn an_incremental_round_starts_and_ends_five_minutes_later() {
    let plan = Case::new()
        .dispatcher(Dispatcher::Incremental)
        .workers(&["w1", "w2", "w3", "w4"])
        .plan();
    assert!(plan.round_started);
    assert_eq!(plan.wake_at, Some(at(15)));
}

#[rstest]
#[case::the_first_admitted_copy_wins_and_the_others_go(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy().admitted(4)).copy("w2", copy().admitted(3)),
    vec![remove("w1", false, true), sync("w2", true), admitted("w2")])]
#[case::two_admitted_in_the_same_second_the_first_by_name_wins(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy().admitted(3)).copy("w2", copy().admitted(3)),
    vec![remove("w2", false, true), sync("w1", true), admitted("w1")])]
#[case::a_copy_only_reserving_quota_does_not_win(
    Case::new().nominated(&["w1", "w2"])
        .copy("w1", copy().with(condition(cond::QUOTA_RESERVED, "QuotaReserved", "", 3)))
        .copy("w2", copy()),
    vec![])]
#[case::once_running_the_job_status_is_copied_back(
    Case::new().running_on("w1"),
    vec![sync("w1", true)])]
#[case::once_running_a_stale_copy_elsewhere_cannot_win(
    Case::new().running_on("w1").copy("w2", copy().admitted(1)),
    vec![remove("w2", false, true), sync("w1", true)])]
#[case::a_winner_admitted_on_a_worker_that_left_the_config_does_not_count(
    Case::new().nominated(&["w1"]).workers(&["w1"]).copy("w1", copy())
        .copy("w3", copy().admitted(1)).reachable("w3"),
    vec![remove("w3", false, true)])]
#[case::a_copy_its_worker_rejected_is_out_of_the_race_but_kept(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy().deactivated()).copy("w2", copy()),
    vec![])]
#[case::the_running_copy_deactivated_by_its_worker_runs_until_evicted(
    Case::new().running_on("w1").copy("w1", copy().admitted(2).deactivated()),
    vec![sync("w1", true)])]
#[case::a_retrying_check_creates_no_job(
    Case::new().check(CheckState::Retry).copy("w1", copy().admitted(3)).copy("w2", copy()),
    vec![remove("w2", false, true)])]
#[case::a_copy_preempted_on_its_worker_does_not_win_again(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy().admitted(1).evicted()).copy("w2", copy()),
    vec![])]
#[case::a_job_left_from_an_earlier_admission_goes_while_nobody_holds_the_workload(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy().admitted(1).evicted()).job("w1")
        .copy("w2", copy()),
    vec![remove("w1", true, false)])]
fn the_first_worker_to_admit_runs_the_job(#[case] case: Case, #[case] expected: Vec<Action>) {
    assert_eq!(case.plan().actions, expected);
}

#[rstest]
#[case::a_job_on_a_reachable_worker_is_removed_first(
    Case::new().copy("w1", copy().admitted(3)).job("w2"),
    vec![remove("w2", true, false)], None)]
#[case::a_job_on_a_briefly_lost_worker_is_waited_for(
    Case::new().copy("w1", copy().admitted(3)).job("w2").lost("w2", 5),
    vec![], Some(20))]
#[case::a_worker_lost_longer_than_the_timeout_is_given_up(
    Case::new().copy("w1", copy().admitted(3)).job("w2").lost("w2", 5).at(21),
    vec![sync("w1", true), admitted("w1")], None)]
fn a_job_never_exists_on_two_workers(
    #[case] case: Case,
    #[case] expected: Vec<Action>,
    #[case] wake_at: Option<i64>,
) {
    let plan = case.plan();
    assert_eq!(plan.actions, expected);
    assert_eq!(plan.wake_at, wake_at.map(at));
}

#[rstest]
#[case::the_workload_finishes_as_the_remote_did(
    Case::new().running_on("w1").copy("w1", copy().admitted(2).finished("Failed", "Job failed")),
    vec![sync("w1", false), Action::Finish { reason: "Failed".into(), message: "Job failed".into() }])]
#[case::without_a_job_to_copy_from_it_just_finishes(
    Case::new().check(CheckState::Ready).cluster_name("w1")
        .copy("w1", copy().admitted(2).finished("Succeeded", "Job finished successfully")),
    vec![Action::Finish { reason: "Succeeded".into(), message: "Job finished successfully".into() }])]
#[case::out_of_sync_is_not_a_completion_it_is_dispatched_again(
    Case::new().running_on("w1").copy("w1", copy().admitted(2).finished(FINISHED_OUT_OF_SYNC, "")),
    vec![set_noted(CheckState::Retry,
        "Remote workload on worker cluster \"w1\" is out of sync with its user job, resetting for re-dispatch, Previously: \"Ready\"",
        true)])]
#[case::out_of_sync_before_ready_waits(
    Case::new().copy("w1", copy().admitted(2).finished(FINISHED_OUT_OF_SYNC, "")),
    vec![])]
fn a_remote_that_finished_finishes_the_workload(#[case] case: Case, #[case] expected: Vec<Action>) {
    assert_eq!(case.plan().actions, expected);
}

#[rstest]
#[case::evicted_on_the_running_worker_it_is_retried(
    Case::new().running_on("w1").copy("w1", copy().admitted(2).evicted()),
    vec![set_noted(CheckState::Retry,
        "Workload evicted on worker cluster: \"w1\", resetting for re-admission. Previously: \"Ready\"",
        false)])]
#[case::a_copy_evicted_elsewhere_does_not_matter(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy().admitted(2).evicted()).copy("w2", copy().admitted(3)),
    vec![remove("w1", false, true), sync("w2", true), admitted("w2")])]
#[case::evicted_on_both_the_stopped_job_reports_back(
    Case::new().evicted().copy("w1", copy().admitted(2).evicted()).job("w1"),
    vec![sync("w1", false)])]
#[case::evicted_on_the_manager_the_worker_is_asked_to_evict(
    Case::new().evicted().copy("w1", copy().admitted(2)).job("w1"),
    vec![Action::EvictRemote { cluster: "w1".into(), message: "Evicted on manager: preempted".into() }])]
#[case::asked_once(
    Case::new().evicted().copy("w1", copy().admitted(2).asked_to_evict()).job("w1"),
    vec![])]
#[case::a_copy_asked_to_evict_does_not_win_the_next_admission(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy())
        .copy("w2", copy().admitted(2).asked_to_evict()).job("w2"),
    vec![remove("w2", true, true), create("w2")])]
#[case::a_copy_asked_to_evict_before_its_watch_shows_it_does_not_win_either(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy())
        .copy("w2", copy().admitted(2)).asked_unseen("w2"),
    vec![remove("w2", false, true), create("w2")])]
#[case::asked_once_even_before_its_watch_shows_it(
    Case::new().evicted().copy("w1", copy().admitted(2)).job("w1").asked_unseen("w1"),
    vec![])]
#[case::a_copy_deactivated_for_the_manager_is_replaced_at_the_next_admission(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy())
        .copy("w2", copy().admitted(2).deactivated_for_the_manager()),
    vec![remove("w2", false, true), create("w2")])]
#[case::while_evicted_on_the_manager_the_deactivated_copy_reports_back(
    Case::new().evicted().copy("w1", copy().admitted(2).deactivated_for_the_manager()).job("w1"),
    vec![sync("w1", false)])]
fn evictions_are_passed_on(#[case] case: Case, #[case] expected: Vec<Action>) {
    assert_eq!(case.plan().actions, expected);
}

#[rstest]
#[case::a_brief_loss_does_not_evict(
    Case::new().running_on("w1").lost("w1", 5).at(19), vec![], Some(20))]
#[case::a_loss_longer_than_the_timeout_retries(
    Case::new().running_on("w1").lost("w1", 5).at(20),
    vec![set(CheckState::Retry, "Admitting remote lost, Previously: \"Ready\"")], None)]
#[case::a_reachable_worker_without_the_copy_retries_at_once(
    Case::new().check(CheckState::Ready).cluster_name("w1").job("w1"),
    vec![set(CheckState::Retry, "Admitting remote no longer exists, Previously: \"Ready\"")], None)]
#[case::a_worker_removed_from_the_config_retries_at_once(
    Case::new().running_on("w3").lost("w3", 5).workers(&["w1", "w2"]),
    vec![set(CheckState::Retry, "Admitting remote no longer exists, Previously: \"Ready\"")], None)]
#[case::ready_without_a_cluster_name_retries(
    Case::new().check(CheckState::Ready),
    vec![set(CheckState::Retry,
        "Admission check is Ready but no admitting cluster is recorded; this is unexpected, please report it, Previously: \"Ready\"")],
    None)]
fn a_lost_admitting_worker_is_given_the_timeout(
    #[case] case: Case,
    #[case] expected: Vec<Action>,
    #[case] wake_at: Option<i64>,
) {
    let plan = case.plan();
    assert_eq!(plan.actions, expected);
    assert_eq!(plan.wake_at, wake_at.map(at));
}

#[rstest]
#[case::a_changed_spec_removes_the_copy(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy().queue("other")).copy("w2", copy()),
    vec![remove("w1", false, true), create("w1")])]
#[case::a_changed_priority_is_passed_on(
    Case::new().nominated(&["w1", "w2"]).copy("w1", copy().priority(7)).copy("w2", copy()),
    vec![Action::UpdatePriority { cluster: "w1".into() }])]
fn copies_follow_the_workloads_spec(#[case] case: Case, #[case] expected: Vec<Action>) {
    assert_eq!(case.plan().actions, expected);
}

#[test]
fn a_copy_is_the_workload_with_our_origin_and_without_the_job_uid() {
    let mut local = Case::new().local;
    local.metadata.labels = Some(
        [
            (crate::jobs::JOB_UID_LABEL.to_string(), "uid-a".to_string()),
            ("team".to_string(), "ml".to_string()),
        ]
        .into(),
    );
    local.metadata.annotations = Some([("note".to_string(), "x".to_string())].into());
    local.metadata.resource_version = Some("42".into());
    let copy = remote_copy(&local, "manager-1");
    assert_eq!(copy.metadata.name, local.metadata.name);
    assert_eq!(copy.metadata.namespace, local.metadata.namespace);
    assert_eq!(copy.metadata.annotations, local.metadata.annotations);
    assert_eq!(
        copy.metadata.labels,
        Some(
            [
                ("team".to_string(), "ml".to_string()),
                (
                    label::MULTIKUEUE_ORIGIN.to_string(),
                    "manager-1".to_string()
                ),
            ]
            .into()
        )
    );
    assert_eq!(copy.spec, local.spec);
    assert_eq!(copy.metadata.owner_references, None);
    assert_eq!(copy.metadata.resource_version, None);
    assert_eq!(copy.status, None);
}
