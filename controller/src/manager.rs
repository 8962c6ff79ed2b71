//! The controller's loop: watch every kind it needs, keep the [`World`] current, and after each
//! batch of changes run the reconcilers over what changed, in a fixed order:
//! jobs, workloads, the scheduler, the admission checks, then queue status.
//!
//! One task does everything, so decisions never race each other; each write's response is
//! applied at once, so the next decision sees it. Under a paused tokio runtime (embedded worlds)
//! the whole loop runs on virtual time and two runs make the same writes in the same order.

use std::pin::Pin;

use futures::stream::{self, BoxStream};
use futures::{FutureExt, StreamExt};
use kube::Client;

use crate::admissionchecks;
use crate::reconcile::{self, Checks, Reconciler};
use crate::state::World;
use crate::watch::{Delivery, Watch};
use crate::writer::Writer;

pub use crate::error::Error;
pub use crate::options::Options;

/// Whose watch an event comes from.
#[derive(Clone, Copy)]
pub(crate) enum Owner {
    Core,
    Check(usize),
}

/// The core's watches, then each admission check's, each with who asked for it. Nothing is
/// requested until the streams are polled.
pub(crate) fn watches(client: &Client, checks: &Checks) -> Vec<(Owner, Watch)> {
    let core = reconcile::watches(client)
        .into_iter()
        .map(|w| (Owner::Core, w));
    let of_checks = checks.iter().enumerate().flat_map(|(i, check)| {
        check
            .watches(client)
            .into_iter()
            .map(move |w| (Owner::Check(i), w))
    });
    core.chain(of_checks).collect()
}

/// The pause after a pass that failed, doubled with each failure in a row (up to 32 times).
const FAILED_PASS_BACKOFF: std::time::Duration = std::time::Duration::from_millis(500);

/// Runs the controller until its task is dropped or a watch ends.
pub async fn run(client: Client, options: Options) -> Result<(), Error> {
    let mut checks = admissionchecks::registered(&options);
    // Every watch's events, tagged with who asked for them and which watch it was.
    let streams: Vec<BoxStream<'static, (Owner, usize, Delivery)>> = watches(&client, &checks)
        .into_iter()
        .enumerate()
        .map(|(index, (owner, w))| {
            tracing::debug!(group = %w.group, resource = %w.resource, "watching");
            w.stream.map(move |d| (owner, index, d)).boxed()
        })
        .collect();
    let mut synced = vec![false; streams.len()];
    let mut changes = stream::select_all(streams);
    let mut world = World::default();
    let mut reconciler = Reconciler::new(Writer::new(client, options.clock), options);
    let mut failed_passes = 0u32;
    // After a failed pass the next one runs at once, changes or not.
    let mut retry = false;
    loop {
        // Timers wait for every watch's first list: no pass runs before (below), so a due timer
        // would wake the loop again at once, and virtual time, which moves only when every task
        // waits, would stop, with it the backoff of the watch still listing.
        let synced_all = synced.iter().all(|s| *s);
        let wake = checks
            .iter()
            .filter_map(|c| c.next_wake())
            .chain(reconciler.next_wake())
            .min()
            .filter(|_| synced_all);
        let change = match wake {
            _ if std::mem::take(&mut retry) => None,
            Some(at) => {
                let deadline = reconciler.clock().instant_of(at);
                tokio::select! {
                    biased;
                    c = changes.next() => Some(c.ok_or(Error::WatchEnded)?),
                    _ = tokio::time::sleep_until(deadline) => None,
                }
            }
            None => Some(changes.next().await.ok_or(Error::WatchEnded)?),
        };
        let mut apply = |(owner, index, delivery): (Owner, usize, Delivery)| {
            synced[index] |= delivery.init_done;
            match owner {
                Owner::Core => reconciler.apply(&mut world, delivery.event),
                Owner::Check(i) => checks[i].apply(&world, delivery.event),
            }
        };
        if let Some(change) = change {
            apply(change);
        }
        // Take everything that has already arrived before deciding anything.
        while let Some(Some(change)) = Pin::new(&mut changes).next().now_or_never() {
            apply(change);
        }
        if synced.iter().all(|s| *s) {
            reconciler.timers_due();
            // A failed request (500, throttling, a dropped connection) is retried after a pause,
            // as Kueue requeues a failed reconcile; it does not end the controller.
            match reconciler.reconcile(&mut world, &mut checks).await {
                Ok(()) => failed_passes = 0,
                Err(Error::Api(e)) => {
                    failed_passes += 1;
                    let pause = FAILED_PASS_BACKOFF * 2u32.pow(failed_passes.min(5));
                    tracing::warn!(error = %e, ?pause, "a pass failed; retrying");
                    tokio::time::sleep(pause).await;
                    reconciler.resync(&world);
                    retry = true;
                }
                Err(e) => return Err(e),
            }
        }
    }
}
