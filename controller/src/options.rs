//! How the controller runs.

use std::sync::Arc;

use api::config::Configuration;

use crate::clock::Clock;
use crate::metrics::Metrics;

#[derive(Clone)]
pub struct Options {
    pub config: Configuration,
    pub clock: Clock,
    pub metrics: Arc<Metrics>,
}
