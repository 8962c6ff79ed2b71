#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use api::kueue::{
    Admission, AdmissionCheckState, CheckState, PodSet, PodSetAssignment, PodSetUpdate,
    ResourceFlavorSpec, Workload, WorkloadSpec, WorkloadStatus,
};
use k8s_openapi::api::batch::v1::{Job, JobCondition, JobSpec, JobStatus, UncountedTerminatedPods};
use k8s_openapi::api::core::v1::{Container, EnvVar, PodSpec, PodTemplateSpec, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use rstest::rstest;

use super::*;

// ---------- helpers ----------

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn toleration(key: &str, operator: Option<&str>, value: &str, effect: &str) -> Toleration {
    Toleration {
        key: Some(key.to_owned()),
        operator: operator.map(str::to_owned),
        value: Some(value.to_owned()),
        effect: Some(effect.to_owned()),
        toleration_seconds: None,
    }
}

fn template(labels: &[(&str, &str)], node_selector: &[(&str, &str)]) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: Some(ObjectMeta {
            labels: (!labels.is_empty()).then(|| map(labels)),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".to_owned(),
                image: Some("busybox".to_owned()),
                ..Default::default()
            }],
            node_selector: (!node_selector.is_empty()).then(|| map(node_selector)),
            ..Default::default()
        }),
    }
}

fn job(name: &str) -> Job {
    Job {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("ns".to_owned()),
            uid: Some("uid".to_owned()),
            labels: Some(map(&[("kueue.x-k8s.io/queue-name", "lq")])),
            ..Default::default()
        },
        spec: Some(JobSpec {
            suspend: Some(true),
            parallelism: Some(3),
            completions: Some(3),
            template: template(&[("app", "demo")], &[]),
            ..Default::default()
        }),
        status: None,
    }
}

fn with_annotations(mut job: Job, pairs: &[(&str, &str)]) -> Job {
    job.metadata.annotations = Some(map(pairs));
    job
}

fn flavors() -> BTreeMap<String, ResourceFlavorSpec> {
    let mut flavors = BTreeMap::new();
    flavors.insert(
        "on-demand".to_owned(),
        ResourceFlavorSpec {
            node_labels: map(&[("instance-type", "on-demand")]),
            tolerations: vec![toleration("spot", Some("Equal"), "false", "NoSchedule")],
            ..Default::default()
        },
    );
    flavors.insert(
        "gpu".to_owned(),
        ResourceFlavorSpec {
            node_labels: map(&[("accelerator", "a100")]),
            ..Default::default()
        },
    );
    flavors.insert("plain".to_owned(), ResourceFlavorSpec::default());
    flavors
}

fn update(podset: &str, labels: &[(&str, &str)], node_selector: &[(&str, &str)]) -> PodSetUpdate {
    PodSetUpdate {
        name: podset.to_owned(),
        labels: map(labels),
        node_selector: map(node_selector),
        ..Default::default()
    }
}

fn check(name: &str, updates: Vec<PodSetUpdate>) -> AdmissionCheckState {
    AdmissionCheckState {
        name: name.to_owned(),
        state: CheckState::Ready,
        last_transition_time: Time(Default::default()),
        message: String::new(),
        requeue_after_seconds: None,
        retry_count: None,
        pod_set_updates: updates,
    }
}

/// An admitted Workload for `job`, with the given flavor (for cpu) and admission checks.
fn admitted_workload(job: &Job, flavor: &str, checks: Vec<AdmissionCheckState>) -> Workload {
    let mut wl = Workload::new(
        "job-demo-abcde",
        WorkloadSpec {
            pod_sets: podsets_from_job(job),
            queue_name: Some("lq".to_owned()),
            ..Default::default()
        },
    );
    wl.status = Some(WorkloadStatus {
        admission: Some(Admission {
            cluster_queue: "cq".to_owned(),
            pod_set_assignments: vec![PodSetAssignment {
                name: "main".to_owned(),
                flavors: BTreeMap::from([("cpu".to_owned(), flavor.to_owned())]),
                count: None,
                ..Default::default()
            }],
        }),
        admission_checks: checks,
        ..Default::default()
    });
    wl
}

fn info(
    labels: &[(&str, &str)],
    annotations: &[(&str, &str)],
    node_selector: &[(&str, &str)],
) -> PodSetInfo {
    PodSetInfo {
        name: "main".to_owned(),
        count: 1,
        labels: map(labels),
        annotations: map(annotations),
        node_selector: map(node_selector),
        tolerations: Vec::new(),
    }
}

fn template_labels(job: &Job) -> BTreeMap<String, String> {
    job.spec
        .as_ref()
        .unwrap()
        .template
        .metadata
        .as_ref()
        .unwrap()
        .labels
        .clone()
        .unwrap_or_default()
}

// ---------- workload names ----------

#[rstest]
// Hashes computed with `printf 'Job\nbatch\n<name>\n<uid>' | sha1sum`.
#[case::short_name("foo", "uid", "job-foo-79ad4")]
#[case::hash_depends_on_uid("foo", "other-uid", "job-foo-15ae8")]
#[case::upstream_short_example("name", "uid", "job-name-ef3a1")]
#[case::upstream_long_example_truncated(
    "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-senior-architect-validation-checked-approved-by-legal-and-ops-dept",
    "uid",
    "job-marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-senior-architect-validation-checked-approved-by-l-218b8"
)]
fn workload_name_is_kind_name_and_hash(#[case] name: &str, #[case] uid: &str, #[case] want: &str) {
    assert_eq!(workload_name(name, uid), want);
}

#[rstest]
// 243 = 253 - len("job-") - len("-") - 5: the longest name kept whole.
#[case::longest_kept_whole(243, 243, "d0f4d")]
#[case::one_more_is_cut(244, 243, "e4d03")]
#[case::much_longer_is_cut(300, 243, "0ed4e")]
fn long_workload_names_are_cut_to_253(
    #[case] name_len: usize,
    #[case] kept: usize,
    #[case] hash: &str,
) {
    let name = "a".repeat(name_len);
    let got = workload_name(&name, "uid");
    assert_eq!(got, format!("job-{}-{hash}", "a".repeat(kept)));
    assert!(got.len() <= MAX_WORKLOAD_NAME_LENGTH);
}

#[test]
fn workload_name_never_splits_a_character() {
    let name = "é".repeat(200);
    let got = workload_name(&name, "uid");
    assert!(got.len() <= MAX_WORKLOAD_NAME_LENGTH);
    assert!(got.starts_with("job-é"));
}

// ---------- podsets from jobs ----------

#[rstest]
#[case::defaults_to_one(None, None, 1)]
#[case::parallelism(Some(4), None, 4)]
#[case::completions_cap_parallelism(Some(5), Some(2), 2)]
#[case::completions_above_parallelism(Some(2), Some(10), 2)]
#[case::zero_parallelism(Some(0), None, 0)]
fn podset_count_is_parallelism_capped_by_completions(
    #[case] parallelism: Option<i32>,
    #[case] completions: Option<i32>,
    #[case] want: i32,
) {
    let mut j = job("demo");
    let spec = j.spec.as_mut().unwrap();
    spec.parallelism = parallelism;
    spec.completions = completions;
    let podsets = podsets_from_job(&j);
    assert_eq!(podsets.len(), 1);
    assert_eq!(podsets[0].name, "main");
    assert_eq!(podsets[0].count, want);
}

#[rstest]
#[case::no_annotation(None, None)]
#[case::integer(Some("2"), Some(2))]
#[case::not_an_integer(Some("two"), None)]
fn min_count_comes_from_partial_admission_annotation(
    #[case] value: Option<&str>,
    #[case] want: Option<i32>,
) {
    let j = match value {
        Some(v) => with_annotations(job("demo"), &[(MIN_PARALLELISM_ANNOTATION, v)]),
        None => job("demo"),
    };
    assert_eq!(podsets_from_job(&j)[0].min_count, want);
}

#[rstest]
#[case::controller_uid_dropped_job_name_kept(
    &[("app", "demo"), ("controller-uid", "x"), ("batch.kubernetes.io/controller-uid", "x"), ("job-name", "demo"), ("batch.kubernetes.io/job-name", "demo")],
    Some(map(&[("app", "demo"), ("job-name", "demo"), ("batch.kubernetes.io/job-name", "demo")]))
)]
#[case::only_controller_uid_leaves_no_labels(&[("controller-uid", "x")], None)]
fn podset_template_drops_controller_uid_labels(
    #[case] labels: &[(&str, &str)],
    #[case] want: Option<BTreeMap<String, String>>,
) {
    let mut j = job("demo");
    j.spec.as_mut().unwrap().template = template(labels, &[("disk", "ssd")]);
    let podset = &podsets_from_job(&j)[0];
    let meta = podset.template.metadata.as_ref().unwrap();
    assert_eq!(meta.labels, want);
    // The rest of the template is kept.
    assert_eq!(
        podset.template.spec.as_ref().unwrap().node_selector,
        Some(map(&[("disk", "ssd")]))
    );
}

#[test]
fn podset_template_keeps_last_value_of_duplicate_env_vars() {
    let var = |name: &str, value: &str| EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        value_from: None,
    };
    let mut j = job("demo");
    let spec = j.spec.as_mut().unwrap().template.spec.as_mut().unwrap();
    spec.containers[0].env = Some(vec![var("A", "1"), var("B", "2"), var("A", "3")]);
    let podset = &podsets_from_job(&j)[0];
    let env = podset.template.spec.as_ref().unwrap().containers[0]
        .env
        .clone();
    assert_eq!(env, Some(vec![var("A", "3"), var("B", "2")]));
}

// ---------- managed jobs, queue names, provreq annotations ----------

#[rstest]
#[case::queue_label(Some("lq"), None, false, Some("lq"), true)]
#[case::no_queue(None, None, false, None, false)]
#[case::empty_queue_label(Some(""), None, false, None, false)]
#[case::annotation_is_not_a_queue_name(None, Some("lq"), false, None, false)]
#[case::manage_jobs_without_queue_name(None, None, true, None, true)]
fn managed_when_queue_label_or_manage_all(
    #[case] label: Option<&str>,
    #[case] annotation: Option<&str>,
    #[case] manage_without_queue: bool,
    #[case] want_queue: Option<&str>,
    #[case] want_managed: bool,
) {
    let mut j = job("demo");
    j.metadata.labels = label.map(|l| map(&[("kueue.x-k8s.io/queue-name", l)]));
    j.metadata.annotations = annotation.map(|a| map(&[("kueue.x-k8s.io/queue-name", a)]));
    assert_eq!(queue_name(&j), want_queue);
    assert_eq!(is_managed(&j, manage_without_queue), want_managed);
}

#[test]
fn provreq_annotations_are_those_with_the_prefix() {
    let j = with_annotations(
        job("demo"),
        &[
            ("provreq.kueue.x-k8s.io/ValidUntilSeconds", "60"),
            ("provreq.kueue.x-k8s.io/maxRunDurationSeconds", "600"),
            ("other.io/provreq.kueue.x-k8s.io", "no"),
            ("kueue.x-k8s.io/job-min-parallelism", "1"),
        ],
    );
    assert_eq!(
        provreq_annotations(&j),
        map(&[
            ("provreq.kueue.x-k8s.io/ValidUntilSeconds", "60"),
            ("provreq.kueue.x-k8s.io/maxRunDurationSeconds", "600"),
        ])
    );
    assert!(provreq_annotations(&job("demo")).is_empty());
}

// ---------- merge ----------

#[rstest]
#[case::label_conflict(
    info(&[("a", "1")], &[], &[]), info(&[("a", "2")], &[], &[]),
    "invalid admission check PodSetUpdate: conflict for labels: conflict for key=a, value1=1, value2=2"
)]
#[case::annotation_conflict(
    info(&[], &[("note", "x")], &[]), info(&[], &[("note", "y")], &[]),
    "invalid admission check PodSetUpdate: conflict for annotations: conflict for key=note, value1=x, value2=y"
)]
#[case::node_selector_conflict(
    info(&[], &[], &[("zone", "a")]), info(&[], &[], &[("zone", "b")]),
    "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=zone, value1=a, value2=b"
)]
#[case::annotations_checked_before_labels(
    info(&[("a", "1")], &[("n", "1")], &[]), info(&[("a", "2")], &[("n", "2")], &[]),
    "invalid admission check PodSetUpdate: conflict for annotations: conflict for key=n, value1=1, value2=2"
)]
fn merge_refuses_a_key_with_another_value(
    #[case] mut base: PodSetInfo,
    #[case] other: PodSetInfo,
    #[case] want: &str,
) {
    let before = base.clone();
    let err = base.merge(&other).unwrap_err();
    assert_eq!(err.to_string(), want);
    assert!(err.is_permanent());
    assert_eq!(base, before, "a refused merge changes nothing");
}

#[test]
fn merge_accepts_same_values_and_adds_new_keys() {
    let mut base = info(&[("a", "1")], &[("n", "1")], &[("zone", "a")]);
    let other = info(
        &[("a", "1"), ("b", "2")],
        &[("n", "1")],
        &[("zone", "a"), ("disk", "ssd")],
    );
    base.merge(&other).unwrap();
    assert_eq!(base.labels, map(&[("a", "1"), ("b", "2")]));
    assert_eq!(base.annotations, map(&[("n", "1")]));
    assert_eq!(base.node_selector, map(&[("disk", "ssd"), ("zone", "a")]));
}

#[rstest]
#[case::identical(toleration("k", Some("Equal"), "v", "NoSchedule"), 1)]
#[case::empty_operator_means_equal(toleration("k", None, "v", "NoSchedule"), 1)]
#[case::toleration_seconds_ignored(
    Toleration { toleration_seconds: Some(30), ..toleration("k", Some("Equal"), "v", "NoSchedule") }, 1
)]
#[case::other_value(toleration("k", Some("Equal"), "w", "NoSchedule"), 2)]
#[case::other_effect(toleration("k", Some("Equal"), "v", "NoExecute"), 2)]
#[case::exists_operator(toleration("k", Some("Exists"), "v", "NoSchedule"), 2)]
fn merge_appends_tolerations_without_duplicates(
    #[case] added: Toleration,
    #[case] want_len: usize,
) {
    let mut base = info(&[], &[], &[]);
    base.tolerations = vec![toleration("k", Some("Equal"), "v", "NoSchedule")];
    let mut other = info(&[], &[], &[]);
    other.tolerations = vec![added.clone(), added];
    base.merge(&other).unwrap();
    assert_eq!(base.tolerations.len(), want_len);
}

// ---------- podset info from assignments and updates ----------

#[rstest]
#[case::one_flavor(&[("cpu", "on-demand")], &[("instance-type", "on-demand")], 1)]
#[case::same_flavor_twice_counted_once(&[("cpu", "on-demand"), ("memory", "on-demand")], &[("instance-type", "on-demand")], 1)]
#[case::two_flavors(&[("cpu", "on-demand"), ("nvidia.com/gpu", "gpu")], &[("accelerator", "a100"), ("instance-type", "on-demand")], 1)]
#[case::flavor_without_labels(&[("cpu", "plain")], &[], 0)]
fn assignment_flavors_give_node_selector_and_tolerations(
    #[case] assigned: &[(&str, &str)],
    #[case] want_selector: &[(&str, &str)],
    #[case] want_tolerations: usize,
) {
    let assignment = PodSetAssignment {
        name: "main".to_owned(),
        flavors: map(assigned),
        ..Default::default()
    };
    let pod_set = PodSet {
        name: "main".to_owned(),
        count: 4,
        ..Default::default()
    };
    let info = PodSetInfo::from_assignment(&assignment, &pod_set, &flavors()).unwrap();
    assert_eq!(info.node_selector, map(want_selector));
    assert_eq!(info.tolerations.len(), want_tolerations);
    assert_eq!(info.count, 4, "no admitted count: the podset's count");
}

#[test]
fn assignment_count_overrides_podset_count() {
    let assignment = PodSetAssignment {
        name: "main".to_owned(),
        count: Some(2),
        ..Default::default()
    };
    let pod_set = PodSet {
        name: "main".to_owned(),
        count: 4,
        ..Default::default()
    };
    let info = PodSetInfo::from_assignment(&assignment, &pod_set, &flavors()).unwrap();
    assert_eq!(info.count, 2);
}

#[test]
fn unknown_flavor_is_a_retryable_error() {
    let assignment = PodSetAssignment {
        name: "main".to_owned(),
        flavors: map(&[("cpu", "missing")]),
        ..Default::default()
    };
    let err = PodSetInfo::from_assignment(&assignment, &PodSet::default(), &flavors()).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"resourceflavors.kueue.x-k8s.io "missing" not found"#
    );
    assert!(!err.is_permanent());
}

#[test]
fn update_gives_its_fields() {
    let mut u = update("main", &[("l", "1")], &[("n", "2")]);
    u.annotations = map(&[("a", "3")]);
    u.tolerations = vec![toleration("k", None, "v", "NoSchedule")];
    let info = PodSetInfo::from_update(&u);
    assert_eq!(info.labels, map(&[("l", "1")]));
    assert_eq!(info.node_selector, map(&[("n", "2")]));
    assert_eq!(info.annotations, map(&[("a", "3")]));
    assert_eq!(info.tolerations, u.tolerations);
}

// ---------- admitted infos ----------

#[test]
fn admitted_infos_merge_flavor_kueue_labels_and_check_updates() {
    let j = job("demo");
    let wl = admitted_workload(
        &j,
        "on-demand",
        vec![
            check(
                "prov",
                vec![
                    update("other", &[("ignored", "x")], &[]),
                    update("main", &[("team", "a")], &[("node-pool", "p1")]),
                ],
            ),
            check(
                "second",
                vec![update("main", &[("team", "a"), ("extra", "y")], &[])],
            ),
        ],
    );
    let infos = admitted_infos(&wl, &flavors()).unwrap();
    assert_eq!(infos.len(), 1);
    let got = &infos[0];
    assert_eq!(got.name, "main");
    assert_eq!(got.count, 3);
    assert_eq!(
        got.node_selector,
        map(&[("instance-type", "on-demand"), ("node-pool", "p1")])
    );
    assert_eq!(
        got.labels,
        map(&[
            ("extra", "y"),
            ("kueue.x-k8s.io/cluster-queue-name", "cq"),
            ("kueue.x-k8s.io/local-queue-name", "lq"),
            ("kueue.x-k8s.io/podset", "main"),
            ("team", "a"),
        ])
    );
    assert_eq!(
        got.annotations,
        map(&[("kueue.x-k8s.io/workload", "job-demo-abcde")])
    );
    assert_eq!(
        got.tolerations,
        vec![toleration("spot", Some("Equal"), "false", "NoSchedule")]
    );
}

#[rstest]
#[case::check_against_flavor(
    vec![check("prov", vec![update("main", &[], &[("instance-type", "spot")])])],
    r#"in admission check "prov": invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=instance-type, value1=on-demand, value2=spot"#
)]
#[case::check_against_earlier_check(
    vec![
        check("first", vec![update("main", &[("team", "a")], &[])]),
        check("second", vec![update("main", &[("team", "b")], &[])]),
    ],
    r#"in admission check "second": invalid admission check PodSetUpdate: conflict for labels: conflict for key=team, value1=a, value2=b"#
)]
#[case::check_against_kueue_label(
    vec![check("prov", vec![update("main", &[("kueue.x-k8s.io/podset", "x")], &[])])],
    r#"in admission check "prov": invalid admission check PodSetUpdate: conflict for labels: conflict for key=kueue.x-k8s.io/podset, value1=main, value2=x"#
)]
fn admitted_infos_conflict_is_permanent_and_names_the_check(
    #[case] checks: Vec<AdmissionCheckState>,
    #[case] want: &str,
) {
    let wl = admitted_workload(&job("demo"), "on-demand", checks);
    let err = admitted_infos(&wl, &flavors()).unwrap_err();
    assert_eq!(err.to_string(), want);
    assert!(err.is_permanent());
}

#[rstest]
#[case::valid_name("cq", true)]
#[case::too_long(&"c".repeat(64), false)]
#[case::uppercase("Cq", false)]
fn cluster_queue_label_only_for_valid_label_values(#[case] cq: &str, #[case] present: bool) {
    let mut wl = admitted_workload(&job("demo"), "plain", vec![]);
    wl.status
        .as_mut()
        .unwrap()
        .admission
        .as_mut()
        .unwrap()
        .cluster_queue = cq.to_owned();
    let infos = admitted_infos(&wl, &flavors()).unwrap();
    assert_eq!(infos[0].labels.contains_key(CLUSTER_QUEUE_LABEL), present);
}

#[test]
fn multikueue_origin_adds_worker_pod_label() {
    let mut wl = admitted_workload(&job("demo"), "plain", vec![]);
    wl.metadata.labels = Some(map(&[("kueue.x-k8s.io/multikueue-origin", "mk")]));
    let infos = admitted_infos(&wl, &flavors()).unwrap();
    assert_eq!(
        infos[0]
            .labels
            .get(MULTIKUEUE_WORKER_WORKLOAD_POD_LABEL)
            .map(String::as_str),
        Some("true")
    );
}

#[test]
fn no_admission_gives_no_infos() {
    let mut wl = admitted_workload(&job("demo"), "plain", vec![]);
    wl.status.as_mut().unwrap().admission = None;
    assert_eq!(admitted_infos(&wl, &flavors()).unwrap(), Vec::new());
}

// ---------- start and stop ----------

#[test]
fn start_unsuspends_and_merges_info_into_template() {
    let mut j = job("demo");
    let wl = admitted_workload(
        &j,
        "on-demand",
        vec![check("prov", vec![update("main", &[("team", "a")], &[])])],
    );
    let infos = admitted_infos(&wl, &flavors()).unwrap();
    start_job(&mut j, &infos).unwrap();
    let spec = j.spec.as_ref().unwrap();
    assert_eq!(spec.suspend, Some(false));
    assert_eq!(
        spec.parallelism,
        Some(3),
        "no partial admission: parallelism untouched"
    );
    let labels = template_labels(&j);
    assert_eq!(labels.get("app").map(String::as_str), Some("demo"));
    assert_eq!(labels.get("team").map(String::as_str), Some("a"));
    let pod = spec.template.spec.as_ref().unwrap();
    assert_eq!(
        pod.node_selector,
        Some(map(&[("instance-type", "on-demand")]))
    );
    assert_eq!(
        pod.tolerations,
        Some(vec![toleration(
            "spot",
            Some("Equal"),
            "false",
            "NoSchedule"
        )])
    );
}

#[rstest]
#[case::node_selector(
    template(&[], &[("instance-type", "spot")]), info(&[], &[], &[("instance-type", "on-demand")]),
    "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=instance-type, value1=spot, value2=on-demand"
)]
#[case::label(
    template(&[("team", "b")], &[]), info(&[("team", "a")], &[], &[]),
    "invalid admission check PodSetUpdate: conflict for labels: conflict for key=team, value1=b, value2=a"
)]
fn start_refuses_conflict_with_template_and_leaves_job_alone(
    #[case] tpl: PodTemplateSpec,
    #[case] info: PodSetInfo,
    #[case] want: &str,
) {
    let mut j = job("demo");
    j.spec.as_mut().unwrap().template = tpl;
    let before = j.clone();
    let err = start_job(&mut j, &[info]).unwrap_err();
    assert_eq!(err.to_string(), want);
    assert!(err.is_permanent());
    assert_eq!(j, before);
}

#[rstest]
#[case::none(0)]
#[case::two(2)]
fn start_needs_exactly_one_info(#[case] n: usize) {
    let mut j = job("demo");
    let infos = vec![info(&[], &[], &[]); n];
    let err = start_job(&mut j, &infos).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("invalid podset infos: expecting 1 podset, got {n}")
    );
    assert!(err.is_permanent());
    assert_eq!(j.spec.as_ref().unwrap().suspend, Some(true));
}

#[test]
fn start_does_not_duplicate_template_tolerations() {
    let mut j = job("demo");
    let tol = toleration("spot", None, "false", "NoSchedule");
    j.spec
        .as_mut()
        .unwrap()
        .template
        .spec
        .as_mut()
        .unwrap()
        .tolerations = Some(vec![tol.clone()]);
    let mut i = info(&[], &[], &[]);
    i.tolerations = vec![
        toleration("spot", Some("Equal"), "false", "NoSchedule"),
        toleration("gpu", None, "", "NoSchedule"),
    ];
    start_job(&mut j, &[i]).unwrap();
    let tolerations = j
        .spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .tolerations
        .clone()
        .unwrap();
    assert_eq!(
        tolerations,
        vec![tol, toleration("gpu", None, "", "NoSchedule")]
    );
}

#[rstest]
#[case::parallelism_only(&[(MIN_PARALLELISM_ANNOTATION, "1")], Some(2), Some(5))]
#[case::completions_follow(&[(MIN_PARALLELISM_ANNOTATION, "1"), (COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION, "true")], Some(2), Some(2))]
#[case::no_partial_admission(&[], Some(5), Some(5))]
fn start_with_partial_admission_sets_admitted_count(
    #[case] annotations: &[(&str, &str)],
    #[case] want_parallelism: Option<i32>,
    #[case] want_completions: Option<i32>,
) {
    let mut j = with_annotations(job("demo"), annotations);
    let spec = j.spec.as_mut().unwrap();
    spec.parallelism = Some(5);
    spec.completions = Some(5);
    let original = j.clone();
    let mut admitted = info(&[], &[], &[]);
    admitted.count = 2;
    start_job(&mut j, &[admitted]).unwrap();
    assert_eq!(j.spec.as_ref().unwrap().parallelism, want_parallelism);
    assert_eq!(j.spec.as_ref().unwrap().completions, want_completions);
    // Stopping puts the podset count back.
    stop_job(&mut j, &podsets_from_job(&original));
    assert_eq!(j, original);
}

fn richer_job() -> Job {
    let mut j = job("demo");
    let tpl = &mut j.spec.as_mut().unwrap().template;
    tpl.metadata = Some(ObjectMeta {
        labels: Some(map(&[
            ("app", "demo"),
            ("controller-uid", "u1"),
            ("batch.kubernetes.io/job-name", "demo"),
        ])),
        annotations: Some(map(&[("note", "keep")])),
        ..Default::default()
    });
    let pod = tpl.spec.as_mut().unwrap();
    pod.node_selector = Some(map(&[("disk", "ssd")]));
    pod.tolerations = Some(vec![toleration("dedicated", None, "batch", "NoSchedule")]);
    j
}

fn bare_metadata_job() -> Job {
    let mut j = job("demo");
    j.spec.as_mut().unwrap().template.metadata = None;
    j
}

#[rstest]
#[case::plain_template(job("demo"))]
#[case::rich_template(richer_job())]
#[case::template_without_metadata(bare_metadata_job())]
fn start_then_stop_restores_original_template_exactly(#[case] original: Job) {
    let wl = admitted_workload(
        &original,
        "on-demand",
        vec![check(
            "prov",
            vec![PodSetUpdate {
                annotations: map(&[("autoscaling.x-k8s.io/consume-provisioning-request", "pr-1")]),
                ..update("main", &[("team", "a")], &[("node-pool", "p1")])
            }],
        )],
    );
    let mut j = original.clone();
    start_job(&mut j, &admitted_infos(&wl, &flavors()).unwrap()).unwrap();
    assert_ne!(j, original);
    j.status = Some(JobStatus {
        start_time: Some(Time(Default::default())),
        active: Some(3),
        ..Default::default()
    });

    let outcome = stop_job(&mut j, &wl.spec.pod_sets);
    assert_eq!(
        outcome,
        StopOutcome {
            stopped_now: true,
            spec_changed: true,
            status_changed: true
        }
    );
    assert_eq!(j.status.as_ref().unwrap().start_time, None);
    j.status = None;
    assert_eq!(j, original);
}

#[test]
fn stop_keeps_job_controller_labels_added_after_creation() {
    let original = job("demo");
    let podsets = podsets_from_job(&original);
    let mut j = original.clone();
    j.spec.as_mut().unwrap().suspend = Some(false);
    j.spec
        .as_mut()
        .unwrap()
        .template
        .metadata
        .as_mut()
        .unwrap()
        .labels = Some(map(&[
        ("app", "demo"),
        ("controller-uid", "u1"),
        ("team", "a"),
    ]));
    stop_job(&mut j, &podsets);
    assert_eq!(
        template_labels(&j),
        map(&[("app", "demo"), ("controller-uid", "u1")])
    );
}

#[rstest]
#[case::already_stopped(Some(true), None, StopOutcome::default())]
#[case::running(Some(false), None, StopOutcome { stopped_now: true, spec_changed: true, status_changed: false })]
#[case::half_stopped(Some(true), Some("true"), StopOutcome { stopped_now: true, spec_changed: true, status_changed: false })]
fn stop_reports_what_changed(
    #[case] suspend: Option<bool>,
    #[case] stopping: Option<&str>,
    #[case] want: StopOutcome,
) {
    let original = job("demo");
    let podsets = podsets_from_job(&original);
    let mut j = match stopping {
        Some(v) => with_annotations(original, &[(STOPPING_ANNOTATION, v)]),
        None => original,
    };
    j.spec.as_mut().unwrap().suspend = suspend;
    let outcome = stop_job(&mut j, &podsets);
    assert_eq!(outcome, want);
    assert_eq!(outcome.changed(), want != StopOutcome::default());
    assert!(is_suspended(&j));
    assert!(
        j.metadata
            .annotations
            .as_ref()
            .is_none_or(|a| !a.contains_key(STOPPING_ANNOTATION))
    );
}

/// Kueue's stopping mark: a suspended job still marked is a stop cut short, neither running nor
/// suspended, so the reconciler finishes the stop before anything else.
#[rstest]
#[case::running(Some(false), None, false, false)]
#[case::suspended(Some(true), None, true, false)]
#[case::stop_cut_short(Some(true), Some("true"), false, true)]
#[case::mark_without_suspend(Some(false), Some("true"), false, false)]
fn a_marked_suspended_job_is_stopping_not_suspended(
    #[case] suspend: Option<bool>,
    #[case] stopping: Option<&str>,
    #[case] suspended: bool,
    #[case] is_stopping_now: bool,
) {
    let mut j = match stopping {
        Some(v) => with_annotations(job("demo"), &[(STOPPING_ANNOTATION, v)]),
        None => job("demo"),
    };
    j.spec.as_mut().unwrap().suspend = suspend;
    assert_eq!(is_suspended(&j), suspended);
    assert_eq!(is_stopping(&j), is_stopping_now);
}

#[test]
fn stop_without_podsets_only_suspends() {
    let mut j = job("demo");
    j.spec.as_mut().unwrap().suspend = Some(false);
    j.spec
        .as_mut()
        .unwrap()
        .template
        .metadata
        .as_mut()
        .unwrap()
        .labels = Some(map(&[("team", "a")]));
    let outcome = stop_job(&mut j, &[]);
    assert!(outcome.stopped_now);
    assert_eq!(template_labels(&j), map(&[("team", "a")]));
}

// ---------- suspend on creation ----------

#[rstest]
#[case::queue_named_running(true, Some(false), false, false, true, Some(true))]
#[case::queue_named_unset_suspend(true, None, false, false, true, Some(true))]
#[case::queue_named_already_suspended(true, Some(true), false, false, false, Some(true))]
#[case::unmanaged(false, Some(false), false, false, false, Some(false))]
#[case::manage_without_queue_name(false, Some(false), true, false, true, Some(true))]
#[case::being_deleted(true, Some(false), false, true, false, Some(false))]
fn suspend_on_creation_suspends_managed_jobs(
    #[case] queue_label: bool,
    #[case] suspend: Option<bool>,
    #[case] manage_without_queue: bool,
    #[case] deleting: bool,
    #[case] want_changed: bool,
    #[case] want_suspend: Option<bool>,
) {
    let mut j = job("demo");
    if !queue_label {
        j.metadata.labels = None;
    }
    if deleting {
        j.metadata.deletion_timestamp = Some(Time(Default::default()));
    }
    j.spec.as_mut().unwrap().suspend = suspend;
    assert_eq!(
        suspend_on_creation(&mut j, manage_without_queue),
        want_changed
    );
    assert_eq!(j.spec.as_ref().unwrap().suspend, want_suspend);
}

// ---------- finished, active, pods ready ----------

fn condition(type_: &str, status: &str, message: Option<&str>) -> JobCondition {
    JobCondition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        message: message.map(str::to_owned),
        ..Default::default()
    }
}

#[rstest]
#[case::no_conditions(vec![], None)]
#[case::complete(
    vec![condition("Complete", "True", Some("Reached expected number of succeeded pods"))],
    Some(("Succeeded", "Reached expected number of succeeded pods"))
)]
#[case::failed(
    vec![condition("Failed", "True", Some("Job has reached the specified backoff limit"))],
    Some(("Failed", "Job has reached the specified backoff limit"))
)]
#[case::complete_without_message(vec![condition("Complete", "True", None)], Some(("Succeeded", "")))]
#[case::false_conditions_ignored(
    vec![condition("Failed", "False", Some("no")), condition("Complete", "False", Some("no"))],
    None
)]
#[case::other_types_ignored(vec![condition("Suspended", "True", Some("no"))], None)]
#[case::first_terminal_condition_wins(
    vec![condition("FailureTarget", "True", Some("x")), condition("Failed", "True", Some("boom")), condition("Complete", "True", Some("ok"))],
    Some(("Failed", "boom"))
)]
fn finished_from_complete_or_failed_condition(
    #[case] conditions: Vec<JobCondition>,
    #[case] want: Option<(&str, &str)>,
) {
    let mut j = job("demo");
    j.status = Some(JobStatus {
        conditions: Some(conditions),
        ..Default::default()
    });
    let got = finished(&j);
    assert_eq!(got.as_ref().map(|(r, m)| (*r, m.as_str())), want);
}

#[test]
fn job_without_status_is_not_finished_nor_active() {
    let j = job("demo");
    assert_eq!(finished(&j), None);
    assert!(!is_active(&j));
}

#[rstest]
#[case::none_active(Some(0), None, false)]
#[case::unset(None, None, false)]
#[case::some_active(Some(2), None, true)]
#[case::run_by_the_job_controller(Some(2), Some("kubernetes.io/job-controller"), true)]
#[case::copied_back_from_a_worker(Some(2), Some("kueue.x-k8s.io/multikueue"), false)]
fn active_when_pods_run_here(
    #[case] active: Option<i32>,
    #[case] managed_by: Option<&str>,
    #[case] want: bool,
) {
    let mut j = job("demo");
    j.spec.get_or_insert_with(Default::default).managed_by = managed_by.map(str::to_owned);
    j.status = Some(JobStatus {
        active,
        ..Default::default()
    });
    assert_eq!(is_active(&j), want);
}

#[rstest]
#[case::nothing_ready(0, 0, 0, false)]
#[case::all_ready(0, 3, 0, true)]
#[case::ready_and_succeeded(1, 2, 0, true)]
#[case::uncounted_succeeded_count(1, 1, 1, true)]
#[case::one_missing(1, 1, 0, false)]
fn pods_ready_counts_ready_and_succeeded(
    #[case] succeeded: i32,
    #[case] ready: i32,
    #[case] uncounted: usize,
    #[case] want: bool,
) {
    let mut j = job("demo");
    j.status = Some(JobStatus {
        succeeded: Some(succeeded),
        ready: Some(ready),
        uncounted_terminated_pods: Some(UncountedTerminatedPods {
            succeeded: Some((0..uncounted).map(|i| format!("pod-{i}")).collect()),
            failed: None,
        }),
        ..Default::default()
    });
    assert_eq!(pods_ready(&j), want);
}
