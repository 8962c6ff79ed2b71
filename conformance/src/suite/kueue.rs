//! The kueue profile: Tollgate's controller, run by the suite against the cluster under test, with
//! the class behind a ProvisioningRequest admission check. It creates cluster-scoped Kueue objects
//! (named after the test's namespace) and deletes them afterwards; the options must ask for it.

use std::collections::BTreeSet;
use std::time::Duration;

use api::constants::{annotation, provreq_condition as cond};
use api::contract as rule;
use api::kueue::{
    AdmissionCheck, ClusterQueue, LocalQueue, ProvisioningRequestConfig, ResourceFlavor, Workload,
};
use futures::FutureExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::json;

use super::{Ctx, Failure, Profile, Room, TestCase};

pub fn tests() -> Vec<TestCase> {
    vec![TestCase {
        name: "job-admitted-after-provisioning",
        description: "Kueue (Tollgate's controller) admits a Job queued behind a \
                      ProvisioningRequest check only once its request is Provisioned=True, and \
                      the Job's pods run on the capacity, tied to the request.",
        profile: Profile::Kueue,
        features: &[],
        room: Room::Fits,
        run: |ctx| job_admitted_after_provisioning(ctx).boxed(),
    }]
}

/// Aborts the controller when the test ends, however it ends.
struct Running(tokio::task::JoinHandle<()>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn job_admitted_after_provisioning(ctx: &Ctx) -> Result<(), Failure> {
    let name = ctx.namespace.clone();
    // Without MultiKueue: the suite's RBAC (rbac.yaml) grants nothing on Secrets.
    let mut config = api::config::Configuration::default();
    config.feature_gates.insert("MultiKueue".into(), false);
    let options = controller::Options {
        config,
        clock: ctx.clock,
        metrics: Default::default(),
        workers: Default::default(),
    };
    let client = ctx.client.clone();
    let controller = Running(tokio::spawn(async move {
        if let Err(e) = controller::manager::run(client, options).await {
            tracing::warn!(error = %e, "the kueue profile's controller stopped");
        }
    }));
    let made = setup(ctx, &name).await;
    let result = match made {
        Ok(()) => check(ctx, &name).await,
        Err(e) => Err(e),
    };
    // The controller removes its finalizers: tear down while it still runs.
    let cleaned = teardown(ctx, &name).await;
    drop(controller);
    result.and(cleaned)
}

async fn setup(ctx: &Ctx, name: &str) -> Result<(), Failure> {
    let fits = &ctx.options.pod_templates.fits;
    let resources: BTreeSet<String> = fits
        .template
        .spec
        .iter()
        .flat_map(|s| &s.containers)
        .filter_map(|c| c.resources.as_ref()?.requests.as_ref())
        .flat_map(|r| r.keys().cloned())
        .collect();
    let quota: Vec<serde_json::Value> = resources
        .iter()
        .map(|r| json!({"name": r, "nominalQuota": "1Pi"}))
        .collect();
    let labels = json!({crate::runner::RUN_LABEL: ctx.run_id});
    create::<ResourceFlavor>(
        Api::all(ctx.client.clone()),
        json!({"metadata": {"name": name, "labels": labels}, "spec": {}}),
    )
    .await?;
    create::<ProvisioningRequestConfig>(
        Api::all(ctx.client.clone()),
        json!({"metadata": {"name": name, "labels": labels}, "spec": {
            "provisioningClassName": ctx.options.class_name,
            "parameters": ctx.options.parameters,
        }}),
    )
    .await?;
    create::<AdmissionCheck>(
        Api::all(ctx.client.clone()),
        json!({"metadata": {"name": name, "labels": labels}, "spec": {
            "controllerName": api::constants::controller_name::PROVISIONING_REQUEST,
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": name},
        }}),
    )
    .await?;
    create::<ClusterQueue>(
        Api::all(ctx.client.clone()),
        json!({"metadata": {"name": name, "labels": labels}, "spec": {
            "namespaceSelector": {},
            "admissionChecksStrategy": {"admissionChecks": [{"name": name}]},
            "resourceGroups": [{"coveredResources": resources, "flavors": [{"name": name, "resources": quota}]}],
        }}),
    )
    .await?;
    create::<LocalQueue>(
        Api::namespaced(ctx.client.clone(), &ctx.namespace),
        json!({"metadata": {"name": "main"}, "spec": {"clusterQueue": name}}),
    )
    .await?;
    let mut template = serde_json::to_value(&fits.template).unwrap_or_default();
    template["spec"]["restartPolicy"] = json!("Never");
    create::<Job>(
        Api::namespaced(ctx.client.clone(), &ctx.namespace),
        json!({"metadata": {"name": "job", "labels": {api::constants::label::QUEUE_NAME: "main"}},
               "spec": {"suspend": true, "parallelism": fits.count, "completions": fits.count,
                        "template": template}}),
    )
    .await
}

async fn create<K>(api: Api<K>, body: serde_json::Value) -> Result<(), Failure>
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    let object: K = serde_json::from_value(body)
        .map_err(|e| Failure::other(format!("building a {}: {e}", K::kind(&()))))?;
    api.create(&PostParams::default(), &object)
        .await
        .map(|_| ())
        .map_err(|e| {
            Failure::other(format!(
                "creating {} {}: {e}",
                K::kind(&()),
                object.name_any()
            ))
        })
}

async fn check(ctx: &Ctx, name: &str) -> Result<(), Failure> {
    let timeout = ctx.options.timeouts.provisioned.get();
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let started = await_condition(jobs, "job", |j: Option<&Job>| {
        j.and_then(|j| j.spec.as_ref())
            .is_some_and(|s| s.suspend == Some(false))
    });
    tokio::time::timeout(timeout, started)
        .await
        .map_err(|_| {
            Failure::rule(
                rule::FITTING_REQUESTS_PROVISIONED,
                format!(
                    "the Job was not admitted within {}",
                    api::config::GoDuration(timeout)
                ),
            )
        })?
        .map_err(|e| Failure::other(format!("watching the Job: {e}")))?;
    let workloads: Api<Workload> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let workload = workloads
        .list(&ListParams::default())
        .await
        .map_err(|e| Failure::other(format!("listing Workloads: {e}")))?
        .items
        .into_iter()
        .next()
        .ok_or_else(|| Failure::other("the Job has no Workload"))?;
    let admitted_at = workload
        .status
        .as_ref()
        .and_then(|s| {
            s.conditions
                .iter()
                .find(|c| c.type_ == "Admitted" && c.status == "True")
        })
        .map(|c| c.last_transition_time.0)
        .ok_or_else(|| Failure::other("the Job started but its Workload is not Admitted"))?;
    // The request the admission went by, as the check hands it to the pods: the first attempt,
    // or a later one when Kueue retried (a booking that expired before a slow admission).
    let request = consumed_request(&workload, name)
        .unwrap_or_else(|| format!("{}-{name}-1", workload.name_any()));
    // Both times are the cluster's own, in whole seconds: the request's Provisioned=True and the
    // Workload's Admitted=True.
    let current = ctx.get(&request).await?;
    let provisioned_at = super::condition(Some(&current), cond::PROVISIONED)
        .filter(|c| c.status == "True")
        .map(|c| c.last_transition_time.0)
        .ok_or_else(|| {
            Failure::other(format!(
                "the Workload was admitted but request {request} is not Provisioned=True"
            ))
        })?;
    if provisioned_at > admitted_at {
        return Err(Failure::other(format!(
            "admitted at {admitted_at}, before request {request} was Provisioned=True at {provisioned_at} \
             (is another Kueue controller running?)"
        )));
    }
    // The pods run, each tied to the request.
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let want = ctx.options.pod_templates.fits.count as usize;
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let list = pods
            .list(&ListParams::default().labels("job-name=job"))
            .await
            .map_err(|e| Failure::other(format!("listing pods: {e}")))?;
        let placed = list
            .items
            .iter()
            .filter(|p| p.spec.as_ref().is_some_and(|s| s.node_name.is_some()))
            .filter(|p| {
                p.annotations()
                    .get(annotation::CONSUME_PROVISIONING_REQUEST)
                    == Some(&request)
            })
            .count();
        if placed >= want {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(Failure::other(format!(
                "{placed} of the Job's {want} pods run on a node with the annotation \
                 {}: {request} within {}",
                annotation::CONSUME_PROVISIONING_REQUEST,
                api::config::GoDuration(timeout)
            )));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// The request named by the check's podSetUpdates (`consume-provisioning-request`).
fn consumed_request(workload: &Workload, check: &str) -> Option<String> {
    workload
        .status
        .as_ref()?
        .admission_checks
        .iter()
        .find(|c| c.name == check)?
        .pod_set_updates
        .iter()
        .find_map(|u| u.annotations.get(annotation::CONSUME_PROVISIONING_REQUEST))
        .cloned()
}

/// Deletes what the test made outside its namespace, and the Job (whose Workload the
/// controller's finalizer holds until it is done).
async fn teardown(ctx: &Ctx, name: &str) -> Result<(), Failure> {
    let timeout = ctx.options.timeouts.cleanup.get();
    let bg = DeleteParams::background();
    let jobs: Api<Job> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let _ = jobs.delete("job", &bg).await;
    let workloads: Api<Workload> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let _ = tokio::time::timeout(timeout, async {
        loop {
            match workloads.list(&ListParams::default()).await {
                Ok(l) if l.items.is_empty() => break,
                Err(_) => break,
                Ok(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    })
    .await;
    // Try every one, so that one slow deletion leaks nothing else; report the first failure.
    let results = [
        gone::<LocalQueue>(
            Api::namespaced(ctx.client.clone(), &ctx.namespace),
            "main",
            timeout,
        )
        .await,
        gone::<ClusterQueue>(Api::all(ctx.client.clone()), name, timeout).await,
        gone::<AdmissionCheck>(Api::all(ctx.client.clone()), name, timeout).await,
        gone::<ProvisioningRequestConfig>(Api::all(ctx.client.clone()), name, timeout).await,
        gone::<ResourceFlavor>(Api::all(ctx.client.clone()), name, timeout).await,
    ];
    results
        .into_iter()
        .collect::<Result<Vec<()>, _>>()
        .map(|_| ())
}

/// After an interrupted run, with no controller left to remove Kueue's finalizers: strips them
/// from the Workloads in the run's namespaces and from its cluster-scoped Kueue objects, and
/// deletes those objects. `selector` selects the run's label.
pub async fn release_labelled(client: &kube::Client, selector: &str) {
    let lp = ListParams::default().labels(selector);
    let unfinalize = json!({"metadata": {"finalizers": null}});
    let patch = kube::api::Patch::Merge(&unfinalize);
    let pp = kube::api::PatchParams::default();
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    for ns in namespaces
        .list(&lp)
        .await
        .map(|l| l.items)
        .unwrap_or_default()
    {
        let workloads: Api<Workload> = Api::namespaced(client.clone(), &ns.name_any());
        let listed = workloads.list(&ListParams::default()).await;
        for wl in listed.map(|l| l.items).unwrap_or_default() {
            let _ = workloads.patch(&wl.name_any(), &pp, &patch).await;
        }
    }
    release::<ClusterQueue>(client, &lp, &pp, &patch).await;
    release::<AdmissionCheck>(client, &lp, &pp, &patch).await;
    release::<ProvisioningRequestConfig>(client, &lp, &pp, &patch).await;
    release::<ResourceFlavor>(client, &lp, &pp, &patch).await;
}

async fn release<K>(
    client: &kube::Client,
    lp: &ListParams,
    pp: &kube::api::PatchParams,
    patch: &kube::api::Patch<&serde_json::Value>,
) where
    K: Resource<DynamicType = (), Scope = k8s_openapi::ClusterResourceScope>
        + Clone
        + DeserializeOwned
        + std::fmt::Debug,
{
    let api: Api<K> = Api::all(client.clone());
    for object in api.list(lp).await.map(|l| l.items).unwrap_or_default() {
        let _ = api.patch(&object.name_any(), pp, patch).await;
        let _ = api
            .delete(&object.name_any(), &DeleteParams::default())
            .await;
    }
}

async fn gone<K>(api: Api<K>, name: &str, timeout: Duration) -> Result<(), Failure>
where
    K: Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
{
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 404 => return Ok(()),
        Err(e) => return Err(Failure::other(format!("deleting {name}: {e}"))),
    }
    let wait = await_condition(api, name, |o: Option<&K>| o.is_none());
    tokio::time::timeout(timeout, wait)
        .await
        .map(|_| ())
        .map_err(|_| {
            Failure::other(format!(
                "{name} was not gone within {}",
                api::config::GoDuration(timeout)
            ))
        })
}

#[cfg(test)]
mod tests {
    use api::kueue::Workload;
    use serde_json::json;

    /// Under faults Kueue may admit on a later attempt: the test checks the request the
    /// admission went by, not attempt 1.
    #[test]
    fn the_consumed_request_is_read_from_the_checks_pod_set_update() {
        let workload: Workload = serde_json::from_value(json!({
            "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "job-a"},
            "spec": {"podSets": []},
            "status": {"admissionChecks": [
                {"name": "other", "state": "Ready", "lastTransitionTime": "2026-01-01T00:00:00Z",
                 "message": "", "podSetUpdates": [{"name": "main", "annotations": {
                     "autoscaling.x-k8s.io/consume-provisioning-request": "job-a-other-1"}}]},
                {"name": "check", "state": "Ready", "lastTransitionTime": "2026-01-01T00:00:00Z",
                 "message": "", "podSetUpdates": [{"name": "main", "annotations": {
                     "autoscaling.x-k8s.io/consume-provisioning-request": "job-a-check-2"}}]},
            ]},
        }))
        .expect("a workload");
        assert_eq!(
            super::consumed_request(&workload, "check").as_deref(),
            Some("job-a-check-2")
        );
        assert_eq!(super::consumed_request(&workload, "missing"), None);
    }
}
