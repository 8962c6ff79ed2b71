//! Table answers (`kubectl get`) and discovery documents on both targets: the columns and cells
//! of built-in kinds and custom resources, `includeObject`, Table versions, paging and watches;
//! the legacy and aggregated discovery documents and `/version`.

use http_body_util::BodyExt;
use serde_json::{Value, json};

use super::{Env, assert_status, dual};

dual!(
    column_definitions_carry_the_fields_documentation_and_kube_apiservers_types,
    a_pending_pod_prints_every_column_the_wide_ones_included,
    a_node_without_status_prints_unknown_and_empty_node_info,
    a_deployment_prints_its_containers_images_and_selector,
    core_and_events_k8s_io_events_print_the_same_columns,
    include_object_picks_what_each_row_carries,
    table_versions_are_v1_and_v1beta1_only,
    a_paged_table_carries_the_lists_continue_and_remaining_count,
    a_table_watch_sends_column_definitions_in_its_first_event_only,
    a_dry_run_create_as_a_table_has_no_resource_version,
    custom_resource_columns_without_descriptions_name_their_json_path,
    legacy_discovery_lists_kube_apiservers_resources_hashes_and_verbs,
    groups_are_listed_in_kube_apiservers_priority_order,
    aggregated_discovery_is_v2_only_with_empty_built_in_response_kinds,
    custom_resources_are_discovered_with_the_apiextensions_servers_verbs,
    version_claims_the_emulated_release,
    discovery_of_groups_and_versions_not_served_is_not_found,
    role_bindings_services_and_leases_print_like_kube_apiserver,
);

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const TABLE_THEN_JSON: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

async fn get(env: &Env, path: &str, accept: &str) -> super::Raw {
    env.raw_with("GET", path, &[("accept", accept)], "").await
}

async fn post(env: &Env, path: &str, accept: &str, body: Value) -> super::Raw {
    let raw = env
        .raw_with(
            "POST",
            path,
            &[("accept", accept), ("content-type", "application/json")],
            body.to_string(),
        )
        .await;
    assert!(raw.code < 300, "{path}: {}", raw.text);
    raw
}

fn column_names(table: &Value) -> Vec<&str> {
    table["columnDefinitions"]
        .as_array()
        .expect("column definitions")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or(""))
        .collect()
}

/// The cells of a Table's only row, with the Age-like cells (those that vary with time) blanked.
fn cells(table: &Value, ages: &[usize]) -> Vec<Value> {
    let mut cells = table["rows"][0]["cells"].as_array().expect("a row").clone();
    for i in ages {
        assert!(cells[*i].is_string(), "{:?}", cells[*i]);
        cells[*i] = json!("<age>");
    }
    cells
}

async fn column_definitions_carry_the_fields_documentation_and_kube_apiservers_types(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    post(
        &env,
        &base,
        "application/json",
        json!({"metadata": {"name": "a"}, "data": {"k": "v"}}),
    )
    .await;
    let table = get(&env, &format!("{base}/a"), TABLE).await.body;
    let columns = &table["columnDefinitions"];
    assert_eq!(column_names(&table), ["Name", "Data", "Age"]);
    assert_eq!(
        (
            &columns[0]["type"],
            &columns[0]["format"],
            &columns[0]["priority"]
        ),
        (&json!("string"), &json!("name"), &json!(0))
    );
    let name = columns[0]["description"].as_str().unwrap_or("");
    assert!(
        name.starts_with("Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client"),
        "{name}"
    );
    // The Data column is typed string although its cells are numbers.
    assert_eq!(columns[1]["type"], "string");
    assert_eq!(table["rows"][0]["cells"][1], 1);
    let data = columns[1]["description"].as_str().unwrap_or("");
    assert!(
        data.starts_with("Data contains the configuration data."),
        "{data}"
    );
    let age = columns[2]["description"].as_str().unwrap_or("");
    assert!(age.starts_with("CreationTimestamp is a timestamp"), "{age}");
}

async fn a_pending_pod_prints_every_column_the_wide_ones_included(env: Env) {
    let base = format!("/api/v1/namespaces/{}/pods", env.ns);
    let pod = json!({"metadata": {"name": "p"}, "spec": {"schedulerName": "none", "containers": [{"name": "c", "image": "pause"}]}});
    post(&env, &base, "application/json", pod).await;
    let table = get(&env, &format!("{base}/p"), TABLE).await.body;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    let priorities: Vec<&Value> = table["columnDefinitions"]
        .as_array()
        .expect("an array")
        .iter()
        .map(|c| &c["priority"])
        .collect();
    assert_eq!(
        priorities,
        [
            &json!(0),
            &json!(0),
            &json!(0),
            &json!(0),
            &json!(0),
            &json!(1),
            &json!(1),
            &json!(1),
            &json!(1)
        ]
    );
    assert_eq!(
        cells(&table, &[4]),
        [
            json!("p"),
            json!("0/1"),
            json!("Pending"),
            json!("0"),
            json!("<age>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

async fn a_node_without_status_prints_unknown_and_empty_node_info(env: Env) {
    let name = env.name("node");
    post(
        &env,
        "/api/v1/nodes",
        "application/json",
        json!({"metadata": {"name": name, "labels": {"node-role.kubernetes.io/worker": ""}}}),
    )
    .await;
    env.delete_at_end(format!("/api/v1/nodes/{name}"));
    let table = get(&env, &format!("/api/v1/nodes/{name}"), TABLE)
        .await
        .body;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Status",
            "Roles",
            "Age",
            "Version",
            "Internal-IP",
            "External-IP",
            "OS-Image",
            "Kernel-Version",
            "Container-Runtime"
        ]
    );
    assert_eq!(
        cells(&table, &[3]),
        [
            json!(name),
            json!("Unknown"),
            json!("worker"),
            json!("<age>"),
            json!(""),
            json!("<none>"),
            json!("<none>"),
            json!("<unknown>"),
            json!("<unknown>"),
            json!("<unknown>")
        ]
    );
}

async fn a_deployment_prints_its_containers_images_and_selector(env: Env) {
    let base = format!("/apis/apps/v1/namespaces/{}/deployments", env.ns);
    let deployment = json!({
        "metadata": {"name": "d"},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "d"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]}]},
            "template": {
                "metadata": {"labels": {"app": "d", "tier": "web"}},
                "spec": {"containers": [{"name": "a", "image": "pause"}, {"name": "b", "image": "busybox"}]},
            },
        },
    });
    post(&env, &base, "application/json", deployment).await;
    let table = get(&env, &format!("{base}/d"), TABLE).await.body;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Ready",
            "Up-to-date",
            "Available",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    let types: Vec<&Value> = table["columnDefinitions"]
        .as_array()
        .expect("an array")
        .iter()
        .map(|c| &c["type"])
        .collect();
    assert!(types.iter().all(|t| *t == "string"), "{types:?}");
    assert_eq!(
        cells(&table, &[4]),
        [
            json!("d"),
            json!("0/0"),
            json!(0),
            json!(0),
            json!("<age>"),
            json!("a,b"),
            json!("pause,busybox"),
            json!("app=d,tier in (api,web)")
        ]
    );
}

async fn core_and_events_k8s_io_events_print_the_same_columns(env: Env) {
    let ns = &env.ns;
    let event = json!({
        "metadata": {"name": "ev"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": ns, "fieldPath": "spec.containers{c}"},
        "reason": "Pulled", "message": " done ", "type": "Normal", "count": 3,
        "source": {"component": "kubelet", "host": "n1"},
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
    });
    post(
        &env,
        &format!("/api/v1/namespaces/{ns}/events"),
        "application/json",
        event,
    )
    .await;
    let expected_columns = [
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Subobject",
        "Source",
        "Message",
        "First Seen",
        "Count",
        "Name",
    ];
    let expected_cells = [
        json!("<age>"),
        json!("Normal"),
        json!("Pulled"),
        json!("pod/p"),
        json!("spec.containers{c}"),
        json!("kubelet, n1"),
        json!("done"),
        json!("<age>"),
        json!(3),
        json!("ev"),
    ];
    for path in [
        format!("/api/v1/namespaces/{ns}/events/ev"),
        format!("/apis/events.k8s.io/v1/namespaces/{ns}/events/ev"),
    ] {
        let table = get(&env, &path, TABLE).await.body;
        assert_eq!(column_names(&table), expected_columns, "{path}");
        assert_eq!(cells(&table, &[0, 7]), expected_cells, "{path}");
    }
}

async fn include_object_picks_what_each_row_carries(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    post(
        &env,
        &base,
        "application/json",
        json!({"metadata": {"name": "a"}, "data": {"k": "v"}}),
    )
    .await;
    let one = format!("{base}/a");
    let none = get(&env, &format!("{one}?includeObject=None"), TABLE)
        .await
        .body;
    assert_eq!(none["rows"][0]["object"], Value::Null);
    assert!(
        none["rows"][0]
            .as_object()
            .expect("an object")
            .contains_key("object")
    );
    let object = get(&env, &format!("{one}?includeObject=Object"), TABLE)
        .await
        .body;
    assert_eq!(object["rows"][0]["object"]["kind"], "ConfigMap");
    assert_eq!(object["rows"][0]["object"]["data"], json!({"k": "v"}));
    let metadata = get(&env, &format!("{one}?includeObject=Metadata"), TABLE)
        .await
        .body;
    assert_eq!(
        metadata["rows"][0]["object"]["kind"],
        "PartialObjectMetadata"
    );
    assert_eq!(metadata["rows"][0]["object"]["metadata"]["name"], "a");
    let bad = get(&env, &format!("{base}?includeObject=Everything"), TABLE).await;
    assert_status(&bad, 400, "BadRequest");
    assert_eq!(
        bad.body["message"],
        "Unable to convert to Table as requested: includeObject: Invalid value: \"Everything\": must be 'Metadata', 'Object', 'None', or empty"
    );
    // Without a Table, includeObject means nothing.
    let plain = get(
        &env,
        &format!("{one}?includeObject=Everything"),
        "application/json",
    )
    .await;
    assert_eq!(plain.body["kind"], "ConfigMap");
}

async fn table_versions_are_v1_and_v1beta1_only(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    post(
        &env,
        &base,
        "application/json",
        json!({"metadata": {"name": "a"}}),
    )
    .await;
    let one = format!("{base}/a");
    let beta = get(
        &env,
        &one,
        "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
    )
    .await;
    // Written in the Go type's field order, like a v1 Table.
    assert!(
        beta.text
            .starts_with(r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1beta1","metadata":{"#),
        "{}",
        beta.text
    );
    let beta = beta.body;
    assert_eq!(beta["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(
        beta["rows"][0]["object"]["apiVersion"],
        "meta.k8s.io/v1beta1"
    );
    let unknown = get(&env, &one, "application/json;as=Table;v=v9;g=meta.k8s.io").await;
    assert_status(&unknown, 406, "NotAcceptable");
    assert_eq!(
        unknown.body["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    let fallback = get(
        &env,
        &one,
        "application/json;as=Table;v=v9;g=meta.k8s.io,application/json",
    )
    .await;
    assert_eq!(fallback.body["kind"], "ConfigMap");
}

async fn a_paged_table_carries_the_lists_continue_and_remaining_count(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    for name in ["a", "b", "c"] {
        post(
            &env,
            &base,
            "application/json",
            json!({"metadata": {"name": name, "labels": {"t": "x"}}}),
        )
        .await;
    }
    // The namespace's kube-root-ca.crt (published by a controller on kube-apiserver) counts too.
    let config_maps = env.api::<k8s_openapi::api::core::v1::ConfigMap>();
    let root_ca = |o: Option<&k8s_openapi::api::core::v1::ConfigMap>| o.is_some();
    env.wait_for(
        &config_maps,
        "kube-root-ca.crt",
        root_ca,
        "the root CA is published",
    )
    .await;
    // Without a selector the list knows how many items remain.
    let page = get(&env, &format!("{base}?limit=1"), TABLE).await.body;
    assert_eq!(page["rows"].as_array().map(Vec::len), Some(1));
    assert!(
        page["metadata"]["continue"].is_string(),
        "{}",
        page["metadata"]
    );
    assert!(page["metadata"]["resourceVersion"].is_string());
    assert_eq!(
        page["metadata"]["remainingItemCount"], 3,
        "{}",
        page["metadata"]
    );
    let selected = get(&env, &format!("{base}?labelSelector=t%3Dx&limit=1"), TABLE)
        .await
        .body;
    assert!(selected["metadata"]["continue"].is_string());
    assert_eq!(selected["metadata"].get("remainingItemCount"), None);
}

/// The first `n` lines of a watch.
async fn watch_lines(env: &Env, path: &str, accept: &str, n: usize) -> Vec<Value> {
    let req = http::Request::builder()
        .uri(path)
        .header("accept", accept)
        .body(kube::client::Body::from(Vec::new()))
        .expect("request builds");
    let resp = env.client.send(req).await.expect("the watch starts");
    let mut body = resp.into_body();
    let mut bytes = Vec::new();
    while bytes.iter().filter(|b| **b == b'\n').count() < n {
        let frame = tokio::time::timeout(super::EVENTUALLY, body.frame())
            .await
            .expect("an event within the timeout")
            .expect("the watch is still open")
            .expect("the stream reads");
        if let Ok(data) = frame.into_data() {
            bytes.extend_from_slice(&data);
        }
    }
    String::from_utf8_lossy(&bytes)
        .lines()
        .take(n)
        .map(|l| serde_json::from_str(l).expect("a JSON event"))
        .collect()
}

async fn a_table_watch_sends_column_definitions_in_its_first_event_only(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    for name in ["a", "b"] {
        post(
            &env,
            &base,
            "application/json",
            json!({"metadata": {"name": name, "labels": {"t": "x"}}}),
        )
        .await;
    }
    let events = watch_lines(
        &env,
        &format!("{base}?labelSelector=t%3Dx&watch=true&resourceVersion=0"),
        TABLE,
        2,
    )
    .await;
    assert_eq!(events[0]["object"]["kind"], "Table");
    assert_eq!(column_names(&events[0]["object"]), ["Name", "Data", "Age"]);
    assert_eq!(events[1]["object"]["kind"], "Table");
    assert_eq!(events[1]["object"]["columnDefinitions"], Value::Null);
    assert_eq!(
        events[1]["object"]["rows"].as_array().map(Vec::len),
        Some(1)
    );
}

async fn a_dry_run_create_as_a_table_has_no_resource_version(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    let created = post(
        &env,
        &format!("{base}?dryRun=All"),
        TABLE_THEN_JSON,
        json!({"metadata": {"name": "a"}}),
    )
    .await;
    assert_eq!(created.body["kind"], "Table");
    assert_eq!(created.body["metadata"], json!({}));
    assert_eq!(created.body["rows"][0]["cells"][0], "a");
}

async fn custom_resource_columns_without_descriptions_name_their_json_path(env: Env) {
    let group = format!("{}.example.com", env.ns);
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}});
    let crd = |plural: &str, kind: &str, columns: Value| {
        let mut version = json!({"name": "v1", "served": true, "storage": true, "schema": schema});
        if !columns.is_null() {
            version["additionalPrinterColumns"] = columns;
        }
        serde_json::from_value(json!({
            "metadata": {"name": format!("{plural}.{group}")},
            "spec": {"group": group, "scope": "Namespaced", "names": {"plural": plural, "kind": kind}, "versions": [version]},
        }))
        .expect("a CRD")
    };
    env.create_crd(&crd(
        "sized",
        "Sized",
        json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]),
    ))
    .await;
    env.create_crd(&crd("plains", "Plain", Value::Null)).await;
    let ns = &env.ns;
    post(&env, &format!("/apis/{group}/v1/namespaces/{ns}/sized"), "application/json", json!({"apiVersion": format!("{group}/v1"), "kind": "Sized", "metadata": {"name": "s"}, "spec": {"size": 3}})).await;
    let sized = get(
        &env,
        &format!("/apis/{group}/v1/namespaces/{ns}/sized"),
        TABLE,
    )
    .await
    .body;
    assert_eq!(column_names(&sized), ["Name", "Size"]);
    assert_eq!(
        sized["columnDefinitions"][1]["description"],
        "Custom resource definition column (in JSONPath format): .spec.size"
    );
    assert!(
        sized["columnDefinitions"][0]["description"]
            .as_str()
            .unwrap_or("")
            .starts_with("Name must be unique within a namespace. Is required")
    );
    assert_eq!(sized["rows"][0]["cells"], json!(["s", 3]));
    let plain = get(
        &env,
        &format!("/apis/{group}/v1/namespaces/{ns}/plains"),
        TABLE,
    )
    .await
    .body;
    assert_eq!(column_names(&plain), ["Name", "Age"]);
    // Metadata-only lists of custom resources have a typed ListMeta: no empty continue.
    let metadata = get(
        &env,
        &format!("/apis/{group}/v1/namespaces/{ns}/plains"),
        "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
    )
    .await
    .body;
    assert_eq!(metadata["kind"], "PartialObjectMetadataList");
    assert_eq!(
        metadata["metadata"].get("continue"),
        None,
        "{}",
        metadata["metadata"]
    );
    assert_eq!(plain["columnDefinitions"][1]["type"], "date");
    assert!(
        plain["columnDefinitions"][1]["description"]
            .as_str()
            .unwrap_or("")
            .starts_with("CreationTimestamp is a timestamp")
    );
}

async fn legacy_discovery_lists_kube_apiservers_resources_hashes_and_verbs(env: Env) {
    let core = get(&env, "/api/v1", "application/json").await.body;
    assert_eq!(
        core.get("apiVersion"),
        None,
        "built-in lists carry no apiVersion"
    );
    let names: Vec<&str> = core["resources"]
        .as_array()
        .expect("an array")
        .iter()
        .map(|r| r["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        [
            "bindings",
            "componentstatuses",
            "configmaps",
            "endpoints",
            "events",
            "limitranges",
            "namespaces",
            "namespaces/finalize",
            "namespaces/status",
            "nodes",
            "nodes/proxy",
            "nodes/status",
            "persistentvolumeclaims",
            "persistentvolumeclaims/status",
            "persistentvolumes",
            "persistentvolumes/status",
            "pods",
            "pods/attach",
            "pods/binding",
            "pods/ephemeralcontainers",
            "pods/eviction",
            "pods/exec",
            "pods/log",
            "pods/portforward",
            "pods/proxy",
            "pods/resize",
            "pods/status",
            "podtemplates",
            "replicationcontrollers",
            "replicationcontrollers/scale",
            "replicationcontrollers/status",
            "resourcequotas",
            "resourcequotas/status",
            "secrets",
            "serviceaccounts",
            "serviceaccounts/token",
            "services",
            "services/proxy",
            "services/status",
        ]
    );
    let find = |name: &str| {
        core["resources"]
            .as_array()
            .expect("an array")
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(find("configmaps")["storageVersionHash"], "qFsyl6wFWjQ=");
    assert_eq!(find("componentstatuses")["verbs"], json!(["get", "list"]));
    assert_eq!(
        find("namespaces")["verbs"],
        json!([
            "create", "delete", "get", "list", "patch", "update", "watch"
        ])
    );
    assert_eq!(find("pods")["categories"], json!(["all"]));
    let crds = get(&env, "/apis/apiextensions.k8s.io/v1", "application/json")
        .await
        .body;
    assert_eq!(
        crds["resources"][0]["categories"],
        json!(["api-extensions"])
    );
    let apps = get(&env, "/apis/apps/v1", "application/json").await.body;
    assert_eq!(apps["apiVersion"], "v1", "grouped lists carry one");
    let deployments = get(&env, "/apis/apps/v1", "application/json").await.body;
    let scale = deployments["resources"]
        .as_array()
        .expect("an array")
        .iter()
        .find(|r| r["name"] == "deployments/scale")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        scale,
        json!({"name": "deployments/scale", "singularName": "", "namespaced": true, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]})
    );
}

const BUILTIN_GROUPS: [&str; 21] = [
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "resource.k8s.io",
    "flowcontrol.apiserver.k8s.io",
    "storagemigration.k8s.io",
];

async fn groups_are_listed_in_kube_apiservers_priority_order(env: Env) {
    let legacy = get(&env, "/apis", "application/json").await.body;
    let names: Vec<&str> = legacy["groups"]
        .as_array()
        .expect("an array")
        .iter()
        .map(|g| g["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names[..BUILTIN_GROUPS.len()], BUILTIN_GROUPS);
    let autoscaling = &legacy["groups"][5];
    assert_eq!(autoscaling["preferredVersion"]["version"], "v2");
    let aggregated = get(&env, "/apis", AGGREGATED).await.body;
    let names: Vec<&str> = aggregated["items"]
        .as_array()
        .expect("an array")
        .iter()
        .map(|g| g["metadata"]["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names[..BUILTIN_GROUPS.len()], BUILTIN_GROUPS);
}

async fn aggregated_discovery_is_v2_only_with_empty_built_in_response_kinds(env: Env) {
    let core = get(&env, "/api", AGGREGATED).await;
    assert_eq!(core.headers["content-type"], AGGREGATED);
    let resources = &core.body["items"][0]["versions"][0]["resources"];
    let pods = resources
        .as_array()
        .expect("an array")
        .iter()
        .find(|r| r["resource"] == "pods")
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        pods["responseKind"],
        json!({"group": "", "version": "", "kind": "Pod"})
    );
    let subresources: Vec<&str> = pods["subresources"]
        .as_array()
        .expect("an array")
        .iter()
        .map(|s| s["subresource"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        subresources,
        [
            "attach",
            "binding",
            "ephemeralcontainers",
            "eviction",
            "exec",
            "log",
            "portforward",
            "proxy",
            "resize",
            "status"
        ]
    );
    let beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
    assert_status(&get(&env, "/apis", beta).await, 406, "NotAcceptable");
    let legacy = get(&env, "/apis", &format!("{beta},application/json")).await;
    assert_eq!(legacy.body["kind"], "APIGroupList");
    assert_eq!(legacy.headers["content-type"], "application/json");
}

async fn custom_resources_are_discovered_with_the_apiextensions_servers_verbs(env: Env) {
    let group = format!("{}.example.com", env.ns);
    let crd = serde_json::from_value(json!({
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget", "categories": ["things"]},
            "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}],
        },
    }))
    .expect("a CRD");
    env.create_crd(&crd).await;
    let verbs = json!([
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "create",
        "update",
        "watch"
    ]);
    let list = get(&env, &format!("/apis/{group}/v1"), "application/json")
        .await
        .body;
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(
        list["resources"],
        json!([
            {"name": "gadgets", "singularName": "gadget", "namespaced": true, "kind": "Gadget", "verbs": verbs,
             "categories": ["things"], "storageVersionHash": storage_hash(&group)},
            {"name": "gadgets/status", "singularName": "", "namespaced": true, "kind": "Gadget", "verbs": ["get", "patch", "update"]},
        ])
    );
    let aggregated = get(&env, "/apis", AGGREGATED).await.body;
    let mine = aggregated["items"]
        .as_array()
        .expect("an array")
        .iter()
        .find(|g| g["metadata"]["name"] == group.as_str())
        .cloned()
        .unwrap_or_default();
    let gadgets = &mine["versions"][0]["resources"][0];
    assert_eq!(gadgets["verbs"], verbs);
    assert_eq!(
        gadgets["responseKind"],
        json!({"group": group, "version": "v1", "kind": "Gadget"})
    );
    assert_eq!(gadgets["categories"], json!(["things"]));
}

/// kube-apiserver's storageVersionHash: the first 8 bytes of SHA-256 of the storage
/// `group/version/kind`, in base64.
fn storage_hash(group: &str) -> Value {
    use base64::Engine;
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{group}/v1/Gadget").as_bytes(),
    );
    json!(base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8]))
}

async fn version_claims_the_emulated_release(env: Env) {
    let version = get(&env, "/version", "application/json").await.body;
    assert_eq!(version["gitVersion"], "v1.37.2");
    assert_eq!(
        (&version["major"], &version["minor"]),
        (&json!("1"), &json!("37"))
    );
    assert_eq!(version["compiler"], "gc");
    let platform = version["platform"].as_str().unwrap_or("");
    assert!(platform.split_once('/').is_some(), "{platform}");
}

async fn discovery_of_groups_and_versions_not_served_is_not_found(env: Env) {
    // No handler for an unknown group: the mux's plain-text 404.
    for path in [
        "/apis/nosuch.example.com",
        "/apis/nosuch.example.com/v1",
        "/apis/kueue.x-k8s.io/v1alpha1",
    ] {
        let raw = get(&env, path, "application/json").await;
        assert_eq!(raw.code, 404, "{path}");
        assert_eq!(raw.text, "404 page not found\n", "{path}");
        assert_eq!(
            raw.headers["content-type"], "text/plain; charset=utf-8",
            "{path}"
        );
    }
    // A built-in group's handler answers an unknown version with a NotFound Status.
    let raw = get(&env, "/apis/apps/v9", "application/json").await;
    assert_status(&raw, 404, "NotFound");
}

async fn role_bindings_services_and_leases_print_like_kube_apiserver(env: Env) {
    let ns = &env.ns;
    let binding = json!({
        "metadata": {"name": "rb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [
            {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"},
            {"kind": "Group", "name": "devs", "apiGroup": "rbac.authorization.k8s.io"},
            {"kind": "ServiceAccount", "name": "default", "namespace": ns},
            {"kind": "ServiceAccount", "name": "other", "namespace": "kube-system"},
        ],
    });
    let path = format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings");
    post(&env, &path, "application/json", binding).await;
    let table = get(&env, &format!("{path}/rb"), TABLE).await.body;
    assert_eq!(
        column_names(&table),
        ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]
    );
    assert_eq!(
        cells(&table, &[2]),
        [
            json!("rb"),
            json!("ClusterRole/view"),
            json!("<age>"),
            json!("alice"),
            json!("devs"),
            json!(format!("{ns}/default, kube-system/other")),
        ]
    );

    let service = json!({
        "metadata": {"name": "svc"},
        "spec": {"selector": {"tier": "y", "app": "x"}, "ports": [
            {"name": "http", "port": 80, "protocol": "TCP"},
            {"name": "dns", "port": 53, "protocol": "UDP"},
        ]},
    });
    let path = format!("/api/v1/namespaces/{ns}/services");
    post(&env, &path, "application/json", service).await;
    let table = get(&env, &format!("{path}/svc"), TABLE).await.body;
    assert_eq!(
        cells(&table, &[2, 5]),
        [
            json!("svc"),
            json!("ClusterIP"),
            json!("<age>"),
            json!("<none>"),
            json!("80/TCP,53/UDP"),
            json!("<age>"),
            json!("app=x,tier=y"),
        ]
    );

    let lease = json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}});
    let path = format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases");
    post(&env, &path, "application/json", lease).await;
    post(
        &env,
        &path,
        "application/json",
        json!({"metadata": {"name": "free"}}),
    )
    .await;
    let table = get(&env, &path, TABLE).await.body;
    let holders: Vec<&Value> = table["rows"]
        .as_array()
        .expect("an array")
        .iter()
        .map(|r| &r["cells"][1])
        .collect();
    assert_eq!(holders, [&json!(""), &json!("me")]);
}
