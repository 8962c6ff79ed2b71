//! `fault`: a fault on the API server (embedded clusters only).

use futures::future::BoxFuture;
use serde::Deserialize;

use fake_apiserver::{FaultRule, Verb};

use super::{Check, OpResult, Operation};
use crate::cluster::COMPONENT_USER_AGENT;
use crate::scenario::check::Checker;
use crate::scenario::context::Context;
use crate::scenario::duration::{VirtualDuration, format_duration};

#[derive(Debug, Clone, Deserialize)]
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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FailFault {
    pub code: u16,
    pub verb: Option<Verb>,
    /// A plural (`jobs`), `plural.group`, or either with a subresource (`jobs/status`).
    pub resource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// Only this component's requests (`controller`, `fake-autoscaler`, `job-runner`).
    pub component: Option<String>,
    /// Only the first this many matching requests.
    pub times: Option<u32>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DelayFault {
    #[serde(rename = "for")]
    pub duration: VirtualDuration,
    pub verb: Option<Verb>,
    pub resource: Option<String>,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub component: Option<String>,
    pub times: Option<u32>,
}

impl Check for Fault {
    type Checked = Self;
    fn check(self, _: &Checker<'_>) -> Result<Self, String> {
        Ok(self)
    }
}

impl Operation for Fault {
    fn verb(&self) -> &'static str {
        "fault"
    }

    fn describe(&self) -> String {
        let what = match self {
            Fault::Fail(f) => format!("fail {}", f.code),
            Fault::Delay(d) => format!("delay {}", format_duration(d.duration.0)),
            Fault::CloseWatches => "closeWatches".into(),
            Fault::Partition(d) => format!("partition {}", format_duration(d.0)),
            Fault::Heal => "heal".into(),
            Fault::Clear => "clear".into(),
        };
        format!("fault {what}")
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        Box::pin(std::future::ready(self.inject(cx)))
    }

    fn injects_faults(&self) -> bool {
        true
    }
}

impl Fault {
    fn inject(&self, cx: &Context<'_>) -> OpResult {
        let faults = cx.cluster.faults().ok_or_else(|| {
            format!(
                "the {} backend cannot inject faults; run this scenario embedded",
                cx.cluster.backend()
            )
        })?;
        match self {
            Fault::Fail(f) => {
                faults.inject(target(
                    FaultRule::fail(f.code),
                    f.verb,
                    &f.resource,
                    &f.namespace,
                    &f.name,
                    &f.component,
                    f.times,
                ));
            }
            Fault::Delay(d) => {
                faults.inject(target(
                    FaultRule::delay(d.duration.0),
                    d.verb,
                    &d.resource,
                    &d.namespace,
                    &d.name,
                    &d.component,
                    d.times,
                ));
            }
            Fault::CloseWatches => faults.close_watches(),
            Fault::Partition(d) => faults.partition(d.0),
            Fault::Heal => faults.heal(),
            Fault::Clear => faults.clear(),
        }
        Ok(())
    }
}

/// The rule limited to the requests the fault names.
fn target(
    mut rule: FaultRule,
    verb: Option<Verb>,
    resource: &Option<String>,
    namespace: &Option<String>,
    name: &Option<String>,
    component: &Option<String>,
    times: Option<u32>,
) -> FaultRule {
    if let Some(v) = verb {
        rule = rule.verb(v);
    }
    if let Some(r) = resource {
        rule = rule.resource(r.clone());
    }
    if let Some(n) = namespace {
        rule = rule.namespace(n.clone());
    }
    if let Some(n) = name {
        rule = rule.name(n.clone());
    }
    if let Some(c) = component {
        rule = rule.user_agent(format!("{COMPONENT_USER_AGENT}{c}"));
    }
    if let Some(n) = times {
        rule = rule.times(n);
    }
    rule
}
