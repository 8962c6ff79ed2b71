//! The MultiKueue admission check (KEP-693): the manager dispatches a workload that holds quota
//! to worker clusters, the first worker to admit it runs the job, and the manager mirrors the
//! job's progress.
//!
//! - [`clusters`]: MultiKueueClusters: kubeconfigs ([`kubeconfig`]), connections ([`connect`]),
//!   the `Active` condition, reconnects, and watches on each worker ([`workers`]).
//! - [`active`]: the `Active` condition of MultiKueue AdmissionChecks.
//! - [`plan`]: what happens next to a manager's workload (remote copies, the winner, the job on
//!   the winner, status copied back, retries), decided without IO; which workers to try is
//!   [`dispatch`]'s decision. [`workloads`] carries the plan out.
//! - [`gc`]: removes remote objects whose manager workload is gone.
//! - [`adapter`]: what the workload controller needs of a job kind (batch/v1 Job today).
//!
//! [`Controller`] is the glue: it routes events and runs the passes in that order.

pub mod active;
pub mod adapter;
pub mod clusters;
pub mod connect;
pub mod dispatch;
pub mod gc;
pub mod kubeconfig;
pub mod plan;
pub mod retry;
pub mod workers;
pub mod workloads;

use api::constants::controller_name;
use api::kueue::{AdmissionCheck, MultiKueueConfig, Workload};
use futures::future::BoxFuture;
use jiff::Timestamp;
use kube::Client;
use support::mirror::Mirror;

use self::clusters::{Clusters, Setup};
use self::gc::Collector;
use self::workers::Workers;
use self::workloads::WorkloadsPass;
use crate::admissionchecks::{AdmissionCheckController, Ctx};
use crate::error::Error;
use crate::options::Options;
use crate::state::{Key, World};
use crate::watch::{AnyEvent, Watch, take, watch};

pub use self::clusters::REMOTE_EVENTS;

/// How long a failed AdmissionCheck status write waits before it is tried again.
const RETRY_AFTER_ERROR: std::time::Duration = std::time::Duration::from_secs(10);

/// MultiKueue's controller: clusters, checks, workloads and the garbage collector.
pub struct Controller {
    clusters: Clusters,
    configs: Mirror<MultiKueueConfig>,
    workers: Workers,
    setup: Setup,
    /// The checks' `Active` conditions need another look.
    checks_dirty: bool,
    retry_at: Option<Timestamp>,
    workloads: WorkloadsPass,
    gc: Collector,
}

impl Controller {
    pub fn new(options: &Options) -> Self {
        Controller {
            clusters: Clusters::new(options),
            configs: Mirror::default(),
            workers: Workers::default(),
            setup: Setup::default(),
            checks_dirty: false,
            retry_at: None,
            workloads: WorkloadsPass::default(),
            gc: Collector::default(),
        }
    }

    async fn pass(&mut self, ctx: &mut Ctx<'_>) -> Result<bool, Error> {
        let mut progressed = self
            .clusters
            .sync(ctx, &mut self.workers, &mut self.workloads)
            .await?;
        self.setup = Setup::build(ctx.world, &self.configs);
        self.checks_dirty |= self.clusters.take_activity_changed();
        progressed |= self.sync_checks(ctx).await?;
        progressed |= self.workloads.run(ctx, &self.workers, &self.setup).await?;
        progressed |= self.gc.run(ctx, &self.workers).await?;
        Ok(progressed)
    }

    /// The `Active` condition of every MultiKueue check.
    async fn sync_checks(&mut self, ctx: &mut Ctx<'_>) -> Result<bool, Error> {
        let now = ctx.options.clock.now();
        if self.retry_at.is_some_and(|at| at <= now) {
            self.retry_at = None;
            self.checks_dirty = true;
        }
        if !std::mem::take(&mut self.checks_dirty) {
            return Ok(false);
        }
        let mut progressed = false;
        let names: Vec<String> = self.setup.checks().map(str::to_owned).collect();
        for name in names {
            let Some(ac) = ctx.world.admission_checks.get(&name).cloned() else {
                continue;
            };
            let activity = active::activity(
                ac.spec.parameters.as_ref(),
                |config| self.configs.get(config).map(|c| c.spec.clusters.as_slice()),
                |cluster| self.clusters.state_of(cluster),
            );
            match active::write(ctx, &ac, activity).await {
                Ok(wrote) => progressed |= wrote,
                Err(Error::Api(e)) => {
                    tracing::warn!(check = %name, error = %e, "AdmissionCheck status, retrying in 10s");
                    self.retry_at = Some(now.checked_add(RETRY_AFTER_ERROR).unwrap_or(now));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(progressed)
    }
}

impl AdmissionCheckController for Controller {
    fn watches(&self, client: &Client) -> Vec<Watch> {
        let mut watches = vec![watch::<MultiKueueConfig>(client, Default::default())];
        watches.extend(self.clusters.watches(client));
        watches
    }

    fn apply(&mut self, _world: &World, event: AnyEvent) {
        let event = match take(&mut self.configs, event) {
            Ok(changes) => {
                self.checks_dirty |= !changes.is_empty();
                return;
            }
            Err(event) => event,
        };
        if self
            .clusters
            .apply(event, &mut self.workers, &mut self.workloads)
            .is_err()
        {
            tracing::error!("the MultiKueue check got an event of a kind it does not watch");
        }
    }

    fn workload_changed(&mut self, world: &World, old: Option<&Workload>, new: Option<&Workload>) {
        self.workloads.workload_changed(world, old, new);
    }

    fn workload_due(&mut self, key: &Key) {
        self.workloads.workload_due(key);
    }

    fn admission_check_changed(
        &mut self,
        _world: &World,
        old: Option<&AdmissionCheck>,
        new: Option<&AdmissionCheck>,
    ) {
        let ours = |ac: Option<&AdmissionCheck>| {
            ac.is_some_and(|ac| ac.spec.controller_name == controller_name::MULTIKUEUE)
        };
        // Old or new: a check that changes hands leaves the table of checks.
        if ours(old) || ours(new) {
            self.checks_dirty = true;
        }
    }

    fn run<'a, 'w: 'a>(&'a mut self, ctx: &'a mut Ctx<'w>) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(self.pass(ctx))
    }

    fn next_wake(&self) -> Option<Timestamp> {
        [
            self.clusters.next_wake(),
            self.retry_at,
            self.workloads.next_wake(),
            self.gc.next_wake(),
        ]
        .into_iter()
        .flatten()
        .min()
    }
}
