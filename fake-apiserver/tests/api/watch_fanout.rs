//! Many watchers of one kind: each gets every event in order, and a watch ends with its client.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};

use crate::common::{cm, server};

#[tokio::test(start_paused = true)]
async fn a_watch_whose_client_went_away_is_released_at_once() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let stream = cms
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch");
    assert_eq!(s.watcher_count(), 1);
    drop(stream);
    // No time passes and nothing is written: the body went with the client, and the watch with it.
    assert_eq!(s.watcher_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn every_watcher_gets_every_event_in_order() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let rv = s.resource_version().to_string();
    let mut watchers = Vec::new();
    for _ in 0..20 {
        let stream = cms
            .watch(&WatchParams::default(), &rv)
            .await
            .expect("watch");
        watchers.push(stream.boxed());
    }
    let names: Vec<String> = (0..30).map(|i| format!("c{i}")).collect();
    for name in &names {
        cms.create(&PostParams::default(), &cm(name))
            .await
            .expect("create");
    }
    for stream in &mut watchers {
        let mut seen = Vec::new();
        while seen.len() < names.len() {
            match stream.try_next().await.expect("event") {
                Some(WatchEvent::Added(o)) => seen.push(o.metadata.name.unwrap_or_default()),
                other => panic!("expected ADDED, got {other:?}"),
            }
        }
        assert_eq!(seen, names);
    }
}

/// Over TCP, a client that opens a watch and never reads it is cut off once the socket's buffers
/// and its own queue are full, however long the writes go on: what the server holds for it is
/// bounded by `watcher_buffer` changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_watcher_that_stops_reading_is_cut_off() {
    use tokio::io::AsyncWriteExt;
    let server = fake_apiserver::FakeApiServer::builder()
        .history_limit(50)
        .watcher_buffer(10)
        .build()
        .expect("server");
    let tcp = server
        .serve_tcp("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("served");
    let mut stalled = tokio::net::TcpStream::connect(tcp.addr())
        .await
        .expect("connect");
    let request = format!(
        "GET /api/v1/namespaces/default/configmaps?watch=true&resourceVersion={} HTTP/1.1\r\nHost: x\r\n\r\n",
        server.resource_version()
    );
    stalled
        .write_all(request.as_bytes())
        .await
        .expect("watch sent");
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    // Wait for the watch to be registered by writing until it counts (no sleeping).
    let big = "x".repeat(100 * 1024);
    let mut written = 0;
    let mut registered = false;
    while written < 2000 {
        let mut c = cm(&format!("c{written}"));
        c.data = Some([("big".to_string(), big.clone())].into());
        cms.create(&PostParams::default(), &c)
            .await
            .expect("create");
        written += 1;
        let watching = server.watcher_count();
        registered |= watching == 1;
        if registered && watching == 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(registered, "the watch was registered");
    assert_eq!(
        server.watcher_count(),
        0,
        "cut off after {written} changes of 100 KiB"
    );
    eprintln!("a watcher that stopped reading was cut off after {written} changes of 100 KiB");
    drop(stalled);
}
