//! Speed of the fake API server (run with `cargo xtask bench`). Prints a Markdown table for
//! BENCHMARKS.md. Real time, a multi-threaded runtime, kube-rs clients, as a user would run it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fake_apiserver::FakeApiServer;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ObjectMeta, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::{Value, json};

// The tests' admission webhook: HTTPS on loopback with a certificate of its own.
#[path = "../tests/api/webhook_server.rs"]
#[allow(dead_code)]
mod webhook_server;

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1000.0)
}

async fn tcp_client(tcp: &fake_apiserver::TcpServer) -> kube::Client {
    let kc = Kubeconfig::from_yaml(&tcp.kubeconfig()).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .expect("config");
    kube::Client::try_from(config).expect("client")
}

/// Builder to a client that has answered its first request.
async fn startup() -> (Duration, Duration) {
    let mut samples = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let server = FakeApiServer::builder().build().expect("server");
        let ns: Api<Namespace> = Api::all(server.client());
        ns.get("default").await.expect("first get");
        samples.push(t.elapsed());
    }
    samples.sort();
    (percentile(&samples, 0.5), percentile(&samples, 0.99))
}

/// Requests per second from `workers` concurrent kube-rs clients over TCP for `window`.
async fn throughput(client: &kube::Client, workers: usize, window: Duration, create: bool) -> f64 {
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + window;
    let mut tasks = Vec::new();
    for w in 0..workers {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let done = done.clone();
        tasks.push(tokio::spawn(async move {
            let mut i = 0u64;
            while Instant::now() < deadline {
                if create {
                    let cm = ConfigMap {
                        metadata: ObjectMeta {
                            name: Some(format!("bench-{w}-{i}")),
                            ..Default::default()
                        },
                        ..Default::default()
                    };
                    api.create(&PostParams::default(), &cm)
                        .await
                        .expect("create");
                } else {
                    api.get("target").await.expect("get");
                }
                i += 1;
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for t in tasks {
        t.await.expect("worker");
    }
    done.load(Ordering::Relaxed) as f64 / window.as_secs_f64()
}

/// From a write to its arrival at each of `watchers` kube-rs watch streams.
async fn watch_latency(
    client: &kube::Client,
    ns: &str,
    watchers: usize,
    writes: usize,
) -> (Duration, Duration, Duration) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let start = Instant::now();
    let arrivals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel(watchers);
    for _ in 0..watchers {
        let api = api.clone();
        let arrivals = arrivals.clone();
        let ready = ready_tx.clone();
        tasks.push(tokio::spawn(async move {
            let stream = api
                .watch(&WatchParams::default().timeout(290), "0")
                .await
                .expect("watch");
            let _ = ready.send(()).await;
            let mut stream = stream.boxed();
            let mut seen = 0;
            while let Some(ev) = stream.try_next().await.expect("event") {
                if let WatchEvent::Added(cm) = ev {
                    let sent: u128 = cm
                        .data
                        .and_then(|d| d.get("t").cloned())
                        .and_then(|t| t.parse().ok())
                        .unwrap_or(0);
                    let now = start.elapsed().as_micros();
                    arrivals
                        .lock()
                        .expect("lock")
                        .push(Duration::from_micros((now.saturating_sub(sent)) as u64));
                    seen += 1;
                    if seen == writes {
                        return;
                    }
                }
            }
        }));
    }
    for _ in 0..watchers {
        ready_rx.recv().await;
    }
    for i in 0..writes {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("w{i}")),
                ..Default::default()
            },
            data: Some([("t".to_string(), start.elapsed().as_micros().to_string())].into()),
            ..Default::default()
        };
        api.create(&PostParams::default(), &cm)
            .await
            .expect("create");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for t in tasks {
        t.await.expect("watcher");
    }
    let mut all = arrivals.lock().expect("lock").clone();
    all.sort();
    (
        percentile(&all, 0.5),
        percentile(&all, 0.99),
        percentile(&all, 1.0),
    )
}

/// Sequential creates of ConfigMaps, in-process: `hooked` ones go through a mutating webhook on
/// HTTPS loopback (a JSONPatch adding a label), the others through no webhook. What a call to
/// a webhook adds to a write is the difference.
async fn webhook_creates(server: &FakeApiServer, samples: usize) -> (Vec<Duration>, Vec<Duration>) {
    let ops = json!([{"op": "add", "path": "/metadata/labels/mutated", "value": "yes"}]);
    let hook = webhook_server::start(Arc::new(move |_: &Value| {
        Ok(webhook_server::patched(ops.clone()))
    }))
    .await;
    let config: k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration =
        serde_json::from_value(json!({
            "metadata": {"name": "bench"},
            "webhooks": [{
                "name": "bench.webhooks.tollgate.dev",
                "clientConfig": hook.client_config("/mutate"),
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                           "resources": ["configmaps"]}],
                "objectSelector": {"matchLabels": {"hooked": "yes"}},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }],
        }))
        .expect("a webhook configuration");
    Api::all(server.client())
        .create(&PostParams::default(), &config)
        .await
        .expect("the webhook configuration");
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    let timed = |hooked: bool, i: usize| {
        let cms = cms.clone();
        async move {
            let cm: ConfigMap = serde_json::from_value(json!({"metadata": {
                "name": format!("webhook-{hooked}-{i}"),
                "labels": {"hooked": if hooked { "yes" } else { "no" }}}}))
            .expect("a ConfigMap");
            let t = Instant::now();
            let made = cms
                .create(&PostParams::default(), &cm)
                .await
                .expect("create");
            let took = t.elapsed();
            assert_eq!(
                made.metadata
                    .labels
                    .unwrap_or_default()
                    .contains_key("mutated"),
                hooked,
                "the webhook mutates the hooked ConfigMaps only"
            );
            took
        }
    };
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for i in 0..samples {
        with.push(timed(true, i).await);
        without.push(timed(false, i).await);
    }
    with.sort();
    without.sort();
    (with, without)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (start_p50, start_p99) = startup().await;

        let server = FakeApiServer::builder().build().expect("server");
        let tcp = server
            .serve_tcp("127.0.0.1:0".parse().expect("addr"))
            .await
            .expect("tcp");
        let client = tcp_client(&tcp).await;
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
        let target = ConfigMap {
            metadata: ObjectMeta {
                name: Some("target".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        cms.create(&PostParams::default(), &target)
            .await
            .expect("target");
        let gets = throughput(&client, 16, Duration::from_secs(3), false).await;
        let creates = throughput(&client, 16, Duration::from_secs(3), true).await;

        let ns: Api<Namespace> = Api::all(client.clone());
        for name in ["watched-tcp", "watched-in-process"] {
            let watched = Namespace {
                metadata: ObjectMeta {
                    name: Some(name.into()),
                    ..Default::default()
                },
                ..Default::default()
            };
            ns.create(&PostParams::default(), &watched)
                .await
                .expect("namespace");
        }
        let (w50, w99, wmax) = watch_latency(&client, "watched-tcp", 100, 200).await;
        let (i50, i99, imax) =
            watch_latency(&server.client(), "watched-in-process", 100, 200).await;

        let (hooked, plain) = webhook_creates(&server, 500).await;

        println!("| measurement | result |");
        println!("| --- | --- |");
        println!(
            "| builder to first answered request (in-process), p50 | {} |",
            ms(start_p50)
        );
        println!(
            "| builder to first answered request (in-process), p99 | {} |",
            ms(start_p99)
        );
        println!("| GETs per second, kube-rs over TCP loopback, 16 concurrent | {gets:.0} |");
        println!("| creates per second, kube-rs over TCP loopback, 16 concurrent | {creates:.0} |");
        println!(
            "| write to arrival at 100 kube-rs watchers over TCP, p50 | {} |",
            ms(w50)
        );
        println!(
            "| write to arrival at 100 kube-rs watchers over TCP, p99 | {} |",
            ms(w99)
        );
        println!(
            "| write to arrival at 100 kube-rs watchers over TCP, max | {} |",
            ms(wmax)
        );
        println!(
            "| write to arrival at 100 kube-rs watchers in-process, p50 | {} |",
            ms(i50)
        );
        println!(
            "| write to arrival at 100 kube-rs watchers in-process, p99 | {} |",
            ms(i99)
        );
        println!(
            "| write to arrival at 100 kube-rs watchers in-process, max | {} |",
            ms(imax)
        );
        let rows = [
            ("through a mutating webhook on HTTPS loopback", &hooked),
            ("with no webhook", &plain),
        ];
        for (what, sorted) in rows {
            for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
                println!(
                    "| a create (in-process) {what}, {name} | {} |",
                    ms(percentile(sorted, p))
                );
            }
        }
    });
}
