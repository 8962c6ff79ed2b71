//! `stop`, `start` and `restart`: a component the scenario started, by name, on the manager or
//! on the worker the step's `cluster` names.

use futures::future::BoxFuture;
use serde::Deserialize;

use super::{Check, OpResult, Operation};
use crate::scenario::check::Checker;
use crate::scenario::context::Context;

/// `stop`: end the component's task or process.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct Stop(pub String);

/// `start`: start a stopped component again.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct Start(pub String);

/// `restart`: stop, then start.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct Restart(pub String);

impl Check for Stop {
    type Checked = Self;
    fn check(self, _: &Checker<'_>) -> Result<Self, String> {
        Ok(self)
    }
}

impl Check for Start {
    type Checked = Self;
    fn check(self, _: &Checker<'_>) -> Result<Self, String> {
        Ok(self)
    }
}

impl Check for Restart {
    type Checked = Self;
    fn check(self, _: &Checker<'_>) -> Result<Self, String> {
        Ok(self)
    }
}

impl Operation for Stop {
    fn verb(&self) -> &'static str {
        "stop"
    }

    fn describe(&self) -> String {
        format!("stop {}", self.0)
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        Box::pin(async move { cx.world()?.stop(&self.0).await.map_err(|e| e.to_string()) })
    }
}

impl Operation for Start {
    fn verb(&self) -> &'static str {
        "start"
    }

    fn describe(&self) -> String {
        format!("start {}", self.0)
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        Box::pin(async move { cx.world()?.start(&self.0).map_err(|e| e.to_string()) })
    }
}

impl Operation for Restart {
    fn verb(&self) -> &'static str {
        "restart"
    }

    fn describe(&self) -> String {
        format!("restart {}", self.0)
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        Box::pin(async move {
            cx.world()?
                .restart(&self.0)
                .await
                .map_err(|e| e.to_string())
        })
    }
}
