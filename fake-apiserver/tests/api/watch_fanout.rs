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
