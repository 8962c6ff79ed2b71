//! Watch latency: from a write to its arrival at 100 watchers, on the served fake and on
//! kube-apiserver in the same run. Prints Markdown tables for BENCHMARKS.md. Run with
//! `cargo xtask bench` or `cargo bench -p control-plane --bench watch_latency`.
//!
//! Two kinds of watcher, so that the servers' own part shows apart from the clients':
//! - raw: the watch response read line by line through kube-rs's HTTP stack, nothing decoded but
//!   the object's name, so an arrival is the line reaching the client's socket;
//! - kube-rs: `Api::watch`, timed after kube-rs has decoded the event (what a user's code sees).
//!
//! On the fake the commit instant of each write is known exactly (a change feed reports the
//! server's clock at commit, under the store's lock), so the server's fan-out is also given from
//! commit to the last raw watcher's arrival. kube-apiserver does not expose its commit instant; for
//! both servers the spread (first to last raw arrival of one write) is the fan-out visible outside.
//!
//! The fake runs on its own two-thread runtime, as the `fake-apiserver` binary would; the clients
//! on another. kube-apiserver runs without kube-controller-manager and kube-scheduler (envtest's
//! pair) and is skipped, with the reason, when its binaries are not built.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use control_plane::{Binaries, ControlPlane, Options};
use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ObjectMeta, PostParams, WatchEvent, WatchParams};

const WATCHERS: usize = 100;
const WRITES: usize = 200;
const WRITE_EVERY: Duration = Duration::from_millis(5);
/// Rounds per server and kind of watcher; a round is one namespace, 100 watchers, 200 writes.
const ROUNDS: usize = 3;

#[derive(Clone, Copy, PartialEq)]
enum Watcher {
    Raw,
    KubeRs,
}

/// One round: when each write started, and when each watcher saw each write (by write index).
struct Round {
    started: Vec<Instant>,
    arrivals: Vec<(usize, Instant)>,
    /// The fake's commit instant of each write, by name.
    commits: HashMap<String, Instant>,
}

/// The write index in a name `w<i>`.
fn index(name: &str) -> Option<usize> {
    name.strip_prefix('w')?.parse().ok()
}

/// The object's name in a raw watch line, without decoding the JSON: the first `"name":"`
/// is metadata.name (a ConfigMap's metadata comes before its data, and names nothing before).
fn raw_name(line: &str) -> Option<&str> {
    let at = line.find("\"name\":\"")? + 8;
    let rest = &line[at..];
    Some(&rest[..rest.find('"')?])
}

async fn round(client: &kube::Client, ns: &str, kind: Watcher) -> Round {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(ns.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces
        .create(&PostParams::default(), &namespace)
        .await
        .expect("namespace");
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let arrivals = Arc::new(Mutex::new(Vec::with_capacity(WATCHERS * WRITES)));
    let mut tasks = Vec::new();
    for _ in 0..WATCHERS {
        let arrivals = arrivals.clone();
        // Each task returns once its watch is open, and hands back the rest as a future.
        let task = match kind {
            Watcher::Raw => {
                let request = http::Request::get(format!(
                    "/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion=0&timeoutSeconds=290"
                ))
                .body(Vec::new())
                .expect("request");
                let body = client.request_stream(request).await.expect("raw watch");
                tokio::spawn(async move {
                    let mut lines = body.lines();
                    let mut seen = 0;
                    while let Some(line) = lines.next().await {
                        let line = line.expect("line");
                        let now = Instant::now();
                        if let Some(i) = raw_name(&line).and_then(index) {
                            arrivals.lock().expect("lock").push((i, now));
                            seen += 1;
                            if seen == WRITES {
                                return;
                            }
                        }
                    }
                    panic!("raw watch ended after {seen} events");
                })
            }
            Watcher::KubeRs => {
                let stream = api
                    .watch(&WatchParams::default().timeout(290), "0")
                    .await
                    .expect("watch");
                tokio::spawn(async move {
                    let mut stream = stream.boxed();
                    let mut seen = 0;
                    while let Some(ev) = stream.try_next().await.expect("event") {
                        let now = Instant::now();
                        if let WatchEvent::Added(cm) = ev
                            && let Some(i) = cm.metadata.name.as_deref().and_then(index)
                        {
                            arrivals.lock().expect("lock").push((i, now));
                            seen += 1;
                            if seen == WRITES {
                                return;
                            }
                        }
                    }
                    panic!("watch ended after {seen} events");
                })
            }
        };
        tasks.push(task);
    }
    let mut started = Vec::with_capacity(WRITES);
    let mut next = tokio::time::Instant::now();
    for i in 0..WRITES {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("w{i}")),
                ..Default::default()
            },
            data: Some([("t".to_string(), i.to_string())].into()),
            ..Default::default()
        };
        started.push(Instant::now());
        api.create(&PostParams::default(), &cm)
            .await
            .expect("create");
        next += WRITE_EVERY;
        tokio::time::sleep_until(next).await;
    }
    for t in tasks {
        t.await.expect("watcher");
    }
    let arrivals = std::mem::take(&mut *arrivals.lock().expect("lock"));
    Round {
        started,
        arrivals,
        commits: HashMap::new(),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// `p50 / p99 / max` of some durations.
fn summary(mut samples: Vec<Duration>) -> String {
    samples.sort();
    let ms = |d: Duration| format!("{:.2}", d.as_secs_f64() * 1000.0);
    format!(
        "{} / {} / {} ms",
        ms(percentile(&samples, 0.5)),
        ms(percentile(&samples, 0.99)),
        ms(percentile(&samples, 1.0))
    )
}

/// Each write's first and last arrival.
fn first_last(r: &Round) -> Vec<(Instant, Instant)> {
    let mut out = vec![None::<(Instant, Instant)>; r.started.len()];
    for &(i, at) in &r.arrivals {
        let e = out[i].get_or_insert((at, at));
        e.0 = e.0.min(at);
        e.1 = e.1.max(at);
    }
    out.into_iter().flatten().collect()
}

/// Prints one server's rows: `raw` and `kube` are its rounds of each kind of watcher.
fn report(server: &str, raw: &[Round], kube: &[Round]) {
    let all = |rounds: &[Round]| -> Vec<Duration> {
        rounds
            .iter()
            .flat_map(|r| r.arrivals.iter().map(|&(i, at)| at - r.started[i]))
            .collect()
    };
    println!(
        "| {server} | write to arrival, kube-rs watchers (decoded) | {} |",
        summary(all(kube))
    );
    println!(
        "| {server} | write to arrival, raw watchers (line read) | {} |",
        summary(all(raw))
    );
    let spread = raw
        .iter()
        .flat_map(|r| first_last(r).into_iter().map(|(a, b)| b - a))
        .collect();
    println!(
        "| {server} | fan-out spread, first to last raw watcher of a write | {} |",
        summary(spread)
    );
    if raw.iter().all(|r| !r.commits.is_empty()) {
        let mut to_commit = Vec::new();
        let mut to_last = Vec::new();
        let mut to_each = Vec::new();
        for r in raw {
            let commit = |i: usize| r.commits.get(&format!("w{i}")).copied();
            for (i, &start) in r.started.iter().enumerate() {
                if let Some(c) = commit(i) {
                    to_commit.push(c.saturating_duration_since(start));
                }
            }
            let mut last = vec![None::<Instant>; r.started.len()];
            for &(i, at) in &r.arrivals {
                if let Some(c) = commit(i) {
                    to_each.push(at.saturating_duration_since(c));
                }
                last[i] = Some(last[i].map_or(at, |l: Instant| l.max(at)));
            }
            for (i, l) in last.into_iter().enumerate() {
                if let (Some(l), Some(c)) = (l, commit(i)) {
                    to_last.push(l.saturating_duration_since(c));
                }
            }
        }
        println!(
            "| {server} | write to commit (request in, stored) | {} |",
            summary(to_commit)
        );
        println!(
            "| {server} | commit to arrival, raw watchers | {} |",
            summary(to_each)
        );
        println!(
            "| {server} | commit to last raw watcher's arrival (server fan-out) | {} |",
            summary(to_last)
        );
    }
}

/// Rounds of both kinds against one server. `observe` takes the commit instants of a round's
/// writes, where the server can say.
async fn rounds(
    client: &kube::Client,
    prefix: &str,
    observe: impl Fn(&mut Round),
) -> (Vec<Round>, Vec<Round>) {
    let (mut raw, mut kube) = (Vec::new(), Vec::new());
    for n in 0..ROUNDS {
        let mut r = round(client, &format!("{prefix}-raw-{n}"), Watcher::Raw).await;
        observe(&mut r);
        raw.push(r);
        let mut r = round(client, &format!("{prefix}-kube-{n}"), Watcher::KubeRs).await;
        observe(&mut r);
        kube.push(r);
    }
    (raw, kube)
}

fn main() {
    // The fake on its own runtime, as its binary runs it.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("fake-apiserver")
        .enable_all()
        .build()
        .expect("server runtime");
    let (fake, tcp) = server_rt.block_on(async {
        let fake = fake_apiserver::FakeApiServer::builder()
            .build()
            .expect("fake");
        let tcp = fake
            .serve_tcp("127.0.0.1:0".parse().expect("addr"))
            .await
            .expect("serve");
        (fake, tcp)
    });
    let clients_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("client runtime");
    clients_rt.block_on(async {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("fake.kubeconfig");
        tcp.write_kubeconfig(&kubeconfig).expect("kubeconfig");
        let served = control_plane::client_for(&kubeconfig)
            .await
            .expect("client");

        // The feed's times are the server's clock: its start wall time plus the tokio instant
        // elapsed since its start, which is real time here.
        let feed = Mutex::new(fake.observe());
        let (anchor_wall, anchor_instant) = fake.clock().anchor();
        let anchor_instant = anchor_instant.into_std();
        let observe = |r: &mut Round| {
            for o in feed.lock().expect("feed").drain() {
                if o.change != fake_apiserver::ChangeType::Added {
                    continue;
                }
                let Some(name) = o.object["metadata"]["name"].as_str() else {
                    continue;
                };
                let since = o.time.duration_since(anchor_wall);
                let Ok(since) = Duration::try_from(since) else {
                    continue;
                };
                r.commits.insert(name.to_string(), anchor_instant + since);
            }
        };

        println!(
            "{WATCHERS} watchers of one namespace, {WRITES} ConfigMap creates one every {} ms, \
             {ROUNDS} rounds per row; p50 / p99 / max",
            WRITE_EVERY.as_millis()
        );
        println!();
        println!("| server | measurement | p50 / p99 / max |");
        println!("| --- | --- | --- |");
        let (raw, kube) = rounds(&served, "fake", observe).await;
        report("served fake, HTTP", &raw, &kube);

        let binaries = Binaries::locate();
        if !control_plane::testing::available(&binaries) {
            return;
        }
        let mut options = Options::new(dir.path().join("envtest"));
        options.controllers = false;
        let cp = ControlPlane::start(&binaries, options)
            .await
            .expect("control plane");
        let real = cp.client().await.expect("client");
        let (raw, kube) = rounds(&real, "real", |_| {}).await;
        report("kube-apiserver, HTTPS", &raw, &kube);
        cp.stop();
    });
    drop(tcp);
    drop(fake);
}
