//! The scheduling benchmark's machinery on plans small enough to work out by hand: the runner
//! creates, the controller admits, the runner finishes, and the summary measures what happened.

use std::time::Duration;

use e2e::perf::{Plan, Summary, run};

const LIMIT: Duration = Duration::from_secs(600);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

async fn summary_of(generator: &str) -> Summary {
    let plan = Plan::from_yaml(generator).expect("plan");
    run(&plan, LIMIT).await.expect("run").summary
}

/// One CPU, three 1-CPU workloads of 1 s created 100 ms apart: they run one after another.
const ONE_AT_A_TIME: &str = "
cohorts:
- className: cohort
  count: 1
  queuesSets:
  - className: cq
    count: 1
    nominalQuota: 1
    workloadsSets:
    - count: 3
      creationIntervalMs: 100
      workloads:
      - {className: small, runtimeMs: 1000, priority: 50, request: 1}
";

#[tokio::test(start_paused = true)]
async fn workloads_queue_for_the_quota_and_run_back_to_back() {
    let s = summary_of(ONE_AT_A_TIME).await;
    // Created at 0.1, 0.2 and 0.3 s; admitted at 0.1, 1.1 and 2.1 s; the last ends at 3.1 s.
    assert_eq!(s.duration, ms(3100));
    let small = &s.workload_classes["small"];
    assert_eq!((small.count, small.admitted, small.evictions), (3, 3, 0));
    assert_eq!(small.average_time_to_admission(), ms(900));
    // From creation to Finished: 1.0, 1.9 and 2.8 s.
    assert_eq!(small.average_time_to_finish(), ms(1900));
    // 3 CPU·s used of 1 CPU over the 3.1 s from the ClusterQueue's creation to its last change.
    let usage = s.queue_classes["cq"].usage_percent();
    assert!((usage - 300_000.0 / 3100.0).abs() < 1e-6, "usage {usage}");
}

/// Two 10-CPU workloads fill 20 CPU; a 20-CPU one of higher priority preempts both, runs, and
/// then they run again.
const PREEMPTION: &str = "
cohorts:
- className: cohort
  count: 1
  queuesSets:
  - className: cq
    count: 1
    nominalQuota: 20
    withinClusterQueue: LowerPriority
    workloadsSets:
    - count: 2
      creationIntervalMs: 100
      workloads:
      - {className: small, runtimeMs: 1000, priority: 50, request: 10}
    - count: 1
      creationIntervalMs: 300
      workloads:
      - {className: large, runtimeMs: 500, priority: 200, request: 20}
";

#[tokio::test(start_paused = true)]
async fn a_higher_priority_workload_preempts_and_the_preempted_run_again() {
    let s = summary_of(PREEMPTION).await;
    let large = &s.workload_classes["large"];
    // The cycle that preempts admits nothing, so the scheduler pauses 1 ms (as Kueue's does)
    // before the cycle that admits the large workload into the freed room.
    assert_eq!(large.average_time_to_admission(), ms(1));
    let small = &s.workload_classes["small"];
    assert_eq!(small.evictions, 2);
    // Readmitted at 0.801 s when the large one (admitted at 0.301 s) finishes: (701 + 601) / 2.
    assert_eq!(small.average_time_to_admission(), ms(651));
    assert_eq!(s.duration, ms(1801));
}

/// Two queues of a cohort: the second borrows the first's idle quota.
const BORROWING: &str = "
cohorts:
- className: cohort
  count: 1
  queuesSets:
  - className: lender
    count: 1
    nominalQuota: 4
    workloadsSets: []
  - className: borrower
    count: 1
    nominalQuota: 4
    borrowingLimit: 4
    workloadsSets:
    - count: 2
      creationIntervalMs: 100
      workloads:
      - {className: wide, runtimeMs: 1000, request: 4}
";

#[tokio::test(start_paused = true)]
async fn a_queue_borrows_idle_quota_in_its_cohort() {
    let s = summary_of(BORROWING).await;
    let wide = &s.workload_classes["wide"];
    assert_eq!(wide.average_time_to_admission(), ms(0));
    assert_eq!(s.duration, ms(1200));
    // The borrower used 8 CPU·s against 4 nominal over 1.2 s.
    let usage = s.queue_classes["borrower"].usage_percent();
    assert!((usage - 800.0 / 4.8).abs() < 1e-6, "usage {usage}");
}

/// Two queues of a cohort, both preempting: large workloads reclaim quota the other queue
/// borrowed. Preemption must leave the freed room to the preemptor; if the rest of the cycle could
/// take it, the victims would be readmitted and preempted again forever.
const RECLAIM: &str = "
cohorts:
- className: cohort
  count: 1
  queuesSets:
  - className: cq
    count: 2
    nominalQuota: 20
    borrowingLimit: 100
    reclaimWithinCohort: Any
    withinClusterQueue: LowerPriority
    workloadsSets:
    - count: 20
      creationIntervalMs: 100
      workloads:
      - {className: small, runtimeMs: 200, priority: 50, request: 1}
    - count: 5
      creationIntervalMs: 500
      workloads:
      - {className: medium, runtimeMs: 500, priority: 100, request: 5}
    - count: 2
      creationIntervalMs: 1200
      workloads:
      - {className: large, runtimeMs: 1000, priority: 200, request: 20}
";

#[tokio::test(start_paused = true)]
async fn reclaiming_preemption_settles() {
    let s = summary_of(RECLAIM).await;
    let large = &s.workload_classes["large"];
    assert_eq!((large.count, large.admitted), (4, 4));
    // Each large workload is admitted by preempting, a millisecond or two after it is created:
    // the scheduler's pauses after cycles that admit nothing. Without the pauses it would be 0;
    // without the room kept for the preemptor, never.
    assert_eq!(
        large.average_time_to_admission(),
        Duration::from_micros(1500)
    );
    assert!(s.workload_classes["medium"].evictions > 0);
}

#[tokio::test(start_paused = true)]
async fn the_same_plan_gives_the_same_summary() {
    let first = summary_of(PREEMPTION).await;
    let second = summary_of(PREEMPTION).await;
    assert_eq!(first, second);
}

#[tokio::test(start_paused = true)]
async fn a_run_that_cannot_finish_says_how_far_it_got() {
    // 2 CPU asked of a 1-CPU queue that cannot borrow: never admitted.
    let plan = Plan::from_yaml(
        "
cohorts:
- className: cohort
  count: 1
  queuesSets:
  - className: cq
    count: 1
    nominalQuota: 1
    workloadsSets:
    - count: 1
      creationIntervalMs: 100
      workloads:
      - {className: huge, runtimeMs: 100, request: 2}
",
    )
    .expect("plan");
    let error = run(&plan, Duration::from_secs(60))
        .await
        .err()
        .expect("stuck")
        .to_string();
    assert_eq!(
        error,
        "after 60s of virtual time only 0 of 1 workloads had finished (0 running, 1 waiting)"
    );
}

/// A slice of the baseline: six queues of a cohort reclaiming from each other, where one
/// scheduling pass often finds a victim that an earlier cycle already preempted.
const CHURN: &str = "
cohorts:
- className: cohort
  count: 1
  queuesSets:
  - className: cq
    count: 6
    nominalQuota: 20
    borrowingLimit: 100
    reclaimWithinCohort: Any
    withinClusterQueue: LowerPriority
    workloadsSets:
    - count: 40
      creationIntervalMs: 100
      workloads:
      - {className: small, runtimeMs: 200, priority: 50, request: 1}
    - count: 10
      creationIntervalMs: 500
      workloads:
      - {className: medium, runtimeMs: 500, priority: 100, request: 5}
    - count: 4
      creationIntervalMs: 1200
      workloads:
      - {className: large, runtimeMs: 1000, priority: 200, request: 20}
";

#[tokio::test(start_paused = true)]
async fn a_victim_on_its_way_out_is_not_preempted_again() {
    let s = summary_of(CHURN).await;
    for (name, class) in &s.workload_classes {
        assert_eq!(class.admitted, class.count, "{name}: every workload runs");
        assert_eq!(
            class.preemptions, class.evictions,
            "{name}: each eviction is one preemption written"
        );
    }
    assert!(s.workload_classes["small"].evictions > 0);
}
