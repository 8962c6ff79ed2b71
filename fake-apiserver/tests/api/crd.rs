//! CustomResourceDefinitions given to the fake's builder. Every CRD behaviour a client can see
//! (registration, schemas, CEL, subresources, tables, deletion) is in `dual::crd`, checked
//! against kube-apiserver too; what stays here is fake-only by nature: the builder's
//! `crds_yaml`/`crds_dir` and `install_crds`, which have no kube-apiserver counterpart.

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::json;

const WIDGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

fn widgets(client: kube::Client) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v1", "Widget"),
        "widgets",
    );
    Api::namespaced_with(client, "default", &ar)
}

// Fake-only: the builder's CRD files are the fake's own start-up API.
#[tokio::test(start_paused = true)]
async fn crds_given_at_start_are_served() {
    let s = fake_apiserver::FakeApiServer::builder()
        .crds_yaml("widgets.yaml", WIDGETS)
        .build()
        .expect("server");
    let w: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1"}
    }))
    .expect("widget");
    widgets(s.client())
        .create(&PostParams::default(), &w)
        .await
        .expect("create");
}

// Fake-only: a refused CRD file stops the builder with the file and document named.
#[tokio::test(start_paused = true)]
async fn an_invalid_crd_given_at_start_is_refused_with_its_file() {
    let start = fake_apiserver::FakeApiServer::builder()
        .crds_yaml("bad.yaml", "metadata: {name: x}\nspec: {}\n")
        .build();
    let err = start.err().expect("refused at start").to_string();
    assert!(
        err.starts_with("bad.yaml: document 0 (x) was refused"),
        "{err}"
    );
    let broken = WIDGETS.replace(
        "openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}",
        "openAPIV3Schema: {type: object, x-kubernetes-validations: [{rule: 'self =='}]}",
    );
    let err = fake_apiserver::FakeApiServer::builder()
        .crds_yaml("broken.yaml", broken)
        .build()
        .err()
        .expect("refused");
    assert!(
        err.to_string().contains("spec.validation.openAPIV3Schema"),
        "{err}"
    );
}

// Fake-only: every project CRD (api/crds, `cargo xtask crds`) is accepted by the builder.
#[tokio::test(start_paused = true)]
async fn every_project_crd_is_accepted_at_start() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../api/crds");
    fake_apiserver::FakeApiServer::builder()
        .crds_dir(&dir)
        .expect("read api/crds")
        .build()
        .expect("every project CRD is accepted");
}

// Fake-only: `install_crds` updates a CRD in place, with no client round trip.
#[tokio::test(start_paused = true)]
async fn install_crds_updates_a_served_crd() {
    let s = fake_apiserver::FakeApiServer::builder()
        .crds_yaml("widgets.yaml", WIDGETS)
        .build()
        .expect("server");
    let api = widgets(s.client());
    let w: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "old"}, "spec": {"size": 1}
    }))
    .expect("widget");
    api.create(&PostParams::default(), &w)
        .await
        .expect("create");
    let with_default = WIDGETS.replace(
        "openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}",
        "openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {color: {type: string, default: blue}}}}}",
    );
    s.install_crds("widgets-v2.yaml", &with_default)
        .expect("update the CRD");
    let read = api.get("old").await.expect("get");
    assert_eq!(read.data["spec"]["color"], json!("blue"));
}

// Fake-only: kube-apiserver v1.37.2 panics on a protobuf body for a custom resource (its
// schema-coercing decoder dereferences nil) and drops the stream without an answer. The fake
// answers the 415 it gives every body it cannot read, and writes nothing.
#[tokio::test(start_paused = true)]
async fn a_protobuf_body_for_a_custom_resource_is_unsupported() {
    let s = fake_apiserver::FakeApiServer::builder()
        .crds_yaml("widgets.yaml", WIDGETS)
        .build()
        .expect("server");
    let (code, status) = crate::common::raw(
        &s,
        "POST",
        "/apis/example.com/v1/namespaces/default/widgets",
        "application/vnd.kubernetes.protobuf",
        b"k8s\0".to_vec(),
    )
    .await;
    assert_eq!(code, 415, "{status}");
    assert_eq!(
        status["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"
    );
    let listed = widgets(s.client())
        .list(&Default::default())
        .await
        .expect("list");
    assert!(listed.items.is_empty());
}
