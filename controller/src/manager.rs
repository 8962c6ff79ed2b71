//! The controller's loop: watch every kind it needs, keep the [`World`] current, and after each
//! batch of changes run the reconcilers over what changed, in a fixed order:
//! jobs, workloads, the scheduler, the admission checks, then queue status.
//!
//! One task does everything, so decisions never race each other; each write's response is
//! applied at once, so the next decision sees it. Under a paused tokio runtime (embedded worlds)
//! the whole loop runs on virtual time and two runs make the same writes in the same order.

use std::collections::{BTreeMap, BTreeSet};
use std::pin::Pin;
use std::sync::Arc;

use api::autoscaling::ProvisioningRequest;
use api::config::Configuration;
use api::kueue::{
    AdmissionCheck, ClusterQueue, LocalQueue, ProvisioningRequestConfig, ResourceFlavor, Workload,
};
use futures::stream::{self, BoxStream};
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::PodTemplate;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Client, Resource};

use crate::clock::Clock;
use crate::lean;
use crate::metrics::Metrics;
use crate::reconcile::Reconciler;
use crate::state::{Objects, World, key_of};
use crate::writer::Writer;

/// How the controller runs.
#[derive(Clone)]
pub struct Options {
    pub config: Configuration,
    pub clock: Clock,
    pub metrics: Arc<Metrics>,
}

/// Why the controller stopped.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("watch stream ended")]
    WatchEnded,
    #[error("API request failed: {0}")]
    Api(#[from] kube::Error),
}

/// One observed change. Boxed events would cost an allocation each; the enum is short-lived.
#[allow(clippy::large_enum_variant)]
enum Change {
    Flavor(Event<ResourceFlavor>),
    ClusterQueue(Event<ClusterQueue>),
    LocalQueue(Event<LocalQueue>),
    Check(Event<AdmissionCheck>),
    Workload(Event<Workload>),
    Job(Event<Job>),
    ProvisioningConfig(Event<ProvisioningRequestConfig>),
    ProvisioningRequest(Event<ProvisioningRequest>),
    PodTemplate(Event<PodTemplate>),
}

/// One of the controller's watches: the resource it lists and watches, and its changes.
pub(crate) struct Watch {
    pub group: String,
    pub resource: String,
    stream: BoxStream<'static, Change>,
}

fn watch<K, F>(client: &Client, wrap: F) -> Watch
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
    F: Fn(Event<K>) -> Change + Send + 'static,
{
    watch_with(client, watcher::Config::default(), wrap)
}

fn watch_with<K, F>(client: &Client, config: watcher::Config, wrap: F) -> Watch
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
    F: Fn(Event<K>) -> Change + Send + 'static,
{
    crate::rbac::check::<K>(None, "list");
    crate::rbac::check::<K>(None, "watch");
    // Kept without managedFields, as Kueue's cache keeps objects.
    let stream = lean::watcher::<K>(client.clone(), config)
        .default_backoff()
        .filter_map(move |ev| {
            let out = match ev {
                Ok(ev) => Some(wrap(ev)),
                Err(e) => {
                    tracing::warn!(kind = K::kind(&()).as_ref(), error = %e, "watch error");
                    None
                }
            };
            futures::future::ready(out)
        })
        .boxed();
    Watch {
        group: K::group(&()).into_owned(),
        resource: K::plural(&()).into_owned(),
        stream,
    }
}

/// Every watch of the controller. Nothing is requested until the streams are polled.
pub(crate) fn watches(client: &Client) -> Vec<Watch> {
    vec![
        watch(client, Change::Flavor),
        watch(client, Change::ClusterQueue),
        watch(client, Change::LocalQueue),
        watch(client, Change::Check),
        watch(client, Change::Workload),
        watch(client, Change::Job),
        watch(client, Change::ProvisioningConfig),
        watch(client, Change::ProvisioningRequest),
        // Only the PodTemplates Kueue creates for ProvisioningRequests.
        watch_with(
            client,
            watcher::Config::default().labels(&format!("{}=true", api::constants::label::MANAGED)),
            Change::PodTemplate,
        ),
    ]
}

/// Runs the controller until its task is dropped or a watch ends.
pub async fn run(client: Client, options: Options) -> Result<(), Error> {
    let watches = watches(&client);
    let kinds = watches.len();
    for w in &watches {
        tracing::debug!(group = %w.group, resource = %w.resource, "watching");
    }
    let mut changes = stream::select_all(watches.into_iter().map(|w| w.stream));
    let mut loop_ = Loop {
        world: World::default(),
        reconciler: Reconciler::new(Writer::new(client, options.clock), options),
        pending_lists: Default::default(),
        synced: BTreeSet::new(),
    };
    loop {
        let wake = loop_.reconciler.next_wake();
        let change = match wake {
            Some(at) => {
                let deadline = loop_.reconciler.clock().instant_of(at);
                tokio::select! {
                    biased;
                    c = changes.next() => Some(c.ok_or(Error::WatchEnded)?),
                    _ = tokio::time::sleep_until(deadline) => None,
                }
            }
            None => Some(changes.next().await.ok_or(Error::WatchEnded)?),
        };
        if let Some(change) = change {
            loop_.apply(change);
        }
        // Take everything that has already arrived before deciding anything.
        while let Some(Some(change)) = Pin::new(&mut changes).next().now_or_never() {
            loop_.apply(change);
        }
        if loop_.synced.len() == kinds {
            loop_.reconciler.timers_due();
            loop_.reconciler.reconcile(&mut loop_.world).await?;
        }
    }
}

struct Loop {
    world: World,
    reconciler: Reconciler,
    /// Objects of an initial list, until the list is complete.
    pending_lists: PendingLists,
    /// Kinds whose initial list has completed.
    synced: BTreeSet<&'static str>,
}

#[derive(Default)]
struct PendingLists {
    flavors: Vec<ResourceFlavor>,
    cluster_queues: Vec<ClusterQueue>,
    local_queues: Vec<LocalQueue>,
    checks: Vec<AdmissionCheck>,
    workloads: Vec<Workload>,
    jobs: Vec<Job>,
    provisioning_configs: Vec<ProvisioningRequestConfig>,
    provisioning_requests: Vec<ProvisioningRequest>,
    pod_templates: Vec<PodTemplate>,
}

/// One object's change: its version before and after.
type Changed<K> = (Option<Arc<K>>, Option<Arc<K>>);

/// Applies one watch event to a kind's objects; returns the objects that changed, old and new.
fn on_event<K: Resource + Clone>(
    objects: &mut Objects<K>,
    list: &mut Vec<K>,
    synced: &mut BTreeSet<&'static str>,
    kind: &'static str,
    event: Event<K>,
) -> Vec<Changed<K>> {
    match event {
        Event::Init => {
            list.clear();
            vec![]
        }
        Event::InitApply(obj) => {
            list.push(obj);
            vec![]
        }
        Event::InitDone => {
            let before: BTreeMap<String, Arc<K>> = objects
                .iter_shared()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            objects.replace_all(std::mem::take(list));
            synced.insert(kind);
            let mut changed = vec![];
            for (key, old) in &before {
                match objects.get_shared(key) {
                    None => changed.push((Some(old.clone()), None)),
                    Some(new) if new.meta().resource_version != old.meta().resource_version => {
                        changed.push((Some(old.clone()), Some(new)))
                    }
                    _ => {}
                }
            }
            for (key, new) in objects.iter_shared() {
                if !before.contains_key(key) {
                    changed.push((None, Some(new.clone())));
                }
            }
            changed
        }
        Event::Apply(obj) => {
            let old = objects.get_shared(&key_of(&obj));
            let obj = Arc::new(obj);
            if objects.apply_shared(obj.clone()) {
                vec![(old, Some(obj))]
            } else {
                vec![]
            }
        }
        Event::Delete(obj) => match objects.delete(&obj) {
            Some(old) => vec![(Some(old), None)],
            None => vec![],
        },
    }
}

impl Loop {
    fn apply(&mut self, change: Change) {
        let w = &mut self.world;
        let l = &mut self.pending_lists;
        let s = &mut self.synced;
        let r = &mut self.reconciler;
        match change {
            Change::Flavor(e) => {
                for (old, new) in on_event(&mut w.flavors, &mut l.flavors, s, "ResourceFlavor", e) {
                    r.flavor_changed(w, old.as_deref(), new.as_deref());
                }
            }
            Change::ClusterQueue(e) => {
                for (old, new) in on_event(
                    &mut w.cluster_queues,
                    &mut l.cluster_queues,
                    s,
                    "ClusterQueue",
                    e,
                ) {
                    r.cluster_queue_changed(w, old.as_deref(), new.as_deref());
                }
            }
            Change::LocalQueue(e) => {
                for (old, new) in
                    on_event(&mut w.local_queues, &mut l.local_queues, s, "LocalQueue", e)
                {
                    r.local_queue_changed(w, old.as_deref(), new.as_deref());
                }
            }
            Change::Check(e) => {
                for (old, new) in on_event(
                    &mut w.admission_checks,
                    &mut l.checks,
                    s,
                    "AdmissionCheck",
                    e,
                ) {
                    r.check_changed(w, old.as_deref(), new.as_deref());
                }
            }
            Change::Workload(e) => {
                for (old, new) in on_event(&mut w.workloads, &mut l.workloads, s, "Workload", e) {
                    r.workload_changed(w, old.as_deref(), new.as_deref());
                }
            }
            Change::Job(e) => {
                for (old, new) in on_event(&mut w.jobs, &mut l.jobs, s, "Job", e) {
                    r.job_changed(old.as_deref(), new.as_deref());
                }
            }
            Change::ProvisioningConfig(e) => {
                for (old, new) in on_event(
                    &mut w.provisioning_configs,
                    &mut l.provisioning_configs,
                    s,
                    "ProvisioningRequestConfig",
                    e,
                ) {
                    r.provisioning_config_changed(w, old.as_deref(), new.as_deref());
                }
            }
            Change::ProvisioningRequest(e) => {
                for (old, new) in on_event(
                    &mut w.provisioning_requests,
                    &mut l.provisioning_requests,
                    s,
                    "ProvisioningRequest",
                    e,
                ) {
                    r.provisioning_request_changed(old.as_deref(), new.as_deref());
                }
            }
            Change::PodTemplate(e) => {
                // Templates matter only through their request, which the pass looks at anyway.
                on_event(
                    &mut w.pod_templates,
                    &mut l.pod_templates,
                    s,
                    "PodTemplate",
                    e,
                );
            }
        }
    }
}
