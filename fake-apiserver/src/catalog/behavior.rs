//! What a kind does beyond plain storage: its extra field selectors, how its names are validated,
//! its create-time defaulting, and its lifecycle. Giving a kind behaviour is one entry in
//! [`behavior_for`]; the store calls the hooks, it never matches on kinds itself.

use serde_json::{Map, Value, json};

use crate::error::ApiResult;
use crate::semantics::access_review::{self, Reviewer};
use crate::semantics::admission::{
    Admit, AdmitCtx, Operation, Refused, admit_event, admit_namespace, admit_node, admit_pod,
};
use crate::semantics::event_versions::{core_to_events_v1, events_v1_to_core};

/// How `metadata.name` is validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// DNS subdomain (most kinds).
    Subdomain,
    /// DNS label (namespaces).
    Label,
    /// Any path segment (RBAC kinds and others whose names may hold `:`).
    PathSegment,
}

/// Special lifecycles the store runs for a kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    Plain,
    /// Terminating phase, contents deleted, `spec.finalizers` then removal; a default ServiceAccount
    /// in every new namespace.
    Namespace,
    /// Registering serves the defined kinds; deleting removes every instance first.
    CustomResourceDefinition,
}

/// Two views of one storage: how an object written through this kind's API is stored, and back.
#[derive(Debug, Clone, Copy)]
pub struct Converter {
    pub to_storage: fn(&Value) -> Value,
    pub from_storage: fn(&Value) -> Value,
}

/// What the defaulting hook may use.
pub struct DefaultCtx<'a> {
    pub uid: &'a str,
    pub name: &'a str,
    /// Deterministic allocator of Service cluster IPs (last two octets of 10.96.x.y).
    pub next_cluster_ip: &'a mut u32,
}

#[derive(Debug)]
pub struct Behavior {
    /// Field selectors beyond metadata.name and metadata.namespace.
    pub field_selectors: &'static [&'static str],
    pub name_rule: NameRule,
    /// Whether `status` given on create is kept (nodes) rather than reset (every other kind with status).
    pub keep_status_on_create: bool,
    /// Whether DELETE answers with the deleted object (pods) instead of a Success Status.
    pub returns_deleted_object: bool,
    /// Create-time defaulting, after status has been reset.
    pub defaults: Option<fn(&mut Value, &mut DefaultCtx<'_>)>,
    /// The defaults kube-apiserver applies when it decodes any write (create, update, the result
    /// of a patch), before the writer's fields are recorded: the writer owns them.
    pub decode_defaults: Option<fn(&mut Value)>,
    /// Admission and the registry strategy, after the writer's fields are recorded (so never in
    /// managedFields); a refusal is 403.
    pub admit: Option<Admit>,
    pub convert: Option<Converter>,
    pub lifecycle: Lifecycle,
    /// For create-only kinds (reviews): checks what is asked and fills in the answer's status.
    pub review: Option<Review>,
}

/// Answers a review from who asks and the cluster's RBAC, or refuses what it asks.
pub type Review = fn(&mut Value, &Reviewer<'_>) -> ApiResult<()>;

const PLAIN: Behavior = Behavior {
    field_selectors: &[],
    name_rule: NameRule::Subdomain,
    keep_status_on_create: false,
    returns_deleted_object: false,
    defaults: None,
    decode_defaults: None,
    admit: None,
    convert: None,
    lifecycle: Lifecycle::Plain,
    review: None,
};

const EVENT_FIELDS: &[&str] = &[
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

/// events.k8s.io/v1 names the same fields its own way.
const EVENT_V1_FIELDS: &[&str] = &[
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reason",
    "reportingController",
    "type",
];

/// Whether objects of this kind carry `metadata.generation` (1 on create, bumped by changes
/// outside metadata and status): custom resources, CRDs, and the built-ins whose registry
/// strategy sets it (checked one by one on kube-apiserver v1.37).
pub fn has_generation(rt: &super::ResourceType) -> bool {
    rt.crd.is_some()
        || matches!(
            (rt.group.as_str(), rt.plural.as_str()),
            ("", "pods" | "podtemplates" | "replicationcontrollers")
                | (
                    "apps",
                    "deployments" | "replicasets" | "statefulsets" | "daemonsets"
                )
                | ("batch", "jobs" | "cronjobs")
                | ("autoscaling", "horizontalpodautoscalers")
                | ("policy", "poddisruptionbudgets")
                | (
                    "networking.k8s.io",
                    "networkpolicies" | "ingresses" | "ingressclasses"
                )
                | ("discovery.k8s.io", "endpointslices")
                | ("scheduling.k8s.io", "priorityclasses")
                | ("admissionregistration.k8s.io", _)
                | ("flowcontrol.apiserver.k8s.io", _)
                | (
                    "resource.k8s.io",
                    "deviceclasses" | "resourceslices" | "devicetaintrules"
                )
                | ("apiextensions.k8s.io", "customresourcedefinitions")
        )
}

/// The behaviour table.
pub fn behavior_for(group: &str, plural: &str) -> &'static Behavior {
    static PODS: Behavior = Behavior {
        field_selectors: &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        returns_deleted_object: true,
        decode_defaults: Some(default_pod),
        admit: Some(admit_pod),
        ..PLAIN
    };
    static NODES: Behavior = Behavior {
        field_selectors: &["spec.unschedulable"],
        keep_status_on_create: true,
        decode_defaults: Some(default_node),
        admit: Some(admit_node),
        ..PLAIN
    };
    static NAMESPACES: Behavior = Behavior {
        field_selectors: &["status.phase"],
        name_rule: NameRule::Label,
        decode_defaults: Some(default_namespace),
        admit: Some(admit_namespace),
        lifecycle: Lifecycle::Namespace,
        ..PLAIN
    };
    static EVENTS: Behavior = Behavior {
        field_selectors: EVENT_FIELDS,
        admit: Some(admit_event),
        ..PLAIN
    };
    static EVENTS_V1: Behavior = Behavior {
        field_selectors: EVENT_V1_FIELDS,
        convert: Some(Converter {
            to_storage: events_v1_to_core,
            from_storage: events_v1_view,
        }),
        admit: Some(admit_event),
        ..PLAIN
    };
    static SECRETS: Behavior = Behavior {
        field_selectors: &["type"],
        decode_defaults: Some(default_secret),
        ..PLAIN
    };
    static SERVICES: Behavior = Behavior {
        field_selectors: &["spec.clusterIP", "spec.type"],
        name_rule: NameRule::Label,
        // kube-apiserver's REST storage answers a deleted Service, ServiceAccount or
        // PodTemplate itself.
        returns_deleted_object: true,
        defaults: Some(default_service),
        decode_defaults: Some(default_service_spec),
        admit: Some(admit_service),
        ..PLAIN
    };
    static SERVICE_ACCOUNTS: Behavior = Behavior {
        returns_deleted_object: true,
        ..PLAIN
    };
    static WEBHOOK_CONFIGURATIONS: Behavior = Behavior {
        decode_defaults: Some(crate::semantics::validation::webhooks::default_configuration),
        ..PLAIN
    };
    static PRIORITY_CLASSES: Behavior = Behavior {
        decode_defaults: Some(default_priority_class),
        ..PLAIN
    };
    static JOBS: Behavior = Behavior {
        field_selectors: &["status.successful"],
        decode_defaults: Some(default_job),
        admit: Some(admit_job),
        ..PLAIN
    };
    static REPLICATION_CONTROLLERS: Behavior = Behavior {
        field_selectors: &["status.replicas"],
        ..PLAIN
    };
    static CSRS: Behavior = Behavior {
        field_selectors: &["spec.signerName"],
        ..PLAIN
    };
    static DEPLOYMENTS: Behavior = Behavior {
        decode_defaults: Some(default_deployment),
        ..PLAIN
    };
    static REPLICASETS: Behavior = Behavior {
        decode_defaults: Some(default_replicaset),
        ..PLAIN
    };
    static STATEFULSETS: Behavior = Behavior {
        decode_defaults: Some(default_statefulset),
        ..PLAIN
    };
    static DAEMONSETS: Behavior = Behavior {
        decode_defaults: Some(default_daemonset),
        ..PLAIN
    };
    static PODTEMPLATES: Behavior = Behavior {
        returns_deleted_object: true,
        decode_defaults: Some(default_podtemplate),
        ..PLAIN
    };
    static CRONJOBS: Behavior = Behavior {
        decode_defaults: Some(default_cronjob),
        ..PLAIN
    };
    static RBAC: Behavior = Behavior {
        name_rule: NameRule::PathSegment,
        ..PLAIN
    };
    static CRDS: Behavior = Behavior {
        decode_defaults: Some(super::crd::default_crd),
        lifecycle: Lifecycle::CustomResourceDefinition,
        ..PLAIN
    };
    static SUBJECT_ACCESS_REVIEW: Behavior = Behavior {
        review: Some(access_review::subject_access),
        ..PLAIN
    };
    static LOCAL_SUBJECT_ACCESS_REVIEW: Behavior = Behavior {
        review: Some(access_review::local_subject_access),
        ..PLAIN
    };
    static SELF_SUBJECT_ACCESS_REVIEW: Behavior = Behavior {
        review: Some(access_review::self_subject_access),
        ..PLAIN
    };
    static RULES_REVIEW: Behavior = Behavior {
        review: Some(access_review::self_subject_rules),
        ..PLAIN
    };
    static SELF_REVIEW: Behavior = Behavior {
        review: Some(access_review::self_subject),
        ..PLAIN
    };
    static PLAIN_STATIC: Behavior = PLAIN;

    match (group, plural) {
        ("", "pods") => &PODS,
        ("", "nodes") => &NODES,
        ("", "namespaces") => &NAMESPACES,
        ("", "events") => &EVENTS,
        ("events.k8s.io", "events") => &EVENTS_V1,
        ("", "secrets") => &SECRETS,
        ("", "services") => &SERVICES,
        ("", "serviceaccounts") => &SERVICE_ACCOUNTS,
        ("scheduling.k8s.io", "priorityclasses") => &PRIORITY_CLASSES,
        ("batch", "jobs") => &JOBS,
        ("", "replicationcontrollers") => &REPLICATION_CONTROLLERS,
        ("apps", "deployments") => &DEPLOYMENTS,
        ("apps", "replicasets") => &REPLICASETS,
        ("apps", "statefulsets") => &STATEFULSETS,
        ("apps", "daemonsets") => &DAEMONSETS,
        ("", "podtemplates") => &PODTEMPLATES,
        ("batch", "cronjobs") => &CRONJOBS,
        ("certificates.k8s.io", "certificatesigningrequests") => &CSRS,
        ("rbac.authorization.k8s.io", _) => &RBAC,
        ("apiextensions.k8s.io", "customresourcedefinitions") => &CRDS,
        ("authorization.k8s.io", "subjectaccessreviews") => &SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io", "localsubjectaccessreviews") => &LOCAL_SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io", "selfsubjectaccessreviews") => &SELF_SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io", "selfsubjectrulesreviews") => &RULES_REVIEW,
        ("authentication.k8s.io", "selfsubjectreviews") => &SELF_REVIEW,
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations",
        ) => &WEBHOOK_CONFIGURATIONS,
        _ => &PLAIN_STATIC,
    }
}

/// The behaviour of custom resources.
pub fn custom_resource_behavior() -> &'static Behavior {
    static CUSTOM: Behavior = PLAIN;
    &CUSTOM
}

fn obj_mut<'a>(v: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    if !v.get(key).is_some_and(Value::is_object) {
        v[key] = json!({});
    }
    match v.get_mut(key).and_then(Value::as_object_mut) {
        Some(m) => m,
        None => unreachable!("just made an object"),
    }
}

fn set_default(map: &mut Map<String, Value>, key: &str, value: Value) {
    map.entry(key.to_string()).or_insert(value);
}

/// The name label a Namespace carries; a generated name gets it later, from admission.
fn default_namespace(ns: &mut Value) {
    let Some(name) = ns["metadata"]["name"].as_str().filter(|n| !n.is_empty()) else {
        return;
    };
    let name = json!(name);
    let labels = obj_mut(obj_mut_value(ns, "metadata"), "labels");
    labels.insert("kubernetes.io/metadata.name".into(), name);
}

fn obj_mut_value<'a>(v: &'a mut Value, key: &str) -> &'a mut Value {
    obj_mut(v, key);
    &mut v[key]
}

/// `stringData` is write-only: kube-apiserver's conversion merges it into `data` (base64, a
/// stringData key wins) and never stores it.
fn default_secret(secret: &mut Value) {
    use base64::Engine as _;
    let Some(m) = secret.as_object_mut() else {
        return;
    };
    set_default(m, "type", json!("Opaque"));
    let Some(Value::Object(string_data)) = m.remove("stringData") else {
        return;
    };
    if string_data.is_empty() {
        return;
    }
    if !m.get("data").is_some_and(Value::is_object) {
        m.insert("data".into(), json!({}));
    }
    if let Some(data) = m.get_mut("data").and_then(Value::as_object_mut) {
        for (k, v) in string_data {
            let text = v.as_str().unwrap_or("");
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            data.insert(k, json!(encoded));
        }
    }
}

/// The v1 conversion fills `spec.podCIDRs` from `spec.podCIDR`.
fn default_node(node: &mut Value) {
    let Some(spec) = node.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(cidr) = spec
        .get("podCIDR")
        .filter(|c| c.as_str().is_some_and(|c| !c.is_empty()))
    {
        let cidrs = json!([cidr]);
        spec.entry("podCIDRs").or_insert(cidrs);
    }
}

/// A stored Event through events.k8s.io/v1: the reporting fields core/v1 always writes are
/// `omitempty` there.
fn events_v1_view(core: &Value) -> Value {
    let mut ev = core_to_events_v1(core);
    if let Some(m) = ev.as_object_mut() {
        for key in ["reportingController", "reportingInstance"] {
            if m.get(key) == Some(&json!("")) {
                m.remove(key);
            }
        }
    }
    ev
}

fn default_priority_class(pc: &mut Value) {
    if let Some(m) = pc.as_object_mut() {
        set_default(m, "preemptionPolicy", json!("PreemptLowerPriority"));
    }
}

/// A Pod's decode-time defaults: its template's, service links, and the deprecated
/// `serviceAccount` mirroring `serviceAccountName` (the v1 conversion keeps them equal).
fn default_pod(pod: &mut Value) {
    default_template(pod);
    // PodCondition's times are Go structs: encoded as null when unset, never left out.
    if let Some(conditions) = pod
        .get_mut("status")
        .and_then(|s| s.get_mut("conditions"))
        .and_then(Value::as_array_mut)
    {
        for c in conditions.iter_mut().filter_map(Value::as_object_mut) {
            set_default(c, "lastProbeTime", Value::Null);
            set_default(c, "lastTransitionTime", Value::Null);
        }
    }
    let spec = obj_mut(pod, "spec");
    set_default(spec, "enableServiceLinks", json!(true));
    let name = spec
        .get("serviceAccountName")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    let old = spec
        .get("serviceAccount")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty());
    match (name.map(str::to_string), old.map(str::to_string)) {
        (Some(n), _) => {
            spec.insert("serviceAccount".into(), json!(n));
        }
        (None, Some(o)) => {
            spec.insert("serviceAccountName".into(), json!(o));
        }
        (None, None) => {}
    }
}

/// A pod template's defaults as kube-apiserver writes them (`SetDefaults_PodSpec`,
/// `SetDefaults_Container`, ...): the template always has a `metadata`, the spec an empty
/// `securityContext`. Pods get more from admission (service account, priority, tolerations).
fn default_template(template: &mut Value) {
    if !template.is_object() {
        return;
    }
    obj_mut(template, "metadata");
    let spec = obj_mut(template, "spec");
    set_default(spec, "restartPolicy", json!("Always"));
    set_default(spec, "terminationGracePeriodSeconds", json!(30));
    set_default(spec, "dnsPolicy", json!("ClusterFirst"));
    set_default(spec, "securityContext", json!({}));
    set_default(spec, "schedulerName", json!("default-scheduler"));
    for list in ["initContainers", "containers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers.iter_mut().filter_map(Value::as_object_mut) {
            default_container(c);
        }
    }
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in volumes.iter_mut().filter_map(Value::as_object_mut) {
            // File-backed volume sources default their files' mode to 0644.
            for source in ["secret", "configMap", "projected", "downwardAPI"] {
                if let Some(src) = v.get_mut(source).and_then(Value::as_object_mut) {
                    set_default(src, "defaultMode", json!(420));
                }
            }
        }
    }
}

fn default_container(c: &mut Map<String, Value>) {
    set_default(c, "resources", json!({}));
    set_default(c, "terminationMessagePath", json!("/dev/termination-log"));
    set_default(c, "terminationMessagePolicy", json!("File"));
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    set_default(c, "imagePullPolicy", json!(image_pull_policy(image)));
    if let Some(ports) = c.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(port, "protocol", json!("TCP"));
        }
    }
}

/// `Always` for an image without a tag or with `:latest`, else `IfNotPresent` (a digest counts
/// as pinned).
fn image_pull_policy(image: &str) -> &'static str {
    if image.contains('@') {
        return "IfNotPresent";
    }
    // The tag follows the last ':' after the last '/' (a registry may have a port).
    let last = image.rsplit('/').next().unwrap_or(image);
    match last.rsplit_once(':') {
        Some((_, tag)) if tag != "latest" => "IfNotPresent",
        _ => "Always",
    }
}

fn spec_template(obj: &mut Value) -> &mut Value {
    obj_mut_value(obj_mut_value(obj, "spec"), "template")
}

fn default_podtemplate(pt: &mut Value) {
    default_template(obj_mut_value(pt, "template"));
}

/// A workload's update strategy: RollingUpdate unless the client chose another type, and then
/// the rolling update's own defaults.
fn default_rolling_update<const N: usize>(
    spec: &mut Map<String, Value>,
    key: &str,
    rolling: [(&str, Value); N],
) {
    let strategy = spec
        .entry(key)
        .or_insert_with(|| json!({"type": "RollingUpdate"}));
    if let Some(st) = strategy.as_object_mut() {
        set_default(st, "type", json!("RollingUpdate"));
        if st.get("type") == Some(&json!("RollingUpdate")) {
            let ru = obj_mut_value_map(st, "rollingUpdate");
            for (field, value) in rolling {
                set_default(ru, field, value);
            }
        }
    }
}

fn default_deployment(d: &mut Value) {
    default_template(spec_template(d));
    let spec = obj_mut(d, "spec");
    set_default(spec, "replicas", json!(1));
    default_rolling_update(
        spec,
        "strategy",
        [("maxUnavailable", json!("25%")), ("maxSurge", json!("25%"))],
    );
    set_default(spec, "revisionHistoryLimit", json!(10));
    set_default(spec, "progressDeadlineSeconds", json!(600));
}

fn default_replicaset(rs: &mut Value) {
    default_template(spec_template(rs));
    set_default(obj_mut(rs, "spec"), "replicas", json!(1));
}

fn default_statefulset(ss: &mut Value) {
    default_template(spec_template(ss));
    let spec = obj_mut(ss, "spec");
    set_default(spec, "replicas", json!(1));
    set_default(spec, "serviceName", json!(""));
    set_default(spec, "podManagementPolicy", json!("OrderedReady"));
    default_rolling_update(
        spec,
        "updateStrategy",
        [("partition", json!(0)), ("maxUnavailable", json!(1))],
    );
    set_default(spec, "revisionHistoryLimit", json!(10));
    let retention = obj_mut_value_map(spec, "persistentVolumeClaimRetentionPolicy");
    set_default(retention, "whenDeleted", json!("Retain"));
    set_default(retention, "whenScaled", json!("Retain"));
}

fn default_daemonset(ds: &mut Value) {
    default_template(spec_template(ds));
    let spec = obj_mut(ds, "spec");
    default_rolling_update(
        spec,
        "updateStrategy",
        [("maxUnavailable", json!(1)), ("maxSurge", json!(0))],
    );
    set_default(spec, "revisionHistoryLimit", json!(10));
}

fn default_cronjob(cj: &mut Value) {
    let spec = obj_mut(cj, "spec");
    set_default(spec, "concurrencyPolicy", json!("Allow"));
    set_default(spec, "suspend", json!(false));
    set_default(spec, "successfulJobsHistoryLimit", json!(3));
    set_default(spec, "failedJobsHistoryLimit", json!(1));
    let job_template = spec.entry("jobTemplate").or_insert_with(|| json!({}));
    default_template(spec_template(job_template));
}

fn obj_mut_value_map<'a>(m: &'a mut Map<String, Value>, key: &str) -> &'a mut Map<String, Value> {
    if !m.get(key).is_some_and(Value::is_object) {
        m.insert(key.to_string(), json!({}));
    }
    match m.get_mut(key).and_then(Value::as_object_mut) {
        Some(m) => m,
        None => unreachable!("just made an object"),
    }
}

/// A Service's decode-time defaults.
fn default_service_spec(svc: &mut Value) {
    let spec = obj_mut(svc, "spec");
    set_default(spec, "type", json!("ClusterIP"));
    set_default(spec, "sessionAffinity", json!("None"));
    if spec.get("type") != Some(&json!("ExternalName")) {
        set_default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if let Some(ports) = spec.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            set_default(port, "protocol", json!("TCP"));
            if let Some(p) = port.get("port").cloned() {
                set_default(port, "targetPort", p);
            }
        }
    }
}

/// A new Service's cluster IP, from the allocator unless the client chose one.
fn default_service(svc: &mut Value, ctx: &mut DefaultCtx<'_>) {
    let spec = obj_mut(svc, "spec");
    if spec.get("type") != Some(&json!("ExternalName")) {
        if !spec.contains_key("clusterIP") {
            let n = *ctx.next_cluster_ip;
            *ctx.next_cluster_ip += 1;
            spec.insert(
                "clusterIP".into(),
                json!(format!("10.96.{}.{}", n / 256, n % 256)),
            );
        }
        let ip = spec.get("clusterIP").cloned().unwrap_or(Value::Null);
        set_default(spec, "clusterIPs", json!([ip]));
        set_default(spec, "ipFamilies", json!(["IPv4"]));
        set_default(spec, "ipFamilyPolicy", json!("SingleStack"));
    }
    svc["status"] = json!({"loadBalancer": {}});
}

/// The Service strategy on update: an update that leaves out the cluster IP keeps the allocated
/// one and its families.
fn admit_service(svc: &mut Value, ctx: &AdmitCtx<'_>) -> Result<(), Refused> {
    let Some(old) = ctx.old else {
        return Ok(());
    };
    let spec = obj_mut(svc, "spec");
    if spec.get("type") == Some(&json!("ExternalName"))
        || spec.get("clusterIP").is_some_and(|ip| ip != "")
    {
        return Ok(());
    }
    for field in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
        if let Some(v) = old["spec"].get(field) {
            spec.insert(field.into(), v.clone());
        }
    }
    Ok(())
}

/// A Job's decode-time defaults. Its selector and the labels that match it come later, from the
/// strategy ([`admit_job`]).
fn default_job(job: &mut Value) {
    let spec = obj_mut(job, "spec");
    // As Kubernetes' SetDefaults_Job: a Job with neither field is one pod run once; a Job with
    // only a parallelism is a work queue and keeps completions unset.
    if !spec.contains_key("completions") && !spec.contains_key("parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    set_default(spec, "parallelism", json!(1));
    set_default(spec, "backoffLimit", json!(6));
    set_default(spec, "completionMode", json!("NonIndexed"));
    set_default(spec, "suspend", json!(false));
    set_default(spec, "podReplacementPolicy", json!("TerminatingOrFailed"));
    set_default(spec, "manualSelector", json!(false));
    default_template(spec_template(job));
    copy_template_labels(job);
}

/// A Job without labels of its own takes its pod template's.
fn copy_template_labels(job: &mut Value) {
    let has_own = job["metadata"]["labels"]
        .as_object()
        .is_some_and(|l| !l.is_empty());
    let template = job["spec"]["template"]["metadata"]["labels"].clone();
    if !has_own && template.as_object().is_some_and(|l| !l.is_empty()) {
        obj_mut(job, "metadata").insert("labels".into(), template);
    }
}

/// The Job strategy on create: the selector on the Job's own uid and the template labels it
/// matches (unless the selector is manual), and an empty status.
fn admit_job(job: &mut Value, ctx: &AdmitCtx<'_>) -> Result<(), Refused> {
    if ctx.op != Operation::Create {
        return Ok(());
    }
    let uid = ctx.uid.to_string();
    let name = job["metadata"]["name"].as_str().unwrap_or("").to_string();
    // Go's SetDefaults_Job hands the Job its template's label map itself, so the labels added
    // below show on the Job too; a generated name goes through a copy that breaks the sharing.
    let template_labels = job["spec"]["template"]["metadata"]["labels"].clone();
    let shared = template_labels.as_object().is_some_and(|l| !l.is_empty())
        && job["metadata"]["labels"] == template_labels
        && job["metadata"]["generateName"]
            .as_str()
            .is_none_or(str::is_empty);
    let spec = obj_mut(job, "spec");
    if spec.get("manualSelector") != Some(&json!(true)) {
        spec.insert(
            "selector".into(),
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}),
        );
        let template = spec.entry("template").or_insert_with(|| json!({}));
        let labels = obj_mut(obj_mut_value(template, "metadata"), "labels");
        labels.insert("batch.kubernetes.io/controller-uid".into(), json!(uid));
        labels.insert("batch.kubernetes.io/job-name".into(), json!(name));
        labels.insert("controller-uid".into(), json!(uid));
        labels.insert("job-name".into(), json!(name));
    }
    if shared {
        job["metadata"]["labels"] = job["spec"]["template"]["metadata"]["labels"].clone();
    }
    copy_template_labels(job);
    job["status"] = json!({});
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx_default(obj: &mut Value, f: fn(&mut Value, &mut DefaultCtx<'_>)) -> u32 {
        let mut ip = 1;
        f(
            obj,
            &mut DefaultCtx {
                uid: "u-1",
                name: "n",
                next_cluster_ip: &mut ip,
            },
        );
        ip
    }

    struct NoObjects;
    impl crate::semantics::admission::Cluster for NoObjects {
        fn get(&self, _: &str, _: &str, _: &str, _: &str) -> Option<std::sync::Arc<Value>> {
            None
        }
        fn list(&self, _: &str, _: &str) -> Vec<std::sync::Arc<Value>> {
            Vec::new()
        }
    }

    #[test]
    fn jobs_get_the_controller_uid_selector_and_template_labels() {
        let mut job =
            json!({"metadata": {"name": "n"}, "spec": {"template": {"spec": {"containers": []}}}});
        default_job(&mut job);
        let ctx = AdmitCtx {
            op: Operation::Create,
            old: None,
            uid: "u-1",
            cluster: &NoObjects,
        };
        admit_job(&mut job, &ctx).unwrap();
        assert_eq!(
            job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
            "u-1"
        );
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"]["job-name"],
            "n"
        );
        assert_eq!(job["metadata"]["labels"]["job-name"], "n");
        assert_eq!(job["spec"]["suspend"], false);
        assert_eq!(job["spec"]["completions"], 1);
        assert_eq!(job["spec"]["parallelism"], 1);
    }

    #[test]
    fn a_work_queue_job_keeps_completions_unset() {
        let mut job = json!({"spec": {"parallelism": 4, "template": {"spec": {"containers": []}}}});
        default_job(&mut job);
        assert_eq!(job["spec"]["parallelism"], 4);
        assert!(job["spec"].get("completions").is_none(), "{job}");
    }

    #[test]
    fn secret_string_data_is_merged_into_data() {
        let mut secret = json!({"data": {"a": "YQ=="}, "stringData": {"a": "over", "b": "bee"}});
        default_secret(&mut secret);
        assert_eq!(
            secret,
            json!({"type": "Opaque", "data": {"a": "b3Zlcg==", "b": "YmVl"}})
        );
    }

    #[test]
    fn services_get_a_cluster_ip_from_the_allocator() {
        let mut svc = json!({"spec": {"ports": [{"port": 80}]}});
        default_service_spec(&mut svc);
        let next = ctx_default(&mut svc, default_service);
        assert_eq!(svc["spec"]["clusterIP"], "10.96.0.1");
        assert_eq!(svc["spec"]["ports"][0]["targetPort"], 80);
        assert_eq!(next, 2);
    }
}
