//! Validation of built-in kinds beyond metadata, on both targets: each bad object is a 422
//! Invalid whose causes (reason, field, message, order) are kube-apiserver's.

use serde_json::{Value, json};

use super::{Env, Raw, assert_status, dual};

dual!(
    secrets_merge_string_data_and_check_keys_types_and_immutability,
    config_maps_check_keys_and_immutability,
    secrets_and_config_maps_hold_at_most_a_mebibyte,
    nodes_check_taints_and_pod_cidrs,
    leases_check_ranges_and_microtimes,
    events_check_their_fields_per_api_version,
    priority_classes_check_values_names_and_immutability,
    deployments_need_a_selector_matching_their_template,
    jobs_check_restart_policies_and_manual_selectors,
    a_running_jobs_start_time_cannot_be_cleared,
    a_jobs_template_changes_only_while_suspended_and_never_started,
    services_check_ports_and_cluster_ips,
    pod_updates_may_only_change_images_and_a_few_fields,
);

async fn send(env: &Env, method: &str, path: &str, body: Value) -> Raw {
    env.raw(method, path, "application/json", body.to_string())
        .await
}

/// The causes of a 422 as `reason field: message`.
fn causes(raw: &Raw) -> Vec<String> {
    assert_status(raw, 422, "Invalid");
    raw.body["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            format!(
                "{} {}: {}",
                c["reason"].as_str().unwrap_or(""),
                c["field"].as_str().unwrap_or(""),
                c["message"].as_str().unwrap_or("")
            )
        })
        .collect()
}

fn created(raw: &Raw) -> &Value {
    assert!(raw.code == 201 || raw.code == 200, "{}", raw.text);
    &raw.body
}

const KEY_ERR: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
const IMMUTABLE: &str = "Forbidden: field is immutable when `immutable` is set";

async fn secrets_merge_string_data_and_check_keys_types_and_immutability(env: Env) {
    let path = format!("/api/v1/namespaces/{}/secrets", env.ns);
    let s = send(&env, "POST", &path, json!({"metadata": {"name": "s"}, "data": {"a": "YQ=="}, "stringData": {"b": "bee", "a": "over"}})).await;
    let s = created(&s);
    assert_eq!(s["data"], json!({"a": "b3Zlcg==", "b": "YmVl"}));
    assert!(s.get("stringData").is_none(), "{s}");

    let tls = send(&env, "POST", &path, json!({"metadata": {"name": "tls"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "YQ=="}})).await;
    assert_eq!(
        causes(&tls),
        ["FieldValueRequired data[tls.key]: Required value"]
    );
    assert_eq!(
        tls.body["message"],
        "Secret \"tls\" is invalid: data[tls.key]: Required value"
    );
    let tls_from_strings = send(&env, "POST", &path, json!({"metadata": {"name": "tls2"}, "type": "kubernetes.io/tls", "stringData": {"tls.crt": "a", "tls.key": "b"}})).await;
    created(&tls_from_strings);

    let bad_key = send(
        &env,
        "POST",
        &path,
        json!({"metadata": {"name": "badkey"}, "stringData": {"a/b": "x"}}),
    )
    .await;
    assert_eq!(
        causes(&bad_key),
        [format!(
            "FieldValueInvalid data[a/b]: Invalid value: \"a/b\": {KEY_ERR}"
        )]
    );
    let basic = send(
        &env,
        "POST",
        &path,
        json!({"metadata": {"name": "basic"}, "type": "kubernetes.io/basic-auth", "data": {}}),
    )
    .await;
    assert_eq!(
        causes(&basic),
        [
            "FieldValueRequired data[username]: Required value",
            "FieldValueRequired data[password]: Required value"
        ]
    );

    let type_change = send(&env, "PUT", &format!("{path}/s"), json!({"metadata": {"name": "s"}, "type": "kubernetes.io/basic-auth", "data": {"username": "dQ=="}})).await;
    assert_eq!(
        causes(&type_change),
        ["FieldValueInvalid type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable"]
    );

    created(
        &send(
            &env,
            "POST",
            &path,
            json!({"metadata": {"name": "imm"}, "immutable": true, "stringData": {"k": "v"}}),
        )
        .await,
    );
    let change = send(
        &env,
        "PUT",
        &format!("{path}/imm"),
        json!({"metadata": {"name": "imm"}, "data": {"k": "dw=="}}),
    )
    .await;
    assert_eq!(
        causes(&change),
        [
            format!("FieldValueForbidden immutable: {IMMUTABLE}"),
            format!("FieldValueForbidden data: {IMMUTABLE}"),
        ]
    );
    // The same content (from stringData) is no change.
    let same = send(
        &env,
        "PUT",
        &format!("{path}/imm"),
        json!({"metadata": {"name": "imm"}, "immutable": true, "stringData": {"k": "v"}}),
    )
    .await;
    created(&same);
}

/// `core.MaxSecretSize`: values only (keys do not count), binary values decoded; a ConfigMap's
/// `data` and `binaryData` together.
async fn secrets_and_config_maps_hold_at_most_a_mebibyte(env: Env) {
    use base64::Engine;
    const MIB: usize = 1024 * 1024;
    let b64 = |n: usize| base64::engine::general_purpose::STANDARD.encode(vec![7u8; n]);
    let configmaps = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let secrets = format!("/api/v1/namespaces/{}/secrets", env.ns);
    let full = json!({"metadata": {"name": "full"}, "data": {"long-key-names-do-not-count": "x".repeat(MIB - 10)}, "binaryData": {"b": b64(10)}});
    created(&send(&env, "POST", &configmaps, full).await);
    let over = json!({"metadata": {"name": "over"}, "data": {"a": "x".repeat(MIB - 10)}, "binaryData": {"b": b64(11)}});
    assert_eq!(
        causes(&send(&env, "POST", &configmaps, over).await),
        ["FieldValueTooLong []: Too long: may not be more than 1048576 bytes"]
    );
    let full =
        json!({"metadata": {"name": "full"}, "data": {"a": b64(MIB / 2), "b": b64(MIB / 2)}});
    created(&send(&env, "POST", &secrets, full).await);
    // stringData counts once merged into data.
    let over = json!({"metadata": {"name": "over"}, "data": {"a": b64(MIB / 2)}, "stringData": {"b": "y".repeat(MIB / 2 + 1)}});
    assert_eq!(
        causes(&send(&env, "POST", &secrets, over).await),
        ["FieldValueTooLong data: Too long: may not be more than 1048576 bytes"]
    );
}

async fn config_maps_check_keys_and_immutability(env: Env) {
    let path = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let both = send(&env, "POST", &path, json!({"metadata": {"name": "c"}, "data": {"k": "v", "a b": "x"}, "binaryData": {"k": "AAEC", "..": "AA=="}})).await;
    // kube-apiserver walks each map in Go's random order: the data keys' causes come in either.
    let mut data_causes = causes(&both);
    data_causes[..2].sort();
    assert_eq!(
        data_causes,
        [
            format!("FieldValueInvalid data[a b]: Invalid value: \"a b\": {KEY_ERR}"),
            "FieldValueInvalid data[k]: Invalid value: \"k\": duplicate of key present in binaryData".to_string(),
            "FieldValueInvalid binaryData[..]: Invalid value: \"..\": must not be '..'".to_string(),
        ]
    );
    created(
        &send(
            &env,
            "POST",
            &path,
            json!({"metadata": {"name": "imm"}, "immutable": true, "data": {"k": "v"}}),
        )
        .await,
    );
    let change = send(
        &env,
        "PUT",
        &format!("{path}/imm"),
        json!({"metadata": {"name": "imm"}, "binaryData": {"k": "AA=="}}),
    )
    .await;
    assert_eq!(
        causes(&change),
        [
            format!("FieldValueForbidden immutable: {IMMUTABLE}"),
            format!("FieldValueForbidden data: {IMMUTABLE}"),
            format!("FieldValueForbidden binaryData: {IMMUTABLE}"),
        ]
    );
}

async fn nodes_check_taints_and_pod_cidrs(env: Env) {
    let name = env.name("n");
    let taints = send(
        &env,
        "POST",
        "/api/v1/nodes",
        json!({"metadata": {"name": name}, "spec": {"taints": [
            {"key": "fid", "effect": "Sometimes"},
            {"key": "fid", "effect": "NoSchedule"},
            {"key": "fid", "effect": "NoSchedule"}
        ]}}),
    )
    .await;
    assert_eq!(
        causes(&taints),
        [
            "FieldValueNotSupported metadata.taints[0].effect: Unsupported value: \"Sometimes\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"",
            "FieldValueDuplicate metadata.taints[2]: Duplicate value: {\"Key\":\"fid\",\"Value\":\"\",\"Effect\":\"NoSchedule\",\"TimeAdded\":null}: taints must be unique by key and effect pair",
        ]
    );
    let cidr = send(
        &env,
        "POST",
        "/api/v1/nodes",
        json!({"metadata": {"name": name}, "spec": {"podCIDR": "not-a-cidr"}}),
    )
    .await;
    assert_eq!(
        causes(&cidr),
        [
            "FieldValueInvalid spec.podCIDRs[0]: Invalid value: \"not-a-cidr\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
        ]
    );
    let dry = send(
        &env,
        "POST",
        "/api/v1/nodes?dryRun=All",
        json!({"metadata": {"name": name}, "spec": {"podCIDR": "10.244.0.0/24"}}),
    )
    .await;
    assert_eq!(created(&dry)["spec"]["podCIDRs"], json!(["10.244.0.0/24"]));
}

async fn leases_check_ranges_and_microtimes(env: Env) {
    let path = format!("/apis/coordination.k8s.io/v1/namespaces/{}/leases", env.ns);
    let neg = send(&env, "POST", &path, json!({"metadata": {"name": "neg"}, "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -2}})).await;
    assert_eq!(
        causes(&neg),
        [
            "FieldValueInvalid spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0",
            "FieldValueInvalid spec.leaseTransitions: Invalid value: -2: must be greater than or equal to 0",
        ]
    );
    for (time, rest, elem) in [
        ("2026-01-02T03:04:06.5Z", ".5Z", ".000000"),
        ("2026-01-02T03:04:06Z", "Z", ".000000"),
        ("yesterday", "yesterday", "2006"),
    ] {
        let bad = send(
            &env,
            "POST",
            &path,
            json!({"metadata": {"name": "t"}, "spec": {"renewTime": time}}),
        )
        .await;
        assert_status(&bad, 400, "BadRequest");
        assert_eq!(
            bad.body["message"],
            format!(
                "Lease in version \"v1\" cannot be handled as a Lease: parsing time \"{time}\" as \"2006-01-02T15:04:05.000000Z07:00\": cannot parse \"{rest}\" as \"{elem}\""
            )
        );
    }
    created(&send(&env, "POST", &path, json!({"metadata": {"name": "ok"}, "spec": {"renewTime": "2026-01-02T03:04:06.500000Z"}})).await);
}

async fn events_check_their_fields_per_api_version(env: Env) {
    let v1 = format!("/apis/events.k8s.io/v1/namespaces/{}/events", env.ns);
    let missing = send(
        &env,
        "POST",
        &v1,
        json!({"metadata": {"name": "e3"}, "reason": "R"}),
    )
    .await;
    assert_eq!(
        causes(&missing),
        [
            "FieldValueInvalid involvedObject.namespace: Invalid value: \"\": does not match event.namespace",
            "FieldValueRequired eventTime: Required value",
            "FieldValueInvalid type: Invalid value: \"\": has invalid value: ",
        ]
    );
    let core = format!("/api/v1/namespaces/{}/events", env.ns);
    let wrong_ns = send(&env, "POST", &core, json!({"metadata": {"name": "e4"}, "involvedObject": {"kind": "Pod", "namespace": "other", "name": "p"}, "reason": "R"})).await;
    assert_eq!(
        causes(&wrong_ns),
        [
            "FieldValueInvalid involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"
        ]
    );
    let new_style = send(&env, "POST", &core, json!({"metadata": {"name": "e5"}, "involvedObject": {"kind": "Pod", "namespace": env.ns, "name": "p"}, "eventTime": "2026-01-02T03:04:05.000001Z", "reportingComponent": "fid", "reportingInstance": "i"})).await;
    assert_eq!(
        causes(&new_style),
        [
            "FieldValueRequired action: Required value",
            "FieldValueRequired reason: Required value"
        ]
    );
    created(&send(&env, "POST", &core, json!({"metadata": {"name": "ok"}, "involvedObject": {"kind": "Pod", "namespace": env.ns, "name": "p"}, "reason": "R", "type": "Odd"})).await);
}

async fn priority_classes_check_values_names_and_immutability(env: Env) {
    let path = "/apis/scheduling.k8s.io/v1/priorityclasses";
    let name = env.name("pc");
    created(
        &send(
            &env,
            "POST",
            path,
            json!({"metadata": {"name": name}, "value": 1000}),
        )
        .await,
    );
    env.delete_at_end(format!("{path}/{name}"));
    let change = send(
        &env,
        "PUT",
        &format!("{path}/{name}"),
        json!({"metadata": {"name": name}, "value": 2000, "preemptionPolicy": "Never"}),
    )
    .await;
    assert_eq!(
        causes(&change),
        [
            "FieldValueForbidden value: Forbidden: may not be changed in an update.",
            "FieldValueInvalid preemptionPolicy: Invalid value: \"Never\": field is immutable",
        ]
    );
    let high = send(&env, "POST", path, json!({"metadata": {"name": env.name("hi")}, "value": 2_000_000_000, "preemptionPolicy": "Sometimes"})).await;
    assert_eq!(
        causes(&high),
        [
            "FieldValueForbidden value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
            "FieldValueNotSupported preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"PreemptLowerPriority\", \"Never\"",
        ]
    );
    let system = format!("system-{}", env.ns);
    let reserved = send(
        &env,
        "POST",
        path,
        json!({"metadata": {"name": system}, "value": 10}),
    )
    .await;
    assert_eq!(
        causes(&reserved),
        [format!(
            "FieldValueForbidden metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: {system} is not a known system priority class"
        )]
    );
}

fn template(labels: Value) -> Value {
    json!({"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
}

async fn deployments_need_a_selector_matching_their_template(env: Env) {
    let path = format!("/apis/apps/v1/namespaces/{}/deployments", env.ns);
    let mismatch = send(&env, "POST", &path, json!({"metadata": {"name": "bad"}, "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": template(json!({"app": "e"}))}})).await;
    assert_eq!(
        causes(&mismatch),
        [
            "FieldValueInvalid spec.template.metadata.labels: Invalid value: {\"app\":\"e\"}: `selector` does not match template `labels`"
        ]
    );
    let none = send(&env, "POST", &path, json!({"metadata": {"name": "bad"}, "spec": {"replicas": -1, "template": template(json!({"app": "e"}))}})).await;
    assert_eq!(
        causes(&none),
        [
            "FieldValueInvalid spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            "FieldValueRequired spec.selector: Required value",
            "FieldValueInvalid spec.template.metadata.labels: Invalid value: {\"app\":\"e\"}: `selector` does not match template `labels`",
        ]
    );
    let empty = send(&env, "POST", &path, json!({"metadata": {"name": "bad"}, "spec": {"selector": {}, "template": template(json!({"app": "e"}))}})).await;
    assert_eq!(
        causes(&empty),
        [
            "FieldValueInvalid spec.selector: Invalid value: {}: empty selector is invalid for deployment"
        ]
    );
    let mut good = created(&send(&env, "POST", &path, json!({"metadata": {"name": "good"}, "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "e"}}, "template": template(json!({"app": "e"}))}})).await).clone();
    good["spec"]["selector"]["matchLabels"]["x"] = json!("y");
    good["spec"]["template"]["metadata"]["labels"]["x"] = json!("y");
    // Unconditional: on a real cluster the deployment controller writes status between our read
    // and this write, and only validation should refuse it, not a 409.
    if let Some(meta) = good["metadata"].as_object_mut() {
        meta.remove("resourceVersion");
    }
    let change = send(&env, "PUT", &format!("{path}/good"), good).await;
    assert_eq!(
        causes(&change),
        [
            "FieldValueInvalid spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"e\",\"x\":\"y\"}}: field is immutable"
        ]
    );
}

async fn jobs_check_restart_policies_and_manual_selectors(env: Env) {
    let path = format!("/apis/batch/v1/namespaces/{}/jobs", env.ns);
    for policy in [Some("Always"), None] {
        let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
        if let Some(p) = policy {
            spec["restartPolicy"] = json!(p);
        }
        let bad = send(
            &env,
            "POST",
            &path,
            json!({"metadata": {"name": "bad"}, "spec": {"template": {"spec": spec}}}),
        )
        .await;
        assert_eq!(
            causes(&bad),
            [
                "FieldValueRequired spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
            ]
        );
    }
    let pod = json!({"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]});
    let mismatch = send(&env, "POST", &path, json!({"metadata": {"name": "bad"}, "spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "c"}}, "spec": pod}}})).await;
    assert_eq!(
        causes(&mismatch),
        [
            "FieldValueInvalid spec.template.metadata.labels: Invalid value: {\"a\":\"c\"}: `selector` does not match template `labels`"
        ]
    );
    let missing = send(&env, "POST", &path, json!({"metadata": {"name": "bad"}, "spec": {"manualSelector": true, "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod}}})).await;
    assert_eq!(
        causes(&missing),
        [
            "FieldValueRequired spec.selector: Required value",
            "FieldValueInvalid spec.template.metadata.labels: Invalid value: {\"a\":\"b\"}: `selector` does not match template `labels`",
        ]
    );
}

/// What MultiKueue's status copy must respect: a worker's job created again has no startTime yet.
async fn a_running_jobs_start_time_cannot_be_cleared(env: Env) {
    let path = format!("/apis/batch/v1/namespaces/{}/jobs", env.ns);
    // Managed by someone else, so kube-controller-manager's Job controller leaves it alone.
    let pod = json!({"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]});
    let job = json!({"metadata": {"name": "started"}, "spec": {"managedBy": "example.com/elsewhere", "template": {"spec": pod}}});
    let mut job = created(&send(&env, "POST", &path, job).await).clone();
    job["status"] = json!({"startTime": "2026-01-01T00:00:00Z"});
    let started = send(&env, "PUT", &format!("{path}/started/status"), job).await;
    let mut job = created(&started).clone();
    job["status"]
        .as_object_mut()
        .map(|status| status.remove("startTime"));
    let cleared = send(&env, "PUT", &format!("{path}/started/status"), job).await;
    assert_eq!(
        causes(&cleared),
        [
            "FieldValueInvalid status.startTime: Invalid value: null: field is immutable for unsuspended job once set"
        ]
    );
}

/// What Kueue's stop must respect: a Job's pod template is immutable, but while the job is
/// suspended and has never started its scheduling directives may change.
async fn a_jobs_template_changes_only_while_suspended_and_never_started(env: Env) {
    let path = format!("/apis/batch/v1/namespaces/{}/jobs", env.ns);
    let pod = json!({"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]});
    let job = |name: &str, suspend: bool| json!({"metadata": {"name": name}, "spec": {"managedBy": "example.com/elsewhere", "suspend": suspend, "template": {"spec": pod}}});
    // The value is Go's rendering of the internal type: only the field and the detail compare.
    let immutable = |raw: &Raw, field: &str| {
        let got = causes(raw);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with(&format!("FieldValueInvalid {field}: Invalid value: "))
                && got[0].ends_with(": field is immutable"),
            "{got:?}"
        );
    };
    let directed = |job: &Value| {
        let mut next = job.clone();
        next["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
        next["spec"]["template"]["spec"]["tolerations"] =
            json!([{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]);
        next["spec"]["template"]["metadata"]["annotations"] = json!({"placed": "yes"});
        next
    };

    let held = created(&send(&env, "POST", &path, job("held", true)).await).clone();
    let placed = send(&env, "PUT", &format!("{path}/held"), directed(&held)).await;
    let placed = created(&placed).clone();
    assert_eq!(
        placed["spec"]["template"]["spec"]["nodeSelector"],
        json!({"zone": "a"})
    );
    let mut other_image = placed.clone();
    other_image["spec"]["template"]["spec"]["containers"][0]["image"] = json!("alpine");
    immutable(
        &send(&env, "PUT", &format!("{path}/held"), other_image).await,
        "spec.template.spec",
    );

    // Started: its scheduling directives are fixed too, suspended or not.
    let mut started = created(&send(&env, "POST", &path, job("started", false)).await).clone();
    started["status"] = json!({"startTime": "2026-01-01T00:00:00Z"});
    let started =
        created(&send(&env, "PUT", &format!("{path}/started/status"), started).await).clone();
    immutable(
        &send(&env, "PUT", &format!("{path}/started"), directed(&started)).await,
        "spec.template",
    );

    // Suspended with a pod still active (a status copied from elsewhere): nothing may change.
    let mut busy = created(&send(&env, "POST", &path, job("busy", true)).await).clone();
    busy["status"] = json!({"active": 1});
    let busy = created(&send(&env, "PUT", &format!("{path}/busy/status"), busy).await).clone();
    immutable(
        &send(&env, "PUT", &format!("{path}/busy"), directed(&busy)).await,
        "spec.template",
    );

    // Kueue's stop: suspended, then its start time cleared, its directives may change again.
    let mut suspended = started.clone();
    suspended["spec"]["suspend"] = json!(true);
    let mut suspended =
        created(&send(&env, "PUT", &format!("{path}/started"), suspended).await).clone();
    if let Some(status) = suspended["status"].as_object_mut() {
        status.remove("startTime");
    }
    let cleared =
        created(&send(&env, "PUT", &format!("{path}/started/status"), suspended).await).clone();
    assert!(cleared["status"]["startTime"].is_null(), "{cleared}");
    created(&send(&env, "PUT", &format!("{path}/started"), directed(&cleared)).await);
}

async fn services_check_ports_and_cluster_ips(env: Env) {
    let path = format!("/api/v1/namespaces/{}/services", env.ns);
    let no_ports = send(
        &env,
        "POST",
        &path,
        json!({"metadata": {"name": "noports"}, "spec": {"selector": {"app": "s"}}}),
    )
    .await;
    assert_eq!(
        causes(&no_ports),
        ["FieldValueRequired spec.ports: Required value"]
    );
    let ports = send(&env, "POST", &path, json!({"metadata": {"name": "p"}, "spec": {"ports": [
        {"port": 80, "name": "a", "protocol": "XX"}, {"port": 0}, {"port": 80, "name": "a", "protocol": "XX"}
    ]}})).await;
    assert_eq!(
        causes(&ports),
        [
            "FieldValueNotSupported spec.ports[0].protocol: Unsupported value: \"XX\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "FieldValueRequired spec.ports[1].name: Required value",
            "FieldValueInvalid spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            "FieldValueInvalid spec.ports[1].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive",
            "FieldValueDuplicate spec.ports[2].name: Duplicate value: \"a\"",
            "FieldValueNotSupported spec.ports[2].protocol: Unsupported value: \"XX\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "FieldValueDuplicate spec.ports[2]: Duplicate value: {\"Name\":\"\",\"Protocol\":\"XX\",\"AppProtocol\":null,\"Port\":80,\"TargetPort\":0,\"NodePort\":0}",
        ]
    );
    let bad_type = send(
        &env,
        "POST",
        &path,
        json!({"metadata": {"name": "t"}, "spec": {"type": "Bogus", "ports": [{"port": 80}]}}),
    )
    .await;
    assert_eq!(
        causes(&bad_type),
        [
            "FieldValueNotSupported spec.type: Unsupported value: \"Bogus\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\""
        ]
    );
    // An address the server allocated: taken by a second Service, fixed for the first.
    let first = send(
        &env,
        "POST",
        &path,
        json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
    )
    .await;
    let ip = created(&first)["spec"]["clusterIP"]
        .as_str()
        .expect("an allocated IP")
        .to_string();
    let kept = send(
        &env,
        "PUT",
        &format!("{path}/s"),
        json!({"metadata": {"name": "s"}, "spec": {"ports": [{"port": 81}]}}),
    )
    .await;
    assert_eq!(created(&kept)["spec"]["clusterIP"], json!(ip));
    let taken = send(
        &env,
        "POST",
        &path,
        json!({"metadata": {"name": "taken"}, "spec": {"clusterIP": ip, "ports": [{"port": 80}]}}),
    )
    .await;
    assert_eq!(
        causes(&taken),
        [format!(
            "FieldValueInvalid spec.clusterIPs: Invalid value: [\"{ip}\"]: failed to allocate IP {ip}: provided IP is already allocated"
        )]
    );
    // Another address of the same /24 (both servers' ranges hold it).
    let (net, last) = ip.rsplit_once('.').expect("an IPv4 address");
    let last: u8 = last.parse().expect("an octet");
    let other = format!("{net}.{}", if last == 250 { 249 } else { last + 1 });
    let change = send(
        &env,
        "PUT",
        &format!("{path}/s"),
        json!({"metadata": {"name": "s"}, "spec": {"clusterIP": other, "ports": [{"port": 80}]}}),
    )
    .await;
    assert_eq!(
        causes(&change),
        [format!(
            "FieldValueInvalid spec.clusterIPs[0]: Invalid value: [\"{other}\"]: may not change once set"
        )]
    );
    let long = "a".repeat(64);
    let long_name = send(
        &env,
        "POST",
        &path,
        json!({"metadata": {"name": long}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}),
    )
    .await;
    assert_eq!(
        causes(&long_name),
        [format!(
            "FieldValueInvalid metadata.name: Invalid value: \"{long}\": must be no more than 63 characters"
        )]
    );
}

async fn pod_updates_may_only_change_images_and_a_few_fields(env: Env) {
    let path = format!("/api/v1/namespaces/{}/pods", env.ns);
    env.default_service_account().await;
    let pod = send(&env, "POST", &path, json!({"metadata": {"name": "p"}, "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "busybox", "ports": [{"containerPort": 8080}]}]}})).await;
    let mut pod = created(&pod).clone();
    pod["spec"]["containers"][0]["image"] = json!("busybox:2");
    pod["spec"]["activeDeadlineSeconds"] = json!(60);
    let image = send(&env, "PUT", &format!("{path}/p"), pod.clone()).await;
    let pod = created(&image).clone();
    let mut renamed = pod.clone();
    renamed["spec"]["containers"][0]["name"] = json!("d");
    let refused = send(&env, "PUT", &format!("{path}/p"), renamed).await;
    assert_status(&refused, 422, "Invalid");
    let cause = &refused.body["details"]["causes"][0];
    assert_eq!(cause["reason"], "FieldValueForbidden");
    assert_eq!(cause["field"], "spec");
    assert!(
        cause["message"].as_str().unwrap_or("").starts_with("Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"),
        "{}",
        refused.text
    );
}
