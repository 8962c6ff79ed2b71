//! Before any test on a cluster: which cluster, and whether the suite can give a verdict there.
//! A cluster that does not answer, lacks the ProvisioningRequest CRD (or Kueue's, for the kueue
//! profile), or credentials without the rights `conformance/rbac.yaml` lists, get one line and no
//! verdict: a run there would only report the suite's own failures as the class's.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, bail};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use k8s_openapi::api::rbac::v1::ClusterRole;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::discovery::ApiResource;
use serde::Deserialize;

use crate::options::Options;

/// How long the cluster has to answer `GET /version`.
const REACH_TIMEOUT: Duration = Duration::from_secs(10);

/// The ClusterRoles the suite needs, as vendors apply them.
const RBAC_YAML: &str = include_str!("../rbac.yaml");
/// Where vendors find them, in messages.
const RBAC_FILE: &str = "conformance/rbac.yaml";
/// The role every run needs, and the one the kueue profile adds.
const ROLE: &str = "tollgate-conformance";
const KUEUE_ROLE: &str = "tollgate-conformance-kueue";

/// The current context of the kubeconfig kubectl would read ($KUBECONFIG's files, else
/// ~/.kube/config), and a line saying which cluster that is.
pub async fn as_kubectl_would() -> anyhow::Result<(kube::Config, String)> {
    let (looked, paths) = kubectl_paths();
    if paths.is_empty() {
        bail!(
            "no cluster to test: no kubeconfig at {looked}. Give one with --kubeconfig PATH (or \
             --context NAME, or an options file naming it with --options FILE); to run the suite \
             against the fake autoscaler's reference classes instead, use `cargo xtask conformance`"
        );
    }
    let mut merged = Kubeconfig::default();
    for path in &paths {
        let file = Kubeconfig::read_from(path)
            .map_err(|e| anyhow::anyhow!("reading {}: {}", path.display(), one_line(&e)))?;
        merged = merged.merge(file)?;
    }
    let shown = join_paths(&paths);
    let Some(context) = merged.current_context.clone().filter(|c| !c.is_empty()) else {
        bail!("{shown} has no current context: name the context to test with --context NAME");
    };
    let options = KubeConfigOptions {
        context: Some(context.clone()),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(merged, &options)
        .await
        .with_context(|| format!("context `{context}` of {shown}"))?;
    let said = format!(
        "testing on context `{context}` (server {}) of {shown}, the current context, as kubectl would",
        server_of(&config)
    );
    Ok((config, said))
}

/// The server's URL as the kubeconfig wrote it (without the slash `Uri` adds).
pub fn server_of(config: &kube::Config) -> String {
    config
        .cluster_url
        .to_string()
        .trim_end_matches('/')
        .to_string()
}

/// The kubeconfig files kubectl would read that exist, and where it looked (for the message when
/// there are none).
fn kubectl_paths() -> (String, Vec<PathBuf>) {
    let from_env: Vec<PathBuf> = std::env::var_os("KUBECONFIG")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    let (looked, candidates) = if from_env.is_empty() {
        let home = std::env::home_dir().map(|h| h.join(".kube").join("config"));
        let looked = home
            .as_ref()
            .map_or("~/.kube/config (no home directory)".into(), |p| {
                p.display().to_string()
            });
        (looked, home.into_iter().collect())
    } else {
        (format!("$KUBECONFIG ({})", join_paths(&from_env)), from_env)
    };
    (
        looked,
        candidates.into_iter().filter(|p| p.is_file()).collect(),
    )
}

fn join_paths(paths: &[PathBuf]) -> String {
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    shown.join(":")
}

/// Whether the suite can run on the cluster `client` talks to (at `server`): it answers, serves
/// the CRDs the suite uses, and the credentials have the rights it needs. The error is one line.
pub async fn check(client: &kube::Client, server: &str, options: &Options) -> anyhow::Result<()> {
    reachable(client, server).await?;
    served(client, options).await?;
    permitted(client, options).await
}

async fn reachable(client: &kube::Client, server: &str) -> anyhow::Result<()> {
    match tokio::time::timeout(REACH_TIMEOUT, client.apiserver_version()).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(e)) => bail!("cannot reach the cluster at {server}: {}", one_line(&e)),
        Err(_) => bail!(
            "cannot reach the cluster at {server}: no answer to GET /version within {}s",
            REACH_TIMEOUT.as_secs()
        ),
    }
}

/// An error and its causes on one line, each cause once (kube's errors repeat their source).
fn one_line(error: &dyn std::error::Error) -> String {
    let mut parts: Vec<String> = vec![];
    let mut next = Some(error);
    while let Some(e) = next {
        let text = e.to_string().replace('\n', " ");
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = e.source();
    }
    parts.join(": ")
}

/// The custom resources the suite uses: ProvisioningRequests, and Kueue's kinds for the kueue
/// profile (the objects it creates and those Tollgate's controller watches).
pub fn custom_resources(options: &Options) -> Vec<ApiResource> {
    use api::kueue::{
        AdmissionCheck, ClusterQueue, LocalQueue, ProvisioningRequestConfig, ResourceFlavor,
        Workload,
    };
    let mut kinds = vec![ApiResource::erase::<api::autoscaling::ProvisioningRequest>(
        &(),
    )];
    if options.kueue {
        kinds.extend([
            ApiResource::erase::<ResourceFlavor>(&()),
            ApiResource::erase::<ProvisioningRequestConfig>(&()),
            ApiResource::erase::<AdmissionCheck>(&()),
            ApiResource::erase::<ClusterQueue>(&()),
            ApiResource::erase::<LocalQueue>(&()),
            ApiResource::erase::<Workload>(&()),
        ]);
    }
    kinds
}

async fn served(client: &kube::Client, options: &Options) -> anyhow::Result<()> {
    let kinds = custom_resources(options);
    let versions: BTreeSet<&str> = kinds.iter().map(|k| k.api_version.as_str()).collect();
    let mut missing = vec![];
    for version in versions {
        let listed = match client.list_api_group_resources(version).await {
            Ok(list) => list.resources,
            Err(kube::Error::Api(s)) if s.code == 404 => vec![],
            Err(e) => bail!("cannot list the resources of {version}: {}", one_line(&e)),
        };
        for kind in kinds.iter().filter(|k| k.api_version == version) {
            if !listed.iter().any(|r| r.name == kind.plural) {
                missing.push(format!("{}.{}/{}", kind.plural, kind.group, kind.version));
            }
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    let kueue = if options.kueue {
        " (Kueue's for --kueue)"
    } else {
        ""
    };
    bail!(
        "the cluster does not serve the CRDs the suite needs: {}; install the ProvisioningRequest \
         CRD{kueue} first",
        missing.join(", ")
    )
}

/// One right the suite needs: `verb` on `resource` (`plural` or `plural/subresource`) of `group`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Right {
    pub group: String,
    pub resource: String,
    pub verb: String,
}

/// The rights `conformance/rbac.yaml` grants, as the run with `options` needs them: its first
/// role always, the kueue role with the kueue profile. A `*` resource stands for the custom
/// resources of that group the suite uses.
pub fn needed_rights(options: &Options) -> anyhow::Result<Vec<Right>> {
    let roles = serde_yaml::Deserializer::from_str(RBAC_YAML)
        .map(ClusterRole::deserialize)
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("{RBAC_FILE} (built in)"))?;
    let wanted = |name: &str| name == ROLE || (options.kueue && name == KUEUE_ROLE);
    let kinds = custom_resources(options);
    let mut rights = vec![];
    for role in roles
        .iter()
        .filter(|r| r.metadata.name.as_deref().is_some_and(wanted))
    {
        for rule in role.rules.iter().flatten() {
            for group in rule.api_groups.iter().flatten() {
                let resources: Vec<String> = rule
                    .resources
                    .iter()
                    .flatten()
                    .flat_map(|r| match r.as_str() {
                        "*" => kinds
                            .iter()
                            .filter(|k| &k.group == group)
                            .map(|k| k.plural.clone())
                            .collect(),
                        _ => vec![r.clone()],
                    })
                    .collect();
                for resource in resources {
                    for verb in &rule.verbs {
                        let right = Right {
                            group: group.clone(),
                            resource: resource.clone(),
                            verb: verb.clone(),
                        };
                        if !rights.contains(&right) {
                            rights.push(right);
                        }
                    }
                }
            }
        }
    }
    if rights.is_empty() {
        bail!("{RBAC_FILE} (built in) has no role named {ROLE}");
    }
    Ok(rights)
}

async fn permitted(client: &kube::Client, options: &Options) -> anyhow::Result<()> {
    let rights = needed_rights(options)?;
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client.clone());
    let answers: Vec<bool> = futures::stream::iter(&rights)
        .map(|right| allowed(&reviews, right))
        .buffered(8)
        .try_collect()
        .await
        .context("cannot check the credentials' rights (SelfSubjectAccessReview)")?;
    let denied: Vec<&Right> = rights
        .iter()
        .zip(answers)
        .filter_map(|(right, allowed)| (!allowed).then_some(right))
        .collect();
    if denied.is_empty() {
        return Ok(());
    }
    bail!(
        "the credentials cannot: {}. {RBAC_FILE} has the ClusterRoles the suite needs: bind them \
         to the kubeconfig's identity",
        describe(&denied)
    )
}

async fn allowed(reviews: &Api<SelfSubjectAccessReview>, right: &Right) -> anyhow::Result<bool> {
    let (resource, subresource) = match right.resource.split_once('/') {
        Some((r, s)) => (r.to_string(), Some(s.to_string())),
        None => (right.resource.clone(), None),
    };
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                group: Some(right.group.clone()),
                resource: Some(resource),
                subresource,
                verb: Some(right.verb.clone()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let answer = reviews
        .create(&PostParams::default(), &review)
        .await
        .map_err(|e| anyhow::anyhow!(one_line(&e)))?;
    Ok(answer.status.is_some_and(|s| s.allowed))
}

/// `create/delete namespaces, watch provisioningrequests.autoscaling.x-k8s.io`: the verbs of each
/// resource together, in the order rbac.yaml lists them.
fn describe(denied: &[&Right]) -> String {
    let mut by_resource: Vec<(String, Vec<&str>)> = vec![];
    for right in denied {
        let name = if right.group.is_empty() {
            right.resource.clone()
        } else {
            format!("{}.{}", right.resource, right.group)
        };
        match by_resource.iter_mut().find(|(n, _)| *n == name) {
            Some((_, verbs)) => verbs.push(&right.verb),
            None => by_resource.push((name, vec![&right.verb])),
        }
    }
    let parts: Vec<String> = by_resource
        .iter()
        .map(|(name, verbs)| format!("{} {name}", verbs.join("/")))
        .collect();
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn right(group: &str, resource: &str, verb: &str) -> Right {
        Right {
            group: group.into(),
            resource: resource.into(),
            verb: verb.into(),
        }
    }

    #[test]
    fn the_rights_are_those_of_rbac_yaml() {
        let rights = needed_rights(&Options::default()).expect("rbac.yaml parses");
        assert!(rights.contains(&right("", "namespaces", "create")));
        assert!(rights.contains(&right(
            "autoscaling.x-k8s.io",
            "provisioningrequests",
            "watch"
        )));
        assert!(!rights.iter().any(|r| r.group == "kueue.x-k8s.io"));
    }

    #[test]
    fn the_kueue_profile_adds_kueues_kinds_for_its_wildcard() {
        let options = Options {
            kueue: true,
            ..Options::default()
        };
        let rights = needed_rights(&options).expect("rbac.yaml parses");
        assert!(rights.contains(&right("kueue.x-k8s.io", "workloads", "update")));
        assert!(rights.contains(&right("kueue.x-k8s.io", "clusterqueues", "create")));
        assert!(rights.contains(&right("batch", "jobs/status", "patch")));
        assert!(!rights.iter().any(|r| r.resource == "*"));
    }

    #[test]
    fn denied_rights_read_as_one_line_by_resource() {
        let a = right("", "namespaces", "create");
        let b = right("autoscaling.x-k8s.io", "provisioningrequests", "watch");
        let c = right("", "namespaces", "delete");
        assert_eq!(
            describe(&[&a, &b, &c]),
            "create/delete namespaces, watch provisioningrequests.autoscaling.x-k8s.io"
        );
    }

    #[test]
    fn the_kueue_profile_needs_kueues_crds() {
        let plain: Vec<String> = custom_resources(&Options::default())
            .into_iter()
            .map(|k| k.plural)
            .collect();
        assert_eq!(plain, ["provisioningrequests"]);
        let options = Options {
            kueue: true,
            ..Options::default()
        };
        assert!(
            custom_resources(&options)
                .iter()
                .any(|k| k.plural == "workloads")
        );
    }
}
