//! The object store: every object, the one global resourceVersion, the bounded change history that
//! watches resume from, and the indexes the garbage collector needs. Plain data and functions, no
//! IO: the HTTP layer calls these under one lock, so every write is atomic and totally ordered.

mod admit;
mod apply;
mod lifecycle;
mod observe;
mod read;
mod scale;
mod stored;
mod subresources;
mod watch;
pub mod webhook_points;
mod write;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, OnceLock};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::catalog::{Catalog, ResourceType};
use crate::clock::Clock;
use crate::semantics::selectors::{FieldSelector, LabelSelector};
use stored::Stored;

pub use apply::read_applied;
pub use observe::{ChangeFeed, Observed};
pub use read::ListPage;
pub use subresources::CsrWrite;
pub use watch::{WatchInit, WatchStart, bookmark as watch_bookmark};
pub use write::Deleted;

/// Where one object lives: its storage (shared by all versions of a group/resource), namespace
/// ("" for cluster-scoped kinds) and name. Ordered like etcd keys (`<storage>/<namespace>/<name>`,
/// byte by byte), so lists come out sorted as on the real server: namespace `a-b` before `a`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjKey {
    pub storage: Arc<str>,
    pub namespace: String,
    pub name: String,
}

impl Ord for ObjKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let path = |k: &'_ ObjKey| {
            let (ns, name) = (k.namespace.as_bytes(), k.name.as_bytes());
            ns.iter()
                .chain(b"/")
                .chain(name)
                .copied()
                .collect::<Vec<u8>>()
        };
        self.storage.cmp(&other.storage).then_with(|| {
            if self.namespace == other.namespace {
                self.name.cmp(&other.name)
            } else {
                path(self).cmp(&path(other))
            }
        })
    }
}

impl PartialOrd for ObjKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeType {
    Added,
    Modified,
    Deleted,
}

impl ChangeType {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeType::Added => "ADDED",
            ChangeType::Modified => "MODIFIED",
            ChangeType::Deleted => "DELETED",
        }
    }
}

/// One committed change, as watches see it. `old` is the previous state, so that a watch with a
/// selector can tell an object entering or leaving its selection.
#[derive(Debug)]
pub struct Change {
    pub rv: u64,
    pub kind: ChangeType,
    pub key: ObjKey,
    pub object: Arc<Value>,
    pub old: Option<Arc<Value>>,
    /// The object serialised for the first version a watcher asked for: with many watchers of one
    /// kind, each change is rendered and serialised once, not once per watcher.
    rendered: OnceLock<Rendered>,
}

#[derive(Debug)]
struct Rendered {
    version: String,
    json: bytes::Bytes,
    /// Rendering changed nothing: `json` is also the stored object's JSON.
    verbatim: bool,
}

impl Change {
    pub fn new(
        rv: u64,
        kind: ChangeType,
        key: ObjKey,
        object: Arc<Value>,
        old: Option<Arc<Value>>,
    ) -> Self {
        Change {
            rv,
            kind,
            key,
            object,
            old,
            rendered: OnceLock::new(),
        }
    }

    /// The object as JSON for readers of `rt`: the document kube-apiserver would write (Go's
    /// field order, a trailing newline).
    pub fn json_for(&self, rt: &ResourceType) -> bytes::Bytes {
        let version = rt.api_version();
        if let Some(r) = self.rendered.get()
            && r.version == version
        {
            return r.json.clone();
        }
        let rendered = render_ref(rt, &self.object);
        let verbatim = matches!(rendered, std::borrow::Cow::Borrowed(_));
        let json = bytes::Bytes::from(crate::http::encode::document(rendered.as_ref()));
        let _ = self.rendered.set(Rendered {
            version,
            json: json.clone(),
            verbatim,
        });
        json
    }

    /// The stored object's JSON, if a reader's rendering already made it.
    fn stored_json(&self) -> Option<bytes::Bytes> {
        self.rendered
            .get()
            .filter(|r| r.verbatim)
            .map(|r| r.json.clone())
    }
}

/// What a write answers with: the change it committed, whose JSON its watchers share, or an
/// object it did not store (a dry run, an update that changed nothing).
#[derive(Debug)]
pub enum Answer {
    Committed(Arc<Change>),
    Uncommitted(Value),
}

impl Answer {
    /// The answer's body for a client of `rt`: rendered and serialised once per change.
    pub fn json(&self, rt: &ResourceType) -> bytes::Bytes {
        match self {
            Answer::Committed(change) => change.json_for(rt),
            Answer::Uncommitted(v) => bytes::Bytes::from(crate::http::encode::document(v)),
        }
    }

    pub fn into_value(self, rt: &ResourceType) -> Value {
        match self {
            Answer::Committed(change) => render(rt, &change.object),
            Answer::Uncommitted(v) => v,
        }
    }
}

/// Which part of an object a write may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    Main,
    Status,
    /// A namespace's `/finalize`: writes only `spec.finalizers`.
    Finalize,
    /// `/scale`: an autoscaling/v1 Scale view of the replicas.
    Scale,
}

#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    pub dry_run: bool,
    pub field_validation: FieldValidation,
    /// Who writes (`fieldManager`, or the client's user agent): recorded in `metadata.managedFields`.
    /// Empty: not recorded (the server's own writes).
    pub field_manager: String,
    /// Who asks, for the answers that depend on it (access reviews); `None` is the admin.
    pub requester: Option<crate::semantics::rbac::User>,
}

/// What the server does with fields a kind does not have (`fieldValidation`). They are dropped in
/// every case, as the real server drops what its types cannot hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    /// The default: a `Warning` header per unknown field.
    #[default]
    Warn,
    /// Refuse the request.
    Strict,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    Background,
    Foreground,
    Orphan,
}

#[derive(Debug, Clone, Default)]
pub struct DeleteOptions {
    pub dry_run: bool,
    pub propagation: Option<Propagation>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    /// The `resourceVersion` asked for (not "0"): a list may not be older than it.
    pub resource_version: Option<u64>,
    /// `resourceVersionMatch=Exact`: the collection as it was at exactly `resource_version`.
    pub exact: bool,
}

/// Tunables of a store.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// How many changes are kept for watches to resume from; older resourceVersions get 410 Expired.
    pub history_limit: usize,
    /// Seed of the generator behind uids and generateName suffixes.
    pub seed: u64,
    /// How many undelivered events a watcher may fall behind before it is closed.
    pub watcher_buffer: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            history_limit: 10_000,
            seed: 0x7011_6a7e,
            watcher_buffer: 10_000,
        }
    }
}

pub struct Store {
    catalog: Catalog,
    clock: Clock,
    config: StoreConfig,
    objects: BTreeMap<ObjKey, Stored>,
    rv: u64,
    history: VecDeque<Arc<Change>>,
    /// Changes up to and including this resourceVersion have left the history.
    compacted_rv: u64,
    /// Open watches by storage. Ordered, not hashed: closing them all wakes their clients in
    /// this order, and a hash map's order changes from one process to the next, and with it
    /// which request of a seeded run draws which fault.
    watchers: BTreeMap<Arc<str>, Vec<mpsc::Sender<Arc<Change>>>>,
    /// Subscribers to every change ([`Store::observe`]).
    observers: Vec<mpsc::UnboundedSender<Observed>>,
    uids: HashMap<String, ObjKey>,
    /// owner uid -> objects naming it in ownerReferences.
    dependents: HashMap<String, BTreeSet<ObjKey>>,
    /// Objects with lifecycle work left: terminating namespaces and CRDs, owners being deleted in
    /// the foreground or orphaning their dependents.
    pending: BTreeSet<ObjKey>,
    /// Owners that have just gone: their dependents are checked by the garbage collector.
    gone_owners: VecDeque<String>,
    rng: ChaCha8Rng,
    next_cluster_ip: u32,
    /// Warnings for the request being served (unknown fields), taken by the HTTP layer.
    warnings: Vec<String>,
    /// What the bootstrap data, the root CA publisher and the token signer keep.
    extras: subresources::Extras,
    /// The admission of the request whose write runs now (webhook_points.rs); `None` for the
    /// server's own writes.
    admission: Option<webhook_points::AdmissionPass>,
    /// The server's clock, while a request's write runs on the stopped clock of its admission.
    running_clock: Option<Clock>,
}

impl Store {
    pub fn new(clock: Clock, config: StoreConfig) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(config.seed);
        let extras = subresources::Extras::new(config.seed);
        let mut store = Store {
            catalog: Catalog::builtin(),
            clock,
            config,
            objects: BTreeMap::new(),
            rv: 0,
            history: VecDeque::new(),
            compacted_rv: 0,
            watchers: BTreeMap::new(),
            observers: Vec::new(),
            uids: HashMap::new(),
            dependents: HashMap::new(),
            pending: BTreeSet::new(),
            gone_owners: VecDeque::new(),
            rng,
            next_cluster_ip: 1,
            warnings: Vec::new(),
            extras,
            admission: None,
            running_clock: None,
        };
        store.bootstrap();
        store
    }

    /// The warnings of the last request, for its `Warning` headers.
    pub fn take_warnings(&mut self) -> Vec<String> {
        std::mem::take(&mut self.warnings)
    }

    pub fn catalog(&self) -> &Catalog {
        &self.catalog
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    pub fn resource_version(&self) -> u64 {
        self.rv
    }

    /// What a fresh cluster holds: the default namespaces (each with its default ServiceAccount) and
    /// the `kubernetes` Service.
    fn bootstrap(&mut self) {
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            self.bootstrap_object(
                "",
                "v1",
                "namespaces",
                "",
                json!({"metadata": {"name": ns}}),
            );
        }
        self.bootstrap_cluster_objects();
        self.bootstrap_object(
            "",
            "v1",
            "services",
            "default",
            json!({
                "metadata": {"name": "kubernetes", "labels": {"component": "apiserver", "provider": "kubernetes"}},
                "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}]},
            }),
        );
    }

    fn bootstrap_object(&mut self, group: &str, version: &str, plural: &str, ns: &str, obj: Value) {
        let Some(rt) = self.catalog.lookup(group, version, plural) else {
            tracing::error!(plural, "built-in kind missing from the catalogue");
            return;
        };
        if let Err(e) = self.create(&rt, ns, obj, &WriteOptions::default()) {
            tracing::error!(%e, plural, "could not create a default object");
        }
    }

    fn new_uid(&mut self) -> String {
        crate::semantics::names::uuid_from(self.rng.random())
    }

    fn key(rt: &ResourceType, ns: &str, name: &str) -> ObjKey {
        ObjKey {
            storage: rt.storage.clone(),
            namespace: if rt.namespaced {
                ns.to_string()
            } else {
                String::new()
            },
            name: name.to_string(),
        }
    }

    /// Store `obj` under `key` as a new resourceVersion and tell the watchers.
    fn commit(&mut self, key: ObjKey, obj: Value, kind: ChangeType) -> Arc<Value> {
        self.commit_change(key, obj, kind).object.clone()
    }

    /// [`Store::commit`], returning the change as the watchers got it.
    fn commit_change(&mut self, key: ObjKey, mut obj: Value, kind: ChangeType) -> Arc<Change> {
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        let obj = Arc::new(obj);
        let old = match kind {
            ChangeType::Deleted => self.objects.remove(&key),
            _ => self.objects.insert(key.clone(), Stored::Live(obj.clone())),
        }
        .map(Stored::into_object);
        self.reindex(
            &key,
            old.as_deref(),
            (kind != ChangeType::Deleted).then_some(&*obj),
        );
        let change = Arc::new(Change::new(self.rv, kind, key, obj, old));
        self.record(change.clone());
        change
    }

    fn record(&mut self, change: Arc<Change>) {
        if let Some(list) = self.watchers.get_mut(&change.key.storage) {
            list.retain(|tx| tx.try_send(change.clone()).is_ok());
        }
        self.tell_observers(&change);
        self.history.push_back(change);
        while self.history.len() > self.config.history_limit {
            if let Some(dropped) = self.history.pop_front() {
                self.compacted_rv = dropped.rv;
                if let Some(stored) = self.objects.get_mut(&dropped.key) {
                    stored.quiet_if_unchanged(&dropped.object, dropped.stored_json());
                }
            }
        }
    }

    /// Keep the uid and owner indexes in step with a change from `old` to `new`.
    fn reindex(&mut self, key: &ObjKey, old: Option<&Value>, new: Option<&Value>) {
        let owners = |v: Option<&Value>| -> BTreeSet<String> {
            v.and_then(|v| v["metadata"]["ownerReferences"].as_array())
                .map(|refs| {
                    refs.iter()
                        .filter_map(|r| r["uid"].as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (before, after) = (owners(old), owners(new));
        for uid in before.difference(&after) {
            if let Some(set) = self.dependents.get_mut(uid) {
                set.remove(key);
                if set.is_empty() {
                    self.dependents.remove(uid);
                }
            }
        }
        for uid in after.difference(&before) {
            self.dependents
                .entry(uid.clone())
                .or_default()
                .insert(key.clone());
        }
        if let Some(uid) = old.and_then(|o| o["metadata"]["uid"].as_str())
            && new.is_none()
        {
            self.uids.remove(uid);
            self.gone_owners.push_back(uid.to_string());
            self.pending.remove(key);
        }
        if let Some(uid) = new.and_then(|o| o["metadata"]["uid"].as_str())
            && self.uids.get(uid) != Some(key)
        {
            self.uids.insert(uid.to_string(), key.clone());
        }
    }

    /// A 5-character generateName suffix from the store's deterministic generator.
    fn name_suffix(&mut self) -> String {
        let rng = &mut self.rng;
        crate::semantics::names::generate_name_suffix(&mut |n| rng.random_range(0..n))
    }
}

pub use crate::catalog::render::{render, render_ref};
pub(crate) use apply::subresource_name;
