//! Admission check controllers: the second phase of admission, after quota.
//!
//! Each check is one module here, as each is one package with its own `SetupWithManager` in
//! Kueue. Its controller is a struct that owns what it watches beyond the core kinds and the
//! set of workloads it must look at again, and implements [`AdmissionCheckController`]. The
//! manager takes its watches and routes their events from [`registered`]: adding a check is a
//! module and one line there.

pub mod multikueue;
pub mod params;
pub mod provisioning;

use std::collections::BTreeMap;
use std::sync::Arc;

use api::kueue::{AdmissionCheck, Workload};
use futures::future::BoxFuture;
use jiff::Timestamp;
use kube::Client;

use crate::error::Error;
use crate::options::Options;
use crate::state::{Key, World, key_of};
use crate::watch::{AnyEvent, Changed, Watch};
use crate::writer::Writer;

/// Every admission check controller the manager runs, in the order their passes run.
pub fn registered(options: &Options) -> Vec<Box<dyn AdmissionCheckController>> {
    let mut checks: Vec<Box<dyn AdmissionCheckController>> =
        vec![Box::new(provisioning::Controller::new(options))];
    // Off, the controller neither watches Secrets nor talks to workers, as Kueue with the gate off.
    if crate::config::gate(&options.config, "MultiKueue") {
        checks.push(Box::new(multikueue::Controller::new(options)));
    }
    checks
}

/// One admission check's controller, driven by the manager's loop.
pub trait AdmissionCheckController: Send {
    /// What it watches beyond the core kinds (which it reads from the [`World`]).
    fn watches(&self, client: &Client) -> Vec<Watch>;

    /// An event of one of its own watches.
    fn apply(&mut self, world: &World, event: AnyEvent);

    /// A workload changed, seen by a watch or written by anyone in this controller.
    fn workload_changed(&mut self, world: &World, old: Option<&Workload>, new: Option<&Workload>);

    /// A workload's timer ([`Ctx::wake_at`]) is due.
    fn workload_due(&mut self, key: &Key);

    /// An AdmissionCheck changed (of any controller: a check can change hands).
    fn admission_check_changed(
        &mut self,
        world: &World,
        old: Option<&AdmissionCheck>,
        new: Option<&AdmissionCheck>,
    );

    /// Brings what changed since the last pass up to date; whether it wrote anything.
    fn run<'a, 'w: 'a>(&'a mut self, ctx: &'a mut Ctx<'w>) -> BoxFuture<'a, Result<bool, Error>>;

    /// When the loop must run a pass even if nothing changes (a retry of the check's own
    /// objects, a periodic collection).
    fn next_wake(&self) -> Option<Timestamp> {
        None
    }
}

/// A write a check's pass made to an object of the core's.
pub(crate) enum CoreWrite {
    Workload(Changed<Workload>),
    AdmissionCheck(Changed<AdmissionCheck>),
}

/// What a check's pass may read and do.
pub struct Ctx<'w> {
    pub world: &'w mut World,
    pub writer: &'w Writer,
    pub options: &'w Options,
    /// Workload timers, shared with the core: when one is due, the core and every check look
    /// at the workload again.
    wake: &'w mut BTreeMap<Key, Timestamp>,
    written: Vec<CoreWrite>,
}

impl<'w> Ctx<'w> {
    pub(crate) fn new(
        world: &'w mut World,
        writer: &'w Writer,
        options: &'w Options,
        wake: &'w mut BTreeMap<Key, Timestamp>,
    ) -> Self {
        Ctx {
            world,
            writer,
            options,
            wake,
            written: Vec::new(),
        }
    }

    /// Applies a written workload to the world at once (the pass reads it back); the core and
    /// every check hear of it when the pass ends.
    pub fn written_workload(&mut self, wl: Workload) {
        let old = self.world.workloads.get_shared(&key_of(&wl));
        let wl = Arc::new(wl);
        if self.world.workloads.apply_shared(wl.clone()) {
            self.written.push(CoreWrite::Workload((old, Some(wl))));
        }
    }

    /// [`Ctx::written_workload`] for an AdmissionCheck (its status): the core learns, for one,
    /// whether the ClusterQueues using it are active now.
    pub fn written_admission_check(&mut self, ac: AdmissionCheck) {
        let old = self.world.admission_checks.get_shared(&key_of(&ac));
        let ac = Arc::new(ac);
        if self.world.admission_checks.apply_shared(ac.clone()) {
            self.written
                .push(CoreWrite::AdmissionCheck((old, Some(ac))));
        }
    }

    /// Look at a workload again at `at` at the latest.
    pub fn wake_at(&mut self, key: &Key, at: Timestamp) {
        let due = self.wake.entry(key.clone()).or_insert(at);
        *due = (*due).min(at);
    }

    /// What the pass wrote, in order.
    pub(crate) fn into_written(self) -> Vec<CoreWrite> {
        self.written
    }
}
