//! Two runs of the same test on virtual time produce the same objects, byte for byte.

use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};

use crate::common::server;

async fn run_once() -> String {
    let s = server();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    for i in 0..3 {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                generate_name: Some("cm-".into()),
                ..Default::default()
            },
            data: Some([("i".to_string(), i.to_string())].into()),
            ..Default::default()
        };
        api.create(&PostParams::default(), &cm)
            .await
            .expect("create");
        tokio::time::sleep(Duration::from_secs(90)).await;
    }
    let list = api.list(&ListParams::default()).await.expect("list");
    serde_json::to_string(&list.items).expect("json")
}

#[tokio::test(start_paused = true)]
async fn two_runs_give_identical_uids_names_and_timestamps() {
    let first = run_once().await;
    let second = run_once().await;
    assert_eq!(first, second);
    assert!(
        first.contains("\"creationTimestamp\":\"2026-01-01T00:03:00Z\""),
        "{first}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_thirty_minute_virtual_wait_moves_the_server_clock_instantly() {
    let s = server();
    tokio::time::sleep(Duration::from_secs(30 * 60)).await;
    assert_eq!(s.clock().now_rfc3339(), "2026-01-01T00:30:00Z");
}
