//! managedFields as kube-apiserver's structured-merge-diff writes them: which nodes of fieldsV1
//! are members of their own (`"."`), list-map keys, atomic structs, clearing managedFields, the
//! first apply to an unmanaged object, and how apply requests are refused.

use serde_json::{Value, json};

use super::{Env, assert_status, dual};

dual!(
    a_create_owns_what_it_added_to_the_go_zero_value,
    updating_a_lease_spec_owns_its_fields_without_the_spec,
    an_event_owns_its_involved_object_whole,
    apply_owns_map_keys_atomic_items_and_defaulted_list_keys,
    clearing_managed_fields_leaves_the_object_unmanaged_until_an_apply,
    apply_bodies_of_another_kind_or_with_undeclared_fields_are_refused,
    force_is_refused_on_a_non_apply_patch,
    a_finalize_write_gets_an_entry_of_its_own,
    an_apply_with_a_stale_resource_version_conflicts_on_the_object_and_on_its_status,
    an_apply_naming_another_uid_is_refused_on_the_object_and_on_its_status,
);

const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

/// The fieldsV1 of `manager`'s entry (Null when it has none).
fn fields(obj: &Value, manager: &str) -> Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["manager"] == manager)
        .map_or(Value::Null, |e| e["fieldsV1"].clone())
}

async fn create(env: &Env, path: &str, body: Value) -> Value {
    let raw = env
        .raw(
            "POST",
            &format!("{path}?fieldManager=creator"),
            JSON,
            body.to_string(),
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    raw.body
}

async fn owner(env: &Env) -> String {
    let cm = create(
        env,
        &format!("/api/v1/namespaces/{}/configmaps", env.ns),
        json!({"metadata": {"name": "owner"}, "data": {"k": "v"}}),
    )
    .await;
    cm["metadata"]["uid"].as_str().expect("uid").to_string()
}

/// A create is recorded as a change from the kind's Go zero value: the structs that value holds
/// (a Pod's spec) and its nil lists (containers) are not members, the maps, lists and items the
/// create added are; a keyed list's items are keyed by all its keys, the defaulted ones included;
/// an owner reference is atomic.
async fn a_create_owns_what_it_added_to_the_go_zero_value(env: Env) {
    let uid = owner(&env).await;
    let body = json!({"metadata": {"name": "p", "labels": {"a": "b"},
                        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}]},
           "spec": {"containers": [{"name": "c", "image": "i",
                                    "ports": [{"containerPort": 443}, {"containerPort": 80},
                                              {"containerPort": 8080, "protocol": "UDP"}]}],
                    "volumes": [{"name": "v", "emptyDir": {}}]}});
    let raw = env
        .raw(
            "POST",
            &format!("/api/v1/namespaces/{}/pods?fieldManager=creator", env.ns),
            JSON,
            body.to_string(),
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    // Keys are ordered by value, as structured-merge-diff sorts them: 80 before 443.
    let at = |port: &str| {
        raw.text
            .find(&format!("k:{{\\\"containerPort\\\":{port},"))
            .unwrap_or_else(|| panic!("port {port} in {}", raw.text))
    };
    assert!(
        at("80") < at("443") && at("443") < at("8080"),
        "{}",
        raw.text
    );
    let pod = raw.body;
    let f = fields(&pod, "creator");
    assert_eq!(
        f["f:metadata"],
        json!({"f:labels": {".": {}, "f:a": {}},
               "f:ownerReferences": {".": {}, format!("k:{{\"uid\":\"{uid}\"}}"): {}}}),
        "{f}"
    );
    let spec = &f["f:spec"];
    assert!(spec.get(".").is_none(), "{spec}");
    assert!(spec["f:containers"].get(".").is_none(), "{spec}");
    let container = &spec["f:containers"]["k:{\"name\":\"c\"}"];
    assert_eq!(container["."], json!({}), "{spec}");
    assert_eq!(
        container["f:ports"],
        json!({".": {},
               "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}},
               "k:{\"containerPort\":443,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}},
               "k:{\"containerPort\":8080,\"protocol\":\"UDP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}}),
        "{spec}"
    );
    assert_eq!(
        spec["f:volumes"],
        json!({".": {}, "k:{\"name\":\"v\"}": {".": {}, "f:emptyDir": {}, "f:name": {}}}),
        "{spec}"
    );

    // A set (finalizers) added by a write is a member too. (The owner has managedFields: an
    // object without them stays so through updates.)
    let path = format!("/api/v1/namespaces/{}/configmaps/owner", env.ns);
    let patched = env
        .raw(
            "PATCH",
            &format!("{path}?fieldManager=holder"),
            MERGE,
            r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
        )
        .await;
    assert_eq!(
        fields(&patched.body, "holder"),
        json!({"f:metadata": {"f:finalizers": {".": {}, "v:\"example.com/hold\"": {}}}}),
        "{}",
        patched.text
    );
    let released = env
        .raw("PATCH", &path, MERGE, r#"{"metadata":{"finalizers":null}}"#)
        .await;
    assert_eq!(released.code, 200, "{}", released.text);
}

/// A Lease's spec is a non-pointer struct: writes own its fields, never the spec itself.
async fn updating_a_lease_spec_owns_its_fields_without_the_spec(env: Env) {
    let path = format!("/apis/coordination.k8s.io/v1/namespaces/{}/leases", env.ns);
    let lease = create(
        &env,
        &path,
        json!({"metadata": {"name": "l"}, "spec": {"holderIdentity": "a"}}),
    )
    .await;
    assert_eq!(
        fields(&lease, "creator"),
        json!({"f:spec": {"f:holderIdentity": {}}})
    );
    let renewed = env
        .raw(
            "PATCH",
            &format!("{path}/l?fieldManager=renewer"),
            MERGE,
            r#"{"spec":{"leaseDurationSeconds":15}}"#,
        )
        .await;
    assert_eq!(
        fields(&renewed.body, "renewer"),
        json!({"f:spec": {"f:leaseDurationSeconds": {}}}),
        "{}",
        renewed.text
    );
}

/// An ObjectReference is an atomic struct: owned as one leaf.
async fn an_event_owns_its_involved_object_whole(env: Env) {
    let event = create(
        &env,
        &format!("/api/v1/namespaces/{}/events", env.ns),
        json!({"metadata": {"name": "e"}, "reason": "R", "message": "m",
               "involvedObject": {"kind": "ConfigMap", "name": "x", "namespace": env.ns}}),
    )
    .await;
    assert_eq!(fields(&event, "creator")["f:involvedObject"], json!({}));
}

/// An apply owns each key of a map (labels), an atomic list item whole, and keys list items by
/// all their keys, taking a key's default when the configuration leaves it out.
async fn apply_owns_map_keys_atomic_items_and_defaulted_list_keys(env: Env) {
    let uid = owner(&env).await;
    let cm = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"a","labels":{{"x":"1"}},
            "ownerReferences":[{{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"{uid}"}}]}}}}"#
    );
    let applied = env
        .raw(
            "PATCH",
            &format!("/api/v1/namespaces/{}/configmaps/a?fieldManager=ap", env.ns),
            APPLY,
            cm,
        )
        .await;
    assert_eq!(applied.code, 201, "{}", applied.text);
    assert_eq!(
        fields(&applied.body, "ap"),
        json!({"f:metadata": {"f:labels": {"f:x": {}},
                              "f:ownerReferences": {format!("k:{{\"uid\":\"{uid}\"}}"): {}}}})
    );

    let svc = r#"{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},
                  "spec":{"ports":[{"port":80}],"selector":{"app":"x"}}}"#;
    let applied = env
        .raw(
            "PATCH",
            &format!("/api/v1/namespaces/{}/services/s?fieldManager=ap", env.ns),
            APPLY,
            svc,
        )
        .await;
    assert_eq!(applied.code, 201, "{}", applied.text);
    assert_eq!(
        fields(&applied.body, "ap")["f:spec"],
        json!({"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}},
               "f:selector": {}}),
        "{}",
        applied.text
    );
}

/// `managedFields: [{}]` clears them; later updates record nothing; the first apply gives the
/// existing fields to "before-first-apply".
async fn clearing_managed_fields_leaves_the_object_unmanaged_until_an_apply(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    create(
        &env,
        &base,
        json!({"metadata": {"name": "c"}, "data": {"a": "1"}}),
    )
    .await;
    let path = format!("{base}/c?fieldManager=patcher");
    let cleared = env
        .raw(
            "PATCH",
            &path,
            MERGE,
            r#"{"metadata":{"managedFields":[{}]},"data":{"b":"2"}}"#,
        )
        .await;
    assert_eq!(cleared.code, 200, "{}", cleared.text);
    assert!(
        cleared.body["metadata"].get("managedFields").is_none(),
        "{}",
        cleared.text
    );
    let later = env
        .raw("PATCH", &path, MERGE, r#"{"data":{"c":"3"}}"#)
        .await;
    assert!(
        later.body["metadata"].get("managedFields").is_none(),
        "{}",
        later.text
    );
    let applied = env
        .raw(
            "PATCH",
            &format!("{base}/c?fieldManager=ap"),
            APPLY,
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"d":"4"}}"#,
        )
        .await;
    let managers: Vec<&Value> = applied.body["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields")
        .iter()
        .map(|e| &e["manager"])
        .collect();
    assert_eq!(managers, [&json!("ap"), &json!("before-first-apply")]);
    assert_eq!(
        fields(&applied.body, "before-first-apply"),
        json!({"f:data": {".": {}, "f:a": {}, "f:b": {}, "f:c": {}}})
    );
}

async fn apply_bodies_of_another_kind_or_with_undeclared_fields_are_refused(env: Env) {
    let path = format!("/api/v1/namespaces/{}/configmaps/a?fieldManager=m", env.ns);
    let no_kind = env
        .raw(
            "PATCH",
            &path,
            APPLY,
            r#"{"apiVersion":"v1","metadata":{"name":"a"}}"#,
        )
        .await;
    assert_status(&no_kind, 400, "BadRequest");
    assert_eq!(no_kind.body["message"], "invalid object type: /v1, Kind=");
    let other = env
        .raw(
            "PATCH",
            &path,
            APPLY,
            r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"}}"#,
        )
        .await;
    assert_status(&other, 400, "BadRequest");
    assert_eq!(
        other.body["message"],
        "invalid object type: apps/v1, Kind=Deployment"
    );
    let managed = env
        .raw(
            "PATCH",
            &path,
            APPLY,
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","managedFields":[]}}"#,
        )
        .await;
    assert_status(&managed, 400, "BadRequest");
    assert_eq!(
        managed.body["message"],
        "metadata.managedFields must be nil"
    );
    // Whatever fieldValidation says, the typed conversion refuses a field the kind lacks.
    let undeclared = env
        .raw(
            "PATCH",
            &format!("{path}&fieldValidation=Ignore"),
            APPLY,
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"extra":{"x":1}}"#,
        )
        .await;
    assert_eq!(undeclared.code, 500, "{}", undeclared.text);
    assert!(
        undeclared.body.get("reason").is_none(),
        "{}",
        undeclared.text
    );
    assert_eq!(
        undeclared.body["message"],
        "failed to create typed patch object (/a; /v1, Kind=ConfigMap): .extra: field not declared in schema"
    );
    let malformed = env.raw("PATCH", &path, APPLY, "data: [1,\nb: 2\n").await;
    assert_status(&malformed, 400, "BadRequest");
    assert!(
        malformed.body["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("error encoding patch: yaml: line ")),
        "{}",
        malformed.text
    );
}

async fn force_is_refused_on_a_non_apply_patch(env: Env) {
    let base = format!("/api/v1/namespaces/{}/configmaps", env.ns);
    create(&env, &base, json!({"metadata": {"name": "c"}})).await;
    let forced = env
        .raw(
            "PATCH",
            &format!("{base}/c?fieldManager=m&force=true"),
            MERGE,
            r#"{"data":{"y":"1"}}"#,
        )
        .await;
    assert_status(&forced, 422, "Invalid");
    assert_eq!(
        forced.body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
}

/// A resourceVersion in an applied configuration is a precondition, on /status as on the object:
/// Kueue applies a Workload's status with the version it read, and counts on a 409 when someone
/// wrote in between (the fake once let the status apply through, undoing a test's write).
async fn an_apply_with_a_stale_resource_version_conflicts_on_the_object_and_on_its_status(
    env: Env,
) {
    let base = format!("/api/v1/namespaces/{}/pods", env.ns);
    let pod = create(
        &env,
        &base,
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    )
    .await;
    let read = pod["metadata"]["resourceVersion"].clone();
    // Someone else writes after our read.
    let label = env
        .raw(
            "PATCH",
            &format!("{base}/p"),
            MERGE,
            r#"{"metadata":{"labels":{"a":"b"}}}"#,
        )
        .await;
    assert_eq!(label.code, 200, "{}", label.text);
    let apply = |path: String, body: Value| {
        let env = &env;
        async move {
            env.raw(
                "PATCH",
                &format!("{path}?fieldManager=m&force=true"),
                APPLY,
                body.to_string(),
            )
            .await
        }
    };
    let stale = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "resourceVersion": read}});
    let conflict = "Operation cannot be fulfilled on pods \"p\": the object has been modified; please apply your changes to the latest version and try again";
    let mut on_object = stale.clone();
    on_object["metadata"]["labels"] = json!({"mine": "x"});
    let refused = apply(format!("{base}/p"), on_object).await;
    assert_status(&refused, 409, "Conflict");
    assert_eq!(refused.body["message"], conflict);
    let mut on_status = stale.clone();
    on_status["status"] = json!({"message": "mine"});
    let refused = apply(format!("{base}/p/status"), on_status.clone()).await;
    assert_status(&refused, 409, "Conflict");
    assert_eq!(refused.body["message"], conflict);

    // Nothing of the refused applies was written; with the current version the status apply goes.
    let now = env.raw("GET", &format!("{base}/p"), JSON, "").await;
    assert!(now.body["status"].get("message").is_none(), "{}", now.text);
    assert!(
        now.body["metadata"]["labels"].get("mine").is_none(),
        "{}",
        now.text
    );
    on_status["metadata"]["resourceVersion"] = now.body["metadata"]["resourceVersion"].clone();
    let applied = apply(format!("{base}/p/status"), on_status).await;
    assert_eq!(applied.code, 200, "{}", applied.text);
    assert_eq!(applied.body["status"]["message"], "mine");
}

/// A uid in an applied configuration is an immutable field, on the object and on its status
/// (a 422, not the 409 an update's uid precondition gets), and nothing is written.
async fn an_apply_naming_another_uid_is_refused_on_the_object_and_on_its_status(env: Env) {
    let base = format!("/api/v1/namespaces/{}/pods", env.ns);
    create(
        &env,
        &base,
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}),
    )
    .await;
    let other = "6a0b2e7c-1d3f-4c5b-9e8a-000000000000";
    let metadata = json!({"name": "p", "uid": other, "labels": {"mine": "x"}});
    for (path, body) in [
        (
            format!("{base}/p"),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata}),
        ),
        (
            format!("{base}/p/status"),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                   "status": {"message": "mine"}}),
        ),
    ] {
        let refused = env
            .raw(
                "PATCH",
                &format!("{path}?fieldManager=m&force=true"),
                APPLY,
                body.to_string(),
            )
            .await;
        assert_status(&refused, 422, "Invalid");
        assert_eq!(
            refused.body["message"],
            format!(
                "Pod \"p\" is invalid: metadata.uid: Invalid value: \"{other}\": field is immutable"
            ),
            "{path}"
        );
        assert_eq!(
            refused.body["details"]["causes"][0]["field"], "metadata.uid",
            "{}",
            refused.text
        );
    }
    let now = env.raw("GET", &format!("{base}/p"), JSON, "").await;
    assert!(now.body["status"].get("message").is_none(), "{}", now.text);
    assert!(now.body["metadata"].get("labels").is_none(), "{}", now.text);
    assert!(fields(&now.body, "m").is_null(), "{}", now.text);
}

/// A namespace's /finalize writes are recorded apart, with subresource finalize.
async fn a_finalize_write_gets_an_entry_of_its_own(env: Env) {
    let name = env.name("fin");
    env.create_namespace(&name).await;
    let path = format!("/api/v1/namespaces/{name}/finalize?fieldManager=finalizer");
    let body = |finalizers: Value| {
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
               "spec": {"finalizers": finalizers}})
        .to_string()
    };
    let put = env
        .raw(
            "PUT",
            &path,
            JSON,
            body(json!(["kubernetes", "example.com/x"])),
        )
        .await;
    assert_eq!(put.code, 200, "{}", put.text);
    let entry = put.body["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["manager"] == "finalizer")
        .cloned()
        .unwrap_or_else(|| panic!("an entry of finalizer in {}", put.text));
    assert_eq!(entry["subresource"], "finalize", "{entry}");
    assert_eq!(entry["fieldsV1"], json!({"f:spec": {"f:finalizers": {}}}));
    let back = env
        .raw("PUT", &path, JSON, body(json!(["kubernetes"])))
        .await;
    assert_eq!(back.code, 200, "{}", back.text);
}
