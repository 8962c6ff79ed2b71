//! The subresources and virtual kinds that are more than a view of the stored object: pod binding,
//! eviction, ephemeral containers and the streaming subresources' refusals (`pods`), certificate
//! approval (`csr`), service account tokens and TokenReview (`tokens`), the RBAC objects as
//! authorization reads them (`rbac`), and what a fresh cluster holds (`bootstrap`).

mod bootstrap;
mod csr;
mod pods;
mod rbac;
mod tokens;

pub use csr::CsrWrite;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};

/// What these need to keep in the store.
pub struct Extras {
    tokens: tokens::Tokens,
    /// The uids of what the server makes by itself (bootstrap objects, root CA ConfigMaps, token
    /// ids) come from their own generator, so that the uids (and the names derived from them,
    /// like Kueue's Workload names) of a client's objects stay what a seed always gave.
    rng: ChaCha8Rng,
}

impl Extras {
    pub fn new(seed: u64) -> Self {
        Extras {
            tokens: tokens::Tokens::default(),
            rng: ChaCha8Rng::seed_from_u64(seed ^ 0xb007_57a9),
        }
    }
}

impl crate::store::Store {
    /// Run `f` with the server's own uid generator in place of the clients'.
    fn with_own_uids<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        std::mem::swap(&mut self.rng, &mut self.extras.rng);
        let out = f(self);
        std::mem::swap(&mut self.rng, &mut self.extras.rng);
        out
    }

    fn own_uid(&mut self) -> String {
        self.with_own_uids(|s| s.new_uid())
    }
}

/// A fieldsV1 tree of the fields `v` sets: maps are walked, anything else is a leaf.
fn fields_v1(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (format!("f:{k}"), fields_v1(v)))
                .collect::<Map<String, Value>>(),
        ),
        _ => json!({}),
    }
}

/// The managedFields entry kube-apiserver puts on the answer to a create on a subresource that
/// stores nothing (TokenRequest, TokenReview).
fn answer_managed_fields(
    manager: &str,
    api_version: &str,
    now: &str,
    body: &Value,
    subresource: Option<&str>,
) -> Value {
    let mut fields = Map::new();
    if let Some(spec) = body.get("spec").filter(|s| s.is_object()) {
        fields.insert("f:spec".into(), fields_v1(spec));
    }
    let mut entry = json!({
        "manager": manager,
        "operation": "Update",
        "apiVersion": api_version,
        "time": now,
        "fieldsType": "FieldsV1",
        "fieldsV1": Value::Object(fields),
    });
    if let Some(sub) = subresource {
        entry["subresource"] = json!(sub);
    }
    json!([entry])
}
