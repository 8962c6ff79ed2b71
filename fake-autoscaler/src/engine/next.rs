//! A request's next status, built condition by condition, written only if it changed.

use std::collections::BTreeMap;

use api::autoscaling::{ProvisioningRequest, ProvisioningRequestStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::broken;
use crate::broken::Broken;

pub(super) struct Next {
    request: ProvisioningRequest,
    pub(super) status: ProvisioningRequestStatus,
    pub(super) details: BTreeMap<String, String>,
    time: Time,
    broken: Option<Broken>,
    /// The condition types set with the step's time.
    pub(super) stamped: Vec<String>,
}

impl Next {
    pub(super) fn new(request: &ProvisioningRequest, time: Time, broken: Option<Broken>) -> Self {
        let status = request.status.clone().unwrap_or_default();
        Next {
            request: request.clone(),
            details: status.provisioning_class_details.clone(),
            status,
            time,
            broken,
            stamped: vec![],
        }
    }

    /// Sets a condition as upstream does: replaced in place or appended, with the step's time as
    /// lastTransitionTime and the request's generation as observedGeneration.
    pub(super) fn set(&mut self, type_: &str, status: &str, why: &str, message: &str) {
        self.stamped.push(type_.to_string());
        self.set_at(type_, status, why, message, self.time.clone());
    }

    pub(super) fn set_at(&mut self, type_: &str, status: &str, why: &str, message: &str, at: Time) {
        let existing = self.status.conditions.iter().position(|c| c.type_ == type_);
        let old = existing.map(|i| &self.status.conditions[i]);
        let condition = Condition {
            type_: type_.to_string(),
            status: status.to_string(),
            reason: broken::written_reason(self.broken, why),
            message: message.to_string(),
            last_transition_time: broken::written_transition_time(self.broken, old, at),
            observed_generation: self.request.metadata.generation,
        };
        match existing {
            Some(i) => self.status.conditions[i] = condition,
            None => self.status.conditions.push(condition),
        }
    }

    /// The request to write, if anything changed.
    pub(super) fn finish(mut self) -> Option<ProvisioningRequest> {
        self.status.provisioning_class_details = self.details;
        let before = self.request.status.clone().unwrap_or_default();
        if before == self.status {
            return None;
        }
        self.request.status = Some(self.status);
        self.request.metadata.managed_fields = None;
        Some(self.request)
    }
}
