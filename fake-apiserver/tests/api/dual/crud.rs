//! CRUD through `kube::Api` on both targets: create, get, list, replace, delete and
//! delete_collection on namespaced and cluster-scoped kinds; server-owned metadata; conflicts;
//! generation and the status subresource; each patch type, server-side apply included; and the
//! Status bodies of the common failures.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::ObjectMeta;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{Env, api_err, dual};

dual!(
    configmap_create_get_replace_and_delete_round_trip,
    configmap_list_is_per_namespace_or_across_all_namespaces,
    delete_collection_removes_only_the_selected_configmaps,
    generate_name_appends_five_characters_from_the_kubernetes_alphabet,
    uid_and_creation_timestamp_are_set_by_the_server,
    node_create_get_list_replace_patch_and_delete,
    namespace_create_get_patch_and_delete,
    stale_update_is_rejected_with_conflict_status,
    stale_update_of_a_grouped_kind_names_resource_dot_group,
    an_update_that_changes_nothing_keeps_the_resource_version,
    update_without_a_resource_version_is_unconditional,
    generation_is_one_on_create_and_bumped_only_by_spec_changes,
    only_kinds_that_track_generation_get_one,
    writes_to_the_main_resource_ignore_status,
    writes_to_status_change_only_status,
    created_pods_are_pending_and_main_writes_keep_their_status,
    created_jobs_get_the_controller_uid_selector_and_job_name_labels,
    json_patch_with_a_passing_test_op_is_applied,
    json_patch_with_a_failing_test_op_changes_nothing_and_is_invalid,
    merge_patch_null_removes_a_key,
    strategic_merge_patch_merges_containers_by_name,
    server_side_apply_creates_tracks_owners_and_reports_conflicts,
    reapplying_the_same_configuration_changes_nothing,
    bad_apply_bodies_are_refused_cleanly,
    server_side_apply_on_status_writes_only_status,
    create_with_an_existing_name_is_already_exists,
    get_of_a_missing_object_is_not_found_with_details,
    replace_patch_and_delete_of_a_missing_object_are_not_found,
    create_into_a_missing_namespace_is_not_found,
    the_scale_subresource_reads_and_writes_replicas,
);

/// The characters `generateName` suffixes are drawn from (no vowels, no look-alike digits).
const GENERATE_NAME_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

const MODIFIED: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

pub(crate) fn from_json<K: DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).expect("a valid object")
}

pub(crate) fn configmap(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..Default::default()
    }
}

fn labelled_configmap(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut cm = configmap(name, &[("k", "v")]);
    cm.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    cm
}

fn node(name: &str, labels: &[(&str, &str)]) -> Node {
    from_json(json!({
        "metadata": {
            "name": name,
            "labels": labels.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
        },
    }))
}

fn deployment(name: &str, replicas: i32) -> Deployment {
    from_json(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
            },
        },
    }))
}

/// A Job: the shared control plane runs no Job controller, so nothing but the test writes it.
fn job(name: &str) -> Job {
    from_json(json!({
        "metadata": {"name": name},
        "spec": {
            "parallelism": 1,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "work", "image": "busybox:1.36", "command": ["true"]}],
                },
            },
        },
    }))
}

/// A pod no scheduler picks up (the control plane runs kube-scheduler).
fn pod(value: Value) -> Pod {
    let mut p = value;
    p["spec"]["schedulerName"] = json!("tollgate-nobody");
    from_json(p)
}

fn names<K: kube::Resource>(items: &[K]) -> Vec<String> {
    items
        .iter()
        .map(|o| o.meta().name.clone().unwrap_or_default())
        .collect()
}

fn json_patch(ops: Value) -> Patch<()> {
    Patch::Json(serde_json::from_value(ops).expect("a valid JSON patch"))
}

// ---------------------------------------------------------------------------------------------
// Namespaced kind: ConfigMap

async fn configmap_create_get_replace_and_delete_round_trip(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    let created = cms
        .create(&PostParams::default(), &configmap("x", &[("k", "v")]))
        .await
        .expect("create");
    assert_eq!(created.metadata.namespace.as_deref(), Some(env.ns.as_str()));
    assert_eq!(created.data, configmap("x", &[("k", "v")]).data);

    let got = cms.get("x").await.expect("get");
    assert_eq!(got, created);

    let mut changed = got.clone();
    changed.data = configmap("x", &[("k", "w"), ("other", "1")]).data;
    let replaced = cms
        .replace("x", &PostParams::default(), &changed)
        .await
        .expect("replace");
    assert_eq!(replaced.data, changed.data);
    assert_eq!(replaced.metadata.uid, created.metadata.uid);
    assert_ne!(
        replaced.metadata.resource_version,
        created.metadata.resource_version
    );
    assert_eq!(cms.get("x").await.expect("get after replace"), replaced);

    let deleted = cms
        .delete("x", &DeleteParams::default())
        .await
        .expect("delete");
    let status = deleted
        .right()
        .expect("a ConfigMap delete answers with a Status");
    let details = status.details.expect("details");
    assert_eq!(details.name, "x");
    assert_eq!(details.kind, "configmaps");
    assert_eq!(
        details.uid,
        created.metadata.uid.clone().unwrap_or_default()
    );
    assert_eq!(cms.get_opt("x").await.expect("get after delete"), None);
}

async fn configmap_list_is_per_namespace_or_across_all_namespaces(env: Env) {
    let other = env.name("other");
    env.create_namespace(&other).await;
    let in_mine: Api<ConfigMap> = env.api();
    let in_other: Api<ConfigMap> = env.api_in(&other);
    for name in ["b", "a"] {
        in_mine
            .create(
                &PostParams::default(),
                &labelled_configmap(name, &[("test", &env.ns)]),
            )
            .await
            .expect("create in mine");
    }
    in_other
        .create(
            &PostParams::default(),
            &labelled_configmap("c", &[("test", &env.ns)]),
        )
        .await
        .expect("create in other");

    let listed = in_mine.list(&ListParams::default()).await.expect("list");
    // The real server adds the kube-root-ca.crt ConfigMap to every namespace.
    let mine: Vec<String> = names(&listed.items)
        .into_iter()
        .filter(|n| n != "kube-root-ca.crt")
        .collect();
    assert_eq!(mine, ["a", "b"]);
    assert!(listed.metadata.resource_version.is_some());

    let all: Api<ConfigMap> = env.all();
    let everywhere = all
        .list(&ListParams::default().labels(&format!("test={}", env.ns)))
        .await
        .expect("list all");
    let pairs: Vec<(String, String)> = everywhere
        .items
        .iter()
        .map(|cm| {
            (
                cm.metadata.namespace.clone().unwrap_or_default(),
                cm.metadata.name.clone().unwrap_or_default(),
            )
        })
        .collect();
    // In etcd key order, `<namespace>/<name>`: `x-other/` sorts before `x/`.
    let want: Vec<(String, String)> = [(&other, "c"), (&env.ns, "a"), (&env.ns, "b")]
        .into_iter()
        .map(|(ns, n)| (ns.clone(), n.to_string()))
        .collect();
    assert_eq!(pairs, want, "in key order");
}

async fn delete_collection_removes_only_the_selected_configmaps(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    for (name, tier) in [("a", "web"), ("b", "web"), ("c", "db")] {
        cms.create(
            &PostParams::default(),
            &labelled_configmap(name, &[("tier", tier)]),
        )
        .await
        .expect("create");
    }
    cms.create(&PostParams::default(), &configmap("unlabelled", &[]))
        .await
        .expect("create");
    let gone = cms
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("tier=web"),
        )
        .await
        .expect("delete collection");
    let list = gone
        .left()
        .expect("deletecollection answers with the deleted objects");
    let mut deleted = names(&list.items);
    deleted.sort();
    assert_eq!(deleted, ["a", "b"]);
    let left = cms
        .list(&ListParams::default().labels("tier"))
        .await
        .expect("list");
    assert_eq!(names(&left.items), ["c"]);
    assert!(cms.get_opt("unlabelled").await.expect("get").is_some());
}

async fn generate_name_appends_five_characters_from_the_kubernetes_alphabet(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    let mut seen = Vec::new();
    for _ in 0..5 {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                generate_name: Some("job-output-".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let created = cms
            .create(&PostParams::default(), &cm)
            .await
            .expect("create with generateName");
        let name = created.metadata.name.clone().expect("a generated name");
        let suffix = name
            .strip_prefix("job-output-")
            .unwrap_or_else(|| panic!("{name} starts with the prefix"));
        assert_eq!(suffix.len(), 5, "{name}");
        assert!(
            suffix.chars().all(|c| GENERATE_NAME_ALPHABET.contains(c)),
            "{name}: suffix from {GENERATE_NAME_ALPHABET}"
        );
        assert_eq!(
            created.metadata.generate_name.as_deref(),
            Some("job-output-")
        );
        cms.get(&name).await.expect("the generated name is stored");
        seen.push(name);
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 5, "distinct names: {seen:?}");
}

async fn uid_and_creation_timestamp_are_set_by_the_server(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    let mut cm = configmap("first", &[]);
    cm.metadata.uid = Some("chosen-by-the-client".into());
    let first = cms
        .create(&PostParams::default(), &cm)
        .await
        .expect("create");
    let uid = first.metadata.uid.clone().expect("a uid");
    assert_ne!(uid, "chosen-by-the-client");
    assert_eq!(uid.len(), 36, "a UUID: {uid}");
    let created_at = first
        .metadata
        .creation_timestamp
        .clone()
        .expect("a creationTimestamp");

    let second = cms
        .create(&PostParams::default(), &configmap("second", &[]))
        .await
        .expect("create another");
    assert_ne!(second.metadata.uid, first.metadata.uid);

    // A uid in a replace is a precondition.
    let mut forged = first.clone();
    forged.metadata.uid = Some("forged".into());
    let err = api_err(cms.replace("first", &PostParams::default(), &forged).await);
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    let ns = &env.ns;
    assert_eq!(
        err.message,
        format!(
            "Operation cannot be fulfilled on configmaps \"first\": StorageError: invalid object, Code: 4, Key: /registry/configmaps/{ns}/first, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: forged, UID in object meta: {uid}"
        )
    );
    // A replace cannot rewrite the creation timestamp.
    forged.metadata.uid = None;
    forged.metadata.creation_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            "2001-01-01T00:00:00Z".parse().expect("a timestamp"),
        ));
    forged.data = configmap("first", &[("k", "v")]).data;
    let replaced = cms
        .replace("first", &PostParams::default(), &forged)
        .await
        .expect("replace");
    assert_eq!(replaced.metadata.uid, first.metadata.uid);
    assert_eq!(replaced.metadata.creation_timestamp, Some(created_at));
}

// ---------------------------------------------------------------------------------------------
// Cluster-scoped kinds: Node and Namespace

async fn node_create_get_list_replace_patch_and_delete(env: Env) {
    let nodes: Api<Node> = env.all();
    let (w1, w2) = (env.name("worker-1"), env.name("worker-2"));
    let pool = |p: &str| format!("{}-{p}", env.ns);
    let created = nodes
        .create(&PostParams::default(), &node(&w1, &[("pool", &pool("a"))]))
        .await
        .expect("create node");
    env.delete_at_end(format!("/api/v1/nodes/{w1}"));
    assert_eq!(created.metadata.namespace, None);
    assert!(created.metadata.uid.is_some());
    nodes
        .create(&PostParams::default(), &node(&w2, &[("pool", &pool("b"))]))
        .await
        .expect("create second node");
    env.delete_at_end(format!("/api/v1/nodes/{w2}"));

    let mine = format!("pool in ({},{},{})", pool("a"), pool("b"), pool("c"));
    let listed = nodes
        .list(&ListParams::default().labels(&mine))
        .await
        .expect("list");
    assert_eq!(names(&listed.items), [w1.clone(), w2.clone()]);
    let pool_a = nodes
        .list(&ListParams::default().labels(&format!("pool={}", pool("a"))))
        .await
        .expect("list by label");
    assert_eq!(names(&pool_a.items), std::slice::from_ref(&w1));

    // kube-controller-manager's TTL controller annotates new Nodes, so a read-modify-write may
    // meet a newer version: retry on conflict, as client-go's RetryOnConflict does.
    let mut attempts = 0;
    let replaced = loop {
        let mut got = nodes.get(&w1).await.expect("get");
        got.spec.get_or_insert_with(Default::default).unschedulable = Some(true);
        match nodes.replace(&w1, &PostParams::default(), &got).await {
            Err(kube::Error::Api(s)) if s.code == 409 && attempts < 5 => attempts += 1,
            other => break other.expect("replace"),
        }
    };
    assert_eq!(
        replaced.spec.as_ref().and_then(|sp| sp.unschedulable),
        Some(true)
    );

    let patched = nodes
        .patch(
            &w1,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"pool": pool("c")}}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        patched.metadata.labels.as_ref().and_then(|l| l.get("pool")),
        Some(&pool("c"))
    );
    assert_eq!(
        patched.spec.as_ref().and_then(|sp| sp.unschedulable),
        Some(true)
    );

    nodes
        .delete(&w1, &DeleteParams::default())
        .await
        .expect("delete");
    assert_eq!(nodes.get_opt(&w1).await.expect("get after delete"), None);
    let left = nodes
        .list(&ListParams::default().labels(&mine))
        .await
        .expect("list");
    assert_eq!(names(&left.items), [w2]);
}

async fn namespace_create_get_patch_and_delete(env: Env) {
    let namespaces: Api<Namespace> = env.all();
    let scratch = env.name("scratch");
    let created = env.create_namespace(&scratch).await;
    assert_eq!(created.metadata.namespace, None);
    assert_eq!(
        created.status.as_ref().and_then(|st| st.phase.as_deref()),
        Some("Active")
    );
    let patched = namespaces
        .patch(
            &scratch,
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": env.ns}}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        patched.metadata.labels.as_ref().and_then(|l| l.get("team")),
        Some(&env.ns)
    );
    let listed = namespaces
        .list(&ListParams::default().labels(&format!("team={}", env.ns)))
        .await
        .expect("list by label");
    assert_eq!(names(&listed.items), std::slice::from_ref(&scratch));

    let answer = namespaces
        .delete(&scratch, &DeleteParams::default())
        .await
        .expect("delete namespace")
        .left_or_else(|s| panic!("a namespace delete answers the namespace, got {s:?}"));
    // The namespace goes through Terminating and is then removed.
    assert!(answer.metadata.deletion_timestamp.is_some());
    assert_eq!(
        answer.status.as_ref().and_then(|st| st.phase.as_deref()),
        Some("Terminating")
    );
    env.wait_gone(&namespaces, &scratch).await;
}

// ---------------------------------------------------------------------------------------------
// resourceVersion

async fn stale_update_is_rejected_with_conflict_status(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    let original = cms
        .create(&PostParams::default(), &configmap("x", &[("k", "v")]))
        .await
        .expect("create");
    let mut newer = original.clone();
    newer.data = configmap("x", &[("k", "newer")]).data;
    cms.replace("x", &PostParams::default(), &newer)
        .await
        .expect("first replace");

    let mut stale = original.clone();
    stale.data = configmap("x", &[("k", "stale")]).data;
    let err = api_err(cms.replace("x", &PostParams::default(), &stale).await);
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert_eq!(
        err.status,
        Some(kube::core::response::StatusSummary::Failure)
    );
    assert_eq!(
        err.message,
        format!("Operation cannot be fulfilled on configmaps \"x\": {MODIFIED}")
    );
    let details = err.details.expect("details");
    assert_eq!(details.name, "x");
    assert_eq!(details.kind, "configmaps");
    assert_eq!(details.group, "");

    let now = cms.get("x").await.expect("get");
    assert_eq!(now.data, newer.data, "the stale write changed nothing");
}

async fn stale_update_of_a_grouped_kind_names_resource_dot_group(env: Env) {
    let jobs: Api<Job> = env.api();
    let original = jobs
        .create(&PostParams::default(), &job("x"))
        .await
        .expect("create job");
    jobs.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"touched": "yes"}}})),
    )
    .await
    .expect("patch job");

    let err = api_err(jobs.replace("x", &PostParams::default(), &original).await);
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "Conflict");
    assert_eq!(
        err.message,
        format!("Operation cannot be fulfilled on jobs.batch \"x\": {MODIFIED}")
    );
    let details = err.details.expect("details");
    assert_eq!(details.name, "x");
    assert_eq!(details.group, "batch");
    assert_eq!(details.kind, "jobs");
}

async fn an_update_that_changes_nothing_keeps_the_resource_version(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    let created = cms
        .create(&PostParams::default(), &configmap("x", &[("k", "v")]))
        .await
        .expect("create");

    let replaced = cms
        .replace("x", &PostParams::default(), &created)
        .await
        .expect("no-op replace");
    assert_eq!(
        replaced.metadata.resource_version,
        created.metadata.resource_version
    );

    let patched = cms
        .patch(
            "x",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "v"}})),
        )
        .await
        .expect("no-op patch");
    assert_eq!(
        patched.metadata.resource_version,
        created.metadata.resource_version
    );
    assert_eq!(cms.get("x").await.expect("get"), created);
}

async fn update_without_a_resource_version_is_unconditional(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    cms.create(&PostParams::default(), &configmap("x", &[("k", "v")]))
        .await
        .expect("create");
    cms.patch(
        "x",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "w"}})),
    )
    .await
    .expect("patch");
    let blind = configmap("x", &[("k", "blind")]);
    assert_eq!(blind.metadata.resource_version, None);
    let replaced = cms
        .replace("x", &PostParams::default(), &blind)
        .await
        .expect("replace without resourceVersion");
    assert_eq!(replaced.data, blind.data);
}

// ---------------------------------------------------------------------------------------------
// generation and the status subresource (on Jobs: no controller writes them on the control
// plane, while its Deployment controller would)

async fn generation_is_one_on_create_and_bumped_only_by_spec_changes(env: Env) {
    let jobs: Api<Job> = env.api();
    let created = jobs
        .create(&PostParams::default(), &job("j"))
        .await
        .expect("create job");
    assert_eq!(created.metadata.generation, Some(1));

    let labelled = jobs
        .patch(
            "j",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {
                "labels": {"team": "a"},
                "annotations": {"note": "hello"},
            }})),
        )
        .await
        .expect("label and annotate");
    assert_eq!(labelled.metadata.generation, Some(1), "metadata changes");
    assert_ne!(
        labelled.metadata.resource_version,
        created.metadata.resource_version
    );

    let with_status = jobs
        .patch_status(
            "j",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"active": 1}})),
        )
        .await
        .expect("patch status");
    assert_eq!(
        with_status.status.as_ref().and_then(|st| st.active),
        Some(1)
    );
    assert_eq!(with_status.metadata.generation, Some(1), "status changes");
    assert_ne!(
        with_status.metadata.resource_version,
        labelled.metadata.resource_version
    );

    let suspended = jobs
        .patch(
            "j",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": true}})),
        )
        .await
        .expect("suspend");
    assert_eq!(
        suspended.spec.as_ref().and_then(|sp| sp.suspend),
        Some(true)
    );
    assert_eq!(
        suspended.metadata.generation,
        Some(2),
        "spec change through patch"
    );

    let mut got = jobs.get("j").await.expect("get");
    got.spec.as_mut().expect("spec").parallelism = Some(3);
    let replaced = jobs
        .replace("j", &PostParams::default(), &got)
        .await
        .expect("replace");
    assert_eq!(
        replaced.metadata.generation,
        Some(3),
        "spec change through replace"
    );
}

async fn writes_to_the_main_resource_ignore_status(env: Env) {
    let jobs: Api<Job> = env.api();
    jobs.create(&PostParams::default(), &job("j"))
        .await
        .expect("create job");
    jobs.patch_status(
        "j",
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"active": 1}})),
    )
    .await
    .expect("set status");

    let mut got = jobs.get("j").await.expect("get");
    got.status.as_mut().expect("status").active = Some(42);
    got.spec.as_mut().expect("spec").parallelism = Some(2);
    let replaced = jobs
        .replace("j", &PostParams::default(), &got)
        .await
        .expect("replace");
    assert_eq!(replaced.spec.as_ref().and_then(|s| s.parallelism), Some(2));
    assert_eq!(
        replaced.status.as_ref().and_then(|st| st.active),
        Some(1),
        "replace ignores status"
    );

    let patched = jobs
        .patch(
            "j",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"active": 99}})),
        )
        .await
        .expect("patch main resource with status");
    assert_eq!(
        patched.status.as_ref().and_then(|st| st.active),
        Some(1),
        "patch ignores status"
    );
    assert_eq!(
        jobs.get("j")
            .await
            .expect("get")
            .status
            .and_then(|st| st.active),
        Some(1)
    );
}

async fn writes_to_status_change_only_status(env: Env) {
    let jobs: Api<Job> = env.api();
    jobs.create(&PostParams::default(), &job("j"))
        .await
        .expect("create job");

    let mut got = jobs.get("j").await.expect("get");
    got.status.get_or_insert_with(Default::default).active = Some(1);
    got.spec.as_mut().expect("spec").parallelism = Some(7);
    let replaced = jobs
        .replace_status("j", &PostParams::default(), &got)
        .await
        .expect("replace status");
    assert_eq!(replaced.status.as_ref().and_then(|st| st.active), Some(1));
    assert_eq!(
        replaced.spec.as_ref().and_then(|s| s.parallelism),
        Some(1),
        "replace_status ignores spec"
    );
    assert_eq!(replaced.metadata.generation, Some(1));

    let patched = jobs
        .patch_status(
            "j",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "spec": {"parallelism": 9},
                "status": {"ready": 1},
            })),
        )
        .await
        .expect("patch status");
    assert_eq!(patched.status.as_ref().and_then(|st| st.ready), Some(1));
    assert_eq!(patched.status.as_ref().and_then(|st| st.active), Some(1));
    assert_eq!(
        patched.spec.as_ref().and_then(|s| s.parallelism),
        Some(1),
        "patch_status ignores spec"
    );
    assert_eq!(patched.metadata.generation, Some(1));
}

async fn created_pods_are_pending_and_main_writes_keep_their_status(env: Env) {
    env.default_service_account().await;
    let pods: Api<Pod> = env.api();
    let p = pod(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
        "status": {"phase": "Running"},
    }));
    let created = pods
        .create(&PostParams::default(), &p)
        .await
        .expect("create pod");
    assert_eq!(
        created.status.as_ref().and_then(|st| st.phase.as_deref()),
        Some("Pending")
    );
    let patched = pods
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"a": "b"}}, "status": {"phase": "Running"}}),
            ),
        )
        .await
        .expect("patch pod");
    assert_eq!(
        patched.status.as_ref().and_then(|st| st.phase.as_deref()),
        Some("Pending")
    );
    let running = pods
        .patch_status(
            "p",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"phase": "Running"}})),
        )
        .await
        .expect("patch pod status");
    assert_eq!(
        running.status.as_ref().and_then(|st| st.phase.as_deref()),
        Some("Running")
    );
}

async fn created_jobs_get_the_controller_uid_selector_and_job_name_labels(env: Env) {
    let jobs: Api<Job> = env.api();
    let created = jobs
        .create(&PostParams::default(), &job("nightly"))
        .await
        .expect("create job");
    let uid = created.metadata.uid.clone().expect("uid");
    let spec = created.spec.expect("spec");
    let match_labels = spec
        .selector
        .and_then(|sel| sel.match_labels)
        .expect("selector.matchLabels");
    assert_eq!(
        match_labels.get("batch.kubernetes.io/controller-uid"),
        Some(&uid)
    );
    let labels: BTreeMap<String, String> = spec
        .template
        .metadata
        .and_then(|m| m.labels)
        .expect("template labels");
    assert_eq!(labels.get("job-name").map(String::as_str), Some("nightly"));
    assert_eq!(
        labels
            .get("batch.kubernetes.io/job-name")
            .map(String::as_str),
        Some("nightly")
    );
    assert_eq!(labels.get("batch.kubernetes.io/controller-uid"), Some(&uid));
}

// ---------------------------------------------------------------------------------------------
// PATCH types

async fn json_patch_with_a_passing_test_op_is_applied(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    cms.create(&PostParams::default(), &configmap("x", &[("k", "v")]))
        .await
        .expect("create");
    let patched = cms
        .patch(
            "x",
            &PatchParams::default(),
            &json_patch(json!([
                {"op": "test", "path": "/data/k", "value": "v"},
                {"op": "replace", "path": "/data/k", "value": "w"},
                {"op": "add", "path": "/data/extra", "value": "1"},
            ])),
        )
        .await
        .expect("json patch");
    assert_eq!(
        patched.data,
        configmap("x", &[("k", "w"), ("extra", "1")]).data
    );
}

async fn json_patch_with_a_failing_test_op_changes_nothing_and_is_invalid(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    let created = cms
        .create(&PostParams::default(), &configmap("x", &[("k", "v")]))
        .await
        .expect("create");
    let err = api_err(
        cms.patch(
            "x",
            &PatchParams::default(),
            &json_patch(json!([
                {"op": "replace", "path": "/data/k", "value": "w"},
                {"op": "test", "path": "/data/k", "value": "not-this"},
            ])),
        )
        .await,
    );
    assert_eq!(err.code, 422);
    assert_eq!(err.reason, "Invalid");
    let now = cms.get("x").await.expect("get");
    assert_eq!(now, created, "a failed patch leaves the object as it was");
}

async fn merge_patch_null_removes_a_key(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    cms.create(
        &PostParams::default(),
        &configmap("x", &[("keep", "1"), ("drop", "2")]),
    )
    .await
    .expect("create");
    let patched = cms
        .patch(
            "x",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"drop": null, "add": "3"}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        patched.data,
        configmap("x", &[("keep", "1"), ("add", "3")]).data
    );
}

async fn strategic_merge_patch_merges_containers_by_name(env: Env) {
    env.default_service_account().await;
    let pods: Api<Pod> = env.api();
    let p = pod(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [
            {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "sidecar", "image": "side:1"}
        ]}
    }));
    pods.create(&PostParams::default(), &p)
        .await
        .expect("create");
    let patched = pods
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"containers": [{"name": "app", "image": "app:2"}]}})),
        )
        .await
        .expect("strategic merge patch");
    let containers = patched.spec.expect("spec").containers;
    let images: Vec<(String, Option<String>)> = containers
        .iter()
        .map(|c| (c.name.clone(), c.image.clone()))
        .collect();
    assert_eq!(
        images,
        vec![
            ("app".into(), Some("app:2".into())),
            ("sidecar".into(), Some("side:1".into()))
        ]
    );
    assert_eq!(
        containers[0].env.as_ref().map(Vec::len),
        Some(1),
        "fields not in the patch are kept"
    );
}

async fn server_side_apply_creates_tracks_owners_and_reports_conflicts(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    let apply = |value: &str| {
        Patch::Apply(
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": value}}),
        )
    };
    // Apply creates a missing object and records who owns what.
    let created = cms
        .patch("x", &PatchParams::apply("alpha"), &apply("a"))
        .await
        .expect("apply creates");
    let entry = &created
        .metadata
        .managed_fields
        .as_ref()
        .expect("managedFields")[0];
    assert_eq!(
        (entry.manager.as_deref(), entry.operation.as_deref()),
        (Some("alpha"), Some("Apply"))
    );
    assert_eq!(
        serde_json::to_value(&entry.fields_v1).expect("fieldsV1"),
        json!({"f:data": {"f:k": {}}})
    );
    // Another manager applying another value conflicts, naming the owner and the field.
    let err = api_err(
        cms.patch("x", &PatchParams::apply("beta"), &apply("b"))
            .await,
    );
    assert_eq!((err.code, err.reason.as_str()), (409, "Conflict"));
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"alpha\": .data.k"
    );
    let cause = &err.details.expect("details").causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.field.as_str()),
        ("FieldManagerConflict", ".data.k")
    );
    // Forcing takes the field over.
    let forced = cms
        .patch("x", &PatchParams::apply("beta").force(), &apply("b"))
        .await
        .expect("forced apply");
    assert_eq!(
        forced.data.and_then(|d| d.get("k").cloned()).as_deref(),
        Some("b")
    );
    let owners: Vec<String> = forced
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .filter_map(|m| m.manager)
        .collect();
    assert_eq!(
        owners,
        vec!["beta".to_string()],
        "alpha lost its only field"
    );
    // Apply needs a field manager.
    let raw = env
        .raw(
            "PATCH",
            &format!("/api/v1/namespaces/{}/configmaps/x", env.ns),
            "application/apply-patch+yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
        )
        .await;
    assert_eq!(raw.code, 422, "{}", raw.text);
}

async fn reapplying_the_same_configuration_changes_nothing(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    let apply = Patch::Apply(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": "v"}}),
    );
    let first = cms
        .patch("x", &PatchParams::apply("alpha"), &apply)
        .await
        .expect("apply");
    let second = cms
        .patch("x", &PatchParams::apply("alpha"), &apply)
        .await
        .expect("apply again");
    assert_eq!(
        first.metadata.resource_version,
        second.metadata.resource_version
    );
}

async fn bad_apply_bodies_are_refused_cleanly(env: Env) {
    let raw = env
        .raw(
            "PATCH",
            &format!("/api/v1/namespaces/{}/configmaps/x?fieldManager=m", env.ns),
            "application/apply-patch+yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: just-a-string\n",
        )
        .await;
    // DIFFERENCE (fake-only assertion): kube-apiserver answers 500 ("failed to create typed patch
    // object ... .metadata: expected map"); the fake refuses the body as a 400 Bad Request.
    if env.is_fake() {
        assert_eq!(raw.code, 400, "{}", raw.text);
    } else {
        assert_eq!(raw.code, 500, "{}", raw.text);
        assert!(
            raw.body["message"].as_str().is_some_and(|m| m.starts_with(
                "failed to create typed patch object (/; /v1, Kind=ConfigMap): .metadata: expected map"
            )),
            "{}",
            raw.text
        );
    }
    let raw = env
        .raw(
            "PATCH",
            &format!(
                "/apis/batch/v1/namespaces/{}/jobs/missing/status?fieldManager=m",
                env.ns
            ),
            "application/apply-patch+yaml",
            "apiVersion: batch/v1\nkind: Job\nmetadata: {name: missing}\nstatus: {active: 1}\n",
        )
        .await;
    assert_eq!(raw.code, 404, "apply on /status does not create");
    let cms: Api<ConfigMap> = env.api();
    cms.create(&PostParams::default(), &configmap("after", &[]))
        .await
        .expect("the server still answers");
}

async fn server_side_apply_on_status_writes_only_status(env: Env) {
    let jobs: Api<Job> = env.api();
    jobs.create(&PostParams::default(), &job("j"))
        .await
        .expect("create");
    let applied = jobs
        .patch_status(
            "j",
            &PatchParams::apply("job-controller").force(),
            &Patch::Apply(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "status": {"active": 1}, "spec": {"parallelism": 9}})),
        )
        .await
        .expect("status apply");
    assert_eq!(applied.status.and_then(|s| s.active), Some(1));
    assert_eq!(
        applied.spec.and_then(|s| s.parallelism),
        Some(1),
        "spec is not touched through /status"
    );
    let entry = applied
        .metadata
        .managed_fields
        .unwrap_or_default()
        .into_iter()
        .find(|m| m.manager.as_deref() == Some("job-controller"))
        .expect("the status manager is recorded");
    assert_eq!(entry.subresource.as_deref(), Some("status"));
}

// ---------------------------------------------------------------------------------------------
// 404 and 409 bodies

async fn create_with_an_existing_name_is_already_exists(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    let first = cms
        .create(&PostParams::default(), &configmap("x", &[("k", "v")]))
        .await
        .expect("create");
    let err = api_err(
        cms.create(&PostParams::default(), &configmap("x", &[("k", "other")]))
            .await,
    );
    assert_eq!(err.code, 409);
    assert_eq!(err.reason, "AlreadyExists");
    assert_eq!(err.message, "configmaps \"x\" already exists");
    let details = err.details.expect("details");
    assert_eq!(details.name, "x");
    assert_eq!(details.kind, "configmaps");
    assert_eq!(cms.get("x").await.expect("get"), first);
}

async fn get_of_a_missing_object_is_not_found_with_details(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    let err = api_err(cms.get("x").await);
    assert_eq!(err.code, 404);
    assert_eq!(err.reason, "NotFound");
    assert_eq!(err.message, "configmaps \"x\" not found");
    let details = err.details.expect("details");
    assert_eq!(details.name, "x");
    assert_eq!(details.kind, "configmaps");
    assert_eq!(details.group, "");

    let jobs: Api<Job> = env.api();
    let err = api_err(jobs.get("x").await);
    assert_eq!(err.code, 404);
    assert_eq!(err.message, "jobs.batch \"x\" not found");
    let details = err.details.expect("details");
    assert_eq!(
        (details.group.as_str(), details.kind.as_str()),
        ("batch", "jobs")
    );
}

async fn replace_patch_and_delete_of_a_missing_object_are_not_found(env: Env) {
    let cms: Api<ConfigMap> = env.api();
    let err = api_err(
        cms.replace("x", &PostParams::default(), &configmap("x", &[]))
            .await,
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "configmaps \"x\" not found")
    );
    let err = api_err(
        cms.patch(
            "x",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "v"}})),
        )
        .await,
    );
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "configmaps \"x\" not found")
    );
    let err = api_err(cms.delete("x", &DeleteParams::default()).await);
    assert_eq!(
        (err.code, err.message.as_str()),
        (404, "configmaps \"x\" not found")
    );
}

async fn create_into_a_missing_namespace_is_not_found(env: Env) {
    let missing = env.name("nope");
    let cms: Api<ConfigMap> = env.api_in(&missing);
    let err = api_err(
        cms.create(&PostParams::default(), &configmap("x", &[]))
            .await,
    );
    assert_eq!(err.code, 404);
    assert_eq!(err.reason, "NotFound");
    assert_eq!(err.message, format!("namespaces \"{missing}\" not found"));
    let details = err.details.expect("details");
    assert_eq!(details.name, missing);
    assert_eq!(details.kind, "namespaces");
}

async fn the_scale_subresource_reads_and_writes_replicas(env: Env) {
    let deploys: Api<Deployment> = env.api();
    deploys
        .create(&PostParams::default(), &deployment("web", 2))
        .await
        .expect("create");
    let scale = deploys.get_scale("web").await.expect("get scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(2));
    assert_eq!(
        scale.status.and_then(|s| s.selector).as_deref(),
        Some("app=web")
    );

    let patched = deploys
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .expect("patch scale");
    assert_eq!(patched.spec.and_then(|s| s.replicas), Some(5));
    let after = deploys.get("web").await.expect("get");
    assert_eq!(after.spec.replicas, Some(5));
    assert_eq!(
        after.metadata.generation,
        Some(2),
        "a replica change is a spec change"
    );

    let cms: Api<ConfigMap> = env.api();
    cms.create(&PostParams::default(), &configmap("c", &[]))
        .await
        .expect("create");
    let raw = env
        .raw(
            "GET",
            &format!("/api/v1/namespaces/{}/configmaps/c/scale", env.ns),
            "",
            "",
        )
        .await;
    assert_eq!(raw.code, 404, "kinds without replicas have no /scale");
}

async fn only_kinds_that_track_generation_get_one(env: Env) {
    let ns = env.ns.clone();
    let cms = format!("/api/v1/namespaces/{ns}/configmaps");
    let post = |path: String, body: &'static str| {
        let env = env.clone();
        async move {
            let raw = env.raw("POST", &path, "application/json", body).await;
            assert_eq!(raw.code, 201, "{}", raw.text);
            raw.body["metadata"]["generation"].clone()
        }
    };
    let none = serde_json::Value::Null;
    assert_eq!(
        post(cms.clone(), r#"{"metadata":{"name":"c"},"data":{"a":"b"}}"#).await,
        none
    );
    assert_eq!(
        post(
            format!("/api/v1/namespaces/{ns}/secrets"),
            r#"{"metadata":{"name":"s"}}"#
        )
        .await,
        none
    );
    assert_eq!(
        post(
            format!("/api/v1/namespaces/{ns}/services"),
            r#"{"metadata":{"name":"svc"},"spec":{"ports":[{"port":80}]}}"#
        )
        .await,
        none
    );
    assert_eq!(
        post(
            format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"),
            r#"{"metadata":{"name":"l"}}"#
        )
        .await,
        none
    );
    assert_eq!(
        post(format!("/apis/apps/v1/namespaces/{ns}/deployments"), r#"{"metadata":{"name":"d"},"spec":{"replicas":0,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}"#).await,
        serde_json::json!(1)
    );
    assert_eq!(
        post(
            format!("/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"),
            r#"{"metadata":{"name":"p"},"spec":{"minAvailable":1}}"#
        )
        .await,
        serde_json::json!(1)
    );
    assert_eq!(
        post(
            format!("/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies"),
            r#"{"metadata":{"name":"np"},"spec":{"podSelector":{}}}"#
        )
        .await,
        serde_json::json!(1)
    );
    // A kind without generation keeps what the client sent, and an update never changes it.
    assert_eq!(
        post(cms.clone(), r#"{"metadata":{"name":"g","generation":5}}"#).await,
        serde_json::json!(5)
    );
    let raw = env
        .raw(
            "PUT",
            &format!("{cms}/g"),
            "application/json",
            r#"{"metadata":{"name":"g","generation":9},"data":{"a":"b"}}"#,
        )
        .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_eq!(raw.body["metadata"]["generation"], 5);
    let raw = env
        .raw(
            "PATCH",
            &format!("{cms}/c"),
            "application/merge-patch+json",
            r#"{"data":{"a":"changed"}}"#,
        )
        .await;
    assert_eq!(raw.code, 200, "{}", raw.text);
    assert_eq!(
        raw.body["metadata"]["generation"], none,
        "data changes add none"
    );
}
