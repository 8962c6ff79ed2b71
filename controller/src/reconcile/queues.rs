//! The queue status pass: ClusterQueue and LocalQueue status kept current.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use api::kueue::{ClusterQueue, LocalQueue};
use jiff::Timestamp;

use super::{Reconciler, kept_to_its_object};
use crate::error::Error;
use crate::state::{Key, World};
use crate::status;
use crate::writer::Written;

/// The queue status pass's state.
#[derive(Default)]
pub(super) struct StatusPass {
    pub dirty_cluster_queues: BTreeSet<String>,
    pub dirty_local_queues: BTreeSet<Key>,
    /// Queue status to bring up to date at a time, after workload changes.
    pub cq_due: BTreeMap<String, Timestamp>,
    pub lq_due: BTreeMap<Key, Timestamp>,
}

impl Reconciler {
    pub(super) async fn status_pass(&mut self, world: &mut World) -> Result<bool, Error> {
        let mut progressed = false;
        let now = self.options.clock.now_time();
        for name in std::mem::take(&mut self.status.dirty_cluster_queues) {
            let Some(cq) = world.cluster_queues.get_shared(&name) else {
                continue;
            };
            let workloads: Vec<_> = self
                .scheduler
                .reserving
                .get(&name)
                .into_iter()
                .flatten()
                .filter_map(|k| world.workloads.get(k))
                .collect();
            let pending = self.scheduler.queues.pending(&name) as i32;
            let desired =
                status::cluster_queue_status(&cq, world, workloads.into_iter(), pending, &now);
            self.options.metrics.cluster_queue(&name, &desired);
            if cq.status.as_ref() == Some(&desired) {
                continue;
            }
            let mut next = ClusterQueue::clone(&cq);
            next.status = Some(desired);
            let written = self.writer.replace_status(&next).await;
            if let Some(Written::Ok(new)) = kept_to_its_object(written, "ClusterQueue", &name)? {
                let old = world.cluster_queues.get_shared(&name);
                let new = Arc::new(new);
                if world.cluster_queues.apply_shared(new.clone()) {
                    self.cluster_queue_changed(world, old.as_ref(), Some(&new));
                    // A queue's status write changes only its status.
                    self.status.dirty_cluster_queues.remove(&name);
                }
                // LocalQueues show whether their ClusterQueue is active.
                for (key, lq) in world.local_queues.iter() {
                    if lq.spec.cluster_queue == name {
                        self.status.dirty_local_queues.insert(key.clone());
                    }
                }
                progressed = true;
            }
        }
        for key in std::mem::take(&mut self.status.dirty_local_queues) {
            let Some(lq) = world.local_queues.get_shared(&key) else {
                continue;
            };
            let (ns, name) = key.split_once('/').unwrap_or_default();
            let workloads: Vec<_> = self
                .scheduler
                .reserving
                .get(&lq.spec.cluster_queue)
                .into_iter()
                .flatten()
                .filter_map(|k| world.workloads.get(k))
                .filter(|wl| {
                    wl.metadata.namespace.as_deref() == Some(ns)
                        && wl.spec.queue_name.as_deref() == Some(name)
                })
                .collect();
            let pending = self
                .scheduler
                .lq_pending
                .get(&key)
                .map(|s| s.len())
                .unwrap_or(0) as i32;
            let desired =
                status::local_queue_status(&lq, world, workloads.into_iter(), pending, &now);
            if lq.status.as_ref() == Some(&desired) {
                continue;
            }
            let mut next = LocalQueue::clone(&lq);
            next.status = Some(desired);
            let written = self.writer.replace_status(&next).await;
            if let Some(Written::Ok(new)) = kept_to_its_object(written, "LocalQueue", &key)? {
                world.local_queues.apply(new);
                progressed = true;
            }
        }
        Ok(progressed)
    }
}
