//! Leader election on a `coordination.k8s.io/v1` Lease, as client-go's leaderelection does it:
//! take the Lease when it is free or expired, renew it while working, and stop working when it
//! cannot be renewed in time. Replicas that are not leader wait and watch the Lease expire.
//!
//! Written by hand because the published Lease crates are built for other kube-rs versions.

use std::future::Future;
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease as LeaseObject, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Client;
use kube::api::{Api, PostParams};

use crate::clock::Clock;

/// client-go's defaults.
pub const LEASE_DURATION: Duration = Duration::from_secs(15);
pub const RENEW_DEADLINE: Duration = Duration::from_secs(10);
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);

#[derive(Debug, thiserror::Error)]
pub enum LeaderError {
    #[error("lost the lease {0}: not renewed within {RENEW_DEADLINE:?}")]
    Lost(String),
    #[error("lease {0}: {1}")]
    Api(String, kube::Error),
}

pub struct Lease {
    api: Api<LeaseObject>,
    name: String,
    identity: String,
    shown: String,
    clock: Clock,
}

impl Lease {
    pub fn new(client: Client, namespace: &str, name: &str, identity: &str, clock: Clock) -> Self {
        Lease {
            api: Api::namespaced(client, namespace),
            name: name.to_owned(),
            identity: identity.to_owned(),
            shown: format!("{namespace}/{name}"),
            clock,
        }
    }

    /// Waits to become leader, then runs `work` while renewing. Returns when `work` ends, or with
    /// an error when leadership is lost (the caller should exit, as Kueue does).
    pub async fn run_while_leader<F, E>(&self, work: F) -> Result<(), anyhow::Error>
    where
        F: Future<Output = Result<(), E>>,
        E: std::error::Error + Send + Sync + 'static,
    {
        loop {
            if self.try_acquire_or_renew().await? {
                break;
            }
            tokio::time::sleep(RETRY_PERIOD).await;
        }
        tracing::info!(lease = %self.shown, identity = %self.identity, "became leader");
        tokio::select! {
            r = work => r.map_err(anyhow::Error::from),
            e = self.keep_renewing() => Err(e.into()),
        }
    }

    async fn keep_renewing(&self) -> LeaderError {
        let mut last = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(RETRY_PERIOD).await;
            match self.try_acquire_or_renew().await {
                Ok(true) => last = tokio::time::Instant::now(),
                Ok(false) => return LeaderError::Lost(self.shown.clone()),
                Err(e) => tracing::warn!(error = %e, "renewing the lease"),
            }
            if last.elapsed() > RENEW_DEADLINE {
                return LeaderError::Lost(self.shown.clone());
            }
        }
    }

    /// One attempt: true if this replica holds the Lease afterwards.
    pub async fn try_acquire_or_renew(&self) -> Result<bool, LeaderError> {
        let now = MicroTime(self.clock.now());
        let api_err = |e| LeaderError::Api(self.shown.clone(), e);
        crate::rbac::check::<LeaseObject>(None, "get");
        let current = self.api.get_opt(&self.name).await.map_err(api_err)?;
        let pp = PostParams::default();
        let Some(mut lease) = current else {
            let lease = LeaseObject {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: Some(self.spec(now.clone(), now, 0)),
            };
            crate::rbac::check::<LeaseObject>(None, "create");
            return match self.api.create(&pp, &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(api_err(e)),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let mine = spec.holder_identity.as_deref() == Some(self.identity.as_str());
        if !mine && !expired(&spec, self.clock.now()) {
            return Ok(false);
        }
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!mine);
        let acquired = if mine {
            spec.acquire_time.clone().unwrap_or_else(|| now.clone())
        } else {
            now.clone()
        };
        lease.spec = Some(self.spec(acquired, now, transitions));
        crate::rbac::check::<LeaseObject>(None, "update");
        match self.api.replace(&self.name, &pp, &lease).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(api_err(e)),
        }
    }

    fn spec(&self, acquired: MicroTime, renewed: MicroTime, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(LEASE_DURATION.as_secs() as i32),
            acquire_time: Some(acquired),
            renew_time: Some(renewed),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }
}

/// Whether the holder failed to renew within the lease duration.
fn expired(spec: &LeaseSpec, now: Timestamp) -> bool {
    let Some(renewed) = &spec.renew_time else {
        return true;
    };
    let duration = i64::from(spec.lease_duration_seconds.unwrap_or(15));
    renewed.0 + jiff::SignedDuration::from_secs(duration) < now
}
