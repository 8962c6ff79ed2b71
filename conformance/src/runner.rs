//! Runs the selected tests, side by side where they share no capacity, each in a namespace of its
//! own that is deleted afterwards,
//! checks the contract's rules on every request version the test caused, and collects a
//! diagnostic bundle when a test fails.

use std::cell::{Cell, RefCell};
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;

use api::autoscaling::ProvisioningRequest;
use k8s_openapi::api::core::v1::{Event, Namespace, Node, PodTemplate};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::{Client, ResourceExt};

use crate::monitor::{Histories, Monitor, Pace};
use crate::options::Options;
use crate::suite::{self, Ctx, Failure, Profile, Room, TestCase};

/// Which tests to run, and how.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Only these tests (all when empty).
    pub run_tests: Vec<String>,
    pub skip_tests: Vec<String>,
    /// Stop at the first failure (the rest are skipped).
    pub fail_fast: bool,
    /// Leave each test's namespace behind.
    pub no_cleanup: bool,
    /// One test at a time (by default, tests that share no capacity run side by side).
    pub serial: bool,
    /// This run's name: in its namespaces' names and their `tollgate.dev/conformance-run` label,
    /// so that two runs never collide and an interrupted run cleans up only its own.
    pub run_id: String,
}

/// The label on every namespace (and cluster-scoped object) a run creates.
pub const RUN_LABEL: &str = "tollgate.dev/conformance-run";

/// How a test ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Passed,
    Failed(Failure),
    /// Not run, and why.
    Skipped {
        reason: String,
        unclaimed: bool,
    },
}

/// One test's result.
#[derive(Clone, Debug)]
pub struct TestResult {
    pub name: &'static str,
    pub description: &'static str,
    pub profile: Profile,
    pub outcome: Outcome,
    /// Time the test took (virtual in the embedded run).
    pub took: Duration,
    /// What a vendor needs to debug a failure: requests, their condition history, Events,
    /// PodTemplates, Nodes (YAML).
    pub diagnostics: Option<String>,
    /// The longest the class took to give one of the test's requests its first condition.
    pub slowest_answer: Option<Duration>,
    /// The shortest window the test watched for a change that must not come, if it watched one
    /// to its end.
    pub shortest_hold: Option<Duration>,
}

/// Why each test would be skipped, or `None` when it runs.
pub fn plan(options: &Options, selection: &Selection) -> Vec<(TestCase, Option<Outcome>)> {
    suite::all()
        .into_iter()
        .map(|test| {
            // An unclaimed feature first: such a test is never a gap, whatever else selects it.
            let unclaimed = test.features.iter().find(|f| !options.claims(**f));
            let skip = if let Some(f) = unclaimed {
                Some(skipped(
                    &format!("the class does not claim feature {}", f.name()),
                    true,
                ))
            } else if test.profile == Profile::Kueue && !options.kueue {
                Some(skipped(
                    "the kueue profile was not asked for (--kueue)",
                    true,
                ))
            } else if !selection.run_tests.is_empty()
                && !selection.run_tests.iter().any(|t| t == test.name)
            {
                Some(skipped("not selected by --run-test", false))
            } else if selection.skip_tests.iter().any(|t| t == test.name) {
                Some(skipped("skipped by --skip-tests", false))
            } else {
                None
            };
            (test, skip)
        })
        .collect()
}

fn skipped(reason: &str, unclaimed: bool) -> Outcome {
    Outcome::Skipped {
        reason: reason.into(),
        unclaimed,
    }
}

/// Runs the plan against the cluster `client` talks to. `progress` hears of each result as it
/// comes; the results come back in the plan's order.
///
/// Unless `selection.serial`, tests run side by side where they share no capacity (see
/// [`Room`]): first each `Alone` test by itself, then the tests needing the `fits` room one after
/// another, with every other test beside them. `fail_fast` skips the tests not yet started.
pub async fn run(
    client: &Client,
    options: &Options,
    selection: &Selection,
    clock: support::Clock,
    progress: impl FnMut(&TestResult),
) -> Vec<TestResult> {
    // Transient failures of the cluster are retried before any test sees them.
    let client = &crate::retry::retrying(client.clone());
    let shared = Shared {
        client,
        options,
        selection,
        clock,
        pace: Pace::default(),
        stop: Cell::new(false),
        progress: RefCell::new(progress),
        results: RefCell::new(Vec::new()),
    };
    let planned: Vec<(usize, TestCase, Option<Outcome>)> = plan(options, selection)
        .into_iter()
        .enumerate()
        .map(|(i, (test, skip))| (i, test, skip))
        .collect();
    if selection.serial {
        for (index, test, skip) in planned {
            shared.one(index, test, skip).await;
        }
    } else {
        let (alone, rest): (Vec<_>, Vec<_>) = planned
            .into_iter()
            .partition(|(_, t, skip)| t.room == Room::Alone && skip.is_none());
        for (index, test, skip) in alone {
            shared.one(index, test, skip).await;
        }
        let (fits, free): (Vec<_>, Vec<_>) = rest
            .into_iter()
            .partition(|(_, t, skip)| t.room == Room::Fits && skip.is_none());
        let fits_lane = async {
            for (index, test, skip) in fits {
                shared.one(index, test, skip).await;
            }
        };
        let beside = futures::future::join_all(
            free.into_iter()
                .map(|(index, test, skip)| shared.one(index, test, skip)),
        );
        futures::future::join(fits_lane, beside).await;
    }
    let mut results: Vec<TestResult> = {
        let mut indexed = std::mem::take(&mut *shared.results.borrow_mut());
        indexed.sort_by_key(|(index, _)| *index);
        indexed.into_iter().map(|(_, r)| r).collect()
    };
    hold_again(&shared, &mut results).await;
    results
}

/// How many times a pass that watched too briefly is run again with a longer hold.
const HOLD_AGAIN_ROUNDS: usize = 2;

/// A pass that watched for a broken rule for less than twice the slowest answer the class gave
/// in the run proves less than it says (the report calls it limited, the profile partial). A
/// flaky or busy cluster slows a class's answers (a failed status write waits for the class's
/// next loop), so such tests run again, one after another, holding twice the slowest answer: the
/// cluster's pace does not decide the verdict, and what the user would be told to do is done.
async fn hold_again<F: FnMut(&TestResult)>(shared: &Shared<'_, F>, results: &mut [TestResult]) {
    let tests: Vec<TestCase> = plan(shared.options, shared.selection)
        .into_iter()
        .map(|(test, _)| test)
        .collect();
    for round in 1..=HOLD_AGAIN_ROUNDS {
        let Some(slowest) = results.iter().filter_map(|r| r.slowest_answer).max() else {
            return;
        };
        let brief: Vec<usize> = results
            .iter()
            .enumerate()
            .filter(|(_, r)| {
                matches!(r.outcome, Outcome::Passed)
                    && r.shortest_hold.is_some_and(|hold| hold < 2 * slowest)
            })
            .map(|(index, _)| index)
            .collect();
        if brief.is_empty() || shared.stop.get() {
            return;
        }
        // Each holds `Ctx::hold_window`, now twice the slowest answer of the whole run.
        for index in brief {
            let Some(test) = tests.get(index) else {
                continue;
            };
            // A namespace of its own: the first run's may still be going away.
            let result = run_one(shared, test, round * tests.len() + index).await;
            (shared.progress.borrow_mut())(&result);
            results[index] = result;
        }
    }
}

/// What every test of a run shares.
struct Shared<'a, F> {
    client: &'a Client,
    options: &'a Options,
    selection: &'a Selection,
    clock: support::Clock,
    pace: Pace,
    /// A test failed under `fail_fast`: the tests not yet started are skipped.
    stop: Cell<bool>,
    progress: RefCell<F>,
    results: RefCell<Vec<(usize, TestResult)>>,
}

impl<F: FnMut(&TestResult)> Shared<'_, F> {
    async fn one(&self, index: usize, test: TestCase, skip: Option<Outcome>) {
        let skip = match (skip, self.stop.get()) {
            (Some(s), _) => Some(s),
            (None, true) => Some(skipped("not run after a failure (--fail-fast)", false)),
            (None, false) => None,
        };
        let result = match skip {
            Some(outcome) => TestResult {
                name: test.name,
                description: test.description,
                profile: test.profile,
                outcome,
                took: Duration::ZERO,
                diagnostics: None,
                slowest_answer: None,
                shortest_hold: None,
            },
            None => run_one(self, &test, index).await,
        };
        if self.selection.fail_fast && matches!(result.outcome, Outcome::Failed(_)) {
            self.stop.set(true);
        }
        (self.progress.borrow_mut())(&result);
        self.results.borrow_mut().push((index, result));
    }
}

async fn run_one<F>(shared: &Shared<'_, F>, test: &TestCase, index: usize) -> TestResult {
    let (client, options, selection, clock) = (
        shared.client,
        shared.options,
        shared.selection,
        shared.clock,
    );
    let started = tokio::time::Instant::now();
    let run = if selection.run_id.is_empty() {
        "run"
    } else {
        selection.run_id.as_str()
    };
    let namespace = format!("conformance-{run}-{index:02}-{}", test.name);
    let mut result = TestResult {
        name: test.name,
        description: test.description,
        profile: test.profile,
        outcome: Outcome::Passed,
        took: Duration::ZERO,
        diagnostics: None,
        slowest_answer: None,
        shortest_hold: None,
    };
    if let Err(e) = create_namespace(client, &namespace, run).await {
        result.outcome = Outcome::Failed(Failure::other(format!(
            "creating namespace {namespace}: {e}"
        )));
        return result;
    }
    let ctx = Ctx {
        client: client.clone(),
        options: options.clone(),
        namespace: namespace.clone(),
        run_id: run.to_string(),
        clock,
        monitor: Monitor::start(client.clone(), &namespace, clock, shared.pace.clone()).await,
        pace: shared.pace.clone(),
        holds: Default::default(),
    };
    // A test that panics is a failure like any other, and its namespace is still deleted.
    let ran = match AssertUnwindSafe((test.run)(&ctx)).catch_unwind().await {
        Ok(ran) => ran,
        Err(panic) => Err(Failure::other(format!(
            "the test panicked: {}",
            panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)")
        ))),
    };
    caught_up(client, &namespace, &ctx.monitor).await;
    let histories = ctx.monitor.histories();
    let broken = ctx.monitor.check_all();
    result.slowest_answer = ctx.monitor.slowest_answer();
    result.shortest_hold = ctx
        .holds
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .min()
        .copied();
    result.outcome = match (broken, ran, ctx.monitor.error()) {
        (Some(v), _, _) => Outcome::Failed(Failure::rule(v.rule, v.detail)),
        (None, Err(f), _) if f.cannot_test => Outcome::Skipped {
            reason: f.message,
            unclaimed: false,
        },
        (None, Err(f), _) => Outcome::Failed(f),
        // Without every version, the rules were not checked: not a pass.
        (None, Ok(()), Some(e)) => Outcome::Failed(Failure::other(format!(
            "watching the test's requests failed, so the contract could not be checked: {e}"
        ))),
        (None, Ok(()), None) => Outcome::Passed,
    };
    if matches!(result.outcome, Outcome::Failed(_)) {
        result.diagnostics = Some(diagnostics(client, &namespace, &histories).await);
    }
    drop(ctx);
    if !selection.no_cleanup
        && let Err(e) = delete_namespace(client, &namespace, options).await
    {
        result.outcome = match result.outcome {
            Outcome::Failed(mut f) => {
                f.message = format!("{}; and cleaning up: {e}", f.message);
                Outcome::Failed(f)
            }
            _ => Outcome::Failed(Failure::other(e)),
        };
    }
    result.took = started.elapsed();
    result
}

/// Waits (up to 10 s) until the monitor has seen the current version of every request, so that
/// what the test's last writes caused is judged too.
async fn caught_up(client: &Client, namespace: &str, monitor: &Monitor) {
    let api: Api<ProvisioningRequest> = Api::namespaced(client.clone(), namespace);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let Ok(list) = api.list(&ListParams::default()).await else {
            return;
        };
        let behind = list.items.iter().any(|r| {
            r.resource_version()
                .is_some_and(|rv| !monitor.has_seen(&r.name_any(), &rv))
        });
        if !behind || tokio::time::Instant::now() >= deadline {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn create_namespace(client: &Client, name: &str, run: &str) -> Result<(), kube::Error> {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([(RUN_LABEL.to_string(), run.to_string())].into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .map(|_| ())
}

/// Deletes the namespace (and so everything the test made in it) and waits until it is gone.
pub async fn delete_namespace(
    client: &Client,
    name: &str,
    options: &Options,
) -> Result<(), String> {
    let api: Api<Namespace> = Api::all(client.clone());
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
        Err(e) => return Err(format!("deleting namespace {name}: {e}")),
    }
    let gone = await_condition(api, name, |ns: Option<&Namespace>| ns.is_none());
    match tokio::time::timeout(options.timeouts.cleanup.get(), gone).await {
        Ok(_) => Ok(()),
        Err(_) => Err(format!(
            "namespace {name} was not gone within the cleanup timeout"
        )),
    }
}

/// The diagnostic bundle of a failed test, as one YAML document.
async fn diagnostics(client: &Client, namespace: &str, histories: &Histories) -> String {
    let lp = ListParams::default();
    let requests = Api::<ProvisioningRequest>::namespaced(client.clone(), namespace)
        .list(&lp)
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    let templates = Api::<PodTemplate>::namespaced(client.clone(), namespace)
        .list(&lp)
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    let events = Api::<Event>::namespaced(client.clone(), namespace)
        .list(&lp)
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    let nodes = Api::<Node>::all(client.clone())
        .list(&lp)
        .await
        .map(|l| l.items)
        .unwrap_or_default();
    let history: serde_json::Map<String, serde_json::Value> = histories
        .iter()
        .map(|(name, seen)| {
            let versions: Vec<serde_json::Value> = seen
                .iter()
                .map(|s| serde_json::json!({"seenAt": s.at.to_string(), "conditions": s.status.conditions}))
                .collect();
            (name.clone(), versions.into())
        })
        .collect();
    let strip = |mut v: serde_json::Value| {
        if let Some(m) = v.get_mut("metadata").and_then(|m| m.as_object_mut()) {
            m.remove("managedFields");
        }
        v
    };
    let bundle = serde_json::json!({
        "namespace": namespace,
        "requests": requests.iter().map(|r| strip(serde_json::to_value(r).unwrap_or_default())).collect::<Vec<_>>(),
        "conditionHistory": history,
        "events": events.iter().map(|e| serde_json::json!({
            "type": e.type_, "reason": e.reason, "message": e.message,
            "object": e.involved_object.name, "lastTimestamp": e.last_timestamp,
        })).collect::<Vec<_>>(),
        "podTemplates": templates.iter().map(|t| strip(serde_json::to_value(t).unwrap_or_default())).collect::<Vec<_>>(),
        "nodes": nodes.iter().map(|n| serde_json::json!({
            "name": n.name_any(), "labels": n.metadata.labels,
            "allocatable": n.status.as_ref().and_then(|s| s.allocatable.clone()),
            "taints": n.spec.as_ref().and_then(|s| s.taints.clone()),
        })).collect::<Vec<_>>(),
    });
    serde_yaml::to_string(&bundle).unwrap_or_default()
}
