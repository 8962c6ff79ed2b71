//! Connecting to a cluster as kubectl would.

use std::path::Path;

/// The client configuration for the kubeconfig at `path` (or the default one, or in-cluster),
/// optionally with another context.
pub async fn config(path: Option<&Path>, context: Option<&str>) -> anyhow::Result<kube::Config> {
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    Ok(match path {
        Some(path) => {
            let kubeconfig = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &options).await?
        }
        None if context.is_some() => kube::Config::from_kubeconfig(&options).await?,
        None => kube::Config::infer().await?,
    })
}

/// A client for the kubeconfig at `path` (or the default one), optionally with another context.
pub async fn connect(
    path: Option<&Path>,
    context: Option<&str>,
) -> Result<kube::Client, anyhow::Error> {
    Ok(kube::Client::try_from(config(path, context).await?)?)
}
