//! The manager's view of its worker clusters. The cluster controller ([`super::clusters`])
//! keeps it: connections, loss times, and what each worker's watches show of the objects that
//! carry our origin label. The workload controller and the garbage collector read it and write
//! to the workers through its clients.

use std::collections::BTreeMap;

use api::kueue::Workload;
use jiff::Timestamp;
use k8s_openapi::api::batch::v1::Job;
use support::mirror::Mirror;

/// One worker cluster (a MultiKueueCluster), as the manager sees it.
#[derive(Default)]
pub struct Worker {
    /// A client while connected.
    pub client: Option<kube::Client>,
    /// When the connection was lost, if it is lost now; kept across reconnect attempts and
    /// cleared once connected again (workerLostTimeout counts from here).
    pub lost_since: Option<Timestamp>,
    /// The worker's Workloads that carry our origin label.
    pub workloads: Mirror<Workload>,
    /// The worker's Jobs that carry our origin label.
    pub jobs: Mirror<Job>,
}

impl Worker {
    /// Connected, with watches running: dispatching to it makes sense.
    pub fn is_active(&self) -> bool {
        self.client.is_some() && self.lost_since.is_none()
    }
}

/// Every MultiKueueCluster by name, connected or not.
#[derive(Default)]
pub struct Workers {
    pub by_name: BTreeMap<String, Worker>,
}

/// Something a worker's watch saw change, for the workload controller: the key
/// (`namespace/name`) of the manager's Workload it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RemoteChange {
    pub cluster: String,
    pub workload: String,
}
