//! The kubeconfig a manager gets for a worker cluster of an embedded world, and the Secret that
//! holds it. It is a complete kubeconfig that passes MultiKueue's checks (a DNS host, the CA as
//! data, a bearer token, nothing insecure); its server, `https://<worker>.tollgate.invalid`,
//! resolves only through [`crate::harness::InProcessNetwork`]. `.invalid` never resolves in
//! DNS, so a kubeconfig that escaped the process would reach nothing.

use std::collections::BTreeMap;

use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The domain worker API servers are named under.
pub const DOMAIN: &str = "tollgate.invalid";

/// A CA certificate for the kubeconfigs. Nothing is ever verified against it (no TLS happens in
/// process); it is a real certificate so that kube's loader and TLS setup accept the kubeconfig.
/// Made with `openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes
/// -subj /CN=tollgate-embedded-ca -days 36500`; its key was thrown away.
const CA_PEM: &str = include_str!("embedded-ca.pem");

/// The user the manager acts as on its workers.
const USER: &str = "multikueue";

/// The host name of a worker's API server.
pub fn host(worker: &str) -> String {
    format!("{worker}.{DOMAIN}")
}

/// The URL of a worker's API server, as its kubeconfig names it.
pub fn server_url(worker: &str) -> String {
    format!("https://{}", host(worker))
}

/// Whether `name` can name a worker: a DNS label (it becomes a host name and a Secret's name).
pub fn check_worker_name(name: &str) -> Result<(), String> {
    let label = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if !label {
        return Err(format!(
            "`{name}` cannot name a worker cluster: use lower-case letters, digits and `-`, at most \
             63, starting and ending with a letter or digit (it becomes a host name and a Secret's name)"
        ));
    }
    Ok(())
}

/// The kubeconfig (YAML) that reaches `worker`.
pub fn kubeconfig(worker: &str) -> String {
    let ca = base64::engine::general_purpose::STANDARD.encode(CA_PEM);
    let doc = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{
            "name": worker,
            "cluster": {"server": server_url(worker), "certificate-authority-data": ca},
        }],
        "users": [{"name": USER, "user": {"token": token(worker)}}],
        "contexts": [{"name": worker, "context": {"cluster": worker, "user": USER}}],
        "current-context": worker,
    });
    serde_yaml::to_string(&doc).unwrap_or_default()
}

/// The manager's bearer token on a worker. The fake API server does not authenticate; the token is
/// there because a kubeconfig without credentials is not what a manager is given.
fn token(worker: &str) -> String {
    format!("tollgate-embedded-{worker}")
}

/// The Secret a MultiKueueCluster names to reach `worker`: named after it, in the manager
/// controller's namespace, with the kubeconfig under `kubeconfig`.
pub fn secret(worker: &str, namespace: &str) -> Secret {
    secret_holding(worker, namespace, kubeconfig(worker).into_bytes())
}

/// The Secret `namespace/<worker>` holding the kubeconfig `bytes` under `kubeconfig`, as an
/// operator makes it for a MultiKueueCluster with `locationType: Secret`.
pub fn secret_holding(worker: &str, namespace: &str, bytes: Vec<u8>) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(worker.to_string()),
            namespace: Some(namespace.to_string()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            api::constants::multikueue::KUBECONFIG_SECRET_KEY.to_string(),
            ByteString(bytes),
        )])),
        ..Secret::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kubeconfig_parses_and_names_the_worker_with_a_token_and_ca_data() {
        let parsed = kube::config::Kubeconfig::from_yaml(&kubeconfig("worker-1"))
            .expect("the kubeconfig parses");
        let cluster = parsed.clusters[0]
            .cluster
            .as_ref()
            .expect("the cluster has details");
        assert_eq!(
            cluster.server.as_deref(),
            Some("https://worker-1.tollgate.invalid")
        );
        assert!(cluster.certificate_authority_data.is_some());
        assert!(cluster.certificate_authority.is_none());
        assert!(cluster.insecure_skip_tls_verify.is_none());
        let user = parsed.auth_infos[0]
            .auth_info
            .as_ref()
            .expect("the user has details");
        assert!(user.token.is_some());
        assert!(user.token_file.is_none() && user.exec.is_none() && user.auth_provider.is_none());
        assert_eq!(parsed.current_context.as_deref(), Some("worker-1"));
    }

    #[test]
    fn worker_names_are_dns_labels() {
        assert!(check_worker_name("worker-1").is_ok());
        for bad in ["", "Worker", "-w", "w-", "w.1", &"w".repeat(64)] {
            let message = check_worker_name(bad).expect_err("refused");
            assert!(
                message.contains("cannot name a worker cluster"),
                "{message}"
            );
        }
    }
}
