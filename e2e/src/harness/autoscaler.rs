//! The fake Cluster Autoscaler as a component, on the world's clock.

use futures::future::BoxFuture;
use serde_json::Value;

use crate::env::{Component, ComponentContext};

/// The fake autoscaler with its configuration.
pub struct AutoscalerComponent {
    config: fake_autoscaler::Config,
    /// Its node groups' scale-ups in flight: the cloud's, so they survive a restart.
    cloud: fake_autoscaler::Cloud,
}

impl AutoscalerComponent {
    pub fn new(config: fake_autoscaler::Config) -> Self {
        AutoscalerComponent {
            config,
            cloud: fake_autoscaler::Cloud::default(),
        }
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
        let autoscaler =
            fake_autoscaler::Autoscaler::with_cloud(self.config.clone(), self.cloud.clone());
        let clock = controller::Clock::anchored(ctx.start_wall, ctx.start);
        Box::pin(async move {
            fake_autoscaler::run(ctx.client, autoscaler, clock)
                .await
                .map_err(|e| e.to_string())
        })
    }
}
