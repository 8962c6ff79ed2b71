//! The batch/v1 Job pass: each managed Job gets a Workload, runs only while it is admitted, and
//! finishes it when it completes. A Job naming a prebuilt Workload (MultiKueue's job on a
//! worker) adopts that one instead of creating its own, and waits suspended while it is missing.
//! The decisions are in [`crate::jobs`].

use std::collections::{BTreeMap, BTreeSet};

use api::constants::{finalizer, workload_condition as cond, workload_reason as reason};
use api::kueue::{PodSet, Workload, WorkloadSpec, WorkloadStatus};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;

use super::{Reconciler, kept_to_its_object};
use crate::error::Error;
use crate::jobs::{self, JOB_UID_LABEL};
use crate::state::{Key, World, key_of};
use crate::workload::{self, lifecycle};
use crate::writer::Written;

/// The event message of a job stopped because its prebuilt Workload is missing (upstream's).
const MISSING_WORKLOAD: &str = "missing workload";

/// The job pass's state.
#[derive(Default)]
pub(super) struct JobsPass {
    /// Jobs to look at again.
    pub dirty: BTreeSet<Key>,
    /// The workload of each job, by the job's uid.
    pub workload_of: BTreeMap<String, Key>,
    /// Jobs whose prebuilt Workload is missing or controlled by another object: its key and the
    /// resourceVersion it had when the job last looked (none while missing). They are looked at
    /// again once it changes and can be adopted: the Workload does not name them yet, so no
    /// other change would wake them (upstream retries such a job with backoff).
    awaiting: BTreeMap<Key, (Key, Option<String>)>,
}

impl JobsPass {
    /// `seen`: the Workload as the job last saw it, if it exists.
    fn await_workload(&mut self, job: &Key, wl: Key, seen: Option<&Workload>) {
        let version = seen.and_then(|w| w.metadata.resource_version.clone());
        self.awaiting.insert(job.clone(), (wl, version));
    }

    fn forget(&mut self, job: &Key) {
        self.awaiting.remove(job);
    }

    /// Marks the awaiting jobs whose prebuilt Workload changed and may now be adopted.
    fn wake_awaiting(&mut self, world: &World) {
        for (job_key, (wl_key, seen)) in &self.awaiting {
            let Some(wl) = world.workloads.get(wl_key) else {
                continue;
            };
            let changed = wl.metadata.resource_version != *seen;
            if changed
                && world
                    .jobs
                    .get(job_key)
                    .is_some_and(|job| jobs::adoptable_by(wl, job))
            {
                self.dirty.insert(job_key.clone());
            }
        }
    }
}

/// What a job's prebuilt Workload lookup found.
enum Prebuilt {
    /// The Workload, adopted and in sync with the job.
    Found(Box<Workload>),
    /// None to use: missing, controlled by another object, or just finished out of sync.
    Missing,
    /// The adoption lost a race; the job is looked at again with the newer Workload.
    Later,
}

impl Reconciler {
    pub(super) async fn jobs_pass(&mut self, world: &mut World) -> Result<bool, Error> {
        let mut progressed = false;
        self.jobs.wake_awaiting(world);
        for key in std::mem::take(&mut self.jobs.dirty) {
            let Some(job) = world.jobs.get(&key).cloned() else {
                self.jobs.forget(&key);
                continue;
            };
            if !jobs::is_managed(&job, self.options.config.manage_jobs_without_queue_name) {
                self.jobs.forget(&key);
                continue;
            }
            if job.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let wl = match jobs::prebuilt_workload_name(&job.metadata).map(str::to_owned) {
                Some(name) => match self.prebuilt_workload(world, &job, &name).await? {
                    (Prebuilt::Found(wl), wrote) => {
                        progressed |= wrote;
                        Some(*wl)
                    }
                    (Prebuilt::Missing, wrote) => {
                        progressed |= wrote;
                        progressed |= self.without_prebuilt_workload(world, &job).await?;
                        continue;
                    }
                    (Prebuilt::Later, wrote) => {
                        progressed |= wrote;
                        continue;
                    }
                },
                None => self
                    .jobs
                    .workload_of
                    .get(&job.uid().unwrap_or_default())
                    .and_then(|k| world.workloads.get(k))
                    .cloned(),
            };
            // A refusal no retry cures (a 422: the template of a job with pods) is this job's
            // alone.
            let reconciled = self.reconcile_job(world, job, wl).await;
            progressed |= kept_to_its_object(reconciled, "Job", &key)?.unwrap_or(false);
        }
        Ok(progressed)
    }

    /// Upstream's `ensureOneWorkload` for a job naming a prebuilt Workload: the Workload, once
    /// the job controls it and it still matches the job. One that no longer matches is finished
    /// `OutOfSync` (MultiKueue then dispatches again). Also whether anything was written.
    async fn prebuilt_workload(
        &mut self,
        world: &mut World,
        job: &Job,
        name: &str,
    ) -> Result<(Prebuilt, bool), Error> {
        let job_key = key_of(job);
        let wl_key = format!("{}/{name}", job.namespace().unwrap_or_default());
        let found = world.workloads.get(&wl_key);
        let Some(mut wl) = found.filter(|wl| jobs::adoptable_by(wl, job)).cloned() else {
            self.jobs.await_workload(&job_key, wl_key, found);
            return Ok((Prebuilt::Missing, false));
        };
        self.jobs.forget(&job_key);
        let mut wrote = false;
        let mut adopted = wl.clone();
        if jobs::adopt(&mut adopted, job) {
            match self.writer.replace(&adopted).await? {
                Written::Ok(new) => {
                    self.written_workload(world, new.clone());
                    wl = new;
                    wrote = true;
                }
                Written::Stale => {
                    self.jobs.await_workload(&job_key, wl_key, Some(&wl));
                    return Ok((Prebuilt::Later, false));
                }
            }
        }
        // A finished Workload has nothing left to protect; upstream would finish it again.
        if !workload::is_finished(&wl) && !jobs::in_sync(job, &wl, &self.flavor_specs(world)) {
            let finished = self
                .finish_workload(
                    world,
                    &wl,
                    jobs::OUT_OF_SYNC_REASON,
                    jobs::OUT_OF_SYNC_MESSAGE,
                )
                .await?;
            return Ok((Prebuilt::Missing, wrote || finished.is_some()));
        }
        Ok((Prebuilt::Found(Box::new(wl)), wrote))
    }

    /// Upstream's `handleJobWithNoWorkload` for a prebuilt Workload: the job is kept suspended
    /// and no Workload is created; it runs once its own arrives and is admitted.
    async fn without_prebuilt_workload(
        &mut self,
        world: &mut World,
        job: &Job,
    ) -> Result<bool, Error> {
        if jobs::finished(job).is_some() {
            return Ok(false);
        }
        self.stop(world, job, &[], MISSING_WORKLOAD).await
    }

    fn flavor_specs(&self, world: &World) -> BTreeMap<String, api::kueue::ResourceFlavorSpec> {
        world
            .flavors
            .iter()
            .map(|(k, f)| (k.clone(), f.spec.clone()))
            .collect()
    }

    async fn reconcile_job(
        &mut self,
        world: &mut World,
        job: Job,
        wl: Option<Workload>,
    ) -> Result<bool, Error> {
        let now = self.options.clock.now_time();
        // A finished workload: let it go.
        if let Some(wl) = wl.as_ref().filter(|wl| workload::is_finished(wl)) {
            return self.remove_finalizer(world, wl).await;
        }
        // A finished job finishes its workload.
        if let Some((why, message)) = jobs::finished(&job) {
            let Some(wl) = wl else { return Ok(false) };
            return self.finish(world, &job, &wl, why, &message).await;
        }
        let Some(wl) = wl else {
            return self.create_workload(world, job).await;
        };
        // An evicted workload: stop the job, then release the quota once nothing runs.
        if workload::is_evicted(&wl) {
            let message = wl
                .status
                .as_ref()
                .and_then(|s| workload::conditions::find(&s.conditions, cond::EVICTED))
                .map(|c| c.message.clone())
                .unwrap_or_default();
            let mut progressed = self.stop(world, &job, &wl.spec.pod_sets, &message).await?;
            let job = world.jobs.get(&key_of(&job)).cloned().unwrap_or(job);
            // Only a job stopped to the end gives its quota back (Kueue releases it only once
            // its stop succeeded): a stop whose write lost a race has not suspended the job, and
            // a job with no pods yet would otherwise run on, admitted again elsewhere.
            if workload::has_quota_reservation(&wl)
                && jobs::is_suspended(&job)
                && !jobs::is_active(&job)
            {
                let mut next = wl.clone();
                let status = next.status.get_or_insert_with(WorkloadStatus::default);
                let gen_ = wl.metadata.generation;
                if lifecycle::release_quota_after_eviction(status, gen_, &now, self.observability())
                    .is_some()
                    && let Written::Ok(new) = self.writer.replace_status(&next).await?
                {
                    self.written_workload(world, new);
                    progressed = true;
                }
            }
            return Ok(progressed);
        }
        if jobs::is_suspended(&job) {
            if workload::is_admitted(&wl) {
                return self.start(world, &job, &wl).await;
            }
            return Ok(false);
        }
        // A running job not admitted, or a stop cut short (Kueue's stopping mark still on the
        // job), finished whatever the workload's state now: a job starts again only from its
        // own template.
        if jobs::is_stopping(&job) || !workload::is_admitted(&wl) {
            return self
                .stop(
                    world,
                    &job,
                    &wl.spec.pod_sets,
                    "Not admitted by cluster queue",
                )
                .await;
        }
        Ok(false)
    }

    /// Kueue's webhook would have suspended the job at creation; Tollgate does it here, then
    /// creates the Workload.
    async fn create_workload(&mut self, world: &mut World, job: Job) -> Result<bool, Error> {
        let mut progressed = false;
        let mut suspended = job.clone();
        if jobs::suspend_on_creation(
            &mut suspended,
            self.options.config.manage_jobs_without_queue_name,
        ) {
            match self.writer.replace(&suspended).await? {
                Written::Ok(new) => {
                    self.written_job(world, new);
                    progressed = true;
                }
                Written::Stale => return Ok(false),
            }
        }
        let name = jobs::workload_name(&job.name_any(), &job.uid().unwrap_or_default());
        let wl = Workload {
            metadata: ObjectMeta {
                name: Some(name),
                namespace: job.namespace(),
                labels: Some(BTreeMap::from([(
                    JOB_UID_LABEL.to_owned(),
                    job.uid().unwrap_or_default(),
                )])),
                annotations: Some(jobs::provreq_annotations(&job)).filter(|a| !a.is_empty()),
                owner_references: Some(vec![OwnerReference {
                    api_version: "batch/v1".into(),
                    kind: "Job".into(),
                    name: job.name_any(),
                    uid: job.uid().unwrap_or_default(),
                    controller: Some(true),
                    block_owner_deletion: Some(true),
                }]),
                finalizers: Some(vec![finalizer::RESOURCE_IN_USE.to_owned()]),
                ..Default::default()
            },
            spec: WorkloadSpec {
                pod_sets: jobs::podsets_from_job(&job),
                queue_name: jobs::queue_name(&job).map(str::to_owned),
                priority: Some(0),
                active: Some(true),
                ..Default::default()
            },
            status: None,
        };
        if let Written::Ok(new) = self.writer.create(&wl).await? {
            self.writer
                .event(
                    &job,
                    false,
                    "CreatedWorkload",
                    &format!("Created Workload: {}", workload::key(&new)),
                )
                .await;
            self.written_workload(world, new);
            progressed = true;
        }
        Ok(progressed)
    }

    async fn start(&mut self, world: &mut World, job: &Job, wl: &Workload) -> Result<bool, Error> {
        let flavors = self.flavor_specs(world);
        let started = jobs::admitted_infos(wl, &flavors).and_then(|infos| {
            let mut next = job.clone();
            jobs::start_job(&mut next, &infos).map(|()| next)
        });
        match started {
            Ok(next) => {
                let Written::Ok(new) = self.writer.replace(&next).await? else {
                    return Ok(false);
                };
                let cq = wl
                    .status
                    .as_ref()
                    .and_then(|s| s.admission.as_ref())
                    .map(|a| a.cluster_queue.clone())
                    .unwrap_or_default();
                self.writer
                    .event(
                        &new,
                        false,
                        "Started",
                        &format!("Admitted by clusterQueue {cq}"),
                    )
                    .await;
                self.written_job(world, new);
                Ok(true)
            }
            Err(e) if e.is_permanent() => {
                // No point retrying: the updates can never be applied.
                self.finish(world, job, wl, reason::FAILED_TO_START, &e.to_string())
                    .await
            }
            Err(e) => {
                tracing::warn!(job = %crate::state::key_of(job), error = %e, "starting the job");
                Ok(false)
            }
        }
    }

    /// Suspends the job and puts its template back as in `pod_sets` (none: only suspends);
    /// `message` is the `Stopped` event's.
    async fn stop(
        &mut self,
        world: &mut World,
        job: &Job,
        pod_sets: &[PodSet],
        message: &str,
    ) -> Result<bool, Error> {
        let mut planned = job.clone();
        let outcome = jobs::stop_job(&mut planned, pod_sets);
        // In Kueue's order, three writes: kube-apiserver refuses to clear the start time of a
        // job that is not suspended, and to change its template while it has one.
        let mut current = job.clone();
        let mut progressed = false;
        // A stop cut short has made this write already (Kueue writes it again, and announces
        // the stop again, on every try while the job's pods go).
        if outcome.stopped_now && !jobs::is_stopping(job) {
            let mut suspended = job.clone();
            suspended.spec.get_or_insert_with(Default::default).suspend = Some(true);
            // As Kueue: the job counts as stopping, not suspended, until the template is put
            // back (the last write removes the mark). A stop cut short by a failed write is so
            // finished before the job is started again, instead of starting on the template of
            // its last admission (a node selector of the flavor it left conflicts with the new).
            suspended
                .metadata
                .annotations
                .get_or_insert_with(Default::default)
                .insert(jobs::STOPPING_ANNOTATION.to_owned(), "true".to_owned());
            let Written::Ok(new) = self.writer.replace(&suspended).await? else {
                return Ok(false);
            };
            self.writer.event(&new, false, "Stopped", message).await;
            self.written_job(world, new.clone());
            current = new;
            progressed = true;
        }
        // The status as the server has it now: a status copied from a worker (MultiKueue) may
        // have changed it since `job` was read. kube-apiserver lets the template change only
        // once the job has no start time and no active pods. A job handed to MultiKueue runs no
        // pods here: its pod counts are a worker's copy, cleared with the start time.
        let mut cleared = current.clone();
        if let Some(status) = cleared.status.as_mut() {
            status.start_time = None;
            if jobs::is_dispatched(&current) {
                status.active = None;
                status.ready = None;
            }
        }
        if cleared.status != current.status {
            let Written::Ok(new) = self.writer.replace_status(&cleared).await? else {
                return Ok(progressed);
            };
            self.written_job(world, new.clone());
            current = new;
            progressed = true;
        }
        let mut restored = current.clone();
        if jobs::stop_job(&mut restored, pod_sets).spec_changed {
            match self.writer.replace(&restored).await {
                Ok(Written::Ok(new)) => {
                    self.written_job(world, new);
                    progressed = true;
                }
                Ok(Written::Stale) => {}
                // Pods still active: the Job controller's status update brings the job back.
                Err(kube::Error::Api(status)) if status.code == 422 => {
                    tracing::info!(job = %crate::state::key_of(&current), reason = %status.message, "the template is put back once the job's pods are gone");
                }
                Err(e) => return Err(e.into()),
            }
        }
        Ok(progressed)
    }

    async fn finish(
        &mut self,
        world: &mut World,
        job: &Job,
        wl: &Workload,
        why: &str,
        message: &str,
    ) -> Result<bool, Error> {
        let Some(new) = self.finish_workload(world, wl, why, message).await? else {
            return Ok(false);
        };
        self.writer
            .event(
                job,
                false,
                "FinishedWorkload",
                &format!("Workload '{}' is declared finished", workload::key(&new)),
            )
            .await;
        Ok(true)
    }

    /// Sets `Finished=True` with `why` and `message`; the written Workload, unless it was stale.
    async fn finish_workload(
        &mut self,
        world: &mut World,
        wl: &Workload,
        why: &str,
        message: &str,
    ) -> Result<Option<Workload>, Error> {
        let now = self.options.clock.now_time();
        let mut next = wl.clone();
        let status = next.status.get_or_insert_with(WorkloadStatus::default);
        lifecycle::set(
            status,
            wl.metadata.generation,
            cond::FINISHED,
            true,
            why,
            message,
            &now,
        );
        let Written::Ok(new) = self.writer.replace_status(&next).await? else {
            return Ok(None);
        };
        self.written_workload(world, new.clone());
        Ok(Some(new))
    }

    pub(super) async fn remove_finalizer(
        &mut self,
        world: &mut World,
        wl: &Workload,
    ) -> Result<bool, Error> {
        if !wl
            .finalizers()
            .iter()
            .any(|f| f == finalizer::RESOURCE_IN_USE)
        {
            return Ok(false);
        }
        let mut next = wl.clone();
        next.metadata
            .finalizers
            .get_or_insert_with(Vec::new)
            .retain(|f| f != finalizer::RESOURCE_IN_USE);
        if let Written::Ok(new) = self.writer.replace(&next).await? {
            self.written_workload(world, new);
            return Ok(true);
        }
        Ok(false)
    }
}
