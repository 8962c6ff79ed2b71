//! Pod updates: once created, a pod's spec only changes in the few fields kube-apiserver lets
//! an update touch (images, activeDeadlineSeconds, added tolerations, a negative grace period
//! set to 1, and, while scheduling gates hold it, the gates and its node constraints).

use serde_json::{Map, Value};

use crate::error::FieldCause;

/// kube-apiserver also prints a diff of its internal Go struct after this; the fake cannot
/// reproduce it byte for byte and stops at the rule.
const RULE: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// Fields that may change (or be left out of a body, as the server defaults them again).
const MUTABLE: &[&str] = &[
    "activeDeadlineSeconds",
    "tolerations",
    "terminationGracePeriodSeconds",
    "schedulingGates",
    "ephemeralContainers",
];
/// Fields the server defaults: a body that leaves them out means the same pod.
const DEFAULTED: &[&str] = &[
    "restartPolicy",
    "dnsPolicy",
    "schedulerName",
    "enableServiceLinks",
    "securityContext",
    "serviceAccountName",
    "serviceAccount",
    "priority",
    "preemptionPolicy",
    "nodeName",
];
const CONTAINER_DEFAULTED: &[&str] = &[
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "resources",
];

fn normalise(new: &mut Map<String, Value>, old: &mut Map<String, Value>, gated: bool) {
    for key in MUTABLE {
        new.remove(*key);
        old.remove(*key);
    }
    if gated {
        for key in ["nodeSelector", "affinity"] {
            new.remove(key);
            old.remove(key);
        }
    }
    for key in DEFAULTED {
        if !new.contains_key(*key) {
            old.remove(*key);
        }
    }
    for list in ["containers", "initContainers"] {
        let (Some(Value::Array(n)), Some(Value::Array(o))) = (new.get_mut(list), old.get_mut(list))
        else {
            continue;
        };
        if n.len() != o.len() {
            continue;
        }
        for (nc, oc) in n.iter_mut().zip(o.iter_mut()) {
            let (Some(nc), Some(oc)) = (nc.as_object_mut(), oc.as_object_mut()) else {
                continue;
            };
            nc.remove("image");
            oc.remove("image");
            for key in CONTAINER_DEFAULTED {
                if !nc.contains_key(*key) {
                    oc.remove(*key);
                }
            }
            strip_port_protocols(nc);
            strip_port_protocols(oc);
        }
    }
}

/// TCP is the default protocol of a container port.
fn strip_port_protocols(c: &mut Map<String, Value>) {
    for port in c
        .get_mut("ports")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
    {
        if port.get("protocol").and_then(Value::as_str) == Some("TCP") {
            port.remove("protocol");
        }
    }
}

pub fn update(new: &Value, old: &Value) -> Vec<FieldCause> {
    let (Some(new_spec), Some(old_spec)) = (new["spec"].as_object(), old["spec"].as_object())
    else {
        return Vec::new();
    };
    let gated = old_spec
        .get("schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty());
    let (mut n, mut o) = (new_spec.clone(), old_spec.clone());
    normalise(&mut n, &mut o, gated);
    if n == o {
        Vec::new()
    } else {
        vec![FieldCause::forbidden("spec", RULE)]
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_images_and_a_few_fields_change() {
        let old = json!({"spec": {"restartPolicy": "Always", "containers": [{"name": "c", "image": "a", "imagePullPolicy": "Always", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}});
        let image = json!({"spec": {"containers": [{"name": "c", "image": "b", "ports": [{"containerPort": 80}]}], "activeDeadlineSeconds": 5}});
        assert!(update(&image, &old).is_empty());
        let renamed = json!({"spec": {"containers": [{"name": "d", "image": "a"}]}});
        let causes = update(&renamed, &old);
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "spec");
        assert_eq!(causes[0].message, format!("Forbidden: {RULE}"));
    }

    #[test]
    fn gated_pods_may_get_node_selectors() {
        let old = json!({"spec": {"schedulingGates": [{"name": "g"}], "containers": [{"name": "c", "image": "a"}]}});
        let new = json!({"spec": {"nodeSelector": {"zone": "a"}, "containers": [{"name": "c", "image": "a"}]}});
        assert!(update(&new, &old).is_empty());
    }
}
