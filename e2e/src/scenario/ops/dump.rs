//! `dump`: put objects of a kind into the failure report (in a `catch` block).

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use super::{Check, OpResult, Operation};
use crate::scenario::check::Checker;
use crate::scenario::context::{Context, kind_probe, to_yaml, without_noise};

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Dump {
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl Check for Dump {
    type Checked = Self;
    fn check(self, _: &Checker<'_>) -> Result<Self, String> {
        Ok(self)
    }
}

impl Operation for Dump {
    fn verb(&self) -> &'static str {
        "dump"
    }

    fn describe(&self) -> String {
        format!("dump {}", self.kind)
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        Box::pin(async move { self.dump(cx).await.map(|_| ()) })
    }

    fn collect<'a>(
        &'a self,
        cx: &'a mut Context<'_>,
    ) -> BoxFuture<'a, Option<Result<String, String>>> {
        Box::pin(async move { Some(self.dump(cx).await) })
    }
}

impl Dump {
    /// The objects it names, as YAML.
    async fn dump(&self, cx: &mut Context<'_>) -> Result<String, String> {
        let mut probe = kind_probe(&self.api_version, &self.kind);
        if let Some(ns) = &self.namespace {
            probe["metadata"]["namespace"] = Value::String(ns.clone());
        }
        if let Some(name) = &self.name {
            probe["metadata"]["name"] = Value::String(name.clone());
        }
        let (_, objects) = cx.find(&probe).await?;
        if objects.is_empty() {
            return Ok(format!("{} {}: none", self.api_version, self.kind));
        }
        Ok(objects
            .iter()
            .map(|o| to_yaml(&without_noise(o)))
            .collect::<Vec<_>>()
            .join("---\n"))
    }
}
