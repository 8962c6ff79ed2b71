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
use support::mirror::Mirror;

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
    clock: support::Clock,
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
    let mut mirrors = Mirrors::default();
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
            mirrors.take(change)?;
        }
        while let Some(change) = changes.next().now_or_never() {
            mirrors.take(change)?;
        }
        if !mirrors.ready() {
            wake = None;
            continue;
        }
        let outcome = autoscaler.step(&mirrors.world, clock.now());
        tracing::debug!(actions = outcome.actions.len(), wake = ?outcome.wake, "fake autoscaler step");
        wake = outcome.wake;
        if !carry_out(&client, outcome.actions, &mut mirrors).await {
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
        .backoff(support::backoff::WatchBackoff::default())
        .boxed()
}

/// The world as the watches report it. One [`Mirror`] per kind owns re-lists (applied whole once
/// complete, dropping what disappeared meanwhile) and keeps the newest version of each object;
/// every change it reports is copied into the engine's [`World`], keyed as the engine sorts.
#[derive(Default)]
struct Mirrors {
    requests: Mirror<ProvisioningRequest>,
    templates: Mirror<PodTemplate>,
    nodes: Mirror<Node>,
    pods: Mirror<Pod>,
    world: World,
}

impl Mirrors {
    /// Every watch has listed once.
    fn ready(&self) -> bool {
        self.requests.is_synced()
            && self.templates.is_synced()
            && self.nodes.is_synced()
            && self.pods.is_synced()
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
        match change {
            Change::Request(e) => self.apply(*e),
            Change::Template(e) => self.apply(*e),
            Change::Node(e) => self.apply(*e),
            Change::Pod(e) => self.apply(*e),
        }
        Ok(())
    }

    /// Applies one event (from a watch, or standing for the autoscaler's own write) to its
    /// kind's mirror, and what changed to the world.
    fn apply<K: Watched>(&mut self, event: Event<K>) {
        for (old, new) in K::mirror(self).apply_event(event) {
            let objects = K::objects(&mut self.world);
            match (old, new) {
                (_, Some(new)) => {
                    objects.insert(new.id(), new.as_ref().clone());
                }
                (Some(old), None) => {
                    objects.remove(&old.id());
                }
                (None, None) => {}
            }
        }
    }

    /// Forgets an object the autoscaler deleted, without waiting for the watch.
    fn forget<K: Watched>(&mut self, key: &str) {
        if let Some(obj) = K::mirror(self).get(key).cloned() {
            self.apply(Event::Delete(obj));
        }
    }
}

/// A kind the autoscaler watches: its mirror, and where and under which key the engine keeps it.
trait Watched: Resource + Clone + Sized {
    type Id: Ord;
    fn id(&self) -> Self::Id;
    fn mirror(mirrors: &mut Mirrors) -> &mut Mirror<Self>;
    fn objects(world: &mut World) -> &mut BTreeMap<Self::Id, Self>;
}

impl Watched for ProvisioningRequest {
    type Id = Key;
    fn id(&self) -> Key {
        namespaced_key(self)
    }
    fn mirror(mirrors: &mut Mirrors) -> &mut Mirror<Self> {
        &mut mirrors.requests
    }
    fn objects(world: &mut World) -> &mut BTreeMap<Key, Self> {
        &mut world.requests
    }
}

impl Watched for PodTemplate {
    type Id = Key;
    fn id(&self) -> Key {
        namespaced_key(self)
    }
    fn mirror(mirrors: &mut Mirrors) -> &mut Mirror<Self> {
        &mut mirrors.templates
    }
    fn objects(world: &mut World) -> &mut BTreeMap<Key, Self> {
        &mut world.templates
    }
}

impl Watched for Node {
    type Id = String;
    fn id(&self) -> String {
        self.metadata.name.clone().unwrap_or_default()
    }
    fn mirror(mirrors: &mut Mirrors) -> &mut Mirror<Self> {
        &mut mirrors.nodes
    }
    fn objects(world: &mut World) -> &mut BTreeMap<String, Self> {
        &mut world.nodes
    }
}

impl Watched for Pod {
    type Id = Key;
    fn id(&self) -> Key {
        namespaced_key(self)
    }
    fn mirror(mirrors: &mut Mirrors) -> &mut Mirror<Self> {
        &mut mirrors.pods
    }
    fn objects(world: &mut World) -> &mut BTreeMap<Key, Self> {
        &mut world.pods
    }
}

fn namespaced_key<K: Resource>(obj: &K) -> Key {
    (
        obj.meta().namespace.clone().unwrap_or_default(),
        obj.meta().name.clone().unwrap_or_default(),
    )
}

/// Carries out the actions in order, keeping the mirrors in step with what was written. Returns
/// false when the API server refused something for another reason than a conflict or a missing
/// object (those resolve through the watches).
async fn carry_out(client: &Client, actions: Vec<Action>, mirrors: &mut Mirrors) -> bool {
    let params = PostParams {
        field_manager: Some(FIELD_MANAGER.to_string()),
        ..PostParams::default()
    };
    let mut ok = true;
    for action in actions {
        let result = match action {
            Action::CreateNode(node) => {
                let api: Api<Node> = Api::all(client.clone());
                api.create(&params, &node)
                    .await
                    .map(|created| mirrors.apply(Event::Apply(created)))
            }
            Action::DeleteNode(name) => {
                let api: Api<Node> = Api::all(client.clone());
                api.delete(&name, &DeleteParams::default())
                    .await
                    .map(|_| mirrors.forget::<Node>(&name))
            }
            Action::WriteStatus(request) => {
                let key = namespaced_key(request.as_ref());
                let api: Api<ProvisioningRequest> = Api::namespaced(client.clone(), &key.0);
                api.replace_status(&key.1, &params, request.as_ref())
                    .await
                    .map(|written| mirrors.apply(Event::Apply(written)))
            }
            Action::DeleteRequest(key) => {
                let api: Api<ProvisioningRequest> = Api::namespaced(client.clone(), &key.0);
                api.delete(&key.1, &DeleteParams::default())
                    .await
                    .map(|_| mirrors.forget::<ProvisioningRequest>(&format!("{}/{}", key.0, key.1)))
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

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    use super::*;

    fn node(name: &str, rv: &str) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                uid: Some(format!("uid-{name}")),
                resource_version: Some(rv.into()),
                ..ObjectMeta::default()
            },
            ..Node::default()
        }
    }

    fn world_nodes(mirrors: &Mirrors) -> Vec<(&str, &str)> {
        mirrors
            .world
            .nodes
            .iter()
            .map(|(name, n)| {
                let rv = n.metadata.resource_version.as_deref().unwrap_or("");
                (name.as_str(), rv)
            })
            .collect()
    }

    #[test]
    fn the_engine_sees_a_kind_only_once_every_watch_has_listed_it_whole() {
        let mut mirrors = Mirrors::default();
        mirrors.apply(Event::<Node>::Init);
        mirrors.apply(Event::InitApply(node("a", "1")));
        assert!(
            world_nodes(&mirrors).is_empty(),
            "a list counts once complete"
        );
        mirrors.apply(Event::<Node>::InitDone);
        assert_eq!(world_nodes(&mirrors), [("a", "1")]);
        assert!(
            !mirrors.ready(),
            "the other three kinds have not listed yet"
        );
        mirrors.apply(Event::<ProvisioningRequest>::InitDone);
        mirrors.apply(Event::<PodTemplate>::InitDone);
        mirrors.apply(Event::<Pod>::InitDone);
        assert!(mirrors.ready());
    }

    #[test]
    fn a_node_gone_during_a_relist_leaves_the_engines_world() {
        let mut mirrors = Mirrors::default();
        for event in [
            Event::Init,
            Event::InitApply(node("a", "1")),
            Event::InitApply(node("b", "2")),
            Event::InitDone,
        ] {
            mirrors.apply(event);
        }
        // The watch restarts; `a` was deleted while it was down, `b` changed.
        for event in [Event::Init, Event::InitApply(node("b", "5"))] {
            mirrors.apply(event);
        }
        assert_eq!(world_nodes(&mirrors), [("a", "1"), ("b", "2")]);
        mirrors.apply(Event::<Node>::InitDone);
        assert_eq!(world_nodes(&mirrors), [("b", "5")]);
    }

    #[test]
    fn a_late_watch_event_does_not_undo_the_autoscalers_own_write() {
        let mut mirrors = Mirrors::default();
        mirrors.apply(Event::Apply(node("a", "3")));
        // What the API server answered to a write, then the watch catching up.
        mirrors.apply(Event::Apply(node("a", "7")));
        mirrors.apply(Event::Apply(node("a", "5")));
        assert_eq!(world_nodes(&mirrors), [("a", "7")]);
        mirrors.forget::<Node>("a");
        assert!(world_nodes(&mirrors).is_empty());
    }
}
