//! CustomResourceDefinitions: registering serves the kinds at once, in discovery too.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams,
};
use kube::discovery::Discovery;
use serde_json::json;

use crate::common::{api_err, raw, server};

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

fn widget(name: &str, size: i64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": {"size": size}, "status": {"ready": true}
    }))
    .expect("widget")
}

#[tokio::test(start_paused = true)]
async fn a_crd_created_through_the_api_is_established_and_served_at_once() {
    let s = server();
    let crds: Api<CustomResourceDefinition> = Api::all(s.client());
    let crd: CustomResourceDefinition = serde_yaml::from_str(WIDGETS).expect("yaml");
    crds.create(&PostParams::default(), &crd)
        .await
        .expect("create crd");
    let got = crds.get("widgets.example.com").await.expect("get crd");
    let conditions = got.status.and_then(|s| s.conditions).unwrap_or_default();
    assert!(
        conditions
            .iter()
            .any(|c| c.type_ == "Established" && c.status == "True")
    );

    let discovery = Discovery::new(s.client()).run().await.expect("discovery");
    let (ar, caps) = discovery
        .groups()
        .flat_map(|g| g.recommended_resources())
        .find(|(ar, _)| ar.kind == "Widget")
        .expect("Widget discovered");
    assert_eq!(ar.plural, "widgets");
    assert!(
        caps.subresources
            .iter()
            .any(|(sub, _)| sub.plural == "status")
    );

    let api = widgets(s.client());
    let created = api
        .create(&PostParams::default(), &widget("w1", 3))
        .await
        .expect("create widget");
    // The status subresource is honoured: status given on create is dropped.
    assert!(created.data.get("status").is_none());
    let patched = api
        .patch_status(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}, "spec": {"size": 9}})),
        )
        .await
        .expect("patch status");
    assert_eq!(patched.data["status"]["ready"], json!(true));
    assert_eq!(
        patched.data["spec"]["size"],
        json!(3),
        "spec is ignored on /status"
    );
    assert_eq!(patched.metadata.generation, Some(1));
}

#[tokio::test(start_paused = true)]
async fn crds_given_at_start_are_served_and_deleting_a_crd_removes_its_objects() {
    let s = fake_apiserver::FakeApiServer::builder()
        .crds_yaml("widgets.yaml", WIDGETS)
        .build()
        .expect("server");
    let api = widgets(s.client());
    api.create(&PostParams::default(), &widget("w1", 1))
        .await
        .expect("create");
    let crds: Api<CustomResourceDefinition> = Api::all(s.client());
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .expect("delete crd");
    assert_eq!(api_err(crds.get("widgets.example.com").await).code, 404);
    let (code, body) = raw(
        &s,
        "GET",
        "/apis/example.com/v1/namespaces/default/widgets",
        "",
        "",
    )
    .await;
    // The group is no longer served: kube-apiserver's plain-text 404, not a Status.
    assert_eq!((code, body), (404, serde_json::Value::Null));
}

#[tokio::test(start_paused = true)]
async fn an_invalid_crd_is_refused_with_its_field() {
    let s = server();
    let (code, body) = raw(
        &s,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        serde_json::to_vec(&json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "wrong"},
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": true, "storage": true}]}
        }))
        .expect("json"),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(body["details"]["causes"][0]["field"], "metadata.name");
    let start = fake_apiserver::FakeApiServer::builder()
        .crds_yaml("bad.yaml", "metadata: {name: x}\nspec: {}\n")
        .build();
    let err = start.err().expect("refused at start").to_string();
    assert!(
        err.starts_with("bad.yaml: document 0 (x) was refused"),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_crd_scope_cannot_change_and_deleting_a_crd_ends_its_watches() {
    use futures::{StreamExt, TryStreamExt};
    let s = fake_apiserver::FakeApiServer::builder()
        .crds_yaml("widgets.yaml", WIDGETS)
        .build()
        .expect("server");
    let crds: Api<CustomResourceDefinition> = Api::all(s.client());
    let mut crd = crds.get("widgets.example.com").await.expect("crd");
    crd.spec.scope = "Cluster".into();
    let e = api_err(
        crds.replace("widgets.example.com", &PostParams::default(), &crd)
            .await,
    );
    assert_eq!(e.code, 422);
    assert!(e.message.contains("spec.scope"), "{}", e.message);

    let api = widgets(s.client());
    let mut stream = api
        .watch(&kube::api::WatchParams::default(), "0")
        .await
        .expect("watch")
        .boxed();
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .expect("delete crd");
    let end = tokio::time::timeout(std::time::Duration::from_secs(5), stream.try_next())
        .await
        .expect("ends promptly");
    assert!(matches!(end, Ok(None)), "the watch ended: {end:?}");
}

/// The project's own CRDs (api/crds, generated by `cargo xtask crds`) served by the fake.
fn project_crds() -> fake_apiserver::FakeApiServer {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../api/crds");
    fake_apiserver::FakeApiServer::builder()
        .crds_dir(&dir)
        .expect("read api/crds")
        .build()
        .expect("every project CRD is accepted")
}

#[tokio::test(start_paused = true)]
async fn provisioning_request_spec_is_immutable_through_its_cel_rule() {
    let s = project_crds();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("autoscaling.x-k8s.io", "v1", "ProvisioningRequest"),
        "provisioningrequests",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(s.client(), "default", &ar);
    let pr: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "autoscaling.x-k8s.io/v1", "kind": "ProvisioningRequest",
        "metadata": {"name": "pr"},
        "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io",
                 "podSets": [{"podTemplateRef": {"name": "ppt"}, "count": 2}]}
    }))
    .expect("pr");
    let created = api
        .create(&PostParams::default(), &pr)
        .await
        .expect("create");
    let mut changed = created.clone();
    changed.data["spec"]["podSets"][0]["count"] = json!(3);
    let e = api_err(api.replace("pr", &PostParams::default(), &changed).await);
    assert_eq!(e.code, 422);
    assert!(e.message.contains("Value is immutable"), "{}", e.message);

    let mut zero = pr.clone();
    zero.metadata.name = Some("zero".into());
    zero.data["spec"]["podSets"][0]["count"] = json!(0);
    let e = api_err(api.create(&PostParams::default(), &zero).await);
    assert!(e.message.contains("spec.podSets[0].count"), "{}", e.message);
}

#[tokio::test(start_paused = true)]
async fn provisioning_request_config_gets_the_default_retry_strategy() {
    let s = project_crds();
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kueue.x-k8s.io", "v1beta2", "ProvisioningRequestConfig"),
        "provisioningrequestconfigs",
    );
    let api: Api<DynamicObject> = Api::all_with(s.client(), &ar);
    let cfg: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ProvisioningRequestConfig",
        "metadata": {"name": "prc"},
        "spec": {"provisioningClassName": "check-capacity.autoscaling.x-k8s.io"}
    }))
    .expect("config");
    let created = api
        .create(&PostParams::default(), &cfg)
        .await
        .expect("create");
    assert_eq!(
        created.data["spec"]["retryStrategy"],
        json!({"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800})
    );
}

#[tokio::test(start_paused = true)]
async fn a_crd_scale_subresource_follows_its_paths() {
    let crd = WIDGETS.replace(
        "subresources: {status: {}}",
        "subresources: {status: {}, scale: {specReplicasPath: .spec.size, statusReplicasPath: .status.ready, labelSelectorPath: .status.selector}}",
    );
    let s = fake_apiserver::FakeApiServer::builder()
        .crds_yaml("widgets.yaml", crd)
        .build()
        .expect("server");
    let api = widgets(s.client());
    api.create(&PostParams::default(), &widget("w1", 3))
        .await
        .expect("create");
    let scale = api.get_scale("w1").await.expect("get scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(3));
    api.patch_scale(
        "w1",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 7}})),
    )
    .await
    .expect("patch scale");
    assert_eq!(
        api.get("w1").await.expect("get").data["spec"]["size"],
        json!(7)
    );
}

#[tokio::test(start_paused = true)]
async fn schema_defaults_also_apply_on_read() {
    let s = fake_apiserver::FakeApiServer::builder()
        .crds_yaml("widgets.yaml", WIDGETS)
        .build()
        .expect("server");
    let api = widgets(s.client());
    api.create(&PostParams::default(), &widget("old", 1))
        .await
        .expect("create before the default exists");
    let with_default = WIDGETS.replace(
        "openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}",
        "openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {spec: {type: object, x-kubernetes-preserve-unknown-fields: true, properties: {color: {type: string, default: blue}}}}}",
    );
    assert_ne!(with_default, WIDGETS);
    s.install_crds("widgets-v2.yaml", &with_default)
        .expect("update the CRD");
    let read = api.get("old").await.expect("get");
    assert_eq!(read.data["spec"]["color"], json!("blue"));
}
