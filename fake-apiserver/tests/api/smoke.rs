use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

use crate::common::server;

#[tokio::test(start_paused = true)]
async fn create_and_get_through_kube_api() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("a".into());
    let created = cms
        .create(&PostParams::default(), &cm)
        .await
        .expect("create");
    assert_eq!(
        created.metadata.creation_timestamp.map(|t| t.0.to_string()),
        Some("2026-01-01T00:00:00Z".into())
    );
    let got = cms.get("a").await.expect("get");
    assert_eq!(got.metadata.uid, created.metadata.uid);
}
