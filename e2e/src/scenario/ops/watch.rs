//! `watch`: start a watch, as a controller would; the trace ends with everything it saw (see
//! `scenario::watches`).

use futures::future::BoxFuture;
use serde::Deserialize;

use super::{Check, OpResult, Operation};
use crate::scenario::check::Checker;
use crate::scenario::context::Context;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Watch {
    /// Names the watch in the trace.
    pub name: String,
    pub api_version: String,
    pub kind: String,
    /// Watch one namespace; default: all.
    pub namespace: Option<String>,
}

impl Check for Watch {
    type Checked = Self;
    fn check(self, _: &Checker<'_>) -> Result<Self, String> {
        Ok(self)
    }
}

impl Operation for Watch {
    fn verb(&self) -> &'static str {
        "watch"
    }

    fn describe(&self) -> String {
        format!("watch {} {}", self.kind, self.name)
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        Box::pin(cx.start_watch(
            &self.name,
            &self.api_version,
            &self.kind,
            self.namespace.as_deref(),
        ))
    }
}
