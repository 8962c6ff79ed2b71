//! The autoscaler's decisions, without IO: given what the API server holds (requests, PodTemplates,
//! Nodes, Pods) and the time, what to write, which nodes to add or remove, and when to look again.
//! The runner ([`crate::run`]) feeds it watch events and carries out its actions.
//!
//! One step, in order:
//! 1. scale-ups whose delay has passed become Nodes; groups below their minimum size grow;
//! 2. the simulation starts from the nodes (and the nodes on their way), minus the pods bound to
//!    them, minus the capacity booked by provisioned requests whose booking is still on;
//! 3. each request, in name order, is decided by its class (or its script), taking capacity from
//!    the simulation as it is provisioned;
//! 4. nodes the autoscaler added that nothing needs are removed once unneeded long enough.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use api::autoscaling::{ProvisioningRequest, ProvisioningRequestStatus};
use api::constants::{annotation, provreq_condition as cond, provreq_reason as reason};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Node, Pod, PodTemplate};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use crate::broken::{Broken, snake_case};
use crate::capacity::{GroupRoom, PodGroup, PodShape, Sim, SimNode, plan_scale_up};
use crate::config::{Behaviour, ClassConfig, Config, Step};
use crate::messages;
use crate::nodes;

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

/// Nodes requested from the cloud provider and not there yet.
#[derive(Clone, Debug)]
struct PendingScaleUp {
    request: Key,
    uid: String,
    group: String,
    count: u32,
    ready_at: Timestamp,
    labels: BTreeMap<String, String>,
    /// The Nodes' names, once their creation was asked for. The scale-up is over when they exist.
    names: Vec<String>,
}

impl PendingScaleUp {
    /// How many of its nodes are still to appear.
    fn missing(&self, world: &World, step: &StepState) -> u32 {
        if self.names.is_empty() {
            return self.count;
        }
        self.names
            .iter()
            .filter(|n| !world.nodes.contains_key(*n) && !step.created_named(n))
            .count() as u32
    }
}

/// The autoscaler's memory between steps. Everything else is read back from the API server, so
/// a restarted autoscaler carries on (forgetting only retry backoffs and scale-ups in flight).
pub struct Autoscaler {
    config: Config,
    /// Per request UID: the wait before its next retry.
    retry_wait: BTreeMap<String, Duration>,
    pending: Vec<PendingScaleUp>,
    /// Requests (by UID) whose scale-up finished: the node group now holding their capacity.
    scaled_up: BTreeMap<String, String>,
    unneeded_since: BTreeMap<String, Timestamp>,
    /// Booked pods per request, kept for the `ignores-deletion` variant.
    bookings: BTreeMap<Key, Vec<PodGroup>>,
    /// For `stale-transition-time`: when each condition (by request UID and type) really changed,
    /// so that this variant's own timing stays right while what it writes is stale.
    true_times: BTreeMap<(String, String), Timestamp>,
    /// For `booking-expired-before-provisioned`: the requests whose booking really ended.
    bookings_over: BTreeSet<String>,
}

impl Autoscaler {
    pub fn new(config: Config) -> Self {
        Autoscaler {
            config,
            retry_wait: BTreeMap::new(),
            pending: vec![],
            scaled_up: BTreeMap::new(),
            unneeded_since: BTreeMap::new(),
            bookings: BTreeMap::new(),
            true_times: BTreeMap::new(),
            bookings_over: BTreeSet::new(),
        }
    }

    /// When a condition last changed, as this autoscaler's timing counts it.
    fn since(&self, request: &ProvisioningRequest, c: &Condition) -> Timestamp {
        let real = self
            .true_times
            .get(&(uid(request).to_string(), c.type_.clone()));
        match real {
            Some(t) if self.broken(Broken::StaleTransitionTime) => *t,
            _ => c.last_transition_time.0,
        }
    }

    /// Provisioned, with its booking still on (upstream's `ShouldCapacityBeBooked`).
    fn is_booked(&self, request: &ProvisioningRequest) -> bool {
        let expired = if self.broken(Broken::BookingExpiredBeforeProvisioned) {
            // Its BookingExpired says nothing; the booking ends as the reference's would.
            self.bookings_over.contains(uid(request))
        } else {
            is_true(request, cond::BOOKING_EXPIRED)
        };
        is_true(request, cond::PROVISIONED)
            && !expired
            && !is_true(request, cond::FAILED)
            && !is_true(request, cond::CAPACITY_REVOKED)
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    fn broken(&self, variant: Broken) -> bool {
        self.config.broken == Some(variant)
    }

    /// Decides what to do now.
    pub fn step(&mut self, world: &World, now: Timestamp) -> Outcome {
        let mut step = StepState {
            now,
            time: Time(controller::clock::truncate_seconds(now)),
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
            wake: step.wake,
        }
    }

    /// Drops memory of requests that are gone (unless this variant ignores deletion).
    fn forget_deleted(&mut self, world: &World) {
        let alive = |key: &Key, uid: &str| {
            world
                .requests
                .get(key)
                .is_some_and(|r| r.metadata.uid.as_deref().unwrap_or("") == uid)
        };
        if !self.broken(Broken::IgnoresDeletion) {
            self.pending.retain(|p| alive(&p.request, &p.uid));
            self.bookings.retain(|k, _| world.requests.contains_key(k));
        }
        let uids: BTreeSet<&str> = world
            .requests
            .values()
            .filter_map(|r| r.metadata.uid.as_deref())
            .collect();
        self.scaled_up.retain(|uid, _| uids.contains(uid.as_str()));
        self.true_times
            .retain(|(uid, _), _| uids.contains(uid.as_str()));
        self.bookings_over.retain(|uid| uids.contains(uid.as_str()));
        self.retry_wait.retain(|uid, _| uids.contains(uid.as_str()));
    }

    /// Finishes due scale-ups and brings groups up to their minimum size.
    fn grow(&mut self, world: &World, step: &mut StepState) {
        let mut pending = std::mem::take(&mut self.pending);
        for p in &mut pending {
            if p.ready_at > step.now {
                step.wake_at(p.ready_at);
                continue;
            }
            if p.names.is_empty() {
                p.names = self.create_nodes(world, step, &p.group, p.count, &p.labels);
                continue;
            }
            // Asked for before and still missing: the create failed; ask again.
            let Some(config) = self.config.node_group(&p.group) else {
                continue;
            };
            for name in p.names.iter().filter(|n| !world.nodes.contains_key(*n)) {
                let node = nodes::render(config, name, &p.labels, step.time.clone());
                step.created.push(node.clone());
                step.actions.push(Action::CreateNode(Box::new(node)));
            }
        }
        // A scale-up is over once all its nodes exist.
        let (done, waiting): (Vec<_>, Vec<_>) = pending.into_iter().partition(|p| {
            !p.names.is_empty() && p.names.iter().all(|n| world.nodes.contains_key(n))
        });
        self.pending = waiting;
        for scale_up in done {
            self.scaled_up.insert(scale_up.uid, scale_up.group);
        }
        for group in self.config.node_groups.clone() {
            let have = self.group_size(world, &group.name, step);
            if have < group.min_size {
                self.create_nodes(
                    world,
                    step,
                    &group.name,
                    group.min_size - have,
                    &BTreeMap::new(),
                );
            }
        }
    }

    /// Asks for `count` new nodes of `group`; returns their names.
    fn create_nodes(
        &self,
        world: &World,
        step: &mut StepState,
        group: &str,
        count: u32,
        labels: &BTreeMap<String, String>,
    ) -> Vec<String> {
        let Some(config) = self.config.node_group(group) else {
            return vec![];
        };
        let taken: Vec<&str> = world
            .nodes
            .keys()
            .map(String::as_str)
            .chain(
                step.created
                    .iter()
                    .map(|n| n.metadata.name.as_deref().unwrap_or("")),
            )
            .collect();
        let names = nodes::next_names(group, taken, count);
        for name in &names {
            let node = nodes::render(config, name, labels, step.time.clone());
            step.created.push(node.clone());
            step.actions.push(Action::CreateNode(Box::new(node)));
        }
        names
    }

    /// Nodes of a group: existing (not being deleted), created this step, and on their way.
    fn group_size(&self, world: &World, group: &str, step: &StepState) -> u32 {
        let existing = world
            .nodes
            .values()
            .filter(|n| n.metadata.deletion_timestamp.is_none())
            .chain(step.created.iter())
            .filter(|n| nodes::group_of(n) == Some(group))
            .count() as u32;
        let pending: u32 = self
            .pending
            .iter()
            .filter(|p| p.group == group)
            .map(|p| p.missing(world, step))
            .sum();
        existing + pending
    }

    /// The simulation before any decision: nodes, minus bound pods, minus live bookings.
    fn simulate_existing(&mut self, world: &World, step: &mut StepState) {
        let mut sim_nodes: Vec<SimNode> = world
            .nodes
            .values()
            .filter(|n| n.metadata.deletion_timestamp.is_none() && is_ready(n))
            .chain(step.created.iter())
            .map(SimNode::from_node)
            .collect();
        for p in &self.pending {
            if let Some(group) = self.config.node_group(&p.group) {
                for i in 0..p.missing(world, step) {
                    let name = format!("{}~pending-{}-{i}", p.group, p.request.1);
                    let node = nodes::render(group, &name, &p.labels, step.time.clone());
                    sim_nodes.push(SimNode::from_node(&node).upcoming());
                }
            }
        }
        step.sim = Sim::new(sim_nodes);
        for pod in world.pods.values() {
            let Some(node) = bound_node(pod) else {
                continue;
            };
            step.needed.insert(node.to_string());
            if let Some(shape) = pod.spec.as_ref().and_then(|s| PodShape::from_spec(s).ok()) {
                step.sim.occupy(node, &shape);
            }
        }
        let mut booked: BTreeMap<Key, Vec<PodGroup>> = BTreeMap::new();
        for (key, request) in &world.requests {
            // A vendor request whose nodes just came up holds them before it is marked provisioned.
            let holds = self.handler(request).is_some()
                && (self.is_booked(request)
                    || self.pending.iter().any(|p| &p.request == key)
                    || (self.scaled_up.contains_key(uid(request))
                        && !is_true(request, cond::PROVISIONED)));
            if !holds {
                continue;
            }
            if let Ok(pods) = request_pods(request, world) {
                let unconsumed = unconsumed(&pods, consumed(request, world));
                booked.insert(key.clone(), unconsumed);
            }
        }
        if self.broken(Broken::IgnoresDeletion) {
            // Deleted requests keep what they had booked.
            for (key, pods) in &self.bookings {
                if !world.requests.contains_key(key) {
                    booked.insert(key.clone(), pods.clone());
                }
            }
        }
        for pods in booked.values() {
            let placement = step.sim.place_all(pods, true);
            step.needed.extend(placement.nodes);
        }
        self.bookings = booked;
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

    fn decide(
        &mut self,
        world: &World,
        key: &Key,
        request: &ProvisioningRequest,
        handler: Handler,
        step: &mut StepState,
    ) {
        let mut next = Next::new(request, step.time.clone(), self.config.broken);
        match handler {
            Handler::Script(timeline) => {
                if follow_script(request, &timeline, &mut next, step) {
                    step.actions.push(Action::DeleteRequest(key.clone()));
                    return;
                }
            }
            Handler::Class(class) => {
                if self.garbage_collect(request, step) {
                    step.actions.push(Action::DeleteRequest(key.clone()));
                    return;
                }
                self.decide_class(world, key, request, &class, &mut next, step);
            }
        }
        if self.broken(Broken::StaleTransitionTime) {
            // Whether or not the stale time made the write a no-op, the condition was set now.
            for type_ in &next.stamped {
                self.true_times
                    .insert((uid(request).to_string(), type_.clone()), step.time.0);
            }
        }
        if let Some(written) = next.finish() {
            step.actions.push(Action::WriteStatus(Box::new(written)));
        }
    }

    /// Upstream deletes a request whose Provisioned or Failed condition is older than 7 days.
    fn garbage_collect(&self, request: &ProvisioningRequest, step: &mut StepState) -> bool {
        let after = self.config.timing.garbage_collection.get();
        let mut delete = false;
        for t in [cond::PROVISIONED, cond::FAILED] {
            if let Some(c) = condition(request, t) {
                let due = plus(self.since(request, c), after);
                if due <= step.now {
                    delete = true;
                } else {
                    step.wake_at(due);
                }
            }
        }
        delete
    }

    fn decide_class(
        &mut self,
        world: &World,
        key: &Key,
        request: &ProvisioningRequest,
        class: &ClassConfig,
        next: &mut Next,
        step: &mut StepState,
    ) {
        let timing = self.config.timing.clone();
        if is_true(request, cond::FAILED) {
            // Terminal; only the broken variant brings it back.
            // Whatever failed it; but only once its pods can be built, so that it breaks no
            // other rule.
            if self.broken(Broken::RevivesFailed) && request_pods(request, world).is_ok() {
                next.set(
                    cond::FAILED,
                    "False",
                    reason::CAPACITY_IS_FOUND,
                    messages::CAPACITY_IS_FOUND,
                );
                next.set(
                    cond::PROVISIONED,
                    "True",
                    reason::CAPACITY_IS_FOUND,
                    messages::CAPACITY_IS_FOUND,
                );
            }
            return;
        }
        if is_true(request, cond::CAPACITY_REVOKED) {
            return;
        }
        if is_true(request, cond::PROVISIONED) {
            self.keep_booking(world, request, class, next, step);
            return;
        }
        let created = request
            .metadata
            .creation_timestamp
            .as_ref()
            .map_or(step.now, |t| t.0);
        let expires = plus(created, timing.expiry.get());
        if expires <= step.now {
            next.set(cond::FAILED, "True", reason::EXPIRED, messages::EXPIRED);
            return;
        }
        step.wake_at(expires);
        if class.behaviour == Behaviour::Vendor
            && let Some(seconds) = parameter_seconds(request, "ValidUntilSeconds")
        {
            let until = plus(created, Duration::from_secs(seconds));
            if until <= step.now {
                next.set(
                    cond::FAILED,
                    "True",
                    reason::WAIT_TIME_EXCEEDED,
                    &messages::vendor_wait_time_exceeded(seconds),
                );
                return;
            }
            step.wake_at(until);
        }
        if self.broken(Broken::NeverLeavesAccepted) {
            if condition(request, cond::ACCEPTED).is_none() {
                next.set(cond::ACCEPTED, "True", reason::ACCEPTED, messages::ACCEPTED);
            }
            return;
        }
        if self.broken(Broken::BookingExpiredBeforeProvisioned)
            && condition(request, cond::BOOKING_EXPIRED).is_none()
        {
            next.set(
                cond::BOOKING_EXPIRED,
                "True",
                reason::CAPACITY_RESERVATION_TIME_EXPIRED,
                messages::BOOKING_TIME_EXPIRED,
            );
        }
        let pods = match request_pods(request, world) {
            Ok(pods) => pods,
            Err(PodsError::Missing { .. }) if self.broken(Broken::ProvisionsWithoutTemplates) => {
                next.set(cond::ACCEPTED, "True", reason::ACCEPTED, messages::ACCEPTED);
                next.set(
                    cond::PROVISIONED,
                    "True",
                    reason::CAPACITY_IS_FOUND,
                    messages::CAPACITY_IS_FOUND,
                );
                return;
            }
            Err(PodsError::Missing { .. }) if plus(created, TEMPLATE_GRACE) > step.now => {
                // The PodTemplates come on another watch; give them one autoscaler loop.
                step.wake_at(plus(created, TEMPLATE_GRACE));
                return;
            }
            Err(e) => {
                next.set(
                    cond::FAILED,
                    "True",
                    reason::FAILED_TO_CREATE_PODS,
                    &e.to_string(),
                );
                return;
            }
        };
        match class.behaviour {
            Behaviour::CheckCapacity => self.check_capacity(request, &pods, next, step),
            Behaviour::AtomicScaleUp => self.atomic_scale_up(world, request, &pods, next, step),
            Behaviour::Vendor => self.vendor(world, key, request, class, &pods, next, step),
            Behaviour::Scripted => {}
        }
    }

    /// Whether a `Provisioned=False` request may be tried again now (upstream's backoff: the
    /// condition's time plus a wait that starts at 1m and doubles up to 10m).
    fn retry_due(&self, request: &ProvisioningRequest, step: &mut StepState) -> bool {
        match condition(request, cond::PROVISIONED) {
            None => true,
            Some(c) if c.status == "False" => {
                let due = plus(self.since(request, c), self.wait(request));
                if due <= step.now {
                    true
                } else {
                    step.wake_at(due);
                    false
                }
            }
            Some(_) => false,
        }
    }

    fn wait(&self, request: &ProvisioningRequest) -> Duration {
        self.retry_wait
            .get(uid(request))
            .copied()
            .unwrap_or(self.config.timing.retry_initial.get())
    }

    /// After a retry that found nothing: the next wait doubles.
    fn back_off(&mut self, request: &ProvisioningRequest) {
        if condition(request, cond::PROVISIONED).is_some_and(|c| c.status == "False") {
            let doubled = (self.wait(request) * 2).min(self.config.timing.retry_max.get());
            self.retry_wait.insert(uid(request).to_string(), doubled);
        }
    }

    fn check_capacity(
        &mut self,
        request: &ProvisioningRequest,
        pods: &[PodGroup],
        next: &mut Next,
        step: &mut StepState,
    ) {
        if !self.retry_due(request, step) {
            return;
        }
        next.set(cond::ACCEPTED, "True", reason::ACCEPTED, messages::ACCEPTED);
        if step.try_place(pods, false) {
            self.provisioned(next, reason::CAPACITY_IS_FOUND);
            return;
        }
        let no_retry = request
            .spec
            .parameters
            .get(api::constants::provisioning_class::PARAMETER_NO_RETRY)
            .is_some_and(|v| v == "true");
        if no_retry {
            next.set(
                cond::FAILED,
                "True",
                reason::CAPACITY_IS_NOT_FOUND,
                messages::CAPACITY_NOT_FOUND_NO_RETRY,
            );
            return;
        }
        self.not_found(request, next, step);
    }

    fn atomic_scale_up(
        &mut self,
        world: &World,
        request: &ProvisioningRequest,
        pods: &[PodGroup],
        next: &mut Next,
        step: &mut StepState,
    ) {
        if condition(request, cond::ACCEPTED).is_none() {
            next.set(cond::ACCEPTED, "True", reason::ACCEPTED, messages::ACCEPTED);
        }
        if !self.retry_due(request, step) {
            return;
        }
        if step.try_place(pods, true) {
            self.provisioned(next, reason::CAPACITY_IS_FOUND);
            return;
        }
        let plan = plan_scale_up(
            &step.sim,
            pods,
            &self.rooms(world, step, |_| BTreeMap::new()),
        );
        let refused = plan.nodes.keys().any(|g| {
            self.config
                .node_group(g)
                .is_some_and(|g| g.fail_scale_up.is_some())
        });
        let partial = self.broken(Broken::PartialScaleUp) && plan.total() > 0;
        if (plan.complete || partial) && !refused {
            self.request_nodes(request, &plan.nodes, &BTreeMap::new(), step);
            if plan.complete {
                step.try_place(pods, true);
                self.provisioned(next, reason::CAPACITY_IS_PROVISIONED);
                return;
            }
        }
        self.not_found(request, next, step);
    }

    #[allow(clippy::too_many_arguments)]
    fn vendor(
        &mut self,
        world: &World,
        key: &Key,
        request: &ProvisioningRequest,
        class: &ClassConfig,
        pods: &[PodGroup],
        next: &mut Next,
        step: &mut StepState,
    ) {
        let Some(accepted) = condition(request, cond::ACCEPTED) else {
            next.set(
                cond::ACCEPTED,
                "False",
                reason::NOT_ACCEPTED,
                messages::VENDOR_NOT_ACCEPTED,
            );
            next.set(
                cond::PROVISIONED,
                "False",
                reason::NOT_PROVISIONED,
                messages::VENDOR_NOT_PROVISIONED,
            );
            let delay = class.queue_delay.map(|d| d.get()).unwrap_or_default();
            step.wake_at(plus(step.now, delay));
            return;
        };
        if accepted.status != "True" {
            let delay = class.queue_delay.map(|d| d.get()).unwrap_or_default();
            let due = plus(self.since(request, accepted), delay);
            if due > step.now {
                step.wake_at(due);
                return;
            }
            next.set(
                cond::ACCEPTED,
                "True",
                reason::SUCCESSFULLY_QUEUED,
                messages::VENDOR_QUEUED,
            );
        }
        if self.pending.iter().any(|p| &p.request == key) {
            return;
        }
        let group = match self.scaled_up.get(uid(request)) {
            // Its own nodes are up; they were held for it (see `simulate_existing`).
            Some(group) => Some(group.clone()),
            None if step.try_place(pods, true) => Some(String::new()),
            None => None,
        };
        if let Some(group) = group {
            next.set(
                cond::PROVISIONED,
                "True",
                reason::PROVISIONED,
                messages::VENDOR_PROVISIONED,
            );
            next.details = render_all(&class.provisioning_class_details, request, &group);
            return;
        }
        let rooms = self.rooms(world, step, |group| {
            render_all(&class.node_labels, request, group)
        });
        let plan = plan_scale_up(&step.sim, pods, &rooms);
        if !plan.complete {
            return; // Queued until capacity appears (a node or a booking freed: a watch event).
        }
        let refused = plan.nodes.keys().find_map(|g| {
            self.config
                .node_group(g)
                .and_then(|g| g.fail_scale_up.clone())
        });
        if let Some(failure) = refused {
            next.set(cond::FAILED, "True", &failure.reason, &failure.message);
            return;
        }
        let group = plan.nodes.keys().next().cloned().unwrap_or_default();
        let labels = render_all(&class.node_labels, request, &group);
        let ready_at = self.request_nodes(request, &plan.nodes, &labels, step);
        step.try_place(pods, true);
        next.set(
            cond::PROVISIONED,
            "False",
            reason::NOT_PROVISIONED,
            &messages::vendor_eta(
                plan.total(),
                &group,
                &controller::clock::truncate_seconds(ready_at).to_string(),
            ),
        );
    }

    /// Booking: expires 10 minutes after Provisioned=True, or once enough consuming pods run.
    /// A vendor class also revokes the capacity after `maxRunDurationSeconds`.
    fn keep_booking(
        &mut self,
        world: &World,
        request: &ProvisioningRequest,
        class: &ClassConfig,
        next: &mut Next,
        step: &mut StepState,
    ) {
        let Some(provisioned) = condition(request, cond::PROVISIONED) else {
            return;
        };
        let since = self.since(request, provisioned);
        if class.behaviour == Behaviour::Vendor {
            let seconds = parameter_seconds(request, "maxRunDurationSeconds")
                .unwrap_or(self.config.timing.expiry.get().as_secs());
            let until = plus(since, Duration::from_secs(seconds));
            if until <= step.now {
                next.set(
                    cond::CAPACITY_REVOKED,
                    "True",
                    messages::CAPACITY_REVOKED_REASON,
                    messages::CAPACITY_REVOKED,
                );
            } else {
                step.wake_at(until);
            }
        }
        if !self.is_booked(request) {
            return;
        }
        let pods = match request_pods(request, world) {
            Ok(pods) => pods,
            // This variant provisioned it without its pods; it books nothing and says nothing.
            Err(PodsError::Missing { .. }) if self.broken(Broken::ProvisionsWithoutTemplates) => {
                return;
            }
            Err(e) => {
                next.set(
                    cond::FAILED,
                    "True",
                    reason::FAILED_TO_BOOK_CAPACITY,
                    &messages::failed_to_book(&e.to_string()),
                );
                return;
            }
        };
        let total: u32 = pods.iter().map(|(_, n)| n).sum();
        let ends = consumed(request, world) >= total
            || plus(since, self.config.timing.booking_time.get()) <= step.now;
        if ends && self.broken(Broken::BookingExpiredBeforeProvisioned) {
            // Already says BookingExpired; only the booking itself ends.
            self.bookings_over.insert(uid(request).to_string());
            return;
        }
        if consumed(request, world) >= total {
            next.set(
                cond::BOOKING_EXPIRED,
                "True",
                reason::CAPACITY_BOOKING_CONSUMED,
                messages::BOOKING_CONSUMED,
            );
            return;
        }
        let due = plus(since, self.config.timing.booking_time.get());
        if due <= step.now {
            next.set(
                cond::BOOKING_EXPIRED,
                "True",
                reason::CAPACITY_RESERVATION_TIME_EXPIRED,
                messages::BOOKING_TIME_EXPIRED,
            );
        } else {
            step.wake_at(due);
        }
    }

    fn provisioned(&self, next: &mut Next, why: &str) {
        next.set(cond::PROVISIONED, "True", why, messages::CAPACITY_IS_FOUND);
        if self.broken(Broken::ProvisionedAndFailed) {
            next.set(
                cond::FAILED,
                "True",
                reason::FAILED_TO_BOOK_CAPACITY,
                &messages::failed_to_book("booking raced with another request"),
            );
        }
    }

    fn not_found(&mut self, request: &ProvisioningRequest, next: &mut Next, step: &mut StepState) {
        self.back_off(request);
        next.set(
            cond::PROVISIONED,
            "False",
            reason::CAPACITY_IS_NOT_FOUND,
            messages::CAPACITY_NOT_FOUND_RETRY,
        );
        step.wake_at(plus(step.now, self.wait(request)));
    }

    /// How many more nodes each group may add, with a fresh node's shape.
    /// `labels` are those a class puts on the nodes it creates for the request.
    fn rooms(
        &self,
        world: &World,
        step: &StepState,
        labels: impl Fn(&str) -> BTreeMap<String, String>,
    ) -> Vec<GroupRoom> {
        self.config
            .node_groups
            .iter()
            .map(|g| {
                let fresh = nodes::render(g, &g.name, &labels(&g.name), step.time.clone());
                GroupRoom {
                    name: g.name.clone(),
                    fresh_node: SimNode::from_node(&fresh),
                    room: g
                        .max_size
                        .saturating_sub(self.group_size(world, &g.name, step)),
                }
            })
            .collect()
    }

    /// Asks the "cloud provider" for nodes; they join the simulation at once, as CA's upcoming
    /// nodes do. Returns when they will be Ready.
    fn request_nodes(
        &mut self,
        request: &ProvisioningRequest,
        plan: &BTreeMap<String, u32>,
        labels: &BTreeMap<String, String>,
        step: &mut StepState,
    ) -> Timestamp {
        let mut ready = step.now;
        for (group, count) in plan {
            let Some(config) = self.config.node_group(group) else {
                continue;
            };
            let ready_at = plus(step.now, config.scale_up_delay.get());
            ready = ready.max(ready_at);
            for i in 0..*count {
                let name = format!("{group}~pending-{}-{i}", name(request));
                let node = nodes::render(config, &name, labels, step.time.clone());
                step.sim.add(SimNode::from_node(&node).upcoming());
            }
            self.pending.push(PendingScaleUp {
                request: key_of(request),
                uid: uid(request).to_string(),
                group: group.clone(),
                count: *count,
                ready_at,
                labels: labels.clone(),
                names: vec![],
            });
            step.wake_at(ready_at);
        }
        ready
    }

    /// Removes nodes the autoscaler added that have had no pods and no bookings for long enough,
    /// never going below a group's minimum size.
    fn shrink(&mut self, world: &World, step: &mut StepState) {
        let unneeded_time = self.config.timing.scale_down_unneeded_time.get();
        let mut sizes: BTreeMap<String, u32> = self
            .config
            .node_groups
            .iter()
            .map(|g| (g.name.clone(), self.group_size(world, &g.name, step)))
            .collect();
        let mut seen = BTreeSet::new();
        for (name, node) in &world.nodes {
            let Some(group) = nodes::group_of(node) else {
                continue;
            };
            let Some(config) = self.config.node_group(group) else {
                continue;
            };
            if node.metadata.deletion_timestamp.is_some() {
                continue;
            }
            seen.insert(name.clone());
            if step.needed.contains(name) {
                self.unneeded_since.remove(name);
                continue;
            }
            let since = *self.unneeded_since.entry(name.clone()).or_insert(step.now);
            let due = plus(since, unneeded_time);
            let size = sizes.entry(group.to_string()).or_default();
            if *size <= config.min_size {
                continue;
            }
            if due <= step.now {
                *size -= 1;
                step.actions.push(Action::DeleteNode(name.clone()));
            } else {
                step.wake_at(due);
            }
        }
        self.unneeded_since.retain(|n, _| seen.contains(n));
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

/// A request's next status, built condition by condition.
struct Next {
    request: ProvisioningRequest,
    status: ProvisioningRequestStatus,
    details: BTreeMap<String, String>,
    time: Time,
    broken: Option<Broken>,
    /// The condition types set with the step's time.
    stamped: Vec<String>,
}

impl Next {
    fn new(request: &ProvisioningRequest, time: Time, broken: Option<Broken>) -> Self {
        let status = request.status.clone().unwrap_or_default();
        Next {
            request: request.clone(),
            details: status.provisioning_class_details.clone(),
            status,
            time,
            broken,
            stamped: vec![],
        }
    }

    /// Sets a condition as upstream does: replaced in place or appended, with the step's time as
    /// lastTransitionTime and the request's generation as observedGeneration.
    fn set(&mut self, type_: &str, status: &str, why: &str, message: &str) {
        self.stamped.push(type_.to_string());
        self.set_at(type_, status, why, message, self.time.clone());
    }

    fn set_at(&mut self, type_: &str, status: &str, why: &str, message: &str, at: Time) {
        let why = if self.broken == Some(Broken::SnakeCaseReasons) {
            snake_case(why)
        } else {
            why.to_string()
        };
        let existing = self.status.conditions.iter().position(|c| c.type_ == type_);
        let at = match existing {
            Some(i) if self.broken == Some(Broken::StaleTransitionTime) => {
                self.status.conditions[i].last_transition_time.clone()
            }
            _ => at,
        };
        let condition = Condition {
            type_: type_.to_string(),
            status: status.to_string(),
            reason: why,
            message: message.to_string(),
            last_transition_time: at,
            observed_generation: self.request.metadata.generation,
        };
        match existing {
            Some(i) => self.status.conditions[i] = condition,
            None => self.status.conditions.push(condition),
        }
    }

    /// The request to write, if anything changed.
    fn finish(mut self) -> Option<ProvisioningRequest> {
        self.status.provisioning_class_details = self.details;
        let before = self.request.status.clone().unwrap_or_default();
        if before == self.status {
            return None;
        }
        self.request.status = Some(self.status);
        self.request.metadata.managed_fields = None;
        Some(self.request)
    }
}

/// Applies every step of the timeline that is due, each condition timed at its step. Returns true
/// when a due step deletes the request.
fn follow_script(
    request: &ProvisioningRequest,
    timeline: &[Step],
    next: &mut Next,
    step: &mut StepState,
) -> bool {
    let created = request
        .metadata
        .creation_timestamp
        .as_ref()
        .map_or(step.now, |t| t.0);
    for s in timeline {
        let at = plus(created, s.after.get());
        if at > step.now {
            step.wake_at(at);
            break;
        }
        if s.delete {
            return true;
        }
        for c in &s.set {
            // Validated when the configuration was read.
            if let Ok(c) = c.resolve() {
                let unchanged = next.status.conditions.iter().any(|old| {
                    old.type_ == c.type_
                        && old.status == c.status
                        && old.reason == c.reason
                        && old.message == c.message
                });
                if !unchanged {
                    next.set_at(&c.type_, &c.status, &c.reason, &c.message, Time(at));
                }
            }
        }
        next.details.extend(render_all(&s.details, request, ""));
    }
    false
}

/// Why a request's pods cannot be built.
#[derive(Debug)]
enum PodsError {
    Missing {
        referenced: usize,
        missing: Vec<String>,
    },
    Invalid {
        template: String,
        error: String,
    },
}

impl std::fmt::Display for PodsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PodsError::Missing {
                referenced,
                missing,
            } => f.write_str(&messages::missing_templates(*referenced, missing)),
            PodsError::Invalid { template, error } => write!(f, "pod template {template}: {error}"),
        }
    }
}

/// The request's pods: each podset's PodTemplate, `count` times.
fn request_pods(request: &ProvisioningRequest, world: &World) -> Result<Vec<PodGroup>, PodsError> {
    let namespace = request.metadata.namespace.clone().unwrap_or_default();
    let mut pods = vec![];
    let mut missing = vec![];
    for set in &request.spec.pod_sets {
        let name = &set.pod_template_ref.name;
        let Some(template) = world.templates.get(&(namespace.clone(), name.clone())) else {
            missing.push(name.clone());
            continue;
        };
        let spec = template
            .template
            .as_ref()
            .and_then(|t| t.spec.clone())
            .unwrap_or_default();
        let shape = PodShape::from_spec(&spec).map_err(|error| PodsError::Invalid {
            template: name.clone(),
            error,
        })?;
        pods.push((shape, u32::try_from(set.count).unwrap_or(0)));
    }
    if missing.is_empty() {
        Ok(pods)
    } else {
        Err(PodsError::Missing {
            referenced: request.spec.pod_sets.len(),
            missing,
        })
    }
}

/// Scheduled, unfinished pods that consume this request's capacity (by annotation, in its namespace).
fn consumed(request: &ProvisioningRequest, world: &World) -> u32 {
    let namespace = request.metadata.namespace.as_deref().unwrap_or("");
    let name = request.metadata.name.as_deref().unwrap_or("");
    world
        .pods
        .values()
        .filter(|p| p.metadata.namespace.as_deref() == Some(namespace) && bound_node(p).is_some())
        .filter(|p| {
            p.metadata.annotations.as_ref().is_some_and(|a| {
                [
                    annotation::CONSUME_PROVISIONING_REQUEST,
                    annotation::LEGACY_CONSUME_PROVISIONING_REQUEST,
                ]
                .iter()
                .any(|k| a.get(*k).map(String::as_str) == Some(name))
            })
        })
        .count() as u32
}

/// The pods still to come: the booked pods minus those already consuming.
fn unconsumed(pods: &[PodGroup], mut consumed: u32) -> Vec<PodGroup> {
    pods.iter()
        .map(|(shape, count)| {
            let used = consumed.min(*count);
            consumed -= used;
            (shape.clone(), count - used)
        })
        .collect()
}

/// The node a running (or pending but scheduled) pod holds.
fn bound_node(pod: &Pod) -> Option<&str> {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) || pod.metadata.deletion_timestamp.is_some() {
        return None;
    }
    pod.spec.as_ref()?.node_name.as_deref()
}

fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_none_or(|cs| {
            cs.iter()
                .find(|c| c.type_ == "Ready")
                .is_none_or(|c| c.status == "True")
        })
}

fn condition<'a>(request: &'a ProvisioningRequest, type_: &str) -> Option<&'a Condition> {
    request
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
}

fn is_true(request: &ProvisioningRequest, type_: &str) -> bool {
    condition(request, type_).is_some_and(|c| c.status == "True")
}

/// A parameter holding a number of seconds.
fn parameter_seconds(request: &ProvisioningRequest, name: &str) -> Option<u64> {
    request.spec.parameters.get(name)?.trim().parse().ok()
}

fn render_all(
    templates: &BTreeMap<String, String>,
    request: &ProvisioningRequest,
    group: &str,
) -> BTreeMap<String, String> {
    templates
        .iter()
        .map(|(k, v)| {
            let value = v
                .replace("{request}", name(request))
                .replace("{nodeGroup}", group);
            (k.clone(), value)
        })
        .collect()
}

fn uid(request: &ProvisioningRequest) -> &str {
    request.metadata.uid.as_deref().unwrap_or("")
}

fn name(request: &ProvisioningRequest) -> &str {
    request.metadata.name.as_deref().unwrap_or("")
}

pub fn key_of(request: &ProvisioningRequest) -> Key {
    (
        request.metadata.namespace.clone().unwrap_or_default(),
        request.metadata.name.clone().unwrap_or_default(),
    )
}

fn plus(t: Timestamp, d: Duration) -> Timestamp {
    t.saturating_add(SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX))
        .unwrap_or(t)
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
