//! Which workers a workload is dispatched to: AllAtOnce, Incremental, External.
//!
//! The dispatcher only names workers (`status.nominatedClusterNames`); the workload controller
//! then keeps a copy on every nominated worker it can reach and none elsewhere
//! ([`copy_changes`]). As in Kueue:
//! - AllAtOnce (the default) nominates every connected worker of the check, sorted by name;
//! - Incremental nominates 3 more workers, sorted by name, every 5 minutes until one admits the
//!   workload or every worker of the check has been tried. A round's start is kept in memory,
//!   as Kueue's incremental dispatcher keeps it;
//! - any other name is an external dispatcher: only what someone else writes to
//!   `status.nominatedClusterNames` counts, and removing a name removes that copy.

use std::collections::BTreeSet;
use std::time::Duration;

use api::constants::dispatcher;
use jiff::Timestamp;

/// How long an Incremental round waits for an admission before nominating more workers.
pub const INCREMENTAL_ROUND: Duration = Duration::from_secs(5 * 60);
/// How many workers an Incremental round adds.
pub const INCREMENTAL_STEP: usize = 3;

/// The dispatcher named by the Configuration's `multiKueue.dispatcherName`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dispatcher {
    AllAtOnce,
    Incremental,
    /// Another controller writes the nominations.
    External,
}

impl Dispatcher {
    pub fn from_name(name: &str) -> Self {
        match name {
            "" | dispatcher::ALL_AT_ONCE => Dispatcher::AllAtOnce,
            dispatcher::INCREMENTAL => Dispatcher::Incremental,
            _ => Dispatcher::External,
        }
    }
}

/// What the nomination is decided from, for a workload whose check is Pending and that has no
/// `status.clusterName`.
#[derive(Debug, Clone)]
pub struct Facts<'a> {
    /// `status.nominatedClusterNames` as stored.
    pub nominated: &'a [String],
    /// The check's workers, in its MultiKueueConfig's order.
    pub clusters: &'a [String],
    /// Those of them that are connected.
    pub active: &'a BTreeSet<String>,
    /// Incremental: when the current round started, if this controller started one.
    pub round_start: Option<Timestamp>,
    pub now: Timestamp,
}

/// The dispatcher's decision.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Nomination {
    /// The workers that should hold a copy.
    pub nominated: Vec<String>,
    /// `status.nominatedClusterNames` to write, when it must change.
    pub write: Option<Vec<String>>,
    /// Incremental: a round starts now.
    pub round_started: bool,
    /// When to look again: the end of the current round.
    pub wake_at: Option<Timestamp>,
}

/// Nominates workers for one workload.
pub fn nominate(dispatcher: Dispatcher, facts: &Facts) -> Nomination {
    match dispatcher {
        Dispatcher::AllAtOnce => all_at_once(facts),
        Dispatcher::Incremental => incremental(facts),
        Dispatcher::External => Nomination {
            nominated: facts.nominated.to_vec(),
            ..Nomination::default()
        },
    }
}

fn all_at_once(facts: &Facts) -> Nomination {
    let connected: BTreeSet<&String> = facts
        .clusters
        .iter()
        .filter(|c| facts.active.contains(*c))
        .collect();
    let nominated: Vec<String> = connected.iter().map(|c| c.to_string()).collect();
    // Written only when the set changes, sorted so the stored list is stable.
    let stored: BTreeSet<&String> = facts.nominated.iter().collect();
    let write = (stored != connected).then(|| nominated.clone());
    Nomination {
        nominated,
        write,
        ..Nomination::default()
    }
}

fn incremental(facts: &Facts) -> Nomination {
    let current = facts.nominated.to_vec();
    // A round this controller does not remember (it restarted) is taken to start now, rather
    // than widening the nomination at once as Kueue does after a restart.
    let start = match facts.round_start {
        Some(start) => Some(start),
        None if !current.is_empty() => {
            return Nomination {
                nominated: current,
                round_started: true,
                wake_at: round_end(facts.now),
                ..Nomination::default()
            };
        }
        None => None,
    };
    if let Some(start) = start
        && let Some(end) = round_end(start)
        && facts.now < end
    {
        return Nomination {
            nominated: current,
            wake_at: Some(end),
            ..Nomination::default()
        };
    }
    let tried: BTreeSet<&String> = current.iter().collect();
    let untried: BTreeSet<&String> = facts
        .clusters
        .iter()
        .filter(|c| !tried.contains(c))
        .collect();
    if untried.is_empty() {
        // Every worker has been tried: the nomination stays as it is.
        return Nomination {
            nominated: current,
            ..Nomination::default()
        };
    }
    let mut nominated = current;
    nominated.extend(
        untried
            .into_iter()
            .take(INCREMENTAL_STEP)
            .map(|c| c.to_string()),
    );
    Nomination {
        write: Some(nominated.clone()),
        nominated,
        round_started: true,
        wake_at: round_end(facts.now),
    }
}

fn round_end(start: Timestamp) -> Option<Timestamp> {
    start.checked_add(INCREMENTAL_ROUND).ok()
}

/// Copies to create and to remove so that exactly the nominated, connected workers hold one.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CopyChanges {
    pub create: Vec<String>,
    pub remove: Vec<String>,
}

/// `holders`: the connected workers that hold a copy. Workers that are not connected are left
/// alone: nothing can be written to them (the garbage collector or a later pass cleans up).
pub fn copy_changes(
    nominated: &[String],
    holders: &BTreeSet<String>,
    active: &BTreeSet<String>,
) -> CopyChanges {
    let wanted: BTreeSet<&String> = nominated.iter().filter(|c| active.contains(*c)).collect();
    CopyChanges {
        create: wanted
            .iter()
            .filter(|c| !holders.contains(**c))
            .map(|c| c.to_string())
            .collect(),
        remove: holders
            .iter()
            .filter(|c| active.contains(*c) && !wanted.contains(c))
            .cloned()
            .collect(),
    }
}

#[cfg(test)]
#[path = "dispatch_tests.rs"]
mod tests;
