//! `cargo xtask codegen`: writes fake-apiserver's catalogue of built-in kinds.
//!
//! Rust cannot enumerate the `k8s_openapi::Resource` impls at run time, so we read k8s-openapi's
//! source instead and check in the list of type paths. fake-apiserver's `builtin_types!` macro
//! then takes GROUP, VERSION, KIND, etc. from the traits at compile time; this file only decides
//! *which* types are listed, so nothing here is copied by hand from the Kubernetes API.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use crate::workspace_root;
use anyhow::{Context, Result, bail};

/// Where the generated catalogue lives, relative to the workspace root.
const OUTPUT: &str = "fake-apiserver/src/catalog/builtin_types.rs";

/// Regenerates the catalogue, or with `check` only verifies that the checked-in file is current.
pub fn run(check: bool) -> Result<()> {
    let root = workspace_root()?;
    let catalogue = generate(&root)?;
    let path = root.join(OUTPUT);
    // A missing file is simply out of date, not an I/O failure worth reporting differently.
    let current = fs::read_to_string(&path).ok();
    let up_to_date = current.as_deref() == Some(catalogue.text.as_str());
    if check {
        if !up_to_date {
            bail!(
                "{} is out of date: run `cargo xtask codegen`",
                path.display()
            );
        }
        eprintln!("{} is up to date", path.display());
        return Ok(());
    }
    if up_to_date {
        eprintln!("{} is already up to date", path.display());
    } else {
        // Only write on change so fake-apiserver is not rebuilt needlessly.
        fs::write(&path, &catalogue.text)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    eprintln!("{}", catalogue.summary());
    Ok(())
}

/// The generated file's text plus what the summary needs.
struct Catalogue {
    text: String,
    listable: Vec<Entry>,
    create_only: Vec<Entry>,
}

impl Catalogue {
    /// Counts, and kinds served by more than one stable type, which a reviewer should know about.
    fn summary(&self) -> String {
        let mut by_kind: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for entry in self.listable.iter().chain(&self.create_only) {
            let decl = &entry.decl;
            let group_version = if decl.group.is_empty() {
                decl.version.clone()
            } else {
                format!("{}/{}", decl.group, decl.version)
            };
            by_kind.entry(&decl.kind).or_default().push(group_version);
        }
        let mut out = format!(
            "{} listable and {} create-only built-in types",
            self.listable.len(),
            self.create_only.len()
        );
        for (kind, group_versions) in by_kind.iter().filter(|(_, gvs)| gvs.len() > 1) {
            let _ = write!(out, "\n  {kind} is served by {}", group_versions.join(", "));
        }
        out
    }
}

/// One resource type kept for the catalogue.
struct Entry {
    rust_path: String,
    decl: ResourceDecl,
}

/// Reads k8s-openapi's source and renders the catalogue.
fn generate(root: &Path) -> Result<Catalogue> {
    let k8s = locate_k8s_openapi(root)?;
    let src = k8s.dir.join("src");
    let (version_module, version_dir) = newest_version_dir(&src)?;
    k8s.check_enabled_version(&version_module)?;

    let mut listable = Vec::new();
    let mut create_only = Vec::new();
    let mut mod_files = ModFiles::default();
    for file in rs_files(&version_dir)? {
        let rel = file.strip_prefix(&version_dir).with_context(|| {
            format!("{} is not under {}", file.display(), version_dir.display())
        })?;
        // apimachinery holds meta types (Status, APIGroup...), not served kinds.
        if rel.starts_with("apimachinery") {
            continue;
        }
        let source =
            fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
        let decls = parse_resources(&source).with_context(|| format!("in {}", file.display()))?;
        for decl in decls {
            // Alpha and beta APIs are off by default in a real cluster.
            if !is_stable_version(&decl.version) {
                continue;
            }
            let rust_path = rust_path(rel, &decl.type_name)?;
            mod_files
                .check_exported(&version_dir, rel, &decl.type_name)
                .with_context(|| format!("{rust_path} would not name the type"))?;
            let entry = Entry { rust_path, decl };
            match (entry.decl.scope, entry.decl.listable) {
                // Subresources (Scale, Eviction, TokenRequest...) are served under their parent.
                (Scope::SubResource, _) => {}
                (_, true) => listable.push(entry),
                (_, false) => create_only.push(entry),
            }
        }
    }
    for entries in [&mut listable, &mut create_only] {
        entries.sort_by(|a, b| a.rust_path.cmp(&b.rust_path));
        if let Some(pair) = entries
            .windows(2)
            .find(|w| w[0].rust_path == w[1].rust_path)
        {
            bail!("{} is declared twice", pair[0].rust_path);
        }
    }
    let text = render(&k8s.version, &version_module, &listable, &create_only);
    Ok(Catalogue {
        text,
        listable,
        create_only,
    })
}

/// The k8s-openapi package the workspace resolves to.
#[derive(Debug)]
struct K8sOpenapi {
    dir: PathBuf,
    version: String,
    /// Features enabled on it in the workspace's resolve, to catch a pinned older `v1_*`.
    features: Vec<String>,
}

impl K8sOpenapi {
    /// The crate root re-exports only the enabled version, so our paths are right only if the
    /// workspace enables the newest one.
    fn check_enabled_version(&self, newest: &str) -> Result<()> {
        let enabled: Vec<&str> = self
            .features
            .iter()
            .map(String::as_str)
            .filter(|f| f.starts_with("v1_"))
            .collect();
        if !enabled.is_empty() && !enabled.contains(&newest) {
            bail!(
                "the workspace enables k8s-openapi feature(s) {} but the newest version is {newest}: \
                 enable k8s-openapi's `latest` feature",
                enabled.join(", ")
            );
        }
        Ok(())
    }
}

/// Asks cargo where k8s-openapi's source is, so we read exactly the version the build uses.
fn locate_k8s_openapi(root: &Path) -> Result<K8sOpenapi> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(&cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(root)
        .output()
        .with_context(|| format!("cannot run `{} metadata`", cargo.to_string_lossy()))?;
    if !output.status.success() {
        bail!(
            "`cargo metadata` failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("`cargo metadata` printed invalid JSON")?;
    find_k8s_openapi(&metadata)
}

/// Picks k8s-openapi out of `cargo metadata` JSON.
fn find_k8s_openapi(metadata: &serde_json::Value) -> Result<K8sOpenapi> {
    let packages = metadata["packages"]
        .as_array()
        .context("`cargo metadata` output has no `packages` array")?;
    let found: Vec<&serde_json::Value> = packages
        .iter()
        .filter(|p| p["name"] == "k8s-openapi")
        .collect();
    let package = match found.as_slice() {
        [] => {
            bail!("k8s-openapi not found in `cargo metadata` output: is it a workspace dependency?")
        }
        [one] => *one,
        many => bail!(
            "{} versions of k8s-openapi in `cargo metadata` output ({}): cannot tell which one to read",
            many.len(),
            many.iter()
                .map(|p| p["version"].as_str().unwrap_or("?"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let manifest = package["manifest_path"]
        .as_str()
        .context("k8s-openapi has no `manifest_path` in `cargo metadata` output")?;
    let dir = Path::new(manifest)
        .parent()
        .with_context(|| format!("k8s-openapi manifest path {manifest} has no parent"))?
        .to_path_buf();
    let version = package["version"]
        .as_str()
        .context("k8s-openapi has no `version` in `cargo metadata` output")?
        .to_owned();
    let id = &package["id"];
    let features = metadata["resolve"]["nodes"]
        .as_array()
        .and_then(|nodes| nodes.iter().find(|n| &n["id"] == id))
        .and_then(|node| node["features"].as_array())
        .map(|fs| {
            fs.iter()
                .filter_map(|f| f.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Ok(K8sOpenapi {
        dir,
        version,
        features,
    })
}

/// The `src/v1_NN` folder with the largest NN (numerically, so v1_100 beats v1_99).
fn newest_version_dir(src: &Path) -> Result<(String, PathBuf)> {
    let mut names = Vec::new();
    for entry in fs::read_dir(src).with_context(|| format!("cannot list {}", src.display()))? {
        let entry = entry.with_context(|| format!("cannot list {}", src.display()))?;
        if entry.path().is_dir() {
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    let newest = newest_version(names.iter().map(String::as_str))
        .with_context(|| format!("no v1_NN version folder in {}", src.display()))?;
    let dir = src.join(newest);
    Ok((newest.to_owned(), dir))
}

/// The name among `names` of the form `v1_NN` with the largest NN.
fn newest_version<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    names
        .into_iter()
        .filter_map(|name| Some((name.strip_prefix("v1_")?.parse::<u32>().ok()?, name)))
        .max_by_key(|(minor, _)| *minor)
        .map(|(_, name)| name)
}

/// All `.rs` files under `dir`, sorted so the output never depends on directory order.
fn rs_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))? {
            let path = entry
                .with_context(|| format!("cannot list {}", dir.display()))?
                .path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// `k8s_openapi::Resource::Scope`, by the marker type's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scope {
    Namespace,
    Cluster,
    SubResource,
}

/// What one `impl crate::Resource for T` in k8s-openapi's source says about `T`.
#[derive(Debug, PartialEq, Eq)]
struct ResourceDecl {
    type_name: String,
    group: String,
    version: String,
    kind: String,
    scope: Scope,
    listable: bool,
    has_status: bool,
}

/// Finds the `impl crate::Resource for T` blocks in one generated k8s-openapi file.
///
/// k8s-openapi's generator writes one item per line in a fixed shape, so a line-based reader is
/// enough; anything unexpected is an error rather than a silent skip.
fn parse_resources(source: &str) -> Result<Vec<ResourceDecl>> {
    let lines: Vec<&str> = source.lines().map(str::trim).collect();
    let mut decls = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix("impl crate::Resource for ") else {
            continue;
        };
        let type_name = rest
            .strip_suffix('{')
            .map(str::trim)
            .filter(|name| is_identifier(name))
            .with_context(|| format!("cannot read the type name in `{line}`"))?;
        let body = block(&lines[i + 1..])
            .with_context(|| format!("unterminated `impl crate::Resource for {type_name}`"))?;
        let consts = string_consts(body);
        let constant = |name: &str| {
            consts.get(name).cloned().with_context(|| {
                format!("`impl crate::Resource for {type_name}` has no parsable {name}")
            })
        };
        let kind = constant("KIND")?;
        let group = constant("GROUP")?;
        let version = constant("VERSION")?;
        constant("API_VERSION")?;
        constant("URL_PATH_SEGMENT")?;
        let scope = body
            .iter()
            .find_map(|l| l.strip_prefix("type Scope = crate::")?.strip_suffix(';'))
            .and_then(|scope| match scope {
                "NamespaceResourceScope" => Some(Scope::Namespace),
                "ClusterResourceScope" => Some(Scope::Cluster),
                "SubResourceScope" => Some(Scope::SubResource),
                _ => None,
            })
            .with_context(|| {
                format!("`impl crate::Resource for {type_name}` has no parsable Scope")
            })?;
        let listable_impl = format!("impl crate::ListableResource for {type_name} {{");
        let listable = lines.contains(&listable_impl.as_str());
        let has_status = struct_fields(&lines, type_name)?
            .iter()
            .any(|field| field.starts_with("pub status:"));
        decls.push(ResourceDecl {
            type_name: type_name.to_owned(),
            group,
            version,
            kind,
            scope,
            listable,
            has_status,
        });
    }
    Ok(decls)
}

/// The lines of a block whose opening `{` ended the line before `lines`, up to its closing `}`.
/// The blocks we read hold no nested braces, so the first lone `}` closes them.
fn block<'a, 'b>(lines: &'a [&'b str]) -> Option<&'a [&'b str]> {
    let end = lines.iter().position(|l| *l == "}")?;
    Some(&lines[..end])
}

/// `const NAME: &'static str = "value";` items, by name.
fn string_consts(body: &[&str]) -> BTreeMap<String, String> {
    body.iter()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("const ")?.split_once(':')?;
            let (ty, value) = rest.split_once('=')?;
            if !matches!(ty.trim(), "&'static str" | "&str") {
                return None;
            }
            let value = value
                .trim()
                .strip_suffix(';')?
                .strip_prefix('"')?
                .strip_suffix('"')?;
            // Escapes would need unescaping; k8s-openapi never emits them here.
            if value.contains(['"', '\\']) {
                return None;
            }
            Some((name.trim().to_owned(), value.to_owned()))
        })
        .collect()
}

/// The field lines of `pub struct type_name { ... }`.
fn struct_fields<'a, 'b>(lines: &'a [&'b str], type_name: &str) -> Result<&'a [&'b str]> {
    let header = format!("pub struct {type_name} {{");
    let start = lines
        .iter()
        .position(|l| *l == header)
        .with_context(|| format!("no `{header}` next to its Resource impl"))?;
    block(&lines[start + 1..]).with_context(|| format!("unterminated `{header}`"))
}

/// Stable API versions only (`v1`, `v2`...): alpha and beta APIs are off by default.
fn is_stable_version(version: &str) -> bool {
    version
        .strip_prefix('v')
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn is_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The module folders of `rel` (a file path relative to the version folder).
fn module_segments(rel: &Path) -> Result<Vec<&str>> {
    let parent = rel
        .parent()
        .with_context(|| format!("{} has no parent module", rel.display()))?;
    parent
        .components()
        .map(|c| match c {
            Component::Normal(s) => s.to_str().filter(|s| is_identifier(s)),
            _ => None,
        })
        .map(|s| s.with_context(|| format!("{} is not a module path", rel.display())))
        .collect()
}

/// `api/core/v1/pod.rs` + `Pod` -> `k8s_openapi::api::core::v1::Pod`: the crate root
/// re-exports the enabled version module, so the version folder drops out of the path.
fn rust_path(rel: &Path, type_name: &str) -> Result<String> {
    let mut path = String::from("k8s_openapi");
    for segment in module_segments(rel)? {
        path.push_str("::");
        path.push_str(segment);
    }
    path.push_str("::");
    path.push_str(type_name);
    Ok(path)
}

/// `mod.rs` contents, read once each.
#[derive(Default)]
struct ModFiles(BTreeMap<PathBuf, BTreeSet<String>>);

impl ModFiles {
    /// Checks the derived path is real: every folder is a `pub mod` of its parent and the type
    /// is `pub use`d from its file's module.
    fn check_exported(&mut self, version_dir: &Path, rel: &Path, type_name: &str) -> Result<()> {
        let segments = module_segments(rel)?;
        let stem = rel
            .file_stem()
            .and_then(|s| s.to_str())
            .with_context(|| format!("{} has no file stem", rel.display()))?;
        let mut dir = version_dir.to_path_buf();
        for segment in segments {
            let item = format!("pub mod {segment};");
            if !self.lines(&dir)?.contains(&item) {
                bail!("{}/mod.rs has no `{item}`", dir.display());
            }
            dir.push(segment);
        }
        let item = format!("pub use self::{stem}::{type_name};");
        if !self.lines(&dir)?.contains(&item) {
            bail!("{}/mod.rs has no `{item}`", dir.display());
        }
        Ok(())
    }

    fn lines(&mut self, dir: &Path) -> Result<&BTreeSet<String>> {
        let path = dir.join("mod.rs");
        if !self.0.contains_key(&path) {
            let text = fs::read_to_string(&path)
                .with_context(|| format!("cannot read {}", path.display()))?;
            let lines = text.lines().map(|l| l.trim().to_owned()).collect();
            self.0.insert(path.clone(), lines);
        }
        self.0
            .get(&path)
            .with_context(|| format!("{} vanished from the cache", path.display()))
    }
}

/// The checked-in file, already in rustfmt's shape (rustfmt leaves `name! { ... }` bodies alone).
fn render(
    crate_version: &str,
    version_module: &str,
    listable: &[Entry],
    create_only: &[Entry],
) -> String {
    let mut out = format!(
        "// @generated by `cargo xtask codegen` from k8s-openapi {crate_version} ({version_module}). \
         Do not edit by hand.\n\ncrate::catalog::builtin_types! {{\n    listable: [\n"
    );
    for entry in listable {
        let _ = writeln!(
            out,
            "        ({}, {}),",
            entry.rust_path, entry.decl.has_status
        );
    }
    out.push_str("    ],\n    create_only: [\n");
    for entry in create_only {
        let _ = writeln!(out, "        {},", entry.rust_path);
    }
    out.push_str("    ],\n}\n");
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn checked_in_builtin_catalogue_is_up_to_date() {
        let root = workspace_root().unwrap();
        let generated = generate(&root).unwrap();
        let checked_in = fs::read_to_string(root.join(OUTPUT)).unwrap_or_default();
        assert!(
            checked_in == generated.text,
            "{OUTPUT} is out of date: run `cargo xtask codegen`"
        );
    }

    /// A trimmed-down file in the shape k8s-openapi generates.
    fn resource_file(
        name: &str,
        version: &str,
        scope: &str,
        listable: bool,
        status: bool,
    ) -> String {
        let status_field = if status {
            "    pub status: Option<crate::api::core::v1::PodStatus>,\n"
        } else {
            ""
        };
        let listable_impl = if listable {
            format!(
                "impl crate::ListableResource for {name} {{\n    const LIST_KIND: &'static str = \"{name}List\";\n}}\n"
            )
        } else {
            String::new()
        };
        format!(
            "/// Doc.\n#[derive(Clone, Debug, Default, PartialEq)]\npub struct {name} {{\n    \
             pub metadata: crate::apimachinery::pkg::apis::meta::v1::ObjectMeta,\n\n    \
             pub spec: Option<crate::api::core::v1::PodSpec>,\n{status_field}}}\n\n\
             impl crate::Resource for {name} {{\n    \
             const API_VERSION: &'static str = \"apps/{version}\";\n    \
             const GROUP: &'static str = \"apps\";\n    \
             const KIND: &'static str = \"{name}\";\n    \
             const VERSION: &'static str = \"{version}\";\n    \
             const URL_PATH_SEGMENT: &'static str = \"things\";\n    \
             type Scope = crate::{scope};\n}}\n\n{listable_impl}\n\
             impl crate::Metadata for {name} {{\n    type Ty = ObjectMeta;\n}}\n"
        )
    }

    fn parse_one(source: &str) -> ResourceDecl {
        let mut decls = parse_resources(source).unwrap();
        assert_eq!(decls.len(), 1);
        decls.pop().unwrap()
    }

    #[test]
    fn parses_a_listable_namespaced_resource_with_status() {
        let decl = parse_one(&resource_file(
            "Deployment",
            "v1",
            "NamespaceResourceScope",
            true,
            true,
        ));
        assert_eq!(
            decl,
            ResourceDecl {
                type_name: "Deployment".into(),
                group: "apps".into(),
                version: "v1".into(),
                kind: "Deployment".into(),
                scope: Scope::Namespace,
                listable: true,
                has_status: true,
            }
        );
    }

    #[test]
    fn parses_a_create_only_cluster_resource() {
        let decl = parse_one(&resource_file(
            "TokenReview",
            "v1",
            "ClusterResourceScope",
            false,
            true,
        ));
        assert_eq!(decl.scope, Scope::Cluster);
        assert!(!decl.listable);
    }

    #[test]
    fn detects_a_missing_status_field() {
        let decl = parse_one(&resource_file(
            "ConfigMap",
            "v1",
            "NamespaceResourceScope",
            true,
            false,
        ));
        assert!(!decl.has_status);
    }

    #[test]
    fn status_in_another_struct_does_not_count() {
        let mut source = resource_file("ConfigMap", "v1", "NamespaceResourceScope", true, false);
        source.push_str("pub struct Other {\n    pub status: Option<String>,\n}\n");
        assert!(!parse_one(&source).has_status);
    }

    #[test]
    fn parses_subresource_scope() {
        let decl = parse_one(&resource_file(
            "Scale",
            "v1",
            "SubResourceScope",
            false,
            true,
        ));
        assert_eq!(decl.scope, Scope::SubResource);
    }

    #[test]
    fn files_without_a_resource_impl_yield_nothing() {
        let source = "pub struct PodSpec {\n    pub containers: Vec<Container>,\n}\n";
        assert!(parse_resources(source).unwrap().is_empty());
    }

    #[test]
    fn generic_list_impl_is_not_a_resource() {
        let source = "impl<T> crate::Resource for List<T> where T: crate::ListableResource {\n    \
                      const KIND: &'static str = <T as crate::ListableResource>::LIST_KIND;\n}\n";
        assert!(parse_resources(source).unwrap().is_empty());
    }

    #[test]
    fn a_resource_without_a_literal_kind_is_an_error() {
        let source = resource_file("Pod", "v1", "NamespaceResourceScope", true, true).replace(
            "const KIND: &'static str = \"Pod\";",
            "const KIND: &'static str = OTHER;",
        );
        let error = format!("{:#}", parse_resources(&source).unwrap_err());
        assert!(error.contains("no parsable KIND"), "{error}");
    }

    #[test]
    fn an_unknown_scope_is_an_error() {
        let source = resource_file("Pod", "v1", "GalaxyResourceScope", true, true);
        let error = format!("{:#}", parse_resources(&source).unwrap_err());
        assert!(error.contains("no parsable Scope"), "{error}");
    }

    #[test]
    fn only_plain_vn_versions_are_stable() {
        assert!(is_stable_version("v1"));
        assert!(is_stable_version("v2"));
        assert!(!is_stable_version("v1beta1"));
        assert!(!is_stable_version("v1alpha3"));
        assert!(!is_stable_version("v"));
        assert!(!is_stable_version("1"));
        let beta = parse_one(&resource_file(
            "ResourceClaim",
            "v1beta2",
            "NamespaceResourceScope",
            true,
            true,
        ));
        assert!(!is_stable_version(&beta.version));
    }

    #[test]
    fn derives_the_rust_path_from_the_file_path() {
        assert_eq!(
            rust_path(Path::new("api/core/v1/pod.rs"), "Pod").unwrap(),
            "k8s_openapi::api::core::v1::Pod"
        );
        assert_eq!(
            rust_path(
                Path::new("apiextensions_apiserver/pkg/apis/apiextensions/v1/custom_resource_definition.rs"),
                "CustomResourceDefinition"
            )
            .unwrap(),
            "k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition"
        );
    }

    #[test]
    fn checks_that_the_type_is_reexported() {
        let dir = std::env::temp_dir().join(format!("xtask-codegen-test-{}", std::process::id()));
        let v1 = dir.join("api/core/v1");
        fs::create_dir_all(&v1).unwrap();
        fs::write(dir.join("mod.rs"), "pub mod api;\n").unwrap();
        fs::write(dir.join("api/mod.rs"), "pub mod core;\n").unwrap();
        fs::write(dir.join("api/core/mod.rs"), "pub mod v1;\n").unwrap();
        fs::write(v1.join("mod.rs"), "mod pod;\npub use self::pod::Pod;\n").unwrap();
        let mut mods = ModFiles::default();
        let rel = Path::new("api/core/v1/pod.rs");
        let ok = mods.check_exported(&dir, rel, "Pod");
        let missing = mods.check_exported(&dir, rel, "PodStatus");
        fs::remove_dir_all(&dir).unwrap();
        ok.unwrap();
        assert!(format!("{:#}", missing.unwrap_err()).contains("pub use self::pod::PodStatus;"));
    }

    #[test]
    fn picks_the_numerically_newest_version() {
        assert_eq!(
            newest_version(["v1_9", "v1_37", "v1_100", "list.rs", "v2_0"]),
            Some("v1_100")
        );
        assert_eq!(newest_version(["src", "v1_x"]), None);
    }

    #[test]
    fn finds_k8s_openapi_in_cargo_metadata() {
        let metadata = serde_json::json!({
            "packages": [
                { "name": "serde", "version": "1.0.0", "id": "serde", "manifest_path": "/r/serde/Cargo.toml" },
                { "name": "k8s-openapi", "version": "0.29.0", "id": "k8s", "manifest_path": "/r/k8s-openapi-0.29.0/Cargo.toml" },
            ],
            "resolve": { "nodes": [ { "id": "k8s", "features": ["latest", "std", "v1_37"] } ] },
        });
        let k8s = find_k8s_openapi(&metadata).unwrap();
        assert_eq!(k8s.dir, Path::new("/r/k8s-openapi-0.29.0"));
        assert_eq!(k8s.version, "0.29.0");
        k8s.check_enabled_version("v1_37").unwrap();
        assert!(k8s.check_enabled_version("v1_38").is_err());

        let error = find_k8s_openapi(&serde_json::json!({ "packages": [] })).unwrap_err();
        assert!(error.to_string().contains("k8s-openapi not found"));
    }

    #[test]
    fn renders_the_macro_invocation() {
        let entry = |path: &str, status| Entry {
            rust_path: path.into(),
            decl: ResourceDecl {
                type_name: String::new(),
                group: String::new(),
                version: "v1".into(),
                kind: String::new(),
                scope: Scope::Namespace,
                listable: true,
                has_status: status,
            },
        };
        let text = render(
            "0.29.0",
            "v1_37",
            &[entry("k8s_openapi::api::apps::v1::DaemonSet", true)],
            &[entry(
                "k8s_openapi::api::authentication::v1::TokenReview",
                true,
            )],
        );
        assert_eq!(
            text,
            "// @generated by `cargo xtask codegen` from k8s-openapi 0.29.0 (v1_37). Do not edit by hand.\n\
             \n\
             crate::catalog::builtin_types! {\n    \
             listable: [\n        \
             (k8s_openapi::api::apps::v1::DaemonSet, true),\n    \
             ],\n    \
             create_only: [\n        \
             k8s_openapi::api::authentication::v1::TokenReview,\n    \
             ],\n\
             }\n"
        );
    }
}
