//! Leader election on a Lease, on virtual time against the fake API server.

use std::time::Duration;

use controller::Clock;
use controller::leader::{LEASE_DURATION, Lease};
use fake_apiserver::FakeApiServer;
use k8s_openapi::api::coordination::v1::Lease as LeaseObject;
use kube::Api;

/// A server on virtual time and two replicas, `a` and `b`, competing for one Lease.
fn two_replicas() -> (FakeApiServer, Lease, Lease) {
    let start: jiff::Timestamp = "2026-01-01T00:00:00Z".parse().expect("time");
    let server = FakeApiServer::builder()
        .start_time(start)
        .build()
        .expect("server");
    let (wall, at) = server.clock().anchor();
    let clock = Clock::anchored(wall, at);
    let a = Lease::new(server.client(), "default", "tollgate", "a", clock);
    let b = Lease::new(server.client(), "default", "tollgate", "b", clock);
    (server, a, b)
}

#[tokio::test(start_paused = true)]
async fn one_replica_holds_the_lease_until_it_stops_renewing() {
    let (server, a, b) = two_replicas();

    assert!(
        a.try_acquire_or_renew().await.expect("a"),
        "a takes the free lease"
    );
    assert!(
        !b.try_acquire_or_renew().await.expect("b"),
        "b waits while a holds it"
    );
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(a.try_acquire_or_renew().await.expect("a renews"));
    assert!(
        !b.try_acquire_or_renew().await.expect("b"),
        "a renewed in time"
    );

    // a stops renewing (its process died): after the lease duration b takes over.
    tokio::time::sleep(LEASE_DURATION + Duration::from_secs(1)).await;
    assert!(
        b.try_acquire_or_renew().await.expect("b"),
        "b takes the expired lease"
    );
    let lease = Api::<LeaseObject>::namespaced(server.client(), "default")
        .get("tollgate")
        .await
        .expect("lease");
    let spec = lease.spec.expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some("b"));
    assert_eq!(spec.lease_transitions, Some(1));
    assert!(!a.try_acquire_or_renew().await.expect("a"), "a lost it");
}

#[tokio::test(start_paused = true)]
async fn the_work_runs_only_while_leading() {
    let (_server, a, b) = two_replicas();
    assert!(a.try_acquire_or_renew().await.expect("a"));
    let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ran.clone();
    let waiting = tokio::spawn(async move {
        b.run_while_leader(async move {
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
            Ok::<(), std::io::Error>(())
        })
        .await
    });
    // a keeps renewing for a minute: b never runs.
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(a.try_acquire_or_renew().await.expect("a renews"));
    }
    assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
    // a stops; b becomes leader and runs its work.
    waiting.await.expect("join").expect("b ran");
    assert!(ran.load(std::sync::atomic::Ordering::SeqCst));
}
