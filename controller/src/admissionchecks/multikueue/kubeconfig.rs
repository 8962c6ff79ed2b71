//! Reading and checking worker kubeconfigs, with Kueue's rules and messages
//! (`loadClientConfig`, `validateKubeconfig`, `validateKubeConfigPath` in
//! `pkg/controller/admissionchecks/multikueue`).
//!
//! A kubeconfig comes from a Secret in the controller's namespace (key `kubeconfig`) or from a
//! file under a fixed directory. Reading it can fail (`BadKubeConfig`); what it says can be
//! unsafe to use in a manager that holds other clusters' credentials (`InsecureKubeConfig`):
//! files it would make the controller read, TLS turned off, credentials handed to a program,
//! a server address that is not a host name or IP. Messages never quote the kubeconfig: they
//! end up in the MultiKueueCluster's condition, readable by anyone who may read the cluster.

use std::path::{Path, PathBuf};

use api::constants::multikueue::{
    KUBECONFIG_SECRET_KEY, REASON_BAD_KUBECONFIG, REASON_INSECURE_KUBECONFIG,
};
use k8s_openapi::api::core::v1::Secret;
use kube::config::{AuthInfo, Cluster, Kubeconfig};

/// Why a cluster's kubeconfig is not used: the reason and message of its `Active=False`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub reason: &'static str,
    pub message: String,
}

/// Kueue's prefix of every message about a kubeconfig that cannot be used.
const LOAD_FAILED: &str = "load client config failed: ";

/// The reason Kueue gives a MultiKueueCluster that names a ClusterProfile while its feature gate
/// is off; Tollgate does not implement ClusterProfiles.
pub const REASON_CLUSTER_PROFILE_DISABLED: &str = "MultiKueueClusterProfileFeatureDisabled";

/// Where a MultiKueueCluster's kubeconfig is.
pub enum Source<'a> {
    /// A Secret of the controller's namespace (`None`: there is no such Secret).
    Secret {
        name: &'a str,
        secret: Option<&'a Secret>,
    },
    /// A file, which must resolve under `dir`.
    Path { location: &'a str, dir: &'a Path },
    /// A ClusterProfile reference.
    ClusterProfile,
    /// Neither.
    Missing,
}

/// The kubeconfig's bytes, or why they cannot be read (`BadKubeConfig`).
pub fn read(source: Source<'_>) -> Result<Vec<u8>, Refusal> {
    let bad = |why: String| Refusal {
        reason: REASON_BAD_KUBECONFIG,
        message: format!("{LOAD_FAILED}{why}"),
    };
    match source {
        Source::Secret { name, secret } => from_secret(name, secret).map_err(bad),
        Source::Path { location, dir } => {
            let path = resolve_path(location, dir).map_err(bad)?;
            read_file(&path).map_err(bad)
        }
        Source::ClusterProfile => Err(Refusal {
            reason: REASON_CLUSTER_PROFILE_DISABLED,
            message: format!("{LOAD_FAILED}MultiKueueClusterProfile feature gate is disabled"),
        }),
        Source::Missing => Err(bad("kubeconfig reference is nil".into())),
    }
}

/// The kubeconfig, parsed and checked, or why it may not be used (`InsecureKubeConfig`, which
/// Kueue also gives a kubeconfig that does not parse).
pub fn check(bytes: &[u8]) -> Result<Kubeconfig, Refusal> {
    let insecure = |why: String| Refusal {
        reason: REASON_INSECURE_KUBECONFIG,
        message: format!("{LOAD_FAILED}{why}"),
    };
    let config = parse(bytes).map_err(insecure)?;
    validate(&config).map_err(insecure)?;
    Ok(config)
}

fn from_secret(name: &str, secret: Option<&Secret>) -> Result<Vec<u8>, String> {
    let secret = secret.ok_or_else(|| format!("secrets {name:?} not found"))?;
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(KUBECONFIG_SECRET_KEY))
        .map(|b| b.0.clone())
        .ok_or_else(|| format!("key {KUBECONFIG_SECRET_KEY:?} not found in secret {name:?}"))
}

const NOT_ALLOWED: &str = "kubeconfig path is not under the allowed prefix";

/// The file a `locationType: Path` kubeconfig names, with its symlinks resolved, if it is under
/// `dir`: no `..`, an absolute path, and no symlink leading out.
pub fn resolve_path(raw: &str, dir: &Path) -> Result<PathBuf, String> {
    if raw.is_empty() {
        return Err("kubeconfig path must not be empty".into());
    }
    let cleaned = clean(raw);
    if cleaned.split('/').any(|c| c == "..") {
        return Err(format!("{NOT_ALLOWED}: path contains \"..\""));
    }
    if !cleaned.starts_with('/') {
        return Err(format!("{NOT_ALLOWED}: path must be absolute"));
    }
    let dir_text = dir.to_string_lossy();
    // No kubeconfig can be under a directory that does not exist.
    let Ok(allowed) = std::fs::canonicalize(dir) else {
        return Err(format!(
            "{NOT_ALLOWED}: {cleaned:?} is not under {:?}",
            clean(&dir_text)
        ));
    };
    let resolved = std::fs::canonicalize(&cleaned).map_err(|_| {
        let (at, e) = first_missing(&cleaned);
        format!("cannot resolve kubeconfig path symlinks: lstat {at}: {e}")
    })?;
    let allowed = allowed.to_string_lossy().into_owned();
    let resolved_text = resolved.to_string_lossy().into_owned();
    // The separator keeps `/etc/kueue-other` out of `/etc/kueue`.
    if !format!("{resolved_text}/").starts_with(&format!("{allowed}/")) {
        return Err(format!(
            "{NOT_ALLOWED}: {resolved_text:?} is not under {allowed:?}"
        ));
    }
    Ok(resolved)
}

fn read_file(path: &Path) -> Result<Vec<u8>, String> {
    if path.is_dir() {
        return Err(format!("read {}: is a directory", path.display()));
    }
    std::fs::read(path).map_err(|e| format!("open {}: {}", path.display(), errno_text(&e)))
}

/// The shortest prefix of `path` that cannot be looked at, and why (what Go's `EvalSymlinks`
/// reports).
fn first_missing(path: &str) -> (String, String) {
    let mut prefix = String::new();
    for part in path.split('/').filter(|p| !p.is_empty()) {
        prefix.push('/');
        prefix.push_str(part);
        if let Err(e) = std::fs::symlink_metadata(&prefix) {
            return (prefix, errno_text(&e));
        }
    }
    (path.to_owned(), "no such file or directory".into())
}

/// An OS error as Go writes it: `no such file or directory`.
fn errno_text(e: &std::io::Error) -> String {
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or(&text);
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A path cleaned lexically, as Go's `filepath.Clean`: `.` and doubled separators dropped, `..`
/// applied to what precedes it (and dropped at the root).
pub fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(last) if *last != ".." => {
                    parts.pop();
                }
                _ if rooted => {}
                _ => parts.push(".."),
            },
            p => parts.push(p),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// The kubeconfig, or a one-line reason it does not parse that quotes none of it.
fn parse(bytes: &[u8]) -> Result<Kubeconfig, String> {
    let failed = |why: &str| format!("failed to parse kubeconfig(apiconfig): {why}");
    let text = std::str::from_utf8(bytes).map_err(|_| failed("not valid UTF-8"))?;
    // As client-go reads it: nothing at all is an empty configuration.
    if text.trim().is_empty() {
        return Ok(Kubeconfig::default());
    }
    serde_yaml::from_str::<Kubeconfig>(text).map_err(|e| match e.location() {
        Some(at) => failed(&format!(
            "not a kubeconfig (line {}, column {})",
            at.line(),
            at.column()
        )),
        None => failed("not a kubeconfig"),
    })
}

/// Kueue's `validateKubeconfig`: rules on every user and cluster of the file, then on what the
/// current context selects, as client-go would build a client from it.
pub fn validate(config: &Kubeconfig) -> Result<(), String> {
    for user in &config.auth_infos {
        // A token is fine (service account tokens); a token file would be read on the manager.
        if user
            .auth_info
            .as_ref()
            .and_then(|a| a.token_file.as_deref())
            .is_some_and(|f| !f.is_empty())
        {
            return Err("tokenFile is not allowed".into());
        }
    }
    for named in &config.clusters {
        let name = &named.name;
        let cluster = named.cluster.clone().unwrap_or_default();
        if cluster.insecure_skip_tls_verify == Some(true) {
            return Err(format!(
                "insecure TLS verification is not allowed for cluster {name}"
            ));
        }
        if cluster
            .certificate_authority
            .as_deref()
            .is_some_and(|f| !f.is_empty())
        {
            return Err(format!(
                "certificate-authority file paths are not allowed, use certificate-authority-data for cluster {name}"
            ));
        }
        if cluster.server.as_deref().unwrap_or("").is_empty() {
            return Err(format!("server URL is required for cluster {name}"));
        }
    }
    let (cluster, user) = selected(config)?;
    validate_selected(&cluster, &user)
}

/// The cluster and user of the current context, or client-go's `ConfirmUsable` error.
fn selected(config: &Kubeconfig) -> Result<(Cluster, AuthInfo), String> {
    const EMPTY_CLUSTER: &str = "cluster has no server defined";
    let mut errors: Vec<String> = Vec::new();
    let context_name = config.current_context.clone().unwrap_or_default();
    let context = config
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.clone());
    if !context_name.is_empty() && context.is_none() {
        errors.push(format!(
            "context was not found for specified context: {context_name}"
        ));
    }
    let context = context.unwrap_or_default();
    let cluster = config
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.clone())
        .unwrap_or_default();
    let user = config
        .auth_infos
        .iter()
        .find(|a| Some(&a.name) == context.user.as_ref())
        .and_then(|a| a.auth_info.clone())
        .unwrap_or_default();
    if cluster.server.as_deref().unwrap_or("").is_empty() {
        errors.push(EMPTY_CLUSTER.into());
    }
    match errors.as_slice() {
        [] => Ok((cluster, user)),
        // client-go's "no config" error when nothing but the server is missing.
        [only] if only == EMPTY_CLUSTER => Err("invalid configuration: no configuration has \
             been provided, try setting KUBERNETES_MASTER environment variable"
            .into()),
        [only] => Err(format!("invalid configuration: {only}")),
        many => Err(format!("invalid configuration: [{}]", many.join(", "))),
    }
}

/// Kueue's `validateRestConfig` on what the current context selects.
fn validate_selected(cluster: &Cluster, user: &AuthInfo) -> Result<(), String> {
    if user.token_file.as_deref().is_some_and(|f| !f.is_empty()) {
        return Err("bearerTokenFile is not allowed".into());
    }
    let server = cluster.server.as_deref().unwrap_or("").to_lowercase();
    if !is_valid_host(&server) {
        return Err("untrusted server endpoint".into());
    }
    // kube-rs keeps the password behind `secrecy`; its serialized form says whether it is set.
    let password = serde_json::to_value(user)
        .ok()
        .and_then(|u| u.get("password")?.as_str().map(|p| !p.is_empty()))
        .unwrap_or(false);
    if user.username.as_deref().is_some_and(|u| !u.is_empty()) || password {
        return Err("basic auth is not allowed".into());
    }
    if user.exec.is_some() {
        return Err("exec plugins are not allowed".into());
    }
    if user.auth_provider.is_some() {
        return Err("auth providers are not allowed".into());
    }
    Ok(())
}

/// Whether a server URL's host is an IP address or a DNS name (RFC 1123 subdomain), as Go's
/// `url.Parse` reads it: a URL without a scheme has no host at all.
pub fn is_valid_host(server: &str) -> bool {
    let Some((scheme, rest)) = server.split_once("://") else {
        return false;
    };
    let mut chars = scheme.chars();
    let scheme_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok {
        return false;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = split_host_port(host_port).unwrap_or(host_port);
    host.parse::<std::net::IpAddr>().is_ok() || is_dns1123_subdomain(host)
}

/// Go's `net.SplitHostPort`: the host of `host:port` or `[v6]:port`; `None` without a port.
fn split_host_port(hp: &str) -> Option<&str> {
    if let Some(rest) = hp.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        return after.strip_prefix(':').map(|_| host);
    }
    let (host, _port) = hp.rsplit_once(':')?;
    // Two colons outside brackets is an IPv6 address without a port.
    (!host.contains(':')).then_some(host)
}

/// Kubernetes' `IsDNS1123Subdomain`.
pub fn is_dns1123_subdomain(s: &str) -> bool {
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
            && b[0] != b'-'
            && b[b.len() - 1] != b'-'
    };
    s.len() <= 253 && s.split('.').all(label_ok)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use k8s_openapi::ByteString;
    use rstest::rstest;

    /// A kubeconfig with one cluster `worker` at `server`, one user `manager` and a current
    /// context; `cluster` and `user` are extra lines of each (indented by the caller).
    fn kubeconfig(server: &str, cluster: &str, user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: worker\n  cluster:\n    server: {server}\n    certificate-authority-data: Q0EK\n{cluster}\
             users:\n- name: manager\n  user:\n    token: s3cr3t-token\n{user}\
             contexts:\n- name: worker\n  context:\n    cluster: worker\n    user: manager\ncurrent-context: worker\n"
        )
    }

    const SERVER: &str = "https://worker-1.example.com:6443";

    #[rstest]
    #[case::a_token_and_ca_data(kubeconfig(SERVER, "", ""), None)]
    #[case::an_ip_address(kubeconfig("http://127.0.0.1:8080", "", ""), None)]
    #[case::an_ipv6_address(kubeconfig("https://[fd00::1]:6443", "", ""), None)]
    #[case::upper_case_host(kubeconfig("https://Worker-1.Example.COM", "", ""), None)]
    #[case::a_client_certificate(
        kubeconfig(
            SERVER,
            "",
            "    client-certificate-data: Q0VSVAo=\n    client-key-data: S0VZCg==\n"
        ),
        None
    )]
    #[case::token_file(
        kubeconfig(SERVER, "", "    tokenFile: /var/run/token\n"),
        Some("tokenFile is not allowed")
    )]
    #[case::insecure_tls(
        kubeconfig(SERVER, "    insecure-skip-tls-verify: true\n", ""),
        Some("insecure TLS verification is not allowed for cluster worker")
    )]
    #[case::ca_file(
        kubeconfig(SERVER, "    certificate-authority: /etc/ca.crt\n", ""),
        Some(
            "certificate-authority file paths are not allowed, use certificate-authority-data for cluster worker"
        )
    )]
    #[case::empty_server(
        kubeconfig("\"\"", "", ""),
        Some("server URL is required for cluster worker")
    )]
    #[case::basic_auth(
        kubeconfig(SERVER, "", "    username: admin\n"),
        Some("basic auth is not allowed")
    )]
    #[case::a_password_alone(
        kubeconfig(SERVER, "", "    password: hunter2\n"),
        Some("basic auth is not allowed")
    )]
    #[case::exec_plugin(
        kubeconfig(
            SERVER,
            "",
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/steal\n"
        ),
        Some("exec plugins are not allowed")
    )]
    #[case::auth_provider(
        kubeconfig(SERVER, "", "    auth-provider:\n      name: oidc\n"),
        Some("auth providers are not allowed")
    )]
    #[case::host_not_a_dns_name(
        kubeconfig("https://worker_1.example:6443", "", ""),
        Some("untrusted server endpoint")
    )]
    #[case::no_scheme(
        kubeconfig("worker-1.example.com:6443", "", ""),
        Some("untrusted server endpoint")
    )]
    #[case::no_host(kubeconfig("https://:6443", "", ""), Some("untrusted server endpoint"))]
    #[case::unknown_current_context(
        kubeconfig(SERVER, "", "").replace("current-context: worker", "current-context: gone"),
        Some("invalid configuration: [context was not found for specified context: gone, cluster has no server defined]"))]
    #[case::no_current_context(
        kubeconfig(SERVER, "", "").replace("current-context: worker\n", ""),
        Some("invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER environment variable"))]
    #[case::empty("".to_owned(),
        Some("invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER environment variable"))]
    #[case::a_second_cluster_insecure(
        kubeconfig(
            SERVER,
            "- name: other\n  cluster:\n    server: https://other.example\n    insecure-skip-tls-verify: true\n",
            ""
        ),
        Some("insecure TLS verification is not allowed for cluster other")
    )]
    #[case::not_yaml("clusters: [s3cr3t-token".to_owned(),
        Some("failed to parse kubeconfig(apiconfig): not a kubeconfig (line 1, column 12)"))]
    #[case::not_a_kubeconfig("clusters: s3cr3t-token\n".to_owned(),
        Some("failed to parse kubeconfig(apiconfig): not a kubeconfig (line 1, column 11)"))]
    fn kubeconfigs_that_would_weaken_the_manager_are_refused(
        #[case] text: String,
        #[case] refused: Option<&str>,
    ) {
        let got = check(text.as_bytes())
            .map(|_| ())
            .map_err(|r| (r.reason, r.message));
        let want = match refused {
            None => Ok(()),
            Some(why) => Err((
                REASON_INSECURE_KUBECONFIG,
                format!("load client config failed: {why}"),
            )),
        };
        assert_eq!(got, want);
        if let Err((_, message)) = got {
            assert!(
                !message.contains("s3cr3t"),
                "the message quotes the kubeconfig"
            );
        }
    }

    fn secret(data: &[(&str, &str)]) -> Secret {
        Secret {
            data: Some(
                data.iter()
                    .map(|(k, v)| (k.to_string(), ByteString(v.as_bytes().to_vec())))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..Default::default()
        }
    }

    #[rstest]
    #[case::the_key(Some(secret(&[("kubeconfig", "text")])), Ok("text"))]
    #[case::no_secret(None, Err((REASON_BAD_KUBECONFIG,
        "load client config failed: secrets \"worker-1\" not found")))]
    #[case::no_key(Some(secret(&[("config", "text")])), Err((REASON_BAD_KUBECONFIG,
        "load client config failed: key \"kubeconfig\" not found in secret \"worker-1\"")))]
    fn a_secret_holds_the_kubeconfig_under_its_key(
        #[case] stored: Option<Secret>,
        #[case] want: Result<&str, (&str, &str)>,
    ) {
        let got = read(Source::Secret {
            name: "worker-1",
            secret: stored.as_ref(),
        });
        let got = got
            .as_ref()
            .map(|b| std::str::from_utf8(b).expect("utf-8"))
            .map_err(|r| (r.reason, r.message.as_str()));
        assert_eq!(got, want);
    }

    #[rstest]
    #[case::cluster_profile(
        Source::ClusterProfile,
        "MultiKueueClusterProfileFeatureDisabled",
        "load client config failed: MultiKueueClusterProfile feature gate is disabled"
    )]
    #[case::nothing(
        Source::Missing,
        "BadKubeConfig",
        "load client config failed: kubeconfig reference is nil"
    )]
    fn a_cluster_without_a_kubeconfig_is_refused(
        #[case] source: Source<'static>,
        #[case] reason: &str,
        #[case] message: &str,
    ) {
        let got = read(source).expect_err("refused");
        assert_eq!((got.reason, got.message.as_str()), (reason, message));
    }

    /// `{base}/kubeconfigs/` (the allowed directory) with `w1`, a directory `sub`, and `out`, a
    /// symlink to `{base}/outside/w2`; `{base}/kubeconfigs-other/w3` beside it.
    fn layout() -> (tempfile::TempDir, String) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(tmp.path()).expect("canonical");
        let dir = base.join("kubeconfigs");
        for d in ["kubeconfigs/sub", "outside", "kubeconfigs-other"] {
            std::fs::create_dir_all(base.join(d)).expect("mkdir");
        }
        std::fs::write(dir.join("w1"), "one").expect("write");
        std::fs::write(base.join("outside/w2"), "two").expect("write");
        std::fs::write(base.join("kubeconfigs-other/w3"), "three").expect("write");
        std::os::unix::fs::symlink(base.join("outside/w2"), dir.join("out")).expect("symlink");
        std::os::unix::fs::symlink(dir.join("w1"), dir.join("alias")).expect("symlink");
        (tmp, base.to_string_lossy().into_owned())
    }

    const NOT_UNDER: &str = "kubeconfig path is not under the allowed prefix";

    #[rstest]
    #[case::a_file_in_it("{base}/kubeconfigs/w1", Ok("one"))]
    #[case::a_symlink_within("{base}/kubeconfigs/alias", Ok("one"))]
    #[case::cleaned_first("{base}/kubeconfigs/sub/../w1", Ok("one"))]
    #[case::empty("", Err("kubeconfig path must not be empty".to_owned()))]
    #[case::relative("kubeconfigs/w1", Err(format!("{NOT_UNDER}: path must be absolute")))]
    #[case::climbing_relative("../kubeconfigs/w1", Err(format!("{NOT_UNDER}: path contains \"..\"")))]
    #[case::climbing_out("{base}/kubeconfigs/../outside/w2",
        Err(format!("{NOT_UNDER}: \"{{base}}/outside/w2\" is not under \"{{base}}/kubeconfigs\"")))]
    #[case::a_symlink_out("{base}/kubeconfigs/out",
        Err(format!("{NOT_UNDER}: \"{{base}}/outside/w2\" is not under \"{{base}}/kubeconfigs\"")))]
    #[case::a_sibling_with_the_same_prefix("{base}/kubeconfigs-other/w3",
        Err(format!("{NOT_UNDER}: \"{{base}}/kubeconfigs-other/w3\" is not under \"{{base}}/kubeconfigs\"")))]
    #[case::missing("{base}/kubeconfigs/nope/w9",
        Err("cannot resolve kubeconfig path symlinks: lstat {base}/kubeconfigs/nope: no such file or directory".to_owned()))]
    #[case::a_directory("{base}/kubeconfigs/sub",
        Err("read {base}/kubeconfigs/sub: is a directory".to_owned()))]
    fn path_kubeconfigs_stay_under_their_directory(
        #[case] raw: &str,
        #[case] want: Result<&str, String>,
    ) {
        let (_tmp, base) = layout();
        let dir = PathBuf::from(format!("{base}/kubeconfigs"));
        let raw = raw.replace("{base}", &base);
        let got = read(Source::Path {
            location: &raw,
            dir: &dir,
        });
        let got = got
            .as_ref()
            .map(|b| std::str::from_utf8(b).expect("utf-8"))
            .map_err(|r| (r.reason, r.message.clone()));
        let want = want.map_err(|why| {
            (
                REASON_BAD_KUBECONFIG,
                format!(
                    "load client config failed: {}",
                    why.replace("{base}", &base)
                ),
            )
        });
        assert_eq!(got, want);
    }

    #[test]
    fn no_kubeconfig_is_under_a_directory_that_does_not_exist() {
        let got = resolve_path("/etc/hosts", Path::new("/nonexistent/./kubeconfigs/"));
        assert_eq!(
            got,
            Err(format!(
                "{NOT_UNDER}: \"/etc/hosts\" is not under \"/nonexistent/kubeconfigs\""
            ))
        );
    }

    #[rstest]
    #[case("", ".")]
    #[case("/", "/")]
    #[case("a//b/./c/", "a/b/c")]
    #[case("/a/b/../../..", "/")]
    #[case("/../x", "/x")]
    #[case("a/../..", "..")]
    #[case("../../a", "../../a")]
    #[case("./", ".")]
    fn paths_are_cleaned_as_go_cleans_them(#[case] path: &str, #[case] cleaned: &str) {
        assert_eq!(clean(path), cleaned);
    }

    #[rstest]
    #[case("https://worker.example", true)]
    #[case("https://user@worker.example:6443/prefix?x=1", true)]
    #[case("https://10.0.0.1:6443", true)]
    #[case("https://[::1]:6443", true)]
    #[case("https://[::1]", false)]
    #[case("https://::1", true)]
    #[case("https://-worker.example", false)]
    #[case("https://worker..example", false)]
    #[case("https://WORKER.example", false)]
    #[case("10.0.0.1:6443", false)]
    #[case("1https://worker.example", false)]
    #[case("", false)]
    fn a_server_is_an_ip_or_a_dns_name(#[case] server: &str, #[case] valid: bool) {
        assert_eq!(is_valid_host(server), valid);
    }
}
