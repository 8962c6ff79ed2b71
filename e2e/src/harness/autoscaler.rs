//! The fake Cluster Autoscaler as a component, on the world's clock.

use futures::future::BoxFuture;
use serde_json::Value;

use crate::env::{Component, ComponentContext};

/// The fake autoscaler with its configuration.
pub struct AutoscalerComponent {
    config: fake_autoscaler::Config,
}

impl AutoscalerComponent {
    pub fn new(config: fake_autoscaler::Config) -> Self {
        AutoscalerComponent { config }
    }

    /// From a scenario's `components.fake-autoscaler`: the fake autoscaler's configuration
    /// (`nodeGroups`, `classes`, `scripts`, `timing`, `broken`), or `{}` for the upstream classes.
    pub fn from_value(value: &Value) -> Result<Self, String> {
        fake_autoscaler::Config::from_value(value)
            .map(Self::new)
            .map_err(|e| e.to_string())
    }
}

impl Component for AutoscalerComponent {
    fn name(&self) -> &str {
        "fake-autoscaler"
    }

    fn run(&self, ctx: ComponentContext) -> BoxFuture<'static, Result<(), String>> {
        let autoscaler = fake_autoscaler::Autoscaler::new(self.config.clone());
        let clock = controller::Clock::anchored(ctx.start_wall, ctx.start);
        Box::pin(async move {
            fake_autoscaler::run(ctx.client, autoscaler, clock)
                .await
                .map_err(|e| e.to_string())
        })
    }
}
