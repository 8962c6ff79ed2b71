//! The controller on a MultiKueue worker and on the manager, against the fake API server on
//! virtual time: a Job labelled `kueue.x-k8s.io/prebuilt-workload-name` runs under the Workload
//! the manager made for it (never a second one), and a manager's Job handed to MultiKueue
//! (`spec.managedBy: kueue.x-k8s.io/multikueue`) still gets its Workload and is started there.

use std::time::Duration;

use api::kueue::Workload;
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, PostParams};
use kube::runtime::wait::{Condition, await_condition};
use kube::{Client, ResourceExt};
use serde_json::{Value, json};

use crate::common::{Cluster, ORIGIN, PREBUILT, create, queues};

/// Virtual time the controller gets to do what a test waits for.
const PATIENCE: Duration = Duration::from_secs(120);

/// A server with Kueue's CRDs, a controller, and a LocalQueue `lq` with room for 4 CPUs; and a
/// client of it.
async fn cluster() -> (Cluster, Client) {
    let cluster = Cluster::start(Default::default(), Default::default());
    let client = cluster.client.clone();
    queues(&client, &[], Some(("default", "lq"))).await;
    (cluster, client)
}

/// A Job of two pods of one CPU in `lq`, with extra labels and spec fields.
fn job(labels: Value, spec: Value) -> Job {
    let mut job = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "demo", "namespace": "default",
                     "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
        "spec": {"parallelism": 2, "completions": 2, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox",
                            "resources": {"requests": {"cpu": "1"}}}]}}},
    });
    merge(&mut job["metadata"]["labels"], labels);
    merge(&mut job["spec"], spec);
    serde_json::from_value(job).expect("a job")
}

fn merge(into: &mut Value, from: Value) {
    if let (Some(into), Value::Object(from)) = (into.as_object_mut(), from) {
        into.extend(from);
    }
}

/// Creates the Workload `wl` as MultiKueue's manager creates it on a worker for `job`, with
/// `count` pods: the podsets of the job as the API server stored it (defaulted), the queue, our
/// origin label, no owner.
async fn prebuilt(client: &Client, job: &Job, count: i32) {
    let dry_run = PostParams {
        dry_run: true,
        ..PostParams::default()
    };
    let mut job = job.clone();
    job.metadata.name = Some("shape".to_owned());
    let stored = jobs(client).create(&dry_run, &job).await.expect("dry run");
    let mut pod_sets = controller::jobs::podsets_from_job(&stored);
    pod_sets[0].count = count;
    let workload = json!({
        "metadata": {"name": "wl", "namespace": "default", "labels": {ORIGIN: "multikueue"}},
        "spec": {"queueName": "lq", "podSets": pod_sets},
    });
    create(client, "kueue.x-k8s.io/v1beta2", "Workload", workload).await;
}

fn jobs(client: &Client) -> Api<Job> {
    Api::namespaced(client.clone(), "default")
}

async fn create_job(client: &Client, job: &Job) -> Job {
    jobs(client)
        .create(&PostParams::default(), job)
        .await
        .expect("created")
}

fn workloads(client: &Client) -> Api<Workload> {
    Api::namespaced(client.clone(), "default")
}

async fn workload_names(client: &Client) -> Vec<String> {
    workloads(client)
        .list(&Default::default())
        .await
        .expect("listed")
        .items
        .iter()
        .map(|w| w.name_any())
        .collect()
}

/// Waits on virtual time for `name` to meet `condition`.
async fn until<K, C>(api: &Api<K>, name: &str, what: &str, condition: C) -> K
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
    C: Condition<K>,
{
    tokio::time::timeout(PATIENCE, await_condition(api.clone(), name, condition))
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {PATIENCE:?} of virtual time"))
        .expect("watched")
        .unwrap_or_else(|| panic!("{what}: {name} is gone"))
}

fn suspended(yes: bool) -> impl Condition<Job> {
    move |job: Option<&Job>| {
        job.and_then(|j| j.spec.as_ref())
            .is_some_and(|s| s.suspend == Some(yes))
    }
}

fn condition_true(type_: &'static str) -> impl Condition<Workload> {
    move |wl: Option<&Workload>| {
        wl.and_then(|w| w.status.as_ref()).is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == type_ && c.status == "True")
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_job_runs_under_its_prebuilt_workload_and_makes_none_of_its_own() {
    let (_cluster, client) = &cluster().await;
    // As MultiKueue creates it on the worker: suspended, naming the workload, once the workload
    // is admitted there.
    let job = job(json!({PREBUILT: "wl"}), json!({"suspend": true}));
    prebuilt(client, &job, 2).await;
    until(
        &workloads(client),
        "wl",
        "the prebuilt workload is admitted",
        condition_true("Admitted"),
    )
    .await;
    let job = create_job(client, &job).await;
    let started = until(&jobs(client), "demo", "the job starts", suspended(false)).await;

    assert_eq!(
        workload_names(client).await,
        vec!["wl".to_owned()],
        "no second workload"
    );
    let wl = workloads(client).get("wl").await.expect("the workload");
    let owner = wl
        .owner_references()
        .iter()
        .find(|o| o.controller == Some(true))
        .expect("a controller");
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Job", "demo"));
    assert_eq!(Some(&owner.uid), job.metadata.uid.as_ref());
    assert_eq!(
        wl.labels().get("kueue.x-k8s.io/job-uid"),
        job.metadata.uid.as_ref()
    );
    // Started as any admitted job: the admission's labels are on its pods.
    let pod_labels = started
        .spec
        .and_then(|s| s.template.metadata)
        .and_then(|m| m.labels)
        .unwrap_or_default();
    assert_eq!(
        pod_labels.get("kueue.x-k8s.io/podset").map(String::as_str),
        Some("main")
    );
    assert_eq!(
        pod_labels
            .get("kueue.x-k8s.io/multikueue-worker-workload-pod")
            .map(String::as_str),
        Some("true")
    );
}

#[tokio::test(start_paused = true)]
async fn a_job_waits_suspended_until_its_prebuilt_workload_is_admitted() {
    let (_cluster, client) = &cluster().await;
    // The job comes first, and unsuspended: nothing may run before its workload is admitted.
    let job = job(json!({PREBUILT: "wl"}), json!({"suspend": false}));
    create_job(client, &job).await;
    until(
        &jobs(client),
        "demo",
        "the job is suspended",
        suspended(true),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(
        workload_names(client).await.is_empty(),
        "the job must wait for its workload, not make one"
    );
    let stored = jobs(client).get("demo").await.expect("the job");
    assert_eq!(stored.spec.and_then(|s| s.suspend), Some(true));

    prebuilt(client, &job, 2).await;
    until(&jobs(client), "demo", "the job starts", suspended(false)).await;
    assert_eq!(workload_names(client).await, vec!["wl".to_owned()]);
    let wl = workloads(client).get("wl").await.expect("the workload");
    assert!(condition_true("Admitted").matches_object(Some(&wl)));
}

#[tokio::test(start_paused = true)]
async fn a_prebuilt_workload_out_of_sync_with_its_job_is_finished_and_the_job_kept_suspended() {
    let (_cluster, client) = &cluster().await;
    // The workload says one pod; the job asks for two.
    let job = job(json!({PREBUILT: "wl"}), json!({"suspend": true}));
    prebuilt(client, &job, 1).await;
    create_job(client, &job).await;
    let wl = until(
        &workloads(client),
        "wl",
        "the workload finishes",
        condition_true("Finished"),
    )
    .await;
    let finished = wl
        .status
        .iter()
        .flat_map(|s| &s.conditions)
        .find(|c| c.type_ == "Finished")
        .expect("Finished");
    assert_eq!(finished.reason, "OutOfSync");
    assert_eq!(
        finished.message,
        "The prebuilt workload is out of sync with its user job"
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    let job = jobs(client).get("demo").await.expect("the job");
    assert_eq!(job.spec.and_then(|s| s.suspend), Some(true));
    assert_eq!(workload_names(client).await, vec!["wl".to_owned()]);
}

#[tokio::test(start_paused = true)]
async fn a_job_handed_to_multikueue_gets_its_workload_and_starts_on_the_manager() {
    let (_cluster, client) = &cluster().await;
    let job = job(json!({}), json!({"managedBy": "kueue.x-k8s.io/multikueue"}));
    create_job(client, &job).await;
    // Unsuspended once admitted, as upstream; its pods run on a worker, never here (the Job
    // controller leaves a Job managed by another controller alone).
    let started = until(&jobs(client), "demo", "the job starts", suspended(false)).await;
    assert_eq!(
        started.spec.and_then(|s| s.managed_by).as_deref(),
        Some("kueue.x-k8s.io/multikueue")
    );
    let names = workload_names(client).await;
    assert_eq!(names.len(), 1, "one workload: {names:?}");
    assert!(names[0].starts_with("job-demo-"), "{names:?}");
}
