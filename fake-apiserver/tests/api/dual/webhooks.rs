//! Admission webhooks, as kube-apiserver calls them: what a mutating webhook is shown and what
//! its patch does, a validating webhook's denial, a webhook that cannot be reached under each
//! failurePolicy, updates, patches and deletes as admission names them, dry runs, selectors and
//! matchConditions, reinvocation.
//!
//! Each test serves its webhooks on loopback (`webhook_server`) and registers them for its own
//! namespace only (a namespaceSelector on its name label), so that the other tests on the shared
//! control plane never meet them. kube-apiserver learns of a configuration from a watch: each
//! registration waits until a webhook has been shown a dry-run probe.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Env, Raw, dual, eventually};
use crate::webhook_server::{self, Webhook, patched};

dual!(
    a_mutating_webhook_patches_a_create_and_sees_it_before_the_registry,
    a_validating_webhook_sees_the_object_to_store_and_its_denial_is_the_answer,
    a_webhook_that_cannot_be_reached_fails_the_write_or_is_ignored,
    a_patch_is_admitted_as_the_update_or_create_it_makes,
    a_delete_is_admitted_with_the_object_it_removes,
    selectors_and_match_conditions_choose_the_webhooks,
    a_reinvocable_webhook_is_called_again_after_a_later_change,
    a_webhook_that_answers_too_late_fails_the_write_or_is_ignored,
    a_patch_that_does_not_apply_fails_the_write_whatever_the_failure_policy,
    an_equivalent_resource_is_shown_in_the_version_its_rule_names,
);

const MUTATING: &str = "mutatingwebhookconfigurations";
const VALIDATING: &str = "validatingwebhookconfigurations";

/// A webhook entry for ConfigMaps in the test's namespace, at `client`.
fn webhook(env: &Env, name: &str, client: Value, operations: &[&str]) -> Value {
    json!({
        "name": name,
        "clientConfig": client,
        "rules": [{"operations": operations, "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": env.ns}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    })
}

/// Register a configuration (deleted when the test ends) and wait until `probed` has been shown
/// a dry-run create of a ConfigMap named `probe`.
async fn register(env: &Env, plural: &str, base: &str, webhooks: Vec<Value>, probed: &Webhook) {
    let name = env.name(base);
    let kind = match plural {
        MUTATING => "MutatingWebhookConfiguration",
        _ => "ValidatingWebhookConfiguration",
    };
    let path = format!("/apis/admissionregistration.k8s.io/v1/{plural}");
    let config = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
        "metadata": {"name": name}, "webhooks": webhooks});
    let created = env
        .raw("POST", &path, "application/json", config.to_string())
        .await;
    assert_eq!(created.code, 201, "{}", created.text);
    env.delete_at_end(format!("{path}/{name}"));
    let probe = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}});
    eventually("the webhook is called", || async {
        create_configmap(env, probe.clone(), "?dryRun=All").await;
        probed
            .requests()
            .iter()
            .any(|r| r["object"]["metadata"]["name"] == "probe")
    })
    .await;
}

async fn create_configmap(env: &Env, cm: Value, query: &str) -> Raw {
    let path = format!("/api/v1/namespaces/{}/configmaps{query}", env.ns);
    env.raw("POST", &path, "application/json", cm.to_string())
        .await
}

/// The requests a webhook was shown for the test's own writes: the probes left out, and so are
/// the writes of kube-controller-manager's controllers (its root CA publisher creates
/// `kube-root-ca.crt` in a new namespace whenever it gets to it, which can be after the
/// webhook is registered).
fn shown(hook: &Webhook) -> Vec<Value> {
    hook.requests()
        .into_iter()
        .filter(|r| r["object"]["metadata"]["name"] != "probe")
        .filter(|r| {
            !r["userInfo"]["username"]
                .as_str()
                .is_some_and(|u| u.starts_with("system:serviceaccount:kube-system:"))
        })
        .collect()
}

async fn a_mutating_webhook_patches_a_create_and_sees_it_before_the_registry(env: Env) {
    let hook = webhook_server::start(Arc::new(|_: &Value| {
        Ok(patched(json!([
            {"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}},
            {"op": "add", "path": "/data/added", "value": "by the webhook"},
        ])))
    }))
    .await;
    let entry = webhook(
        &env,
        "label.webhooks.tollgate.dev",
        hook.client_config("/mutate"),
        &["CREATE"],
    );
    register(&env, MUTATING, "label", vec![entry], &hook).await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"generateName": "made-"}, "data": {"a": "b"}});
    let created = create_configmap(&env, cm, "?fieldManager=tests").await;
    assert_eq!(created.code, 201, "{}", created.text);
    assert_eq!(
        created.body["metadata"]["labels"],
        json!({"mutated": "yes"})
    );
    assert_eq!(
        created.body["data"],
        json!({"a": "b", "added": "by the webhook"})
    );
    // The webhook's fields are nobody's: managedFields name what the client wrote.
    let owned = created.body["metadata"]["managedFields"].to_string();
    assert!(
        !owned.contains("mutated") && !owned.contains("added"),
        "{owned}"
    );
    let seen = shown(&hook);
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let r = &seen[0];
    assert_eq!(r["operation"], "CREATE");
    assert_eq!(
        r["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        r["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(r["requestKind"], r["kind"]);
    assert_eq!(r["requestResource"], r["resource"]);
    assert_eq!(r["namespace"], json!(env.ns));
    // Before the registry: no name made from generateName yet, no uid, no creation time.
    assert_eq!(r.get("name"), None, "{r:#}");
    let meta = &r["object"]["metadata"];
    assert_eq!(meta["generateName"], "made-");
    assert_eq!(meta.get("name"), None, "{meta:#}");
    assert_eq!(meta.get("uid"), None, "{meta:#}");
    assert_eq!(meta["creationTimestamp"], Value::Null, "{meta:#}");
    // ... but after the field manager.
    assert_eq!(meta["managedFields"][0]["manager"], "tests", "{meta:#}");
    assert_eq!(r["oldObject"], Value::Null);
    assert_eq!(r["dryRun"], false);
    assert_eq!(
        r["options"],
        json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "tests"})
    );
    assert!(r["uid"].as_str().is_some_and(|u| u.len() == 36), "{r:#}");
}

async fn a_validating_webhook_sees_the_object_to_store_and_its_denial_is_the_answer(env: Env) {
    let hook = webhook_server::start(Arc::new(|r: &Value| {
        let name = r["name"].as_str().unwrap_or("");
        Ok(match name {
            n if n.starts_with("deny-with-status") => json!({"allowed": false,
                "status": {"code": 403, "reason": "Forbidden", "message": "not this name"}}),
            n if n.starts_with("deny-plainly") => json!({"allowed": false}),
            n if n.starts_with("deny-with-200") => json!({"allowed": false,
                "status": {"code": 200, "message": "a code below 400"}}),
            _ => json!({"allowed": true, "warnings": ["seen by the validating webhook"]}),
        })
    }))
    .await;
    let entry = webhook(
        &env,
        "names.webhooks.tollgate.dev",
        hook.client_config("/validate"),
        &["CREATE"],
    );
    register(&env, VALIDATING, "names", vec![entry], &hook).await;
    let cm =
        |name: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    let denied = create_configmap(&env, cm("deny-with-status"), "").await;
    assert_eq!(denied.code, 403, "{}", denied.text);
    assert_eq!(denied.body["reason"], "Forbidden");
    assert_eq!(
        denied.body["message"],
        "admission webhook \"names.webhooks.tollgate.dev\" denied the request: not this name"
    );
    let plain = create_configmap(&env, cm("deny-plainly"), "").await;
    assert_eq!(plain.code, 400, "{}", plain.text);
    assert_eq!(
        plain.body["message"],
        "admission webhook \"names.webhooks.tollgate.dev\" denied the request without explanation"
    );
    let low = create_configmap(&env, cm("deny-with-200"), "").await;
    assert_eq!(low.code, 400, "{}", low.text);
    let allowed = create_configmap(&env, cm("allowed"), "").await;
    assert_eq!(allowed.code, 201, "{}", allowed.text);
    let warnings: Vec<&str> = allowed
        .headers
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    assert_eq!(warnings, ["299 - \"seen by the validating webhook\""]);
    // Nothing denied was stored.
    let listed = env
        .raw(
            "GET",
            &format!("/api/v1/namespaces/{}/configmaps", env.ns),
            "",
            "",
        )
        .await;
    let names: Vec<&str> = listed.body["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .filter(|n| *n != "kube-root-ca.crt")
        .collect();
    assert_eq!(names, ["allowed"]);
    // Validating webhooks see the object as it will be stored.
    let seen = shown(&hook);
    let last = seen.last().expect("the allowed create was shown");
    assert_eq!(last["name"], "allowed");
    let meta = &last["object"]["metadata"];
    assert!(
        meta["uid"].as_str().is_some_and(|u| !u.is_empty()),
        "{meta:#}"
    );
    assert!(meta["creationTimestamp"].is_string(), "{meta:#}");
}

async fn a_webhook_that_cannot_be_reached_fails_the_write_or_is_ignored(env: Env) {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
        listener.local_addr().expect("its address").port()
    };
    let ready = webhook_server::start(Arc::new(|_: &Value| Ok(json!({})))).await;
    // Another certificate than the webhook's own: the TLS handshake fails.
    let stranger = webhook_server::start(Arc::new(|_: &Value| Ok(json!({})))).await;
    let untrusted = json!({"url": ready.url("/untrusted"), "caBundle": stranger.ca_bundle});
    let at = |target: &str, name: &str, client: Value, policy: &str| {
        let mut w = webhook(&env, name, client, &["CREATE"]);
        w["failurePolicy"] = json!(policy);
        w["objectSelector"] = json!({"matchLabels": {"target": target}});
        w
    };
    let unreachable = json!({"url": format!("https://127.0.0.1:{closed}/gone")});
    let entries = vec![
        at(
            "fail",
            "refused.webhooks.tollgate.dev",
            unreachable.clone(),
            "Fail",
        ),
        at(
            "ignore",
            "ignored.webhooks.tollgate.dev",
            unreachable,
            "Ignore",
        ),
        at("tls", "untrusted.webhooks.tollgate.dev", untrusted, "Fail"),
        webhook(
            &env,
            "ready.webhooks.tollgate.dev",
            ready.client_config("/ready"),
            &["CREATE"],
        ),
    ];
    register(&env, VALIDATING, "unreachable", entries, &ready).await;
    let cm = |name: &str, target: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"target": target}}})
    };
    let refused = create_configmap(&env, cm("refused", "fail"), "").await;
    assert_eq!(refused.code, 500, "{}", refused.text);
    assert_eq!(refused.body["reason"], "InternalError");
    let cause = format!(
        "failed calling webhook \"refused.webhooks.tollgate.dev\": failed to call webhook: Post \"https://127.0.0.1:{closed}/gone?timeout=10s\": dial tcp 127.0.0.1:{closed}: connect: connection refused"
    );
    assert_eq!(
        refused.body["message"],
        json!(format!("Internal error occurred: {cause}"))
    );
    assert_eq!(
        refused.body["details"]["causes"],
        json!([{"message": cause}])
    );
    let ignored = create_configmap(&env, cm("ignored", "ignore"), "").await;
    assert_eq!(ignored.code, 201, "{}", ignored.text);
    let untrusted = create_configmap(&env, cm("untrusted", "tls"), "").await;
    assert_eq!(untrusted.code, 500, "{}", untrusted.text);
    assert_eq!(
        untrusted.body["message"],
        json!(format!(
            "Internal error occurred: failed calling webhook \"untrusted.webhooks.tollgate.dev\": failed to call webhook: Post \"{}?timeout=10s\": tls: failed to verify certificate: x509: certificate signed by unknown authority",
            ready.url("/untrusted")
        ))
    );
}

async fn a_patch_is_admitted_as_the_update_or_create_it_makes(env: Env) {
    let hook = webhook_server::start(Arc::new(|_: &Value| Ok(json!({})))).await;
    let entry = webhook(
        &env,
        "updates.webhooks.tollgate.dev",
        hook.client_config("/u"),
        &["CREATE", "UPDATE"],
    );
    register(&env, MUTATING, "updates", vec![entry], &hook).await;
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"v": "1"}});
    assert_eq!(create_configmap(&env, cm, "").await.code, 201);
    let patch = json!({"data": {"v": "2"}}).to_string();
    let patched = env
        .raw(
            "PATCH",
            &format!("{base}/c?fieldManager=patcher"),
            "application/merge-patch+json",
            patch,
        )
        .await;
    assert_eq!(patched.code, 200, "{}", patched.text);
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"v": "1"}});
    let created = env
        .raw(
            "PATCH",
            &format!("{base}/a?fieldManager=applier&force=true"),
            "application/apply-patch+yaml",
            applied.to_string(),
        )
        .await;
    assert_eq!(created.code, 201, "{}", created.text);
    let seen = shown(&hook);
    let ops: Vec<(&str, &str)> = seen
        .iter()
        .map(|r| {
            (
                r["operation"].as_str().unwrap_or(""),
                r["options"]["kind"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        ops,
        [
            ("CREATE", "CreateOptions"),
            ("UPDATE", "UpdateOptions"),
            ("CREATE", "CreateOptions")
        ]
    );
    let update = &seen[1];
    assert_eq!(update["name"], "c");
    assert_eq!(update["oldObject"]["data"], json!({"v": "1"}));
    assert_eq!(update["object"]["data"], json!({"v": "2"}));
    assert_eq!(
        update["options"],
        json!({"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "patcher"})
    );
    // An apply that creates is shown as a create, its force left out.
    assert_eq!(
        seen[2]["options"],
        json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "fieldManager": "applier"})
    );
}

async fn a_delete_is_admitted_with_the_object_it_removes(env: Env) {
    let hook = webhook_server::start(Arc::new(|r: &Value| {
        let keep = r["oldObject"]["metadata"]["labels"]["keep"] == "yes";
        Ok(match (r["operation"].as_str(), keep) {
            (Some("DELETE"), true) => {
                json!({"allowed": false, "status": {"code": 409, "message": "kept"}})
            }
            _ => json!({}),
        })
    }))
    .await;
    let entry = webhook(
        &env,
        "deletes.webhooks.tollgate.dev",
        hook.client_config("/d"),
        &["CREATE", "DELETE"],
    );
    register(&env, VALIDATING, "deletes", vec![entry], &hook).await;
    let cm = |name: &str, keep: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"keep": keep}}})
    };
    assert_eq!(
        create_configmap(&env, cm("kept", "yes"), "").await.code,
        201
    );
    assert_eq!(create_configmap(&env, cm("gone", "no"), "").await.code, 201);
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let refused = env.raw("DELETE", &format!("{base}/kept"), "", "").await;
    assert_eq!(refused.code, 409, "{}", refused.text);
    assert_eq!(
        refused.body["message"],
        "admission webhook \"deletes.webhooks.tollgate.dev\" denied the request: kept"
    );
    assert_eq!(
        env.raw("GET", &format!("{base}/kept"), "", "").await.code,
        200
    );
    let options =
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"});
    let deleted = env
        .raw(
            "DELETE",
            &format!("{base}/gone"),
            "application/json",
            options.to_string(),
        )
        .await;
    assert_eq!(deleted.code, 200, "{}", deleted.text);
    let seen = shown(&hook);
    let delete = seen
        .iter()
        .find(|r| r["operation"] == "DELETE" && r["name"] == "gone")
        .expect("the delete was shown");
    assert_eq!(delete["object"], Value::Null);
    assert_eq!(delete["oldObject"]["metadata"]["name"], "gone");
    assert_eq!(delete["options"]["kind"], "DeleteOptions");
    assert_eq!(delete["options"]["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(delete["options"]["propagationPolicy"], "Background");
}

async fn selectors_and_match_conditions_choose_the_webhooks(env: Env) {
    let hook = webhook_server::start(Arc::new(|_: &Value| Ok(json!({})))).await;
    let with = |name: &str, extra: Value| {
        let mut w = webhook(
            &env,
            name,
            hook.client_config(&format!("/{name}")),
            &["CREATE"],
        );
        if let (Some(w), Some(extra)) = (w.as_object_mut(), extra.as_object()) {
            w.extend(extra.clone());
        }
        w
    };
    let entries = vec![
        with("all.webhooks.tollgate.dev", json!({})),
        with(
            "labelled.webhooks.tollgate.dev",
            json!({"objectSelector": {"matchLabels": {"app": "x"}}}),
        ),
        with(
            "named.webhooks.tollgate.dev",
            json!({"matchConditions": [
            {"name": "starts-with-b", "expression": "object.metadata.name.startsWith('b')"}]}),
        ),
        with(
            "broken.webhooks.tollgate.dev",
            json!({"matchConditions": [
            {"name": "reads-a-missing-key", "expression": "object.data.missing == 'x'"}],
            "objectSelector": {"matchLabels": {"app": "broken"}}}),
        ),
    ];
    register(&env, VALIDATING, "selectors", entries, &hook).await;
    let cm = |name: &str, app: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": app}}, "data": {"k": "v"}})
    };
    assert_eq!(
        create_configmap(&env, cm("a-plain", "none"), "").await.code,
        201
    );
    assert_eq!(
        create_configmap(&env, cm("b-labelled", "x"), "").await.code,
        201
    );
    let called = |name: &str| -> Vec<String> {
        let mut paths: Vec<String> = hook
            .requests()
            .iter()
            .filter(|r| r["object"]["metadata"]["name"] == name)
            .map(|r| r["options"]["kind"].as_str().unwrap_or("").to_string())
            .collect();
        paths.sort();
        paths
    };
    // Which webhooks saw each object: counted, since all share one server.
    assert_eq!(called("a-plain").len(), 1, "only `all`");
    assert_eq!(
        called("b-labelled").len(),
        3,
        "`all`, `labelled` and `named`"
    );
    let broken = create_configmap(&env, cm("c-broken", "broken"), "").await;
    assert_eq!(broken.code, 403, "{}", broken.text);
    assert_eq!(
        broken.body["message"],
        "configmaps \"c-broken\" is forbidden: expression 'object.data.missing == 'x'' resulted in error: no such key: missing"
    );
}

async fn a_reinvocable_webhook_is_called_again_after_a_later_change(env: Env) {
    // `first` copies the labels it finds into an annotation; `second`, after it, adds a label.
    let first = webhook_server::start(Arc::new(|r: &Value| {
        let labels = r["object"]["metadata"]["labels"].to_string();
        Ok(patched(
            json!([{"op": "add", "path": "/metadata/annotations",
            "value": {"labels-seen": labels}}]),
        ))
    }))
    .await;
    let second = webhook_server::start(Arc::new(|_: &Value| {
        Ok(patched(
            json!([{"op": "add", "path": "/metadata/labels/second", "value": "yes"}]),
        ))
    }))
    .await;
    let mut reinvoked = webhook(
        &env,
        "a-first.webhooks.tollgate.dev",
        first.client_config("/f"),
        &["CREATE"],
    );
    reinvoked["reinvocationPolicy"] = json!("IfNeeded");
    let later = webhook(
        &env,
        "b-second.webhooks.tollgate.dev",
        second.client_config("/s"),
        &["CREATE"],
    );
    register(
        &env,
        MUTATING,
        "reinvocation",
        vec![reinvoked, later],
        &second,
    )
    .await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "r", "labels": {"own": "label"}}});
    let created = create_configmap(&env, cm, "").await;
    assert_eq!(created.code, 201, "{}", created.text);
    assert_eq!(
        created.body["metadata"]["labels"],
        json!({"own": "label", "second": "yes"})
    );
    // Called again after `second`'s change, `first` saw its label.
    assert_eq!(
        created.body["metadata"]["annotations"]["labels-seen"],
        json!({"own": "label", "second": "yes"}).to_string()
    );
    let (first, second) = (shown(&first), shown(&second));
    assert_eq!(first.len(), 2, "{first:#?}");
    assert_eq!(second.len(), 1, "{second:#?}");
}

async fn a_webhook_that_answers_too_late_fails_the_write_or_is_ignored(env: Env) {
    // It answers the registration's probe at once, and nothing else ever.
    let silent = webhook_server::start_as(
        &["127.0.0.1"],
        Arc::new(|r: Value| {
            Box::pin(async move {
                if r["object"]["metadata"]["name"] != "probe" {
                    std::future::pending::<()>().await;
                }
                Ok(json!({}))
            })
        }),
    )
    .await;
    // Each takes the objects not meant for the other, and so both take the unlabelled probe.
    let at = |target: &str, other: &str, policy: &str| {
        let name = format!("{target}.webhooks.tollgate.dev");
        let mut w = webhook(&env, &name, silent.client_config("/slow"), &["CREATE"]);
        w["failurePolicy"] = json!(policy);
        w["timeoutSeconds"] = json!(1);
        w["objectSelector"] = json!({"matchExpressions": [
            {"key": "target", "operator": "NotIn", "values": [other]}]});
        w
    };
    register(
        &env,
        VALIDATING,
        "slow",
        vec![at("fail", "ignore", "Fail"), at("ignore", "fail", "Ignore")],
        &silent,
    )
    .await;
    let cm = |name: &str, target: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"target": target}}})
    };
    let failed = create_configmap(&env, cm("failed", "fail"), "").await;
    assert_eq!(failed.code, 500, "{}", failed.text);
    assert_eq!(
        failed.body["message"],
        json!(format!(
            "Internal error occurred: failed calling webhook \"fail.webhooks.tollgate.dev\": failed to call webhook: Post \"{}?timeout=1s\": context deadline exceeded",
            silent.url("/slow")
        ))
    );
    let passed = create_configmap(&env, cm("passed", "ignore"), "").await;
    assert_eq!(passed.code, 201, "{}", passed.text);
    let path = format!("/api/v1/namespaces/{}/configmaps/failed", env.ns);
    assert_eq!(env.raw("GET", &path, "", String::new()).await.code, 404);
}

async fn a_patch_that_does_not_apply_fails_the_write_whatever_the_failure_policy(env: Env) {
    let hook = webhook_server::start(Arc::new(|r: &Value| {
        Ok(match r["object"]["metadata"]["name"].as_str() {
            Some("removes-nothing") => patched(json!([{"op": "remove", "path": "/data/missing"}])),
            Some("tests-wrongly") => {
                patched(json!([{"op": "test", "path": "/data/a", "value": "x"}]))
            }
            Some("adds-under-nothing") => {
                patched(json!([{"op": "add", "path": "/spec/deep/key", "value": 1}]))
            }
            _ => json!({}),
        })
    }))
    .await;
    let mut entry = webhook(
        &env,
        "broken-patch.webhooks.tollgate.dev",
        hook.client_config("/p"),
        &["CREATE"],
    );
    entry["failurePolicy"] = json!("Ignore");
    register(&env, MUTATING, "broken-patch", vec![entry], &hook).await;
    let cases = [
        (
            "removes-nothing",
            "error in remove for path: '/data/missing': Unable to remove nonexistent key: missing: missing value",
        ),
        ("tests-wrongly", "testing value /data/a failed: test failed"),
        (
            "adds-under-nothing",
            "add operation does not apply: doc is missing path: \"/spec/deep/key\": missing value",
        ),
    ];
    for (name, why) in cases {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
            "data": {"a": "b"}});
        let refused = create_configmap(&env, cm, "").await;
        assert_eq!(refused.code, 500, "{}", refused.text);
        assert_eq!(refused.body["reason"], "InternalError");
        assert_eq!(
            refused.body["message"],
            json!(format!("Internal error occurred: {why}")),
            "{name}"
        );
        let path = format!("/api/v1/namespaces/{}/configmaps/{name}", env.ns);
        assert_eq!(env.raw("GET", &path, "", String::new()).await.code, 404);
    }
}

async fn an_equivalent_resource_is_shown_in_the_version_its_rule_names(env: Env) {
    let allow = || webhook_server::start(Arc::new(|_: &Value| Ok(json!({}))));
    let (equivalent, exact, probed) = (allow().await, allow().await, allow().await);
    // Both name events.k8s.io/v1 only; core v1 Events are stored as the same resource.
    let for_new_events = |name: &str, hook: &Webhook, policy: &str| {
        let mut w = webhook(&env, name, hook.client_config("/events"), &["CREATE"]);
        w["rules"] = json!([{"operations": ["CREATE"], "apiGroups": ["events.k8s.io"],
            "apiVersions": ["v1"], "resources": ["events"]}]);
        w["matchPolicy"] = json!(policy);
        w
    };
    let entries = vec![
        for_new_events(
            "equivalent.webhooks.tollgate.dev",
            &equivalent,
            "Equivalent",
        ),
        for_new_events("exact.webhooks.tollgate.dev", &exact, "Exact"),
        webhook(
            &env,
            "probed.webhooks.tollgate.dev",
            probed.client_config("/probe"),
            &["CREATE"],
        ),
    ];
    register(&env, VALIDATING, "equivalent", entries, &probed).await;
    let event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
        "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": env.ns},
        "reason": "Tested", "message": "hello", "type": "Normal"});
    let path = format!("/api/v1/namespaces/{}/events", env.ns);
    let created = env
        .raw("POST", &path, "application/json", event.to_string())
        .await;
    assert_eq!(created.code, 201, "{}", created.text);
    assert_eq!(exact.requests(), Vec::<Value>::new());
    let seen = equivalent.requests();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    let r = &seen[0];
    assert_eq!(
        r["kind"],
        json!({"group": "events.k8s.io", "version": "v1", "kind": "Event"})
    );
    assert_eq!(
        r["resource"],
        json!({"group": "events.k8s.io", "version": "v1", "resource": "events"})
    );
    assert_eq!(
        r["requestKind"],
        json!({"group": "", "version": "v1", "kind": "Event"})
    );
    assert_eq!(
        r["requestResource"],
        json!({"group": "", "version": "v1", "resource": "events"})
    );
    // The object as events.k8s.io/v1 has it.
    let object = &r["object"];
    assert_eq!(object["apiVersion"], "events.k8s.io/v1", "{object:#}");
    assert_eq!(object["kind"], "Event");
    assert_eq!(object["note"], "hello", "{object:#}");
    assert_eq!(object["regarding"]["name"], "x", "{object:#}");
    assert_eq!(object.get("message"), None, "{object:#}");
}
