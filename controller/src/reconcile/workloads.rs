//! The workload pass: one lifecycle step per changed workload, written back.

use api::constants::workload_condition as cond;
use api::kueue::Workload;

use super::{Reconciler, job_owner, kept_to_its_object};
use crate::error::Error;
use crate::state::{Key, World};
use crate::workload::{self, conditions, lifecycle};
use crate::writer::Written;

/// The workload pass's state.
#[derive(Default)]
pub(super) struct WorkloadsPass {
    /// Workloads to take one lifecycle step again.
    pub dirty: std::collections::BTreeSet<Key>,
}

impl Reconciler {
    pub(super) async fn workloads_pass(&mut self, world: &mut World) -> Result<bool, Error> {
        let dirty = std::mem::take(&mut self.workloads.dirty);
        let mut progressed = false;
        for key in dirty {
            let step = self.workload_step(world, &key).await;
            progressed |= kept_to_its_object(step, "Workload", &key)?.unwrap_or(false);
        }
        Ok(progressed)
    }

    /// One lifecycle step of a workload, written back; whether anything was written.
    async fn workload_step(&mut self, world: &mut World, key: &Key) -> Result<bool, Error> {
        let Some(wl) = world.workloads.get_shared(key) else {
            return Ok(false);
        };
        // Its queues may have appeared, changed or become active since it last changed.
        self.place(world, key, Some(&wl));
        let (lq, cq) = world.queues_of_shared(&wl);
        let cq_active = cq
            .as_ref()
            .is_some_and(|cq| crate::status::cluster_queue_active(cq, world).0);
        let owned_by_job = job_owner(&wl).is_some_and(|o| {
            world
                .jobs
                .get(&format!(
                    "{}/{}",
                    wl.metadata.namespace.as_deref().unwrap_or_default(),
                    o.name
                ))
                .is_some()
        });
        // Being deleted, and no Job will finish it (none owns it, or its Job is gone): let it
        // go, as Kueue does for orphaned workloads and for a deleted Job's workloads.
        if wl.metadata.deletion_timestamp.is_some() && !owned_by_job {
            return self.remove_finalizer(world, &wl).await;
        }
        let ctx = lifecycle::Context {
            now: self.options.clock.now_time(),
            local_queue: lq.as_deref(),
            cluster_queue: cq.as_deref(),
            cluster_queue_active: cq_active,
            owned_by_job,
            observability: self.observability(),
        };
        let mut next = Workload::clone(&wl);
        match lifecycle::step(&mut next, &ctx) {
            lifecycle::Step::Idle => {}
            lifecycle::Step::WakeAt(at) => {
                self.wake.insert(key.clone(), at);
            }
            lifecycle::Step::Deactivate => {
                if let Written::Ok(new) = self.writer.replace(&next).await? {
                    self.written_workload(world, new);
                    return Ok(true);
                }
            }
            lifecycle::Step::Status(events) => {
                if let Written::Ok(new) = self.writer.replace_status(&next).await? {
                    self.observe_admission(&wl, &new);
                    for e in &events {
                        self.writer
                            .event(&new, e.warning, &e.reason, &e.message)
                            .await;
                    }
                    self.written_workload(world, new);
                    return Ok(true);
                }
            }
        }
        Ok(false)
    }

    /// Metrics of a workload that just became admitted.
    fn observe_admission(&self, before: &Workload, after: &Workload) {
        if workload::is_admitted(before) || !workload::is_admitted(after) {
            return;
        }
        let Some(status) = after.status.as_ref() else {
            return;
        };
        let cq = status
            .admission
            .as_ref()
            .map(|a| a.cluster_queue.clone())
            .unwrap_or_default();
        let now = self.options.clock.now();
        let reserved_at = conditions::find(&status.conditions, cond::QUOTA_RESERVED)
            .map(|c| c.last_transition_time.0)
            .unwrap_or(now);
        self.options.metrics.admitted(
            &cq,
            queued_wait(after, now).as_secs_f64(),
            now.duration_since(reserved_at).as_secs_f64().max(0.0),
        );
    }
}

/// Time since the workload was queued: its creation, or its last requeue.
pub(super) fn queued_wait(wl: &Workload, now: jiff::Timestamp) -> std::time::Duration {
    let since = wl
        .status
        .as_ref()
        .and_then(|s| conditions::find(&s.conditions, cond::REQUEUED))
        .map(|c| c.last_transition_time.0)
        .or_else(|| wl.metadata.creation_timestamp.as_ref().map(|t| t.0))
        .unwrap_or(now);
    std::time::Duration::try_from(now.duration_since(since)).unwrap_or_default()
}
