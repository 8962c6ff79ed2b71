//! The scenario file format, as serde types. Unknown fields are errors, so a typo is reported at
//! its line instead of being ignored. Checks that serde cannot express (exactly one action per
//! step, objects that name their kind) live in `load`.

use std::collections::BTreeMap;

use fake_apiserver::Verb;
use serde::Deserialize;
use serde_json::Value;
use serde_saphyr::Spanned;

use super::duration::VirtualDuration;

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
/// of one. Exactly one action is set; `load` checks that and that blocks do not nest.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawStep {
    pub name: Option<String>,
    #[serde(rename = "try")]
    pub try_: Option<Vec<Spanned<RawStep>>>,
    /// Run when the `try` block fails: what to collect for the report.
    pub catch: Option<Vec<Spanned<RawStep>>>,
    /// Run after the `try` block whatever happened: what to clean up.
    pub finally: Option<Vec<Spanned<RawStep>>>,
    pub apply: Option<Write>,
    pub create: Option<Write>,
    pub update: Option<Write>,
    pub patch: Option<Patch>,
    pub delete: Option<Delete>,
    pub assert: Option<Assert>,
    pub error: Option<ExpectError>,
    pub absent: Option<Absent>,
    pub advance: Option<VirtualDuration>,
    pub fault: Option<Fault>,
    pub events: Option<Events>,
    pub dump: Option<Dump>,
    pub watch: Option<Watch>,
    pub stop: Option<String>,
    pub start: Option<String>,
    pub restart: Option<String>,
}

/// `apply` (server-side apply), `create` (POST) and `update` (PUT).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Write {
    pub object: Option<Value>,
    pub objects: Option<Vec<Value>>,
    pub file: Option<String>,
    /// `status` writes the status subresource, as the controller owning it would.
    pub subresource: Option<Subresource>,
    /// The field manager to write as. Default: `tollgate-scenario`.
    pub field_manager: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Subresource {
    Status,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Patch {
    /// The object to patch (its apiVersion, kind and metadata name it). For merge and strategic
    /// patches it is also the patch body.
    pub object: Option<Value>,
    pub objects: Option<Vec<Value>>,
    pub file: Option<String>,
    #[serde(rename = "type", default)]
    pub patch_type: PatchType,
    /// The operations of a JSON patch (`type: json`).
    pub ops: Option<Vec<Value>>,
    pub subresource: Option<Subresource>,
    pub field_manager: Option<String>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PatchType {
    #[default]
    Merge,
    Strategic,
    Json,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Delete {
    pub object: Option<Value>,
    pub objects: Option<Vec<Value>>,
    pub file: Option<String>,
    pub propagation_policy: Option<PropagationPolicy>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum PropagationPolicy {
    Background,
    Foreground,
    Orphan,
}

/// Objects that must exist and match (every field given must be equal; lists by position, or by
/// key where `listKeys` or the `conditions` convention say so), within `timeout` of virtual time.
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

/// A write that the API server must refuse.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectError {
    pub apply: Option<Write>,
    pub create: Option<Write>,
    pub update: Option<Write>,
    pub patch: Option<Patch>,
    pub delete: Option<Delete>,
    /// The HTTP status code, e.g. 422.
    pub code: Option<u16>,
    /// The Status reason, e.g. `Invalid`.
    pub reason: Option<String>,
    /// A substring of the Status message.
    pub message: Option<String>,
}

/// Objects that must not exist: gone within `timeout`, or, with `consistently`, absent now and
/// for that long.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Absent {
    pub object: Option<Value>,
    pub objects: Option<Vec<Value>>,
    pub file: Option<String>,
    pub timeout: Option<VirtualDuration>,
    pub consistently: Option<VirtualDuration>,
}

/// A fault on the API server (embedded clusters only).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum Fault {
    /// Answer matching requests with an error.
    Fail(FailFault),
    /// Hold matching requests before serving them.
    Delay(DelayFault),
    /// Close every open watch; clients must resume.
    CloseWatches,
    /// Refuse every request for this long.
    Partition(VirtualDuration),
    /// End a partition now.
    Heal,
    /// Remove every injected rule.
    Clear,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FailFault {
    pub code: u16,
    pub verb: Option<Verb>,
    pub resource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// Only the first this many matching requests.
    pub times: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DelayFault {
    #[serde(rename = "for")]
    pub duration: VirtualDuration,
    pub verb: Option<Verb>,
    pub resource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub times: Option<u32>,
}

/// Kubernetes Events that must have been recorded, within `timeout`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Events {
    pub expect: Vec<ExpectedEvent>,
    pub timeout: Option<VirtualDuration>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectedEvent {
    #[serde(rename = "type")]
    pub event_type: Option<String>,
    pub reason: Option<String>,
    /// A substring of the note (events.k8s.io) or message (core/v1).
    pub message: Option<String>,
    /// The object the Event is about: any of kind, name, namespace.
    pub regarding: Option<Regarding>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Regarding {
    pub kind: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
}

/// Put objects of a kind into the report (for `catch`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Dump {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

/// Start a watch, as a controller would; the trace ends with everything it saw.
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
