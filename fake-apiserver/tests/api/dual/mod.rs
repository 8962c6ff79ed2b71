//! Tests of API behaviour that run twice: against the fake API server and against the reference
//! control plane (the real kube-apiserver, etcd, kube-controller-manager and kube-scheduler of
//! `control-plane`), so that every belief about kube-apiserver is checked against kube-apiserver.
//!
//! Each test is an `async fn(Env)` written once against a `kube::Client` (and [`Env::raw`] where
//! it needs status codes, headers and bodies). [`dual!`] gives each one a module with two tests,
//! `fake` and `control_plane`:
//!
//! ```text
//! cargo test -p fake-apiserver --test api dual                  # both targets
//! cargo test -p fake-apiserver --test api dual -- fake          # the fake only
//! cargo test -p fake-apiserver --test api dual -- control_plane # kube-apiserver only
//! ```
//!
//! Without the control plane's binaries the `control_plane` tests print why and pass, unless
//! `TOLLGATE_REQUIRE_CONTROL_PLANE` is set.
//!
//! The control plane is shared by every test of the binary and tests run in parallel: each test
//! works in a namespace of its own ([`Env::ns`]), names cluster-scoped objects with
//! [`Env::name`], and the harness deletes what the test registered when it ends. Time is real:
//! asynchronous effects (garbage collection, namespace deletion, CRD establishment, all done by
//! controllers on the real server) are awaited with [`Env::wait_for`] and watches, never slept
//! on.

#![allow(dead_code)]

use std::fmt::Debug;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fake_apiserver::FakeApiServer;
use futures::FutureExt;
use http_body_util::BodyExt;
use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::core::ObjectMeta;
use kube::runtime::wait::{Condition, await_condition, conditions};
use kube::{Client, Resource};
use serde::de::DeserializeOwned;
use serde_json::Value;

mod authorization;
mod bootstrap;
mod bytes;
mod crd;
mod crd_lifecycle;
mod crd_openapi;
pub(crate) mod crud;
mod defaults;
mod deletion;
mod deletion_answers;
mod lists_accept;
mod managed_fields;
mod meta_validation;
mod params;
mod patch_errors;
mod pods_events;
mod protobuf;
mod request_errors;
mod scale;
mod schema_composition;
mod semantics;
mod subresources;
mod tables_discovery;
mod validation;
mod validation_builtin;
pub(crate) mod watch_list;
mod webhooks;

/// How long an asynchronous effect may take on the real server (the garbage collector and the
/// namespace controller run on informers, usually well under a second).
pub const EVENTUALLY: Duration = Duration::from_secs(60);

/// Poll `probe` until it holds, at most [`EVENTUALLY`]: for effects the real server gives no
/// watchable sign of (a CRD's new schema reaching its handler, a deleted group leaving the
/// router). Bounded, and instant on the fake.
pub async fn eventually<F, Fut>(what: &str, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let found = tokio::time::timeout(EVENTUALLY, async {
        loop {
            tick.tick().await;
            if probe().await {
                return;
            }
        }
    })
    .await;
    assert!(found.is_ok(), "{what}: not within {EVENTUALLY:?}");
}

/// Which API server a test talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// A fresh [`FakeApiServer`] on the system clock, through its in-process client.
    Fake,
    /// The control plane shared by this test binary (`control_plane::testing::shared`).
    ControlPlane,
}

/// One test's world: a client of its target and a namespace of its own.
#[derive(Clone)]
pub struct Env {
    pub target: Target,
    pub client: Client,
    /// For the harness's own waits (a CRD's resource served): on kube-apiserver it retries the
    /// 429 "storage is (re)initializing" a new CRD answers for a moment, which `client`, used for
    /// the requests a test checks, hands back as given.
    patient: Client,
    /// The test's namespace, created for it (unique on the shared control plane).
    pub ns: String,
    fake: Option<FakeApiServer>,
    cleanup: Arc<Mutex<Vec<String>>>,
}

/// What a raw HTTP exchange answered.
#[derive(Debug)]
pub struct Raw {
    pub code: u16,
    pub headers: http::HeaderMap,
    /// The body as JSON (Null when it is not JSON).
    pub body: Value,
    pub text: String,
    /// The body as sent (a protobuf answer is not text).
    pub bytes: ::bytes::Bytes,
}

/// Emit, for each named `async fn(Env)`, a module with a `fake` and a `control_plane` test.
macro_rules! dual {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn fake() {
                    $crate::dual::run($crate::dual::Target::Fake, stringify!($name), super::$name)
                        .await
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn control_plane() {
                    $crate::dual::run(
                        $crate::dual::Target::ControlPlane,
                        stringify!($name),
                        super::$name,
                    )
                    .await
                }
            }
        )*
    };
}
pub(crate) use dual;

/// Run one test body on a target: make its namespace, run it, then delete what it registered
/// (also when it panics).
pub async fn run<F, Fut>(target: Target, test: &str, body: F)
where
    F: FnOnce(Env) -> Fut,
    Fut: Future<Output = ()>,
{
    let Some(env) = Env::new(target, test).await else {
        return;
    };
    let outcome = std::panic::AssertUnwindSafe(body(env.clone()))
        .catch_unwind()
        .await;
    env.clean_up().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

impl Env {
    async fn new(target: Target, test: &str) -> Option<Env> {
        let (client, patient, fake) = match target {
            Target::Fake => {
                let server = FakeApiServer::builder().build().expect("the fake starts");
                (server.client(), server.client(), Some(server))
            }
            Target::ControlPlane => {
                let cp = control_plane::testing::shared().await?;
                // As the fake's client: every answer once, as the server gave it.
                let client = cp
                    .client_without_retries()
                    .await
                    .expect("a client of the control plane");
                let patient = cp.client().await.expect("a client of the control plane");
                (client, patient, None)
            }
        };
        static N: AtomicU32 = AtomicU32::new(0);
        // A DNS label: the test's name, shortened, and a number unique in this process.
        let mut prefix: String = test
            .replace('_', "-")
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .take(40)
            .collect();
        while prefix.ends_with('-') {
            prefix.pop();
        }
        let ns = format!("{prefix}-{}", N.fetch_add(1, Ordering::Relaxed));
        let env = Env {
            target,
            client,
            patient,
            ns: ns.clone(),
            fake,
            cleanup: Arc::default(),
        };
        env.create_namespace(&ns).await;
        Some(env)
    }

    pub fn is_fake(&self) -> bool {
        self.target == Target::Fake
    }

    /// The fake server, for the few assertions only it can make.
    pub fn fake(&self) -> Option<&FakeApiServer> {
        self.fake.as_ref()
    }

    /// `Api<K>` in the test's namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = NamespaceResourceScope>,
        <K as Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    /// `Api<K>` in another namespace.
    pub fn api_in<K>(&self, ns: &str) -> Api<K>
    where
        K: Resource<Scope = NamespaceResourceScope>,
        <K as Resource>::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), ns)
    }

    /// `Api<K>` across namespaces, or for a cluster-scoped kind.
    pub fn all<K>(&self) -> Api<K>
    where
        K: Resource,
        <K as Resource>::DynamicType: Default,
    {
        Api::all(self.client.clone())
    }

    /// A name for a cluster-scoped object (or another namespace) that no other test uses.
    pub fn name(&self, base: &str) -> String {
        format!("{}-{base}", self.ns)
    }

    /// Delete this path (a cluster-scoped object) when the test ends.
    pub fn delete_at_end(&self, path: impl Into<String>) {
        self.cleanup.lock().expect("cleanup list").push(path.into());
    }

    /// Create a namespace, deleted when the test ends.
    pub async fn create_namespace(&self, name: &str) -> Namespace {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let created = self
            .all::<Namespace>()
            .create(&PostParams::default(), &ns)
            .await
            .expect("create namespace");
        self.delete_at_end(format!("/api/v1/namespaces/{name}"));
        created
    }

    /// Wait for the `default` ServiceAccount of the test's namespace, which the real server's
    /// service-account controller creates shortly after the namespace (pods need it to be
    /// admitted).
    pub async fn default_service_account(&self) -> ServiceAccount {
        let api = self.api::<ServiceAccount>();
        self.wait_for(
            &api,
            "default",
            conditions::is_created(),
            "the default ServiceAccount",
        )
        .await
        .expect("the default ServiceAccount")
    }

    /// Wait until `cond` holds for the object `name` (None: it does not exist), at most
    /// [`EVENTUALLY`]; the object as last seen.
    pub async fn wait_for<K>(
        &self,
        api: &Api<K>,
        name: &str,
        cond: impl Condition<K>,
        what: &str,
    ) -> Option<K>
    where
        K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    {
        tokio::time::timeout(EVENTUALLY, await_condition(api.clone(), name, cond))
            .await
            .unwrap_or_else(|_| panic!("{what}: not within {EVENTUALLY:?}"))
            .unwrap_or_else(|e| panic!("{what}: the watch failed: {e}"))
    }

    /// Wait until the object `name` is gone.
    pub async fn wait_gone<K>(&self, api: &Api<K>, name: &str)
    where
        K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
    {
        let what = format!("{name} is deleted");
        self.wait_for(api, name, |o: Option<&K>| o.is_none(), &what)
            .await;
    }

    /// Create a CRD (deleted when the test ends) and wait until it is Established and its
    /// resource answers.
    pub async fn create_crd(&self, crd: &CustomResourceDefinition) -> CustomResourceDefinition {
        let crds = self.all::<CustomResourceDefinition>();
        let name = crd.metadata.name.clone().expect("a CRD has a name");
        let created = crds
            .create(&PostParams::default(), crd)
            .await
            .expect("create CRD");
        self.delete_at_end(format!(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
        ));
        let established = self
            .wait_for(
                &crds,
                &name,
                conditions::is_crd_established(),
                "the CRD is Established",
            )
            .await
            .expect("the CRD exists");
        // Established means served: a list answers.
        let version = &crd.spec.versions[0].name;
        let gvk = GroupVersionKind::gvk(&crd.spec.group, version, &crd.spec.names.kind);
        let ar = ApiResource::from_gvk_with_plural(&gvk, &crd.spec.names.plural);
        let api: Api<DynamicObject> = Api::all_with(self.patient.clone(), &ar);
        api.list(&Default::default())
            .await
            .expect("an Established CRD's resource is served");
        let _ = created;
        established
    }

    /// A namespaced `Widget` kind (v1) that keeps any fields, in a group of this test's own
    /// (`<ns>.<suffix>.tollgate.dev`), created and Established; the group is returned.
    pub async fn create_open_widgets(&self, suffix: &str) -> String {
        let group = format!("{}.{suffix}.tollgate.dev", self.ns);
        let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("widgets.{group}")},
            "spec": {"group": group, "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}]}
        }))
        .expect("a CRD");
        self.create_crd(&crd).await;
        group
    }

    /// A raw HTTP exchange: the answer's code, headers and body.
    pub async fn raw(
        &self,
        method: &str,
        path: &str,
        content_type: &str,
        body: impl Into<Vec<u8>>,
    ) -> Raw {
        self.raw_with(method, path, &[("content-type", content_type)], body)
            .await
    }

    /// A raw HTTP exchange with these headers (empty values are left out).
    pub async fn raw_with(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<Vec<u8>>,
    ) -> Raw {
        raw_by(&self.client, method, path, headers, body).await
    }

    /// A client of the target that authenticates with this bearer token only (no client
    /// certificate), as a ServiceAccount's pod would.
    pub async fn client_with_token(&self, token: &str) -> Client {
        let bearer = http::HeaderValue::from_str(&format!("Bearer {token}")).expect("a header");
        match &self.fake {
            Some(fake) => {
                let service = tower::ServiceBuilder::new()
                    .map_request(move |mut req: http::Request<kube::client::Body>| {
                        req.headers_mut()
                            .insert(http::header::AUTHORIZATION, bearer.clone());
                        req
                    })
                    .service(fake.service());
                Client::new(service, self.ns.clone())
            }
            None => {
                let cp = control_plane::testing::shared()
                    .await
                    .expect("the control plane runs");
                let mut config = control_plane::config_for(cp.kubeconfig())
                    .await
                    .expect("a config from its kubeconfig");
                config.auth_info = kube::config::AuthInfo {
                    token: Some(token.to_string().into()),
                    ..Default::default()
                };
                config.default_retry = false;
                Client::try_from(config).expect("a client")
            }
        }
    }
}

/// A raw HTTP exchange through `client`, with these headers (empty values are left out).
pub async fn raw_by(
    client: &Client,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Vec<u8>>,
) -> Raw {
    {
        let mut req = http::Request::builder().method(method).uri(path);
        for (k, v) in headers {
            if !v.is_empty() {
                req = req.header(*k, *v);
            }
        }
        let req = req
            .body(kube::client::Body::from(body.into()))
            .expect("request builds");
        let resp = client.send(req).await.expect("the server answers");
        let code = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .expect("the body arrives")
            .to_bytes();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Raw {
            code,
            headers,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
            text,
            bytes,
        }
    }
}

impl Env {
    async fn clean_up(&self) {
        let paths: Vec<String> = self
            .cleanup
            .lock()
            .expect("cleanup list")
            .drain(..)
            .collect();
        // Last registered first: objects before the namespaces and CRDs they live in.
        for path in paths.into_iter().rev() {
            let _ = self
                .raw(
                    "DELETE",
                    &path,
                    "application/json",
                    r#"{"propagationPolicy":"Background"}"#,
                )
                .await;
        }
    }
}

/// The `kube::Error::Api` status of a failed call.
pub fn api_err<T: Debug>(r: Result<T, kube::Error>) -> kube::core::Status {
    match r {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Assert a raw answer is a failure Status with this code and reason.
pub fn assert_status(raw: &Raw, code: u16, reason: &str) {
    let body = &raw.body;
    assert_eq!(raw.code, code, "{}", raw.text);
    assert_eq!(body["kind"], "Status", "{}", raw.text);
    assert_eq!(body["apiVersion"], "v1", "{}", raw.text);
    assert_eq!(body["status"], "Failure", "{}", raw.text);
    assert_eq!(body["code"], serde_json::json!(code), "{}", raw.text);
    assert_eq!(body["reason"], reason, "{}", raw.text);
}
