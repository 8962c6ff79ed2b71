//! The reference control plane against the embedded fake, in one run: time to a ready API server
//! (envtest's anchor, measured here), and create and GET throughput through the same kube-rs
//! client. Prints Markdown tables for BENCHMARKS.md. Run with `cargo xtask bench` or
//! `cargo bench -p control-plane --bench control_plane`.

use std::time::{Duration, Instant};

use control_plane::{Binaries, ControlPlane, Options};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

/// Requests per throughput measurement.
const REQUESTS: usize = 500;
/// Concurrent clients in the second measurement.
const CONCURRENCY: usize = 8;

fn cm(name: String) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name),
            ..Default::default()
        },
        data: Some([("key".to_string(), "value".to_string())].into()),
        ..Default::default()
    }
}

/// Creates, then GETs, `REQUESTS` ConfigMaps with `concurrency` requests in flight: per second.
async fn throughput(client: &kube::Client, ns: &str, concurrency: usize) -> (f64, f64) {
    use futures::StreamExt;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let prefix = format!("c{concurrency}-");
    let start = Instant::now();
    futures::stream::iter(0..REQUESTS)
        .map(|i| {
            let api = api.clone();
            let name = format!("{prefix}{i}");
            async move { api.create(&PostParams::default(), &cm(name)).await }
        })
        .buffer_unordered(concurrency)
        .for_each(|r| async move {
            r.expect("create");
        })
        .await;
    let creates = REQUESTS as f64 / start.elapsed().as_secs_f64();
    let start = Instant::now();
    futures::stream::iter(0..REQUESTS)
        .map(|i| {
            let api = api.clone();
            let name = format!("{prefix}{i}");
            async move { api.get(&name).await }
        })
        .buffer_unordered(concurrency)
        .for_each(|r| async move {
            r.expect("get");
        })
        .await;
    let gets = REQUESTS as f64 / start.elapsed().as_secs_f64();
    (creates, gets)
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let binaries = Binaries::locate();
    if !control_plane::testing::available(&binaries) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");

    // Start-up: the fake in-process and served on TCP, envtest's pair, and the whole plane.
    let start = Instant::now();
    let fake = fake_apiserver::FakeApiServer::builder()
        .build()
        .expect("fake");
    let fake_built = start.elapsed();
    let tcp = fake
        .serve_tcp("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve");
    let fake_served = start.elapsed();

    let mut envtest = Options::new(dir.path().join("envtest"));
    envtest.controllers = false;
    let cp = ControlPlane::start(&binaries, envtest)
        .await
        .expect("envtest-style start");
    let envtest_ready = cp.ready_after();
    cp.stop();
    let full = ControlPlane::start(
        &binaries,
        Options::new(dir.path().join("full")).for_fake_nodes(),
    )
    .await
    .expect("full start");

    println!("| world | ready after |");
    println!("| --- | --- |");
    println!("| embedded fake, in-process | {} |", ms(fake_built));
    println!("| served fake, on loopback TCP | {} |", ms(fake_served));
    println!(
        "| reference control plane: etcd + kube-apiserver (envtest's pair), /readyz ok | {} |",
        ms(envtest_ready)
    );
    println!(
        "| reference control plane: + kube-controller-manager + kube-scheduler, `default` ServiceAccount made | {} |",
        ms(full.ready_after())
    );

    // Throughput through the same kube-rs client code; only the transport differs.
    let kubeconfig = dir.path().join("fake.kubeconfig");
    tcp.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let served = control_plane::client_for(&kubeconfig)
        .await
        .expect("client");
    let real = full.client().await.expect("client");
    println!();
    println!("| server, client | in flight | creates/s | GETs/s |");
    println!("| --- | --- | --- | --- |");
    let worlds = [
        (
            "embedded fake, in-process kube::Client",
            fake.client(),
            "in-process",
        ),
        (
            "served fake, kube::Client over HTTP",
            served.clone(),
            "served",
        ),
        (
            "kube-apiserver, kube::Client over HTTPS",
            real.clone(),
            "real",
        ),
    ];
    for (_, client, ns) in &worlds {
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        let namespace = serde_json::from_value(serde_json::json!({"metadata": {"name": ns}}))
            .expect("namespace");
        namespaces
            .create(&PostParams::default(), &namespace)
            .await
            .expect("namespace");
    }
    for concurrency in [1, CONCURRENCY] {
        for (name, client, ns) in &worlds {
            let (c, g) = throughput(client, ns, concurrency).await;
            println!("| {name} | {concurrency} | {c:.0} | {g:.0} |");
        }
    }
    full.stop();
}
