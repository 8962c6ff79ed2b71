//! Whether one of the options' pods could run on a Node: the suite's own judgement.
//!
//! It is written apart from the fake autoscaler's scheduling simulation on purpose: the suite
//! judges the reference classes too, and a bug shared by the judge and the judged would hide
//! itself. It is deliberately simple and reads a Node as the class made it:
//! - the pod's `nodeSelector` and required node affinity against the Node's labels (and name);
//! - the Node's `NoSchedule` and `NoExecute` taints against the pod's tolerations, except the
//!   ones Kubernetes itself puts on a Node while it starts or ails (`node.kubernetes.io/...`,
//!   `node.cloudprovider.kubernetes.io/uninitialized`): they pass, and say nothing about which
//!   pods the Node was made for;
//! - the pod's requests (a limit stands in for a missing request; init containers run one at a
//!   time) against the Node's allocatable resources (its capacity when it reports none), whatever
//!   already runs there. Cordoning is not looked at.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, Node, NodeSelectorRequirement, NodeSelectorTerm, PodSpec, Taint, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// What one pod needs of a Node.
#[derive(Clone, Debug)]
pub struct PodNeeds {
    requests: BTreeMap<String, f64>,
    node_selector: BTreeMap<String, String>,
    required_terms: Option<Vec<NodeSelectorTerm>>,
    tolerations: Vec<Toleration>,
}

impl PodNeeds {
    /// Reads a pod spec; an error names a request that is not a quantity.
    pub fn of(spec: &PodSpec) -> Result<PodNeeds, String> {
        let mut requests = sum_of(&spec.containers)?;
        for init in spec.init_containers.iter().flatten() {
            for (name, amount) in sum_of(std::slice::from_ref(init))? {
                let slot = requests.entry(name).or_insert(0.0);
                *slot = slot.max(amount);
            }
        }
        // Every pod takes one of the Node's pod slots.
        requests.insert("pods".into(), 1.0);
        Ok(PodNeeds {
            requests,
            node_selector: spec.node_selector.clone().unwrap_or_default(),
            required_terms: spec
                .affinity
                .as_ref()
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .as_ref()
                })
                .map(|s| s.node_selector_terms.clone()),
            tolerations: spec.tolerations.clone().unwrap_or_default(),
        })
    }

    /// Whether the pod could run on `node` if nothing else ran there.
    pub fn could_run_on(&self, node: &Node) -> bool {
        self.selected_by(node) && self.tolerates(node) && self.has_room_on(node)
    }

    fn selected_by(&self, node: &Node) -> bool {
        let labels = node.metadata.labels.clone().unwrap_or_default();
        let selected = self
            .node_selector
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v));
        let name = node.metadata.name.as_deref().unwrap_or_default();
        // Terms are ORed; a term with no requirement selects nothing, as in Kubernetes.
        let affine = self.required_terms.as_ref().is_none_or(|terms| {
            terms.iter().any(|term| {
                let expressions = term.match_expressions.as_deref().unwrap_or_default();
                let fields = term.match_fields.as_deref().unwrap_or_default();
                !(expressions.is_empty() && fields.is_empty())
                    && expressions
                        .iter()
                        .all(|r| requirement_holds(r, labels.get(&r.key).map(String::as_str)))
                    && fields
                        .iter()
                        .all(|r| r.key == "metadata.name" && requirement_holds(r, Some(name)))
            })
        });
        selected && affine
    }

    fn tolerates(&self, node: &Node) -> bool {
        let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref());
        taints.unwrap_or_default().iter().all(|taint| {
            !matches!(taint.effect.as_str(), "NoSchedule" | "NoExecute")
                || set_by_kubernetes(taint)
                || self.tolerations.iter().any(|t| tolerated(t, taint))
        })
    }

    fn has_room_on(&self, node: &Node) -> bool {
        let status = node.status.as_ref();
        let resources = status
            .and_then(|s| s.allocatable.as_ref())
            .or_else(|| status.and_then(|s| s.capacity.as_ref()));
        self.requests.iter().all(|(name, wanted)| {
            let have = resources
                .and_then(|r| r.get(name))
                .and_then(|q| quantity(&q.0))
                .unwrap_or(0.0);
            *wanted <= 0.0 || at_least(have, *wanted)
        })
    }
}

/// The containers' requests added up, each limit standing in for its missing request.
fn sum_of(containers: &[Container]) -> Result<BTreeMap<String, f64>, String> {
    let mut total = BTreeMap::new();
    for container in containers {
        let resources = container.resources.as_ref();
        let mut wanted: BTreeMap<&String, &Quantity> = resources
            .and_then(|r| r.limits.as_ref())
            .into_iter()
            .flatten()
            .collect();
        wanted.extend(
            resources
                .and_then(|r| r.requests.as_ref())
                .into_iter()
                .flatten(),
        );
        for (name, q) in wanted {
            let amount = quantity(&q.0).ok_or_else(|| {
                format!(
                    "container {}: {name}: {:?} is not a quantity",
                    container.name, q.0
                )
            })?;
            *total.entry(name.clone()).or_insert(0.0) += amount;
        }
    }
    Ok(total)
}

fn requirement_holds(r: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = r.values.as_deref().unwrap_or_default();
    let number = |s: &str| s.parse::<i64>().ok();
    let compare = |keep: fn(i64, i64) -> bool| match (value.and_then(number), values.first()) {
        (Some(have), Some(bound)) => number(bound).is_some_and(|bound| keep(have, bound)),
        _ => false,
    };
    match r.operator.as_str() {
        "In" => value.is_some_and(|v| values.iter().any(|w| w == v)),
        "NotIn" => value.is_none_or(|v| values.iter().all(|w| w != v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" => compare(|have, bound| have > bound),
        "Lt" => compare(|have, bound| have < bound),
        _ => false,
    }
}

fn set_by_kubernetes(taint: &Taint) -> bool {
    taint.key.starts_with("node.kubernetes.io/")
        || taint.key == "node.cloudprovider.kubernetes.io/uninitialized"
}

fn tolerated(t: &Toleration, taint: &Taint) -> bool {
    let effect = t.effect.as_deref().unwrap_or_default();
    let key = t.key.as_deref().unwrap_or_default();
    let effect_matches = effect.is_empty() || effect == taint.effect;
    match t.operator.as_deref().unwrap_or("Equal") {
        // An empty key with Exists tolerates every taint.
        "Exists" => effect_matches && (key.is_empty() || key == taint.key),
        "Equal" => {
            effect_matches
                && key == taint.key
                && t.value.as_deref().unwrap_or_default()
                    == taint.value.as_deref().unwrap_or_default()
        }
        _ => false,
    }
}

/// `have >= wanted`, forgiving the rounding of decimal fractions in binary.
fn at_least(have: f64, wanted: f64) -> bool {
    have >= wanted - wanted.abs() * 1e-9
}

/// A Kubernetes quantity as a number: decimal and binary suffixes, and decimal exponents.
fn quantity(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '+' | '-')))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let binary = |power: i32| Some(number * 1024f64.powi(power));
    match suffix {
        "" => Some(number),
        // Dividing keeps "3000m" exactly 3.
        "m" => Some(number / 1000.0),
        "k" => Some(number * 1e3),
        "M" => Some(number * 1e6),
        "G" => Some(number * 1e9),
        "T" => Some(number * 1e12),
        "P" => Some(number * 1e15),
        "E" => Some(number * 1e18),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        _ => {
            let exponent: i32 = suffix.strip_prefix(['e', 'E'])?.parse().ok()?;
            let scale = 10f64.powi(exponent.abs());
            Some(if exponent < 0 {
                number / scale
            } else {
                number * scale
            })
        }
    }
}

#[cfg(test)]
#[path = "fit_tests.rs"]
mod tests;
