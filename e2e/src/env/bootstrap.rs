//! What a manager finds before it starts, as an operator would have set it up: for each worker, a
//! Secret holding its kubeconfig in the controller's namespace (and the namespace), and, when the
//! environment has a kubeconfig directory, the same kubeconfig as a file there.

use std::path::Path;

use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, PostParams};

use crate::harness::kubeconfig;

/// Write the Secrets through the manager's API, as `kubectl create` would.
pub async fn write_secrets(
    client: &kube::Client,
    namespace: &str,
    workers: &[String],
) -> Result<(), String> {
    let secrets: Vec<Secret> = workers
        .iter()
        .map(|w| kubeconfig::secret(w, namespace))
        .collect();
    create_secrets(client, namespace, &secrets).await
}

/// Create the namespace (if missing) and the Secrets in it.
pub async fn create_secrets(
    client: &kube::Client,
    namespace: &str,
    secrets: &[Secret],
) -> Result<(), String> {
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let mut ns = Namespace::default();
    ns.metadata.name = Some(namespace.to_string());
    match namespaces.create(&PostParams::default(), &ns).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => return Err(format!("creating namespace {namespace}: {e}")),
    }
    let api: Api<Secret> = Api::namespaced(client.clone(), namespace);
    for secret in secrets {
        let name = secret.metadata.name.as_deref().unwrap_or_default();
        api.create(&PostParams::default(), secret)
            .await
            .map_err(|e| format!("creating Secret {namespace}/{name}: {e}"))?;
    }
    Ok(())
}

/// Write each worker's kubeconfig as `dir/<worker>`, for MultiKueueClusters with `locationType:
/// Path`.
pub fn write_files(dir: &Path, workers: &[String]) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for worker in workers {
        let path = dir.join(worker);
        std::fs::write(&path, kubeconfig::kubeconfig(worker))
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
