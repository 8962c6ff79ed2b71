//! What kube-apiserver writes into objects on create and update beyond what the client sent:
//! decode-time defaults (the writer owns them in managedFields), admission (ServiceAccount,
//! Priority, DefaultTolerationSeconds) and registry strategies (never in managedFields), and
//! which DELETEs answer the deleted object.

use serde_json::{Value, json};

use super::{Env, Raw, assert_status, dual};

dual!(
    a_created_pod_gets_the_defaults_and_admission_of_the_real_server,
    a_pod_update_that_leaves_defaults_out_changes_nothing,
    a_pod_naming_a_missing_service_account_or_priority_class_is_forbidden,
    a_pod_takes_priority_and_preemption_policy_from_its_priority_class,
    secret_string_data_is_merged_into_data_and_never_stored,
    a_namespace_keeps_its_name_label_on_update,
    a_service_update_gets_the_defaults_and_keeps_its_cluster_ip,
    deleting_a_service_account_service_or_pod_template_answers_the_object,
    a_created_job_is_labelled_like_its_pods,
    events_carry_go_zero_values_in_both_versions,
    a_created_node_carries_its_pod_cidrs_and_go_zero_status_structs,
);

const TOKEN_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

async fn post(env: &Env, path: &str, body: Value) -> Raw {
    env.raw("POST", path, "application/json", body.to_string())
        .await
}

async fn put(env: &Env, path: &str, body: &Value) -> Raw {
    env.raw("PUT", path, "application/json", body.to_string())
        .await
}

fn created(raw: Raw) -> Value {
    assert!(raw.code == 201 || raw.code == 200, "{}", raw.text);
    raw.body
}

fn pods(env: &Env) -> String {
    format!("/api/v1/namespaces/{}/pods", env.ns)
}

/// The fields the creating manager owns (its managedFields entry's FieldsV1).
fn owned(obj: &Value) -> &Value {
    &obj["metadata"]["managedFields"][0]["fieldsV1"]
}

async fn a_created_pod_gets_the_defaults_and_admission_of_the_real_server(env: Env) {
    env.default_service_account().await;
    let pod = created(
        post(
            &env,
            &format!("{}?fieldManager=maker", pods(&env)),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
                "schedulerName": "nobody",
                "initContainers": [{"name": "i", "image": "busybox:1.36"}],
                "containers": [{"name": "c", "image": "busybox", "volumeMounts": [{"name": "x", "mountPath": "/x"}]}],
                "volumes": [{"name": "x", "emptyDir": {}}],
            }}),
        )
        .await,
    );
    let spec = &pod["spec"];
    assert_eq!(spec["serviceAccountName"], "default", "{pod}");
    assert_eq!(spec["serviceAccount"], "default");
    assert_eq!(spec["priority"], 0);
    assert_eq!(spec["preemptionPolicy"], "PreemptLowerPriority");
    assert_eq!(spec["enableServiceLinks"], true);
    assert_eq!(spec["securityContext"], json!({}));
    assert_eq!(spec["restartPolicy"], "Always");
    assert_eq!(spec["dnsPolicy"], "ClusterFirst");
    assert_eq!(spec["terminationGracePeriodSeconds"], 30);
    assert_eq!(
        spec["tolerations"],
        json!([
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ])
    );
    // The ServiceAccount plugin's token volume, with a generated suffix, mounted in every container.
    let volume = &spec["volumes"][1];
    let name = volume["name"].as_str().unwrap_or("");
    assert!(
        name.starts_with("kube-api-access-") && name.len() == "kube-api-access-".len() + 5,
        "{volume}"
    );
    assert_eq!(volume["projected"]["defaultMode"], 420);
    assert_eq!(
        volume["projected"]["sources"][0],
        json!({"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}})
    );
    let token_mount = json!({"name": name, "readOnly": true, "mountPath": TOKEN_PATH});
    assert_eq!(
        spec["containers"][0]["volumeMounts"],
        json!([{"name": "x", "mountPath": "/x"}, token_mount])
    );
    assert_eq!(
        spec["initContainers"][0]["volumeMounts"],
        json!([token_mount])
    );
    for (c, pull) in [
        (&spec["containers"][0], "Always"),
        (&spec["initContainers"][0], "IfNotPresent"),
    ] {
        assert_eq!(c["imagePullPolicy"], pull, "{c}");
        assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(c["terminationMessagePolicy"], "File");
        assert_eq!(c["resources"], json!({}));
    }
    assert_eq!(
        pod["status"],
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
    // Decode-time defaults belong to the writer; admission's and the status do not.
    let fields = owned(&pod);
    assert!(
        fields["f:spec"].get("f:securityContext").is_some(),
        "{fields}"
    );
    assert!(
        fields["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]
            .get("f:imagePullPolicy")
            .is_some(),
        "{fields}"
    );
    for admitted in [
        "f:serviceAccountName",
        "f:tolerations",
        "f:priority",
        "f:preemptionPolicy",
    ] {
        assert!(
            fields["f:spec"].get(admitted).is_none(),
            "{admitted}: {fields}"
        );
    }
    assert!(fields.get("f:status").is_none(), "{fields}");
}

async fn a_pod_update_that_leaves_defaults_out_changes_nothing(env: Env) {
    env.default_service_account().await;
    let pod = created(
        post(
            &env,
            &pods(&env),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
                "schedulerName": "nobody", "automountServiceAccountToken": false,
                "containers": [{"name": "c", "image": "busybox"}],
            }}),
        )
        .await,
    );
    // What the client first sent, with the resourceVersion and the service account: the server
    // defaults it again and keeps the priority admission gave.
    let body = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "resourceVersion": pod["metadata"]["resourceVersion"]}, "spec": {
        "schedulerName": "nobody", "automountServiceAccountToken": false, "serviceAccountName": "default",
        "containers": [{"name": "c", "image": "busybox"}],
    }});
    let raw = put(&env, &format!("{}/p", pods(&env)), &body).await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_eq!(raw.body["spec"], pod["spec"]);
    assert_eq!(raw.body["metadata"], pod["metadata"]);
    assert_eq!(
        raw.body["metadata"]["resourceVersion"], pod["metadata"]["resourceVersion"],
        "an update equal to the stored object after defaulting is no write"
    );
}

async fn a_pod_naming_a_missing_service_account_or_priority_class_is_forbidden(env: Env) {
    env.default_service_account().await;
    let pod = |name: &str, extra: Value| {
        let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
            s.extend(e.clone());
        }
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
    };
    let raw = post(
        &env,
        &pods(&env),
        pod("nosa", json!({"serviceAccountName": "nobody"})),
    )
    .await;
    assert_status(&raw, 403, "Forbidden");
    assert_eq!(
        raw.body["message"],
        format!(
            "pods \"nosa\" is forbidden: error looking up service account {}/nobody: serviceaccount \"nobody\" not found",
            env.ns
        )
    );
    let raw = post(
        &env,
        &pods(&env),
        pod("nopc", json!({"priorityClassName": "nope"})),
    )
    .await;
    assert_status(&raw, 403, "Forbidden");
    assert_eq!(
        raw.body["message"],
        "pods \"nopc\" is forbidden: no PriorityClass with name nope was found"
    );
    let raw = post(&env, &pods(&env), pod("prio", json!({"priority": 5}))).await;
    assert_status(&raw, 403, "Forbidden");
    assert_eq!(
        raw.body["message"],
        "pods \"prio\" is forbidden: the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name"
    );
}

async fn a_pod_takes_priority_and_preemption_policy_from_its_priority_class(env: Env) {
    env.default_service_account().await;
    let never = env.name("never");
    let plain = env.name("plain");
    let classes = "/apis/scheduling.k8s.io/v1/priorityclasses";
    for (name, extra) in [
        (&never, json!({"preemptionPolicy": "Never"})),
        (&plain, json!({})),
    ] {
        let mut body = json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": 1000});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        let pc = created(post(&env, classes, body).await);
        env.delete_at_end(format!("{classes}/{name}"));
        if name == &plain {
            assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority", "{pc}");
        }
    }
    let pod = created(
        post(
            &env,
            &pods(&env),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
                "priorityClassName": never, "automountServiceAccountToken": false,
                "containers": [{"name": "c", "image": "busybox"}],
            }}),
        )
        .await,
    );
    assert_eq!(pod["spec"]["priority"], 1000, "{pod}");
    assert_eq!(pod["spec"]["preemptionPolicy"], "Never");
}

async fn secret_string_data_is_merged_into_data_and_never_stored(env: Env) {
    let secrets = format!("/api/v1/namespaces/{}/secrets", env.ns);
    let secret = created(
        post(
            &env,
            &secrets,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
                "data": {"a": "YQ=="}, "stringData": {"a": "over", "b": "bee"}}),
        )
        .await,
    );
    assert_eq!(secret["data"], json!({"a": "b3Zlcg==", "b": "YmVl"}));
    assert!(secret.get("stringData").is_none(), "{secret}");
    let fields = owned(&secret);
    assert!(fields.get("f:stringData").is_none(), "{fields}");
    assert!(fields["f:data"].get("f:b").is_some(), "{fields}");
    let raw = put(
        &env,
        &format!("{secrets}/s"),
        &json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"c": "sea"}}),
    )
    .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_eq!(raw.body["data"], json!({"c": "c2Vh"}));
    assert!(raw.body.get("stringData").is_none(), "{}", raw.text);
}

async fn a_namespace_keeps_its_name_label_on_update(env: Env) {
    let path = format!("/api/v1/namespaces/{}", env.ns);
    let ns = env.raw("GET", &path, "", "").await.body;
    let mut changed = ns.clone();
    changed["metadata"]["labels"]["kubernetes.io/metadata.name"] = json!("other");
    changed["metadata"]["labels"]["extra"] = json!("x");
    let raw = put(&env, &path, &changed).await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_eq!(
        raw.body["metadata"]["labels"]["kubernetes.io/metadata.name"],
        env.ns.as_str()
    );
    assert_eq!(raw.body["metadata"]["labels"]["extra"], "x");
    // A created namespace's creator owns the label it named, not the strategy's finalizer and phase.
    let other = env.name("owned");
    let created = created(
        post(
            &env,
            "/api/v1/namespaces?fieldManager=maker",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}}),
        )
        .await,
    );
    env.delete_at_end(format!("/api/v1/namespaces/{other}"));
    assert_eq!(created["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(created["status"]["phase"], "Active");
    assert_eq!(
        owned(&created),
        &json!({"f:metadata": {"f:labels": {".": {}, "f:kubernetes.io/metadata.name": {}}}})
    );
}

async fn deleting_a_service_account_service_or_pod_template_answers_the_object(env: Env) {
    let base = format!("/api/v1/namespaces/{}", env.ns);
    for (plural, kind, body) in [
        ("serviceaccounts", "ServiceAccount", json!({})),
        (
            "services",
            "Service",
            json!({"spec": {"ports": [{"port": 80}]}}),
        ),
        (
            "podtemplates",
            "PodTemplate",
            json!({"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}),
        ),
    ] {
        let mut obj = json!({"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}});
        if let (Some(o), Some(b)) = (obj.as_object_mut(), body.as_object()) {
            o.extend(b.clone());
        }
        let made = created(post(&env, &format!("{base}/{plural}"), obj).await);
        let raw = env
            .raw("DELETE", &format!("{base}/{plural}/x"), "", "")
            .await;
        assert_eq!(raw.code, 200, "{}", raw.text);
        assert_eq!(raw.body["kind"], kind, "{}", raw.text);
        assert_eq!(raw.body["metadata"]["uid"], made["metadata"]["uid"]);
    }
}

async fn a_created_job_is_labelled_like_its_pods(env: Env) {
    let jobs = format!("/apis/batch/v1/namespaces/{}/jobs", env.ns);
    let job = created(
        post(
            &env,
            &format!("{jobs}?fieldManager=maker"),
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {"suspend": true, "template": {"spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
        )
        .await,
    );
    let uid = job["metadata"]["uid"].clone();
    assert_eq!(
        job["metadata"]["labels"],
        json!({"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "j", "controller-uid": uid, "job-name": "j"})
    );
    assert_eq!(job["spec"]["manualSelector"], false);
    let fields = owned(&job);
    assert!(
        fields["f:spec"].get("f:manualSelector").is_some(),
        "{fields}"
    );
    assert!(fields["f:spec"].get("f:selector").is_none(), "{fields}");
    assert!(fields.get("f:status").is_none(), "{fields}");
    // A Job without labels takes its template's.
    let job = created(
        post(
            &env,
            &jobs,
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "k"}, "spec": {"suspend": true, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
        )
        .await,
    );
    let uid = job["metadata"]["uid"].clone();
    assert_eq!(
        job["metadata"]["labels"],
        json!({"a": "b", "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "k", "controller-uid": uid, "job-name": "k"}),
        "Go shares the template's label map with the Job"
    );
    let job = created(
        post(
            &env,
            &jobs,
            json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"generateName": "k-"}, "spec": {"suspend": true, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
        )
        .await,
    );
    assert_eq!(
        job["metadata"]["labels"],
        json!({"a": "b"}),
        "a generated name copies the map"
    );
}

async fn events_carry_go_zero_values_in_both_versions(env: Env) {
    let event = created(
        post(
            &env,
            &format!("/api/v1/namespaces/{}/events", env.ns),
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
                "involvedObject": {"kind": "Pod", "name": "p", "namespace": env.ns},
                "reason": "Pulling", "message": "m", "type": "Normal", "count": 1}),
        )
        .await,
    );
    assert_eq!(event["eventTime"], Value::Null);
    assert!(event.get("eventTime").is_some(), "{event}");
    assert_eq!(event["reportingComponent"], "");
    assert_eq!(event["reportingInstance"], "");
    // Through events.k8s.io/v1 the empty reporting fields are left out.
    let v1 = format!("/apis/events.k8s.io/v1/namespaces/{}/events", env.ns);
    let seen = env.raw("GET", &format!("{v1}/e"), "", "").await.body;
    assert!(seen.get("reportingController").is_none(), "{seen}");
    assert!(seen.get("reportingInstance").is_none(), "{seen}");
    // An events.k8s.io/v1 Event carries the deprecated core fields as Go zero values.
    let made = created(
        post(
            &env,
            &v1,
            json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e2"},
                "eventTime": "2024-05-01T10:00:00.000000Z", "reportingController": "example.com/c",
                "reportingInstance": "c-0", "action": "Pull", "reason": "Pulling", "type": "Normal",
                "regarding": {"kind": "Pod", "name": "p", "namespace": env.ns}}),
        )
        .await,
    );
    assert_eq!(made["deprecatedSource"], json!({}), "{made}");
    assert!(
        made.get("deprecatedFirstTimestamp")
            .is_some_and(Value::is_null),
        "{made}"
    );
    assert!(
        made.get("deprecatedLastTimestamp")
            .is_some_and(Value::is_null),
        "{made}"
    );
    let core = env
        .raw(
            "GET",
            &format!("/api/v1/namespaces/{}/events/e2", env.ns),
            "",
            "",
        )
        .await
        .body;
    assert_eq!(core["source"], json!({}), "{core}");
    assert!(
        core.get("firstTimestamp").is_some_and(Value::is_null),
        "{core}"
    );
}

async fn a_created_node_carries_its_pod_cidrs_and_go_zero_status_structs(env: Env) {
    let name = env.name("node");
    let node = created(
        post(
            &env,
            "/api/v1/nodes",
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {"podCIDR": "10.244.0.0/24"}}),
        )
        .await,
    );
    assert_eq!(node["spec"]["podCIDRs"], json!(["10.244.0.0/24"]), "{node}");
    env.delete_at_end(format!("/api/v1/nodes/{name}"));
    assert_eq!(
        node["status"]["daemonEndpoints"],
        json!({"kubeletEndpoint": {"Port": 0}})
    );
    assert_eq!(node["status"]["nodeInfo"]["kubeletVersion"], "");
    assert_eq!(node["status"]["nodeInfo"]["architecture"], "");
}

async fn a_service_update_gets_the_defaults_and_keeps_its_cluster_ip(env: Env) {
    let services = format!("/api/v1/namespaces/{}/services", env.ns);
    let svc = created(
        post(
            &env,
            &services,
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
        )
        .await,
    );
    let raw = put(
        &env,
        &format!("{services}/s"),
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "resourceVersion": svc["metadata"]["resourceVersion"]},
            "spec": {"selector": {"app": "t"}, "ports": [{"port": 80, "targetPort": 8080}]}}),
    )
    .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    let spec = &raw.body["spec"];
    for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        assert_eq!(spec[field], svc["spec"][field], "{field}: {spec}");
    }
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(spec["ports"][0]["protocol"], "TCP");
}
