//! `absent`: objects that must not exist: gone within `timeout`, or, with `consistently`,
//! absent now and for that long.

use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use super::{Check, OpResult, Operation, objects_label};
use crate::cluster::Changes;
use crate::scenario::check::{Checker, DEFAULT_TIMEOUT, NameRule};
use crate::scenario::context::Context;
use crate::scenario::duration::{VirtualDuration, format_duration};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Absent {
    pub object: Option<Value>,
    pub objects: Option<Vec<Value>>,
    pub file: Option<String>,
    pub timeout: Option<VirtualDuration>,
    pub consistently: Option<VirtualDuration>,
}

/// `absent`, checked.
#[derive(Debug, Clone)]
pub struct AbsentOp {
    pub objects: Vec<Value>,
    pub timeout: Duration,
    /// Absent now and for this long, instead of "gone within the timeout".
    pub consistently: Option<Duration>,
}

impl Check for Absent {
    type Checked = AbsentOp;

    fn check(self, cx: &Checker<'_>) -> Result<AbsentOp, String> {
        if self.timeout.is_some() && self.consistently.is_some() {
            return Err(
                "give `timeout` (gone within) or `consistently` (absent throughout), not both"
                    .into(),
            );
        }
        Ok(AbsentOp {
            objects: cx.objects(self.object, self.objects, self.file, NameRule::Optional)?,
            timeout: self.timeout.map_or(DEFAULT_TIMEOUT, |d| d.0),
            consistently: self.consistently.map(|d| d.0),
        })
    }
}

impl Operation for AbsentOp {
    fn verb(&self) -> &'static str {
        "absent"
    }

    fn describe(&self) -> String {
        format!("absent {}", objects_label(&self.objects))
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        Box::pin(self.absent(cx))
    }

    fn objects(&self) -> &[Value] {
        &self.objects
    }

    fn wait(&self) -> Option<(&'static str, Duration)> {
        Some(("waits", self.consistently.unwrap_or(self.timeout)))
    }
}

impl AbsentOp {
    async fn absent(&self, cx: &mut Context<'_>) -> OpResult {
        let (timeout, consistently) = (self.timeout, self.consistently);
        let window = consistently.unwrap_or(timeout);
        let deadline = tokio::time::Instant::now() + window;
        let start = tokio::time::Instant::now();
        let mut changes = Changes::new(cx.cluster.as_ref());
        // On real time, a named object deleted and made again (a new uid) between two looks is
        // gone: the cluster can do both before the next poll. Virtual time shows each change, and
        // objects matched by labels must all go.
        let named_uids_only = consistently.is_none() && !cx.cluster.virtual_time();
        let mut first: Option<Vec<String>> = None;
        loop {
            changes.mark();
            let mut found = Vec::new();
            for obj in &self.objects {
                let named = obj["metadata"]["name"].is_string();
                found.extend(
                    cx.present(obj)
                        .await?
                        .into_iter()
                        .map(|(label, uid)| (label, uid, named)),
                );
            }
            let first_uids =
                first.get_or_insert_with(|| found.iter().map(|(_, u, _)| u.clone()).collect());
            let present: Vec<String> = found
                .into_iter()
                .filter(|(_, uid, named)| !(named_uids_only && *named) || first_uids.contains(uid))
                .map(|(label, _, _)| label)
                .collect();
            let now = tokio::time::Instant::now();
            match (consistently.is_some(), present.is_empty()) {
                (false, true) => return Ok(()),
                (true, false) => {
                    return Err(format!(
                        "expected absent for {}, but after {} the cluster holds {}",
                        format_duration(window),
                        format_duration(now - start),
                        present.join(", ")
                    ));
                }
                (false, false) if now >= deadline => {
                    return Err(format!(
                        "still present after {}: {}",
                        format_duration(timeout),
                        present.join(", ")
                    ));
                }
                (true, true) if now >= deadline => return Ok(()),
                _ => changes.wait(deadline).await,
            }
        }
    }
}
