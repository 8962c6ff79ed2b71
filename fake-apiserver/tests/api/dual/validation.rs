//! Request validation on both targets: dry runs, body limits, names, malformed and mismatched
//! bodies, unknown paths, bad options, and field validation.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, PostParams};

use super::{Env, api_err, assert_status, dual};

dual!(
    dry_run_create_answers_like_a_create_but_stores_nothing,
    dry_run_create_still_validates_and_detects_conflicts,
    dry_run_update_answers_the_new_object_but_keeps_the_original,
    dry_run_delete_answers_success_but_keeps_the_object,
    a_body_over_three_mebibytes_is_rejected_with_413,
    an_invalid_name_is_rejected_with_a_field_cause,
    a_name_longer_than_253_characters_is_invalid,
    a_namespace_name_must_be_a_dns_label,
    a_dotted_name_is_a_valid_config_map_name,
    a_create_without_name_or_generate_name_is_required,
    malformed_json_is_a_bad_request,
    a_field_of_the_wrong_type_cannot_be_handled_as_a_config_map,
    a_body_whose_type_does_not_match_the_url_is_a_bad_request,
    a_put_whose_body_name_differs_from_the_url_is_a_bad_request,
    unknown_api_paths_answer_a_not_found_status,
    an_unparsable_list_parameter_is_a_bad_request,
    an_unknown_propagation_policy_is_invalid_delete_options,
    an_unknown_dry_run_value_is_invalid_create_options,
    a_patch_that_breaks_the_typed_form_is_refused_and_changes_nothing,
    field_validation_strict_refuses_and_warn_drops_unknown_fields,
    duplicate_fields_are_refused_under_strict_and_warned_about_otherwise,
);

const SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn cm(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some([("k".to_string(), value.to_string())].into()),
        ..Default::default()
    }
}

fn cms_path(env: &Env) -> String {
    format!("/api/v1/namespaces/{}/configmaps", env.ns)
}

/// Every configmap of the test's namespace with its resourceVersion, to prove nothing changed.
async fn snapshot(env: &Env) -> Vec<(String, String)> {
    let list = env
        .api::<ConfigMap>()
        .list(&Default::default())
        .await
        .expect("list");
    list.items
        .into_iter()
        // The real server's root-ca-cert-publisher adds this one at its own pace.
        .filter(|c| c.metadata.name.as_deref() != Some("kube-root-ca.crt"))
        .map(|c| {
            (
                c.metadata.name.unwrap_or_default(),
                c.metadata.resource_version.unwrap_or_default(),
            )
        })
        .collect()
}

/// A ConfigMap `target` to aim requests at.
async fn with_target(env: &Env) {
    env.api::<ConfigMap>()
        .create(&PostParams::default(), &cm("target", "v"))
        .await
        .expect("create target");
}

// --- dry run ------------------------------------------------------------------------------------

async fn dry_run_create_answers_like_a_create_but_stores_nothing(env: Env) {
    let api = env.api::<ConfigMap>();
    let before = snapshot(&env).await;
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let answer = api
        .create(&pp, &cm("x", "v"))
        .await
        .expect("dry-run create");
    assert_eq!(answer.metadata.name.as_deref(), Some("x"));
    assert_eq!(answer.metadata.namespace.as_deref(), Some(env.ns.as_str()));
    assert!(
        answer.metadata.uid.is_some(),
        "defaulted like a real create"
    );
    assert!(answer.metadata.creation_timestamp.is_some());
    assert_eq!(answer.data, cm("x", "v").data);

    let err = api_err(api.get("x").await);
    assert_eq!(err.code, 404);

    // The query form, as kubectl --dry-run=server sends it.
    let raw = env
        .raw(
            "POST",
            &format!("{}?dryRun=All", cms_path(&env)),
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"y"}}"#,
        )
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert_eq!(raw.body["metadata"]["name"], "y");
    assert_eq!(api_err(api.get("y").await).code, 404);
    assert_eq!(snapshot(&env).await, before, "nothing was written");
}

async fn dry_run_create_still_validates_and_detects_conflicts(env: Env) {
    let api = env.api::<ConfigMap>();
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let err = api_err(api.create(&pp, &cm("Bad_Name", "v")).await);
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, "Invalid");

    api.create(&PostParams::default(), &cm("x", "v"))
        .await
        .expect("create");
    let err = api_err(api.create(&pp, &cm("x", "other")).await);
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "AlreadyExists");
    assert_eq!(err.message, "configmaps \"x\" already exists");
}

async fn dry_run_update_answers_the_new_object_but_keeps_the_original(env: Env) {
    let api = env.api::<ConfigMap>();
    let original = api
        .create(&PostParams::default(), &cm("x", "old"))
        .await
        .expect("create");
    let mut changed = original.clone();
    changed.data = cm("x", "new").data;
    let pp = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let answer = api
        .replace("x", &pp, &changed)
        .await
        .expect("dry-run update");
    assert_eq!(answer.data, cm("x", "new").data);

    let stored = api.get("x").await.expect("get");
    assert_eq!(stored.data, cm("x", "old").data);
    assert_eq!(
        stored.metadata.resource_version,
        original.metadata.resource_version
    );
}

async fn dry_run_delete_answers_success_but_keeps_the_object(env: Env) {
    let api = env.api::<ConfigMap>();
    let created = api
        .create(&PostParams::default(), &cm("x", "v"))
        .await
        .expect("create");
    let dp = DeleteParams {
        dry_run: true,
        ..Default::default()
    };
    let status = api
        .delete("x", &dp)
        .await
        .expect("dry-run delete")
        .right_or_else(|obj| panic!("expected a Success Status like a real delete, got {obj:?}"));
    assert!(status.is_success(), "{status:?}");

    let raw = env
        .raw(
            "DELETE",
            &format!("{}/x?dryRun=All", cms_path(&env)),
            "",
            "",
        )
        .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_eq!(raw.body["kind"], "Status", "{}", raw.text);
    assert_eq!(raw.body["status"], "Success", "{}", raw.text);

    let stored = api.get("x").await.expect("still there");
    assert_eq!(
        stored.metadata.resource_version,
        created.metadata.resource_version
    );
    assert!(stored.metadata.deletion_timestamp.is_none());
}

// --- body size ----------------------------------------------------------------------------------

async fn a_body_over_three_mebibytes_is_rejected_with_413(env: Env) {
    let before = snapshot(&env).await;
    let big = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"k":"{}"}}}}"#,
        "a".repeat(3 * 1024 * 1024)
    );
    let raw = env
        .raw("POST", &cms_path(&env), "application/json", big)
        .await;
    assert_status(&raw, 413, "RequestEntityTooLarge");
    assert_eq!(
        raw.body["message"],
        "Request entity too large: limit is 3145728"
    );
    assert_eq!(snapshot(&env).await, before);
}

// --- names --------------------------------------------------------------------------------------

async fn an_invalid_name_is_rejected_with_a_field_cause(env: Env) {
    let api = env.api::<ConfigMap>();
    let err = api_err(
        api.create(&PostParams::default(), &cm("Bad_Name", "v"))
            .await,
    );
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, "Invalid");
    assert_eq!(
        err.message,
        format!(
            "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": {SUBDOMAIN_ERR}"
        )
    );
    let details = err.details.expect("details");
    assert_eq!(details.name, "Bad_Name");
    assert_eq!(details.kind, "ConfigMap");
    assert_eq!(details.causes.len(), 1, "{:?}", details.causes);
    assert_eq!(details.causes[0].field, "metadata.name");
    assert_eq!(details.causes[0].reason, "FieldValueInvalid");
    assert_eq!(
        details.causes[0].message,
        format!("Invalid value: \"Bad_Name\": {SUBDOMAIN_ERR}")
    );
}

async fn a_name_longer_than_253_characters_is_invalid(env: Env) {
    let api = env.api::<ConfigMap>();
    let name = "a".repeat(254);
    let err = api_err(api.create(&PostParams::default(), &cm(&name, "v")).await);
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        format!(
            "ConfigMap \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": must be no more than 253 characters"
        )
    );
}

async fn a_namespace_name_must_be_a_dns_label(env: Env) {
    let namespaces: Api<Namespace> = env.all();
    // A valid subdomain that is not a valid label: upstream singles out the dots.
    for (name, problem) in [("a.b", "must not contain dots"), ("Bad_Name", LABEL_ERR)] {
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let err = api_err(namespaces.create(&PostParams::default(), &ns).await);
        assert_eq!(err.code, 422);
        assert_eq!(err.reason, "Invalid");
        assert_eq!(
            err.message,
            format!(
                "Namespace \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": {problem}"
            )
        );
        let details = err.details.expect("details");
        assert_eq!(details.kind, "Namespace");
        assert_eq!(details.causes.len(), 1, "{:?}", details.causes);
        assert_eq!(details.causes[0].field, "metadata.name");
        assert_eq!(details.causes[0].reason, "FieldValueInvalid");
    }
}

async fn a_dotted_name_is_a_valid_config_map_name(env: Env) {
    let created = env
        .api::<ConfigMap>()
        .create(&PostParams::default(), &cm("a.b", "v"))
        .await
        .expect("a dotted configmap name is a valid DNS subdomain");
    assert_eq!(created.metadata.name.as_deref(), Some("a.b"));
}

async fn a_create_without_name_or_generate_name_is_required(env: Env) {
    let before = snapshot(&env).await;
    let raw = env
        .raw(
            "POST",
            &cms_path(&env),
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{},"data":{"k":"v"}}"#,
        )
        .await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        raw.body["message"],
        "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    assert_eq!(raw.body["details"]["kind"], "ConfigMap");
    assert_eq!(raw.body["details"]["causes"][0]["field"], "metadata.name");
    assert_eq!(
        raw.body["details"]["causes"][0]["reason"],
        "FieldValueRequired"
    );
    assert_eq!(snapshot(&env).await, before);
}

// --- malformed and mismatched bodies --------------------------------------------------------------

async fn malformed_json_is_a_bad_request(env: Env) {
    let before = snapshot(&env).await;
    let raw = env
        .raw(
            "POST",
            &cms_path(&env),
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x""#,
        )
        .await;
    assert_status(&raw, 400, "BadRequest");
    assert_eq!(snapshot(&env).await, before);
}

async fn a_field_of_the_wrong_type_cannot_be_handled_as_a_config_map(env: Env) {
    let before = snapshot(&env).await;
    let raw = env
        .raw(
            "POST",
            &cms_path(&env),
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"k":1}}"#,
        )
        .await;
    assert_status(&raw, 400, "BadRequest");
    let message = raw.body["message"].as_str().expect("message");
    assert!(
        message.starts_with("ConfigMap in version \"v1\" cannot be handled as a ConfigMap: "),
        "{message}"
    );
    assert_eq!(snapshot(&env).await, before);
}

async fn a_body_whose_type_does_not_match_the_url_is_a_bad_request(env: Env) {
    let before = snapshot(&env).await;
    for body in [
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}"#,
        r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}"#,
        r#"{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"x"}}"#,
    ] {
        let raw = env
            .raw("POST", &cms_path(&env), "application/json", body)
            .await;
        assert_status(&raw, 400, "BadRequest");
    }
    assert_eq!(snapshot(&env).await, before);
}

async fn a_put_whose_body_name_differs_from_the_url_is_a_bad_request(env: Env) {
    env.api::<ConfigMap>()
        .create(&PostParams::default(), &cm("a", "v"))
        .await
        .expect("create");
    let before = snapshot(&env).await;
    let raw = env
        .raw(
            "PUT",
            &format!("{}/a", cms_path(&env)),
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"},"data":{"k":"w"}}"#,
        )
        .await;
    assert_status(&raw, 400, "BadRequest");
    assert_eq!(
        raw.body["message"],
        "the name of the object (b) does not match the name on the URL (a)"
    );
    assert_eq!(snapshot(&env).await, before);
}

// --- paths and options ----------------------------------------------------------------------------

async fn unknown_api_paths_answer_a_not_found_status(env: Env) {
    // Inside the served API groups: a Status.
    for path in [
        format!("/api/v1/namespaces/{}/nothings", env.ns),
        "/api/v7/namespaces".to_string(),
    ] {
        let raw = env.raw("GET", &path, "", "").await;
        assert_status(&raw, 404, "NotFound");
        assert_eq!(
            raw.body["message"], "the server could not find the requested resource",
            "{path}"
        );
    }
    // Outside them, the handler chain's plain-text answer.
    for path in ["/apis/nope/v1/things", "/garbage"] {
        let raw = env.raw("GET", path, "", "").await;
        assert_eq!(raw.code, 404, "{path}");
        assert_eq!(raw.text.trim_end(), "404 page not found", "{path}");
        let ct = raw
            .headers
            .get("content-type")
            .and_then(|v| v.to_str().ok());
        assert!(
            ct.is_some_and(|c| c.starts_with("text/plain")),
            "{path}: {ct:?}"
        );
    }
}

async fn an_unparsable_list_parameter_is_a_bad_request(env: Env) {
    with_target(&env).await;
    for query in ["limit=abc", "labelSelector=a%20in%20(b"] {
        let raw = env
            .raw("GET", &format!("{}?{query}", cms_path(&env)), "", "")
            .await;
        assert_status(&raw, 400, "BadRequest");
    }
}

async fn an_unknown_propagation_policy_is_invalid_delete_options(env: Env) {
    with_target(&env).await;
    let before = snapshot(&env).await;
    let raw = env
        .raw(
            "DELETE",
            &format!("{}/target", cms_path(&env)),
            "application/json",
            r#"{"propagationPolicy":"Nope"}"#,
        )
        .await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        raw.body["message"],
        r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Nope": supported values: "Foreground", "Background", "Orphan", "nil""#
    );
    assert_eq!(raw.body["details"]["group"], "meta.k8s.io");
    assert_eq!(raw.body["details"]["kind"], "DeleteOptions");
    assert_eq!(
        raw.body["details"]["causes"][0]["field"],
        "propagationPolicy"
    );
    assert_eq!(
        raw.body["details"]["causes"][0]["reason"],
        "FieldValueNotSupported"
    );
    assert_eq!(snapshot(&env).await, before, "nothing was deleted");
}

async fn an_unknown_dry_run_value_is_invalid_create_options(env: Env) {
    let before = snapshot(&env).await;
    let raw = env
        .raw(
            "POST",
            &format!("{}?dryRun=Bogus", cms_path(&env)),
            "application/json",
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#,
        )
        .await;
    assert_status(&raw, 422, "Invalid");
    let message = raw.body["message"].as_str().expect("message");
    assert!(
        message
            .starts_with(r#"CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: "#),
        "{message}"
    );
    assert_eq!(snapshot(&env).await, before);
}

async fn a_patch_that_breaks_the_typed_form_is_refused_and_changes_nothing(env: Env) {
    with_target(&env).await;
    let before = snapshot(&env).await;
    let raw = env
        .raw(
            "PATCH",
            &format!("{}/target", cms_path(&env)),
            "application/merge-patch+json",
            r#"{"data":{"k":5}}"#,
        )
        .await;
    // The patched object does not decode: 422 on the field `patch`, quoting the patched object
    // and the JSON decoder's complaint.
    assert_status(&raw, 422, "Invalid");
    assert_eq!(raw.body["details"]["causes"][0]["field"], "patch");
    assert_eq!(
        raw.body["details"]["causes"][0]["reason"],
        "FieldValueInvalid"
    );
    assert!(raw.body["details"].get("name").is_none(), "{}", raw.text);
    let message = raw.body["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(" \"\" is invalid: patch: Invalid value: \"{\\\"apiVersion\\\":\\\"v1\\\",\\\"data\\\":{\\\"k\\\":5},\\\"kind\\\":\\\"ConfigMap\\\",\\\"metadata\\\":{"),
        "{message}"
    );
    assert!(
        message.ends_with(
            "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
        ),
        "{message}"
    );
    // A patch that changes the uid meets an immutable field (a PUT makes it a precondition).
    let raw = env
        .raw(
            "PATCH",
            &format!("{}/target", cms_path(&env)),
            "application/merge-patch+json",
            r#"{"metadata":{"uid":"x"}}"#,
        )
        .await;
    assert_status(&raw, 422, "Invalid");
    assert_eq!(
        raw.body["message"],
        "ConfigMap \"target\" is invalid: metadata.uid: Invalid value: \"x\": field is immutable"
    );
    assert_eq!(raw.body["details"]["causes"][0]["field"], "metadata.uid");
    assert_eq!(snapshot(&env).await, before);
}

// --- field validation -------------------------------------------------------------------------------

fn warning(raw: &super::Raw) -> String {
    raw.headers
        .get_all("warning")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(", ")
}

async fn field_validation_strict_refuses_and_warn_drops_unknown_fields(env: Env) {
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"bogus":1,"data":{"a":"b"}}"#;
    let raw = env
        .raw(
            "POST",
            &format!("{}?fieldValidation=Strict", cms_path(&env)),
            "application/json",
            body,
        )
        .await;
    assert_eq!(raw.code, 400, "{}", raw.text);
    assert_eq!(
        raw.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: unknown field \"bogus\""
    );
    let raw = env
        .raw("POST", &cms_path(&env), "application/json", body)
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert_eq!(warning(&raw), r#"299 - "unknown field \"bogus\"""#);
    let stored = env
        .raw("GET", &format!("{}/x", cms_path(&env)), "", "")
        .await;
    assert!(
        stored.body.get("bogus").is_none(),
        "unknown fields are dropped"
    );
}

async fn duplicate_fields_are_refused_under_strict_and_warned_about_otherwise(env: Env) {
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"d"},"data":{"a":"1","a":"2"}}"#;
    let raw = env
        .raw(
            "POST",
            &format!("{}?fieldValidation=Strict", cms_path(&env)),
            "application/json",
            body,
        )
        .await;
    assert_eq!(raw.code, 400, "{}", raw.text);
    assert_eq!(
        raw.body["message"],
        "ConfigMap in version \"v1\" cannot be handled as a ConfigMap: strict decoding error: duplicate field \"data.a\""
    );
    let raw = env
        .raw("POST", &cms_path(&env), "application/json", body)
        .await;
    assert_eq!(raw.code, 201, "{}", raw.text);
    assert_eq!(warning(&raw), r#"299 - "duplicate field \"data.a\"""#);
    assert_eq!(raw.body["data"]["a"], "2", "the last value wins");
}
