//! Writes to the API server, and the Events the controller records.
//!
//! Every write carries the resourceVersion the decision was made on, so a decision taken on a
//! stale view fails with a conflict instead of overwriting someone else's change; the loop then
//! decides again on the newer version the watch brings.
//!
//! Responses are decoded [`Lean`], without managedFields; the objects written were read that way,
//! so they carry none either and the server keeps its own.

use std::fmt::Debug;

use kube::api::{Api, DeleteParams, PostParams};
use kube::{Client, Resource, ResourceExt};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::Clock;
use crate::events::{Occurrence, Recorder};
use crate::lean::Lean;

/// The `reportingController` of Kueue's events.
pub const REPORTER: &str = "kueue-admission";

/// The field manager of the controller's writes.
pub const FIELD_MANAGER: &str = "kueue";

/// What became of a write.
#[derive(Debug)]
pub enum Written<K> {
    Ok(K),
    /// Someone else changed the object first (409) or it is gone (404): decide again later.
    Stale,
}

#[derive(Clone)]
pub struct Writer {
    client: Client,
    recorder: Recorder,
}

impl Writer {
    pub fn new(client: Client, clock: Clock) -> Self {
        let recorder = Recorder::new(client.clone(), REPORTER, clock);
        Writer { client, recorder }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    fn api<K: Scoped>(&self, obj: &K) -> Api<Lean<K>> {
        K::api(self.client.clone(), obj)
    }

    /// PUT the status subresource.
    pub async fn replace_status<K>(&self, obj: &K) -> Result<Written<K>, kube::Error>
    where
        K: Scoped + Clone + Serialize + DeserializeOwned + Debug,
    {
        let pp = PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        crate::rbac::check::<K>(Some("status"), "update");
        let written = settle(
            self.api(obj)
                .replace_status(&obj.name_any(), &pp, Lean::of(obj))
                .await,
        );
        log_write("status", obj, &written);
        written
    }

    /// PUT the object.
    pub async fn replace<K>(&self, obj: &K) -> Result<Written<K>, kube::Error>
    where
        K: Scoped + Clone + Serialize + DeserializeOwned + Debug,
    {
        let pp = PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        crate::rbac::check::<K>(None, "update");
        let written = settle(
            self.api(obj)
                .replace(&obj.name_any(), &pp, Lean::of(obj))
                .await,
        );
        log_write("update", obj, &written);
        written
    }

    /// POST a namespaced object; an existing one counts as stale (the watch will bring it).
    pub async fn create<K>(&self, obj: &K) -> Result<Written<K>, kube::Error>
    where
        K: Scoped + Clone + Serialize + DeserializeOwned + Debug,
    {
        let pp = PostParams {
            field_manager: Some(FIELD_MANAGER.into()),
            ..Default::default()
        };
        crate::rbac::check::<K>(None, "create");
        let written = settle(self.api(obj).create(&pp, Lean::of(obj)).await);
        log_write("create", obj, &written);
        written
    }

    /// DELETE an object (background propagation: its dependents go after it); one already gone
    /// counts as stale.
    pub async fn delete<K>(&self, obj: &K) -> Result<Written<()>, kube::Error>
    where
        K: Scoped + Clone + Serialize + DeserializeOwned + Debug,
    {
        crate::rbac::check::<K>(None, "delete");
        let dp = DeleteParams::background();
        let deleted = settle(
            self.api(obj)
                .delete(&obj.name_any(), &dp)
                .await
                .map(|_| Lean(())),
        );
        log_write("delete", obj, &deleted);
        deleted
    }

    /// Records an Event about `obj`. Failing to record is logged, never fatal, as in Kueue.
    pub async fn event<K>(&self, obj: &K, warning: bool, reason: &str, message: &str)
    where
        K: Resource<DynamicType = ()>,
    {
        tracing::debug!(reason, message, "event");
        // Event notes are limited to 1 KiB.
        let note = crate::workload::conditions::truncate(message, 1024);
        let occurrence = Occurrence {
            warning,
            reason,
            action: reason,
            note: &note,
        };
        // As client-go's `reference.GetReference`: the object's resourceVersion is part of the
        // reference, so the same reason about a later version of the object is a new Event, not
        // a repeat of the first (kube's `object_ref` leaves it out).
        let mut regarding = obj.object_ref(&());
        regarding.resource_version = obj.meta().resource_version.clone();
        if let Err(e) = self.recorder.publish(&occurrence, &regarding).await {
            tracing::warn!(reason, error = %e, "recording an event");
        }
    }
}

/// One debug line per write (`RUST_LOG=controller=debug`), to see what the loop does.
fn log_write<K: Resource<DynamicType = ()>, T>(
    verb: &str,
    obj: &K,
    written: &Result<Written<T>, kube::Error>,
) {
    let outcome = match written {
        Ok(Written::Ok(_)) => "ok",
        Ok(Written::Stale) => "stale",
        Err(_) => "error",
    };
    tracing::debug!(
        verb,
        kind = %K::kind(&()),
        namespace = obj.meta().namespace.as_deref().unwrap_or(""),
        name = obj.meta().name.as_deref().unwrap_or(""),
        outcome,
        "write"
    );
}

fn settle<K>(result: Result<Lean<K>, kube::Error>) -> Result<Written<K>, kube::Error> {
    match result {
        Ok(Lean(obj)) => Ok(Written::Ok(obj)),
        Err(kube::Error::Api(s)) if s.code == 409 || s.code == 404 => Ok(Written::Stale),
        Err(e) => Err(e),
    }
}

/// How to reach an object's kind: namespaced or cluster-wide.
pub trait Scoped: Resource<DynamicType = ()> + Sized {
    fn api(client: Client, obj: &Self) -> Api<Lean<Self>>;
}

macro_rules! scoped {
    (namespaced: [$($n:ty),*], cluster: [$($c:ty),*]) => {
        $(
            impl Scoped for $n {
                fn api(client: Client, obj: &Self) -> Api<Lean<Self>> {
                    Api::namespaced(client, &obj.namespace().unwrap_or_default())
                }
            }
        )*
        $(
            impl Scoped for $c {
                fn api(client: Client, _obj: &Self) -> Api<Lean<Self>> {
                    Api::all(client)
                }
            }
        )*

        /// The kinds the writer writes (group and plural), for the RBAC table's tests.
        #[cfg(test)]
        pub(crate) fn written_kinds() -> Vec<(String, String)> {
            vec![
                $((<$n>::group(&()).into_owned(), <$n>::plural(&()).into_owned()),)*
                $((<$c>::group(&()).into_owned(), <$c>::plural(&()).into_owned()),)*
            ]
        }
    };
}

// Only the kinds the controller writes: ResourceFlavors and ProvisioningRequestConfigs are
// read-only to it, and its RBAC says so.
scoped!(
    namespaced: [
        api::kueue::Workload,
        api::kueue::LocalQueue,
        k8s_openapi::api::batch::v1::Job,
        k8s_openapi::api::core::v1::PodTemplate,
        api::autoscaling::ProvisioningRequest
    ],
    cluster: [api::kueue::ClusterQueue, api::kueue::AdmissionCheck]
);
