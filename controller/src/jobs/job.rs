//! The batch/v1 Job integration: how a Job maps to a Workload and how it is started and stopped.
//!
//! Mirrors upstream `pkg/controller/jobs/job/job_controller.go` and the parts of
//! `pkg/controller/jobframework` (workload names, queue name, webhook suspend) a Job uses. Every function is
//! pure: the reconciler reads the objects, calls these, and writes what changed.

use std::collections::BTreeMap;

use api::constants::{annotation, label, workload_reason};
use api::kueue::PodSet;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Container, EnvVar, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use sha1::{Digest, Sha1};

use super::podset::{PodSetInfo, PodSetInfoError};

/// The only podset of a Job.
pub const DEFAULT_POD_SET_NAME: &str = "main";
/// Job annotation opting into partial admission: the smallest parallelism the job accepts.
pub const MIN_PARALLELISM_ANNOTATION: &str = "kueue.x-k8s.io/job-min-parallelism";
/// Job annotation: with partial admission, keep `completions` equal to `parallelism`.
pub const COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION: &str =
    "kueue.x-k8s.io/job-completions-equal-parallelism";
/// Job annotation upstream sets while a stop is half done; a job carrying it is not considered suspended.
pub const STOPPING_ANNOTATION: &str = "kueue.x-k8s.io/stopping";
/// `Finished` reason upstream gives a Workload whose job cannot start for a permanent reason
/// ([`PodSetInfoError::is_permanent`]); the message is the error's.
pub const FAILED_TO_START_REASON: &str = "FailedToStart";
/// Upper bound of a generated Workload name (upstream without the ShortWorkloadNames feature).
pub const MAX_WORKLOAD_NAME_LENGTH: usize = 253;

/// Characters of the sha1 kept in a Workload name.
const HASH_LENGTH: usize = 5;
/// Pod template labels the Job controller manages; they are not part of what Kueue admits or restores.
const JOB_CONTROLLER_LABELS: [&str; 4] = [
    "job-name",
    "controller-uid",
    "batch.kubernetes.io/job-name",
    "batch.kubernetes.io/controller-uid",
];
/// Of those, the ones dropped from the Workload's template (the job-name labels are kept).
const DROPPED_FROM_WORKLOAD: [&str; 2] = ["controller-uid", "batch.kubernetes.io/controller-uid"];

/// The name of the Workload of a Job: `job-<name>-<hash>`, where the hash is the first 5 hex digits of the
/// sha1 of `Job\nbatch\n<name>\n<uid>`. The uid makes a recreated job of the same name get a new Workload.
/// `job-<name>` is cut so that the whole name stays within 253 characters; the hash uses the full name.
pub fn workload_name(job_name: &str, job_uid: &str) -> String {
    let prefix = format!("job-{job_name}");
    let max_prefix = MAX_WORKLOAD_NAME_LENGTH - 1 - HASH_LENGTH;
    let hash = sha1_hex(&format!("Job\nbatch\n{job_name}\n{job_uid}"));
    let short_hash = hash.get(..HASH_LENGTH).unwrap_or(&hash);
    format!("{}-{short_hash}", truncate(&prefix, max_prefix))
}

/// The first `max` bytes of `s`, cut back to a character boundary (names are ASCII in practice).
fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s.get(..end).unwrap_or(s)
}

/// Lowercase hex of the sha1 of `input`.
fn sha1_hex(input: &str) -> String {
    Sha1::digest(input.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The LocalQueue the job is submitted to: its `kueue.x-k8s.io/queue-name` label, if set and not empty.
/// Upstream reads the label only (the old annotation form is no longer honoured).
pub fn queue_name(job: &Job) -> Option<&str> {
    job.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(label::QUEUE_NAME))
        .map(String::as_str)
        .filter(|q| !q.is_empty())
}

/// Whether Kueue manages the job: it names a queue, or the configuration manages jobs without one.
/// (Upstream also requires the namespace to match `managedJobsNamespaceSelector` in the latter case;
/// the caller folds that into `manage_jobs_without_queue_name`.)
pub fn is_managed(job: &Job, manage_jobs_without_queue_name: bool) -> bool {
    queue_name(job).is_some() || manage_jobs_without_queue_name
}

/// The job's annotations starting with `provreq.kueue.x-k8s.io/`, copied to its Workload at creation so that
/// the ProvisioningRequest check can pass them on as parameters.
pub fn provreq_annotations(job: &Job) -> BTreeMap<String, String> {
    job.metadata
        .annotations
        .iter()
        .flatten()
        .filter(|(k, _)| k.starts_with(annotation::PROVREQ_PREFIX))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The podsets of the job's Workload: one podset `main` of `min(parallelism, completions)` pods
/// (parallelism defaults to 1), with the job's pod template minus the controller-uid labels and with
/// duplicate environment variables collapsed. `minCount` comes from the partial-admission annotation.
pub fn podsets_from_job(job: &Job) -> Vec<PodSet> {
    let mut template = job
        .spec
        .as_ref()
        .map(|s| s.template.clone())
        .unwrap_or_default();
    drop_controller_uid_labels(&mut template);
    dedup_env(&mut template);
    vec![PodSet {
        name: DEFAULT_POD_SET_NAME.to_owned(),
        template,
        count: pods_count(job),
        min_count: min_pods_count(job),
    }]
}

/// Removes the labels the Job controller sets per job instance; they would make the Workload differ from
/// one job to the next for no scheduling reason.
fn drop_controller_uid_labels(template: &mut PodTemplateSpec) {
    let Some(labels) = template.metadata.as_mut().and_then(|m| m.labels.as_mut()) else {
        return;
    };
    for key in DROPPED_FROM_WORKLOAD {
        labels.remove(key);
    }
    if labels.is_empty()
        && let Some(meta) = template.metadata.as_mut()
    {
        meta.labels = None;
    }
}

/// Keeps one environment variable per name: the last value, at the place of the first occurrence, which is
/// what the kubelet ends up using.
fn dedup_env(template: &mut PodTemplateSpec) {
    let Some(spec) = template.spec.as_mut() else {
        return;
    };
    spec.containers.iter_mut().for_each(dedup_container_env);
    spec.init_containers
        .iter_mut()
        .flatten()
        .for_each(dedup_container_env);
}

fn dedup_container_env(container: &mut Container) {
    let Some(env) = container.env.as_mut() else {
        return;
    };
    let mut deduped: Vec<EnvVar> = Vec::with_capacity(env.len());
    for var in env.drain(..) {
        match deduped.iter_mut().find(|v| v.name == var.name) {
            Some(slot) => *slot = var,
            None => deduped.push(var),
        }
    }
    *env = deduped;
}

/// Pods the job runs at once: parallelism (1 when unset), capped by completions.
fn pods_count(job: &Job) -> i32 {
    let spec = job.spec.as_ref();
    let parallelism = spec.and_then(|s| s.parallelism).unwrap_or(1);
    match spec.and_then(|s| s.completions) {
        Some(completions) if completions < parallelism => completions,
        _ => parallelism,
    }
}

/// The partial-admission minimum, when the annotation holds an integer.
fn min_pods_count(job: &Job) -> Option<i32> {
    annotation_value(job, MIN_PARALLELISM_ANNOTATION).and_then(|v| v.parse().ok())
}

/// Whether partial admission must also set completions (the annotation parses as a true Go bool).
fn completions_follow_parallelism(job: &Job) -> bool {
    matches!(
        annotation_value(job, COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION),
        Some("1" | "t" | "T" | "true" | "TRUE" | "True")
    )
}

fn annotation_value<'a>(job: &'a Job, key: &str) -> Option<&'a str> {
    job.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(key))
        .map(String::as_str)
}

/// Whether the job is suspended: `spec.suspend` is true and no stop is half done.
pub fn is_suspended(job: &Job) -> bool {
    suspend_set(job) && !stop_marked(job)
}

/// Whether a stop is half done: the job is suspended but its template not yet put back.
pub fn is_stopping(job: &Job) -> bool {
    suspend_set(job) && stop_marked(job)
}

fn suspend_set(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.suspend).unwrap_or(false)
}

fn stop_marked(job: &Job) -> bool {
    annotation_value(job, STOPPING_ANNOTATION) == Some("true")
}

/// Whether the job still has running pods (`status.active` is not 0); the quota of an evicted job is released
/// only once it has none. A job handed to MultiKueue runs no pods here: its count is a worker's,
/// copied back, and a lost worker would otherwise hold the manager's quota for ever.
pub fn is_active(job: &Job) -> bool {
    !is_dispatched(job) && job.status.as_ref().and_then(|s| s.active).unwrap_or(0) != 0
}

/// Whether the job is handed to MultiKueue (`spec.managedBy`): it runs on a worker, never here.
pub fn is_dispatched(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.managed_by.as_deref())
        == Some(api::constants::controller_name::MULTIKUEUE)
}

/// Whether enough pods are ready or succeeded for waitForPodsReady: succeeded + ready + uncounted succeeded
/// reach the job's pod count.
pub fn pods_ready(job: &Job) -> bool {
    let Some(status) = job.status.as_ref() else {
        return pods_count(job) <= 0;
    };
    let uncounted = status
        .uncounted_terminated_pods
        .as_ref()
        .and_then(|u| u.succeeded.as_ref())
        .map_or(0, Vec::len);
    let done = i64::from(status.succeeded.unwrap_or(0))
        + i64::from(status.ready.unwrap_or(0))
        + i64::try_from(uncounted).unwrap_or(i64::MAX);
    done >= i64::from(pods_count(job))
}

/// Tollgate's stand-in for Kueue's mutating webhook, to apply when the job is created (it has no Workload
/// yet): a managed job that is not suspended gets `suspend: true`. A job being deleted is left alone.
/// Returns whether the job changed.
pub fn suspend_on_creation(job: &mut Job, manage_jobs_without_queue_name: bool) -> bool {
    if job.metadata.deletion_timestamp.is_some() || !is_managed(job, manage_jobs_without_queue_name)
    {
        return false;
    }
    if is_suspended(job) {
        return false;
    }
    let spec = job.spec.get_or_insert_with(Default::default);
    let changed = spec.suspend != Some(true);
    spec.suspend = Some(true);
    changed
}

/// Why and how the job finished: the first `Complete` or `Failed` condition that is `True` gives the
/// Workload's `Finished` reason (`Succeeded` or `Failed`) and its message, copied from the job's condition.
pub fn finished(job: &Job) -> Option<(&'static str, String)> {
    let conditions = job.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .filter(|c| c.status == "True")
        .find_map(|c| {
            let reason = match c.type_.as_str() {
                "Complete" => workload_reason::SUCCEEDED,
                "Failed" => workload_reason::FAILED,
                _ => return None,
            };
            Some((reason, c.message.clone().unwrap_or_default()))
        })
}

/// Starts an admitted job: `suspend: false` and the podset information merged into the pod template
/// (labels, annotations and node selector added, tolerations appended unless present). With partial
/// admission, parallelism (and completions if they follow it) becomes the admitted count.
///
/// A Job has one podset, so exactly one info is expected. A key the template already has with another
/// value is a permanent error. On error the job is left untouched.
pub fn start_job(job: &mut Job, infos: &[PodSetInfo]) -> Result<(), PodSetInfoError> {
    let [info] = infos else {
        return Err(PodSetInfoError::BadLength {
            want: 1,
            got: infos.len(),
        });
    };
    let mut started = job.clone();
    let follow = completions_follow_parallelism(job);
    let partial = min_pods_count(job).is_some();
    let spec = started.spec.get_or_insert_with(Default::default);
    spec.suspend = Some(false);
    if partial {
        spec.parallelism = Some(info.count);
        if follow {
            spec.completions = Some(info.count);
        }
    }
    merge_into_template(&mut spec.template, info)?;
    *job = started;
    Ok(())
}

/// Merges `info` into a pod template; fields that were absent stay absent when there is nothing to add.
pub(crate) fn merge_into_template(
    template: &mut PodTemplateSpec,
    info: &PodSetInfo,
) -> Result<(), PodSetInfoError> {
    let mut merged = PodSetInfo::from_template(template);
    merged.merge(info)?;
    with_default(&mut template.metadata, false, |meta| {
        set_map(&mut meta.labels, merged.labels);
        set_map(&mut meta.annotations, merged.annotations);
    });
    with_default(&mut template.spec, false, |spec| {
        set_map(&mut spec.node_selector, merged.node_selector);
        if !merged.tolerations.is_empty() || spec.tolerations.is_some() {
            spec.tolerations = Some(merged.tolerations);
        }
    });
    Ok(())
}

/// Writes a map unless it is empty and the field is absent or empty already.
fn set_map(slot: &mut Option<BTreeMap<String, String>>, map: BTreeMap<String, String>) {
    if !map.is_empty() || slot.is_some() {
        *slot = Some(map);
    }
}

/// Runs `f` on the value of `slot`, creating a default one if absent; a created value left at its default
/// is removed again, as is an existing one when `collapse` says the original had none.
fn with_default<T: Default + PartialEq, R>(
    slot: &mut Option<T>,
    collapse: bool,
    f: impl FnOnce(&mut T) -> R,
) -> R {
    let was_absent = slot.is_none();
    let result = f(slot.get_or_insert_with(T::default));
    if (was_absent || collapse) && slot.as_ref().is_some_and(|v| *v == T::default()) {
        *slot = None;
    }
    result
}

/// What [`stop_job`] changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StopOutcome {
    /// The job was running and is now suspended (upstream records a `Stopped` event only then).
    pub stopped_now: bool,
    /// Something under `spec` or `metadata` changed: write the job.
    pub spec_changed: bool,
    /// `status.startTime` was cleared: write the status subresource. Kubernetes lets the template's
    /// scheduling fields change only while the job is suspended with no start time, so upstream clears it
    /// before restoring the template.
    pub status_changed: bool,
}

impl StopOutcome {
    /// Whether anything changed.
    pub fn changed(&self) -> bool {
        self.spec_changed || self.status_changed
    }
}

/// Stops a job (eviction, lost admission, deleted Workload): `suspend: true`, `status.startTime` cleared,
/// and the pod template's labels, annotations, node selector, tolerations and scheduling gates put back as
/// they are in the Workload's podset template (`original`), keeping the Job controller's own labels. With
/// partial admission, parallelism (and completions if they follow it) goes back to the podset count.
/// Without podsets only the suspension is done.
pub fn stop_job(job: &mut Job, original: &[PodSet]) -> StopOutcome {
    let mut outcome = StopOutcome::default();
    if !is_suspended(job) {
        job.spec.get_or_insert_with(Default::default).suspend = Some(true);
        outcome.stopped_now = true;
        outcome.spec_changed = true;
    }
    if let Some(annotations) = job.metadata.annotations.as_mut()
        && annotations.remove(STOPPING_ANNOTATION).is_some()
    {
        outcome.spec_changed = true;
        // As Go's `omitempty` sends it: no annotations rather than an empty map.
        if annotations.is_empty() {
            job.metadata.annotations = None;
        }
    }
    if let Some(status) = job.status.as_mut()
        && status.start_time.take().is_some()
    {
        outcome.status_changed = true;
    }
    if let Some(pod_set) = original.first() {
        outcome.spec_changed |= restore_pod_sets(job, pod_set);
    }
    outcome
}

/// Puts the template (and the partial-admission counts) back as in `pod_set`; returns whether it changed.
fn restore_pod_sets(job: &mut Job, pod_set: &PodSet) -> bool {
    let partial = min_pods_count(job).is_some();
    let follow = completions_follow_parallelism(job);
    let spec = job.spec.get_or_insert_with(Default::default);
    let mut changed = false;
    if partial && spec.parallelism.unwrap_or(0) != pod_set.count {
        spec.parallelism = Some(pod_set.count);
        if follow {
            spec.completions = Some(pod_set.count);
        }
        changed = true;
    }
    changed | restore_template(&mut spec.template, &pod_set.template)
}

/// Restores the scheduling-related fields of `template` from `original`. Two values are the same when both
/// are absent or empty, so an untouched template is not rewritten.
fn restore_template(template: &mut PodTemplateSpec, original: &PodTemplateSpec) -> bool {
    let orig_meta = original.metadata.as_ref();
    let orig_spec = original.spec.as_ref();
    let mut labels = orig_meta.and_then(|m| m.labels.clone());
    let current_labels = template.metadata.as_ref().and_then(|m| m.labels.as_ref());
    for key in JOB_CONTROLLER_LABELS {
        if let Some(value) = current_labels.and_then(|l| l.get(key)) {
            labels
                .get_or_insert_with(BTreeMap::new)
                .insert(key.to_owned(), value.clone());
        }
    }
    let mut changed = with_default(
        &mut template.metadata,
        orig_meta.is_none(),
        |meta: &mut ObjectMeta| {
            let annotations = orig_meta.and_then(|m| m.annotations.clone());
            restore(&mut meta.labels, labels, BTreeMap::is_empty)
                | restore(&mut meta.annotations, annotations, BTreeMap::is_empty)
        },
    );
    changed |= with_default(&mut template.spec, orig_spec.is_none(), |spec| {
        let node_selector = orig_spec.and_then(|s| s.node_selector.clone());
        let tolerations = orig_spec.and_then(|s| s.tolerations.clone());
        let gates = orig_spec.and_then(|s| s.scheduling_gates.clone());
        restore(&mut spec.node_selector, node_selector, BTreeMap::is_empty)
            | restore(&mut spec.tolerations, tolerations, Vec::is_empty)
            | restore(&mut spec.scheduling_gates, gates, Vec::is_empty)
    });
    changed
}

/// Sets `slot` to `want` unless they already hold the same thing (absent counting as empty).
fn restore<T: PartialEq>(slot: &mut Option<T>, want: Option<T>, is_empty: fn(&T) -> bool) -> bool {
    let empty = |v: &Option<T>| v.as_ref().is_none_or(is_empty);
    let same = (empty(slot) && empty(&want)) || *slot == want;
    if !same {
        *slot = want;
    }
    !same
}
