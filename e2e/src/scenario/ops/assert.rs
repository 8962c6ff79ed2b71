//! `assert`: objects that must exist and match (every field given must be equal; lists by
//! position, or by key where `listKeys` or the `conditions` convention say so), within `timeout`.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use super::{Check, OpResult, Operation, objects_label};
use crate::cluster::Changes;
use crate::json::{ListKeys, partial_match, render_diff};
use crate::scenario::check::{Checker, DEFAULT_TIMEOUT, NameRule};
use crate::scenario::context::{Context, to_yaml, without_noise};
use crate::scenario::duration::{VirtualDuration, format_duration};
use crate::scenario::naming::object_label;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Assert {
    pub object: Option<Value>,
    pub objects: Option<Vec<Value>>,
    pub file: Option<String>,
    pub timeout: Option<VirtualDuration>,
    /// Lists matched by key instead of position: field path (`spec.podSets`) -> key field.
    #[serde(default)]
    pub list_keys: BTreeMap<String, String>,
}

/// `assert`, checked.
#[derive(Debug, Clone)]
pub struct AssertOp {
    pub objects: Vec<Value>,
    pub timeout: Duration,
    pub list_keys: ListKeys,
}

impl Check for Assert {
    type Checked = AssertOp;

    fn check(self, cx: &Checker<'_>) -> Result<AssertOp, String> {
        Ok(AssertOp {
            objects: cx.objects(self.object, self.objects, self.file, NameRule::Optional)?,
            timeout: self.timeout.map_or(DEFAULT_TIMEOUT, |d| d.0),
            list_keys: self.list_keys,
        })
    }
}

impl Operation for AssertOp {
    fn verb(&self) -> &'static str {
        "assert"
    }

    fn describe(&self) -> String {
        format!("assert {}", objects_label(&self.objects))
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        Box::pin(self.assert(cx))
    }

    fn objects(&self) -> &[Value] {
        &self.objects
    }

    fn wait(&self) -> Option<(&'static str, Duration)> {
        Some(("waits", self.timeout))
    }
}

impl AssertOp {
    async fn assert(&self, cx: &mut Context<'_>) -> OpResult {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let mut changes = Changes::new(cx.cluster.as_ref());
        loop {
            changes.mark();
            let mut problems = Vec::new();
            for expected in &self.objects {
                if let Err(p) = matches(cx, expected, &self.list_keys).await {
                    problems.push(p);
                }
            }
            if problems.is_empty() {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(format!(
                    "not matched within {}:\n{}",
                    format_duration(self.timeout),
                    problems.join("\n")
                ));
            }
            changes.wait(deadline).await;
        }
    }
}

/// Whether an object matching `expected` exists; if not, what the cluster held instead.
async fn matches(cx: &mut Context<'_>, expected: &Value, keys: &ListKeys) -> Result<(), String> {
    let named = expected["metadata"]["name"].as_str().map(str::to_owned);
    let (mut expected, candidates) = cx.find(expected).await?;
    if cx.any_instant {
        drop_instants(&mut expected);
    }
    if candidates.is_empty() {
        // Named as the scenario named it (`find` takes a name pattern out of `expected`).
        let mut shown = expected.clone();
        if let Some(name) = &named {
            shown["metadata"]["name"] = Value::String(name.clone());
        }
        let label = object_label(&shown);
        return Err(match named {
            Some(_) => format!("{label}: not found"),
            None => format!("{label}: there are none"),
        });
    }
    // The closest candidate explains the failure best.
    let mut best: Option<(usize, &Value, Vec<String>)> = None;
    for actual in &candidates {
        let mismatches = partial_match(&expected, actual, keys);
        if mismatches.is_empty() {
            return Ok(());
        }
        if best.as_ref().is_none_or(|(n, ..)| mismatches.len() < *n) {
            let lines = mismatches.iter().map(|m| m.to_string()).collect();
            best = Some((mismatches.len(), actual, lines));
        }
    }
    let Some((_, actual, lines)) = best else {
        return Err(format!("{}: no candidates", object_label(&expected)));
    };
    let mut out = format!("{}:\n", object_label(actual));
    for l in lines {
        out.push_str(&format!("  {l}\n"));
    }
    out.push_str("  diff (- expected, + found):\n");
    for l in render_diff(&expected, actual, keys).lines() {
        out.push_str(&format!("    {l}\n"));
    }
    out.push_str("  the cluster held:\n");
    for l in to_yaml(&without_noise(actual)).lines() {
        out.push_str(&format!("    {l}\n"));
    }
    Err(out.trim_end().to_string())
}

/// Removes every field whose expected value is an instant (an RFC 3339 time), so that only what
/// happened is compared, not when ([`Context::any_instant`]).
fn drop_instants(expected: &mut Value) {
    match expected {
        Value::Object(map) => {
            map.retain(|_, v| !v.as_str().is_some_and(crate::json::is_instant));
            map.values_mut().for_each(drop_instants);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_instants),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn instants_are_dropped_at_any_depth_and_nothing_else() {
        let mut expected = json!({
            "metadata": {"name": "wl", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {
                "conditions": [{"type": "Evicted", "status": "True",
                                "lastTransitionTime": "2026-01-01T00:10:00Z"}],
                "requeueState": {"requeueAt": "2026-01-01T00:11:00Z", "count": 1},
                "message": "evicted at 2026-01-01T00:10:00Z",
            },
        });
        super::drop_instants(&mut expected);
        assert_eq!(
            expected,
            json!({
                "metadata": {"name": "wl"},
                "status": {
                    "conditions": [{"type": "Evicted", "status": "True"}],
                    "requeueState": {"count": 1},
                    "message": "evicted at 2026-01-01T00:10:00Z",
                },
            })
        );
    }
}
