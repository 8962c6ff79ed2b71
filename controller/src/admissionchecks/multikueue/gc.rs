//! The garbage collector: remote objects whose manager workload is gone.

use futures::future::BoxFuture;
use jiff::Timestamp;

use super::workers::Workers;
use crate::admissionchecks::Ctx;
use crate::error::Error;

#[derive(Default)]
pub struct Collector {}

impl Collector {
    pub fn run<'a>(
        &'a mut self,
        _ctx: &'a mut Ctx<'_>,
        _workers: &'a Workers,
    ) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(async { Ok(false) })
    }
    pub fn next_wake(&self) -> Option<Timestamp> {
        None
    }
}
