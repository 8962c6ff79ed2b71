//! The ProvisioningRequest admission check's controller, in Kueue's order for each workload:
//! a finished or evicted workload loses its requests; otherwise the check states follow the
//! current requests, requests no longer current are deleted, and missing ones are created
//! (PodTemplates first, so the autoscaler never sees a request whose templates are missing).
//! The decisions are in the sibling modules; this is the glue.

use std::collections::{BTreeMap, BTreeSet};

use api::autoscaling::ProvisioningRequest;
use api::constants::label;
use api::constants::{controller_name, provisioning_event as event, provreq_condition as cond};
use api::kueue::{
    AdmissionCheck, AdmissionCheckState, CheckState, ProvisioningRequestConfig,
    ProvisioningRequestConfigSpec, ResourceFlavorSpec, Workload, WorkloadStatus,
};
use futures::future::BoxFuture;
use k8s_openapi::api::core::v1::PodTemplate;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, OwnerReference};
use kube::api::Api;
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};

use super::{active, names, request, state};
use crate::admissionchecks::{AdmissionCheckController, Ctx};
use crate::error::Error;
use crate::options::Options;
use crate::state::{Key, World, key_of};
use crate::watch::{AnyEvent, Watch, take, watch};
use crate::workload::{self, checks};
use crate::writer::Written;
use support::mirror::Mirror;

/// How long a workload waits after an API error before its check is looked at again.
const RETRY_AFTER_ERROR: std::time::Duration = std::time::Duration::from_secs(10);

/// The ProvisioningRequest check's controller: its own objects, and what to look at again.
pub struct Controller {
    requests: Mirror<ProvisioningRequest>,
    configs: Mirror<ProvisioningRequestConfig>,
    /// Only the PodTemplates Kueue manages (label `kueue.x-k8s.io/managed: "true"`).
    templates: Mirror<PodTemplate>,
    /// Workloads whose checks need another look.
    dirty: BTreeSet<Key>,
    /// Provisioning AdmissionChecks whose `Active` condition needs another look.
    dirty_checks: BTreeSet<String>,
    /// Workloads evicted since the last pass: their requests go, even if they already hold
    /// quota again (CleanupProvisioningRequestsOnEviction).
    evicted: BTreeSet<Key>,
    cleanup_on_eviction: bool,
    /// When to run again for what failed with an API error (check status, evicted requests).
    retry_at: Option<jiff::Timestamp>,
}

impl Controller {
    pub fn new(options: &Options) -> Self {
        Controller {
            requests: Mirror::default(),
            configs: Mirror::default(),
            templates: Mirror::default(),
            dirty: BTreeSet::new(),
            dirty_checks: BTreeSet::new(),
            evicted: BTreeSet::new(),
            retry_at: None,
            cleanup_on_eviction: crate::config::gate(
                &options.config,
                "CleanupProvisioningRequestsOnEviction",
            ),
        }
    }

    /// Brings the provisioning checks of the workloads marked since the last pass up to date, and
    /// the `Active` condition of the provisioning AdmissionChecks.
    async fn pass(&mut self, ctx: &mut Ctx<'_>) -> Result<bool, Error> {
        let mut progressed = false;
        let now = ctx.options.clock.now();
        self.retry_at = self.retry_at.filter(|at| *at > now);
        // A refusal (a webhook, a quota, a server error) is logged and tried again later, as
        // controller-runtime requeues a failed reconcile; it never stops the controller.
        for name in std::mem::take(&mut self.dirty_checks) {
            match self.sync_check_activity(ctx, &name).await {
                Ok(p) => progressed |= p,
                Err(Error::Api(e)) => {
                    tracing::warn!(check = %name, error = %e, "AdmissionCheck status, retrying in 10s");
                    self.dirty_checks.insert(name);
                    self.retry_at = Some(retry_time(ctx));
                }
                Err(e) => return Err(e),
            }
        }
        for key in std::mem::take(&mut self.evicted) {
            let owned = match ctx.world.workloads.get(&key) {
                Some(wl) => self.owned_requests(wl),
                None => continue,
            };
            match self.delete_requests(ctx, &owned).await {
                Ok(p) => progressed |= p,
                // Kept until it succeeds: with quota back, nothing else would delete them.
                Err(Error::Api(e)) => {
                    tracing::warn!(workload = %key, error = %e, "deleting an evicted workload's requests, retrying in 10s");
                    self.evicted.insert(key);
                    self.retry_at = Some(retry_time(ctx));
                }
                Err(e) => return Err(e),
            }
        }
        let mut postponed = vec![];
        for key in std::mem::take(&mut self.dirty) {
            // Its old requests must go before its checks may follow them again.
            if self.evicted.contains(&key) {
                postponed.push(key);
                continue;
            }
            match self.sync_provisioning(ctx, &key).await {
                Ok(p) => progressed |= p,
                Err(Error::Api(e)) => {
                    tracing::warn!(workload = %key, error = %e, "provisioning check, retrying in 10s");
                    retry_later(ctx, &key);
                }
                Err(e) => return Err(e),
            }
        }
        self.dirty.extend(postponed);
        Ok(progressed)
    }

    async fn sync_check_activity(&mut self, ctx: &mut Ctx<'_>, name: &str) -> Result<bool, Error> {
        let Some(ac) = ctx.world.admission_checks.get(name).cloned() else {
            return Ok(false);
        };
        if ac.spec.controller_name != controller_name::PROVISIONING_REQUEST {
            return Ok(false);
        }
        let activity = active::activity(ac.spec.parameters.as_ref(), |config| {
            self.configs.get(config).is_some()
        });
        let condition = Condition {
            type_: "Active".into(),
            status: if activity.active { "True" } else { "False" }.into(),
            reason: activity.reason.into(),
            message: activity.message,
            last_transition_time: ctx.options.clock.now_time(),
            observed_generation: ac.metadata.generation,
        };
        let mut next = ac.clone();
        let conditions = &mut next.status.get_or_insert_with(Default::default).conditions;
        match conditions.iter_mut().find(|c| c.type_ == "Active") {
            Some(c)
                if c.status == condition.status
                    && c.reason == condition.reason
                    && c.message == condition.message =>
            {
                return Ok(false);
            }
            Some(c) => {
                // The transition time moves only when the status does.
                let since = (c.status == condition.status).then(|| c.last_transition_time.clone());
                *c = condition;
                if let Some(t) = since {
                    c.last_transition_time = t;
                }
            }
            None => conditions.push(condition),
        }
        if let Written::Ok(written) = ctx.writer.replace_status(&next).await? {
            ctx.written_admission_check(written);
        }
        Ok(true)
    }

    async fn sync_provisioning(&mut self, ctx: &mut Ctx<'_>, key: &Key) -> Result<bool, Error> {
        // Every workload change comes through here: decide on the stored one, and copy it only
        // when it carries admission checks or owns requests.
        let Some(stored) = ctx.world.workloads.get(key) else {
            return Ok(false);
        };
        let finished = workload::is_finished(stored);
        let evicted = workload::is_evicted(stored);
        if !workload::has_quota_reservation(stored) && !finished && !evicted {
            return Ok(false);
        }
        let owned = self.owned_requests(stored);
        let has_checks = stored
            .status
            .as_ref()
            .is_some_and(|s| !s.admission_checks.is_empty());
        let wl = stored.clone();
        if owned.is_empty() && !has_checks {
            // Nothing to provision for any more (its check went with its flavor): a template it
            // still owns is one whose hand-over to a now deleted request never happened.
            return self.delete_stray_templates(ctx, &wl).await;
        }
        // Requests outlive neither the workload's run nor, by default, its eviction.
        if finished || (evicted && self.cleanup_on_eviction) {
            let deleted = self.delete_requests(ctx, &owned).await?;
            return Ok(self.delete_stray_templates(ctx, &wl).await? || deleted);
        }
        if evicted {
            return Ok(false);
        }
        let configs = self.provisioning_configs(ctx.world, &wl);
        // The check was removed from the queue, deleted, or handed to another controller.
        if configs.is_empty() {
            let deleted = self.delete_requests(ctx, &owned).await?;
            return Ok(self.delete_stray_templates(ctx, &wl).await? || deleted);
        }
        // The request each check goes by: the latest attempt still matching its config.
        let mut current: BTreeMap<String, ProvisioningRequest> = BTreeMap::new();
        for (check, config) in &configs {
            let Some(config) = config else { continue };
            if !request::is_needed(&wl, config).unwrap_or(false) {
                continue;
            }
            let wl_name = wl.name_any();
            let latest = owned
                .iter()
                .filter(|r| request::synced_with_config(r, &wl, config))
                .filter_map(|r| Some((names::attempt_of(&r.name_any(), &wl_name, check)?, r)))
                .max_by_key(|(attempt, _)| *attempt);
            if let Some((_, r)) = latest {
                current.insert(check.clone(), r.clone());
            }
        }
        let Some(mut progressed) = self.sync_check_states(ctx, &wl, &configs, &current).await?
        else {
            // Someone wrote the workload first; its new version brings this pass back.
            return Ok(true);
        };
        let unused: Vec<ProvisioningRequest> = owned
            .into_iter()
            .filter(|r| !current.values().any(|c| c.name_any() == r.name_any()))
            .collect();
        progressed |= self.delete_requests(ctx, &unused).await?;
        // The states just written decide whether a request is (re)created.
        let wl = ctx.world.workloads.get(key).cloned().unwrap_or(wl);
        for (check, config) in &configs {
            let Some(config) = config else { continue };
            progressed |= self
                .sync_request(ctx, &wl, check, config, current.get(check))
                .await?;
        }
        Ok(progressed)
    }

    /// The provisioning checks of a workload, each with its config (`None`: the check is not
    /// active: no AdmissionCheck, a bad reference or a missing config). A listed check that the
    /// workload's ClusterQueue no longer requires for its current flavors is left out: the
    /// status's list catches up with a new quota reservation only in a later write, and a
    /// request made in between (for a flavor the workload just left) would be deleted again.
    fn provisioning_configs(
        &self,
        world: &World,
        wl: &Workload,
    ) -> BTreeMap<String, Option<ProvisioningRequestConfigSpec>> {
        let required = wl
            .status
            .as_ref()
            .and_then(|s| s.admission.as_ref())
            .and_then(|a| world.cluster_queues.get(&a.cluster_queue))
            .map(|cq| checks::required_for(wl, &cq.spec));
        let states = wl.status.iter().flat_map(|s| &s.admission_checks);
        states
            .filter(|s| required.as_ref().is_none_or(|r| r.contains(&s.name)))
            .filter_map(|s| {
                let ac = world.admission_checks.get(&s.name)?;
                if ac.spec.controller_name != controller_name::PROVISIONING_REQUEST {
                    return None;
                }
                let config = active::config_name(ac.spec.parameters.as_ref())
                    .ok()
                    .and_then(|name| self.configs.get(name))
                    .map(|c| c.spec.clone());
                Some((s.name.clone(), config))
            })
            .collect()
    }

    async fn sync_check_states(
        &mut self,
        ctx: &mut Ctx<'_>,
        wl: &Workload,
        configs: &BTreeMap<String, Option<ProvisioningRequestConfigSpec>>,
        current: &BTreeMap<String, ProvisioningRequest>,
    ) -> Result<Option<bool>, Error> {
        let now = ctx.options.clock.now_time();
        let mut next = wl.clone();
        let status = next.status.get_or_insert_with(WorkloadStatus::default);
        let mut messages = vec![];
        let mut changed = false;
        for check in status.admission_checks.iter_mut() {
            let Some(config) = configs.get(&check.name) else {
                continue;
            };
            let before = check.state;
            let needed = match config {
                Some(c) => match request::is_needed(wl, c) {
                    Ok(needed) => needed,
                    Err(e) => {
                        tracing::warn!(workload = %key_of(wl), error = %e, "provisioning check");
                        continue;
                    }
                },
                None => true,
            };
            let req = current.get(&check.name);
            let facts = state::Facts {
                retry: config.as_ref().map(|c| c.effective_retry_strategy()),
                needed,
                request: req.map(|r| state::RequestFacts {
                    attempt: names::attempt_of(&r.name_any(), &wl.name_any(), &check.name)
                        .unwrap_or(1),
                    conditions: r.status.as_ref().map_or(&[][..], |s| &s.conditions[..]),
                    pod_set_updates: config
                        .as_ref()
                        .map(|c| request::pod_set_updates(wl, r, c))
                        .unwrap_or_default(),
                }),
                workload_admitted: workload::is_admitted(wl),
                workload_active: workload::is_active(wl),
                workload_finished: workload::is_finished(wl),
            };
            if !state::sync(check, &facts) {
                continue;
            }
            changed = true;
            if check.state != before {
                // Kueue's provisioning controller keeps the old time, so a Retry's requeueAt
                // would count from when the check last became Pending; the backoff is meant to
                // count from the failure.
                check.last_transition_time = now.clone();
                let mut message = format!(
                    "Admission check {} updated state from {before} to {}",
                    check.name, check.state
                );
                if !check.message.is_empty() {
                    message.push_str(&format!(" with message: {}", check.message));
                }
                messages.push(message);
            }
        }
        if !changed {
            return Ok(Some(false));
        }
        match ctx.writer.replace_status(&next).await? {
            Written::Ok(written) => {
                for message in &messages {
                    ctx.writer
                        .event(&written, false, event::ADMISSION_CHECK_UPDATED, message)
                        .await;
                }
                ctx.written_workload(written);
                Ok(Some(true))
            }
            Written::Stale => Ok(None),
        }
    }

    /// Creates the check's request when it has none, or the next attempt when the current one
    /// failed (or its booking expired before admission) and the check is Pending again; and hands
    /// the request's PodTemplates over to it.
    async fn sync_request(
        &mut self,
        ctx: &mut Ctx<'_>,
        wl: &Workload,
        check: &str,
        config: &ProvisioningRequestConfigSpec,
        current: Option<&ProvisioningRequest>,
    ) -> Result<bool, Error> {
        if !request::is_needed(wl, config).unwrap_or(false) {
            return Ok(false);
        }
        let Some(state) = check_state(wl, check) else {
            return Ok(false);
        };
        // Not recreated once Ready, even if someone deletes it; but its templates are still
        // handed over, should a failed write have kept that from happening before it got Ready
        // (else deleting the request would leave them behind).
        if state.state == CheckState::Ready {
            return match current {
                Some(req) => self.hand_over_templates(ctx, req).await,
                None => Ok(false),
            };
        }
        let mut attempt = u32::try_from(state.retry_count.unwrap_or(0)).unwrap_or(0) + 1;
        let create = match current {
            None => true,
            Some(req) => {
                let over = has_condition(req, cond::FAILED)
                    || (has_condition(req, cond::BOOKING_EXPIRED) && !workload::is_admitted(wl));
                if over && state.state == CheckState::Pending {
                    attempt =
                        names::attempt_of(&req.name_any(), &wl.name_any(), check).unwrap_or(1) + 1;
                    true
                } else {
                    false
                }
            }
        };
        let mut progressed = false;
        let req = if create {
            progressed = true;
            match self.create_request(ctx, wl, check, attempt, config).await? {
                Some(req) => req,
                None => return Ok(true),
            }
        } else {
            match current {
                Some(r) => r.clone(),
                None => return Ok(false),
            }
        };
        progressed |= self.hand_over_templates(ctx, &req).await?;
        Ok(progressed)
    }

    /// PodTemplates (those not there yet), then the request. A refusal is reported as Kueue does:
    /// a Warning `FailedCreate` Event and the check's message.
    async fn create_request(
        &mut self,
        ctx: &mut Ctx<'_>,
        wl: &Workload,
        check: &str,
        attempt: u32,
        config: &ProvisioningRequestConfigSpec,
    ) -> Result<Option<ProvisioningRequest>, Error> {
        let merged = match request::merged_pod_sets(wl, config) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(workload = %key_of(wl), error = %e, "provisioning request");
                return Ok(None);
            }
        };
        // With its watch down, the controller may still hold a workload that is gone: a request
        // made for it would go to the garbage collector at once, and that deletion would bring
        // this pass back to make it again, for as long as the watch stays down.
        if !still_there(ctx, wl).await? {
            return Ok(None);
        }
        let name = names::request_name(&wl.name_any(), check, attempt);
        let flavors: BTreeMap<String, ResourceFlavorSpec> = ctx
            .world
            .flavors
            .values()
            .map(|f| (f.name_any(), f.spec.clone()))
            .collect();
        for m in &merged {
            let pt_name = names::pod_template_name(&name, &m.pod_set.name);
            let pt_key = format!("{}/{pt_name}", wl.namespace().unwrap_or_default());
            if let Some(existing) = self.templates.get(&pt_key).cloned() {
                // Made by an earlier pass for this attempt, whose request was not created.
                if controlled_by(&existing, wl.uid().as_deref())
                    && existing.metadata.deletion_timestamp.is_none()
                {
                    continue;
                }
                // A deleted request's, under this attempt's name (a preempted workload's next
                // request may reuse it): its deletion failed, or its answer or its watch event
                // was lost. The new request must not point at a template about to go.
                if existing.metadata.deletion_timestamp.is_some() {
                    retry_later(ctx, &key_of(wl));
                    return Ok(None);
                }
                ctx.writer.delete(&existing).await?;
                self.templates.delete(&existing);
            }
            let pt = match request::pod_template(wl, &pt_name, m, &flavors) {
                Ok(pt) => pt,
                Err(e) => {
                    let message = format!("Error creating PodTemplate {pt_name:?}: {e}");
                    self.failed_create(ctx, wl, check, &message).await?;
                    return Ok(None);
                }
            };
            match ctx.writer.create(&pt).await {
                Ok(Written::Ok(created)) => {
                    self.templates.apply(created);
                }
                Ok(Written::Stale) => {}
                Err(kube::Error::Api(status)) => {
                    let message =
                        format!("Error creating PodTemplate {pt_name:?}: {}", status.message);
                    self.failed_create(ctx, wl, check, &message).await?;
                    return Ok(None);
                }
                Err(e) => return Err(e.into()),
            }
        }
        let req = request::provisioning_request(wl, check, attempt, config, &merged);
        match ctx.writer.create(&req).await {
            Ok(Written::Ok(created)) => {
                ctx.writer
                    .event(
                        wl,
                        false,
                        event::PROVISIONING_REQUEST_CREATED,
                        &format!("Created ProvisioningRequest: {name:?}"),
                    )
                    .await;
                self.requests.apply(created.clone());
                // The watch will bring nothing newer, so look again now: a fresh request (no
                // conditions yet) clears whatever the check said before.
                self.dirty.insert(key_of(wl));
                Ok(Some(created))
            }
            // Created by an earlier pass whose response the watch has not brought yet.
            Ok(Written::Stale) => Ok(None),
            Err(kube::Error::Api(status)) => {
                let message = format!(
                    "Error creating ProvisioningRequest {name:?}: {}",
                    status.message
                );
                self.failed_create(ctx, wl, check, &message).await?;
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    async fn failed_create(
        &mut self,
        ctx: &mut Ctx<'_>,
        wl: &Workload,
        check: &str,
        message: &str,
    ) -> Result<(), Error> {
        retry_later(ctx, &key_of(wl));
        let note = crate::workload::conditions::truncate(message, 1024);
        ctx.writer
            .event(wl, true, event::FAILED_CREATE, &note)
            .await;
        let mut next = wl.clone();
        let Some(state) = next
            .status
            .as_mut()
            .and_then(|s| s.admission_checks.iter_mut().find(|c| c.name == check))
        else {
            return Ok(());
        };
        let message = crate::workload::conditions::truncate(message, 32768);
        if state.message == message {
            return Ok(());
        }
        state.message = message;
        state.last_transition_time = ctx.options.clock.now_time();
        if let Written::Ok(written) = ctx.writer.replace_status(&next).await? {
            ctx.written_workload(written);
        }
        Ok(())
    }

    /// The request's PodTemplates become the request's (they were the workload's, so that a
    /// request that failed to be created leaves none behind).
    async fn hand_over_templates(
        &mut self,
        ctx: &mut Ctx<'_>,
        req: &ProvisioningRequest,
    ) -> Result<bool, Error> {
        let mut progressed = false;
        let ns = req.namespace().unwrap_or_default();
        for ps in &req.spec.pod_sets {
            let key = format!("{ns}/{}", ps.pod_template_ref.name);
            let Some(pt) = self.templates.get(&key).cloned() else {
                continue;
            };
            let Some(owner) = controller_ref(req) else {
                continue;
            };
            let refs = pt.metadata.owner_references.clone().unwrap_or_default();
            if refs
                .iter()
                .any(|r| r.controller == Some(true) && r.uid == owner.uid)
            {
                continue;
            }
            let mut next: PodTemplate = pt.clone();
            // The request becomes the one controller (the workload's, or a replaced request's,
            // reference goes: an object may have only one).
            let mut refs: Vec<OwnerReference> = refs
                .into_iter()
                .filter(|r| r.controller != Some(true))
                .collect();
            refs.push(owner);
            next.metadata.owner_references = Some(refs);
            if let Written::Ok(written) = ctx.writer.replace(&next).await? {
                self.templates.apply(written);
            }
            progressed = true;
        }
        Ok(progressed)
    }

    async fn delete_requests(
        &mut self,
        ctx: &mut Ctx<'_>,
        requests: &[ProvisioningRequest],
    ) -> Result<bool, Error> {
        for req in requests {
            self.delete_request(ctx, req).await?;
        }
        Ok(!requests.is_empty())
    }

    /// Deletes a request and its PodTemplates. The garbage collector would delete the templates
    /// too, but later: a request recreated under the same attempt name (after a config change)
    /// would find its templates' names taken by ones about to go, and point at nothing.
    async fn delete_request(
        &mut self,
        ctx: &mut Ctx<'_>,
        req: &ProvisioningRequest,
    ) -> Result<(), Error> {
        ctx.writer.delete(req).await?;
        self.requests.delete(req);
        let ns = req.namespace().unwrap_or_default();
        // Its templates: handed over to it, or still the workload's when a failed request kept
        // the hand-over from happening.
        let owners = [req.uid(), workload_owner(req).map(|o| o.uid.clone())];
        for ps in &req.spec.pod_sets {
            let key = format!("{ns}/{}", ps.pod_template_ref.name);
            let Some(pt) = self.templates.get(&key).cloned() else {
                continue;
            };
            if owners.iter().any(|uid| controlled_by(&pt, uid.as_deref())) {
                ctx.writer.delete(&pt).await?;
                self.templates.delete(&pt);
            }
        }
        Ok(())
    }

    /// Deletes the PodTemplates still the workload's own: made for a request whose creation then
    /// failed, and never handed over. Once the workload is done with its requests they belong to
    /// nothing, and only the workload's deletion would collect them.
    async fn delete_stray_templates(
        &mut self,
        ctx: &mut Ctx<'_>,
        wl: &Workload,
    ) -> Result<bool, Error> {
        let Some(uid) = wl.uid() else {
            return Ok(false);
        };
        let ns = wl.namespace();
        let stray: Vec<PodTemplate> = self
            .templates
            .values()
            .filter(|pt| pt.namespace() == ns)
            .filter(|pt| controlled_by(*pt, Some(&uid)))
            .cloned()
            .collect();
        for pt in &stray {
            ctx.writer.delete(pt).await?;
            self.templates.delete(pt);
        }
        Ok(!stray.is_empty())
    }

    fn config_changed(&mut self, world: &World, config: &ProvisioningRequestConfig) {
        let name = config.name_any();
        let checks: Vec<String> = world
            .admission_checks
            .values()
            .filter(|ac| active::config_name(ac.spec.parameters.as_ref()) == Ok(name.as_str()))
            .map(|ac| ac.name_any())
            .collect();
        for check in checks {
            self.check_changed(world, &check);
        }
    }

    fn request_changed(&mut self, req: &ProvisioningRequest) {
        if let Some(owner) = workload_owner(req) {
            let ns = req.namespace().unwrap_or_default();
            self.dirty.insert(format!("{ns}/{}", owner.name));
        }
    }

    /// A provisioning AdmissionCheck (or its config) changed: its activity, and every workload
    /// that carries it.
    fn check_changed(&mut self, world: &World, check: &str) {
        self.dirty_checks.insert(check.to_owned());
        for (key, wl) in world.workloads.iter() {
            let carries = wl
                .status
                .iter()
                .flat_map(|s| &s.admission_checks)
                .any(|s| s.name == check);
            if carries {
                self.dirty.insert(key.clone());
            }
        }
    }

    /// The requests a workload owns, as Kueue's index finds them.
    fn owned_requests(&self, wl: &Workload) -> Vec<ProvisioningRequest> {
        let ns = wl.namespace();
        let name = wl.name_any();
        self.requests
            .values()
            .filter(|r| r.namespace() == ns && workload_owner(r).is_some_and(|o| o.name == name))
            .cloned()
            .collect()
    }
}

impl AdmissionCheckController for Controller {
    fn watches(&self, client: &Client) -> Vec<Watch> {
        vec![
            watch::<ProvisioningRequestConfig>(client, watcher::Config::default()),
            watch::<ProvisioningRequest>(client, watcher::Config::default()),
            // Only the PodTemplates Kueue creates for ProvisioningRequests.
            watch::<PodTemplate>(
                client,
                watcher::Config::default().labels(&format!("{}=true", label::MANAGED)),
            ),
        ]
    }

    fn apply(&mut self, world: &World, event: AnyEvent) {
        let event = match take(&mut self.configs, event) {
            Ok(changes) => {
                for (old, new) in changes {
                    if let Some(config) = new.or(old) {
                        self.config_changed(world, &config);
                    }
                }
                return;
            }
            Err(event) => event,
        };
        let event = match take(&mut self.requests, event) {
            Ok(changes) => {
                for (old, new) in changes {
                    if let Some(req) = new.or(old) {
                        self.request_changed(&req);
                    }
                }
                return;
            }
            Err(event) => event,
        };
        // Templates matter only through their request, which the pass looks at anyway.
        if take(&mut self.templates, event).is_err() {
            tracing::error!("the provisioning check got an event of a kind it does not watch");
        }
    }

    fn workload_changed(&mut self, _world: &World, old: Option<&Workload>, new: Option<&Workload>) {
        let Some(any) = new.or(old) else { return };
        let key = key_of(any);
        let was_evicted = old.is_some_and(workload::is_evicted);
        if self.cleanup_on_eviction && new.is_some_and(workload::is_evicted) && !was_evicted {
            self.evicted.insert(key.clone());
        }
        self.dirty.insert(key);
    }

    fn workload_due(&mut self, key: &Key) {
        self.dirty.insert(key.clone());
    }

    fn admission_check_changed(
        &mut self,
        world: &World,
        old: Option<&AdmissionCheck>,
        new: Option<&AdmissionCheck>,
    ) {
        // Old or new: a check that stops being a provisioning check leaves requests to delete.
        if old.is_some_and(is_provisioning) || new.is_some_and(is_provisioning) {
            let Some(ac) = new.or(old) else { return };
            self.check_changed(world, &ac.name_any());
        }
    }

    fn run<'a, 'w: 'a>(&'a mut self, ctx: &'a mut Ctx<'w>) -> BoxFuture<'a, Result<bool, Error>> {
        Box::pin(self.pass(ctx))
    }

    fn next_wake(&self) -> Option<jiff::Timestamp> {
        self.retry_at
    }
}

/// Whether an AdmissionCheck is handled here.
fn is_provisioning(ac: &AdmissionCheck) -> bool {
    ac.spec.controller_name == controller_name::PROVISIONING_REQUEST
}

fn check_state<'a>(wl: &'a Workload, check: &str) -> Option<&'a AdmissionCheckState> {
    wl.status
        .as_ref()?
        .admission_checks
        .iter()
        .find(|c| c.name == check)
}

fn has_condition(req: &ProvisioningRequest, kind: &str) -> bool {
    req.status
        .iter()
        .flat_map(|s| &s.conditions)
        .any(|c| c.type_ == kind && c.status == "True")
}

/// Whether `uid` is the object's controller.
fn controlled_by(obj: &impl Resource, uid: Option<&str>) -> bool {
    obj.owner_references()
        .iter()
        .any(|o| o.controller == Some(true) && Some(o.uid.as_str()) == uid)
}

/// The workload a request belongs to (its controller owner), as Kueue's index finds it.
fn workload_owner(req: &ProvisioningRequest) -> Option<&OwnerReference> {
    req.owner_references()
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == Workload::kind(&()))
}

/// Whether the workload is still on the server, not being deleted: asked of the server, not
/// of the watch.
async fn still_there(ctx: &Ctx<'_>, wl: &Workload) -> Result<bool, Error> {
    let api: Api<Workload> = Api::namespaced(
        ctx.writer.client().clone(),
        &wl.namespace().unwrap_or_default(),
    );
    let live = api.get_opt(&wl.name_any()).await?;
    Ok(live
        .is_some_and(|live| live.uid() == wl.uid() && live.metadata.deletion_timestamp.is_none()))
}

/// When something that failed with an API error is tried again.
fn retry_time(ctx: &Ctx<'_>) -> jiff::Timestamp {
    let now = ctx.options.clock.now();
    now.checked_add(RETRY_AFTER_ERROR).unwrap_or(now)
}

/// Looks at a workload's checks again after an API error.
fn retry_later(ctx: &mut Ctx<'_>, key: &Key) {
    let at = retry_time(ctx);
    ctx.wake_at(key, at);
}

/// The request as controller owner of its PodTemplates.
fn controller_ref(req: &ProvisioningRequest) -> Option<OwnerReference> {
    Some(OwnerReference {
        api_version: ProvisioningRequest::api_version(&()).into_owned(),
        kind: ProvisioningRequest::kind(&()).into_owned(),
        name: req.name_any(),
        uid: req.uid()?,
        controller: Some(true),
        block_owner_deletion: Some(true),
    })
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
