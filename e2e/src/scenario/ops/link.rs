//! `partition`, `heal` and `slow`: the network between the manager and one worker cluster
//! (embedded worlds only; see `harness::link`). The worker keeps running: its own components and
//! the scenario's steps on it still reach its API server. For faults of the worker's API server
//! itself, `fault` with `cluster: <worker>`.
//!
//! ```yaml
//! - partition: worker-1                              # connections refused until healed
//! - partition: {worker: worker-2, mode: hang, for: 20m}
//! - heal: worker-1
//! - slow: {worker: worker-1, latency: 2s}            # 0s: no delay
//! ```

use std::fmt;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::{Check, OpResult, Operation};
use crate::harness::Cut;
use crate::scenario::check::Checker;
use crate::scenario::context::Context;
use crate::scenario::duration::{VirtualDuration, format_duration};

/// `partition`: cut the manager off from a worker.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Partition {
    pub worker: String,
    /// `refuse` (default): connections refused; `hang`: no answer until healed.
    #[serde(default)]
    pub mode: Cut,
    /// How long; default: until `heal`.
    #[serde(rename = "for")]
    pub duration: Option<VirtualDuration>,
}

/// `partition: worker-1` is short for `partition: {worker: worker-1}`.
fn partition_of<'de, D: Deserializer<'de>>(d: D) -> Result<Partition, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Partition;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(
                "a worker's name, or a mapping with `worker`, `mode` (refuse or hang) and `for`",
            )
        }
        fn visit_str<E: de::Error>(self, worker: &str) -> Result<Partition, E> {
            Ok(Partition {
                worker: worker.to_string(),
                mode: Cut::default(),
                duration: None,
            })
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Partition, A::Error> {
            Partition::deserialize(de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_any(V)
}

/// What a step holds under `partition`.
#[derive(Debug, Clone)]
pub struct PartitionStep(pub Partition);

impl<'de> Deserialize<'de> for PartitionStep {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        partition_of(d).map(PartitionStep)
    }
}

/// `heal: worker-1`: end a cut of the manager's link to the worker.
#[derive(Debug, Clone, Deserialize)]
#[serde(transparent)]
pub struct Heal(pub String);

/// `slow: {worker: worker-1, latency: 2s}`: delay the manager's requests to the worker.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Slow {
    pub worker: String,
    pub latency: VirtualDuration,
}

impl Check for PartitionStep {
    type Checked = Partition;
    fn check(self, _: &Checker<'_>) -> Result<Partition, String> {
        Ok(self.0)
    }
}

impl Check for Heal {
    type Checked = Self;
    fn check(self, _: &Checker<'_>) -> Result<Self, String> {
        Ok(self)
    }
}

impl Check for Slow {
    type Checked = Self;
    fn check(self, _: &Checker<'_>) -> Result<Self, String> {
        Ok(self)
    }
}

impl Operation for Partition {
    fn verb(&self) -> &'static str {
        "partition"
    }

    fn describe(&self) -> String {
        let mode = match self.mode {
            Cut::Refuse => "refused",
            Cut::Hang => "hanging",
        };
        match self.duration {
            Some(d) => format!(
                "partition {} ({mode} for {})",
                self.worker,
                format_duration(d.0)
            ),
            None => format!("partition {} ({mode})", self.worker),
        }
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        let result = cx.env.link(&self.worker).map(|link| {
            link.partition(self.mode, self.duration.map(|d| d.0));
        });
        Box::pin(std::future::ready(result.map_err(|e| e.to_string())))
    }

    fn injects_faults(&self) -> bool {
        true
    }

    fn worker(&self) -> Option<&str> {
        Some(&self.worker)
    }
}

impl Operation for Heal {
    fn verb(&self) -> &'static str {
        "heal"
    }

    fn describe(&self) -> String {
        format!("heal {}", self.0)
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        let result = cx.env.link(&self.0).map(|link| link.heal());
        Box::pin(std::future::ready(result.map_err(|e| e.to_string())))
    }

    fn injects_faults(&self) -> bool {
        true
    }

    fn worker(&self) -> Option<&str> {
        Some(&self.0)
    }
}

impl Operation for Slow {
    fn verb(&self) -> &'static str {
        "slow"
    }

    fn describe(&self) -> String {
        format!(
            "slow {} ({} latency)",
            self.worker,
            format_duration(self.latency.0)
        )
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        let latency: Duration = self.latency.0;
        let result = cx
            .env
            .link(&self.worker)
            .map(|link| link.set_latency(latency));
        Box::pin(std::future::ready(result.map_err(|e| e.to_string())))
    }

    fn injects_faults(&self) -> bool {
        true
    }

    fn worker(&self) -> Option<&str> {
        Some(&self.worker)
    }
}
