//! Fault injection through the API, as a client under test would meet it.

use std::time::Duration;

use fake_apiserver::{DropWhen, FaultRule, Verb};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};

use crate::common::{api_err, cm, server};

#[tokio::test(start_paused = true)]
async fn matching_requests_fail_n_times_with_the_chosen_status() {
    let s = server();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    s.faults().inject(
        FaultRule::fail(503)
            .verb(Verb::Create)
            .resource("configmaps")
            .name("flaky")
            .times(2),
    );
    assert_eq!(
        api_err(api.create(&PostParams::default(), &cm("flaky")).await).code,
        503
    );
    // Other names and other verbs are untouched.
    api.create(&PostParams::default(), &cm("steady"))
        .await
        .expect("unmatched create");
    assert_eq!(
        api_err(api.create(&PostParams::default(), &cm("flaky")).await).reason,
        "ServiceUnavailable"
    );
    api.create(&PostParams::default(), &cm("flaky"))
        .await
        .expect("third try succeeds");
    assert!(
        api.get_opt("flaky").await.expect("get").is_some(),
        "failed attempts wrote nothing, the third did"
    );
}

/// A client whose requests say who it is, as a component's do.
fn client_as(s: &fake_apiserver::FakeApiServer, agent: &'static str) -> kube::Client {
    let service = tower::ServiceBuilder::new()
        .map_request(move |mut req: http::Request<kube::client::Body>| {
            req.headers_mut().insert(
                http::header::USER_AGENT,
                http::HeaderValue::from_static(agent),
            );
            req
        })
        .service(s.service());
    kube::Client::new(service, "default")
}

#[tokio::test(start_paused = true)]
async fn a_dropped_answer_leaves_the_write_done_and_the_client_unsure() {
    let s = server();
    s.faults().inject(
        FaultRule::drop_connection(DropWhen::Answer)
            .user_agent("flaky-client/")
            .times(1),
    );
    s.faults().inject(
        FaultRule::drop_connection(DropWhen::Request)
            .user_agent("lossy-client/")
            .times(1),
    );
    let steady: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let flaky: Api<ConfigMap> = Api::namespaced(client_as(&s, "flaky-client/1"), "default");
    let lossy: Api<ConfigMap> = Api::namespaced(client_as(&s, "lossy-client/1"), "default");
    let error = flaky
        .create(&PostParams::default(), &cm("answered"))
        .await
        .expect_err("the connection was dropped");
    assert!(
        !matches!(error, kube::Error::Api(_)),
        "a transport error, not a Status: {error}"
    );
    assert!(steady.get_opt("answered").await.expect("get").is_some());
    lossy
        .create(&PostParams::default(), &cm("lost"))
        .await
        .expect_err("the connection was dropped");
    assert!(
        steady.get_opt("lost").await.expect("get").is_none(),
        "a request dropped before it was served wrote nothing"
    );
    // Each rule fired once, and never for another client.
    lossy
        .create(&PostParams::default(), &cm("lost"))
        .await
        .expect("second try");
}

#[tokio::test(start_paused = true)]
async fn throttled_requests_get_429_with_retry_after() {
    let s = server();
    s.faults()
        .inject(FaultRule::throttle(3).verb(Verb::List).times(1));
    let response = tower::ServiceExt::oneshot(
        s.service(),
        http::Request::get("/api/v1/namespaces/default/configmaps")
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .expect("request"),
    )
    .await
    .expect("served");
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "3");
    let body = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    let status: serde_json::Value = serde_json::from_slice(&body).expect("a Status");
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(status["details"]["retryAfterSeconds"], 3);
}

#[tokio::test(start_paused = true)]
async fn latency_is_added_on_the_virtual_clock() {
    let s = server();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    s.faults()
        .inject(FaultRule::delay(Duration::from_secs(5)).verb(Verb::Get));
    let before = tokio::time::Instant::now();
    let _ = api.get_opt("x").await.expect("get");
    assert_eq!(before.elapsed(), Duration::from_secs(5));
}

#[tokio::test(start_paused = true)]
async fn closing_watches_ends_open_streams() {
    let s = server();
    crate::common::drop_root_ca(&s, "default").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let mut stream = api
        .watch(&WatchParams::default(), "0")
        .await
        .expect("watch")
        .boxed();
    api.create(&PostParams::default(), &cm("a"))
        .await
        .expect("create");
    assert!(matches!(
        stream.try_next().await.expect("event"),
        Some(WatchEvent::Added(_))
    ));
    assert_eq!(s.watcher_count(), 1);
    s.faults().close_watches();
    assert!(
        stream.try_next().await.expect("clean end").is_none(),
        "the stream ends"
    );
    assert_eq!(s.watcher_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_partition_refuses_requests_until_it_heals_by_itself() {
    let s = server();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    s.faults().partition(Duration::from_secs(60));
    let err = api
        .get_opt("x")
        .await
        .expect_err("refused during the partition");
    assert!(
        !matches!(err, kube::Error::Api(_)),
        "a transport error, not an API answer: {err:?}"
    );
    tokio::time::sleep(Duration::from_secs(61)).await;
    api.get_opt("x").await.expect("served after the partition");
}

#[tokio::test(start_paused = true)]
async fn many_servers_in_one_process_are_independent() {
    let (a, b) = (server(), server());
    let api_a: Api<ConfigMap> = Api::namespaced(a.client(), "default");
    let api_b: Api<ConfigMap> = Api::namespaced(b.client(), "default");
    api_a
        .create(&PostParams::default(), &cm("only-in-a"))
        .await
        .expect("create");
    a.faults().inject(FaultRule::fail(500));
    assert!(
        api_b
            .get_opt("only-in-a")
            .await
            .expect("b answers")
            .is_none()
    );
}
