//! Many clients writing the same objects at once, with watchers, over real connections: on the
//! served fake (TCP) and on the reference control plane, with the same checks.
//!
//! Each client reads a shared ConfigMap and writes it back with its own marker (optimistic
//! concurrency: a stale read is a 409 Conflict and is not retried), and now and then creates and
//! deletes an object of its own. Watchers of four selections (all, two label selectors, one field
//! selector) watch from before the first write. Afterwards:
//! - no lost update: each shared object holds, for every client, the marker of that client's last
//!   successful write to it;
//! - resourceVersions: every successful write has its own, and each client's increase;
//! - each watcher received exactly the successful writes of its selection, each once, in
//!   resourceVersion order.
//!
//! The size is reduced by default (CI); `TOLLGATE_LOAD_FULL=1` runs 64 clients × 1,000 operations
//! and 20 watchers (`cargo xtask chaos --apiserver`). Both print their figures.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use futures::TryStreamExt;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, DeleteParams, PostParams, WatchEvent, WatchParams};
use rand::{Rng, SeedableRng};

use crate::tcp::{Served, client_from};

#[derive(Clone, Copy, Debug)]
struct Size {
    clients: usize,
    operations: usize,
    watchers: usize,
    shared: usize,
}

const REDUCED: Size = Size {
    clients: 8,
    operations: 60,
    watchers: 8,
    shared: 4,
};

const FULL: Size = Size {
    clients: 64,
    operations: 1000,
    watchers: 20,
    shared: 8,
};

fn size() -> Size {
    match std::env::var_os("TOLLGATE_LOAD_FULL") {
        Some(_) => FULL,
        None => REDUCED,
    }
}

/// How long the watchers may take to catch up once the writes are done (a guard, not a wait).
const CATCH_UP: Duration = Duration::from_secs(120);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Kind {
    Added,
    Modified,
    Deleted,
}

/// One successful write, as the writer saw it.
#[derive(Debug, Clone)]
struct Write {
    kind: Kind,
    name: String,
    team: &'static str,
    /// The resourceVersion the server answered with (none for a delete: its event has its own).
    rv: u64,
}

/// Which events a watcher asks for.
#[derive(Debug, Clone, Copy)]
enum Selection {
    All,
    Team(&'static str),
    Name(&'static str),
}

impl Selection {
    fn of(watcher: usize) -> Self {
        match watcher % 4 {
            0 => Selection::All,
            1 => Selection::Team("a"),
            2 => Selection::Team("b"),
            _ => Selection::Name("shared-0"),
        }
    }

    fn params(self) -> WatchParams {
        let params = WatchParams::default().timeout(290);
        match self {
            // Every object of the test, not the namespace's `kube-root-ca.crt`, which
            // kube-controller-manager writes whenever it gets to it.
            Selection::All => params.labels(LOAD_LABEL),
            Selection::Team(t) => params.labels(&format!("team={t}")),
            Selection::Name(n) => params.fields(&format!("metadata.name={n}")),
        }
    }

    fn selects(self, w: &Write) -> bool {
        match self {
            Selection::All => true,
            Selection::Team(t) => w.team == t,
            Selection::Name(n) => w.name == n,
        }
    }
}

fn team_of_shared(j: usize) -> &'static str {
    if j.is_multiple_of(2) { "a" } else { "b" }
}

/// The label on every object the test writes.
const LOAD_LABEL: &str = "tollgate.dev/load";

fn config_map(name: &str, team: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"team": team, LOAD_LABEL: "yes"}},
        "data": {},
    }))
    .expect("a ConfigMap")
}

fn rv_of(cm: &ConfigMap) -> u64 {
    cm.metadata
        .resource_version
        .as_deref()
        .and_then(|rv| rv.parse().ok())
        .expect("a numeric resourceVersion")
}

/// What one client did.
#[derive(Default)]
struct ClientLog {
    writes: Vec<Write>,
    /// The marker of this client's last successful write to each shared object.
    last_marker: HashMap<String, String>,
    conflicts: usize,
}

async fn client_run(api: Api<ConfigMap>, client: usize, size: Size) -> ClientLog {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(client as u64);
    let mut log = ClientLog::default();
    let key = format!("c{client}");
    let team = if client.is_multiple_of(2) { "a" } else { "b" };
    for op in 0..size.operations {
        let own = format!("own-{client}-{}", op / 10);
        match op % 10 {
            4 => {
                let made = api
                    .create(&PostParams::default(), &config_map(&own, team))
                    .await
                    .unwrap_or_else(|e| panic!("client {client} creating {own}: {e}"));
                log.writes.push(Write {
                    kind: Kind::Added,
                    name: own,
                    team,
                    rv: rv_of(&made),
                });
            }
            9 => {
                api.delete(&own, &DeleteParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("client {client} deleting {own}: {e}"));
                log.writes.push(Write {
                    kind: Kind::Deleted,
                    name: own,
                    team,
                    rv: 0,
                });
            }
            _ => {
                let j = rng.random_range(0..size.shared);
                let name = format!("shared-{j}");
                let mut cm = api
                    .get(&name)
                    .await
                    .unwrap_or_else(|e| panic!("client {client} reading {name}: {e}"));
                let marker = format!("{op}");
                cm.data
                    .get_or_insert_with(Default::default)
                    .insert(key.clone(), marker.clone());
                match api.replace(&name, &PostParams::default(), &cm).await {
                    Ok(written) => {
                        log.writes.push(Write {
                            kind: Kind::Modified,
                            name: name.clone(),
                            team: team_of_shared(j),
                            rv: rv_of(&written),
                        });
                        log.last_marker.insert(name, marker);
                    }
                    Err(kube::Error::Api(s)) if s.code == 409 => log.conflicts += 1,
                    Err(e) => panic!("client {client} writing {name}: {e}"),
                }
            }
        }
    }
    log
}

/// Everything a watcher received: (kind, name, resourceVersion), in order. It resumes from its
/// last resourceVersion when the server ends the stream, and stops once it has seen the last of
/// `sentinels` (the final writes, sent when the clients are done) that its selection includes.
async fn watch_until(
    api: Api<ConfigMap>,
    selection: Selection,
    from: u64,
    mut sentinels: tokio::sync::watch::Receiver<Vec<Write>>,
) -> Vec<(Kind, String, u64)> {
    let mut seen = Vec::new();
    let mut last = from;
    let end = |sentinels: &[Write]| {
        sentinels
            .iter()
            .filter(|w| selection.selects(w))
            .map(|w| w.rv)
            .max()
    };
    loop {
        let stream = api
            .watch(&selection.params(), &last.to_string())
            .await
            .expect("watch starts");
        let mut stream = Box::pin(stream);
        loop {
            if end(&sentinels.borrow()).is_some_and(|end| last >= end) {
                return seen;
            }
            let event = tokio::select! {
                event = stream.try_next() => event.expect("watch stream"),
                changed = sentinels.changed() => {
                    changed.expect("the sentinels are sent");
                    continue;
                }
            };
            let Some(event) = event else { break };
            let (kind, cm) = match event {
                WatchEvent::Added(cm) => (Kind::Added, cm),
                WatchEvent::Modified(cm) => (Kind::Modified, cm),
                WatchEvent::Deleted(cm) => (Kind::Deleted, cm),
                WatchEvent::Bookmark(_) => continue,
                WatchEvent::Error(e) => panic!("watch error: {e:?}"),
            };
            last = rv_of(&cm);
            seen.push((kind, cm.metadata.name.clone().unwrap_or_default(), last));
        }
    }
}

async fn contended_writes(clients: Vec<kube::Client>, target: &str) {
    let size = size();
    assert!(clients.len() > size.clients + size.watchers);
    let admin = clients[0].clone();
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let ns = format!(
        "load-{}-{}",
        std::process::id(),
        N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    let namespace: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": ns}})).expect("ns");
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace");
    let api = |c: &kube::Client| Api::<ConfigMap>::namespaced(c.clone(), &ns);
    let mut start = 0;
    for j in 0..size.shared {
        let made = api(&admin)
            .create(
                &PostParams::default(),
                &config_map(&format!("shared-{j}"), team_of_shared(j)),
            )
            .await
            .expect("shared object");
        start = rv_of(&made);
    }

    let (sentinels_tx, sentinels_rx) = tokio::sync::watch::channel(Vec::new());
    let watchers: Vec<_> = (0..size.watchers)
        .map(|w| {
            let selection = Selection::of(w);
            let api = api(&clients[1 + size.clients + w]);
            tokio::spawn(watch_until(api, selection, start, sentinels_rx.clone()))
        })
        .collect();
    let began = Instant::now();
    let runs: Vec<_> = (0..size.clients)
        .map(|c| tokio::spawn(client_run(api(&clients[1 + c]), c, size)))
        .collect();
    let logs: Vec<ClientLog> = futures::future::try_join_all(runs)
        .await
        .expect("clients finish");
    let writing = began.elapsed();

    // The last writes every selection sees: one object per team and the named one.
    let mut sentinels = Vec::new();
    for team in ["a", "b"] {
        let made = api(&admin)
            .create(
                &PostParams::default(),
                &config_map(&format!("sentinel-{team}"), team),
            )
            .await
            .expect("sentinel");
        sentinels.push(Write {
            kind: Kind::Added,
            name: format!("sentinel-{team}"),
            team,
            rv: rv_of(&made),
        });
    }
    let mut last = api(&admin).get("shared-0").await.expect("shared-0");
    last.data
        .get_or_insert_with(Default::default)
        .insert("sentinel".into(), "1".into());
    let last = api(&admin)
        .replace("shared-0", &PostParams::default(), &last)
        .await
        .expect("sentinel write");
    sentinels.push(Write {
        kind: Kind::Modified,
        name: "shared-0".into(),
        team: team_of_shared(0),
        rv: rv_of(&last),
    });
    sentinels_tx.send_replace(sentinels.clone());
    let received = tokio::time::timeout(CATCH_UP, futures::future::try_join_all(watchers))
        .await
        .expect("every watcher catches up")
        .expect("watchers finish");

    // No lost update.
    for j in 0..size.shared {
        let name = format!("shared-{j}");
        let data = api(&admin)
            .get(&name)
            .await
            .expect("shared object")
            .data
            .unwrap_or_default();
        for (c, log) in logs.iter().enumerate() {
            assert_eq!(
                data.get(&format!("c{c}")),
                log.last_marker.get(&name),
                "{target}: client {c}'s last successful write to {name} is not what {name} holds"
            );
        }
    }
    // Every write has its own resourceVersion, increasing for each client.
    let mut all: Vec<Write> = logs.iter().flat_map(|l| l.writes.clone()).collect();
    for log in &logs {
        let rvs: Vec<u64> = log
            .writes
            .iter()
            .filter(|w| w.kind != Kind::Deleted)
            .map(|w| w.rv)
            .collect();
        assert!(
            rvs.windows(2).all(|p| p[0] < p[1]),
            "{target}: a client's writes went back in resourceVersion: {rvs:?}"
        );
    }
    all.extend(sentinels);
    let mut distinct: Vec<u64> = all
        .iter()
        .filter(|w| w.kind != Kind::Deleted)
        .map(|w| w.rv)
        .collect();
    let written = distinct.len();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        written,
        "{target}: two writes shared a resourceVersion"
    );

    // Each watcher: exactly the writes of its selection, once each, in order.
    let mut delivered = 0;
    for (w, seen) in received.iter().enumerate() {
        let selection = Selection::of(w);
        let rvs: Vec<u64> = seen.iter().map(|e| e.2).collect();
        assert!(
            rvs.windows(2).all(|p| p[0] < p[1]),
            "{target}: watcher {w} ({selection:?}) saw resourceVersions out of order"
        );
        let mut expected: BTreeMap<(Kind, String, u64), usize> = BTreeMap::new();
        let mut expected_deletes: BTreeMap<String, usize> = BTreeMap::new();
        for write in all.iter().filter(|w| selection.selects(w)) {
            match write.kind {
                // A delete's event carries a resourceVersion of its own: matched by name.
                Kind::Deleted => *expected_deletes.entry(write.name.clone()).or_default() += 1,
                kind => {
                    *expected
                        .entry((kind, write.name.clone(), write.rv))
                        .or_default() += 1
                }
            }
        }
        let mut got: BTreeMap<(Kind, String, u64), usize> = BTreeMap::new();
        let mut got_deletes: BTreeMap<String, usize> = BTreeMap::new();
        for (kind, name, rv) in seen {
            match kind {
                Kind::Deleted => *got_deletes.entry(name.clone()).or_default() += 1,
                kind => *got.entry((*kind, name.clone(), *rv)).or_default() += 1,
            }
        }
        assert_eq!(
            got, expected,
            "{target}: watcher {w} ({selection:?}) did not see each write of its selection exactly once"
        );
        assert_eq!(
            got_deletes, expected_deletes,
            "{target}: watcher {w} ({selection:?}) did not see each delete exactly once"
        );
        delivered += seen.len();
    }

    let conflicts: usize = logs.iter().map(|l| l.conflicts).sum();
    let count = |k: Kind| all.iter().filter(|w| w.kind == k).count();
    eprintln!(
        "load on {target}: {} clients x {} operations on {} shared objects, {} watchers: {} updates, {conflicts} conflicts, {} creates, {} deletes in {:.1} s ({:.0} writes/s); {delivered} events delivered, each once, in order; nothing lost",
        size.clients,
        size.operations,
        size.shared,
        size.watchers,
        count(Kind::Modified),
        count(Kind::Added),
        count(Kind::Deleted),
        writing.as_secs_f64(),
        all.len() as f64 / writing.as_secs_f64(),
    );
    namespaces
        .delete(&ns, &DeleteParams::default())
        .await
        .expect("namespace deleted");
}

async fn clients_of(size: Size, make: impl AsyncFn() -> kube::Client) -> Vec<kube::Client> {
    let mut clients = Vec::new();
    for _ in 0..size.clients + size.watchers + 1 {
        clients.push(make().await);
    }
    clients
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contended_writes_lose_nothing_on_the_served_fake() {
    let served = Served::start().await;
    let kubeconfig = served.kubeconfig();
    let clients = clients_of(size(), async || client_from(&kubeconfig).await).await;
    contended_writes(clients, "the served fake").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contended_writes_lose_nothing_on_the_control_plane() {
    let Some(cp) = control_plane::testing::shared().await else {
        return;
    };
    let clients = clients_of(size(), async || {
        cp.client().await.expect("a control plane client")
    })
    .await;
    contended_writes(clients, "the reference control plane").await;
}
