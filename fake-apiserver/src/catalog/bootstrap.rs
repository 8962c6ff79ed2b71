//! What a real cluster holds from its first second, as data: the bootstrap RBAC ClusterRoles,
//! ClusterRoleBindings, Roles and RoleBindings (kube-apiserver's bootstrap policy, with the rules
//! kube-controller-manager aggregates into `admin`, `edit` and `view`) and the default
//! PriorityClasses, plus the cluster's root CA and its component statuses.
//!
//! `bootstrap.jsonl` is dumped from a fresh reference control plane, one object a line, without
//! the fields the server fills in on create. To regenerate it (from the workspace root):
//!
//! ```text
//! target/debug/control-plane up --dir /tmp/cp-dump
//! (for r in clusterroles clusterrolebindings roles rolebindings priorityclasses; do
//!    KUBECONFIG=/tmp/cp-dump/kubeconfig kubectl get $r -A -o json; done) \
//!  | jq -c '.items[] | del(.metadata.uid, .metadata.resourceVersion, .metadata.creationTimestamp, .metadata.managedFields)' \
//!  > fake-apiserver/src/catalog/bootstrap.jsonl
//! target/debug/control-plane down --dir /tmp/cp-dump
//! ```
//!
//! The file is parsed once per process; each new store inserts copies without validation.

use std::sync::OnceLock;

use serde_json::{Value, json};

/// One object of the bootstrap data, with where it is stored.
#[derive(Debug)]
pub struct BootstrapObject {
    pub group: &'static str,
    pub version: &'static str,
    pub plural: &'static str,
    pub namespace: String,
    pub object: Value,
}

const DATA: &str = include_str!("bootstrap.jsonl");

/// The bootstrap objects, in the order the data file lists them.
pub fn objects() -> &'static [BootstrapObject] {
    static OBJECTS: OnceLock<Vec<BootstrapObject>> = OnceLock::new();
    OBJECTS.get_or_init(|| {
        DATA.lines()
            .filter(|l| !l.trim().is_empty())
            .filter_map(|line| {
                let object: Value = serde_json::from_str(line)
                    .inspect_err(|e| tracing::error!(%e, "a bad line in bootstrap.jsonl"))
                    .ok()?;
                let (group, version, plural) = match object["kind"].as_str()? {
                    "ClusterRole" => ("rbac.authorization.k8s.io", "v1", "clusterroles"),
                    "ClusterRoleBinding" => {
                        ("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
                    }
                    "Role" => ("rbac.authorization.k8s.io", "v1", "roles"),
                    "RoleBinding" => ("rbac.authorization.k8s.io", "v1", "rolebindings"),
                    "PriorityClass" => ("scheduling.k8s.io", "v1", "priorityclasses"),
                    _ => return None,
                };
                let namespace = object["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("")
                    .to_string();
                Some(BootstrapObject {
                    group,
                    version,
                    plural,
                    namespace,
                    object,
                })
            })
            .collect()
    })
}

/// The name of the ConfigMap kube-controller-manager's root-ca-cert-publisher writes into every
/// namespace, and its one key.
pub const ROOT_CA_CONFIGMAP: &str = "kube-root-ca.crt";
pub const ROOT_CA_KEY: &str = "ca.crt";
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The cluster's root CA: made once per process. It signs the serving certificate of a TLS
/// endpoint, so clients in pods could verify the server with `kube-root-ca.crt` as on a cluster.
pub struct RootCa {
    pub pem: String,
    pub issuer: rcgen::CertifiedIssuer<'static, rcgen::KeyPair>,
}

/// The root CA, or `None` if it could not be made (logged; then nothing is served over TLS).
pub fn root_ca() -> Option<&'static RootCa> {
    static CA: OnceLock<Option<RootCa>> = OnceLock::new();
    CA.get_or_init(make_ca).as_ref()
}

/// The PEM of the cluster's root CA.
pub fn root_ca_pem() -> &'static str {
    root_ca().map_or("", |ca| ca.pem.as_str())
}

fn make_ca() -> Option<RootCa> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())
        .inspect_err(|e| tracing::error!(%e, "root CA parameters"))
        .ok()?;
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "tollgate-fake-apiserver-ca");
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::CrlSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let key = rcgen::KeyPair::generate()
        .inspect_err(|e| tracing::error!(%e, "root CA key"))
        .ok()?;
    let issuer = rcgen::CertifiedIssuer::self_signed(params, key)
        .inspect_err(|e| tracing::error!(%e, "root CA certificate"))
        .ok()?;
    Some(RootCa {
        pem: issuer.pem(),
        issuer,
    })
}

/// The `kube-root-ca.crt` ConfigMap of a namespace, as the publisher writes it.
pub fn root_ca_configmap() -> Value {
    json!({
        "metadata": {
            "name": ROOT_CA_CONFIGMAP,
            "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION},
        },
        "data": {ROOT_CA_KEY: root_ca_pem()},
    })
}

/// The v1 ComponentStatuses: a virtual, read-only list probed on every read by the real server.
/// Here every component is healthy, with the answers a healthy cluster gives.
pub fn component_statuses() -> Vec<Value> {
    ["scheduler", "controller-manager", "etcd-0"]
        .iter()
        .map(|name| {
            json!({
                "kind": "ComponentStatus",
                "apiVersion": "v1",
                "metadata": {"name": name},
                "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}],
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_line_of_the_data_is_a_known_kind() {
        let lines = DATA.lines().filter(|l| !l.trim().is_empty()).count();
        assert_eq!(objects().len(), lines);
        for name in ["cluster-admin", "admin", "edit", "view", "system:discovery"] {
            assert!(
                objects()
                    .iter()
                    .any(|o| o.plural == "clusterroles" && o.object["metadata"]["name"] == name),
                "{name}"
            );
        }
    }

    #[test]
    fn the_root_ca_is_one_pem_certificate() {
        let pem = root_ca_pem();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
        assert_eq!(pem.matches("BEGIN CERTIFICATE").count(), 1);
    }
}
