//! Resource arithmetic for admission: Kubernetes quantities, a pod's effective requests, and Kueue's
//! resource exclusion and transformations (KEP-2937).
//!
//! Quantities are held exactly as [`Amount`]s (nano-units, no floating point) until they become
//! Kueue's scheduler units with [`to_units`]: milli-units for `cpu`, whole units for everything else,
//! rounded up. [`format_units`] and [`quantity`] turn units back into the strings Kueue writes in
//! status fields and messages.
//!
//! ```
//! use std::collections::BTreeMap;
//!
//! use api::config::{ResourceTransformation, Resources, TransformationStrategy};
//! use controller::resources::{Amount, Transformer, format_units, to_units};
//! use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
//!
//! let config = Resources {
//!     exclude_resource_prefixes: vec![],
//!     transformations: vec![ResourceTransformation {
//!         input: "nvidia.com/mig-1g.5gb".to_owned(),
//!         strategy: TransformationStrategy::Replace,
//!         multiply_by: None,
//!         outputs: BTreeMap::from([(
//!             "example.com/accelerator-memory".to_owned(),
//!             Quantity("5G".to_owned()),
//!         )]),
//!     }],
//! };
//! let transformer = Transformer::new(Some(&config)).unwrap();
//! let pod = BTreeMap::from([
//!     ("nvidia.com/mig-1g.5gb".to_owned(), Amount::parse("2").unwrap()),
//!     ("memory".to_owned(), Amount::parse("100G").unwrap()),
//! ]);
//! let counted = transformer.apply(&pod);
//! assert!(!counted.contains_key("nvidia.com/mig-1g.5gb"));
//! let memory = to_units("memory", &counted["memory"]);
//! assert_eq!(format_units("memory", memory), "97656250Ki");
//! let accelerator = "example.com/accelerator-memory";
//! let units = to_units(accelerator, &counted[accelerator]);
//! assert_eq!(format_units(accelerator, units), "10G");
//! ```

mod pod;
mod transform;

pub use pod::{PodSetRequests, podset_requests};
pub use support::pod::{pod_requests, requirement_matches, tolerates};
pub use support::quantity::{
    Amount, QuantityError, QuantityErrorKind, QuantityFieldError, Requests, add_requests,
    format_units, is_binary_resource, quantity, scale_requests, to_quantities, to_units,
};
pub use transform::Transformer;
