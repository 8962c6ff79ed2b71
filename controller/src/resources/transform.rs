//! Resource exclusion and transformation (KEP-2937): how a pod's requests become the resources Kueue
//! counts against quota.

use std::collections::BTreeMap;

use api::config::{Resources, TransformationStrategy};

use support::quantity::{Amount, QuantityFieldError};

/// The configured `resources.excludeResourcePrefixes` and `resources.transformations`, ready to
/// apply to a pod's requests. The default excludes and transforms nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Transformer {
    exclude_prefixes: Vec<String>,
    rules: BTreeMap<String, Rule>,
}

/// One transformation, keyed by its input in [`Transformer`].
#[derive(Clone, Debug, PartialEq)]
struct Rule {
    retain_input: bool,
    multiply_by: Option<String>,
    outputs: BTreeMap<String, Amount>,
}

impl Transformer {
    /// Reads the configuration's `resources` section; `None` gives the identity.
    ///
    /// Output quantities are parsed here, once, so a bad one stops the controller at start (as Go's
    /// configuration decoding would) rather than on every workload. When two transformations share an
    /// input, the later one wins, as in Kueue's map; configuration validation rejects that anyway.
    pub fn new(config: Option<&Resources>) -> Result<Transformer, QuantityFieldError> {
        let Some(config) = config else {
            return Ok(Transformer::default());
        };
        let mut rules = BTreeMap::new();
        for (index, transformation) in config.transformations.iter().enumerate() {
            let mut outputs = BTreeMap::new();
            for (name, quantity) in &transformation.outputs {
                let amount = Amount::from_quantity(quantity).map_err(|error| {
                    QuantityFieldError::new(
                        format!("resources.transformations[{index}].outputs[{name}]"),
                        error,
                    )
                })?;
                outputs.insert(name.clone(), amount);
            }
            rules.insert(
                transformation.input.clone(),
                Rule {
                    retain_input: transformation.strategy == TransformationStrategy::Retain,
                    // Kueue treats an empty name as "not set".
                    multiply_by: transformation
                        .multiply_by
                        .clone()
                        .filter(|name| !name.is_empty()),
                    outputs,
                },
            );
        }
        Ok(Transformer {
            exclude_prefixes: config.exclude_resource_prefixes.clone(),
            rules,
        })
    }

    /// Whether the resource matches an `excludeResourcePrefixes` entry and so is ignored for quota.
    pub fn is_excluded(&self, resource: &str) -> bool {
        self.exclude_prefixes
            .iter()
            .any(|prefix| resource.starts_with(prefix.as_str()))
    }

    /// A pod's requests as Kueue counts them, following Kueue's `dropExcludedResources` then
    /// `applyResourceTransformations`:
    ///
    /// 1. excluded resources are dropped first, so an excluded input is never transformed and an
    ///    excluded `multiplyBy` resource multiplies nothing;
    /// 2. each transformed input contributes `input × multiplyBy × factor` to every output, exactly;
    ///    the `multiplyBy` quantity is read from the requests after exclusion and before any
    ///    transformation (so it works even if that resource is itself replaced), and when the pod
    ///    does not request it the input is used unmultiplied;
    /// 3. Retain keeps the input at its requested quantity (never multiplied), Replace drops it;
    /// 4. what the transformations generate is summed per output and floored at zero on its own, so
    ///    a negative factor (an allowance) offsets other outputs but never a direct request;
    /// 5. the generated outputs are then added to the requests kept, summing names that collide.
    ///
    /// Values saturate at the `Amount` range instead of overflowing.
    pub fn apply(&self, pod: &BTreeMap<String, Amount>) -> BTreeMap<String, Amount> {
        let input: BTreeMap<&str, Amount> = pod
            .iter()
            .filter(|(name, _)| !self.is_excluded(name))
            .map(|(name, amount)| (name.as_str(), *amount))
            .collect();
        let mut kept: BTreeMap<String, Amount> = BTreeMap::new();
        let mut generated: BTreeMap<String, Amount> = BTreeMap::new();
        for (name, amount) in &input {
            let Some(rule) = self.rules.get(*name) else {
                kept.insert((*name).to_owned(), *amount);
                continue;
            };
            let base = match rule.multiply_by.as_deref().and_then(|m| input.get(m)) {
                Some(multiplier) => amount.saturating_mul(multiplier),
                None => *amount,
            };
            for (output, factor) in &rule.outputs {
                let slot = generated.entry(output.clone()).or_default();
                *slot = slot.saturating_add(&base.saturating_mul(factor));
            }
            if rule.retain_input {
                kept.insert((*name).to_owned(), *amount);
            }
        }
        for (name, amount) in generated {
            let slot = kept.entry(name).or_default();
            *slot = slot.saturating_add(&amount.clamp_non_negative());
        }
        kept
    }
}

#[cfg(test)]
#[path = "transform_tests.rs"]
mod tests;
