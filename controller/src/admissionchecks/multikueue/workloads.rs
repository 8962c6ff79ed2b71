//! The manager's workloads: remote copies, the winner, the job on the winner.

use api::kueue::Workload;
use futures::future::BoxFuture;
use jiff::Timestamp;

use super::clusters::Setup;
use super::workers::{RemoteChange, Workers};
use crate::admissionchecks::Ctx;
use crate::error::Error;
use crate::state::{Key, World};

#[derive(Default)]
pub struct WorkloadsPass {}

impl WorkloadsPass {
    pub fn workload_changed(
        &mut self,
        _world: &World,
        _old: Option<&Workload>,
        _new: Option<&Workload>,
    ) {
    }
    pub fn remote_changed(&mut self, _change: &RemoteChange) {}
    pub fn worker_changed(&mut self, _cluster: &str) {}
    pub fn workload_due(&mut self, _key: &Key) {}
    pub fn run<'a>(
        &'a mut self,
        _ctx: &'a mut Ctx<'_>,
        _workers: &'a Workers,
        _setup: &'a Setup,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(async { Ok(false) })
    }
    pub fn next_wake(&self) -> Option<Timestamp> {
        None
    }
}
