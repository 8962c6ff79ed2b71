//! The autoscaler's decisions, without IO: given what the API server holds (requests, PodTemplates,
//! Nodes, Pods) and the time, what to write, which nodes to add or remove, and when to look again.
//! The runner ([`crate::run()`]) feeds it watch events and carries out its actions.
//!
//! One step, in order:
//! 1. scale-ups whose delay has passed become Nodes; groups below their minimum size grow
//!    (`node_groups.rs`);
//! 2. the simulation starts from the nodes (and the nodes on their way), minus the pods bound to
//!    them, minus the capacity booked by provisioned requests whose booking is still on
//!    (`simulation.rs`);
//! 3. each request, in name order, is decided by its script (`scripted.rs`) or its class: first
//!    what every class shares (`lifecycle.rs`, `booking.rs`), then the class itself
//!    (`check_capacity.rs`, `atomic_scale_up.rs`, `vendor.rs`), taking capacity from the simulation
//!    as it is provisioned;
//! 4. nodes the autoscaler added that nothing needs are removed once unneeded long enough.
//!
//! A broken variant deviates only through the hooks in `broken.rs`; one of them acts only on a
//! slow loop (`loop_ticks.rs`): a step between its ticks does nothing and asks to be woken at the
//! next, so the runner needs no loop of its own and a virtual-time run stays deterministic.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::autoscaling::ProvisioningRequest;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, Pod, PodTemplate};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::capacity::{PodGroup, Sim};
use crate::config::{Behaviour, ClassConfig, Config, Step};

mod atomic_scale_up;
mod booking;
mod broken;
mod check_capacity;
mod lifecycle;
mod loop_ticks;
mod next;
mod node_groups;
mod objects;
mod scripted;
mod simulation;
mod upstream;
mod vendor;

pub use objects::key_of;

use broken::Deviations;
use node_groups::PendingScaleUp;

/// `(namespace, name)`.
pub type Key = (String, String);

/// How long a request may miss its PodTemplates before it fails: one loop of upstream's Cluster
/// Autoscaler, which would only look at it that much later. The templates come on another watch
/// than the request, so a request can be seen first even when its templates were created first.
pub const TEMPLATE_GRACE: Duration = Duration::from_secs(10);

/// What the API server holds, as the autoscaler's watches see it.
#[derive(Clone, Debug, Default)]
pub struct World {
    pub requests: BTreeMap<Key, ProvisioningRequest>,
    pub templates: BTreeMap<Key, PodTemplate>,
    pub nodes: BTreeMap<String, Node>,
    pub pods: BTreeMap<Key, Pod>,
}

/// Something for the runner to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Replace the request's status (the object carries the resourceVersion it was decided on).
    WriteStatus(Box<ProvisioningRequest>),
    DeleteRequest(Key),
    CreateNode(Box<Node>),
    DeleteNode(String),
}

/// A step's result: actions in order, and when the next step is due without any new event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    pub actions: Vec<Action>,
    pub wake: Option<Timestamp>,
}

/// The cloud provider behind the node groups: the scale-ups asked of it whose Nodes are not all
/// there yet. It is not the autoscaler's memory but the cloud's, so it outlives the autoscaler's
/// process, as a real cloud's node group sizes do: an autoscaler killed during a scale-up and
/// started again with the same `Cloud` sees its nodes arrive (and asks again for any whose
/// creation it had decided on but not yet made). Cloning shares it.
#[derive(Clone, Debug, Default)]
pub struct Cloud(Arc<Mutex<Vec<PendingScaleUp>>>);

impl Cloud {
    fn scale_ups(&self) -> std::sync::MutexGuard<'_, Vec<PendingScaleUp>> {
        // A step never panics while holding it; if one did, the list is still whole.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// The autoscaler's memory between steps. Everything else is read back from the API server (and
/// scale-ups in flight from the [`Cloud`]), so a restarted autoscaler carries on, forgetting only
/// retry backoffs.
pub struct Autoscaler {
    config: Config,
    /// Per request UID: the wait before its next retry.
    retry_wait: BTreeMap<String, Duration>,
    cloud: Cloud,
    /// The cloud's scale-ups, taken from it for the length of a step.
    pending: Vec<PendingScaleUp>,
    /// Requests (by UID) whose scale-up finished: the node group now holding their capacity.
    scaled_up: BTreeMap<String, String>,
    unneeded_since: BTreeMap<String, Timestamp>,
    /// The broken variant played, if any, and what it remembers.
    broken: Deviations,
}

impl Autoscaler {
    /// An autoscaler with a cloud of its own.
    pub fn new(config: Config) -> Self {
        Autoscaler::with_cloud(config, Cloud::default())
    }

    /// An autoscaler whose node groups are `cloud`'s (shared with an earlier run of it).
    pub fn with_cloud(config: Config, cloud: Cloud) -> Self {
        Autoscaler {
            broken: Deviations::new(config.broken),
            config,
            retry_wait: BTreeMap::new(),
            cloud,
            pending: vec![],
            scaled_up: BTreeMap::new(),
            unneeded_since: BTreeMap::new(),
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Decides what to do now.
    pub fn step(&mut self, world: &World, now: Timestamp) -> Outcome {
        if let Err(next_tick) = self.broken.gate(now) {
            return Outcome {
                actions: vec![],
                wake: Some(next_tick),
            };
        }
        self.pending = std::mem::take(&mut *self.cloud.scale_ups());
        let outcome = self.step_with_scale_ups(world, now);
        *self.cloud.scale_ups() = std::mem::take(&mut self.pending);
        outcome
    }

    fn step_with_scale_ups(&mut self, world: &World, now: Timestamp) -> Outcome {
        let mut step = StepState {
            now,
            time: Time(support::clock::truncate_seconds(now)),
            actions: vec![],
            wake: None,
            sim: Sim::default(),
            needed: BTreeSet::new(),
            created: vec![],
        };
        self.forget_deleted(world);
        self.grow(world, &mut step);
        self.simulate_existing(world, &mut step);
        for (key, request) in &world.requests {
            if let Some(class) = self.handler(request) {
                self.decide(world, key, request, class, &mut step);
            }
        }
        self.shrink(world, &mut step);
        Outcome {
            actions: step.actions,
            wake: self.broken.wake_on_loop(step.wake),
        }
    }

    /// Drops memory of requests that are gone.
    fn forget_deleted(&mut self, world: &World) {
        let alive = |key: &Key, uid: &str| {
            world
                .requests
                .get(key)
                .is_some_and(|r| r.metadata.uid.as_deref().unwrap_or("") == uid)
        };
        if self.broken.forgets_deleted() {
            self.pending.retain(|p| alive(&p.request, &p.uid));
        }
        let uids: BTreeSet<&str> = world
            .requests
            .values()
            .filter_map(|r| r.metadata.uid.as_deref())
            .collect();
        self.scaled_up.retain(|uid, _| uids.contains(uid.as_str()));
        self.broken.forget(&uids);
        self.retry_wait.retain(|uid, _| uids.contains(uid.as_str()));
    }

    /// The class (or script) that handles a request, if this autoscaler serves it.
    fn handler(&self, request: &ProvisioningRequest) -> Option<Handler> {
        let namespace = request.metadata.namespace.as_deref().unwrap_or("");
        let name = request.metadata.name.as_deref().unwrap_or("");
        let class = request.spec.provisioning_class_name.as_str();
        if let Some(script) = self
            .config
            .scripts
            .iter()
            .find(|s| s.matcher.matches(namespace, name, class))
        {
            return Some(Handler::Script(script.timeline.clone()));
        }
        let config = self.config.class(class)?;
        Some(match config.behaviour {
            Behaviour::Scripted => Handler::Script(config.timeline.clone()),
            _ => Handler::Class(config.clone()),
        })
    }
}

/// A request's class, or the script it follows.
enum Handler {
    Class(ClassConfig),
    Script(Vec<Step>),
}

/// What one step builds up.
struct StepState {
    now: Timestamp,
    time: Time,
    actions: Vec<Action>,
    wake: Option<Timestamp>,
    sim: Sim,
    /// Nodes holding bound pods or booked capacity.
    needed: BTreeSet<String>,
    /// Nodes created in this step.
    created: Vec<Node>,
}

impl StepState {
    fn created_named(&self, name: &str) -> bool {
        self.created
            .iter()
            .any(|n| n.metadata.name.as_deref() == Some(name))
    }

    fn wake_at(&mut self, at: Timestamp) {
        if at > self.now {
            self.wake = Some(self.wake.map_or(at, |w| w.min(at)));
        }
    }

    /// Places every pod, or none: true when all fit (and their capacity is taken). `upcoming`:
    /// whether nodes still on their way count (not for check-capacity, which looks at the cluster
    /// as it is).
    fn try_place(&mut self, pods: &[PodGroup], upcoming: bool) -> bool {
        let mut trial = self.sim.clone();
        let placement = trial.place_all(pods, upcoming);
        if placement.complete() {
            self.sim = trial;
            self.needed.extend(placement.nodes);
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests;
