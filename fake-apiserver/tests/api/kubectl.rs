//! The real kubectl binary against a served fake: the commands the README lists as working.

use std::path::Path;
use std::process::{Command, Output};

use crate::tcp::{Served, kubectl};

fn run(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut child = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl starts");
    if let Some(mut input) = child.stdin.take() {
        input
            .write_all(stdin.unwrap_or("").as_bytes())
            .expect("stdin");
    }
    child.wait_with_output().expect("kubectl ends")
}

/// Run kubectl, expect success, return stdout.
fn ok(kubeconfig: &Path, args: &[&str], stdin: Option<&str>) -> String {
    let out = run(kubeconfig, args, stdin);
    assert!(
        out.status.success(),
        "kubectl {args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

const CONFIGMAP: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\ndata:\n  mode: fast\n";

const GADGETS: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    schema:
      openAPIV3Schema:
        type: object
        description: A gadget for the kubectl tests.
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, description: How big the gadget is.}
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"#;

#[tokio::test]
async fn kubectl_create_apply_get_patch_label_wait_and_delete_work() {
    let Some(_) = kubectl() else { return };
    let served = Served::start().await;
    let kc = served.kubeconfig();
    tokio::task::spawn_blocking(move || {
        // create -f and apply -f (client-side, twice: the second is a strategic merge patch).
        assert_eq!(ok(&kc, &["create", "-f", "-"], Some(CONFIGMAP)).trim(), "configmap/app created");
        let changed = CONFIGMAP.replace("fast", "slow");
        assert_eq!(ok(&kc, &["apply", "-f", "-"], Some(&changed)).trim(), "configmap/app configured");
        assert_eq!(ok(&kc, &["get", "configmap", "app", "-o", "jsonpath={.data.mode}"], None), "slow");

        // Table output with the real columns.
        let table = ok(&kc, &["get", "configmaps"], None);
        assert!(table.lines().next().is_some_and(|h| h.split_whitespace().collect::<Vec<_>>() == ["NAME", "DATA", "AGE"]), "{table}");
        assert!(ok(&kc, &["get", "cm", "app", "-o", "yaml"], None).contains("mode: slow"));
        assert!(ok(&kc, &["get", "cm", "app", "-o", "json"], None).contains("\"mode\": \"slow\""));

        // Server-side apply round-trips; another manager's different value conflicts until forced.
        let ssa = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  k: one\n";
        assert_eq!(ok(&kc, &["apply", "--server-side", "-f", "-"], Some(ssa)).trim(), "configmap/ssa serverside-applied");
        assert_eq!(ok(&kc, &["apply", "--server-side", "-f", "-"], Some(ssa)).trim(), "configmap/ssa serverside-applied");
        let other = ssa.replace("one", "two");
        let conflict = run(&kc, &["apply", "--server-side", "--field-manager=other", "-f", "-"], Some(&other));
        assert!(!conflict.status.success());
        assert!(String::from_utf8_lossy(&conflict.stderr).contains("conflict with \"kubectl\""), "{}", String::from_utf8_lossy(&conflict.stderr));
        ok(&kc, &["apply", "--server-side", "--force-conflicts", "--field-manager=other", "-f", "-"], Some(&other));
        assert_eq!(ok(&kc, &["get", "cm", "ssa", "-o", "jsonpath={.data.k}"], None), "two");

        // patch, label, annotate.
        ok(&kc, &["patch", "cm", "app", "-p", r#"{"data":{"extra":"1"}}"#], None);
        ok(&kc, &["patch", "cm", "app", "--type", "merge", "-p", r#"{"data":{"merged":"1"}}"#], None);
        ok(&kc, &["patch", "cm", "app", "--type", "json", "-p", r#"[{"op":"remove","path":"/data/extra"}]"#], None);
        ok(&kc, &["label", "cm", "app", "tier=web"], None);
        ok(&kc, &["annotate", "cm", "app", "note=hi"], None);
        let data = ok(&kc, &["get", "cm", "app", "-o", "jsonpath={.data.merged}/{.data.extra}/{.metadata.labels.tier}/{.metadata.annotations.note}"], None);
        assert_eq!(data, "1//web/hi");
        assert!(ok(&kc, &["describe", "cm", "app"], None).contains("tier=web"));

        // delete with cascade, and wait --for=delete.
        ok(&kc, &["delete", "cm", "app", "--cascade=foreground"], None);
        ok(&kc, &["wait", "--for=delete", "cm/app", "--timeout=10s"], None);

        // Typed commands send protobuf bodies and ask for protobuf answers.
        assert_eq!(
            ok(&kc, &["create", "namespace", "typed"], None).trim(),
            "namespace/typed created"
        );
        assert_eq!(
            ok(&kc, &["create", "configmap", "typed", "-n", "typed", "--from-literal=a=b"], None)
                .trim(),
            "configmap/typed created"
        );
        assert_eq!(
            ok(&kc, &["get", "cm", "typed", "-n", "typed", "-o", "jsonpath={.data.a}"], None),
            "b"
        );
    })
    .await
    .expect("kubectl thread");
}

#[tokio::test]
async fn kubectl_works_with_custom_resources() {
    let Some(_) = kubectl() else { return };
    let served = Served::start().await;
    let kc = served.kubeconfig();
    tokio::task::spawn_blocking(move || {
        ok(&kc, &["apply", "-f", "-"], Some(GADGETS));
        let gadget =
            "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g1}\nspec: {size: 3}\n";
        ok(&kc, &["apply", "-f", "-"], Some(gadget));
        let table = ok(&kc, &["get", "gadgets"], None);
        let header: Vec<&str> = table
            .lines()
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        assert_eq!(header, ["NAME", "SIZE", "AGE"], "{table}");
        assert!(
            table
                .lines()
                .nth(1)
                .is_some_and(|row| row.starts_with("g1") && row.contains(" 3 ")),
            "{table}"
        );

        assert!(ok(&kc, &["describe", "gadget", "g1"], None).contains("Size:  3"));

        // get -w prints the table, then each change as a row.
        let mut watch = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kc)
            .args(["get", "gadgets", "-w"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("kubectl get -w starts");
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(
            watch.stdout.take().expect("stdout"),
        ));
        let mut next = || lines.next().and_then(Result::ok).unwrap_or_default();
        assert!(next().starts_with("NAME"), "header first");
        assert!(next().starts_with("g1"), "the existing gadget");
        ok(
            &kc,
            &[
                "patch",
                "gadget",
                "g1",
                "--type=merge",
                "-p",
                r#"{"spec":{"size":4}}"#,
            ],
            None,
        );
        let row = next();
        assert!(
            row.starts_with("g1") && row.contains(" 4 "),
            "the change arrives as a row: {row}"
        );
        let _ = watch.kill();
        let _ = watch.wait();

        let explain = ok(&kc, &["explain", "gadgets.spec"], None);
        assert!(explain.contains("How big the gadget is."), "{explain}");

        // wait --for=condition on a status written like a controller would.
        ok(
            &kc,
            &[
                "patch",
                "gadget",
                "g1",
                "--subresource=status",
                "--type=merge",
                "-p",
                r#"{"status":{"conditions":[{"type":"Ready","status":"True"}]}}"#,
            ],
            None,
        );
        ok(
            &kc,
            &[
                "wait",
                "--for=condition=Ready",
                "gadget/g1",
                "--timeout=10s",
            ],
            None,
        );
        ok(&kc, &["delete", "gadget", "g1", "--cascade=orphan"], None);
    })
    .await
    .expect("kubectl thread");
}

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx
        env:
        - {name: A, value: "1"}
        - {name: B, value: "2"}
      - name: sidecar
        image: busybox
"#;

#[tokio::test]
async fn client_side_apply_removes_list_entries_dropped_from_the_manifest() {
    let Some(_) = kubectl() else { return };
    let served = Served::start().await;
    let kc = served.kubeconfig();
    tokio::task::spawn_blocking(move || {
        ok(&kc, &["apply", "-f", "-"], Some(DEPLOYMENT));
        let trimmed = DEPLOYMENT
            .replace("        - {name: B, value: \"2\"}\n", "")
            .replace("      - name: sidecar\n        image: busybox\n", "");
        assert_ne!(trimmed, DEPLOYMENT);
        ok(&kc, &["apply", "-f", "-"], Some(&trimmed));
        let names = ok(
            &kc,
            &["get", "deploy", "web", "-o", "jsonpath={.spec.template.spec.containers[*].name}/{.spec.template.spec.containers[0].env[*].name}"],
            None,
        );
        assert_eq!(names, "app/A", "the dropped container and env var are gone");
    })
    .await
    .expect("kubectl thread");
}

/// A ServiceAccount that may read ConfigMaps in `default`, and a ConfigMap to read.
const ROBOT: &str = r#"
apiVersion: v1
kind: ServiceAccount
metadata: {name: robot, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-reader, namespace: default}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, list]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: cm-reader, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}
subjects: [{kind: ServiceAccount, name: robot, namespace: default}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: app, namespace: default}
data: {mode: fast}
"#;

#[tokio::test]
async fn kubectl_sets_up_a_service_account_whose_token_rbac_limits() {
    let Some(_) = kubectl() else { return };
    // kubectl sends a bearer token over HTTPS only.
    let served = Served::start_locked().await;
    let kc = served.kubeconfig();
    // `create token` and `auth can-i` send protobuf (a TokenRequest, a SelfSubjectAccessReview).
    tokio::task::spawn_blocking(move || {
        ok(&kc, &["apply", "-f", "-"], Some(ROBOT));
        let token = ok(&kc, &["create", "token", "robot", "-n", "default"], None);
        let robot = |args: &[&str]| {
            let mut with_token = vec!["--token", token.trim()];
            with_token.extend_from_slice(args);
            run(&kc, &with_token, None)
        };
        let said = |out: &Output| String::from_utf8_lossy(&out.stdout).trim().to_string();

        let read = robot(&["get", "configmap", "app", "-o", "jsonpath={.data.mode}"]);
        assert_eq!(said(&read), "fast");
        let refused = robot(&["delete", "configmap", "app"]);
        assert!(!refused.status.success());
        assert_eq!(
            String::from_utf8_lossy(&refused.stderr).trim(),
            "Error from server (Forbidden): configmaps \"app\" is forbidden: User \"system:serviceaccount:default:robot\" cannot delete resource \"configmaps\" in API group \"\" in the namespace \"default\""
        );
        let can_i = robot(&["auth", "can-i", "delete", "configmaps", "-n", "default"]);
        assert_eq!(said(&can_i), "no");
        let can_i = robot(&["auth", "can-i", "get", "configmaps", "-n", "default"]);
        assert_eq!(said(&can_i), "yes");
        // The admin's kubeconfig still may.
        ok(&kc, &["delete", "configmap", "app"], None);
    })
    .await
    .expect("kubectl steps");
}
