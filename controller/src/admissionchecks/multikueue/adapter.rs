//! What the workload controller needs of a job kind (upstream's `MultiKueueAdapter`): whether a
//! local job may be dispatched, creating it on the worker that admitted its Workload, copying
//! the worker's status back, and deleting the worker's copy. batch/v1 Job is implemented
//! ([`BatchJob`], as upstream's `job_multikueue_adapter.go`); another kind is one more
//! [`JobAdapter`] in [`ADAPTERS`].
//!
//! Remote objects are ours only when they carry our origin label: a job of the same name that
//! a worker's users created is never copied from nor deleted (upstream #11849, #12404).

use api::constants::{controller_name, label};
use api::kueue::Workload;
use futures::future::BoxFuture;
use k8s_openapi::api::batch::v1::{Job, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams, Preconditions};

use crate::error::Error;
use crate::jobs;
use crate::state::{Key, World};
use crate::writer::{FIELD_MANAGER, Writer, Written};

/// One job kind MultiKueue can dispatch. Object-safe: the workload controller holds
/// `&'static dyn JobAdapter`s ([`adapter_for`]).
pub trait JobAdapter: Send + Sync {
    /// The owner reference's `apiVersion` this adapter handles (`batch/v1`).
    fn api_version(&self) -> &'static str;
    /// The owner reference's `kind` (`Job`).
    fn kind(&self) -> &'static str;

    /// Whether the local job `owner` (`namespace/name`) is meant for MultiKueue; when it is not,
    /// the Rejected message of the check.
    fn check_managed(&self, world: &World, owner: &Key) -> Managed;

    /// Copies the worker's job status to the local job. When the worker has no job of that name
    /// and `create` is set (the worker admitted the workload), creates it there: a suspended
    /// copy for the Workload `workload`, with `managedBy` cleared and our origin label. A
    /// worker's job without our origin is left alone.
    ///
    /// Remote failures (a worker unreachable, its namespace missing) are errors; they concern
    /// one worker, so the caller retries rather than stopping the controller.
    fn sync<'a>(
        &'a self,
        local: &'a Writer,
        remote: &'a Client,
        world: &'a World,
        job: SyncRequest<'a>,
    ) -> BoxFuture<'a, Result<Synced, Error>>;

    /// Deletes the worker's job `owner` (background propagation), only if it carries our origin.
    fn delete_remote<'a>(
        &'a self,
        remote: &'a Client,
        owner: &'a Key,
        origin: &'a str,
    ) -> BoxFuture<'a, Result<Deleted, Error>>;
}

/// Which job [`JobAdapter::sync`] syncs, and how.
#[derive(Debug, Clone, Copy)]
pub struct SyncRequest<'a> {
    /// The local job (`namespace/name`); the worker's has the same name.
    pub owner: &'a Key,
    /// The manager's Workload, named in the worker's job's prebuilt-workload label.
    pub workload: &'a str,
    pub origin: &'a str,
    /// Create the job on the worker when it has none (that worker admitted the workload).
    pub create: bool,
}

/// Whether a local job may be dispatched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Managed {
    Yes,
    /// Not managed by MultiKueue: the check's Rejected message.
    No(String),
    /// The job is not (yet) known: decide later.
    Unknown,
}

/// What [`JobAdapter::sync`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synced {
    /// The job was created on the worker.
    Created,
    /// The worker's status was written to the local job.
    StatusCopied,
    /// The local job's status already is the worker's.
    UpToDate,
    /// The local job is still suspended while the worker's runs: its status is not copied yet
    /// (a start time would stop the local job from being started; upstream defers too). Sync
    /// again once the local job runs.
    Deferred,
    /// The local job changed meanwhile, or the worker's job appeared meanwhile: sync again.
    Stale,
    /// The local job is not known.
    LocalMissing,
    /// The worker has no job of that name, and none was to be created.
    RemoteMissing,
    /// The worker has a job of that name without our origin: neither copied nor touched.
    NotOurs,
}

impl Synced {
    /// Whether something was written (locally or on the worker).
    pub fn wrote(self) -> bool {
        matches!(self, Synced::Created | Synced::StatusCopied)
    }
}

/// What [`JobAdapter::delete_remote`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    Deleted,
    /// The worker has no job of that name.
    Absent,
    /// The worker's job of that name does not carry our origin: kept.
    NotOurs,
    /// It was replaced between the look and the delete: look again.
    Changed,
}

/// The batch/v1 Job adapter.
pub struct BatchJob;

/// Every adapter, one per job kind.
pub static ADAPTERS: &[&dyn JobAdapter] = &[&BatchJob];

/// The adapter for an owner reference's `apiVersion` and `kind`.
pub fn adapter_for(api_version: &str, kind: &str) -> Option<&'static dyn JobAdapter> {
    ADAPTERS
        .iter()
        .copied()
        .find(|a| a.api_version() == api_version && a.kind() == kind)
}

/// The adapter of a Workload's controlling owner and that owner's key; else the check's
/// Rejected message (upstream's, naming the kind as Go's `GroupVersionKind.String()` does).
pub fn adapter_of(wl: &Workload) -> Result<(&'static dyn JobAdapter, Key), String> {
    let Some(owner) = jobs::controller_of(wl) else {
        return Err("No multikueue adapter found".to_owned());
    };
    let adapter = adapter_for(&owner.api_version, &owner.kind).ok_or_else(|| {
        format!(
            "No multikueue adapter found for owner kind {:?}",
            gvk_string(&owner.api_version, &owner.kind)
        )
    })?;
    let ns = wl.metadata.namespace.as_deref().unwrap_or_default();
    Ok((adapter, format!("{ns}/{}", owner.name)))
}

/// The manager Workload a remote job belongs to (`namespace/name`), from its prebuilt-workload
/// label: how a worker's job event finds its Workload.
pub fn workload_of_remote(meta: &ObjectMeta) -> Option<Key> {
    let name = jobs::prebuilt_workload_name(meta)?;
    Some(format!(
        "{}/{name}",
        meta.namespace.as_deref().unwrap_or_default()
    ))
}

/// Go's `schema.FromAPIVersionAndKind(..).String()`: `group/version, Kind=kind`, with an empty
/// group for the core group and nothing but the kind when the apiVersion does not parse.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = match api_version.split('/').collect::<Vec<_>>()[..] {
        [version] => ("", version),
        [group, version] => (group, version),
        _ => ("", ""),
    };
    format!("{group}/{version}, Kind={kind}")
}

/// Whether a remote object carries our origin label.
fn is_ours(meta: &ObjectMeta, origin: &str) -> bool {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(label::MULTIKUEUE_ORIGIN))
        .is_some_and(|o| o == origin)
}

/// Why a local Job is not for MultiKueue, as upstream's Rejected message; `None` when it is.
pub fn unmanaged_job_message(job: &Job) -> Option<String> {
    let managed_by = job
        .spec
        .as_ref()
        .and_then(|s| s.managed_by.as_deref())
        .unwrap_or_default();
    (managed_by != controller_name::MULTIKUEUE).then(|| {
        format!(
            "The owner is not managed by Kueue: Expecting spec.managedBy to be {:?} not {:?}",
            controller_name::MULTIKUEUE,
            managed_by
        )
    })
}

/// Pod template labels the Job controller sets per job instance; dropped from the copy, as
/// upstream's `cleanLabels` does (`batch.kubernetes.io/job-name` stays: the name is the same).
const INSTANCE_LABELS: [&str; 3] = [
    "job-name",
    "controller-uid",
    "batch.kubernetes.io/controller-uid",
];

/// The job to create on the worker for the local job `local` and the Workload `workload`: its
/// name, namespace, labels, annotations and spec, without the selector and per-instance
/// template labels (the worker makes its own), `managedBy` cleared so that the worker's Job
/// controller runs it, labelled with the Workload and our origin, and suspended: the worker's
/// Kueue starts it once that Workload is admitted (upstream's webhook on the worker suspends it
/// at creation; Tollgate has no webhook, so the copy is made suspended).
pub fn remote_job(local: &Job, workload: &str, origin: &str) -> Job {
    let mut metadata = ObjectMeta {
        name: local.metadata.name.clone(),
        namespace: local.metadata.namespace.clone(),
        labels: local.metadata.labels.clone(),
        annotations: local.metadata.annotations.clone(),
        ..ObjectMeta::default()
    };
    metadata
        .labels
        .get_or_insert_with(Default::default)
        .insert(label::MULTIKUEUE_ORIGIN.to_owned(), origin.to_owned());
    jobs::set_prebuilt_workload_name(&mut metadata, workload);
    let mut spec = local.spec.clone().unwrap_or_default();
    spec.selector = None;
    spec.managed_by = None;
    spec.suspend = Some(true);
    if let Some(labels) = spec
        .template
        .metadata
        .as_mut()
        .and_then(|m| m.labels.as_mut())
    {
        for key in INSTANCE_LABELS {
            labels.remove(key);
        }
    }
    Job {
        metadata,
        spec: Some(spec),
        status: None,
    }
}

/// The status the local job should get from the worker's (upstream's `determineStatusUpdate`);
/// `None` to defer: the local job is suspended while the worker's runs unfinished.
pub fn status_to_copy(local: &Job, remote: &Job) -> Option<JobStatus> {
    let copy = || {
        let mut status = remote.status.clone().unwrap_or_default();
        // kube-apiserver refuses to change or clear the startTime of a running job, and a job
        // run again on a worker (after a re-dispatch) starts later, or not yet.
        let started = local.status.as_ref().and_then(|s| s.start_time.clone());
        if !jobs::is_suspended(local) && started.is_some() {
            status.start_time = started;
        }
        status
    };
    if !jobs::is_suspended(local) || jobs::is_suspended(remote) || jobs::finished(remote).is_some()
    {
        return Some(copy());
    }
    None
}

impl JobAdapter for BatchJob {
    fn api_version(&self) -> &'static str {
        "batch/v1"
    }

    fn kind(&self) -> &'static str {
        "Job"
    }

    fn check_managed(&self, world: &World, owner: &Key) -> Managed {
        match world.jobs.get(owner) {
            None => Managed::Unknown,
            Some(job) => unmanaged_job_message(job).map_or(Managed::Yes, Managed::No),
        }
    }

    fn sync<'a>(
        &'a self,
        local: &'a Writer,
        remote: &'a Client,
        world: &'a World,
        job: SyncRequest<'a>,
    ) -> BoxFuture<'a, Result<Synced, Error>> {
        let SyncRequest {
            owner,
            workload,
            origin,
            create,
        } = job;
        Box::pin(async move {
            let Some(local_job) = world.jobs.get(owner) else {
                return Ok(Synced::LocalMissing);
            };
            let ns = local_job.metadata.namespace.as_deref().unwrap_or_default();
            let api: Api<Job> = Api::namespaced(remote.clone(), ns);
            let name = local_job.metadata.name.as_deref().unwrap_or_default();
            let Some(theirs) = api.get_opt(name).await? else {
                if !create {
                    return Ok(Synced::RemoteMissing);
                }
                let pp = PostParams {
                    field_manager: Some(FIELD_MANAGER.to_owned()),
                    ..PostParams::default()
                };
                return match api
                    .create(&pp, &remote_job(local_job, workload, origin))
                    .await
                {
                    Ok(_) => Ok(Synced::Created),
                    Err(kube::Error::Api(s)) if s.code == 409 => Ok(Synced::Stale),
                    Err(e) => Err(e.into()),
                };
            };
            if !is_ours(&theirs.metadata, origin) {
                return Ok(Synced::NotOurs);
            }
            let Some(status) = status_to_copy(local_job, &theirs) else {
                return Ok(Synced::Deferred);
            };
            if local_job.status.clone().unwrap_or_default() == status {
                return Ok(Synced::UpToDate);
            }
            let mut next = local_job.clone();
            next.status = Some(status);
            Ok(match local.replace_status(&next).await? {
                Written::Ok(_) => Synced::StatusCopied,
                Written::Stale => Synced::Stale,
            })
        })
    }

    fn delete_remote<'a>(
        &'a self,
        remote: &'a Client,
        owner: &'a Key,
        origin: &'a str,
    ) -> BoxFuture<'a, Result<Deleted, Error>> {
        Box::pin(async move {
            let (ns, name) = owner.split_once('/').unwrap_or(("", owner));
            let api: Api<Job> = Api::namespaced(remote.clone(), ns);
            let Some(job) = api.get_opt(name).await? else {
                return Ok(Deleted::Absent);
            };
            if !is_ours(&job.metadata, origin) {
                tracing::debug!(job = %owner, "a worker's job of that name is not ours: kept");
                return Ok(Deleted::NotOurs);
            }
            // The very object looked at: a same-named job created meanwhile is not touched.
            let dp = DeleteParams {
                preconditions: Some(Preconditions {
                    uid: job.metadata.uid.clone(),
                    resource_version: None,
                }),
                ..DeleteParams::background()
            };
            match api.delete(name, &dp).await {
                Ok(_) => Ok(Deleted::Deleted),
                Err(kube::Error::Api(s)) if s.code == 404 => Ok(Deleted::Absent),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(Deleted::Changed),
                Err(e) => Err(e.into()),
            }
        })
    }
}

#[cfg(test)]
#[path = "adapter_tests.rs"]
mod tests;
