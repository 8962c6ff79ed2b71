//! The batch/v1 Job pass: each managed Job gets a Workload, runs only while it is admitted, and
//! finishes it when it completes. The decisions are in [`crate::jobs`].

use std::collections::{BTreeMap, BTreeSet};

use api::constants::{finalizer, workload_condition as cond, workload_reason as reason};
use api::kueue::{Workload, WorkloadSpec, WorkloadStatus};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::ResourceExt;

use super::Reconciler;
use crate::error::Error;
use crate::jobs;
use crate::state::{Key, World};
use crate::workload::{self, lifecycle};
use crate::writer::Written;

/// The label Kueue puts on a job's Workload with the job's uid.
pub const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";

/// The job pass's state.
#[derive(Default)]
pub(super) struct JobsPass {
    /// Jobs to look at again.
    pub dirty: BTreeSet<Key>,
    /// The workload of each job, by the job's uid.
    pub workload_of: BTreeMap<String, Key>,
}

impl Reconciler {
    pub(super) async fn jobs_pass(&mut self, world: &mut World) -> Result<bool, Error> {
        let mut progressed = false;
        for key in std::mem::take(&mut self.jobs.dirty) {
            let Some(job) = world.jobs.get(&key).cloned() else {
                continue;
            };
            if !jobs::is_managed(&job, self.options.config.manage_jobs_without_queue_name) {
                continue;
            }
            if job.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let wl = self
                .jobs
                .workload_of
                .get(&job.uid().unwrap_or_default())
                .and_then(|k| world.workloads.get(k))
                .cloned();
            progressed |= self.reconcile_job(world, job, wl).await?;
        }
        Ok(progressed)
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
            let mut progressed = self.stop(world, &job, &wl, "evicted").await?;
            let job = world
                .jobs
                .get(&crate::state::key_of(&job))
                .cloned()
                .unwrap_or(job);
            if workload::has_quota_reservation(&wl) && !jobs::is_active(&job) {
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
        if !workload::is_admitted(&wl) {
            return self.stop(world, &job, &wl, "not admitted").await;
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
        let flavors = world
            .flavors
            .iter()
            .map(|(k, f)| (k.clone(), f.spec.clone()))
            .collect();
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

    async fn stop(
        &mut self,
        world: &mut World,
        job: &Job,
        wl: &Workload,
        why: &str,
    ) -> Result<bool, Error> {
        let mut planned = job.clone();
        let outcome = jobs::stop_job(&mut planned, &wl.spec.pod_sets);
        // In Kueue's order, three writes: kube-apiserver refuses to clear the start time of a
        // job that is not suspended, and to change its template while it has one.
        let mut current = job.clone();
        let mut progressed = false;
        if outcome.stopped_now {
            let mut suspended = job.clone();
            suspended.spec.get_or_insert_with(Default::default).suspend = Some(true);
            let Written::Ok(new) = self.writer.replace(&suspended).await? else {
                return Ok(false);
            };
            let message = match why {
                "evicted" => wl
                    .status
                    .as_ref()
                    .and_then(|s| crate::workload::conditions::find(&s.conditions, cond::EVICTED))
                    .map(|c| c.message.clone())
                    .unwrap_or_default(),
                _ => "Not admitted by cluster queue".to_owned(),
            };
            self.writer.event(&new, false, "Stopped", &message).await;
            self.written_job(world, new.clone());
            current = new;
            progressed = true;
        }
        if outcome.status_changed {
            let mut cleared = current.clone();
            if let Some(status) = cleared.status.as_mut() {
                status.start_time = None;
            }
            let Written::Ok(new) = self.writer.replace_status(&cleared).await? else {
                return Ok(progressed);
            };
            self.written_job(world, new.clone());
            current = new;
            progressed = true;
        }
        let mut restored = current.clone();
        if jobs::stop_job(&mut restored, &wl.spec.pod_sets).spec_changed
            && let Written::Ok(new) = self.writer.replace(&restored).await?
        {
            self.written_job(world, new);
            progressed = true;
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
        self.written_workload(world, new);
        Ok(true)
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
