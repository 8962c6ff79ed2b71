//! The subresources real clients call: pod binding (the scheduler), eviction (`kubectl drain`),
//! ephemeral containers (`kubectl debug`), the streaming ones on a pod without a node, CSR
//! approval (`kubectl certificate approve`) and status, and service account tokens with
//! TokenReview.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use super::{EVENTUALLY, Env, Raw, assert_status, dual};

dual!(
    binding_sets_the_node_and_pod_scheduled_once,
    binding_failures_answer_as_kube_apiserver,
    eviction_without_a_budget_deletes_the_pod,
    eviction_that_would_break_a_budget_is_too_many_requests,
    streaming_subresources_of_a_pod_without_a_node,
    ephemeral_containers_may_be_added_but_never_removed,
    csr_approval_writes_only_conditions_and_decisions_stay,
    token_request_issues_a_signed_token_that_token_review_accepts,
    token_request_and_review_refuse_as_kube_apiserver,
    tokens_stop_authenticating_when_their_service_account_or_pod_goes,
);

/// A pod no scheduler picks up (so that only the test binds it).
async fn unscheduled_pod(env: &Env, name: &str, labels: Value) -> Pod {
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "spec": {"schedulerName": "none", "containers": [{"name": "c", "image": "busybox"}]},
    }))
    .expect("a pod");
    env.default_service_account().await;
    env.api::<Pod>()
        .create(&PostParams::default(), &pod)
        .await
        .expect("create pod")
}

async fn post(env: &Env, path: &str, body: Value) -> Raw {
    env.raw("POST", path, "application/json", body.to_string())
        .await
}

fn created(raw: &Raw) {
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert_eq!(
        raw.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
    );
}

async fn binding_sets_the_node_and_pod_scheduled_once(env: Env) {
    unscheduled_pod(&env, "p", json!({})).await;
    let ns = &env.ns;
    let bind = json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n1"}});
    created(
        &post(
            &env,
            &format!("/api/v1/namespaces/{ns}/pods/p/binding"),
            bind.clone(),
        )
        .await,
    );
    let pod = env.api::<Pod>().get("p").await.expect("the pod");
    let spec = pod.spec.expect("spec");
    assert_eq!(spec.node_name.as_deref(), Some("n1"));
    let status = pod.status.expect("status");
    let conditions = status.conditions.expect("conditions");
    let scheduled = conditions
        .iter()
        .find(|c| c.type_ == "PodScheduled")
        .expect("PodScheduled");
    assert_eq!(scheduled.status, "True");
    assert!(scheduled.last_transition_time.is_some());
    // Binding is the storage's write: no generation bump.
    assert_eq!(pod.metadata.generation, Some(1));

    // Bound pods stay bound, whichever path the Binding takes.
    for path in [
        format!("/api/v1/namespaces/{ns}/pods/p/binding"),
        format!("/api/v1/namespaces/{ns}/bindings"),
    ] {
        let again = post(&env, &path, bind.clone()).await;
        assert_status(&again, 409, "Conflict");
        assert_eq!(
            again.body["message"],
            "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"n1\""
        );
        assert_eq!(
            again.body["details"],
            json!({"name": "p", "kind": "pods/binding"})
        );
    }
}

async fn binding_failures_answer_as_kube_apiserver(env: Env) {
    unscheduled_pod(&env, "q", json!({})).await;
    let ns = &env.ns;
    let mismatch = post(
        &env,
        &format!("/api/v1/namespaces/{ns}/pods/q/binding"),
        json!({"metadata": {"name": "other"}, "target": {"name": "n1"}}),
    )
    .await;
    assert_status(&mismatch, 400, "BadRequest");
    assert_eq!(
        mismatch.body["message"],
        "name in URL does not match name in Binding object"
    );
    let missing = post(
        &env,
        &format!("/api/v1/namespaces/{ns}/bindings"),
        json!({"metadata": {"name": "missing"}, "target": {"name": "n1"}}),
    )
    .await;
    assert_status(&missing, 404, "NotFound");
    assert_eq!(missing.body["message"], "pods \"missing\" not found");
    // The binding subresource takes nothing but POST.
    let get = env
        .raw(
            "GET",
            &format!("/api/v1/namespaces/{ns}/pods/q/binding"),
            "",
            "",
        )
        .await;
    assert_status(&get, 405, "MethodNotAllowed");
}

async fn eviction_without_a_budget_deletes_the_pod(env: Env) {
    unscheduled_pod(&env, "e", json!({})).await;
    let ns = &env.ns;
    let path = format!("/api/v1/namespaces/{ns}/pods/e/eviction");
    let wrong = post(
        &env,
        &path,
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "zz"}}),
    )
    .await;
    assert_status(&wrong, 400, "BadRequest");
    assert_eq!(
        wrong.body["message"],
        "name in URL does not match name in Eviction object"
    );
    let evict = json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "e"}});
    created(&post(&env, &path, evict.clone()).await);
    // A pod without a node goes at once.
    env.wait_gone(&env.api::<Pod>(), "e").await;
    let again = post(&env, &path, evict).await;
    assert_status(&again, 404, "NotFound");
    assert_eq!(again.body["message"], "pods \"e\" not found");
}

async fn eviction_that_would_break_a_budget_is_too_many_requests(env: Env) {
    unscheduled_pod(&env, "r", json!({"app": "guarded"})).await;
    let ns = &env.ns;
    let running = env
        .raw(
            "PATCH",
            &format!("/api/v1/namespaces/{ns}/pods/r/status"),
            "application/merge-patch+json",
            json!({"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
                .to_string(),
        )
        .await;
    assert_eq!(running.code, 200, "{}", running.text);
    let pdb = post(
        &env,
        &format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"),
        json!({"metadata": {"name": "budget"}, "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "guarded"}}}}),
    )
    .await;
    assert_eq!(pdb.code, 201, "{}", pdb.text);
    if !env.is_fake() {
        // kube-controller-manager's disruption controller counts the pods first.
        let api: Api<k8s_openapi::api::policy::v1::PodDisruptionBudget> = env.api();
        env.wait_for(
            &api,
            "budget",
            |b: Option<&k8s_openapi::api::policy::v1::PodDisruptionBudget>| {
                b.and_then(|b| b.status.as_ref()).is_some_and(|s| {
                    s.observed_generation == Some(1) && s.current_healthy == Some(1)
                })
            },
            "the budget is counted",
        )
        .await;
    }
    let refused = post(
        &env,
        &format!("/api/v1/namespaces/{ns}/pods/r/eviction"),
        json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "r"}}),
    )
    .await;
    assert_status(&refused, 429, "TooManyRequests");
    assert_eq!(
        refused.body["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        refused.body["details"],
        json!({"causes": [{"reason": "DisruptionBudget", "message": "The disruption budget budget needs 2 healthy pods and has 1 currently"}]})
    );
    // Refused means untouched.
    let pod = env.api::<Pod>().get("r").await.expect("the pod stays");
    assert!(pod.metadata.deletion_timestamp.is_none());
}

async fn streaming_subresources_of_a_pod_without_a_node(env: Env) {
    unscheduled_pod(&env, "s", json!({})).await;
    let ns = &env.ns;
    let log = env
        .raw(
            "GET",
            &format!("/api/v1/namespaces/{ns}/pods/s/log"),
            "",
            "",
        )
        .await;
    assert_eq!(log.code, 204, "{}", log.text);
    assert_eq!(log.text, "");
    for sub in ["exec", "attach", "portforward"] {
        for method in ["GET", "POST"] {
            let raw = env
                .raw(
                    method,
                    &format!("/api/v1/namespaces/{ns}/pods/s/{sub}"),
                    "",
                    "",
                )
                .await;
            assert_status(&raw, 400, "BadRequest");
            assert_eq!(raw.body["message"], "pod s does not have a host assigned");
            assert!(raw.body.get("details").is_none(), "{}", raw.text);
        }
    }
    for sub in ["log", "exec", "attach", "portforward"] {
        let raw = env
            .raw(
                "GET",
                &format!("/api/v1/namespaces/{ns}/pods/missing/{sub}"),
                "",
                "",
            )
            .await;
        assert_status(&raw, 404, "NotFound");
        assert_eq!(raw.body["message"], "pods \"missing\" not found");
    }
}

async fn ephemeral_containers_may_be_added_but_never_removed(env: Env) {
    unscheduled_pod(&env, "d", json!({})).await;
    let ns = &env.ns;
    let path = format!("/api/v1/namespaces/{ns}/pods/d/ephemeralcontainers");
    let get = env.raw("GET", &path, "", "").await;
    assert_eq!(get.code, 200, "{}", get.text);
    assert_eq!(get.body["kind"], "Pod");
    let added = env
        .raw(
            "PATCH",
            &path,
            "application/strategic-merge-patch+json",
            json!({
                "metadata": {"labels": {"ignored": "yes"}},
                "spec": {"activeDeadlineSeconds": 5, "ephemeralContainers": [{"name": "dbg", "image": "busybox", "stdin": true, "tty": true}]},
            })
            .to_string(),
        )
        .await;
    assert_eq!(added.code, 200, "{}", added.text);
    assert_eq!(
        added.body["spec"]["ephemeralContainers"],
        json!([{"name": "dbg", "image": "busybox", "resources": {}, "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File", "imagePullPolicy": "Always", "stdin": true, "tty": true}])
    );
    // Only spec.ephemeralContainers is written, and it is a spec change.
    assert!(
        added.body["metadata"]["labels"]["ignored"].is_null(),
        "{}",
        added.text
    );
    assert!(added.body["spec"]["activeDeadlineSeconds"].is_null());
    assert_eq!(added.body["metadata"]["generation"], 2);

    let removed = env
        .raw(
            "PATCH",
            &path,
            "application/json-patch+json",
            r#"[{"op":"remove","path":"/spec/ephemeralContainers/0"}]"#,
        )
        .await;
    assert_status(&removed, 422, "Invalid");
    assert_eq!(
        removed.body["message"],
        format!(
            "Pod \"d\" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral containers \"dbg\" may not be removed\n"
        )
    );
    let ports = env
        .raw(
            "PATCH",
            &path,
            "application/strategic-merge-patch+json",
            json!({"spec": {"ephemeralContainers": [{"name": "e2", "image": "busybox", "ports": [{"containerPort": 80}]}]}}).to_string(),
        )
        .await;
    assert_status(&ports, 422, "Invalid");
    assert_eq!(
        ports.body["message"],
        "Pod \"d\" is invalid: spec.ephemeralContainers[0].ports: Forbidden: cannot be set for an Ephemeral Container"
    );
    let post = env.raw("POST", &path, "application/json", "{}").await;
    assert_status(&post, 405, "MethodNotAllowed");
}

/// A PEM certificate request, as `spec.request` carries it.
fn csr_request() -> String {
    let key = rcgen::KeyPair::generate().expect("a key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "alice");
    let req = params.serialize_request(&key).expect("a request");
    STANDARD.encode(req.pem().expect("PEM"))
}

async fn csr_approval_writes_only_conditions_and_decisions_stay(env: Env) {
    let request = csr_request();
    let name = env.name("csr");
    let base = "/apis/certificates.k8s.io/v1/certificatesigningrequests";
    let csr = |signer: &str, conditions: Value| {
        json!({
            "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {"request": request, "signerName": signer, "usages": ["client auth"]},
            "status": {"conditions": conditions},
        })
        .to_string()
    };
    let made = env
        .raw(
            "POST",
            base,
            "application/json",
            csr("example.com/x", json!([])),
        )
        .await;
    assert_eq!(made.code, 201, "{}", made.text);
    env.delete_at_end(format!("{base}/{name}"));

    // Adding a decision through status is refused.
    let via_status = env
        .raw(
            "PATCH",
            &format!("{base}/{name}/status"),
            "application/merge-patch+json",
            json!({"status": {"conditions": [{"type": "Approved", "status": "True"}]}}).to_string(),
        )
        .await;
    assert_status(&via_status, 422, "Invalid");
    assert_eq!(
        via_status.body["message"],
        format!(
            "CertificateSigningRequest.certificates.k8s.io \"{name}\" is invalid: status.conditions: Forbidden: updates may not add a condition of type \"Approved\""
        )
    );

    // What `kubectl certificate approve` sends; the spec change in it is ignored.
    let approved = env
        .raw(
            "PUT",
            &format!("{base}/{name}/approval"),
            "application/json",
            csr(
                "example.com/other",
                json!([{"type": "Approved", "status": "True", "reason": "KubectlApprove", "message": "This CSR was approved by kubectl certificate approve."}]),
            ),
        )
        .await;
    assert_eq!(approved.code, 200, "{}", approved.text);
    assert_eq!(approved.body["spec"]["signerName"], "example.com/x");
    let condition = &approved.body["status"]["conditions"][0];
    assert_eq!(condition["type"], "Approved");
    assert_eq!(condition["reason"], "KubectlApprove");
    assert!(condition["lastUpdateTime"].is_string(), "{condition}");
    assert!(condition["lastTransitionTime"].is_string(), "{condition}");

    let both = env
        .raw(
            "PUT",
            &format!("{base}/{name}/approval"),
            "application/json",
            csr(
                "example.com/x",
                json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]),
            ),
        )
        .await;
    assert_status(&both, 422, "Invalid");
    assert_eq!(
        both.body["details"]["causes"][0]["message"],
        r#"Invalid value: "{conditions[{\"type\": \"Approved\"}], conditions[{\"type\": \"Denied\"}]}": must specify at most one of: `conditions[{"type": "Approved"}]`, `conditions[{"type": "Denied"}]`"#
    );
    let undo = env
        .raw(
            "PUT",
            &format!("{base}/{name}/approval"),
            "application/json",
            csr(
                "example.com/x",
                json!([{"type": "Denied", "status": "True"}]),
            ),
        )
        .await;
    assert_status(&undo, 422, "Invalid");
    assert_eq!(
        undo.body["message"],
        format!(
            "CertificateSigningRequest.certificates.k8s.io \"{name}\" is invalid: status.conditions: Forbidden: updates may not remove a condition of type \"Approved\""
        )
    );
    let not_true = env
        .raw(
            "PATCH",
            &format!("{base}/{name}/approval"),
            "application/merge-patch+json",
            json!({"status": {"conditions": [{"type": "Approved", "status": "False"}]}})
                .to_string(),
        )
        .await;
    assert_status(&not_true, 422, "Invalid");
    assert_eq!(
        not_true.body["message"],
        format!(
            "CertificateSigningRequest.certificates.k8s.io \"{name}\" is invalid: status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\""
        )
    );
    let bad_cert = env
        .raw(
            "PATCH",
            &format!("{base}/{name}/status"),
            "application/merge-patch+json",
            json!({"status": {"certificate": "YWJj"}}).to_string(),
        )
        .await;
    assert_status(&bad_cert, 422, "Invalid");
    assert_eq!(
        bad_cert.body["message"],
        format!(
            "CertificateSigningRequest.certificates.k8s.io \"{name}\" is invalid: status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"
        )
    );
}

fn claims(token: &str) -> Value {
    let payload = token.split('.').nth(1).expect("a JWT has three parts");
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).expect("base64url")).expect("JSON")
}

async fn service_account(env: &Env, name: &str) -> ServiceAccount {
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": name}})).expect("an SA");
    env.api::<ServiceAccount>()
        .create(&PostParams::default(), &sa)
        .await
        .expect("create SA")
}

async fn token(env: &Env, sa: &str, spec: Value) -> Raw {
    post(
        env,
        &format!("/api/v1/namespaces/{}/serviceaccounts/{sa}/token", env.ns),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec}),
    )
    .await
}

async fn review(env: &Env, token: &str, audiences: Option<Value>) -> Value {
    let mut spec = json!({"token": token});
    if let Some(a) = audiences {
        spec["audiences"] = a;
    }
    let raw = post(
        env,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}),
    )
    .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert_eq!(raw.body["kind"], "TokenReview");
    raw.body["status"].clone()
}

const AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";

async fn token_request_issues_a_signed_token_that_token_review_accepts(env: Env) {
    let sa = service_account(&env, "robot").await;
    let uid = sa.metadata.uid.expect("uid");
    let ns = env.ns.clone();
    let raw = token(&env, "robot", json!({})).await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert_eq!(raw.body["kind"], "TokenRequest");
    assert_eq!(raw.body["metadata"]["name"], "robot");
    assert_eq!(raw.body["metadata"]["uid"], json!(uid));
    assert_eq!(
        raw.body["spec"],
        json!({"audiences": [AUDIENCE], "expirationSeconds": 3600, "boundObjectRef": null})
    );
    let token_text = raw.body["status"]["token"].as_str().expect("a token");
    let c = claims(token_text);
    assert_eq!(c["iss"], AUDIENCE);
    assert_eq!(c["aud"], json!([AUDIENCE]));
    assert_eq!(c["sub"], format!("system:serviceaccount:{ns}:robot"));
    assert_eq!(
        c["exp"].as_i64().expect("exp") - c["iat"].as_i64().expect("iat"),
        3600
    );
    assert_eq!(c["nbf"], c["iat"]);
    assert_eq!(
        c["kubernetes.io"],
        json!({"namespace": ns, "serviceaccount": {"name": "robot", "uid": uid}})
    );
    let jti = c["jti"].as_str().expect("jti");

    let status = review(&env, token_text, None).await;
    assert_eq!(
        status,
        json!({
            "authenticated": true,
            "user": {
                "username": format!("system:serviceaccount:{ns}:robot"),
                "uid": uid,
                "groups": ["system:serviceaccounts", format!("system:serviceaccounts:{ns}"), "system:authenticated"],
                "extra": {"authentication.kubernetes.io/credential-id": [format!("JTI={jti}")]},
            },
            "audiences": [AUDIENCE],
        })
    );
    let other = review(&env, token_text, Some(json!(["other"]))).await;
    assert_eq!(
        other,
        json!({"user": {}, "error": format!("[invalid bearer token, token audiences [\"{AUDIENCE}\"] is invalid for the target audiences [\"other\"]]")})
    );

    // Audiences of one's own, intersected in the reviewer's order.
    let raw = token(
        &env,
        "robot",
        json!({"audiences": ["x", "y"], "expirationSeconds": 700}),
    )
    .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert_eq!(raw.body["spec"]["expirationSeconds"], 700);
    let custom = raw.body["status"]["token"].as_str().expect("a token");
    let status = review(&env, custom, Some(json!(["z", "y"]))).await;
    assert_eq!(status["authenticated"], true);
    assert_eq!(status["audiences"], json!(["y"]));
}

async fn token_request_and_review_refuse_as_kube_apiserver(env: Env) {
    service_account(&env, "robot").await;
    let short = token(&env, "robot", json!({"expirationSeconds": 100})).await;
    assert_status(&short, 422, "Invalid");
    assert_eq!(
        short.body["message"],
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 100: may not specify a duration less than 10 minutes"
    );
    let missing = token(&env, "nobody", json!({})).await;
    assert_status(&missing, 404, "NotFound");
    assert_eq!(
        missing.body["message"],
        "serviceaccounts \"nobody\" not found"
    );
    let renamed = post(
        &env,
        &format!("/api/v1/namespaces/{}/serviceaccounts/robot/token", env.ns),
        json!({"metadata": {"name": "zz"}, "spec": {}}),
    )
    .await;
    assert_status(&renamed, 422, "Invalid");
    assert_eq!(
        renamed.body["message"],
        "TokenRequest.authentication.k8s.io \"robot\" is invalid: metadata.name: Invalid value: \"zz\": must match the service account name if specified"
    );
    let configmap = token(
        &env,
        "robot",
        json!({"boundObjectRef": {"kind": "ConfigMap", "apiVersion": "v1", "name": "x"}}),
    )
    .await;
    assert_status(&configmap, 400, "BadRequest");
    assert_eq!(
        configmap.body["message"],
        "cannot bind token to object of type /v1, Kind=ConfigMap"
    );

    assert_eq!(
        review(&env, "garbage", None).await,
        json!({"user": {}, "error": "invalid bearer token"})
    );
    let issued = token(&env, "robot", json!({})).await;
    let good = issued.body["status"]["token"].as_str().expect("a token");
    let tampered = review(&env, &format!("{good}x"), None).await;
    assert_eq!(
        tampered,
        json!({"user": {}, "error": "[invalid bearer token, go-jose/go-jose: error in cryptographic primitive]"})
    );
    let empty = post(
        &env,
        "/apis/authentication.k8s.io/v1/tokenreviews",
        json!({"spec": {}}),
    )
    .await;
    assert_status(&empty, 400, "BadRequest");
    assert_eq!(
        empty.body["message"],
        "token is required for TokenReview in authentication"
    );
}

/// The review of `token` once it has settled on `error`: at once on the fake; kube-apiserver
/// caches a successful authentication for up to 10 s.
async fn review_until_refused(env: &Env, token: &str, error: &str) {
    let expected = json!({"user": {}, "error": error});
    if env.is_fake() {
        assert_eq!(review(env, token, None).await, expected);
        return;
    }
    let deadline = tokio::time::Instant::now() + EVENTUALLY;
    loop {
        let status = review(env, token, None).await;
        if status == expected {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "still {status} after {EVENTUALLY:?}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

async fn tokens_stop_authenticating_when_their_service_account_or_pod_goes(env: Env) {
    service_account(&env, "robot").await;
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "holder"},
        "spec": {"schedulerName": "none", "serviceAccountName": "robot", "containers": [{"name": "c", "image": "busybox"}]},
    }))
    .expect("a pod");
    env.api::<Pod>()
        .create(&PostParams::default(), &pod)
        .await
        .expect("create pod");
    let plain = token(&env, "robot", json!({})).await;
    let plain = plain.body["status"]["token"]
        .as_str()
        .expect("a token")
        .to_string();
    let bound = token(
        &env,
        "robot",
        json!({"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "holder"}}),
    )
    .await;
    assert_eq!(bound.code, 201, "{}", bound.text);
    let bound = bound.body["status"]["token"]
        .as_str()
        .expect("a token")
        .to_string();
    let status = review(&env, &bound, None).await;
    assert_eq!(status["authenticated"], true);
    assert_eq!(
        status["user"]["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["holder"])
    );

    env.api::<Pod>()
        .delete(
            "holder",
            &kube::api::DeleteParams::default().grace_period(0),
        )
        .await
        .expect("delete the pod");
    env.wait_gone(&env.api::<Pod>(), "holder").await;
    review_until_refused(
        &env,
        &bound,
        "[invalid bearer token, service account token has been invalidated]",
    )
    .await;
    assert_eq!(review(&env, &plain, None).await["authenticated"], true);

    env.api::<ServiceAccount>()
        .delete("robot", &Default::default())
        .await
        .expect("delete the SA");
    review_until_refused(
        &env,
        &plain,
        "[invalid bearer token, serviceaccounts \"robot\" not found]",
    )
    .await;
}
