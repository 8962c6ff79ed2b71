//! Condition messages, as upstream's Cluster Autoscaler writes them (and, for the vendor-like
//! class, in the style of GKE's queued provisioning).

/// `Accepted=True`, reason `Accepted`.
pub const ACCEPTED: &str = "ProvisioningRequest is accepted by ClusterAutoscaler";
/// `Provisioned=True`, reasons `CapacityIsFound` and (the same text upstream) `CapacityIsProvisioned`.
pub const CAPACITY_IS_FOUND: &str = "Capacity is found in the cluster";
/// `Provisioned=False`, reason `CapacityIsNotFound`.
pub const CAPACITY_NOT_FOUND_RETRY: &str = "Capacity is not found, CA will try to find it later.";
/// check-capacity with `noRetry: "true"`: `Failed=True`, reason `CapacityIsNotFound`.
pub const CAPACITY_NOT_FOUND_NO_RETRY: &str = "CA could not find requested capacity";
/// `BookingExpired=True`, reason `CapacityReservationTimeExpired`.
pub const BOOKING_TIME_EXPIRED: &str = "Capacity reservation time is expired";
/// `BookingExpired=True`, reason `CapacityBookingConsumed`.
pub const BOOKING_CONSUMED: &str = "Capacity booking consumed: all pods scheduled";
/// `Failed=True`, reason `Expired`.
pub const EXPIRED: &str = "ProvisioningRequest is expired";

/// `Failed=True`, reason `FailedToCreatePods`: some referenced PodTemplates do not exist.
pub fn missing_templates(referenced: usize, missing: &[String]) -> String {
    format!(
        "missing pod templates, {referenced} pod templates were referenced, {} templates were missing: {}",
        missing.len(),
        missing.join(",")
    )
}

/// takes-back-provisioned: `Provisioned=False`, reason `CapacityIsNotFound`, while the booking holds.
pub const TAKEN_BACK: &str = "Capacity is no longer available, CA will try to find it again.";

/// waits-without-templates: the reason of `Provisioned=False` while PodTemplates are missing.
pub const WAITING_FOR_TEMPLATES_REASON: &str = "WaitingForPodTemplates";

/// waits-without-templates: `Provisioned=False` while PodTemplates are missing.
pub fn waiting_for_templates(missing: &str) -> String {
    format!("Waiting for the request's pod templates: {missing}")
}

/// `Failed=True`, reason `FailedToBookCapacity`: the pods of a provisioned request cannot be built.
pub fn failed_to_book(error: &str) -> String {
    format!("Couldn't create pods, err: {error}")
}

/// Vendor-like class: `Accepted=False`, reason `NotAccepted`, at pick-up.
pub const VENDOR_NOT_ACCEPTED: &str = "The request has not been queued yet";
/// Vendor-like class: `Provisioned=False`, reason `NotProvisioned`.
pub const VENDOR_NOT_PROVISIONED: &str = "Waiting for resources. Currently there are not enough resources available to fulfill the request.";
/// Vendor-like class: `Accepted=True`, reason `SuccessfullyQueued`.
pub const VENDOR_QUEUED: &str = "The request has been queued";
/// Vendor-like class: `Provisioned=True`, reason `Provisioned`.
pub const VENDOR_PROVISIONED: &str = "Capacity has been provisioned";
/// Vendor-like class: `Failed=True`, reason `WaitTimeExceeded`.
pub fn vendor_wait_time_exceeded(seconds: u64) -> String {
    format!("The request was not provisioned within ValidUntilSeconds ({seconds}s)")
}
/// Vendor-like class: `Provisioned=False` while its nodes are being created: the ETA.
pub fn vendor_eta(nodes: u32, group: &str, ready_at: &str) -> String {
    format!("Provisioning {nodes} node(s) in node pool {group}, ETA {ready_at}")
}
/// Vendor-like class: `CapacityRevoked=True` once maxRunDurationSeconds has passed.
pub const CAPACITY_REVOKED: &str = "The maximum run duration has passed; the capacity is reclaimed";
/// Vendor-like class: the reason of `CapacityRevoked=True`.
pub const CAPACITY_REVOKED_REASON: &str = "MaxRunDurationExceeded";
