//! The operations a scenario step may hold, in one table (`operations!` below): each key a
//! step may use maps to the type its value is read into. That type is checked at load
//! ([`Check`]) into an [`Operation`], which describes itself for reports and runs itself.
//!
//! Adding an operation is one module here, holding the type with its serde fields, its [`Check`]
//! and its [`Operation`], plus one line in the table. `model` reads steps through the table,
//! `load` checks them through [`Check`], and `run` runs them through [`Operation`]: none of them
//! names an operation.

pub mod absent;
pub mod advance;
pub mod assert;
pub mod component;
pub mod dump;
pub mod error;
pub mod events;
pub mod fault;
pub mod link;
pub mod watch;
pub mod write;

use std::fmt::Debug;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::de::MapAccess;
use serde_json::Value;

use super::check::Checker;
use super::context::Context;

/// Nothing, or why the operation failed.
pub type OpResult = Result<(), String>;

/// A checked operation, ready to run.
pub trait Operation: Debug + Send + Sync {
    /// The verb a failure report uses (`apply`, `assert`, ...).
    fn verb(&self) -> &'static str;

    /// One line naming the step in the trace, when the step has no name of its own.
    fn describe(&self) -> String;

    /// Run it against the cluster.
    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult>;

    /// In a `catch` block, what it collects for the failure report (`dump`), its error being
    /// collected as it is. `None` for the operations that run in `catch` as anywhere else.
    fn collect<'a>(
        &'a self,
        _cx: &'a mut Context<'_>,
    ) -> BoxFuture<'a, Option<Result<String, String>>> {
        Box::pin(std::future::ready(None))
    }

    /// The objects it names: the trace records their kinds unless the scenario says which.
    fn objects(&self) -> &[Value] {
        &[]
    }

    /// The objects it writes: real backends delete them after the scenario.
    fn written(&self) -> &[Value] {
        &[]
    }

    /// The longest it may wait, with the verb a report uses (`waits`, `advances`): a real
    /// cluster only waits so long.
    fn wait(&self) -> Option<(&'static str, Duration)> {
        None
    }

    /// Whether it injects faults, which only the embedded API server can.
    fn injects_faults(&self) -> bool {
        false
    }

    /// The worker whose link from the manager it acts on (`partition`, `heal`, `slow`): such an
    /// operation names its worker itself instead of running on a `cluster`.
    fn worker(&self) -> Option<&str> {
        None
    }
}

/// An operation as the file writes it, checked at load into an [`Operation`].
pub trait Check: Debug + Send + Sync + 'static {
    type Checked: Operation + 'static;

    /// The error names the field (`objects[0]: ...`); `load` puts the file, line, step and
    /// operation in front.
    fn check(self, cx: &Checker<'_>) -> Result<Self::Checked, String>;
}

/// [`Check`] for an operation of any type, as a step holds it before `load` checks it.
pub trait Unchecked: Debug + Send + Sync {
    fn check(self: Box<Self>, cx: &Checker<'_>) -> Result<Box<dyn Operation>, String>;
}

impl<T: Check> Unchecked for T {
    fn check(self: Box<Self>, cx: &Checker<'_>) -> Result<Box<dyn Operation>, String> {
        Ok(Box::new(Check::check(*self, cx)?))
    }
}

/// One operation read from a step: its key, and its fields not yet checked.
#[derive(Debug)]
pub struct RawOperation {
    pub key: &'static str,
    pub fields: Box<dyn Unchecked>,
}

/// The table: each operation's key and the type its value is read into.
macro_rules! operations {
    ($($key:literal => $fields:ty,)*) => {
        /// Every operation's key, in the table's order.
        pub const KEYS: &[&str] = &[$($key),*];

        /// Every field a step may hold.
        pub const STEP_FIELDS: &[&str] = &["name", "cluster", "try", "catch", "finally", $($key),*];

        /// Reads the value of the step field `key` if `key` names an operation.
        pub fn read<'de, A: MapAccess<'de>>(
            key: &str,
            map: &mut A,
        ) -> Result<Option<RawOperation>, A::Error> {
            let (key, fields): (&'static str, Box<dyn Unchecked>) = match key {
                $($key => ($key, Box::new(map.next_value::<$fields>()?)),)*
                _ => return Ok(None),
            };
            Ok(Some(RawOperation { key, fields }))
        }
    };
}

operations! {
    "apply" => write::Apply,
    "create" => write::Create,
    "update" => write::Update,
    "patch" => write::Patch,
    "delete" => write::Delete,
    "assert" => assert::Assert,
    "error" => error::ExpectError,
    "absent" => absent::Absent,
    "advance" => advance::Advance,
    "fault" => fault::Fault,
    "events" => events::Events,
    "dump" => dump::Dump,
    "watch" => watch::Watch,
    "stop" => component::Stop,
    "start" => component::Start,
    "restart" => component::Restart,
    "partition" => link::PartitionStep,
    "heal" => link::Heal,
    "slow" => link::Slow,
}

/// The objects of an operation for a step label: `Kind ns/a, Kind ns/b`.
fn objects_label(objects: &[Value]) -> String {
    objects
        .iter()
        .map(super::naming::object_label)
        .collect::<Vec<_>>()
        .join(", ")
}
