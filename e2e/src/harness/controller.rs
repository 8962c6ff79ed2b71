//! Tollgate's controller as a component, with the world's clock.

use std::sync::Arc;

use controller::admissionchecks::multikueue::connect::WorkerAccess;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::env::{Component, ComponentContext};

/// The controller with a Kueue Configuration.
pub struct ControllerComponent {
    name: String,
    config: api::config::Configuration,
    metrics: Arc<controller::metrics::Metrics>,
}

impl ControllerComponent {
    pub fn new(config: api::config::Configuration) -> Self {
        ControllerComponent {
            name: "controller".into(),
            config,
            metrics: Arc::new(controller::metrics::Metrics::new()),
        }
    }

    /// Under another name (two controllers, e.g. for leader election).
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.into();
        self
    }

    /// From a scenario's `components.controller`: `{}` or `{configuration: <Kueue Configuration>}`.
    pub fn from_value(value: &Value) -> Result<Self, String> {
        let config = match configuration_document(value) {
            None => api::config::Configuration::default(),
            Some(c) => {
                let text = serde_json::to_string(&c).map_err(|e| e.to_string())?;
                controller::config::parse(&text).map_err(|e| format!("configuration: {e}"))?
            }
        };
        if let Some(other) = value
            .as_object()
            .and_then(|m| m.keys().find(|k| k.as_str() != "configuration"))
        {
            return Err(format!("unknown field `{other}` (known: configuration)"));
        }
        Ok(Self::new(config))
    }

    /// The metrics this controller reports.
    pub fn metrics(&self) -> Arc<controller::metrics::Metrics> {
        self.metrics.clone()
    }
}

/// A scenario's `components.controller.configuration` as a whole Configuration document (the
/// apiVersion and kind filled in), as the controller binary reads it with `--config`.
pub fn configuration_document(component: &Value) -> Option<Value> {
    let mut c = component
        .get("configuration")
        .filter(|c| !c.is_null())?
        .clone();
    if let Some(map) = c.as_object_mut() {
        map.entry("apiVersion")
            .or_insert_with(|| api::config::API_VERSION.into());
        map.entry("kind")
            .or_insert_with(|| api::config::KIND.into());
    }
    Some(c)
}

impl Component for ControllerComponent {
    fn name(&self) -> &str {
        &self.name
    }

    fn run(&self, ctx: ComponentContext) -> BoxFuture<'static, Result<(), String>> {
        self.run_with_workers(ctx, WorkerAccess::default())
    }

    /// As a MultiKueue manager, the controller reaches its workers through `workers`.
    fn run_with_workers(
        &self,
        ctx: ComponentContext,
        workers: WorkerAccess,
    ) -> BoxFuture<'static, Result<(), String>> {
        let options = controller::Options {
            config: self.config.clone(),
            clock: controller::Clock::anchored(ctx.start_wall, ctx.start),
            metrics: self.metrics.clone(),
            workers,
        };
        Box::pin(async move {
            controller::manager::run(ctx.client, options)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn secrets_namespace(&self) -> Option<String> {
        Some(self.config.namespace.clone())
    }
}
