//! Every name the project shares with upstream Kueue and the Cluster Autoscaler: condition types, reasons,
//! labels, annotations, controller, class and dispatcher names, finalizers.
//!
//! They are spelled exactly as upstream spells them, because users and other tools match on them.

/// Condition types of a Workload (`status.conditions[].type`).
pub mod workload_condition {
    /// Quota is reserved in a ClusterQueue.
    pub const QUOTA_RESERVED: &str = "QuotaReserved";
    /// Quota is reserved and every admission check is Ready.
    pub const ADMITTED: &str = "Admitted";
    /// The workload was evicted and its quota released.
    pub const EVICTED: &str = "Evicted";
    /// False while the workload waits to be requeued after an eviction, True once requeued.
    pub const REQUEUED: &str = "Requeued";
    /// The workload is marked to be deactivated (`spec.active=false`).
    pub const DEACTIVATION_TARGET: &str = "DeactivationTarget";
    /// The workload ran to completion (or failed for good).
    pub const FINISHED: &str = "Finished";
    /// The workload's pods are ready (waitForPodsReady).
    pub const PODS_READY: &str = "PodsReady";
    /// A higher-priority workload was admitted by preempting this one.
    pub const PREEMPTED: &str = "Preempted";
}

/// Reasons of Workload conditions and events.
pub mod workload_reason {
    /// `Admitted=False`: no quota is reserved yet.
    pub const NO_RESERVATION: &str = "NoReservation";
    /// `Admitted=False`: quota is reserved but not every admission check is Ready.
    pub const UNSATISFIED_ADMISSION_CHECKS: &str = "UnsatisfiedAdmissionChecks";
    /// `Admitted=True`, `QuotaReserved=True`.
    pub const ADMITTED: &str = "Admitted";
    /// `QuotaReserved=True` after a successful reservation.
    pub const QUOTA_RESERVED: &str = "QuotaReserved";
    /// `QuotaReserved=False`: waiting for quota (the pending message tells why).
    pub const PENDING: &str = "Pending";
    /// Eviction because a higher-priority workload needs the quota.
    pub const PREEMPTED: &str = "Preempted";
    /// Eviction because an admission check went to Retry.
    pub const ADMISSION_CHECK: &str = "AdmissionCheck";
    /// Eviction because an admission check went to Rejected.
    pub const DEACTIVATED_DUE_TO_ADMISSION_CHECK: &str = "DeactivatedDueToAdmissionCheck";
    /// Eviction because `spec.active` became false.
    pub const INACTIVE_WORKLOAD: &str = "InactiveWorkload";
    /// Eviction because the pods did not become ready in time.
    pub const PODS_READY_TIMEOUT: &str = "PodsReadyTimeout";
    /// Eviction because the ClusterQueue was stopped.
    pub const CLUSTER_QUEUE_STOPPED: &str = "ClusterQueueStopped";
    /// Eviction because the LocalQueue was stopped.
    pub const LOCAL_QUEUE_STOPPED: &str = "LocalQueueStopped";
    /// `Requeued=True` once the requeue backoff has passed.
    pub const BACKOFF_FINISHED: &str = "BackoffFinished";
    /// `Finished=True` when the job succeeded.
    pub const SUCCEEDED: &str = "Succeeded";
    /// `Finished=True` when the job failed.
    pub const FAILED: &str = "Failed";
    /// Event: the workload was evicted because an admission check is in Retry.
    pub const EVICTED_DUE_TO_ADMISSION_CHECK_EVENT: &str = "EvictedDueToAdmissionCheck";
    /// QuotaReserved=False: no flavor matches the podsets.
    pub const NO_MATCHING_FLAVOR: &str = "NoMatchingFlavor";
    /// QuotaReserved=False: the queue lacks unused quota now.
    pub const WAITING_FOR_QUOTA: &str = "WaitingForQuota";
    /// QuotaReserved=False: the request exceeds what the queue could ever give.
    pub const EXCEEDS_MAX_QUOTA: &str = "ExceedsMaxQuota";
    /// QuotaReserved=False: a missing LocalQueue or ClusterQueue.
    pub const MISCONFIGURED: &str = "Misconfigured";
    /// QuotaReserved=False: a stopped or inactive queue.
    pub const SUSPENDED: &str = "Suspended";
    /// QuotaReserved=False: queued, not yet evaluated (also set when quota is released).
    pub const PENDING_EVALUATION: &str = "PendingEvaluation";
    /// QuotaReserved=False reason with the observability gate off.
    pub const INADMISSIBLE: &str = "Inadmissible";
    /// Eviction and Requeued reason of a deactivated workload.
    pub const DEACTIVATED: &str = "Deactivated";
    /// Requeued=True after reactivation.
    pub const REACTIVATED: &str = "Reactivated";
    /// Event reason of a quota reservation.
    pub const QUOTA_RESERVED_EVENT: &str = "QuotaReserved";
    /// Event reason of an admission.
    pub const ADMITTED_EVENT: &str = "Admitted";
    /// Finished reason when a job cannot be started with its podset updates.
    pub const FAILED_TO_START: &str = "FailedToStart";

    /// Warning event: an admission check is in Rejected.
    pub const ADMISSION_CHECK_REJECTED_EVENT: &str = "AdmissionCheckRejected";
}

/// Condition types and reasons of ClusterQueue, LocalQueue, AdmissionCheck and MultiKueueCluster.
pub mod queue_condition {
    /// `Active` condition of ClusterQueue, LocalQueue, AdmissionCheck and MultiKueueCluster.
    pub const ACTIVE: &str = "Active";
    /// ClusterQueue/LocalQueue `Active=True` reason.
    pub const REASON_READY: &str = "Ready";
    /// ClusterQueue `Active=False`: a referenced ResourceFlavor does not exist.
    pub const REASON_FLAVOR_NOT_FOUND: &str = "FlavorNotFound";
    /// ClusterQueue `Active=False`: a referenced AdmissionCheck does not exist.
    pub const REASON_ADMISSION_CHECK_NOT_FOUND: &str = "AdmissionCheckNotFound";
    /// ClusterQueue `Active=False`: a referenced AdmissionCheck is not active.
    pub const REASON_ADMISSION_CHECK_INACTIVE: &str = "AdmissionCheckInactive";
    /// ClusterQueue `Active=False`: `stopPolicy` is set.
    pub const REASON_STOPPED: &str = "Stopped";
    /// ClusterQueue `Active=False`: being deleted.
    pub const REASON_TERMINATING: &str = "Terminating";
    /// LocalQueue `Active=False`: its ClusterQueue does not exist.
    pub const REASON_CLUSTER_QUEUE_DOES_NOT_EXIST: &str = "ClusterQueueDoesNotExist";
    /// LocalQueue `Active=False`: its ClusterQueue is inactive.
    pub const REASON_CLUSTER_QUEUE_IS_INACTIVE: &str = "ClusterQueueIsInactive";
}

/// Reasons and messages of an AdmissionCheck's `Active` condition.
pub mod admission_check {
    /// `Active=True` reason.
    pub const REASON_ACTIVE: &str = "Active";
    /// `Active=True` message.
    pub const MESSAGE_ACTIVE: &str = "The admission check is active";
    /// ProvisioningRequest check: `Active=False` when the parameters reference is wrong.
    pub const REASON_BAD_PARAMETERS_REF: &str = "BadParametersRef";
    /// ProvisioningRequest check: message when `spec.parameters` is missing.
    pub const MESSAGE_MISSING_PARAMETERS_REFERENCE: &str = "missing parameters reference";
    /// MultiKueue check: parameters cannot be loaded.
    pub const REASON_BAD_CONFIG: &str = "BadConfig";
    /// MultiKueue check: no cluster is usable.
    pub const REASON_NO_USABLE_CLUSTERS: &str = "NoUsableClusters";
    /// MultiKueue check: some clusters are missing or inactive.
    pub const REASON_SOME_ACTIVE_CLUSTERS: &str = "SomeActiveClusters";
    /// Event: an admission check's state changed.
    pub const EVENT_ADMISSION_CHECK_UPDATED: &str = "AdmissionCheckUpdated";
}

/// The `state` of an admission check on a Workload (`status.admissionChecks[].state`).
pub mod check_state {
    /// Not decided yet.
    pub const PENDING: &str = "Pending";
    /// The check passed.
    pub const READY: &str = "Ready";
    /// Evict, release quota, requeue with backoff.
    pub const RETRY: &str = "Retry";
    /// Deactivate the workload.
    pub const REJECTED: &str = "Rejected";
}

/// ProvisioningRequest (autoscaling.x-k8s.io/v1) condition types.
pub mod provreq_condition {
    /// The request was picked up by a provisioning class.
    pub const ACCEPTED: &str = "Accepted";
    /// The capacity is available (True) or being looked for (False).
    pub const PROVISIONED: &str = "Provisioned";
    /// Provisioning failed for good.
    pub const FAILED: &str = "Failed";
    /// The capacity is no longer booked for the request.
    pub const BOOKING_EXPIRED: &str = "BookingExpired";
    /// The capacity was taken back (terminal).
    pub const CAPACITY_REVOKED: &str = "CapacityRevoked";
}

/// Reasons the upstream Cluster Autoscaler (and a few vendor classes) write on ProvisioningRequest conditions.
pub mod provreq_reason {
    /// `Accepted=True`.
    pub const ACCEPTED: &str = "Accepted";
    /// `Provisioned=True`: the pods fit in existing capacity.
    pub const CAPACITY_IS_FOUND: &str = "CapacityIsFound";
    /// `Provisioned=False` (or `Failed=True` with `noRetry`): no capacity.
    pub const CAPACITY_IS_NOT_FOUND: &str = "CapacityIsNotFound";
    /// `Provisioned=True`: a scale-up was requested.
    pub const CAPACITY_IS_PROVISIONED: &str = "CapacityIsProvisioned";
    /// The capacity check itself failed.
    pub const FAILED_TO_CHECK_CAPACITY: &str = "FailedToCheckCapacity";
    /// `Failed=True`: the pods could not be built (e.g. missing PodTemplate).
    pub const FAILED_TO_CREATE_PODS: &str = "FailedToCreatePods";
    /// Booking the capacity failed.
    pub const FAILED_TO_BOOK_CAPACITY: &str = "FailedToBookCapacity";
    /// `BookingExpired=True`: the booking time ran out.
    pub const CAPACITY_RESERVATION_TIME_EXPIRED: &str = "CapacityReservationTimeExpired";
    /// `BookingExpired=True`: every booked pod was scheduled.
    pub const CAPACITY_BOOKING_CONSUMED: &str = "CapacityBookingConsumed";
    /// `Failed=True`: not provisioned within 7 days.
    pub const EXPIRED: &str = "Expired";
    /// Vendor example (GKE): `Accepted=False` at pick-up.
    pub const NOT_ACCEPTED: &str = "NotAccepted";
    /// Vendor example (GKE): `Provisioned=False` at pick-up.
    pub const NOT_PROVISIONED: &str = "NotProvisioned";
    /// Vendor example (GKE): `Accepted=True`.
    pub const SUCCESSFULLY_QUEUED: &str = "SuccessfullyQueued";
    /// Vendor example (GKE): `Provisioned=True`.
    pub const PROVISIONED: &str = "Provisioned";
    /// Vendor example (GKE): `Failed=True` after `ValidUntilSeconds`.
    pub const WAIT_TIME_EXCEEDED: &str = "WaitTimeExceeded";
}

/// Provisioning class names.
pub mod provisioning_class {
    /// Upstream class: scheduling simulation only, never scales up.
    pub const CHECK_CAPACITY: &str = "check-capacity.autoscaling.x-k8s.io";
    /// Upstream class: all-or-nothing scale-up.
    pub const BEST_EFFORT_ATOMIC_SCALE_UP: &str =
        "best-effort-atomic-scale-up.autoscaling.x-k8s.io";
    /// Vendor example: GKE queued provisioning.
    pub const QUEUED_PROVISIONING_GKE: &str = "queued-provisioning.gke.io";
    /// Parameter of check-capacity: fail instead of retrying when capacity is not found.
    pub const PARAMETER_NO_RETRY: &str = "noRetry";
}

/// Labels.
pub mod label {
    /// The LocalQueue a job is submitted to.
    pub const QUEUE_NAME: &str = "kueue.x-k8s.io/queue-name";
    /// Objects created and owned by Kueue (ProvisioningRequests, their PodTemplates).
    pub const MANAGED: &str = "kueue.x-k8s.io/managed";
    /// Objects created by MultiKueue on a worker cluster: the manager's origin.
    pub const MULTIKUEUE_ORIGIN: &str = "kueue.x-k8s.io/multikueue-origin";
    /// A job created for an existing (prebuilt) Workload.
    pub const PREBUILT_WORKLOAD_NAME: &str = "kueue.x-k8s.io/prebuilt-workload-name";
    /// The priority class of a workload (WorkloadPriorityClass name).
    pub const PRIORITY_CLASS: &str = "kueue.x-k8s.io/priority-class";
}

/// Annotations.
pub mod annotation {
    /// Workload annotation raising (or lowering) its priority under the PriorityBoost gate.
    pub const PRIORITY_BOOST: &str = "kueue.x-k8s.io/priority-boost";
    /// Pod annotation naming the ProvisioningRequest whose capacity it consumes.
    pub const CONSUME_PROVISIONING_REQUEST: &str =
        "autoscaling.x-k8s.io/consume-provisioning-request";
    /// Pod annotation naming the provisioning class of that request.
    pub const PROVISIONING_CLASS_NAME: &str = "autoscaling.x-k8s.io/provisioning-class-name";
    /// Older form of [`CONSUME_PROVISIONING_REQUEST`], still honoured by the Cluster Autoscaler.
    pub const LEGACY_CONSUME_PROVISIONING_REQUEST: &str =
        "cluster-autoscaler.kubernetes.io/consume-provisioning-request";
    /// Older form of [`PROVISIONING_CLASS_NAME`], still honoured by the Cluster Autoscaler.
    pub const LEGACY_PROVISIONING_CLASS_NAME: &str =
        "cluster-autoscaler.kubernetes.io/provisioning-class-name";
    /// Job/Workload annotations with this prefix become ProvisioningRequest parameters (prefix stripped).
    pub const PROVREQ_PREFIX: &str = "provreq.kueue.x-k8s.io/";
    /// On remote objects: the UID of the manager's original object.
    pub const MULTIKUEUE_ORIGIN_UID: &str = "kueue.x-k8s.io/multikueue-origin-uid";
}

/// Admission check controller names (`AdmissionCheck.spec.controllerName`) and job `managedBy` values.
pub mod controller_name {
    /// The ProvisioningRequest admission check controller.
    pub const PROVISIONING_REQUEST: &str = "kueue.x-k8s.io/provisioning-request";
    /// The MultiKueue admission check controller; also the `spec.managedBy` value of MultiKueue jobs.
    pub const MULTIKUEUE: &str = "kueue.x-k8s.io/multikueue";
}

/// MultiKueue dispatcher names (Configuration `multiKueue.dispatcherName`).
pub mod dispatcher {
    /// Nominate every connected worker at once (the default).
    pub const ALL_AT_ONCE: &str = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once";
    /// Nominate a few more workers at a time.
    pub const INCREMENTAL: &str = "kueue.x-k8s.io/multikueue-dispatcher-incremental";
}

/// MultiKueue facts.
pub mod multikueue {
    /// Key of the kubeconfig in a MultiKueueCluster's Secret.
    pub const KUBECONFIG_SECRET_KEY: &str = "kubeconfig";
    /// Default origin label value (Configuration `multiKueue.origin`).
    pub const DEFAULT_ORIGIN: &str = "multikueue";
    /// MultiKueueCluster `Active=True` reason.
    pub const REASON_ACTIVE: &str = "Active";
    /// MultiKueueCluster `Active=True` message.
    pub const MESSAGE_CONNECTED: &str = "Connected";
    /// MultiKueueCluster `Active=False`: the kubeconfig cannot be loaded.
    pub const REASON_BAD_KUBECONFIG: &str = "BadKubeConfig";
    /// MultiKueueCluster `Active=False`: the kubeconfig uses a forbidden option.
    pub const REASON_INSECURE_KUBECONFIG: &str = "InsecureKubeConfig";
    /// MultiKueueCluster `Active=False`: the client cannot connect.
    pub const REASON_CLIENT_CONNECTION_FAILED: &str = "ClientConnectionFailed";
}

/// Finalizers.
pub mod finalizer {
    /// Kueue's finalizer on Workloads, ClusterQueues, ResourceFlavors and AdmissionChecks in use.
    pub const RESOURCE_IN_USE: &str = "kueue.x-k8s.io/resource-in-use";
    /// Kueue's finalizer on managed jobs and pods.
    pub const MANAGED: &str = "kueue.x-k8s.io/managed";
}

/// Event reasons of the ProvisioningRequest admission check controller.
pub mod provisioning_event {
    /// Normal: a ProvisioningRequest was created.
    pub const PROVISIONING_REQUEST_CREATED: &str = "ProvisioningRequestCreated";
    /// Warning: creating a ProvisioningRequest or PodTemplate failed.
    pub const FAILED_CREATE: &str = "FailedCreate";
    /// Normal: an admission check's state changed.
    pub const ADMISSION_CHECK_UPDATED: &str = "AdmissionCheckUpdated";
}

/// Group names and API versions.
pub mod group {
    /// Kueue's API group.
    pub const KUEUE: &str = "kueue.x-k8s.io";
    /// Kueue's served and storage version.
    pub const KUEUE_VERSION: &str = "v1beta2";
    /// The ProvisioningRequest API group.
    pub const AUTOSCALING: &str = "autoscaling.x-k8s.io";
    /// The ProvisioningRequest storage version.
    pub const AUTOSCALING_VERSION: &str = "v1";
    /// The Configuration's API group.
    pub const CONFIG: &str = "config.kueue.x-k8s.io";
}
