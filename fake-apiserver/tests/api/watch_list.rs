//! Watches (initial state, resuming, bookmarks, timeouts, selectors, expired resourceVersions,
//! streaming lists), paginated lists, and label and field selectors, as kube-rs and raw HTTP
//! clients see them.

use std::fmt::Debug;
use std::time::Duration;

use bytes::Bytes;
use fake_apiserver::FakeApiServer;
use futures::StreamExt;
use futures::stream::BoxStream;
use http_body_util::{BodyExt, Full};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, ListParams, PostParams, WatchEvent, WatchParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::time::Instant;
use tower::ServiceExt;

use crate::common::{api_err, server};

const EXPIRED_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

// ---------------------------------------------------------------------------------------------
// helpers

type Events<K> = BoxStream<'static, kube::Result<WatchEvent<K>>>;

/// A server that keeps only the last three changes for watches and continue tokens.
fn short_history_server() -> FakeApiServer {
    FakeApiServer::builder()
        .start_time("2026-01-01T00:00:00Z".parse().expect("valid timestamp"))
        .history_limit(3)
        .build()
        .expect("server starts")
}

use crate::dual::watch_list::{create_cm, set_data};

async fn create_namespace(s: &FakeApiServer, name: &str) {
    let nss: Api<Namespace> = Api::all(s.client());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    nss.create(&PostParams::default(), &ns)
        .await
        .expect("create namespace");
}

fn rv_of<K: Resource>(obj: &K) -> u64 {
    obj.meta()
        .resource_version
        .as_deref()
        .expect("object has a resourceVersion")
        .parse()
        .expect("resourceVersion is a number")
}

fn rv_num(rv: &str) -> u64 {
    rv.parse().expect("resourceVersion is a number")
}

fn names<K: ResourceExt>(items: &[K]) -> Vec<String> {
    items.iter().map(ResourceExt::name_any).collect()
}

fn ns_names<K: ResourceExt>(items: &[K]) -> Vec<String> {
    items
        .iter()
        .map(|o| format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any()))
        .collect()
}

async fn watch<K>(api: &Api<K>, wp: &WatchParams, rv: &str) -> Events<K>
where
    K: Clone + DeserializeOwned + Debug + Send + 'static,
{
    api.watch(wp, rv).await.expect("watch starts").boxed()
}

/// The next event, within five virtual seconds.
async fn next_event<K>(events: &mut Events<K>) -> WatchEvent<K> {
    tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("an event arrives within 5 seconds")
        .expect("the watch is still open")
        .expect("the event decodes")
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

/// Assert that nothing arrives (and the stream does not end) for `secs` virtual seconds.
async fn assert_quiet<K: Resource>(events: &mut Events<K>, secs: u64) {
    match tokio::time::timeout(Duration::from_secs(secs), events.next()).await {
        Err(_) => {}
        Ok(Some(Ok(ev))) => panic!("expected no event, got {:?}", summary(&ev)),
        Ok(Some(Err(e))) => panic!("expected no event, got error {e}"),
        Ok(None) => panic!("expected no event, but the watch ended"),
    }
}

fn ev(kind: &'static str, name: &str) -> (&'static str, String) {
    (kind, name.to_string())
}

/// A raw GET whose body is a finite watch stream (give it `timeoutSeconds`): the status code and
/// the newline-delimited events.
async fn raw_watch(s: &FakeApiServer, path: &str) -> (u16, Vec<Value>) {
    let req = http::Request::builder()
        .method("GET")
        .uri(path)
        .body(Full::new(Bytes::new()))
        .expect("request builds");
    let resp = s.service().oneshot(req).await.expect("service answers");
    let code = resp.status().as_u16();
    let bytes = tokio::time::timeout(Duration::from_secs(3600), resp.into_body().collect())
        .await
        .expect("the stream ends within an hour")
        .expect("body")
        .to_bytes();
    let events = bytes
        .split(|b| *b == b'\n')
        .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
        .map(|line| serde_json::from_slice(line).expect("each line is a JSON event"))
        .collect();
    (code, events)
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

// ---------------------------------------------------------------------------------------------
// watch: initial state, changes, resuming

// ---------------------------------------------------------------------------------------------
// watch: bookmarks and timeouts

#[tokio::test(start_paused = true)]
async fn watch_with_bookmarks_gets_a_bookmark_every_minute() {
    let s = server();
    crate::common::drop_root_ca(&s, "default").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let a = create_cm(&cms, "a", &[]).await;
    let started = Instant::now();
    let mut events = watch(&cms, &WatchParams::default().timeout(290), "0").await;
    assert_eq!(next_summary(&mut events).await, ev("ADDED", "a"));

    let first = tokio::time::timeout(Duration::from_secs(65), events.next())
        .await
        .expect("a bookmark within 65 seconds")
        .expect("the watch is open")
        .expect("the event decodes");
    let at = started.elapsed();
    match first {
        WatchEvent::Bookmark(b) => {
            assert!(
                at >= Duration::from_secs(55) && at <= Duration::from_secs(62),
                "first bookmark after about a minute, got {at:?}"
            );
            assert_eq!(b.types.kind, "ConfigMap");
            assert_eq!(b.types.api_version, "v1");
            assert!(rv_num(&b.metadata.resource_version) >= rv_of(&a));
            assert!(
                !b.metadata
                    .annotations
                    .contains_key("k8s.io/initial-events-end"),
                "a periodic bookmark is not the end of initial events"
            );
        }
        other => panic!("expected a BOOKMARK, got {:?}", summary(&other)),
    }

    let changed = set_data(&cms, "a", "v1").await;
    assert_eq!(next_summary(&mut events).await, ev("MODIFIED", "a"));
    let second = tokio::time::timeout(Duration::from_secs(65), events.next())
        .await
        .expect("another bookmark within 65 seconds")
        .expect("the watch is open")
        .expect("the event decodes");
    let at = started.elapsed();
    match second {
        WatchEvent::Bookmark(b) => {
            assert!(
                at >= Duration::from_secs(115) && at <= Duration::from_secs(122),
                "second bookmark about a minute after the first, got {at:?}"
            );
            assert!(
                rv_num(&b.metadata.resource_version) >= rv_of(&changed),
                "a bookmark is never behind an event already sent"
            );
        }
        other => panic!("expected a BOOKMARK, got {:?}", summary(&other)),
    }
}

#[tokio::test(start_paused = true)]
async fn watch_without_allow_watch_bookmarks_gets_no_bookmarks() {
    let s = server();
    crate::common::drop_root_ca(&s, "default").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    create_cm(&cms, "a", &[]).await;
    let mut events = watch(
        &cms,
        &WatchParams::default().disable_bookmarks().timeout(290),
        "0",
    )
    .await;
    assert_eq!(next_summary(&mut events).await, ev("ADDED", "a"));
    assert_quiet(&mut events, 200).await;
}

#[tokio::test(start_paused = true)]
async fn watch_ends_when_timeout_seconds_pass() {
    let s = server();
    crate::common::drop_root_ca(&s, "default").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    create_cm(&cms, "a", &[]).await;
    let started = Instant::now();
    let mut events = watch(
        &cms,
        &WatchParams::default().disable_bookmarks().timeout(30),
        "0",
    )
    .await;
    assert_eq!(next_summary(&mut events).await, ev("ADDED", "a"));
    assert_quiet(&mut events, 29).await;
    let end = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("the watch ends soon after 30 seconds");
    assert!(end.is_none(), "expected the end of the stream");
    let at = started.elapsed();
    assert!(
        at >= Duration::from_secs(30) && at <= Duration::from_secs(31),
        "the watch ends at its timeoutSeconds, got {at:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn raw_watch_with_timeout_seconds_ends_on_virtual_time() {
    let s = server();
    crate::common::drop_root_ca(&s, "default").await;
    let started = Instant::now();
    let (code, events) = raw_watch(
        &s,
        "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=45",
    )
    .await;
    assert_eq!(code, 200);
    assert!(events.is_empty(), "no objects, no events: {events:?}");
    let at = started.elapsed();
    assert!(
        at >= Duration::from_secs(45) && at <= Duration::from_secs(46),
        "the body ends at timeoutSeconds, got {at:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn bookmark_arrives_just_before_the_watch_times_out() {
    // The real watch cache sends a bookmark every minute and, in addition, two seconds before the
    // watch's deadline, so a client always resumes from a fresh resourceVersion.
    let s = server();
    crate::common::drop_root_ca(&s, "default").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    create_cm(&cms, "a", &[]).await;
    let started = Instant::now();
    let mut events = watch(&cms, &WatchParams::default().timeout(30), "0").await;
    assert_eq!(next_summary(&mut events).await, ev("ADDED", "a"));
    let last = tokio::time::timeout(Duration::from_secs(35), events.next())
        .await
        .expect("something happens before 35 seconds");
    match last {
        Some(Ok(WatchEvent::Bookmark(_))) => {
            let at = started.elapsed();
            assert!(
                at >= Duration::from_secs(27) && at < Duration::from_secs(30),
                "the pre-timeout bookmark comes about 2s before the deadline, got {at:?}"
            );
        }
        Some(Ok(other)) => panic!("expected a BOOKMARK, got {:?}", summary(&other)),
        Some(Err(e)) => panic!("expected a BOOKMARK, got error {e}"),
        None => panic!("expected a BOOKMARK before the watch ended at its timeout"),
    }
}

// ---------------------------------------------------------------------------------------------
// watch: selectors

// ---------------------------------------------------------------------------------------------
// watch: expired resourceVersions and streaming lists

/// A ConfigMap whose creation resourceVersion has left a history of 3 after five more writes.
async fn expired_rv(s: &FakeApiServer) -> u64 {
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let a = create_cm(&cms, "a", &[]).await;
    for i in 1..=5 {
        set_data(&cms, "a", &format!("v{i}")).await;
    }
    rv_of(&a)
}

#[tokio::test(start_paused = true)]
async fn watch_from_an_expired_resource_version_answers_200_then_an_expired_error_event() {
    let s = short_history_server();
    let old = expired_rv(&s).await;

    let (code, events) = raw_watch(
        &s,
        &format!(
            "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={old}&timeoutSeconds=30"
        ),
    )
    .await;
    assert_eq!(code, 200, "the error is reported inside the stream");
    assert_eq!(events.len(), 1, "one ERROR event: {events:?}");
    let event = &events[0];
    assert_eq!(event["type"], "ERROR");
    let status = &event["object"];
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["apiVersion"], "v1");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["code"], 410);
    assert_eq!(status["reason"], "Expired");
    let message = status["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(&format!("too old resource version: {old} (")),
        "message: {message:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn kube_watch_from_an_expired_resource_version_gets_an_error_event_then_the_end() {
    let s = short_history_server();
    let old = expired_rv(&s).await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");

    let mut events = watch(&cms, &WatchParams::default(), &old.to_string()).await;
    match next_event(&mut events).await {
        WatchEvent::Error(status) => {
            assert_eq!(status.code, 410);
            assert_eq!(status.reason, "Expired");
            assert!(
                status.message.starts_with("too old resource version:"),
                "message: {:?}",
                status.message
            );
        }
        other => panic!("expected an ERROR event, got {:?}", summary(&other)),
    }
    let end = tokio::time::timeout(Duration::from_secs(1), events.next())
        .await
        .expect("the stream ends right after the error");
    assert!(end.is_none(), "nothing follows the ERROR event");
}

/// Objects whose last change the history has dropped are kept as JSON (memory): a client still
/// reads, lists, watches, patches and deletes them as before.
#[tokio::test(start_paused = true)]
async fn objects_older_than_the_history_behave_as_before() {
    let s = short_history_server();
    crate::common::drop_root_ca(&s, "default").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let old = create_cm(&cms, "old", &[("tier", "a")]).await;
    for i in 0..4 {
        create_cm(&cms, &format!("new-{i}"), &[]).await;
    }
    assert_eq!(cms.get("old").await.expect("get"), old);
    let listed = cms
        .list(&ListParams::default().labels("tier=a"))
        .await
        .expect("list");
    assert_eq!(listed.items, vec![old.clone()]);
    let mut events = watch(&cms, &WatchParams::default(), "0").await;
    let mut initial = vec![];
    for _ in 0..5 {
        initial.push(next_summary(&mut events).await);
    }
    assert!(initial.contains(&ev("ADDED", "old")), "{initial:?}");

    let patched = set_data(&cms, "old", "v1").await;
    assert_eq!(patched.metadata.uid, old.metadata.uid);
    assert_eq!(
        patched.metadata.creation_timestamp,
        old.metadata.creation_timestamp
    );
    assert_eq!(patched.labels(), old.labels());
    assert_eq!(next_summary(&mut events).await, ev("MODIFIED", "old"));
    cms.delete("old", &DeleteParams::default())
        .await
        .expect("delete");
    assert_eq!(next_summary(&mut events).await, ev("DELETED", "old"));
}

#[tokio::test(start_paused = true)]
async fn watch_from_a_resource_version_still_in_history_is_not_expired() {
    let s = short_history_server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    create_cm(&cms, "a", &[]).await;
    let v1 = set_data(&cms, "a", "v1").await;
    set_data(&cms, "a", "v2").await;

    let mut events = watch(&cms, &WatchParams::default(), &rv_of(&v1).to_string()).await;
    assert_eq!(next_summary(&mut events).await, ev("MODIFIED", "a"));
}

#[tokio::test(start_paused = true)]
async fn streaming_list_without_resource_version_as_client_go_sends_it() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let a = create_cm(&cms, "a", &[("app", "web")]).await;
    create_cm(&cms, "b", &[("app", "db")]).await;

    let (code, events) = raw_watch(
        &s,
        "/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&labelSelector=app%3Dweb&timeoutSeconds=5",
    )
    .await;
    assert_eq!(code, 200);
    assert!(events.len() >= 2, "events: {events:?}");
    assert_eq!(
        raw_summary(&events[..1]),
        vec![("ADDED".to_string(), "a".to_string())]
    );
    let mark = &events[1];
    assert_eq!(mark["type"], "BOOKMARK");
    assert_eq!(
        mark["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    let mark_rv = rv_num(
        mark["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("x"),
    );
    assert!(mark_rv >= rv_of(&a));
}

// ---------------------------------------------------------------------------------------------
// lists: pagination

async fn five_configmaps(api: &Api<ConfigMap>) {
    for name in ["e", "c", "a", "d", "b"] {
        create_cm(api, name, &[]).await;
    }
}

#[tokio::test(start_paused = true)]
async fn all_namespaces_list_pages_in_namespace_then_name_order() {
    let s = server();
    create_namespace(&s, "team-a").await;
    for ns in [
        "default",
        "kube-node-lease",
        "kube-public",
        "kube-system",
        "team-a",
    ] {
        crate::common::drop_root_ca(&s, ns).await;
    }
    let default_cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let team_cms: Api<ConfigMap> = Api::namespaced(s.client(), "team-a");
    create_cm(&team_cms, "c", &[]).await;
    create_cm(&default_cms, "b", &[]).await;
    create_cm(&team_cms, "a", &[]).await;
    create_cm(&default_cms, "a", &[]).await;

    let all: Api<ConfigMap> = Api::all(s.client());
    let first = all
        .list(&ListParams::default().limit(3))
        .await
        .expect("first page");
    assert_eq!(
        ns_names(&first.items),
        vec!["default/a", "default/b", "team-a/a"]
    );
    let token = first.metadata.continue_.clone().expect("continue token");
    let second = all
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
        .expect("second page");
    assert_eq!(ns_names(&second.items), vec!["team-a/c"]);
    assert_eq!(second.metadata.continue_.filter(|t| !t.is_empty()), None);
}

#[tokio::test(start_paused = true)]
async fn expired_continue_token_is_rejected_with_410_expired() {
    let s = short_history_server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    five_configmaps(&cms).await;
    let first = cms
        .list(&ListParams::default().limit(2))
        .await
        .expect("first page");
    let token = first.metadata.continue_.clone().expect("continue token");
    for i in 1..=5 {
        set_data(&cms, "e", &format!("v{i}")).await;
    }

    let status = api_err(
        cms.list(&ListParams::default().limit(2).continue_token(&token))
            .await,
    );
    assert_eq!(status.code, 410);
    assert_eq!(status.reason, "Expired");
    assert_eq!(status.message, EXPIRED_CONTINUE);
}

#[tokio::test(start_paused = true)]
async fn expired_continue_answer_carries_a_token_for_the_rest_of_the_list() {
    // The real server puts a fresh token in the Status's metadata.continue: it continues after the
    // same key, at the latest resourceVersion ("use the continue token in this response").
    let s = short_history_server();
    crate::common::drop_root_ca(&s, "default").await;
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    five_configmaps(&cms).await;
    let first = cms
        .list(&ListParams::default().limit(2))
        .await
        .expect("first page");
    let token = first.metadata.continue_.clone().expect("continue token");
    for i in 1..=5 {
        set_data(&cms, "e", &format!("v{i}")).await;
    }

    let status = api_err(
        cms.list(&ListParams::default().limit(2).continue_token(&token))
            .await,
    );
    let fresh = status
        .metadata
        .and_then(|m| m.continue_)
        .filter(|t| !t.is_empty())
        .expect("the 410 Status carries metadata.continue");
    let rest = cms
        .list(&ListParams::default().limit(10).continue_token(&fresh))
        .await
        .expect("list with the token from the 410");
    assert_eq!(names(&rest.items), vec!["c", "d", "e"]);
    assert_eq!(
        rest.items[2]
            .data
            .as_ref()
            .and_then(|d| d.get("k"))
            .map(String::as_str),
        Some("v5"),
        "the remainder is read at the latest resourceVersion"
    );
}

// ---------------------------------------------------------------------------------------------
// lists: selectors and namespaces

#[tokio::test(start_paused = true)]
async fn namespaced_list_holds_only_its_namespace_and_all_namespaces_list_holds_every_one() {
    let s = server();
    create_namespace(&s, "team-a").await;
    create_namespace(&s, "team-b").await;
    for ns in [
        "default",
        "kube-node-lease",
        "kube-public",
        "kube-system",
        "team-a",
        "team-b",
    ] {
        crate::common::drop_root_ca(&s, ns).await;
    }
    let default_cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let team_a: Api<ConfigMap> = Api::namespaced(s.client(), "team-a");
    let team_b: Api<ConfigMap> = Api::namespaced(s.client(), "team-b");
    create_cm(&team_b, "x", &[]).await;
    create_cm(&team_a, "x", &[]).await;
    create_cm(&team_a, "y", &[]).await;
    create_cm(&default_cms, "z", &[]).await;

    let only_a = team_a.list(&ListParams::default()).await.expect("list a");
    assert_eq!(ns_names(&only_a.items), vec!["team-a/x", "team-a/y"]);
    let only_b = team_b.list(&ListParams::default()).await.expect("list b");
    assert_eq!(ns_names(&only_b.items), vec!["team-b/x"]);

    let all: Api<ConfigMap> = Api::all(s.client());
    let every = all.list(&ListParams::default()).await.expect("list all");
    assert_eq!(
        ns_names(&every.items),
        vec!["default/z", "team-a/x", "team-a/y", "team-b/x"]
    );
    let rv = every
        .metadata
        .resource_version
        .as_deref()
        .map(rv_num)
        .expect("list resourceVersion");
    assert_eq!(
        rv,
        s.resource_version(),
        "a list is at the current resourceVersion"
    );
}

// ---------------------------------------------------------------------------------------------
// found in review

#[tokio::test(start_paused = true)]
async fn timeout_seconds_zero_means_unset_and_huge_values_do_not_break_the_stream() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    // The largest value Go's ParseInt takes (one more is a 400, as on kube-apiserver).
    for timeout in ["0", "9223372036854775807"] {
        let path =
            format!("/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds={timeout}");
        let req = http::Request::get(path)
            .body(Full::new(Bytes::new()))
            .expect("request");
        let resp = s.service().oneshot(req).await.expect("answer");
        assert_eq!(resp.status(), 200);
        let mut body = resp.into_body();
        tokio::time::sleep(Duration::from_secs(60)).await;
        create_cm(&cms, &format!("after-{}", timeout.len()), &[]).await;
        let frame = tokio::time::timeout(Duration::from_secs(1), body.frame())
            .await
            .expect("the stream is still open a minute later")
            .expect("a frame")
            .expect("data");
        let line: Value =
            serde_json::from_slice(frame.data_ref().expect("data frame")).expect("json");
        assert_eq!(line["type"], "ADDED");
    }
}

#[tokio::test(start_paused = true)]
async fn a_watch_whose_client_went_away_is_released_without_further_writes() {
    let s = server();
    let cms: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let stream = cms
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch");
    assert_eq!(s.watcher_count(), 1);
    drop(stream);
    tokio::time::sleep(Duration::from_secs(6)).await;
    assert_eq!(s.watcher_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn events_v1_field_selectors_use_its_own_field_names() {
    use k8s_openapi::api::core::v1::ObjectReference;
    use k8s_openapi::api::events::v1::Event;
    let s = server();
    let events: Api<Event> = Api::namespaced(s.client(), "default");
    let ev = Event {
        metadata: ObjectMeta {
            name: Some("e1".into()),
            ..Default::default()
        },
        regarding: Some(ObjectReference {
            kind: Some("Pod".into()),
            name: Some("p1".into()),
            ..Default::default()
        }),
        reason: Some("Tested".into()),
        reporting_controller: Some("tollgate".into()),
        reporting_instance: Some("tollgate-1".into()),
        action: Some("Test".into()),
        event_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime(
            "2026-01-01T00:00:00Z".parse().expect("time"),
        )),
        type_: Some("Normal".into()),
        ..Default::default()
    };
    events
        .create(&PostParams::default(), &ev)
        .await
        .expect("create event");
    let found = events
        .list(&ListParams::default().fields("regarding.name=p1"))
        .await
        .expect("list");
    assert_eq!(names(&found.items), vec!["e1"]);
    let none = events
        .list(&ListParams::default().fields("regarding.name=other"))
        .await
        .expect("list");
    assert!(none.items.is_empty());
    let e = api_err(
        events
            .list(&ListParams::default().fields("involvedObject.name=p1"))
            .await,
    );
    assert_eq!(e.code, 400);
}
