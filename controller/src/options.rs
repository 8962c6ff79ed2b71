//! How the controller runs.

use std::sync::Arc;

use api::config::Configuration;

use crate::admissionchecks::multikueue::connect::WorkerAccess;
use crate::clock::Clock;
use crate::metrics::Metrics;

#[derive(Clone)]
pub struct Options {
    pub config: Configuration,
    pub clock: Clock,
    pub metrics: Arc<Metrics>,
    /// How MultiKueue reaches worker clusters.
    pub workers: WorkerAccess,
}
