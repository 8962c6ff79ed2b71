//! Response bytes as kube-apiserver writes them: built-in kinds in Go's field order, custom
//! resources with sorted keys, `<`, `>` and `&` escaped, and a newline after each document. The
//! same requests run on both targets, and the bodies are compared byte for byte once the values
//! that legitimately differ (uids, resourceVersions, times, the namespace's number) are masked.

use http_body_util::BodyExt;
use serde_json::json;

use super::{Env, dual};

dual!(
    a_config_map_get_list_and_watch_event_are_written_as_kube_apiserver_writes_them,
    a_pod_and_a_deployment_are_written_in_go_field_order,
    error_statuses_are_written_in_go_field_order,
    custom_resources_are_written_with_sorted_keys,
    metadata_only_answers_and_version_are_written_as_kube_apiserver_writes_them,
);

/// Values that differ between two servers for the same requests.
const MASKED: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "time",
    "serverAddress",
    "gitVersion",
    "gitCommit",
    "buildDate",
    "goVersion",
    "minCompatibilityMinor",
    "minCompatibilityMajor",
];

/// The body with every masked key's string value replaced and the namespace named `NS`.
fn normalise(env: &Env, text: &str) -> String {
    let mut out = text.replace(&env.ns, "NS");
    for key in MASKED {
        for sep in [":", ": "] {
            let needle = format!("\"{key}\"{sep}\"");
            let mut from = 0;
            while let Some(at) = out[from..].find(&needle) {
                let start = from + at + needle.len();
                let Some(len) = out[start..].find('"') else {
                    break;
                };
                out.replace_range(start..start + len, "X");
                from = start;
            }
        }
    }
    out
}

/// A GET's body, masked.
async fn get(env: &Env, path: &str, accept: &str) -> String {
    let raw = env.raw_with("GET", path, &[("accept", accept)], "").await;
    assert!(raw.code < 300, "{path}: {}", raw.text);
    normalise(env, &raw.text)
}

/// A write's body, masked.
async fn send(env: &Env, method: &str, path: &str, body: serde_json::Value) -> (u16, String) {
    let raw = env
        .raw(method, path, "application/json", body.to_string())
        .await;
    (raw.code, normalise(env, &raw.text))
}

/// The first line of a watch, masked (the stream is dropped after it).
async fn first_event(env: &Env, path: &str) -> String {
    let req = http::Request::builder()
        .uri(path)
        .body(kube::client::Body::from(Vec::new()))
        .expect("request builds");
    let resp = env.client.send(req).await.expect("the watch starts");
    let mut body = resp.into_body();
    let mut line = Vec::new();
    while !line.contains(&b'\n') {
        let frame = tokio::time::timeout(super::EVENTUALLY, body.frame())
            .await
            .expect("an event within the timeout")
            .expect("the watch is still open")
            .expect("the stream reads");
        if let Ok(data) = frame.into_data() {
            line.extend_from_slice(&data);
        }
    }
    let end = line.iter().position(|b| *b == b'\n').unwrap_or(0);
    normalise(env, &String::from_utf8_lossy(&line[..=end]))
}

async fn a_config_map_get_list_and_watch_event_are_written_as_kube_apiserver_writes_them(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let (code, created) = send(
        &env,
        "POST",
        &format!("{base}?fieldManager=bytes"),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm", "labels": {"b": "2", "a": "1"}, "annotations": {"note": "x"}},
            "data": {"z": "1", "a": "<x> & y"}}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let object = r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm","namespace":"NS","uid":"X","resourceVersion":"X","creationTimestamp":"X","labels":{"a":"1","b":"2"},"annotations":{"note":"x"},"managedFields":[{"manager":"bytes","operation":"Update","apiVersion":"v1","time":"X","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:a":{},"f:z":{}},"f:metadata":{"f:annotations":{".":{},"f:note":{}},"f:labels":{".":{},"f:a":{},"f:b":{}}}}}]},"data":{"a":"\u003cx\u003e \u0026 y","z":"1"}}"#;
    assert_eq!(created, format!("{object}\n"));
    assert_eq!(
        get(&env, &format!("{base}/cm"), "application/json").await,
        format!("{object}\n")
    );

    // List items carry no kind or apiVersion.
    let item = object.replacen(r#""kind":"ConfigMap","apiVersion":"v1","#, "", 1);
    assert_eq!(
        get(
            &env,
            &format!("{base}?fieldSelector=metadata.name%3Dcm"),
            "application/json"
        )
        .await,
        format!(
            r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"X"}},"items":[{item}]}}"#
        ) + "\n"
    );
    assert_eq!(
        first_event(
            &env,
            &format!("{base}?watch=true&resourceVersion=0&fieldSelector=metadata.name%3Dcm")
        )
        .await,
        format!(r#"{{"type":"ADDED","object":{object}}}"#) + "\n"
    );
}

async fn a_pod_and_a_deployment_are_written_in_go_field_order(env: Env) {
    // Defaulting and admission fill these kinds differently on the two servers; the order of the
    // keys each writes is what must agree.
    let (code, pod) = send(
        &env,
        "POST",
        &format!("/api/v1/namespaces/{}/pods?fieldManager=bytes", env.ns),
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"b": "2", "a": "1"}},
            "spec": {"automountServiceAccountToken": false, "enableServiceLinks": false,
                "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1",
                "command": ["sleep", "1"], "env": [{"value": "v", "name": "E"}],
                "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}]}}),
    )
    .await;
    assert_eq!(code, 201, "{pod}");
    assert!(pod.ends_with("}\n"), "{pod}");
    in_go_order(
        &pod,
        &[],
        &["kind", "apiVersion", "metadata", "spec", "status"],
    );
    in_go_order(
        &pod,
        &["metadata"],
        &[
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "labels",
            "managedFields",
        ],
    );
    in_go_order(&pod, &["metadata", "labels"], &["a", "b"]);
    in_go_order(
        &pod,
        &["metadata", "managedFields", "0"],
        &[
            "manager",
            "operation",
            "apiVersion",
            "time",
            "fieldsType",
            "fieldsV1",
        ],
    );
    in_go_order(
        &pod,
        &["spec"],
        &[
            "volumes",
            "containers",
            "restartPolicy",
            "terminationGracePeriodSeconds",
            "dnsPolicy",
            "serviceAccountName",
            "serviceAccount",
            "automountServiceAccountToken",
            "securityContext",
            "schedulerName",
            "tolerations",
            "priority",
            "enableServiceLinks",
            "preemptionPolicy",
        ],
    );
    in_go_order(
        &pod,
        &["spec", "containers", "0"],
        &[
            "name",
            "image",
            "command",
            "env",
            "resources",
            "terminationMessagePath",
            "terminationMessagePolicy",
            "imagePullPolicy",
        ],
    );
    in_go_order(
        &pod,
        &["spec", "containers", "0", "env", "0"],
        &["name", "value"],
    );
    in_go_order(
        &pod,
        &["spec", "containers", "0", "resources"],
        &["limits", "requests"],
    );
    in_go_order(&pod, &["status"], &["phase", "qosClass"]);

    let (code, deployment) = send(
        &env,
        "POST",
        &format!(
            "/apis/apps/v1/namespaces/{}/deployments?fieldManager=bytes",
            env.ns
        ),
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "d"}},
                "template": {"metadata": {"labels": {"app": "d"}},
                    "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}}}),
    )
    .await;
    assert_eq!(code, 201, "{deployment}");
    assert!(deployment.ends_with("}\n"), "{deployment}");
    in_go_order(
        &deployment,
        &[],
        &["kind", "apiVersion", "metadata", "spec", "status"],
    );
    in_go_order(
        &deployment,
        &["spec"],
        &[
            "replicas",
            "selector",
            "template",
            "strategy",
            "minReadySeconds",
            "revisionHistoryLimit",
            "paused",
            "progressDeadlineSeconds",
        ],
    );
    in_go_order(
        &deployment,
        &["spec", "template", "spec"],
        &[
            "containers",
            "restartPolicy",
            "terminationGracePeriodSeconds",
            "dnsPolicy",
            "securityContext",
            "schedulerName",
        ],
    );
    in_go_order(
        &deployment,
        &["spec", "strategy"],
        &["type", "rollingUpdate"],
    );
    in_go_order(
        &deployment,
        &["spec", "strategy", "rollingUpdate"],
        &["maxUnavailable", "maxSurge"],
    );
}

/// The keys of the object at `path` (keys, or array indexes) of a JSON text, in written order.
fn keys_at(text: &str, path: &[&str]) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_str(text).expect("a JSON body");
    let mut at = &v;
    for p in path {
        at = match p.parse::<usize>() {
            Ok(i) => &at[i],
            Err(_) => &at[*p],
        };
    }
    // serde_json's map is sorted, so find the object's own text by its keys' positions instead:
    // every key of the object, located after its parent's key, in the order they occur.
    // A field one server's defaulting leaves out has no order to check.
    let Some(object) = at.as_object() else {
        return Vec::new();
    };
    let keys: Vec<&String> = object.keys().collect();
    let mut from = 0;
    for p in path {
        if p.parse::<usize>().is_err() {
            from += text[from..]
                .find(&format!("\"{p}\":"))
                .expect("the path's key");
        }
    }
    let mut found: Vec<(usize, String)> = keys
        .iter()
        .map(|k| {
            let at = text[from..]
                .find(&format!("\"{k}\":"))
                .expect("each key in the text");
            (from + at, k.to_string())
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, k)| k).collect()
}

/// The object at `path` has only keys of `go_order`, in that order.
fn in_go_order(text: &str, path: &[&str], go_order: &[&str]) {
    let keys = keys_at(text, path);
    let expected: Vec<&str> = go_order
        .iter()
        .copied()
        .filter(|k| keys.iter().any(|f| f == k))
        .collect();
    assert_eq!(keys, expected, "keys at {path:?} in {text}");
}

async fn error_statuses_are_written_in_go_field_order(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let missing = env
        .raw_with(
            "GET",
            &format!("{base}/nope"),
            &[("accept", "application/json")],
            "",
        )
        .await;
    assert_eq!(missing.code, 404);
    assert_eq!(
        missing.text,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"nope\" not found","reason":"NotFound","details":{"name":"nope","kind":"configmaps"},"code":404}"#.to_string() + "\n"
    );
    let (code, invalid) = send(
        &env,
        "POST",
        &base,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}),
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        invalid,
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')","reason":"Invalid","details":{"name":"Bad_Name","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')","field":"metadata.name"}]},"code":422}"#.to_string() + "\n"
    );
}

async fn custom_resources_are_written_with_sorted_keys(env: Env) {
    let group = env.create_open_widgets("bytes").await;
    let base = format!("/apis/{group}/v1/namespaces/{}/widgets", env.ns);
    let (code, created) = send(
        &env,
        "POST",
        &format!("{base}?fieldManager=bytes"),
        json!({"kind": "Widget", "apiVersion": format!("{group}/v1"),
            "metadata": {"name": "w", "labels": {"b": "2", "a": "1"}},
            "spec": {"zeta": 1, "alpha": {"y": "<", "x": [{"b": 1.5, "a": true, "c": 1.0, "d": 1e21}]}}}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let g = group.replace(&env.ns, "NS");
    let object = format!(
        r#"{{"apiVersion":"{g}/v1","kind":"Widget","metadata":{{"creationTimestamp":"X","generation":1,"labels":{{"a":"1","b":"2"}},"managedFields":[{{"apiVersion":"{g}/v1","fieldsType":"FieldsV1","fieldsV1":{{"f:metadata":{{"f:labels":{{".":{{}},"f:a":{{}},"f:b":{{}}}}}},"f:spec":{{".":{{}},"f:alpha":{{".":{{}},"f:x":{{}},"f:y":{{}}}},"f:zeta":{{}}}}}},"manager":"bytes","operation":"Update","time":"X"}}],"name":"w","namespace":"NS","resourceVersion":"X","uid":"X"}},"spec":{{"alpha":{{"x":[{{"a":true,"b":1.5,"c":1,"d":1e+21}}],"y":"\u003c"}},"zeta":1}}}}"#
    );
    assert_eq!(created, format!("{object}\n"));
    assert_eq!(
        get(&env, &format!("{base}/w"), "application/json").await,
        format!("{object}\n")
    );
    assert_eq!(
        get(&env, &base, "application/json").await,
        format!(
            r#"{{"apiVersion":"{g}/v1","items":[{object}],"kind":"WidgetList","metadata":{{"continue":"","resourceVersion":"X"}}}}"#
        ) + "\n"
    );
    assert_eq!(
        first_event(&env, &format!("{base}?watch=true&resourceVersion=0")).await,
        format!(r#"{{"type":"ADDED","object":{object}}}"#) + "\n"
    );
}

async fn metadata_only_answers_and_version_are_written_as_kube_apiserver_writes_them(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let (code, _) = send(
        &env,
        "POST",
        &format!("{base}?fieldManager=bytes"),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "labels": {"b": "2", "a": "1"}}}),
    )
    .await;
    assert_eq!(code, 201);
    let partial = r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"cm","namespace":"NS","uid":"X","resourceVersion":"X","creationTimestamp":"X","labels":{"a":"1","b":"2"},"managedFields":[{"manager":"bytes","operation":"Update","apiVersion":"v1","time":"X","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:a":{},"f:b":{}}}}}]}}"#;
    assert_eq!(
        get(
            &env,
            &format!("{base}/cm"),
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
        )
        .await,
        format!("{partial}\n")
    );
    assert_eq!(
        get(
            &env,
            &format!("{base}?fieldSelector=metadata.name%3Dcm"),
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
        )
        .await,
        format!(
            r#"{{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{{"resourceVersion":"X"}},"items":[{partial}]}}"#
        ) + "\n"
    );

    // /version is indented, without a newline; its keys in version.Info's order.
    let version = get(&env, "/version", "application/json").await;
    let keys: Vec<&str> = version
        .lines()
        .filter_map(|l| l.trim().strip_prefix('"')?.split('"').next())
        .collect();
    assert_eq!(
        keys,
        [
            "major",
            "minor",
            "emulationMajor",
            "emulationMinor",
            "minCompatibilityMajor",
            "minCompatibilityMinor",
            "gitVersion",
            "gitCommit",
            "gitTreeState",
            "buildDate",
            "goVersion",
            "compiler",
            "platform"
        ]
    );
    assert!(version.starts_with("{\n  \"major\": \"1\",\n"), "{version}");
    assert!(version.ends_with("\n}"), "{version}");
}

/// The checked-in tables of Go facts are what the pinned Go types give. They need Go and the
/// module cache, so they run where the control plane is required (CI); elsewhere they say why
/// they skipped. One `go build` makes both generators, so the Kubernetes packages they share are
/// compiled once (two `go run`s side by side took 200 s each in CI).
#[test]
fn the_go_tables_are_fresh() {
    if std::env::var_os("TOLLGATE_REQUIRE_CONTROL_PLANE").is_none()
        || !control_plane::gobuild::have_go()
    {
        eprintln!("skipped: needs Go and TOLLGATE_REQUIRE_CONTROL_PLANE");
        return;
    }
    let bin = tempfile::tempdir().expect("tempdir");
    let built = std::process::Command::new("go")
        .args(["build", "-o"])
        .arg(bin.path())
        .args(["./fieldorder", "./protofields"])
        .current_dir(control_plane::gobuild::module_dir())
        .output()
        .expect("go runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    for (program, table, command) in [
        ("fieldorder", "src/http/go_field_order.json", "field-order"),
        (
            "protofields",
            "src/http/protobuf/go_protobuf.json",
            "protobuf-fields",
        ),
    ] {
        let output = std::process::Command::new(bin.path().join(program))
            .output()
            .expect("the generator runs");
        assert!(
            output.status.success(),
            "{program}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let checked_in =
            std::fs::read(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(table))
                .expect("the table is checked in");
        assert!(
            output.stdout == checked_in,
            "fake-apiserver/{table} is stale: run `cargo run -p control-plane --bin control-plane -- {command}`"
        );
    }
}
