//! Admission webhooks on the fake alone: what the dual tests cannot show on kube-apiserver (a
//! Service reached through endpoints on loopback, which kube-apiserver's validation forbids), or
//! shows only with a race (the store's lock is never held across a call), and webhooks that
//! answer badly, each failure in kube-apiserver's words.

use std::sync::Arc;

use fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

use crate::common::raw;
use crate::webhook_server::{self, Webhook, patched};

/// A server on the system clock: webhook calls wait in real time.
fn real_time_server() -> FakeApiServer {
    FakeApiServer::builder().build().expect("the fake starts")
}

async fn register(server: &FakeApiServer, plural: &str, webhooks: Vec<Value>) {
    let kind = match plural {
        "mutatingwebhookconfigurations" => "MutatingWebhookConfiguration",
        _ => "ValidatingWebhookConfiguration",
    };
    let config = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": "hooks"}, "webhooks": webhooks});
    let path = format!("/apis/admissionregistration.k8s.io/v1/{plural}");
    let (code, body) = raw(
        server,
        "POST",
        &path,
        "application/json",
        config.to_string(),
    )
    .await;
    assert_eq!(code, 201, "{body:#}");
}

fn for_configmaps(name: &str, client: Value, policy: &str) -> Value {
    json!({"name": name, "clientConfig": client, "failurePolicy": policy,
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"]})
}

async fn create(server: &FakeApiServer, name: &str) -> (u16, Value) {
    post_configmap(
        server,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}),
    )
    .await
}

async fn post_configmap(server: &FakeApiServer, cm: Value) -> (u16, Value) {
    raw(
        server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        "application/json",
        cm.to_string(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_webhook_is_reached_at_its_endpoints_and_verified_under_the_service_name() {
    let server = real_time_server();
    let hook = webhook_server::start_as(
        &["hooks.webhooks.svc"],
        Arc::new(|_: Value| {
            Box::pin(async {
                Ok(patched(
                    json!([{"op": "add", "path": "/metadata/labels", "value": {"via": "service"}}]),
                ))
            })
        }),
    )
    .await;
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "webhooks"}});
    assert_eq!(
        raw(
            &server,
            "POST",
            "/api/v1/namespaces",
            "application/json",
            ns.to_string()
        )
        .await
        .0,
        201
    );
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "hooks"},
        "spec": {"ports": [{"name": "https", "port": 443, "targetPort": hook.addr.port()}]}});
    let endpoints = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "hooks"},
        "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                     "ports": [{"name": "https", "port": hook.addr.port()}]}]});
    for (path, obj) in [("services", service), ("endpoints", endpoints)] {
        let path = format!("/api/v1/namespaces/webhooks/{path}");
        let (code, body) = raw(&server, "POST", &path, "application/json", obj.to_string()).await;
        assert_eq!(code, 201, "{body:#}");
    }
    let client = json!({"service": {"namespace": "webhooks", "name": "hooks", "path": "/mutate"},
        "caBundle": hook.ca_bundle});
    register(
        &server,
        "mutatingwebhookconfigurations",
        vec![for_configmaps("svc.webhooks.tollgate.dev", client, "Fail")],
    )
    .await;
    let (code, body) = create(&server, "through-a-service").await;
    assert_eq!(code, 201, "{body:#}");
    assert_eq!(body["metadata"]["labels"], json!({"via": "service"}));
    assert_eq!(hook.requests().len(), 1);
    // Without endpoints there is nowhere to call.
    let (code, _) = raw(
        &server,
        "DELETE",
        "/api/v1/namespaces/webhooks/endpoints/hooks",
        "",
        "",
    )
    .await;
    assert_eq!(code, 200);
    let (code, body) = create(&server, "nowhere").await;
    assert_eq!(code, 500, "{body:#}");
    assert_eq!(
        body["message"],
        "Internal error occurred: failed calling webhook \"svc.webhooks.tollgate.dev\": failed to call webhook: Post \"https://hooks.webhooks.svc:443/mutate?timeout=10s\": no endpoints available for service \"hooks\""
    );
}

/// A webhook answering `raw` (code, body) to everything, under Fail and under Ignore.
async fn answering(code: u16, body: &'static str) -> (FakeApiServer, Webhook, Webhook) {
    let server = real_time_server();
    let bad = webhook_server::start(Arc::new(move |_: &Value| Err((code, body.to_string())))).await;
    let also_bad =
        webhook_server::start(Arc::new(move |_: &Value| Err((code, body.to_string())))).await;
    let mut failing = for_configmaps(
        "fail.webhooks.tollgate.dev",
        bad.client_config("/x"),
        "Fail",
    );
    failing["objectSelector"] = json!({"matchLabels": {"policy": "fail"}});
    let ignored = for_configmaps(
        "ignore.webhooks.tollgate.dev",
        also_bad.client_config("/x"),
        "Ignore",
    );
    register(
        &server,
        "validatingwebhookconfigurations",
        vec![failing, ignored],
    )
    .await;
    (server, bad, also_bad)
}

async fn create_labelled(server: &FakeApiServer, name: &str, policy: &str) -> (u16, Value) {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"policy": policy}}});
    post_configmap(server, cm).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_answering_badly_fails_the_write_under_fail_and_is_passed_over_under_ignore() {
    let cases: [(u16, &str, &str); 4] = [
        (
            200,
            "not json",
            "failed to call webhook: couldn't get version/kind; json parse error: json: cannot unmarshal string into Go value of type struct",
        ),
        (
            200,
            r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"not-the-uid","allowed":true}}"#,
            "received invalid webhook response: expected response.uid=",
        ),
        (
            500,
            "it broke",
            "failed to call webhook: an error on the server (\"it broke\") has prevented the request from succeeding",
        ),
        (
            200,
            "",
            "failed to call webhook: 0-length response with status code: 200 and content type: text/plain",
        ),
    ];
    for (code, body, why) in cases {
        let (server, _bad, _also_bad) = answering(code, body).await;
        let (status, answer) = create_labelled(&server, "failed", "fail").await;
        assert_eq!(status, 500, "{answer:#}");
        let message = answer["message"].as_str().unwrap_or("");
        let expected = format!(
            "Internal error occurred: failed calling webhook \"fail.webhooks.tollgate.dev\": {why}"
        );
        assert!(
            message.starts_with(&expected),
            "{message}\nexpected {expected}"
        );
        // Nothing half-written, and the same failure under Ignore lets the write through.
        let (status, _) = raw(
            &server,
            "GET",
            "/api/v1/namespaces/default/configmaps/failed",
            "",
            "",
        )
        .await;
        assert_eq!(status, 404);
        let (status, answer) = create_labelled(&server, "passed", "ignore").await;
        assert_eq!(status, 201, "{answer:#}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_made_while_a_webhook_is_called_is_not_blocked_and_the_one_admitted_then_conflicts()
{
    let server = real_time_server();
    let (code, body) = create(&server, "raced").await;
    assert_eq!(code, 201, "{body:#}");
    let rv = body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_string();
    // While it is asked about an update, the webhook itself updates the object: with the store's
    // lock held across the call, that write would wait forever.
    let client = server.clone();
    let hook = webhook_server::start_as(
        &["127.0.0.1"],
        Arc::new(move |request: Value| {
            let server = client.clone();
            Box::pin(async move {
                if request["operation"] == "UPDATE" && request["object"]["data"]["by"] == "client" {
                    let patch = json!({"data": {"by": "webhook"}}).to_string();
                    let path = "/api/v1/namespaces/default/configmaps/raced";
                    let (code, body) = raw(
                        &server,
                        "PATCH",
                        path,
                        "application/merge-patch+json",
                        patch,
                    )
                    .await;
                    assert_eq!(code, 200, "{body:#}");
                }
                Ok(json!({}))
            })
        }),
    )
    .await;
    register(
        &server,
        "validatingwebhookconfigurations",
        vec![for_configmaps(
            "race.webhooks.tollgate.dev",
            hook.client_config("/v"),
            "Fail",
        )],
    )
    .await;
    let update = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "raced", "resourceVersion": rv}, "data": {"by": "client"}});
    let path = "/api/v1/namespaces/default/configmaps/raced";
    let (code, body) = raw(&server, "PUT", path, "application/json", update.to_string()).await;
    assert_eq!(code, 409, "{body:#}");
    assert_eq!(
        body["message"],
        "Operation cannot be fulfilled on configmaps \"raced\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let (_, stored) = raw(&server, "GET", path, "", "").await;
    assert_eq!(stored["data"], json!({"by": "webhook"}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_configurations_are_never_sent_to_webhooks() {
    let server = real_time_server();
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        listener.local_addr().expect("its address").port()
    };
    let everything = json!({"name": "all.webhooks.tollgate.dev",
        "clientConfig": {"url": format!("https://127.0.0.1:{closed}/")},
        "rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"]}],
        "sideEffects": "None", "admissionReviewVersions": ["v1"]});
    register(&server, "validatingwebhookconfigurations", vec![everything]).await;
    // Every other write fails on the unreachable webhook...
    let (code, _) = create(&server, "blocked").await;
    assert_eq!(code, 500);
    // ... but the configuration that blocks them can still be removed.
    let path = "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/hooks";
    let (code, body) = raw(&server, "DELETE", path, "", "").await;
    assert_eq!(code, 200, "{body:#}");
    let (code, body) = create(&server, "free-again").await;
    assert_eq!(code, 201, "{body:#}");
}
