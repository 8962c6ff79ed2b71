//! Built-in kinds, described by k8s-openapi's own `Resource` metadata. The list of types is generated
//! (`cargo xtask codegen` writes `builtin_types.rs`); group, version, kind, plural and scope come from
//! the traits at compile time. Only what k8s-openapi does not carry (short names, categories) is a
//! hand-written table here.

use k8s_openapi::{ClusterResourceScope, ListableResource, NamespaceResourceScope, Resource};

use super::ResourceType;
use super::behavior::behavior_for;

/// Whether a k8s-openapi scope type is namespaced.
pub trait ScopeInfo {
    const NAMESPACED: bool;
}
impl ScopeInfo for NamespaceResourceScope {
    const NAMESPACED: bool = true;
}
impl ScopeInfo for ClusterResourceScope {
    const NAMESPACED: bool = false;
}

#[allow(clippy::too_many_arguments)]
fn describe(
    group: &str,
    version: &str,
    kind: &str,
    list_kind: &str,
    plural: &str,
    namespaced: bool,
    status: bool,
    create_only: bool,
    decode_check: super::DecodeCheck,
    schema: super::SchemaFn,
) -> ResourceType {
    let (short_names, categories) = short_names_and_categories(group, plural);
    ResourceType {
        group: group.to_string(),
        version: version.to_string(),
        kind: kind.to_string(),
        list_kind: list_kind.to_string(),
        plural: plural.to_string(),
        singular: kind.to_lowercase(),
        namespaced,
        status,
        short_names: short_names.iter().map(|s| s.to_string()).collect(),
        categories: categories.iter().map(|s| s.to_string()).collect(),
        create_only,
        storage: ResourceType::storage_key(storage_group(group, plural), plural),
        behavior: behavior_for(group, plural),
        crd: None,
        deprecation_warning: None,
        decode_check: Some(decode_check),
        schema: super::SchemaSource::Builtin(schema),
        printer_columns: None,
        structural: None,
        scale: scale_paths(group, plural),
    }
}

/// Whether a body decodes as the typed k8s-openapi struct `T`.
/// Decode a body as the typed k8s-openapi struct `T` and encode it again: what the server keeps.
fn decodes_as<T: serde::de::DeserializeOwned + serde::Serialize>(
    body: &serde_json::Value,
) -> Result<serde_json::Value, String> {
    let typed = T::deserialize(body).map_err(|e| e.to_string())?;
    serde_json::to_value(typed).map_err(|e| e.to_string())
}

/// events.k8s.io/v1 Events live in the core group's storage, as in the real server.
fn storage_group<'a>(group: &'a str, plural: &str) -> &'a str {
    if group == "events.k8s.io" && plural == "events" {
        ""
    } else {
        group
    }
}

pub fn listable<T>(status: bool) -> ResourceType
where
    T: ListableResource + serde::de::DeserializeOwned + serde::Serialize + schemars::JsonSchema,
    T::Scope: ScopeInfo,
{
    describe(
        T::GROUP,
        T::VERSION,
        T::KIND,
        T::LIST_KIND,
        T::URL_PATH_SEGMENT,
        T::Scope::NAMESPACED,
        status,
        false,
        decodes_as::<T>,
        |g| g.subschema_for::<T>(),
    )
}

pub fn create_only<T>() -> ResourceType
where
    T: Resource + serde::de::DeserializeOwned + serde::Serialize + schemars::JsonSchema,
    T::Scope: ScopeInfo,
{
    describe(
        T::GROUP,
        T::VERSION,
        T::KIND,
        "",
        T::URL_PATH_SEGMENT,
        T::Scope::NAMESPACED,
        false,
        true,
        decodes_as::<T>,
        |g| g.subschema_for::<T>(),
    )
}

/// Expanded by the generated `builtin_types.rs` into `all_builtin_types()`.
macro_rules! builtin_types {
    (
        listable: [ $( ($ty:path, $status:expr) ),* $(,)? ],
        create_only: [ $( $cty:path ),* $(,)? ] $(,)?
    ) => {
        /// Every built-in kind the server serves.
        pub fn all_builtin_types() -> Vec<$crate::catalog::ResourceType> {
            vec![
                $( $crate::catalog::builtin::listable::<$ty>($status), )*
                $( $crate::catalog::builtin::create_only::<$cty>(), )*
            ]
        }
    };
}
pub(crate) use builtin_types;

include!("builtin_types.rs");

/// The built-in kinds with a `/scale` subresource.
fn scale_paths(group: &str, plural: &str) -> Option<super::ScalePaths> {
    let scalable = matches!(
        (group, plural),
        ("apps", "deployments" | "replicasets" | "statefulsets") | ("", "replicationcontrollers")
    );
    scalable.then(|| super::ScalePaths {
        spec_replicas: ".spec.replicas".into(),
        status_replicas: ".status.replicas".into(),
        label_selector: Some(".spec.selector".into()),
    })
}

/// Short names and categories as `kubectl api-resources` shows them on a real cluster.
fn short_names_and_categories(
    group: &str,
    plural: &str,
) -> (&'static [&'static str], &'static [&'static str]) {
    const ALL: &[&str] = &["all"];
    match (group, plural) {
        ("", "pods") => (&["po"], ALL),
        ("", "services") => (&["svc"], ALL),
        ("", "replicationcontrollers") => (&["rc"], ALL),
        ("", "namespaces") => (&["ns"], &[]),
        ("", "nodes") => (&["no"], &[]),
        ("", "configmaps") => (&["cm"], &[]),
        ("", "serviceaccounts") => (&["sa"], &[]),
        ("", "events") => (&["ev"], &[]),
        ("", "endpoints") => (&["ep"], &[]),
        ("", "persistentvolumeclaims") => (&["pvc"], &[]),
        ("", "persistentvolumes") => (&["pv"], &[]),
        ("", "resourcequotas") => (&["quota"], &[]),
        ("", "limitranges") => (&["limits"], &[]),
        ("", "componentstatuses") => (&["cs"], &[]),
        ("apps", "deployments") => (&["deploy"], ALL),
        ("apps", "replicasets") => (&["rs"], ALL),
        ("apps", "daemonsets") => (&["ds"], ALL),
        ("apps", "statefulsets") => (&["sts"], ALL),
        ("batch", "jobs") => (&[], ALL),
        ("batch", "cronjobs") => (&["cj"], ALL),
        ("autoscaling", "horizontalpodautoscalers") => (&["hpa"], ALL),
        ("events.k8s.io", "events") => (&["ev"], &[]),
        ("networking.k8s.io", "ingresses") => (&["ing"], &[]),
        ("networking.k8s.io", "networkpolicies") => (&["netpol"], &[]),
        ("policy", "poddisruptionbudgets") => (&["pdb"], &[]),
        ("scheduling.k8s.io", "priorityclasses") => (&["pc"], &[]),
        ("storage.k8s.io", "storageclasses") => (&["sc"], &[]),
        ("apiextensions.k8s.io", "customresourcedefinitions") => (&["crd", "crds"], &[]),
        ("certificates.k8s.io", "certificatesigningrequests") => (&["csr"], &[]),
        _ => (&[], &[]),
    }
}
