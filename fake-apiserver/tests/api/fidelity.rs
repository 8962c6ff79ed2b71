//! What real clients ask for beyond plain JSON: aggregated discovery, OpenAPI v3, Tables and
//! metadata-only answers. CRD schemas (pruning, defaulting, CEL) and CRD Tables are checked
//! against kube-apiserver in `dual::crd`.

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams};
use kube::discovery::Discovery;
use serde_json::{Value, json};
use tower::ServiceExt;

use crate::common::{cm, raw, server};

/// A raw GET with an Accept header: (status, content type, JSON body).
async fn get_as(
    s: &fake_apiserver::FakeApiServer,
    path: &str,
    accept: &str,
) -> (u16, String, Value) {
    let req = http::Request::get(path)
        .header("accept", accept)
        .body(http_body_util::Full::new(bytes::Bytes::new()))
        .expect("request");
    let resp = s.service().oneshot(req).await.expect("answer");
    let code = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let body = http_body_util::BodyExt::collect(resp.into_body())
        .await
        .expect("body")
        .to_bytes();
    (
        code,
        ct,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    )
}

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

#[tokio::test(start_paused = true)]
async fn aggregated_discovery_serves_every_group_for_kube_rs() {
    let s = server();
    let discovery = Discovery::new(s.client())
        .run_aggregated()
        .await
        .expect("aggregated discovery");
    let kinds: Vec<String> = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .map(|(ar, _)| ar.kind)
        .collect();
    for kind in ["Pod", "Job", "Lease", "CustomResourceDefinition", "Event"] {
        assert!(kinds.iter().any(|k| k == kind), "{kind} in {kinds:?}");
    }
    let (_, ct, body) = get_as(
        &s,
        "/apis",
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
    )
    .await;
    assert_eq!(
        ct,
        "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
    );
    assert_eq!(body["kind"], "APIGroupDiscoveryList");
    let (_, _, plain) = get_as(&s, "/apis", "application/json").await;
    assert_eq!(
        plain["kind"], "APIGroupList",
        "plain JSON clients get the classic document"
    );
}

#[tokio::test(start_paused = true)]
async fn openapi_v3_documents_carry_schemas_and_the_field_validation_parameter() {
    let s = server();
    let (code, root) = raw(&s, "GET", "/openapi/v3", "", "").await;
    assert_eq!(code, 200);
    let url = root["paths"]["apis/batch/v1"]["serverRelativeURL"]
        .as_str()
        .expect("batch/v1 listed");
    assert!(url.starts_with("/openapi/v3/apis/batch/v1?hash="));
    let (code, doc) = raw(&s, "GET", url, "", "").await;
    assert_eq!(code, 200);
    let job = &doc["components"]["schemas"]["io.k8s.api.batch.v1.Job"];
    assert_eq!(job["x-kubernetes-group-version-kind"][0]["kind"], "Job");
    assert!(job["properties"]["spec"].is_object());
    let patch = &doc["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"]["patch"];
    let names: Vec<&str> = patch["parameters"]
        .as_array()
        .expect("params")
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(names.contains(&"fieldValidation"));
}

#[tokio::test(start_paused = true)]
async fn kubectl_get_gets_a_table_with_the_real_columns() {
    let s = server();
    crate::common::drop_root_ca(&s, "default").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let mut c = cm("settings");
    c.data = Some(
        [
            ("a".to_string(), "1".to_string()),
            ("b".to_string(), "2".to_string()),
        ]
        .into(),
    );
    cms.create(&PostParams::default(), &c)
        .await
        .expect("create");
    tokio::time::sleep(std::time::Duration::from_secs(300)).await;
    let (code, _, table) = get_as(&s, "/api/v1/namespaces/default/configmaps", TABLE).await;
    assert_eq!(code, 200);
    assert_eq!(table["kind"], "Table");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(columns, vec!["Name", "Data", "Age"]);
    assert_eq!(table["rows"][0]["cells"], json!(["settings", 2, "5m"]));
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");

    let (_, _, svc) = get_as(&s, "/api/v1/namespaces/default/services/kubernetes", TABLE).await;
    let cells = svc["rows"][0]["cells"].as_array().expect("cells");
    assert_eq!(
        cells[1..5],
        [
            json!("ClusterIP"),
            json!("10.96.0.1"),
            json!("<none>"),
            json!("443/TCP")
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn metadata_only_answers_for_metadata_clients() {
    let s = server();
    crate::common::drop_root_ca(&s, "default").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    cms.create(&PostParams::default(), &cm("m"))
        .await
        .expect("create");
    let meta = cms
        .list_metadata(&ListParams::default())
        .await
        .expect("metadata list");
    assert_eq!(meta.items.len(), 1);
    let (_, _, one) = get_as(
        &s,
        "/api/v1/namespaces/default/configmaps/m",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
    )
    .await;
    assert_eq!(one["kind"], "PartialObjectMetadata");
    assert!(one.get("data").is_none());
}

#[tokio::test(start_paused = true)]
async fn deployment_and_event_tables_have_their_real_columns() {
    let s = server();
    let (code, _) = raw(
        &s,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        "application/json",
        r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}"#,
    )
    .await;
    assert_eq!(code, 201);
    let (_, _, table) = get_as(&s, "/apis/apps/v1/namespaces/default/deployments", TABLE).await;
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        columns,
        vec![
            "Name",
            "Ready",
            "Up-to-date",
            "Available",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    let cells = table["rows"][0]["cells"].as_array().expect("cells");
    assert_eq!(cells[..4], [json!("web"), json!("0/3"), json!(0), json!(0)]);

    let (_, _, events) = get_as(&s, "/api/v1/namespaces/default/events", TABLE).await;
    let columns: Vec<&str> = events["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        columns,
        vec![
            "Last Seen",
            "Type",
            "Reason",
            "Object",
            "Subobject",
            "Source",
            "Message",
            "First Seen",
            "Count",
            "Name"
        ]
    );
}
