//! The batch/v1 Job integration, as pure functions: Workload names and podsets from a Job, the information
//! injected into an admitted job's pods, and starting, stopping and finishing a job.
//!
//! Jobs naming a prebuilt Workload (MultiKueue's jobs on a worker) use it instead ([`prebuilt_workload_name`]).
//!
//! The reconciler that reads and writes the objects lives elsewhere; these functions only compute. Behaviour,
//! names and error messages follow upstream Kueue (`pkg/controller/jobs/job`, `pkg/controller/jobframework`,
//! `pkg/podset`) because users and tools match on them.

mod job;
mod podset;
mod prebuilt;

#[cfg(test)]
mod prebuilt_tests;
#[cfg(test)]
mod tests;

pub(crate) use job::merge_into_template;
pub use job::{
    COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION, DEFAULT_POD_SET_NAME, FAILED_TO_START_REASON,
    MAX_WORKLOAD_NAME_LENGTH, MIN_PARALLELISM_ANNOTATION, STOPPING_ANNOTATION, StopOutcome,
    finished, is_active, is_dispatched, is_managed, is_stopping, is_suspended, pods_ready,
    podsets_from_job, provreq_annotations, queue_name, start_job, stop_job, suspend_on_creation,
    workload_name,
};
pub use podset::{
    CLUSTER_QUEUE_LABEL, LOCAL_QUEUE_LABEL, MULTIKUEUE_WORKER_WORKLOAD_POD_LABEL, PODSET_LABEL,
    PodSetInfo, PodSetInfoError, WORKLOAD_ANNOTATION, admitted_infos,
};
pub use prebuilt::{
    JOB_UID_LABEL, OUT_OF_SYNC_MESSAGE, OUT_OF_SYNC_REASON, PREBUILT_WORKLOAD_ANNOTATION, adopt,
    adoptable_by, controller_of, in_sync, prebuilt_workload_name, set_prebuilt_workload_name,
};
