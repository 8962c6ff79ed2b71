//! The reference control plane as its users meet it: `cargo xtask control-plane up|down|build`
//! (this crate's binary) and the library's `ControlPlane`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use control_plane::testing;
use control_plane::{Binaries, Component, ControlPlane, Options};
use k8s_openapi::api::core::v1::{Secret, ServiceAccount};

fn binary() -> Command {
    Command::new(env!("CARGO_BIN_EXE_control-plane"))
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("the control-plane binary runs")
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The pids `up` wrote for `down`.
fn pids(dir: &Path) -> Vec<u32> {
    let state: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("state.json")).expect("up writes state.json"),
    )
    .expect("state.json is JSON");
    state["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .map(|p| p[1].as_u64().expect("pid") as u32)
        .collect()
}

fn alive(pid: u32) -> bool {
    control_plane::process::alive(nix::unistd::Pid::from_raw(pid as i32))
}

#[test]
fn build_without_go_says_what_to_install() {
    let empty = tempfile::tempdir().expect("tempdir");
    let out = run(binary()
        .arg("build")
        .arg("--out")
        .arg(empty.path().join("bin"))
        .env("PATH", empty.path()));
    assert!(!out.status.success());
    let said = text(&out);
    assert!(
        said.contains("the go command was not found: install Go 1.26 or newer"),
        "{said}"
    );
    assert!(said.contains("KUBEBUILDER_ASSETS"), "{said}");
    assert!(!empty.path().join("bin/kube-apiserver").exists());
}

#[test]
fn a_missing_binary_names_the_command_that_builds_it() {
    let empty = tempfile::tempdir().expect("tempdir");
    let err = Binaries::in_dir(empty.path())
        .path(Component::ApiServer)
        .expect_err("nothing is there");
    let msg = err.to_string();
    assert!(msg.starts_with("kube-apiserver was not found"), "{msg}");
    assert!(msg.contains("cargo xtask control-plane build"), "{msg}");
    assert!(msg.contains("KUBEBUILDER_ASSETS"), "{msg}");
    assert_eq!(msg.lines().count(), 1, "{msg}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_refuses_before_starting_anything_when_a_binary_is_missing() {
    let empty = tempfile::tempdir().expect("tempdir");
    let dir = empty.path().join("run");
    let result = ControlPlane::start(&Binaries::in_dir(empty.path()), Options::new(&dir)).await;
    assert!(matches!(
        result,
        Err(control_plane::Error::MissingBinary { binary: "etcd", .. })
    ));
    assert!(!dir.exists(), "nothing was written");
}

#[test]
fn up_then_down_leaves_nothing_running() {
    if !testing::available(&Binaries::locate()) {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("run");
    let up = run(binary().arg("up").arg("--dir").arg(&dir));
    assert!(up.status.success(), "{}", text(&up));
    let kubeconfig = PathBuf::from(String::from_utf8_lossy(&up.stdout).trim());
    assert_eq!(kubeconfig, dir.join("kubeconfig"));
    let pids = pids(&dir);
    assert_eq!(
        pids.len(),
        4,
        "etcd, kube-apiserver, kube-controller-manager, kube-scheduler"
    );
    assert!(pids.iter().all(|p| alive(*p)));

    // A second `up` on the same directory refuses and leaves the first alone.
    let again = run(binary().arg("up").arg("--dir").arg(&dir));
    assert!(!again.status.success());
    assert!(
        text(&again).contains("is already running"),
        "{}",
        text(&again)
    );

    // kubectl, as a user would, sees a v1.37 server.
    let version = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["version", "-o", "json"])
        .output();
    match version {
        Err(_) if std::env::var_os("TOLLGATE_REQUIRE_KUBECTL").is_none() => {
            eprintln!("skipping the kubectl check: kubectl is not on PATH")
        }
        version => {
            let version = version.expect("kubectl runs (TOLLGATE_REQUIRE_KUBECTL is set)");
            assert!(version.status.success(), "{}", text(&version));
            let v: serde_json::Value = serde_json::from_slice(&version.stdout).expect("json");
            assert_eq!(v["serverVersion"]["minor"], "37", "{v}");
        }
    }

    let down = run(binary().arg("down").arg("--dir").arg(&dir));
    assert!(down.status.success(), "{}", text(&down));
    assert!(pids.iter().all(|p| !alive(*p)), "every process stopped");
    assert!(!dir.exists(), "down deletes the directory");
}

#[test]
fn kubebuilder_assets_are_used_first() {
    let built = Binaries::locate();
    if !testing::available(&built) {
        return;
    }
    // An envtest-style directory: etcd and kube-apiserver only.
    let assets = tempfile::tempdir().expect("tempdir");
    for c in [Component::Etcd, Component::ApiServer] {
        std::os::unix::fs::symlink(
            built.path(c).expect("built"),
            assets.path().join(c.binary()),
        )
        .expect("symlink");
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("run");
    let up = run(binary()
        .args(["up", "--no-controllers", "--dir"])
        .arg(&dir)
        .env("KUBEBUILDER_ASSETS", assets.path()));
    assert!(up.status.success(), "{}", text(&up));
    let pids = pids(&dir);
    let cmdlines: Vec<String> = pids
        .iter()
        .map(|p| std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default())
        .collect();
    let down = run(binary().arg("down").arg("--dir").arg(&dir));
    assert!(down.status.success(), "{}", text(&down));
    assert_eq!(pids.len(), 2, "envtest's two: etcd and kube-apiserver");
    let prefix = assets.path().display().to_string();
    assert!(
        cmdlines.iter().all(|c| c.starts_with(&prefix)),
        "started from KUBEBUILDER_ASSETS ({prefix}): {cmdlines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_account_token_gets_only_what_rbac_grants() {
    let Some(cp) = testing::shared().await else {
        return;
    };
    let admin = cp.client().await.expect("admin client");
    let version = admin.apiserver_version().await.expect("/version");
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "37")
    );

    // kube-controller-manager made the namespace's ServiceAccount; the TokenRequest API signs a
    // token for it with the generated key.
    let ns = "token-test";
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(admin.clone());
    let _ = namespaces
        .create(
            &Default::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": ns}})).expect("ns"),
        )
        .await;
    let accounts: kube::Api<ServiceAccount> = kube::Api::namespaced(admin.clone(), ns);
    let sa = kube::runtime::wait::await_condition(
        accounts.clone(),
        "default",
        |sa: Option<&ServiceAccount>| sa.is_some(),
    );
    tokio::time::timeout(std::time::Duration::from_secs(60), sa)
        .await
        .expect("the default ServiceAccount within a minute")
        .expect("watch");
    let token = accounts
        .create_token_request("default", &Default::default(), &Default::default())
        .await
        .expect("TokenRequest")
        .status
        .expect("status")
        .token
        .expect("a token");
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = tmp.path().join("sa.kubeconfig");
    cp.write_token_kubeconfig(&path, &token)
        .expect("kubeconfig");
    let as_sa = control_plane::client_for(&path).await.expect("client");
    let secrets: kube::Api<Secret> = kube::Api::namespaced(as_sa, ns);
    match secrets.list(&Default::default()).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 403);
            assert!(
                s.message
                    .contains("User \"system:serviceaccount:token-test:default\" cannot list resource \"secrets\""),
                "{}",
                s.message
            );
        }
        other => panic!("a ServiceAccount with no roles listed Secrets: {other:?}"),
    }
}
