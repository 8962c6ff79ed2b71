//! Watches (initial state, resuming, bookmarks, selectors, streaming lists), paginated lists, and
//! label and field selectors on both targets.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{Env, api_err, dual};

dual!(
    watch_from_resource_version_zero_starts_with_existing_objects_as_added,
    watch_reports_modifications_and_deletions_after_the_initial_state,
    watch_without_resource_version_starts_with_existing_objects_as_added,
    watch_from_a_resource_version_replays_only_later_changes,
    watch_from_the_current_resource_version_sends_no_initial_state,
    a_watch_with_bookmarks_gets_one_before_it_times_out,
    namespaced_watch_sees_only_its_namespace_and_cluster_wide_watch_sees_all,
    watch_with_label_selector_skips_objects_that_do_not_match,
    object_that_stops_matching_a_label_selector_arrives_as_deleted_with_its_last_matching_state,
    object_that_starts_matching_a_label_selector_arrives_as_added,
    watch_with_name_field_selector_sees_only_that_object,
    pod_watch_on_status_phase_sees_pods_entering_and_leaving_the_phase,
    watch_with_unsupported_field_selector_is_rejected_with_400,
    streaming_list_sends_current_objects_then_an_initial_events_end_bookmark,
    list_pages_come_in_name_order_and_the_last_page_has_no_continue_token,
    list_with_limit_equal_to_the_count_has_no_continue_token,
    chunked_list_without_selectors_reports_remaining_item_count,
    continued_pages_show_the_list_as_of_the_first_page,
    garbage_continue_token_is_rejected_with_400,
    label_selector_operators_select_the_right_objects,
    malformed_label_selector_is_rejected_with_400,
    configmap_field_selectors_on_name_and_namespace,
    pod_field_selectors_on_node_name_and_phase,
    unsupported_field_selectors_are_rejected_with_400,
);

type Events<K> = BoxStream<'static, kube::Result<WatchEvent<K>>>;

/// What the real server puts in every namespace.
const ROOT_CA: &str = "kube-root-ca.crt";

pub(crate) fn configmap(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: (!labels.is_empty()).then_some(labels),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), "v0".to_string())])),
        ..Default::default()
    }
}

pub(crate) async fn create_cm(
    api: &Api<ConfigMap>,
    name: &str,
    labels: &[(&str, &str)],
) -> ConfigMap {
    api.create(&PostParams::default(), &configmap(name, labels))
        .await
        .expect("create configmap")
}

/// Change a ConfigMap's data (one write, one new resourceVersion).
pub(crate) async fn set_data(api: &Api<ConfigMap>, name: &str, value: &str) -> ConfigMap {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": value}})),
    )
    .await
    .expect("patch configmap data")
}

async fn set_labels(api: &Api<ConfigMap>, name: &str, labels: Value) -> ConfigMap {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": labels}})),
    )
    .await
    .expect("patch configmap labels")
}

/// A pod no scheduler picks up (the control plane runs kube-scheduler).
fn pod(name: &str, node: Option<&str>) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "nodeName": node,
            "schedulerName": "tollgate-nobody",
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }))
    .expect("pod")
}

async fn set_phase(pods: &Api<Pod>, name: &str, phase: &str) -> Pod {
    pods.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": phase}})),
    )
    .await
    .expect("patch pod status")
}

fn names<K: ResourceExt>(items: &[K]) -> Vec<String> {
    items
        .iter()
        .map(ResourceExt::name_any)
        .filter(|n| n != ROOT_CA)
        .collect()
}

fn ns_names<K: ResourceExt>(items: &[K]) -> Vec<String> {
    items
        .iter()
        .filter(|o| o.name_any() != ROOT_CA)
        .map(|o| format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any()))
        .collect()
}

async fn watch<K>(api: &Api<K>, wp: &WatchParams, rv: &str) -> Events<K>
where
    K: Clone + DeserializeOwned + Debug + Send + 'static,
{
    api.watch(wp, rv).await.expect("watch starts").boxed()
}

/// The next event that is neither a bookmark nor about the real server's `kube-root-ca.crt`,
/// within ten seconds.
async fn next_event<K: Resource>(events: &mut Events<K>) -> WatchEvent<K> {
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("an event arrives within 10 seconds")
            .expect("the watch is still open")
            .expect("the event decodes");
        // kube-rs asks for bookmarks; the real server sends them whenever its watch cache likes.
        let bookmark = matches!(ev, WatchEvent::Bookmark(_));
        if !bookmark && summary(&ev).1 != ROOT_CA {
            return ev;
        }
    }
}

/// The type and name of an event (the resourceVersion for bookmarks, the message for errors).
fn summary<K: Resource>(ev: &WatchEvent<K>) -> (&'static str, String) {
    match ev {
        WatchEvent::Added(o) => ("ADDED", o.meta().name.clone().unwrap_or_default()),
        WatchEvent::Modified(o) => ("MODIFIED", o.meta().name.clone().unwrap_or_default()),
        WatchEvent::Deleted(o) => ("DELETED", o.meta().name.clone().unwrap_or_default()),
        WatchEvent::Bookmark(b) => ("BOOKMARK", b.metadata.resource_version.clone()),
        WatchEvent::Error(s) => ("ERROR", s.message.clone()),
    }
}

async fn next_summary<K: Resource>(events: &mut Events<K>) -> (&'static str, String) {
    summary(&next_event(events).await)
}

/// Assert that nothing (but bookmarks) arrives and the stream stays open for a second. A write
/// made before this that the watch should not see would have arrived by then.
async fn assert_quiet<K: Resource>(events: &mut Events<K>) {
    let quiet = async {
        loop {
            match events.next().await {
                Some(Ok(WatchEvent::Bookmark(_))) => {}
                Some(Ok(ev)) if summary(&ev).1 == ROOT_CA => {}
                Some(Ok(ev)) => panic!("expected no event, got {:?}", summary(&ev)),
                Some(Err(e)) => panic!("expected no event, got error {e}"),
                None => panic!("expected no event, but the watch ended"),
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), quiet).await;
}

fn ev(kind: &'static str, name: &str) -> (&'static str, String) {
    (kind, name.to_string())
}

/// A finite raw watch (give it `timeoutSeconds`): the status code and the events, without the
/// real server's `kube-root-ca.crt`.
async fn raw_watch(env: &Env, path: &str) -> (u16, Vec<Value>) {
    let raw = tokio::time::timeout(Duration::from_secs(30), env.raw("GET", path, "", ""))
        .await
        .expect("the watch ends within 30 seconds");
    let events = raw
        .text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str::<Value>(line).expect("each line is a JSON event"))
        .filter(|e| e["object"]["metadata"]["name"] != ROOT_CA)
        .collect();
    (raw.code, events)
}

fn raw_summary(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or("")
                    .to_string(),
            )
        })
        .collect()
}

fn sorted<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort();
    v
}

// ---------------------------------------------------------------------------------------------
// watch: initial state, changes, resuming

async fn watch_from_resource_version_zero_starts_with_existing_objects_as_added(env: Env) {
    let cms = env.api::<ConfigMap>();
    create_cm(&cms, "b", &[]).await;
    create_cm(&cms, "a", &[]).await;

    let mut events = watch(&cms, &WatchParams::default(), "0").await;
    let first = vec![
        next_summary(&mut events).await,
        next_summary(&mut events).await,
    ];
    assert_eq!(sorted(first), vec![ev("ADDED", "a"), ev("ADDED", "b")]);
    assert_quiet(&mut events).await;
}

async fn watch_reports_modifications_and_deletions_after_the_initial_state(env: Env) {
    let cms = env.api::<ConfigMap>();
    create_cm(&cms, "a", &[]).await;
    create_cm(&cms, "b", &[]).await;
    let mut events = watch(&cms, &WatchParams::default(), "0").await;
    next_event(&mut events).await;
    next_event(&mut events).await;

    let modified = set_data(&cms, "a", "v1").await;
    match next_event(&mut events).await {
        WatchEvent::Modified(cm) => {
            assert_eq!(cm.name_any(), "a");
            assert_eq!(
                cm.data
                    .as_ref()
                    .and_then(|d| d.get("k"))
                    .map(String::as_str),
                Some("v1")
            );
            assert_eq!(
                cm.metadata.resource_version,
                modified.metadata.resource_version
            );
        }
        other => panic!("expected MODIFIED a, got {:?}", summary(&other)),
    }

    cms.delete("b", &DeleteParams::default())
        .await
        .expect("delete b");
    match next_event(&mut events).await {
        WatchEvent::Deleted(cm) => {
            assert_eq!(cm.name_any(), "b");
            assert_ne!(
                cm.metadata.resource_version, modified.metadata.resource_version,
                "a DELETED event carries the deletion's resourceVersion"
            );
        }
        other => panic!("expected DELETED b, got {:?}", summary(&other)),
    }

    let added = create_cm(&cms, "c", &[]).await;
    match next_event(&mut events).await {
        WatchEvent::Added(cm) => {
            assert_eq!(cm.name_any(), "c");
            assert_eq!(cm.metadata.uid, added.metadata.uid);
        }
        other => panic!("expected ADDED c, got {:?}", summary(&other)),
    }
}

async fn watch_without_resource_version_starts_with_existing_objects_as_added(env: Env) {
    let cms = env.api::<ConfigMap>();
    create_cm(&cms, "a", &[]).await;
    create_cm(&cms, "b", &[]).await;

    let (code, events) = raw_watch(
        &env,
        &format!(
            "/api/v1/namespaces/{}/configmaps?watch=true&timeoutSeconds=1",
            env.ns
        ),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        sorted(raw_summary(&events)),
        vec![
            ("ADDED".to_string(), "a".to_string()),
            ("ADDED".to_string(), "b".to_string())
        ]
    );
    for e in &events {
        assert_eq!(e["object"]["kind"], "ConfigMap", "event object: {e}");
        assert_eq!(e["object"]["apiVersion"], "v1", "event object: {e}");
    }
}

async fn watch_from_a_resource_version_replays_only_later_changes(env: Env) {
    let cms = env.api::<ConfigMap>();
    let a = create_cm(&cms, "a", &[]).await;
    create_cm(&cms, "b", &[]).await;
    set_data(&cms, "a", "v1").await;
    cms.delete("b", &DeleteParams::default())
        .await
        .expect("delete b");

    let rv = a.metadata.resource_version.clone().expect("rv");
    let mut events = watch(&cms, &WatchParams::default(), &rv).await;
    assert_eq!(next_summary(&mut events).await, ev("ADDED", "b"));
    assert_eq!(next_summary(&mut events).await, ev("MODIFIED", "a"));
    assert_eq!(next_summary(&mut events).await, ev("DELETED", "b"));
    assert_quiet(&mut events).await;

    create_cm(&cms, "c", &[]).await;
    assert_eq!(next_summary(&mut events).await, ev("ADDED", "c"));
}

async fn watch_from_the_current_resource_version_sends_no_initial_state(env: Env) {
    let cms = env.api::<ConfigMap>();
    create_cm(&cms, "a", &[]).await;
    let list = cms.list(&ListParams::default()).await.expect("list");
    let rv = list
        .metadata
        .resource_version
        .clone()
        .expect("list resourceVersion");

    let mut events = watch(&cms, &WatchParams::default(), &rv).await;
    assert_quiet(&mut events).await;
    set_data(&cms, "a", "v1").await;
    assert_eq!(next_summary(&mut events).await, ev("MODIFIED", "a"));
}

async fn a_watch_with_bookmarks_gets_one_before_it_times_out(env: Env) {
    let cms = env.api::<ConfigMap>();
    create_cm(&cms, "a", &[]).await;

    // kube-rs sends a query with an empty leading pair.
    let (code, events) = raw_watch(
        &env,
        &format!(
            "/api/v1/namespaces/{}/configmaps?&watch=true&timeoutSeconds=5&allowWatchBookmarks=true&resourceVersion=0",
            env.ns
        ),
    )
    .await;
    assert_eq!(code, 200);
    // The fake sends one bookmark two seconds before the timeout; the real watch cache may send
    // more, at any time.
    let summary = raw_summary(&events);
    let added: Vec<_> = summary.iter().filter(|(t, _)| t != "BOOKMARK").collect();
    assert_eq!(added, [&("ADDED".to_string(), "a".to_string())]);
    let bookmarks: Vec<&Value> = events.iter().filter(|e| e["type"] == "BOOKMARK").collect();
    assert!(!bookmarks.is_empty(), "{summary:?}");
    for e in bookmarks {
        assert_eq!(e["object"]["kind"], "ConfigMap");
        assert!(
            e["object"]["metadata"]["resourceVersion"].is_string(),
            "{e}"
        );
    }
}

async fn namespaced_watch_sees_only_its_namespace_and_cluster_wide_watch_sees_all(env: Env) {
    let other = env.name("other");
    env.create_namespace(&other).await;
    let mine = env.api::<ConfigMap>();
    let theirs = env.api_in::<ConfigMap>(&other);
    let all = env.all::<ConfigMap>();
    let label = [("test", env.ns.as_str())];
    let wp = WatchParams::default().labels(&format!("test={}", env.ns));

    let mut in_other = watch(&theirs, &WatchParams::default(), "0").await;
    let mut everywhere = watch(&all, &wp, "0").await;
    create_cm(&mine, "in-mine", &label).await;
    create_cm(&theirs, "in-other", &label).await;

    assert_eq!(next_summary(&mut in_other).await, ev("ADDED", "in-other"));
    assert_quiet(&mut in_other).await;
    assert_eq!(next_summary(&mut everywhere).await, ev("ADDED", "in-mine"));
    assert_eq!(next_summary(&mut everywhere).await, ev("ADDED", "in-other"));
}

// ---------------------------------------------------------------------------------------------
// watch: selectors

async fn watch_with_label_selector_skips_objects_that_do_not_match(env: Env) {
    let cms = env.api::<ConfigMap>();
    create_cm(&cms, "web-1", &[("app", "web")]).await;
    create_cm(&cms, "db-1", &[("app", "db")]).await;

    let mut events = watch(&cms, &WatchParams::default().labels("app=web"), "0").await;
    assert_eq!(next_summary(&mut events).await, ev("ADDED", "web-1"));
    create_cm(&cms, "db-2", &[("app", "db")]).await;
    set_data(&cms, "db-1", "v1").await;
    cms.delete("db-2", &DeleteParams::default())
        .await
        .expect("delete db-2");
    assert_quiet(&mut events).await;

    set_data(&cms, "web-1", "v1").await;
    assert_eq!(next_summary(&mut events).await, ev("MODIFIED", "web-1"));
    create_cm(&cms, "web-2", &[("app", "web")]).await;
    assert_eq!(next_summary(&mut events).await, ev("ADDED", "web-2"));
}

async fn object_that_stops_matching_a_label_selector_arrives_as_deleted_with_its_last_matching_state(
    env: Env,
) {
    let cms = env.api::<ConfigMap>();
    create_cm(&cms, "web-1", &[("app", "web")]).await;
    let mut events = watch(&cms, &WatchParams::default().labels("app=web"), "0").await;
    assert_eq!(next_summary(&mut events).await, ev("ADDED", "web-1"));

    let relabelled = set_labels(&cms, "web-1", json!({"app": "api"})).await;
    match next_event(&mut events).await {
        WatchEvent::Deleted(cm) => {
            assert_eq!(cm.name_any(), "web-1");
            assert_eq!(
                cm.labels().get("app").map(String::as_str),
                Some("web"),
                "the DELETED object is the last state that matched the selector"
            );
            assert_eq!(
                cm.metadata.resource_version,
                relabelled.metadata.resource_version
            );
        }
        other => panic!("expected DELETED web-1, got {:?}", summary(&other)),
    }
    // It no longer matches: later changes are not sent.
    set_data(&cms, "web-1", "v2").await;
    assert_quiet(&mut events).await;
}

async fn object_that_starts_matching_a_label_selector_arrives_as_added(env: Env) {
    let cms = env.api::<ConfigMap>();
    create_cm(&cms, "db-1", &[("app", "db")]).await;
    let mut events = watch(&cms, &WatchParams::default().labels("app=web"), "0").await;
    assert_quiet(&mut events).await;

    let relabelled = set_labels(&cms, "db-1", json!({"app": "web"})).await;
    match next_event(&mut events).await {
        WatchEvent::Added(cm) => {
            assert_eq!(cm.name_any(), "db-1");
            assert_eq!(cm.labels().get("app").map(String::as_str), Some("web"));
            assert_eq!(
                cm.metadata.resource_version,
                relabelled.metadata.resource_version
            );
        }
        other => panic!("expected ADDED db-1, got {:?}", summary(&other)),
    }
    set_data(&cms, "db-1", "v1").await;
    assert_eq!(next_summary(&mut events).await, ev("MODIFIED", "db-1"));
}

async fn watch_with_name_field_selector_sees_only_that_object(env: Env) {
    let cms = env.api::<ConfigMap>();
    create_cm(&cms, "a", &[]).await;
    create_cm(&cms, "b", &[]).await;

    let mut events = watch(&cms, &WatchParams::default().fields("metadata.name=a"), "0").await;
    assert_eq!(next_summary(&mut events).await, ev("ADDED", "a"));
    set_data(&cms, "b", "v1").await;
    assert_quiet(&mut events).await;
    set_data(&cms, "a", "v1").await;
    assert_eq!(next_summary(&mut events).await, ev("MODIFIED", "a"));
    cms.delete("a", &DeleteParams::default())
        .await
        .expect("delete a");
    assert_eq!(next_summary(&mut events).await, ev("DELETED", "a"));
}

async fn pod_watch_on_status_phase_sees_pods_entering_and_leaving_the_phase(env: Env) {
    env.default_service_account().await;
    let pods = env.api::<Pod>();
    pods.create(&PostParams::default(), &pod("p", Some("node-1")))
        .await
        .expect("create pod");

    let mut events = watch(
        &pods,
        &WatchParams::default().fields("status.phase=Running"),
        "0",
    )
    .await;
    assert_quiet(&mut events).await;

    set_phase(&pods, "p", "Running").await;
    assert_eq!(next_summary(&mut events).await, ev("ADDED", "p"));
    set_phase(&pods, "p", "Succeeded").await;
    assert_eq!(next_summary(&mut events).await, ev("DELETED", "p"));
}

async fn watch_with_unsupported_field_selector_is_rejected_with_400(env: Env) {
    let cms = env.api::<ConfigMap>();
    let status = api_err(
        cms.watch(&WatchParams::default().fields("spec.foo=bar"), "0")
            .await
            .map(|_| ()),
    );
    assert_eq!(status.code, 400);
    assert_eq!(status.reason, "BadRequest");
    assert_eq!(
        status.message,
        "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
}

// ---------------------------------------------------------------------------------------------
// watch: streaming lists

async fn streaming_list_sends_current_objects_then_an_initial_events_end_bookmark(env: Env) {
    let cms = env.api::<ConfigMap>();
    create_cm(&cms, "a", &[]).await;
    create_cm(&cms, "b", &[]).await;

    let mut events = watch(&cms, &WatchParams::default().initial_events(), "").await;
    let mut initial = Vec::new();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .expect("an event within 10 seconds")
            .expect("the watch is open")
            .expect("the event decodes");
        match ev {
            WatchEvent::Bookmark(bm)
                if bm.metadata.annotations.get("k8s.io/initial-events-end")
                    == Some(&"true".to_string()) =>
            {
                assert_eq!(bm.types.kind, "ConfigMap");
                break;
            }
            WatchEvent::Bookmark(_) => {}
            other if summary(&other).1 == ROOT_CA => {}
            other => initial.push(summary(&other)),
        }
    }
    assert_eq!(sorted(initial), vec![ev("ADDED", "a"), ev("ADDED", "b")]);
    create_cm(&cms, "c", &[]).await;
    assert_eq!(next_summary(&mut events).await, ev("ADDED", "c"));
}

// ---------------------------------------------------------------------------------------------
// lists: pagination (the real server lists `kube-root-ca.crt` too: pages select a label)

const PAGED: &str = "paged=yes";

async fn five_configmaps(api: &Api<ConfigMap>) {
    for name in ["e", "c", "a", "d", "b"] {
        create_cm(api, name, &[("paged", "yes")]).await;
    }
}

async fn list_pages_come_in_name_order_and_the_last_page_has_no_continue_token(env: Env) {
    let cms = env.api::<ConfigMap>();
    five_configmaps(&cms).await;

    let mut pages = Vec::new();
    let mut rvs = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().labels(PAGED).limit(2);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = cms.list(&lp).await.expect("list page");
        pages.push(names(&page.items));
        rvs.push(page.metadata.resource_version.clone());
        token = page.metadata.continue_.clone().filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
        assert!(pages.len() < 10, "pagination does not end: {pages:?}");
    }
    assert_eq!(
        pages,
        vec![vec!["a", "b"], vec!["c", "d"], vec!["e"]],
        "pages of two in name order, each item once"
    );
    assert!(rvs[0].is_some(), "a list has a resourceVersion");
    assert!(
        rvs.iter().all(|rv| *rv == rvs[0]),
        "continued pages keep the first page's resourceVersion: {rvs:?}"
    );
}

async fn list_with_limit_equal_to_the_count_has_no_continue_token(env: Env) {
    let cms = env.api::<ConfigMap>();
    five_configmaps(&cms).await;
    let total = cms
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .len();
    let page = cms
        .list(&ListParams::default().limit(total as u32))
        .await
        .expect("list");
    assert_eq!(names(&page.items), vec!["a", "b", "c", "d", "e"]);
    assert_eq!(page.metadata.continue_.filter(|t| !t.is_empty()), None);
    // Under a selector a full page gets a token while any key follows, matching or not: here the
    // unlabelled `f` (and the real server's kube-root-ca.crt).
    create_cm(&cms, "f", &[]).await;
    let page = cms
        .list(&ListParams::default().labels(PAGED).limit(5))
        .await
        .expect("list");
    assert_eq!(names(&page.items), vec!["a", "b", "c", "d", "e"]);
    let token = page.metadata.continue_.clone().filter(|t| !t.is_empty());
    let token = token.expect("a continue token after a full page");
    let rest = cms
        .list(
            &ListParams::default()
                .labels(PAGED)
                .limit(5)
                .continue_token(&token),
        )
        .await
        .expect("the rest");
    assert!(names(&rest.items).is_empty());
    assert_eq!(rest.metadata.continue_.filter(|t| !t.is_empty()), None);
}

async fn chunked_list_without_selectors_reports_remaining_item_count(env: Env) {
    let cms = env.api::<ConfigMap>();
    five_configmaps(&cms).await;
    // Six with the real server's kube-root-ca.crt, which sorts after the five.
    let total = cms
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .len() as i64;

    let first = cms
        .list(&ListParams::default().limit(2))
        .await
        .expect("first page");
    assert_eq!(first.metadata.remaining_item_count, Some(total - 2));
    let token = first.metadata.continue_.clone().expect("continue token");
    let second = cms
        .list(&ListParams::default().limit(2).continue_token(&token))
        .await
        .expect("second page");
    assert_eq!(second.metadata.remaining_item_count, Some(total - 4));
    let with_selector = cms
        .list(&ListParams::default().labels(PAGED).limit(2))
        .await
        .expect("page with a selector");
    assert_eq!(
        with_selector.metadata.remaining_item_count, None,
        "not counted under a selector"
    );
}

async fn continued_pages_show_the_list_as_of_the_first_page(env: Env) {
    // A continue token lists at the first page's resourceVersion: a consistent snapshot.
    let cms = env.api::<ConfigMap>();
    five_configmaps(&cms).await;
    let first = cms
        .list(&ListParams::default().labels(PAGED).limit(2))
        .await
        .expect("first page");
    let token = first.metadata.continue_.clone().expect("continue token");

    set_data(&cms, "c", "changed").await;
    cms.delete("d", &DeleteParams::default())
        .await
        .expect("delete d");
    create_cm(&cms, "f", &[("paged", "yes")]).await;

    let rest = cms
        .list(
            &ListParams::default()
                .labels(PAGED)
                .limit(10)
                .continue_token(&token),
        )
        .await
        .expect("rest of the list");
    assert_eq!(
        names(&rest.items),
        vec!["c", "d", "e"],
        "objects deleted after the first page still appear, new ones do not"
    );
    assert_eq!(
        rest.items[0]
            .data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(String::as_str),
        Some("v0"),
        "objects appear as they were at the first page's resourceVersion"
    );
    assert_eq!(
        rest.metadata.resource_version,
        first.metadata.resource_version
    );
}

async fn garbage_continue_token_is_rejected_with_400(env: Env) {
    let cms = env.api::<ConfigMap>();
    five_configmaps(&cms).await;
    let status = api_err(
        cms.list(
            &ListParams::default()
                .limit(2)
                .continue_token("this-is-not-a-continue-token!"),
        )
        .await,
    );
    assert_eq!(status.code, 400);
    assert_eq!(status.reason, "BadRequest");
}

// ---------------------------------------------------------------------------------------------
// lists: selectors

async fn label_selector_operators_select_the_right_objects(env: Env) {
    let cms = env.api::<ConfigMap>();
    create_cm(&cms, "a", &[("env", "prod"), ("tier", "web")]).await;
    create_cm(&cms, "b", &[("env", "dev"), ("tier", "db")]).await;
    create_cm(&cms, "c", &[("env", "prod")]).await;
    create_cm(&cms, "d", &[]).await;
    let cases: &[(&str, &[&str])] = &[
        ("env=prod", &["a", "c"]),
        ("env==prod", &["a", "c"]),
        ("env!=prod", &["b", "d"]),
        ("env in (prod,dev)", &["a", "b", "c"]),
        ("tier in (db)", &["b"]),
        ("env notin (prod)", &["b", "d"]),
        ("tier", &["a", "b"]),
        ("!tier", &["c", "d"]),
        ("env=prod,tier", &["a"]),
        ("env=prod,!tier", &["c"]),
        ("env in (prod,dev),tier notin (web)", &["b", "c"]),
        ("env=staging", &[]),
    ];
    for (selector, expected) in cases {
        let list = cms
            .list(&ListParams::default().labels(selector))
            .await
            .expect("list with label selector");
        assert_eq!(names(&list.items), *expected, "selector {selector:?}");
    }
}

async fn malformed_label_selector_is_rejected_with_400(env: Env) {
    let cms = env.api::<ConfigMap>();
    for selector in [
        "env in (prod",
        "=prod",
        "env notin prod",
        "env=pr@d",
        "bad key=x",
    ] {
        let status = api_err(cms.list(&ListParams::default().labels(selector)).await);
        assert_eq!(status.code, 400, "selector {selector:?}: {status:?}");
        assert_eq!(status.reason, "BadRequest", "selector {selector:?}");
    }
}

async fn configmap_field_selectors_on_name_and_namespace(env: Env) {
    let other = env.name("other");
    env.create_namespace(&other).await;
    let label = [("test", env.ns.as_str())];
    let mine = env.api::<ConfigMap>();
    let theirs = env.api_in::<ConfigMap>(&other);
    create_cm(&mine, "a", &label).await;
    create_cm(&mine, "b", &label).await;
    create_cm(&theirs, "a", &label).await;
    create_cm(&theirs, "c", &label).await;

    let (m, o) = (env.ns.as_str(), other.as_str());
    let cases: Vec<(String, Vec<String>)> = vec![
        (
            "metadata.name=a".into(),
            vec![format!("{o}/a"), format!("{m}/a")],
        ),
        (
            "metadata.name==a".into(),
            vec![format!("{o}/a"), format!("{m}/a")],
        ),
        (
            "metadata.name!=a".into(),
            vec![format!("{o}/c"), format!("{m}/b")],
        ),
        (
            format!("metadata.namespace={o}"),
            vec![format!("{o}/a"), format!("{o}/c")],
        ),
        (
            format!("metadata.namespace!={o}"),
            vec![format!("{m}/a"), format!("{m}/b")],
        ),
        (
            format!("metadata.namespace={o},metadata.name=a"),
            vec![format!("{o}/a")],
        ),
    ];
    let all = env.all::<ConfigMap>();
    for (selector, expected) in cases {
        let list = all
            .list(
                &ListParams::default()
                    .labels(&format!("test={m}"))
                    .fields(&selector),
            )
            .await
            .expect("list with field selector");
        assert_eq!(ns_names(&list.items), expected, "selector {selector:?}");
    }
}

async fn pod_field_selectors_on_node_name_and_phase(env: Env) {
    env.default_service_account().await;
    let pods = env.api::<Pod>();
    for (name, node) in [
        ("p1", Some("node-1")),
        ("p2", Some("node-2")),
        ("p3", None),
        ("p4", Some("node-1")),
    ] {
        let created = pods
            .create(&PostParams::default(), &pod(name, node))
            .await
            .expect("create pod");
        assert_eq!(
            created.status.as_ref().and_then(|st| st.phase.as_deref()),
            Some("Pending"),
            "a new pod is Pending"
        );
    }
    set_phase(&pods, "p2", "Running").await;
    let mut p4 = pods.get("p4").await.expect("get p4");
    p4.status.get_or_insert_with(Default::default).phase = Some("Succeeded".into());
    pods.replace_status("p4", &PostParams::default(), &p4)
        .await
        .expect("replace p4 status");

    let cases: &[(&str, &[&str])] = &[
        ("spec.nodeName=node-1", &["p1", "p4"]),
        ("spec.nodeName!=node-1", &["p2", "p3"]),
        ("spec.nodeName=", &["p3"]),
        ("status.phase=Pending", &["p1", "p3"]),
        ("status.phase=Running", &["p2"]),
        ("status.phase!=Pending", &["p2", "p4"]),
        ("spec.nodeName=node-1,status.phase=Succeeded", &["p4"]),
    ];
    for (selector, expected) in cases {
        let list = pods
            .list(&ListParams::default().fields(selector))
            .await
            .expect("list with field selector");
        assert_eq!(names(&list.items), *expected, "selector {selector:?}");
    }
}

async fn unsupported_field_selectors_are_rejected_with_400(env: Env) {
    let cms = env.api::<ConfigMap>();
    create_cm(&cms, "a", &[]).await;
    // ConfigMaps have their own words; most kinds answer "field label not supported".
    for field in ["spec.foo", "status.phase"] {
        let selector = format!("{field}=x");
        let status = api_err(cms.list(&ListParams::default().fields(&selector)).await);
        assert_eq!(status.code, 400);
        assert_eq!(status.reason, "BadRequest");
        assert_eq!(
            status.message,
            format!(
                "\"{field}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
            )
        );
    }
    let pods = env.api::<Pod>();
    let status = api_err(
        pods.list(&ListParams::default().fields("spec.foo=bar"))
            .await,
    );
    assert_eq!(status.message, "field label not supported: spec.foo");
    let jobs = env.api::<k8s_openapi::api::batch::v1::Job>();
    let status = api_err(
        jobs.list(&ListParams::default().fields("spec.foo=bar"))
            .await,
    );
    assert_eq!(
        status.message,
        "field label \"spec.foo\" not supported for Job"
    );
}
