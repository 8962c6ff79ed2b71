//! The controller's view of the cluster: one [`Mirror`] per kind the core watches (sorted by key,
//! so every pass happens in the same order on every run, and fed from watch events and the
//! controller's own write responses, whichever is newer), and the lookups across them.

use std::sync::Arc;

use api::kueue::{AdmissionCheck, ClusterQueue, LocalQueue, ResourceFlavor, Workload};
use k8s_openapi::api::batch::v1::Job;
use kube::ResourceExt;
use support::mirror::Mirror;

pub use support::mirror::{Changed, Key, key_of};

/// The key of the LocalQueue a workload names.
fn local_queue_key(wl: &Workload) -> Option<Key> {
    let name = wl.spec.queue_name.as_deref()?;
    Some(format!("{}/{name}", wl.namespace().unwrap_or_default()))
}

/// Everything the core watches; admission checks keep what else they watch themselves.
#[derive(Debug, Default)]
pub struct World {
    pub flavors: Mirror<ResourceFlavor>,
    pub cluster_queues: Mirror<ClusterQueue>,
    pub local_queues: Mirror<LocalQueue>,
    pub admission_checks: Mirror<AdmissionCheck>,
    pub workloads: Mirror<Workload>,
    pub jobs: Mirror<Job>,
}

impl World {
    /// The LocalQueue a workload names, if it exists.
    pub fn local_queue_of(&self, wl: &Workload) -> Option<&LocalQueue> {
        self.local_queues.get(&local_queue_key(wl)?)
    }

    /// The ClusterQueue behind a workload's LocalQueue, if both exist.
    pub fn cluster_queue_of(&self, wl: &Workload) -> Option<&ClusterQueue> {
        let lq = self.local_queue_of(wl)?;
        self.cluster_queues.get(&lq.spec.cluster_queue)
    }

    /// [`World::local_queue_of`] and [`World::cluster_queue_of`], shared: for a pass that writes
    /// while it holds them.
    pub fn queues_of_shared(
        &self,
        wl: &Workload,
    ) -> (Option<Arc<LocalQueue>>, Option<Arc<ClusterQueue>>) {
        let lq = local_queue_key(wl).and_then(|key| self.local_queues.get_shared(&key));
        let cq = lq
            .as_ref()
            .and_then(|lq| self.cluster_queues.get_shared(&lq.spec.cluster_queue));
        (lq, cq)
    }

    /// The ClusterQueue a workload is (or would be) counted in: its admission's, else its queue's.
    pub fn cluster_queue_name_of(&self, wl: &Workload) -> Option<String> {
        if let Some(a) = wl.status.as_ref().and_then(|s| s.admission.as_ref()) {
            return Some(a.cluster_queue.clone());
        }
        self.local_queue_of(wl)
            .map(|lq| lq.spec.cluster_queue.clone())
    }
}
