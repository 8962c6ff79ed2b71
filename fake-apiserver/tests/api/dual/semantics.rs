//! Semantics a client sees in the stored objects, on both targets: field selectors read Go's zero
//! values, server-side apply prunes the parents it empties, a CRD version shows only its own
//! schema's fields, generation on deletion, the defaults of workload kinds, and a terminating
//! namespace's conditions.

use k8s_openapi::api::core::v1::Namespace;
use serde_json::{Value, json};

use super::{Env, Raw, dual};

dual!(
    field_selectors_read_unset_fields_as_go_zero_values,
    apply_removes_the_parents_it_empties,
    a_crd_version_shows_only_its_schemas_fields,
    deletion_bumps_generation_labels_and_status_do_not,
    workload_kinds_get_the_real_servers_defaults,
    a_terminating_namespace_says_what_holds_it,
);

async fn send(env: &Env, method: &str, path: &str, body: Value) -> Raw {
    let content_type = match method {
        "PATCH" => "application/merge-patch+json",
        _ => "application/json",
    };
    env.raw(method, path, content_type, body.to_string()).await
}

async fn ok(env: &Env, method: &str, path: &str, body: Value) -> Value {
    let raw = send(env, method, path, body).await;
    assert!(
        (200..300).contains(&raw.code),
        "{method} {path}: {}",
        raw.text
    );
    raw.body
}

async fn apply(env: &Env, path: &str, manager: &str, body: Value) -> Value {
    let path = format!("{path}?fieldManager={manager}");
    let raw = env
        .raw(
            "PATCH",
            &path,
            "application/apply-patch+yaml",
            body.to_string(),
        )
        .await;
    assert!(matches!(raw.code, 200 | 201), "apply {path}: {}", raw.text);
    raw.body
}

/// The names a list with this field selector returns.
async fn selected(env: &Env, collection: &str, selector: &str) -> Vec<String> {
    let path = format!(
        "{collection}?fieldSelector={}",
        selector.replace('=', "%3D").replace(',', "%2C")
    );
    let body = ok(env, "GET", &path, Value::Null).await;
    let mut names: Vec<String> = body["items"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap_or("").to_string())
        .collect();
    names.sort();
    names
}

async fn field_selectors_read_unset_fields_as_go_zero_values(env: Env) {
    let ns = env.ns.clone();
    let node = env.name("plain");
    env.delete_at_end(format!("/api/v1/nodes/{node}"));
    ok(
        &env,
        "POST",
        "/api/v1/nodes",
        json!({"metadata": {"name": node}}),
    )
    .await;
    let only = format!("metadata.name={node}");
    for (selector, hit) in [
        ("spec.unschedulable=false", true),
        ("spec.unschedulable!=true", true),
        ("spec.unschedulable=", false),
    ] {
        let found = selected(&env, "/api/v1/nodes", &format!("{only},{selector}")).await;
        assert_eq!(found.len(), usize::from(hit), "nodes {selector}: {found:?}");
    }

    env.default_service_account().await;
    let pods = format!("/api/v1/namespaces/{ns}/pods");
    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    ok(&env, "POST", &pods, pod).await;
    for (selector, hit) in [
        ("spec.hostNetwork=false", true),
        ("spec.hostNetwork=", false),
        ("spec.nodeName=", true),
        ("status.podIP=", true),
        ("status.podIPs=", true),
        ("status.nominatedNodeName=", true),
        ("spec.restartPolicy=Always", true),
    ] {
        let found = selected(&env, &pods, selector).await;
        assert_eq!(found.len(), usize::from(hit), "pods {selector}: {found:?}");
    }

    let events = format!("/api/v1/namespaces/{ns}/events");
    let involved = json!({"kind": "Pod", "name": "p", "namespace": ns});
    ok(
        &env,
        "POST",
        &events,
        json!({"metadata": {"name": "bare"}, "involvedObject": involved}),
    )
    .await;
    ok(
        &env,
        "POST",
        &events,
        json!({"metadata": {"name": "sourced"}, "involvedObject": involved,
               "reason": "Seen", "type": "Normal", "source": {"component": "comp", "host": "h"}}),
    )
    .await;
    for (selector, want) in [
        ("source=comp", vec!["sourced"]),
        ("source=h", vec![]),
        ("source=", vec!["bare"]),
        ("reason=", vec!["bare"]),
        ("type=", vec!["bare"]),
        ("involvedObject.uid=", vec!["bare", "sourced"]),
    ] {
        assert_eq!(
            selected(&env, &events, selector).await,
            want,
            "events {selector}"
        );
    }

    let jobs = format!("/apis/batch/v1/namespaces/{ns}/jobs");
    let job = json!({"metadata": {"name": "j"}, "spec": {"suspend": true, "template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}});
    ok(&env, "POST", &jobs, job).await;
    assert_eq!(selected(&env, &jobs, "status.successful=0").await, ["j"]);
    assert!(selected(&env, &jobs, "status.successful=").await.is_empty());

    let secrets = format!("/api/v1/namespaces/{ns}/secrets");
    ok(&env, "POST", &secrets, json!({"metadata": {"name": "s"}})).await;
    assert_eq!(selected(&env, &secrets, "type=Opaque").await, ["s"]);
}

async fn apply_removes_the_parents_it_empties(env: Env) {
    let ns = env.ns.clone();
    let cm = format!("/api/v1/namespaces/{ns}/configmaps/a");
    // Fields given as null are left out.
    let config = |annotations: Value, data: Value| {
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
        if !annotations.is_null() {
            cm["metadata"]["annotations"] = annotations;
        }
        if !data.is_null() {
            cm["data"] = data;
        }
        cm
    };
    apply(
        &env,
        &cm,
        "m1",
        config(json!({"a": "1"}), json!({"x": "1"})),
    )
    .await;
    let after = apply(&env, &cm, "m1", config(Value::Null, json!({"x": "1"}))).await;
    assert_eq!(after["metadata"].get("annotations"), None, "{after}");
    // A parent someone else also fills stays, with their part.
    apply(
        &env,
        &cm,
        "m1",
        config(json!({"a": "1"}), json!({"x": "1"})),
    )
    .await;
    apply(&env, &cm, "m2", config(json!({"b": "1"}), Value::Null)).await;
    let after = apply(&env, &cm, "m1", config(Value::Null, json!({"x": "1"}))).await;
    assert_eq!(after["metadata"]["annotations"], json!({"b": "1"}));

    let crd = crd(
        &env,
        "aps",
        "Ap",
        vec![
            json!({"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": {
                "m": {"type": "object", "additionalProperties": {"type": "string"}},
                "s": {"type": "object", "properties": {"x": {"type": "string"}}},
                "l": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"], "properties": {
                          "name": {"type": "string"},
                          "t": {"type": "object", "properties": {"z": {"type": "string"}}}}}},
                "k": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"], "properties": {
                          "name": {"type": "string"}}}}}}}}}}),
        ],
    )
    .await;
    let path = format!("/apis/{}/v1/namespaces/{ns}/aps/c", crd.group);
    let object = |spec: Value| {
        json!({"apiVersion": format!("{}/v1", crd.group), "kind": "Ap",
               "metadata": {"name": "c"}, "spec": spec})
    };
    apply(
        &env,
        &path,
        "m1",
        object(
            json!({"m": {"a": "1"}, "s": {"x": "1"}, "k": [{"name": "k1"}],
                      "l": [{"name": "n1", "t": {"z": "1"}}]}),
        ),
    )
    .await;
    let after = apply(&env, &path, "m1", object(json!({"l": [{"name": "n1"}]}))).await;
    assert_eq!(after["spec"], json!({"l": [{"name": "n1"}]}), "{after}");
    // An empty map the applier gives is owned by it, and stays.
    let after = apply(&env, &path, "m1", object(json!({"s": {}}))).await;
    assert_eq!(after["spec"], json!({"s": {}}), "{after}");
}

struct Crd {
    group: String,
}

/// A CRD of the test's own group with these versions.
async fn crd(env: &Env, plural: &str, kind: &str, versions: Vec<Value>) -> Crd {
    let group = format!("{}.sem.example.com", env.ns);
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": plural, "kind": kind}, "versions": versions},
    });
    env.create_crd(&serde_json::from_value(crd).expect("a CRD"))
        .await;
    Crd { group }
}

async fn a_crd_version_shows_only_its_schemas_fields(env: Env) {
    let ns = env.ns.clone();
    let schema = |extra: &str, extra_schema: Value| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"shared": {"type": "string"}, extra: extra_schema}}}}})
    };
    let crd = crd(
        &env,
        "convs",
        "Conv",
        vec![
            json!({"name": "v1", "served": true, "storage": true,
                   "schema": schema("old", json!({"type": "string"}))}),
            json!({"name": "v2", "served": true, "storage": false,
                   "schema": schema("new", json!({"type": "string", "default": "d"}))}),
        ],
    )
    .await;
    let g = &crd.group;
    let v1 = format!("/apis/{g}/v1/namespaces/{ns}/convs");
    let v2 = format!("/apis/{g}/v2/namespaces/{ns}/convs");
    let created = ok(
        &env,
        "POST",
        &v1,
        json!({"apiVersion": format!("{g}/v1"), "kind": "Conv", "metadata": {"name": "c"},
               "spec": {"shared": "s", "old": "o"}}),
    )
    .await;
    assert_eq!(created["spec"], json!({"old": "o", "shared": "s"}));
    let as_v2 = ok(&env, "GET", &format!("{v2}/c"), Value::Null).await;
    assert_eq!(as_v2["apiVersion"], format!("{g}/v2"));
    assert_eq!(
        as_v2["spec"],
        json!({"shared": "s"}),
        "v1's field is pruned"
    );
    let listed = ok(&env, "GET", &v2, Value::Null).await;
    assert_eq!(listed["items"][0]["spec"], json!({"shared": "s"}));

    let mut update = as_v2;
    update["spec"]["shared"] = json!("t");
    ok(&env, "PUT", &format!("{v2}/c"), update).await;
    let as_v1 = ok(&env, "GET", &format!("{v1}/c"), Value::Null).await;
    assert_eq!(
        as_v1["spec"],
        json!({"shared": "t"}),
        "an update through v2 drops v1's field"
    );
}

async fn deletion_bumps_generation_labels_and_status_do_not(env: Env) {
    let ns = env.ns.clone();
    let deploy = format!("/apis/apps/v1/namespaces/{ns}/deployments/d");
    let body = json!({"metadata": {"name": "d", "finalizers": ["example.com/hold"]},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"a": "b"}},
                 "template": {"metadata": {"labels": {"a": "b"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}});
    let created = ok(
        &env,
        "POST",
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        body,
    )
    .await;
    assert_eq!(created["metadata"]["generation"], 1);
    let generation = |v: &Value| v["metadata"]["generation"].clone();
    let labelled = ok(
        &env,
        "PATCH",
        &deploy,
        json!({"metadata": {"labels": {"x": "1"}}}),
    )
    .await;
    assert_eq!(generation(&labelled), 1);
    let status = ok(
        &env,
        "PATCH",
        &format!("{deploy}/status"),
        json!({"status": {"observedGeneration": 7}}),
    )
    .await;
    assert_eq!(generation(&status), 1);
    let deleted = ok(&env, "DELETE", &deploy, Value::Null).await;
    assert!(
        deleted["metadata"]["deletionTimestamp"].is_string(),
        "{deleted}"
    );
    assert_eq!(
        generation(&deleted),
        2,
        "setting deletionTimestamp bumps it"
    );

    let cm = format!("/api/v1/namespaces/{ns}/configmaps/c");
    ok(
        &env,
        "POST",
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        json!({"metadata": {"name": "c", "finalizers": ["example.com/hold"]}}),
    )
    .await;
    let deleted = ok(&env, "DELETE", &cm, Value::Null).await;
    assert!(
        deleted["metadata"]["deletionTimestamp"].is_string(),
        "{deleted}"
    );
    assert_eq!(deleted["metadata"].get("generation"), None);
    for path in [deploy, cm] {
        ok(
            &env,
            "PATCH",
            &path,
            json!({"metadata": {"finalizers": null}}),
        )
        .await;
    }
}

/// The pod template defaults every workload kind gets, for one container.
fn template_spec(container: Value, restart: &str) -> Value {
    json!({
        "containers": [container],
        "restartPolicy": restart,
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "securityContext": {},
        "schedulerName": "default-scheduler",
    })
}

async fn workload_kinds_get_the_real_servers_defaults(env: Env) {
    let ns = env.ns.clone();
    let defaulted = |name: &str, image: &str, pull: &str| {
        json!({"name": name, "image": image, "resources": {},
               "terminationMessagePath": "/dev/termination-log",
               "terminationMessagePolicy": "File", "imagePullPolicy": pull})
    };
    let template = json!({"metadata": {"labels": {"a": "b"}}, "spec": {
        "initContainers": [{"name": "i", "image": "busybox"}],
        "containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 80}]},
                       {"name": "d", "image": "registry:5000/busybox:1.36"},
                       {"name": "e", "image": "busybox:latest"},
                       {"name": "f", "image": format!("busybox@sha256:{}", "a".repeat(64))}]}});
    let selector = json!({"matchLabels": {"a": "b"}});
    let created = ok(
        &env,
        "POST",
        &format!("/apis/apps/v1/namespaces/{ns}/deployments"),
        json!({"metadata": {"name": "d"}, "spec": {"selector": selector, "template": template}}),
    )
    .await;
    let spec = &created["spec"];
    assert_eq!(spec["replicas"], 1);
    assert_eq!(
        spec["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    );
    assert_eq!(spec["revisionHistoryLimit"], 10);
    assert_eq!(spec["progressDeadlineSeconds"], 600);
    let mut c = defaulted("c", "busybox", "Always");
    c["ports"] = json!([{"containerPort": 80, "protocol": "TCP"}]);
    let mut want = template_spec(c, "Always");
    want["containers"]
        .as_array_mut()
        .expect("containers")
        .extend([
            defaulted("d", "registry:5000/busybox:1.36", "IfNotPresent"),
            defaulted("e", "busybox:latest", "Always"),
            defaulted(
                "f",
                &format!("busybox@sha256:{}", "a".repeat(64)),
                "IfNotPresent",
            ),
        ]);
    want["initContainers"] = json!([defaulted("i", "busybox", "Always")]);
    assert_eq!(spec["template"]["spec"], want);

    let pt = ok(
        &env,
        "POST",
        &format!("/api/v1/namespaces/{ns}/podtemplates"),
        json!({"metadata": {"name": "pt"}, "template": {"spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}),
    )
    .await;
    let want = json!({"metadata": {}, "spec": template_spec(defaulted("c", "busybox:1.36", "IfNotPresent"), "Always")});
    assert_eq!(pt["template"], want);

    let small = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}});
    let small_spec = template_spec(defaulted("c", "busybox:1.36", "IfNotPresent"), "Always");
    let sts = ok(
        &env,
        "POST",
        &format!("/apis/apps/v1/namespaces/{ns}/statefulsets"),
        json!({"metadata": {"name": "ss"}, "spec": {"replicas": 0, "selector": selector, "template": small}}),
    )
    .await;
    assert_eq!(sts["spec"]["template"]["spec"], small_spec);
    for (field, want) in [
        ("serviceName", json!("")),
        ("podManagementPolicy", json!("OrderedReady")),
        (
            "updateStrategy",
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}}),
        ),
        ("revisionHistoryLimit", json!(10)),
        (
            "persistentVolumeClaimRetentionPolicy",
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
        ),
    ] {
        assert_eq!(sts["spec"][field], want, "StatefulSet {field}");
    }
    let ds = ok(
        &env,
        "POST",
        &format!("/apis/apps/v1/namespaces/{ns}/daemonsets"),
        json!({"metadata": {"name": "ds"}, "spec": {"selector": selector, "template": small}}),
    )
    .await;
    assert_eq!(ds["spec"]["template"]["spec"], small_spec);
    assert_eq!(
        ds["spec"]["updateStrategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}})
    );
    assert_eq!(ds["spec"]["revisionHistoryLimit"], 10);
    let rs = ok(
        &env,
        "POST",
        &format!("/apis/apps/v1/namespaces/{ns}/replicasets"),
        json!({"metadata": {"name": "rs"}, "spec": {"replicas": 0, "selector": selector, "template": small}}),
    )
    .await;
    assert_eq!(rs["spec"]["template"]["spec"], small_spec);
    let job = ok(
        &env,
        "POST",
        &format!("/apis/batch/v1/namespaces/{ns}/jobs"),
        json!({"metadata": {"name": "j"}, "spec": {"suspend": true, "template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}),
    )
    .await;
    assert_eq!(
        job["spec"]["template"]["spec"],
        template_spec(defaulted("c", "busybox:1.36", "IfNotPresent"), "Never")
    );
}

async fn a_terminating_namespace_says_what_holds_it(env: Env) {
    let ns = env.name("held");
    env.create_namespace(&ns).await;
    ok(
        &env,
        "POST",
        &format!("/api/v1/namespaces/{ns}/configmaps"),
        json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
    )
    .await;
    let path = format!("/api/v1/namespaces/{ns}");
    ok(&env, "DELETE", &path, Value::Null).await;
    let held = |o: Option<&Namespace>| {
        o.and_then(|o| o.status.as_ref()?.conditions.clone())
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| c.type_ == "NamespaceFinalizersRemaining" && c.status == "True")
            })
    };
    env.wait_for(
        &env.all::<Namespace>(),
        &ns,
        held,
        "the namespace reports its finalizers",
    )
    .await
    .expect("the namespace is still there");
    let seen = ok(&env, "GET", &path, Value::Null).await;
    let conditions: Vec<Value> = seen["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .map(|c| {
            assert!(c["lastTransitionTime"].is_string(), "{c}");
            json!([c["type"], c["status"], c["reason"], c["message"]])
        })
        .collect();
    assert_eq!(
        conditions,
        [
            json!([
                "NamespaceDeletionDiscoveryFailure",
                "False",
                "ResourcesDiscovered",
                "All resources successfully discovered"
            ]),
            json!([
                "NamespaceDeletionGroupVersionParsingFailure",
                "False",
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed"
            ]),
            json!([
                "NamespaceDeletionContentFailure",
                "False",
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization"
            ]),
            json!([
                "NamespaceContentRemaining",
                "True",
                "SomeResourcesRemain",
                "Some resources are remaining: configmaps. has 1 resource instances"
            ]),
            json!([
                "NamespaceFinalizersRemaining",
                "True",
                "SomeFinalizersRemain",
                "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
            ]),
        ]
    );
    ok(
        &env,
        "PATCH",
        &format!("{path}/configmaps/held"),
        json!({"metadata": {"finalizers": null}}),
    )
    .await;
}
