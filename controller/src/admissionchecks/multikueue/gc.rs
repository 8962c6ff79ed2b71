//! The garbage collector: remote objects whose manager workload is gone.
//!
//! The workload controller removes a workload's remote objects when the workload finishes or is
//! deleted, but it cannot reach a worker that is disconnected at that moment. Every
//! `gcInterval` (0 disables it; the first run is one interval after start, as in Kueue), on
//! every connected worker, the objects with our origin label whose manager Workload is missing
//! or being deleted are removed: the job first, then the workload. Kueue looks only at remote
//! workloads; a job of ours left without its remote workload is collected here too, so that
//! nothing without a live owner on the manager survives an interval once the worker is back.

use api::kueue::Workload;
use futures::future::BoxFuture;
use jiff::Timestamp;
use kube::ResourceExt;

use super::adapter::{self, JobAdapter};
use super::plan::has_origin;
use super::workers::{Worker, Workers};
use super::workloads::{is_unreachable, remove_copy, timed};
use crate::admissionchecks::Ctx;
use crate::error::Error;
use crate::state::{Key, World, key_of};

#[derive(Default)]
pub struct Collector {
    /// When the next collection is due; unset until the first pass (or while disabled).
    next: Option<Timestamp>,
}

/// Something to remove from a worker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Orphan {
    /// A remote workload, and the job that owns it (`apiVersion`, `kind`, `namespace/name`)
    /// if it has one.
    Workload {
        key: Key,
        job: Option<(String, String, Key)>,
    },
    /// A job of ours whose remote workload is already gone.
    Job { key: Key },
}

/// The worker's objects with our origin whose manager workload is missing or being deleted, in
/// key order: workloads, then jobs left without one.
pub fn orphans(world: &World, worker: &Worker, origin: &str) -> Vec<Orphan> {
    let dead = |key: &Key| {
        world
            .workloads
            .get(key)
            .is_none_or(|wl| wl.metadata.deletion_timestamp.is_some())
    };
    let mut found = vec![];
    for (key, remote) in worker.workloads.iter() {
        if !has_origin(&remote.metadata, origin) || !dead(key) {
            continue;
        }
        found.push(Orphan::Workload {
            key: key.clone(),
            job: owning_job(worker, remote),
        });
    }
    for (key, job) in worker.jobs.iter() {
        if !has_origin(&job.metadata, origin) {
            continue;
        }
        let Some(wl) = adapter::workload_of_remote(&job.metadata) else {
            continue;
        };
        if worker.workloads.get(&wl).is_none() && dead(&wl) {
            found.push(Orphan::Job { key: key.clone() });
        }
    }
    found
}

/// The job that owns a remote workload: its controller reference once the worker adopted it,
/// else our job labelled with the workload's name.
fn owning_job(worker: &Worker, remote: &Workload) -> Option<(String, String, Key)> {
    let ns = remote.namespace().unwrap_or_default();
    if let Some(owner) = crate::jobs::controller_of(remote) {
        return Some((
            owner.api_version.clone(),
            owner.kind.clone(),
            format!("{ns}/{}", owner.name),
        ));
    }
    let name = remote.name_any();
    worker
        .jobs
        .values()
        .find(|j| {
            j.namespace().as_deref() == Some(ns.as_str())
                && crate::jobs::prebuilt_workload_name(&j.metadata) == Some(name.as_str())
        })
        .map(|j| ("batch/v1".to_owned(), "Job".to_owned(), key_of(j)))
}

impl Collector {
    pub fn run<'a>(
        &'a mut self,
        ctx: &'a mut Ctx<'_>,
        workers: &'a Workers,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(self.collect(ctx, workers))
    }

    pub fn next_wake(&self) -> Option<Timestamp> {
        self.next
    }

    /// Whether a collection is due now; schedules the next one.
    fn due(&mut self, interval: std::time::Duration, now: Timestamp) -> bool {
        if interval.is_zero() {
            self.next = None;
            return false;
        }
        let next = now.checked_add(interval).ok();
        match self.next {
            Some(at) if at <= now => {
                self.next = next;
                true
            }
            Some(_) => false,
            None => {
                self.next = next;
                false
            }
        }
    }

    async fn collect(&mut self, ctx: &mut Ctx<'_>, workers: &Workers) -> Result<bool, Error> {
        let now = ctx.options.clock.now();
        let config = &ctx.options.config.multi_kueue;
        if !self.due(config.gc_interval.get(), now) {
            return Ok(false);
        }
        let origin = config.origin.clone();
        let mut removed = false;
        for (cluster, worker) in &workers.by_name {
            let Some(client) = worker.client.as_ref().filter(|_| worker.is_active()) else {
                continue;
            };
            if !worker.workloads.is_synced() || !worker.jobs.is_synced() {
                continue;
            }
            for orphan in orphans(ctx.world, worker, &origin) {
                tracing::debug!(cluster = %cluster, ?orphan, "MultiKueue garbage collection");
                match remove(client, worker, &orphan, &origin).await {
                    Ok(()) => removed = true,
                    Err(e) if is_unreachable(&e) => {
                        tracing::warn!(cluster = %cluster, error = %e, "MultiKueue garbage collection: worker unreachable");
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(cluster = %cluster, ?orphan, error = %e, "MultiKueue garbage collection");
                    }
                }
            }
        }
        Ok(removed)
    }
}

/// Removes one orphan: the job first (only if it carries our origin), then the workload.
async fn remove(
    client: &kube::Client,
    worker: &Worker,
    orphan: &Orphan,
    origin: &str,
) -> Result<(), Error> {
    let (job, workload) = match orphan {
        Orphan::Workload { key, job } => (job.clone(), Some(key)),
        Orphan::Job { key } => (
            Some(("batch/v1".to_owned(), "Job".to_owned(), key.clone())),
            None,
        ),
    };
    if let Some((api_version, kind, key)) = job {
        match adapter::adapter_for(&api_version, &kind) {
            Some(adapter) => delete_job(adapter, client, &key, origin).await?,
            None => tracing::debug!(job = %key, kind, "no MultiKueue adapter for the owner"),
        }
    }
    if let Some(copy) = workload.and_then(|key| worker.workloads.get(key)) {
        timed(remove_copy(client, copy)).await?;
    }
    Ok(())
}

async fn delete_job(
    adapter: &dyn JobAdapter,
    client: &kube::Client,
    key: &Key,
    origin: &str,
) -> Result<(), Error> {
    timed(adapter.delete_remote(client, key, origin)).await?;
    Ok(())
}

#[cfg(test)]
#[path = "gc_tests.rs"]
mod tests;
