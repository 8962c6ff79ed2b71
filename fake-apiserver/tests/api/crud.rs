//! CRUD through `kube::Api`: get, list, create, replace, delete, delete_collection and patch on
//! namespaced and cluster-scoped kinds; server-owned metadata (uid, creationTimestamp,
//! resourceVersion, generation); the status subresource; the patch types; the Status bodies of
//! the common failures; and what a fresh cluster holds.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod, Service, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::ObjectMeta;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::common::{api_err, raw, server};

/// The characters `generateName` suffixes are drawn from (no vowels, no look-alike digits).
const GENERATE_NAME_ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";

const DEFAULT_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

fn from_json<K: DeserializeOwned>(v: Value) -> K {
    serde_json::from_value(v).expect("a valid object")
}

fn configmap(name: &str, data: &[(&str, &str)]) -> ConfigMap {
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

fn namespace(name: &str) -> Namespace {
    from_json(json!({"metadata": {"name": name}}))
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

fn job(name: &str) -> Job {
    from_json(json!({
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "work", "image": "busybox:1.36", "command": ["true"]}],
                },
            },
        },
    }))
}

fn pod(name: &str) -> Pod {
    from_json(json!({
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]},
    }))
}

fn rv_of(meta: &ObjectMeta) -> u64 {
    meta.resource_version
        .as_deref()
        .expect("a resourceVersion")
        .parse()
        .expect("a numeric resourceVersion")
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

const MODIFIED: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

// ---------------------------------------------------------------------------------------------
// What a fresh cluster holds
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn default_namespaces_exist_at_start_each_with_a_default_service_account() {
    let s = server();
    let namespaces: Api<Namespace> = Api::all(s.client());
    let listed = namespaces
        .list(&ListParams::default())
        .await
        .expect("list namespaces");
    let listed = names(&listed.items);
    for ns in DEFAULT_NAMESPACES {
        assert!(listed.contains(&ns.to_string()), "{ns} in {listed:?}");
        let got = namespaces.get(ns).await.expect("get namespace");
        assert_eq!(
            got.status.and_then(|st| st.phase).as_deref(),
            Some("Active"),
            "{ns} is Active"
        );
        let sas: Api<ServiceAccount> = Api::namespaced(s.client(), ns);
        let sa = sas.get("default").await.expect("default service account");
        assert_eq!(sa.metadata.namespace.as_deref(), Some(ns));
    }
}

#[tokio::test(start_paused = true)]
async fn a_new_namespace_gets_a_default_service_account() {
    let s = server();
    let namespaces: Api<Namespace> = Api::all(s.client());
    namespaces
        .create(&PostParams::default(), &namespace("team-a"))
        .await
        .expect("create namespace");
    let sas: Api<ServiceAccount> = Api::namespaced(s.client(), "team-a");
    // The real server's service-account controller creates it shortly after: allow it a moment.
    let mut found = None;
    for _ in 0..50 {
        found = sas.get_opt("default").await.expect("get service account");
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let sa = found.expect("a default ServiceAccount in the new namespace");
    assert_eq!(sa.metadata.namespace.as_deref(), Some("team-a"));
    assert!(sa.metadata.uid.is_some());
}

#[tokio::test(start_paused = true)]
async fn the_kubernetes_service_exists_in_default() {
    let s = server();
    let services: Api<Service> = Api::namespaced(s.client(), "default");
    let svc = services
        .get("kubernetes")
        .await
        .expect("kubernetes service");
    let spec = svc.spec.expect("a spec");
    assert!(spec.cluster_ip.is_some_and(|ip| !ip.is_empty()));
    let ports = spec.ports.expect("ports");
    assert_eq!(ports.len(), 1);
    assert_eq!(ports[0].name.as_deref(), Some("https"));
    assert_eq!(ports[0].port, 443);
    assert_eq!(ports[0].protocol.as_deref(), Some("TCP"));
}

// ---------------------------------------------------------------------------------------------
// Namespaced kind: ConfigMap
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn configmap_create_get_replace_and_delete_round_trip() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let created = cms
        .create(&PostParams::default(), &configmap("x", &[("k", "v")]))
        .await
        .expect("create");
    assert_eq!(created.metadata.namespace.as_deref(), Some("default"));
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
    assert!(rv_of(&replaced.metadata) > rv_of(&created.metadata));
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

#[tokio::test(start_paused = true)]
async fn configmap_list_is_per_namespace_or_across_all_namespaces() {
    let s = server();
    let namespaces: Api<Namespace> = Api::all(s.client());
    namespaces
        .create(&PostParams::default(), &namespace("other"))
        .await
        .expect("create namespace");
    let in_default: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let in_other: Api<ConfigMap> = Api::namespaced(s.client(), "other");
    for name in ["b", "a"] {
        in_default
            .create(&PostParams::default(), &configmap(name, &[]))
            .await
            .expect("create in default");
    }
    in_other
        .create(&PostParams::default(), &configmap("c", &[]))
        .await
        .expect("create in other");

    let listed = in_default.list(&ListParams::default()).await.expect("list");
    assert_eq!(names(&listed.items), ["a", "b"]);
    let list_rv: u64 = listed
        .metadata
        .resource_version
        .as_deref()
        .expect("a list resourceVersion")
        .parse()
        .expect("numeric");
    assert_eq!(list_rv, s.resource_version());

    let all: Api<ConfigMap> = Api::all(s.client());
    let everywhere = all.list(&ListParams::default()).await.expect("list all");
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
    for want in [("default", "a"), ("default", "b"), ("other", "c")] {
        assert!(
            pairs.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} in {pairs:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn delete_collection_removes_only_the_selected_configmaps() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    for (name, tier) in [("a", "web"), ("b", "web"), ("c", "db")] {
        cms.create(
            &PostParams::default(),
            &labelled_configmap(name, &[("tier", tier)]),
        )
        .await
        .expect("create");
    }
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
    let left = cms.list(&ListParams::default()).await.expect("list");
    assert_eq!(names(&left.items), ["c"]);
}

#[tokio::test(start_paused = true)]
async fn generate_name_appends_five_characters_from_the_kubernetes_alphabet() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
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

#[tokio::test(start_paused = true)]
async fn uid_and_creation_timestamp_are_set_by_the_server() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let mut cm = configmap("first", &[]);
    cm.metadata.uid = Some("chosen-by-the-client".into());
    let first = cms
        .create(&PostParams::default(), &cm)
        .await
        .expect("create");
    let uid = first.metadata.uid.clone().expect("a uid");
    assert_ne!(uid, "chosen-by-the-client");
    assert_eq!(uid.len(), 36, "a UUID: {uid}");
    assert_eq!(
        first
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        Some("2026-01-01T00:00:00Z".into())
    );

    tokio::time::sleep(Duration::from_secs(3600)).await;
    let second = cms
        .create(&PostParams::default(), &configmap("second", &[]))
        .await
        .expect("create later");
    assert_eq!(
        second
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        Some("2026-01-01T01:00:00Z".into())
    );
    assert_ne!(second.metadata.uid, first.metadata.uid);

    // A replace cannot rewrite them.
    let mut forged = first.clone();
    forged.metadata.uid = Some("forged".into());
    forged.metadata.creation_timestamp = second.metadata.creation_timestamp.clone();
    forged.data = configmap("first", &[("k", "v")]).data;
    let replaced = cms
        .replace("first", &PostParams::default(), &forged)
        .await
        .expect("replace");
    assert_eq!(replaced.metadata.uid, first.metadata.uid);
    assert_eq!(
        replaced.metadata.creation_timestamp,
        first.metadata.creation_timestamp
    );
}

// ---------------------------------------------------------------------------------------------
// Cluster-scoped kinds: Node and Namespace
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn node_create_get_list_replace_patch_and_delete() {
    let s = server();
    let nodes: Api<Node> = Api::all(s.client());
    let created = nodes
        .create(&PostParams::default(), &node("worker-1", &[("pool", "a")]))
        .await
        .expect("create node");
    assert_eq!(created.metadata.namespace, None);
    assert!(created.metadata.uid.is_some());
    nodes
        .create(&PostParams::default(), &node("worker-2", &[("pool", "b")]))
        .await
        .expect("create second node");

    let listed = nodes.list(&ListParams::default()).await.expect("list");
    assert_eq!(names(&listed.items), ["worker-1", "worker-2"]);
    let pool_a = nodes
        .list(&ListParams::default().labels("pool=a"))
        .await
        .expect("list by label");
    assert_eq!(names(&pool_a.items), ["worker-1"]);

    let mut got = nodes.get("worker-1").await.expect("get");
    got.spec.get_or_insert_with(Default::default).unschedulable = Some(true);
    let replaced = nodes
        .replace("worker-1", &PostParams::default(), &got)
        .await
        .expect("replace");
    assert_eq!(
        replaced.spec.as_ref().and_then(|sp| sp.unschedulable),
        Some(true)
    );

    let patched = nodes
        .patch(
            "worker-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"pool": "c"}}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        patched.metadata.labels.as_ref().and_then(|l| l.get("pool")),
        Some(&"c".to_string())
    );
    assert_eq!(
        patched.spec.as_ref().and_then(|sp| sp.unschedulable),
        Some(true)
    );

    nodes
        .delete("worker-1", &DeleteParams::default())
        .await
        .expect("delete");
    assert_eq!(
        nodes.get_opt("worker-1").await.expect("get after delete"),
        None
    );
    let left = nodes.list(&ListParams::default()).await.expect("list");
    assert_eq!(names(&left.items), ["worker-2"]);
}

#[tokio::test(start_paused = true)]
async fn node_delete_collection_with_a_label_selector() {
    let s = server();
    let nodes: Api<Node> = Api::all(s.client());
    for (name, pool) in [("n1", "spot"), ("n2", "spot"), ("n3", "stable")] {
        nodes
            .create(&PostParams::default(), &node(name, &[("pool", pool)]))
            .await
            .expect("create node");
    }
    nodes
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("pool=spot"),
        )
        .await
        .expect("delete collection");
    let left = nodes.list(&ListParams::default()).await.expect("list");
    assert_eq!(names(&left.items), ["n3"]);
}

#[tokio::test(start_paused = true)]
async fn namespace_create_get_patch_and_delete() {
    let s = server();
    let namespaces: Api<Namespace> = Api::all(s.client());
    let created = namespaces
        .create(&PostParams::default(), &namespace("scratch"))
        .await
        .expect("create namespace");
    assert_eq!(created.metadata.namespace, None);
    assert_eq!(
        created.status.as_ref().and_then(|st| st.phase.as_deref()),
        Some("Active")
    );
    let patched = namespaces
        .patch(
            "scratch",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"team": "a"}}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(
        patched.metadata.labels.as_ref().and_then(|l| l.get("team")),
        Some(&"a".to_string())
    );
    let listed = namespaces
        .list(&ListParams::default().labels("team=a"))
        .await
        .expect("list by label");
    assert_eq!(names(&listed.items), ["scratch"]);

    namespaces
        .delete("scratch", &DeleteParams::default())
        .await
        .expect("delete namespace");
    // The namespace goes through Terminating and is then removed.
    let mut gone = false;
    for _ in 0..100 {
        match namespaces.get_opt("scratch").await.expect("get namespace") {
            None => {
                gone = true;
                break;
            }
            Some(ns) => {
                assert!(ns.metadata.deletion_timestamp.is_some());
                assert_eq!(
                    ns.status.as_ref().and_then(|st| st.phase.as_deref()),
                    Some("Terminating")
                );
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(gone, "the deleted namespace is eventually removed");
}

// ---------------------------------------------------------------------------------------------
// resourceVersion
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn one_global_resource_version_increases_across_kinds() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let nodes: Api<Node> = Api::all(s.client());
    let jobs: Api<Job> = Api::namespaced(s.client(), "default");
    let start = s.resource_version();

    let cm = cms
        .create(&PostParams::default(), &configmap("x", &[]))
        .await
        .expect("create configmap");
    let n = nodes
        .create(&PostParams::default(), &node("n", &[]))
        .await
        .expect("create node");
    let j = jobs
        .create(&PostParams::default(), &job("j"))
        .await
        .expect("create job");
    let cm2 = cms
        .patch(
            "x",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "v"}})),
        )
        .await
        .expect("patch configmap");
    let rvs = [
        rv_of(&cm.metadata),
        rv_of(&n.metadata),
        rv_of(&j.metadata),
        rv_of(&cm2.metadata),
    ];
    assert!(rvs[0] > start, "{start} < {rvs:?}");
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "increasing: {rvs:?}");
    assert_eq!(s.resource_version(), rvs[3]);
}

#[tokio::test(start_paused = true)]
async fn stale_update_is_rejected_with_conflict_status() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
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

#[tokio::test(start_paused = true)]
async fn stale_update_of_a_grouped_kind_names_resource_dot_group() {
    let s = server();
    let jobs: Api<Job> = Api::namespaced(s.client(), "default");
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

#[tokio::test(start_paused = true)]
async fn an_update_that_changes_nothing_keeps_the_resource_version() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let created = cms
        .create(&PostParams::default(), &configmap("x", &[("k", "v")]))
        .await
        .expect("create");
    let before = s.resource_version();

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
    assert_eq!(s.resource_version(), before, "nothing was committed");
}

#[tokio::test(start_paused = true)]
async fn update_without_a_resource_version_is_unconditional() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
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
// generation and the status subresource
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn generation_is_one_on_create_and_bumped_only_by_spec_changes() {
    let s = server();
    let deployments: Api<Deployment> = Api::namespaced(s.client(), "default");
    let created = deployments
        .create(&PostParams::default(), &deployment("web", 1))
        .await
        .expect("create deployment");
    assert_eq!(created.metadata.generation, Some(1));

    let labelled = deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {
                "labels": {"team": "a"},
                "annotations": {"note": "hello"},
            }})),
        )
        .await
        .expect("label and annotate");
    assert_eq!(labelled.metadata.generation, Some(1), "metadata changes");
    assert!(rv_of(&labelled.metadata) > rv_of(&created.metadata));

    let with_status = deployments
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 1, "observedGeneration": 1}})),
        )
        .await
        .expect("patch status");
    assert_eq!(with_status.metadata.generation, Some(1), "status changes");
    assert!(rv_of(&with_status.metadata) > rv_of(&labelled.metadata));

    let scaled = deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .expect("scale");
    assert_eq!(
        scaled.metadata.generation,
        Some(2),
        "spec change through patch"
    );

    let mut got = deployments.get("web").await.expect("get");
    got.spec.replicas = Some(5);
    let replaced = deployments
        .replace("web", &PostParams::default(), &got)
        .await
        .expect("replace");
    assert_eq!(
        replaced.metadata.generation,
        Some(3),
        "spec change through replace"
    );
}

#[tokio::test(start_paused = true)]
async fn job_generation_is_bumped_by_spec_but_not_status() {
    let s = server();
    let jobs: Api<Job> = Api::namespaced(s.client(), "default");
    let created = jobs
        .create(&PostParams::default(), &job("j"))
        .await
        .expect("create job");
    assert_eq!(created.metadata.generation, Some(1));
    let status = jobs
        .patch_status(
            "j",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"active": 1}})),
        )
        .await
        .expect("patch status");
    assert_eq!(status.status.as_ref().and_then(|st| st.active), Some(1));
    assert_eq!(status.metadata.generation, Some(1));
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
    assert_eq!(suspended.metadata.generation, Some(2));
}

#[tokio::test(start_paused = true)]
async fn writes_to_the_main_resource_ignore_status() {
    let s = server();
    let deployments: Api<Deployment> = Api::namespaced(s.client(), "default");
    deployments
        .create(&PostParams::default(), &deployment("web", 1))
        .await
        .expect("create deployment");
    deployments
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 1}})),
        )
        .await
        .expect("set status");

    let mut got = deployments.get("web").await.expect("get");
    got.status.as_mut().expect("status").replicas = Some(42);
    got.spec.replicas = Some(2);
    let replaced = deployments
        .replace("web", &PostParams::default(), &got)
        .await
        .expect("replace");
    assert_eq!(replaced.spec.replicas, Some(2));
    assert_eq!(
        replaced.status.as_ref().and_then(|st| st.replicas),
        Some(1),
        "replace ignores status"
    );

    let patched = deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"replicas": 99}})),
        )
        .await
        .expect("patch main resource with status");
    assert_eq!(
        patched.status.as_ref().and_then(|st| st.replicas),
        Some(1),
        "patch ignores status"
    );
    assert_eq!(
        deployments
            .get("web")
            .await
            .expect("get")
            .status
            .and_then(|st| st.replicas),
        Some(1)
    );
}

#[tokio::test(start_paused = true)]
async fn writes_to_status_change_only_status() {
    let s = server();
    let deployments: Api<Deployment> = Api::namespaced(s.client(), "default");
    deployments
        .create(&PostParams::default(), &deployment("web", 1))
        .await
        .expect("create deployment");

    let mut got = deployments.get("web").await.expect("get");
    got.status
        .get_or_insert_with(Default::default)
        .ready_replicas = Some(1);
    got.spec.replicas = Some(7);
    let replaced = deployments
        .replace_status("web", &PostParams::default(), &got)
        .await
        .expect("replace status");
    assert_eq!(
        replaced.status.as_ref().and_then(|st| st.ready_replicas),
        Some(1)
    );
    assert_eq!(
        replaced.spec.replicas,
        Some(1),
        "replace_status ignores spec"
    );
    assert_eq!(replaced.metadata.generation, Some(1));

    let patched = deployments
        .patch_status(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({
                "spec": {"replicas": 9},
                "status": {"availableReplicas": 1},
            })),
        )
        .await
        .expect("patch status");
    assert_eq!(
        patched.status.as_ref().and_then(|st| st.available_replicas),
        Some(1)
    );
    assert_eq!(
        patched.status.as_ref().and_then(|st| st.ready_replicas),
        Some(1)
    );
    assert_eq!(patched.spec.replicas, Some(1), "patch_status ignores spec");
    assert_eq!(patched.metadata.generation, Some(1));
}

#[tokio::test(start_paused = true)]
async fn created_pods_are_pending_and_main_writes_keep_their_status() {
    let s = server();
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    let mut p = pod("p");
    p.status = Some(from_json(json!({"phase": "Running"})));
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

#[tokio::test(start_paused = true)]
async fn created_jobs_get_the_controller_uid_selector_and_job_name_labels() {
    let s = server();
    let jobs: Api<Job> = Api::namespaced(s.client(), "default");
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
// ---------------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn json_patch_with_a_passing_test_op_is_applied() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
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

#[tokio::test(start_paused = true)]
async fn json_patch_with_a_failing_test_op_changes_nothing_and_is_invalid() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let created = cms
        .create(&PostParams::default(), &configmap("x", &[("k", "v")]))
        .await
        .expect("create");
    let before = s.resource_version();
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
    assert_eq!(s.resource_version(), before);
}

#[tokio::test(start_paused = true)]
async fn merge_patch_null_removes_a_key() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
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

#[tokio::test(start_paused = true)]
async fn strategic_merge_patch_merges_containers_by_name() {
    use k8s_openapi::api::core::v1::Pod;
    let s = server();
    let pods: Api<Pod> = Api::namespaced(s.client(), "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p"},
        "spec": {"containers": [
            {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
            {"name": "sidecar", "image": "side:1"}
        ]}
    }))
    .expect("pod");
    pods.create(&PostParams::default(), &pod)
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

#[tokio::test(start_paused = true)]
async fn strategic_merge_patch_on_a_custom_resource_is_unsupported() {
    let s = fake_apiserver::FakeApiServer::builder()
        .crds_yaml(
            "widgets.yaml",
            r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","kind":"Widget"},"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}"#,
        )
        .build()
        .expect("server");
    let (code, body) = raw(
        &s,
        "POST",
        "/apis/example.com/v1/namespaces/default/widgets",
        "application/json",
        r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"}}"#,
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let (code, body) = raw(
        &s,
        "PATCH",
        "/apis/example.com/v1/namespaces/default/widgets/w",
        "application/strategic-merge-patch+json",
        r#"{"spec":{"a":1}}"#,
    )
    .await;
    assert_eq!(code, 415);
    assert_eq!(
        body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
}

#[tokio::test(start_paused = true)]
async fn server_side_apply_creates_tracks_owners_and_reports_conflicts() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
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
    let (code, body) = raw(
        &s,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/x",
        "application/apply-patch+yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    )
    .await;
    assert_eq!(code, 422, "{body}");
}

#[tokio::test(start_paused = true)]
async fn reapplying_the_same_configuration_changes_nothing() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let apply = Patch::Apply(
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"k": "v"}}),
    );
    let first = cms
        .patch("x", &PatchParams::apply("alpha"), &apply)
        .await
        .expect("apply");
    tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    let second = cms
        .patch("x", &PatchParams::apply("alpha"), &apply)
        .await
        .expect("apply again");
    assert_eq!(
        first.metadata.resource_version,
        second.metadata.resource_version
    );
}

#[tokio::test(start_paused = true)]
async fn bad_apply_bodies_are_refused_cleanly() {
    let s = server();
    let (code, body) = raw(
        &s,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/x?fieldManager=m",
        "application/apply-patch+yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: just-a-string\n",
    )
    .await;
    assert_eq!(code, 400, "{body}");
    let (code, _) = raw(
        &s,
        "PATCH",
        "/apis/batch/v1/namespaces/default/jobs/missing/status?fieldManager=m",
        "application/apply-patch+yaml",
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: missing}\nstatus: {active: 1}\n",
    )
    .await;
    assert_eq!(code, 404, "apply on /status does not create");
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    cms.create(&PostParams::default(), &configmap("after", &[]))
        .await
        .expect("the server still answers");
}

#[tokio::test(start_paused = true)]
async fn server_side_apply_on_status_writes_only_status() {
    use k8s_openapi::api::batch::v1::Job;
    let s = server();
    let jobs: Api<Job> = Api::namespaced(s.client(), "default");
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}
    }))
    .expect("job");
    jobs.create(&PostParams::default(), &job)
        .await
        .expect("create");
    let applied = jobs
        .patch_status(
            "j",
            &PatchParams::apply("job-controller").force(),
            &Patch::Apply(json!({"apiVersion": "batch/v1", "kind": "Job", "status": {"active": 1}, "spec": {"parallelism": 9}})),
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

#[tokio::test(start_paused = true)]
async fn create_with_an_existing_name_is_already_exists() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
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

#[tokio::test(start_paused = true)]
async fn get_of_a_missing_object_is_not_found_with_details() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let err = api_err(cms.get("x").await);
    assert_eq!(err.code, 404);
    assert_eq!(err.reason, "NotFound");
    assert_eq!(err.message, "configmaps \"x\" not found");
    let details = err.details.expect("details");
    assert_eq!(details.name, "x");
    assert_eq!(details.kind, "configmaps");
    assert_eq!(details.group, "");

    let jobs: Api<Job> = Api::namespaced(s.client(), "default");
    let err = api_err(jobs.get("x").await);
    assert_eq!(err.code, 404);
    assert_eq!(err.message, "jobs.batch \"x\" not found");
    let details = err.details.expect("details");
    assert_eq!(
        (details.group.as_str(), details.kind.as_str()),
        ("batch", "jobs")
    );
}

#[tokio::test(start_paused = true)]
async fn replace_patch_and_delete_of_a_missing_object_are_not_found() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
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

#[tokio::test(start_paused = true)]
async fn create_into_a_missing_namespace_is_not_found() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "nope");
    let err = api_err(
        cms.create(&PostParams::default(), &configmap("x", &[]))
            .await,
    );
    assert_eq!(err.code, 404);
    assert_eq!(err.reason, "NotFound");
    assert_eq!(err.message, "namespaces \"nope\" not found");
    let details = err.details.expect("details");
    assert_eq!(details.name, "nope");
    assert_eq!(details.kind, "namespaces");
}

#[tokio::test(start_paused = true)]
async fn the_scale_subresource_reads_and_writes_replicas() {
    use k8s_openapi::api::apps::v1::Deployment;
    let s = server();
    let deploys: Api<Deployment> = Api::namespaced(s.client(), "default");
    let d: Deployment = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}
    }))
    .expect("deployment");
    deploys
        .create(&PostParams::default(), &d)
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

    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    cms.create(&PostParams::default(), &configmap("c", &[]))
        .await
        .expect("create");
    let (code, _) = raw(
        &s,
        "GET",
        "/api/v1/namespaces/default/configmaps/c/scale",
        "",
        "",
    )
    .await;
    assert_eq!(code, 404, "kinds without replicas have no /scale");
}
