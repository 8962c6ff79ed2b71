//! The loop around [`Autoscaler::step`]: watches through a `kube::Client`, a step after every
//! batch of changes (and whenever a timer of the engine is due), and the actions carried out.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use api::autoscaling::ProvisioningRequest;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::{Node, Pod, PodTemplate};
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;

use crate::engine::{Action, Autoscaler, Key, World};

/// The field manager of the autoscaler's writes, as upstream's.
pub const FIELD_MANAGER: &str = "cluster-autoscaler";
/// How long to wait before trying again after a write the API server refused for another reason
/// than a conflict.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("the {0} watch ended")]
    WatchEnded(&'static str),
}

/// One change from one of the watches.
enum Change {
    Request(Box<Event<ProvisioningRequest>>),
    Template(Box<Event<PodTemplate>>),
    Node(Box<Event<Node>>),
    Pod(Box<Event<Pod>>),
}

/// Runs the autoscaler until a watch ends. `clock` gives wall time and turns it into timers (on
/// virtual time in an embedded world).
pub async fn run(
    client: Client,
    autoscaler: Autoscaler,
    clock: controller::Clock,
) -> Result<(), RunError> {
    let mut autoscaler = autoscaler;
    let mut changes = futures::stream::select_all([
        watch::<ProvisioningRequest>(&client)
            .map(|e| e.map(|e| Change::Request(Box::new(e))))
            .boxed(),
        watch::<PodTemplate>(&client)
            .map(|e| e.map(|e| Change::Template(Box::new(e))))
            .boxed(),
        watch::<Node>(&client)
            .map(|e| e.map(|e| Change::Node(Box::new(e))))
            .boxed(),
        watch::<Pod>(&client)
            .map(|e| e.map(|e| Change::Pod(Box::new(e))))
            .boxed(),
    ]);
    let mut mirror = Mirror::default();
    let mut wake: Option<jiff::Timestamp> = None;
    loop {
        let first = match wake {
            Some(at) => tokio::select! {
                biased;
                change = changes.next() => Some(change),
                _ = tokio::time::sleep_until(clock.instant_of(at)) => None,
            },
            None => Some(changes.next().await),
        };
        if let Some(change) = first {
            mirror.take(change)?;
        }
        while let Some(change) = changes.next().now_or_never() {
            mirror.take(change)?;
        }
        if !mirror.ready() {
            wake = None;
            continue;
        }
        let outcome = autoscaler.step(&mirror.world, clock.now());
        tracing::debug!(actions = outcome.actions.len(), wake = ?outcome.wake, "fake autoscaler step");
        wake = outcome.wake;
        if !carry_out(&client, outcome.actions, &mut mirror.world).await {
            let retry = clock
                .now()
                .saturating_add(
                    jiff::SignedDuration::try_from(RETRY_AFTER_ERROR).unwrap_or_default(),
                )
                .unwrap_or(clock.now());
            wake = Some(wake.map_or(retry, |w| w.min(retry)));
        }
    }
}

fn watch<K>(client: &Client) -> BoxStream<'static, Result<Event<K>, watcher::Error>>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::all(client.clone());
    watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed()
}

/// The world as the watches report it, with each kind's initial list applied only when complete.
#[derive(Default)]
struct Mirror {
    world: World,
    relisting: Relisting,
    listed: [bool; 4],
}

#[derive(Default)]
struct Relisting {
    requests: Option<BTreeMap<Key, ProvisioningRequest>>,
    templates: Option<BTreeMap<Key, PodTemplate>>,
    nodes: Option<BTreeMap<String, Node>>,
    pods: Option<BTreeMap<Key, Pod>>,
}

impl Mirror {
    fn ready(&self) -> bool {
        self.listed.iter().all(|l| *l)
    }

    fn take(&mut self, change: Option<Result<Change, watcher::Error>>) -> Result<(), RunError> {
        let change = match change {
            None => return Err(RunError::WatchEnded("autoscaler")),
            Some(Err(e)) => {
                tracing::warn!(error = %e, "fake autoscaler watch");
                return Ok(());
            }
            Some(Ok(change)) => change,
        };
        let (w, r) = (&mut self.world, &mut self.relisting);
        let done = match change {
            Change::Request(e) => apply(&mut w.requests, &mut r.requests, *e, namespaced_key),
            Change::Template(e) => apply(&mut w.templates, &mut r.templates, *e, namespaced_key),
            Change::Node(e) => apply(&mut w.nodes, &mut r.nodes, *e, |n: &Node| {
                n.metadata.name.clone().unwrap_or_default()
            }),
            Change::Pod(e) => apply(&mut w.pods, &mut r.pods, *e, namespaced_key),
        };
        if let Some(kind) = done {
            self.listed[kind] = true;
        }
        Ok(())
    }
}

/// Applies one watch event; returns the kind's index when its initial list completed.
fn apply<K, Id: Ord>(
    live: &mut BTreeMap<Id, K>,
    relist: &mut Option<BTreeMap<Id, K>>,
    event: Event<K>,
    key: impl Fn(&K) -> Id,
) -> Option<usize>
where
    K: KindIndex,
{
    match event {
        Event::Init => *relist = Some(BTreeMap::new()),
        Event::InitApply(obj) => {
            relist
                .get_or_insert_with(BTreeMap::new)
                .insert(key(&obj), obj);
        }
        Event::InitDone => {
            *live = relist.take().unwrap_or_default();
            return Some(K::INDEX);
        }
        Event::Apply(obj) => {
            live.insert(key(&obj), obj);
        }
        Event::Delete(obj) => {
            live.remove(&key(&obj));
        }
    }
    None
}

/// Which of the four watches a kind is.
trait KindIndex {
    const INDEX: usize;
}
impl KindIndex for ProvisioningRequest {
    const INDEX: usize = 0;
}
impl KindIndex for PodTemplate {
    const INDEX: usize = 1;
}
impl KindIndex for Node {
    const INDEX: usize = 2;
}
impl KindIndex for Pod {
    const INDEX: usize = 3;
}

fn namespaced_key<K: Resource>(obj: &K) -> Key {
    (
        obj.meta().namespace.clone().unwrap_or_default(),
        obj.meta().name.clone().unwrap_or_default(),
    )
}

/// Carries out the actions in order, keeping the world in step with what was written. Returns
/// false when the API server refused something for another reason than a conflict or a missing
/// object (those resolve through the watches).
async fn carry_out(client: &Client, actions: Vec<Action>, world: &mut World) -> bool {
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PostParams::default()
    };
    let mut ok = true;
    for action in actions {
        let result = match action {
            Action::CreateNode(node) => {
                let api: Api<Node> = Api::all(client.clone());
                api.create(&params, &node).await.map(|created| {
                    let name = created.metadata.name.clone().unwrap_or_default();
                    world.nodes.insert(name, created);
                })
            }
            Action::DeleteNode(name) => {
                let api: Api<Node> = Api::all(client.clone());
                api.delete(&name, &DeleteParams::default()).await.map(|_| {
                    world.nodes.remove(&name);
                })
            }
            Action::WriteStatus(request) => {
                let key = namespaced_key(request.as_ref());
                let api: Api<ProvisioningRequest> = Api::namespaced(client.clone(), &key.0);
                api.replace_status(&key.1, &params, request.as_ref())
                    .await
                    .map(|written| {
                        world.requests.insert(key, written);
                    })
            }
            Action::DeleteRequest(key) => {
                let api: Api<ProvisioningRequest> = Api::namespaced(client.clone(), &key.0);
                api.delete(&key.1, &DeleteParams::default()).await.map(|_| {
                    world.requests.remove(&key);
                })
            }
        };
        match result {
            Ok(()) => {}
            Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => {
                tracing::debug!(status = %s.message, "fake autoscaler: write overtaken");
            }
            Err(e) => {
                tracing::warn!(error = %e, "fake autoscaler: write refused");
                ok = false;
            }
        }
    }
    ok
}
