//! The scenario file format, as serde types. Unknown fields are errors, so a typo is reported at
//! its line instead of being ignored. Each operation's fields are defined with the operation, in
//! `ops`; a step reads them through `ops`' table. Checks that serde cannot express (exactly one
//! operation per step, objects that name their kind) live in `load` and in each operation's
//! `Check`.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};
use serde_json::Value;
use serde_saphyr::Spanned;

use super::ops::{self, RawOperation};

/// One scenario file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScenarioFile {
    /// Lower-case words joined by `-`; the snapshot is named after it.
    pub name: Spanned<String>,
    pub description: String,
    #[serde(default)]
    pub tags: Vec<String>,
    /// The components to start besides the API server, by name, each with its configuration.
    #[serde(default)]
    pub components: BTreeMap<String, Value>,
    /// Worker clusters (MultiKueue), by name: each its own API server and components. The
    /// scenario's own cluster is then the manager.
    #[serde(default)]
    pub workers: Option<Spanned<BTreeMap<String, WorkerFile>>>,
    /// Kinds the trace records (`Kind`, `group/version/Kind` or `v1/Kind`). Default: every kind
    /// the steps name.
    #[serde(default)]
    pub trace: Vec<Spanned<String>>,
    /// Namespace for namespaced objects that do not name one. Default: `default`.
    #[serde(default)]
    pub namespace: Option<String>,
    /// What only the embedded world gives, so that real backends skip the scenario with that
    /// reason. Waits longer than a real backend's bound and `fault` steps are found without it.
    #[serde(default)]
    pub needs: Vec<Need>,
    pub steps: Vec<Spanned<RawStep>>,
}

/// One worker cluster.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkerFile {
    /// Its components, as the scenario's `components`.
    #[serde(default)]
    pub components: BTreeMap<String, Value>,
}

/// Something only the embedded world has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Need {
    /// Exact timing: the scenario's outcome depends on when things happen, not only on order.
    VirtualTime,
    /// Fault injection on the API server.
    Faults,
}

/// A step, or one operation inside a step's `try`, `catch` or `finally`. A step is either a
/// `try` block (with optional `catch` and `finally`) or a single operation, shorthand for a `try`
/// of one. `load` checks that there is exactly one operation and that blocks do not nest.
/// `cluster` beside an operation runs it on that worker cluster (or on `manager`).
#[derive(Debug, Default)]
pub struct RawStep {
    pub name: Option<String>,
    pub cluster: Option<String>,
    pub try_: Option<Vec<Spanned<RawStep>>>,
    /// Run when the `try` block fails: what to collect for the report.
    pub catch: Option<Vec<Spanned<RawStep>>>,
    /// Run after the `try` block whatever happened: what to clean up.
    pub finally: Option<Vec<Spanned<RawStep>>>,
    /// The operations the step holds, in file order.
    pub operations: Vec<RawOperation>,
}

impl<'de> Deserialize<'de> for RawStep {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(StepVisitor)
    }
}

/// Reads a step's own fields, and each operation through `ops`' table.
struct StepVisitor;

impl<'de> Visitor<'de> for StepVisitor {
    type Value = RawStep;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a step: a mapping with `try` or one operation")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawStep, A::Error> {
        let mut step = RawStep::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "name" => set_once(&mut step.name, "name", &mut map)?,
                "cluster" => set_once(&mut step.cluster, "cluster", &mut map)?,
                "try" => set_once(&mut step.try_, "try", &mut map)?,
                "catch" => set_once(&mut step.catch, "catch", &mut map)?,
                "finally" => set_once(&mut step.finally, "finally", &mut map)?,
                other => match ops::read(other, &mut map)? {
                    Some(op) => step.operations.push(op),
                    None => return Err(de::Error::unknown_field(other, ops::STEP_FIELDS)),
                },
            }
        }
        Ok(step)
    }
}

fn set_once<'de, T: Deserialize<'de>, A: MapAccess<'de>>(
    slot: &mut Option<T>,
    field: &'static str,
    map: &mut A,
) -> Result<(), A::Error> {
    if slot.is_some() {
        return Err(de::Error::duplicate_field(field));
    }
    *slot = Some(map.next_value()?);
    Ok(())
}
