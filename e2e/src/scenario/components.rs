//! Which components a scenario's `components:` section can name, and how each is built from its
//! configuration. Later crates register theirs (the controller, the fake autoscaler).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::env::Component;

type Factory = Box<dyn Fn(&Value) -> Result<Arc<dyn Component>, String> + Send + Sync>;

/// Named component factories.
#[derive(Default)]
pub struct Registry {
    factories: BTreeMap<String, Factory>,
}

impl Registry {
    /// The components this workspace provides.
    pub fn standard() -> Self {
        let mut registry = Registry::default();
        registry.register("controller", |config| {
            crate::harness::ControllerComponent::from_value(config)
                .map(|c| Arc::new(c) as Arc<dyn Component>)
        });
        registry.register("fake-autoscaler", |config| {
            crate::harness::AutoscalerComponent::from_value(config)
                .map(|c| Arc::new(c) as Arc<dyn Component>)
        });
        registry.register("job-runner", |config| {
            crate::harness::JobRunner::from_value(config).map(|c| Arc::new(c) as Arc<dyn Component>)
        });
        registry
    }

    /// Make `name` available to scenarios; `factory` reads its configuration.
    pub fn register(
        &mut self,
        name: impl Into<String>,
        factory: impl Fn(&Value) -> Result<Arc<dyn Component>, String> + Send + Sync + 'static,
    ) -> &mut Self {
        self.factories.insert(name.into(), Box::new(factory));
        self
    }

    pub fn build(&self, name: &str, config: &Value) -> Result<Arc<dyn Component>, String> {
        let factory = self.factories.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.factories.keys().map(String::as_str).collect();
            format!(
                "unknown component `{name}` (known: {})",
                if known.is_empty() {
                    "none yet".to_string()
                } else {
                    known.join(", ")
                }
            )
        })?;
        factory(config)
    }
}
