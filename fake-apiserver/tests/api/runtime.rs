//! kube-rs's own runtime against the fake: reflector, Controller, finalizer helper, event recorder.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use fake_apiserver::{FaultRule, Verb};
use futures::StreamExt;
use k8s_openapi::api::core::v1::Event as CoreEvent;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::events::v1::Event as EventV1;
use kube::api::{Api, DeleteParams, ListParams, ObjectMeta, PostParams};
use kube::runtime::WatchStreamExt;
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::finalizer::{Event as FinalizerEvent, finalizer};
use kube::runtime::reflector;
use kube::runtime::watcher::{self, Event as WatchEvent};
use kube::{Resource, ResourceExt};

use crate::common::{cm, server};

/// Poll `cond` on virtual time until it holds (or fail after a virtual minute).
async fn eventually<F, Fut>(what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..600 {
        if cond().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting until {what}");
}

#[tokio::test(start_paused = true)]
async fn reflector_stays_in_sync_through_changes_and_a_forced_relist() {
    let s = fake_apiserver::FakeApiServer::builder()
        .start_time("2026-01-01T00:00:00Z".parse().expect("ts"))
        .history_limit(3)
        .build()
        .expect("server");
    crate::common::drop_root_ca(&s, "default").await;
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    for n in ["a", "b"] {
        api.create(&PostParams::default(), &cm(n))
            .await
            .expect("create");
    }
    let (reader, writer) = reflector::store::<ConfigMap>();
    let inits = Arc::new(AtomicUsize::new(0));
    let seen = inits.clone();
    let stream = reflector::reflector(
        writer,
        watcher::watcher(api.clone(), watcher::Config::default()).default_backoff(),
    );
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            if let Ok(WatchEvent::Init) = ev {
                seen.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    let names = |r: &reflector::Store<ConfigMap>| {
        let mut v: Vec<String> = r.state().iter().map(|c| c.name_any()).collect();
        v.sort();
        v
    };
    eventually("the reflector lists a and b", || async {
        names(&reader) == ["a", "b"]
    })
    .await;

    api.create(&PostParams::default(), &cm("c"))
        .await
        .expect("create c");
    api.delete("a", &DeleteParams::default())
        .await
        .expect("delete a");
    eventually("the reflector follows a create and a delete", || async {
        names(&reader) == ["b", "c"]
    })
    .await;

    // Cut the watch and keep it from coming back while more changes than the history holds happen.
    let block = s.faults().inject(FaultRule::fail(503).verb(Verb::Watch));
    s.faults().close_watches();
    for n in ["d", "e", "f", "g"] {
        api.create(&PostParams::default(), &cm(n))
            .await
            .expect("create");
    }
    api.delete("b", &DeleteParams::default())
        .await
        .expect("delete b");
    s.faults().remove(block);
    eventually("the reflector relists after 410 Expired", || async {
        names(&reader) == ["c", "d", "e", "f", "g"]
    })
    .await;
    assert!(
        inits.load(Ordering::SeqCst) >= 2,
        "a relist (second Init) happened"
    );
}

#[derive(Debug, thiserror::Error)]
#[error(transparent)]
struct ReconcileError(#[from] kube::Error);

#[tokio::test(start_paused = true)]
async fn controller_reconciles_an_object_and_its_owned_children() {
    let s = server();
    let client = s.client();
    let parents: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let children: Api<Secret> = Api::namespaced(client.clone(), "default");
    let runs = Arc::new(AtomicUsize::new(0));
    let ctx = Arc::new((children.clone(), runs.clone()));
    async fn reconcile(
        parent: Arc<ConfigMap>,
        ctx: Arc<(Api<Secret>, Arc<AtomicUsize>)>,
    ) -> Result<Action, ReconcileError> {
        ctx.1.fetch_add(1, Ordering::SeqCst);
        let owner = parent.controller_owner_ref(&()).expect("owner ref");
        let child = Secret {
            metadata: ObjectMeta {
                name: Some(format!("{}-child", parent.name_any())),
                owner_references: Some(vec![owner]),
                ..Default::default()
            },
            ..Default::default()
        };
        match ctx.0.create(&PostParams::default(), &child).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
        Ok(Action::await_change())
    }
    fn error_policy(
        _: Arc<ConfigMap>,
        _: &ReconcileError,
        _: Arc<(Api<Secret>, Arc<AtomicUsize>)>,
    ) -> Action {
        Action::requeue(Duration::from_secs(1))
    }
    let controller = Controller::new(parents.clone(), watcher::Config::default())
        .owns(children.clone(), watcher::Config::default())
        .run(reconcile, error_policy, ctx)
        .for_each(|_| async {});
    tokio::spawn(controller);

    parents
        .create(&PostParams::default(), &cm("p"))
        .await
        .expect("create parent");
    eventually("the child exists", || async {
        children.get_opt("p-child").await.ok().flatten().is_some()
    })
    .await;
    let before = runs.load(Ordering::SeqCst);
    children
        .delete("p-child", &DeleteParams::default())
        .await
        .expect("delete child");
    eventually("the deleted child is recreated", || async {
        children.get_opt("p-child").await.ok().flatten().is_some()
    })
    .await;
    assert!(
        runs.load(Ordering::SeqCst) > before,
        "deleting an owned child triggered a reconcile"
    );

    // Deleting the parent lets the garbage collector take the child.
    parents
        .delete("p", &DeleteParams::default())
        .await
        .expect("delete parent");
    eventually("the child is garbage collected", || async {
        children.get_opt("p-child").await.ok().flatten().is_none()
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn finalizer_helper_adds_and_removes_its_finalizer() {
    let s = server();
    let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
    let cleaned = Arc::new(AtomicUsize::new(0));
    let ctx = Arc::new((api.clone(), cleaned.clone()));
    async fn reconcile(
        obj: Arc<ConfigMap>,
        ctx: Arc<(Api<ConfigMap>, Arc<AtomicUsize>)>,
    ) -> Result<Action, kube::runtime::finalizer::Error<ReconcileError>> {
        let counter = ctx.1.clone();
        finalizer(&ctx.0, "tollgate.dev/cleanup", obj, |ev| async move {
            if let FinalizerEvent::Cleanup(_) = ev {
                counter.fetch_add(1, Ordering::SeqCst);
            }
            Ok::<_, ReconcileError>(Action::await_change())
        })
        .await
    }
    fn error_policy<E: std::fmt::Debug>(
        _: Arc<ConfigMap>,
        e: &E,
        _: Arc<(Api<ConfigMap>, Arc<AtomicUsize>)>,
    ) -> Action {
        eprintln!("reconcile error: {e:?}");
        Action::requeue(Duration::from_secs(1))
    }
    tokio::spawn(
        Controller::new(api.clone(), watcher::Config::default())
            .run(reconcile, error_policy, ctx)
            .for_each(|_| async {}),
    );

    api.create(&PostParams::default(), &cm("f"))
        .await
        .expect("create");
    eventually("the finalizer is added", || async {
        api.get("f")
            .await
            .map(|o| o.finalizers().contains(&"tollgate.dev/cleanup".to_string()))
            .unwrap_or(false)
    })
    .await;
    api.delete("f", &DeleteParams::default())
        .await
        .expect("delete");
    eventually("cleanup ran and the object is gone", || async {
        api.get_opt("f").await.ok().flatten().is_none()
    })
    .await;
    assert_eq!(cleaned.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn event_recorder_events_are_served_by_both_event_apis() {
    let s = server();
    let client = s.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let obj = api
        .create(&PostParams::default(), &cm("subject"))
        .await
        .expect("create");
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "tollgate-test".into(),
            instance: None,
        },
    );
    let event = Event {
        type_: EventType::Normal,
        reason: "Tested".into(),
        note: Some("it works".into()),
        action: "Test".into(),
        secondary: None,
    };
    let reference = obj.object_ref(&());
    recorder.publish(&event, &reference).await.expect("publish");
    recorder
        .publish(&event, &reference)
        .await
        .expect("publish again (series patch)");

    let v1: Vec<EventV1> = Api::<EventV1>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect("list")
        .items;
    assert_eq!(v1.len(), 1);
    assert_eq!(v1[0].reason.as_deref(), Some("Tested"));
    assert_eq!(
        v1[0].regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("subject")
    );
    assert_eq!(v1[0].series.as_ref().map(|s| s.count), Some(2));

    let core: Vec<CoreEvent> = Api::<CoreEvent>::namespaced(client, "default")
        .list(&ListParams::default())
        .await
        .expect("list")
        .items;
    assert_eq!(core.len(), 1);
    assert_eq!(core[0].message.as_deref(), Some("it works"));
    assert_eq!(core[0].involved_object.name.as_deref(), Some("subject"));
    assert_eq!(
        core[0].reporting_component.as_deref(),
        Some("tollgate-test")
    );
}
