//! The controller installed as a user installs it, on the reference control plane (the real
//! kube-apiserver): the manifests of `cargo xtask manifests` applied with `kubectl apply
//! --server-side`, then the `controller` binary run as the Deployment runs it, with its
//! ServiceAccount's token and the ConfigMap's configuration. Its RBAC must be enough to admit a
//! Job and no more than it needs.
//!
//! The control plane is shared by this binary's tests: names are unique per process. Its Job
//! controller is off, so no pods run; the Job being unsuspended is what a user would see.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::kueue::Workload;
use control_plane::ControlPlane;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::ClusterRoleBinding;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, ResourceExt};
use tokio::sync::OnceCell;

const TIMEOUT: Duration = Duration::from_secs(90);

/// The manifests applied, and what the controller's process needs to run as the Deployment.
struct Installed {
    install: controller::install::Install,
    /// Authenticates as the installed ServiceAccount.
    token_kubeconfig: PathBuf,
    /// The ConfigMap's configuration, as the Deployment mounts it.
    config: PathBuf,
    /// The Deployment's container: its args and environment.
    args: Vec<String>,
    env: Vec<(String, String)>,
}

/// Applies the manifests once per test binary; waits until the CRDs serve.
async fn installed(cp: &ControlPlane) -> &'static Installed {
    static INSTALLED: OnceCell<Installed> = OnceCell::const_new();
    INSTALLED.get_or_init(|| install(cp)).await
}

async fn install(cp: &ControlPlane) -> Installed {
    let install = controller::install::Install::default();
    let dir = cp.dir().join(format!("install-{}", std::process::id()));
    let manifests = dir.join("manifests");
    install.write(&manifests).expect("write the manifests");
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(cp.kubeconfig())
        .args(["apply", "--server-side", "-f"])
        .arg(&manifests)
        .output()
        .expect("run kubectl (it must be on PATH)");
    assert!(
        out.status.success(),
        "kubectl apply: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    let admin = cp.client().await.expect("admin client");
    let crds: Api<CustomResourceDefinition> = Api::all(admin.clone());
    for (file, _) in api::CHECKED_IN_CRDS {
        let name = file.trim_end_matches(".yaml");
        within(
            "the CRD established",
            await_condition(crds.clone(), name, conditions::is_crd_established()),
        )
        .await
        .expect("watch the CRD");
    }

    // What the Deployment runs: its args and env, with the ConfigMap as a file.
    let deployment: Deployment = read_yaml(&manifests.join("50-deployment.yaml"));
    let config_map: ConfigMap = read_yaml(&manifests.join("40-config.yaml"));
    let container = &deployment
        .spec
        .template
        .spec
        .as_ref()
        .expect("pod spec")
        .containers[0];
    let config_text = config_map
        .data
        .as_ref()
        .and_then(|d| d.get(controller::install::CONFIG_FILE))
        .expect("the ConfigMap holds the configuration");
    let config = dir.join(controller::install::CONFIG_FILE);
    std::fs::write(&config, config_text).expect("write the configuration");
    let args = container.args.clone().unwrap_or_default();
    let env = container
        .env
        .iter()
        .flatten()
        .map(|e| (e.name.clone(), e.value.clone().unwrap_or_default()))
        .collect();

    // The ServiceAccount's token, from the TokenRequest API, as the kubelet would mount it.
    let accounts: Api<ServiceAccount> = Api::namespaced(admin, &install.namespace);
    let token = accounts
        .create_token_request(&install.name, &PostParams::default(), &Default::default())
        .await
        .expect("TokenRequest for the controller's ServiceAccount")
        .status
        .and_then(|s| s.token)
        .expect("a token");
    let token_kubeconfig = dir.join("controller.kubeconfig");
    cp.write_token_kubeconfig(&token_kubeconfig, &token)
        .expect("token kubeconfig");
    Installed {
        install,
        token_kubeconfig,
        config,
        args,
        env,
    }
}

fn read_yaml<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    let text = std::fs::read_to_string(path).expect("read a manifest");
    serde_yaml::from_str(&text).expect("parse a manifest")
}

async fn within<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(TIMEOUT, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: not within {TIMEOUT:?}"))
}

/// The controller process; killed when dropped. Its stderr is kept (and echoed).
struct Running {
    child: Child,
    stderr: Arc<Mutex<Vec<String>>>,
}

impl Running {
    fn start(installed: &Installed) -> Running {
        // The Deployment's flags, with the mounted file and the port replaced by local ones.
        let args: Vec<String> = installed
            .args
            .iter()
            .map(|a| {
                if a.starts_with("--config=") {
                    format!("--config={}", installed.config.display())
                } else if a.starts_with("--metrics-bind-address=") {
                    "--metrics-bind-address=127.0.0.1:0".to_owned()
                } else {
                    a.clone()
                }
            })
            .collect();
        assert!(
            args.iter().any(|a| a.starts_with("--leader-elect-lease=")),
            "{args:?}"
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_controller"))
            .arg("--kubeconfig")
            .arg(&installed.token_kubeconfig)
            .args(&args)
            .envs(installed.env.iter().cloned())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the controller");
        let pipe = child.stderr.take().expect("stderr");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let lines = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                eprintln!("controller: {line}");
                lines.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
        Running { child, stderr }
    }

    fn stderr(&self) -> Vec<String> {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Creates a namespaced or cluster-scoped object from YAML, as admin.
async fn create(client: &Client, yaml: &str) {
    let obj: DynamicObject = serde_yaml::from_str(yaml).expect("object");
    let gvk =
        kube::api::GroupVersionKind::try_from(obj.types.as_ref().expect("types")).expect("gvk");
    let (ar, _) = kube::discovery::pinned_kind(client, &gvk)
        .await
        .expect("discovery");
    let api: Api<DynamicObject> = match &obj.metadata.namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    api.create(&PostParams::default(), &obj)
        .await
        .unwrap_or_else(|e| panic!("create {}: {e}", obj.name_any()));
}

fn unique(prefix: &str) -> String {
    format!("{prefix}-{}", std::process::id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_installed_controller_admits_a_job_with_its_service_account() {
    let Some(cp) = control_plane::testing::shared().await else {
        return;
    };
    let installed = installed(cp).await;
    let admin = cp.client().await.expect("admin client");
    let controller = Running::start(installed);

    let ns = unique("install-jobs");
    let flavor = unique("install-flavor");
    let cq = unique("install-cq");
    create(
        &admin,
        &format!("{{apiVersion: v1, kind: Namespace, metadata: {{name: {ns}}}}}"),
    )
    .await;
    create(
        &admin,
        &format!(
            "apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {{name: {flavor}}}
spec: {{}}"
        ),
    )
    .await;
    create(
        &admin,
        &format!(
            "apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {{name: {cq}}}
spec:
  namespaceSelector: {{}}
  resourceGroups:
    - coveredResources: [cpu, memory]
      flavors:
        - name: {flavor}
          resources: [{{name: cpu, nominalQuota: '2'}}, {{name: memory, nominalQuota: 2Gi}}]"
        ),
    )
    .await;
    create(
        &admin,
        &format!(
            "apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {{name: main, namespace: {ns}}}
spec: {{clusterQueue: {cq}}}"
        ),
    )
    .await;
    create(
        &admin,
        &format!(
            "apiVersion: batch/v1
kind: Job
metadata:
  name: sample
  namespace: {ns}
  labels: {{{queue}: main}}
spec:
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: registry.k8s.io/pause:3.10
          resources: {{requests: {{cpu: 500m, memory: 256Mi}}}}",
            queue = api::constants::label::QUEUE_NAME
        ),
    )
    .await;

    // What a user sees: the Job's Workload admitted and the Job unsuspended.
    let jobs: Api<Job> = Api::namespaced(admin.clone(), &ns);
    let job = jobs.get("sample").await.expect("the Job");
    let wl_name = controller::jobs::workload_name("sample", &job.uid().expect("uid"));
    let workloads: Api<Workload> = Api::namespaced(admin.clone(), &ns);
    within(
        "the Workload admitted",
        await_condition(workloads, &wl_name, |wl: Option<&Workload>| {
            wl.is_some_and(controller::workload::is_admitted)
        }),
    )
    .await
    .expect("watch the Workload");
    within(
        "the Job unsuspended",
        await_condition(jobs, "sample", |job: Option<&Job>| {
            job.and_then(|j| j.spec.as_ref())
                .is_some_and(|s| s.suspend == Some(false))
        }),
    )
    .await
    .expect("watch the Job");
    // Its Events, recorded through events.k8s.io with the controller's rights.
    let events: Api<Event> = Api::namespaced(admin.clone(), &ns);
    let started = watcher(events, watcher::Config::default())
        .applied_objects()
        .try_filter(|e| {
            futures::future::ready(
                e.reason.as_deref() == Some("Started")
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("sample"),
            )
        });
    within("the Job's Started event", Box::pin(started).next())
        .await
        .expect("a Started event")
        .expect("watch the events");
    // The Lease it runs under, taken with the Role's rights.
    let leases: Api<Lease> = Api::namespaced(admin.clone(), &installed.install.namespace);
    within(
        "the Lease held",
        await_condition(leases, &installed.install.name, |l: Option<&Lease>| {
            l.and_then(|l| l.spec.as_ref())
                .and_then(|s| s.holder_identity.as_ref())
                .is_some()
        }),
    )
    .await
    .expect("watch the Lease");
    // The Deployment's pod passes admission (the restricted Pod Security Standard, the
    // ServiceAccount). With no nodes here it stays Pending, and with no kubelet it never runs.
    let pods: Api<Pod> = Api::namespaced(admin.clone(), &installed.install.namespace);
    let selector = format!("app.kubernetes.io/name={}", installed.install.name);
    let pod = watcher(pods, watcher::Config::default().labels(&selector)).applied_objects();
    within("the Deployment's pod created", Box::pin(pod).next())
        .await
        .expect("a pod")
        .expect("watch the pods");

    let mut child = controller;
    assert!(
        child.child.try_wait().expect("try_wait").is_none(),
        "the controller exited"
    );
    let refused: Vec<String> = child
        .stderr()
        .into_iter()
        .filter(|l| l.to_lowercase().contains("forbidden") || l.contains("code: 403"))
        .collect();
    assert!(
        refused.is_empty(),
        "requests the RBAC refused:\n{}",
        refused.join("\n")
    );
}

fn assert_forbidden<T: std::fmt::Debug>(what: &str, result: Result<T, kube::Error>) {
    match result {
        Err(kube::Error::Api(s)) if s.code == 403 => {}
        other => panic!("{what}: expected 403 Forbidden, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_account_may_do_nothing_the_controller_does_not_need() {
    let Some(cp) = control_plane::testing::shared().await else {
        return;
    };
    let installed = installed(cp).await;
    let admin = cp.client().await.expect("admin client");
    let sa = control_plane::client_for(&installed.token_kubeconfig)
        .await
        .expect("the controller's client");
    let home = &installed.install.namespace;
    let victim = unique("install-victim");
    create(
        &admin,
        &format!("{{apiVersion: v1, kind: Namespace, metadata: {{name: {victim}}}}}"),
    )
    .await;

    let secrets: Api<Secret> = Api::namespaced(sa.clone(), home);
    let secret: Secret = serde_json::from_value(serde_json::json!({
        "metadata": {"name": unique("install-secret")},
        "stringData": {"k": "v"},
    }))
    .expect("secret");
    assert_forbidden(
        "create a Secret",
        secrets.create(&PostParams::default(), &secret).await,
    );
    // MultiKueue reads worker kubeconfigs from Secrets in its own namespace, as Kueue does:
    // listing them there is allowed, anywhere else it is not.
    secrets
        .list(&ListParams::default())
        .await
        .expect("list Secrets in the controller's namespace");
    let elsewhere: Api<Secret> = Api::namespaced(sa.clone(), &victim);
    assert_forbidden(
        "list Secrets in another namespace",
        elsewhere.list(&ListParams::default()).await,
    );
    assert_forbidden(
        "list Secrets in every namespace",
        Api::<Secret>::all(sa.clone())
            .list(&ListParams::default())
            .await,
    );
    let namespaces: Api<Namespace> = Api::all(sa.clone());
    assert_forbidden(
        "delete a Namespace",
        namespaces.delete(&victim, &DeleteParams::default()).await,
    );
    let bindings: Api<ClusterRoleBinding> = Api::all(sa.clone());
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": unique("install-escalate")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": installed.install.name, "namespace": home}],
    }))
    .expect("binding");
    assert_forbidden(
        "create a ClusterRoleBinding",
        bindings.create(&PostParams::default(), &binding).await,
    );
    // Pods are the Job controller's and the scheduler's business, not the controller's.
    let pods: Api<Pod> = Api::all(sa.clone());
    assert_forbidden("list Pods", pods.list(&ListParams::default()).await);
    // Kueue's own kinds: read, and only the writes the controller makes.
    let workloads: Api<Workload> = Api::namespaced(sa.clone(), &victim);
    assert_forbidden(
        "delete Workloads",
        workloads
            .delete_collection(&DeleteParams::default(), &ListParams::default())
            .await,
    );
    let queues: Api<api::kueue::ClusterQueue> = Api::all(sa.clone());
    let queue: api::kueue::ClusterQueue = serde_json::from_value(serde_json::json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": unique("install-cq-by-sa")}, "spec": {},
    }))
    .expect("queue");
    assert_forbidden(
        "create a ClusterQueue",
        queues.create(&PostParams::default(), &queue).await,
    );
    let jobs: Api<Job> = Api::namespaced(sa.clone(), &victim);
    assert_forbidden(
        "delete Jobs",
        jobs.delete_collection(&DeleteParams::default(), &ListParams::default())
            .await,
    );
    // Leases: only its own, and only in its namespace.
    let other_lease: Api<Lease> = Api::namespaced(sa.clone(), home);
    assert_forbidden(
        "get another Lease",
        other_lease.get(&unique("install-other-lease")).await,
    );
    let elsewhere: Api<Lease> = Api::namespaced(sa, &victim);
    let lease: Lease = serde_json::from_value(serde_json::json!({
        "metadata": {"name": installed.install.name},
    }))
    .expect("lease");
    assert_forbidden(
        "create a Lease in another namespace",
        elsewhere.create(&PostParams::default(), &lease).await,
    );
}
