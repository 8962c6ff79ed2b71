//! `advance`: let time pass (virtual time on the embedded cluster).

use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;

use super::{Check, OpResult, Operation};
use crate::scenario::check::Checker;
use crate::scenario::context::Context;
use crate::scenario::duration::{VirtualDuration, format_duration};

#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct Advance(pub VirtualDuration);

impl Check for Advance {
    type Checked = Self;
    fn check(self, _: &Checker<'_>) -> Result<Self, String> {
        Ok(self)
    }
}

impl Operation for Advance {
    fn verb(&self) -> &'static str {
        "advance"
    }

    fn describe(&self) -> String {
        format!("advance {}", format_duration(self.0.0))
    }

    fn run<'a>(&'a self, _: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        Box::pin(async move {
            tokio::time::sleep(self.0.0).await;
            Ok(())
        })
    }

    fn wait(&self) -> Option<(&'static str, Duration)> {
        Some(("advances", self.0.0))
    }
}
