//! The contract Kueue relies on from every provisioning class (`shared/reference/conformance.md`),
//! one sentence per rule. The conformance suite names the rule a class broke with these words, and
//! the fake autoscaler's broken variants say which one each breaks, so the two always agree.

/// `Provisioned=True` and `Failed=True` at once.
pub const NEVER_PROVISIONED_AND_FAILED: &str =
    "Provisioned=True and Failed=True are never both set";
/// `BookingExpired=True` on a request that was never `Provisioned=True`.
pub const BOOKING_EXPIRES_AFTER_PROVISIONED: &str =
    "BookingExpired=True only follows Provisioned=True";
/// A condition whose status changed but whose time did not.
pub const TRANSITION_TIME_MOVES: &str =
    "a condition's lastTransitionTime moves when its status changes";
/// A request that waits without saying so.
pub const PROGRESS_IS_VISIBLE: &str =
    "a waiting request shows its progress in a Provisioned condition";
/// New nodes left behind by a request that could not be provisioned.
pub const NO_PARTIAL_CAPACITY: &str = "an atomic class leaves no partial capacity behind";
/// Capacity still held, or scale-up still going, for a deleted request.
pub const DELETION_CANCELS: &str = "deleting a request cancels it and frees its capacity";
/// A request that was `Failed=True` and later is not.
pub const FAILED_IS_TERMINAL: &str = "Failed=True is terminal";
/// A request that was `CapacityRevoked=True` and later is not.
pub const REVOKED_IS_TERMINAL: &str = "CapacityRevoked=True is terminal";
/// A reason such as `capacity_found`.
pub const REASONS_ARE_CAMEL_CASE: &str = "condition reasons are CamelCase";
/// A request whose PodTemplates do not exist, provisioned or left waiting. Upstream's classes fail
/// it (`Failed=True`, reason `FailedToCreatePods`), and Kueue relies on that to retry the check.
pub const MISSING_TEMPLATES_HANDLED: &str =
    "a request whose PodTemplates are missing is Failed=True (upstream: FailedToCreatePods)";
/// `Provisioned=True` that turns False, Unknown or disappears while the booking still holds.
pub const PROVISIONED_IS_KEPT: &str = "Provisioned=True is kept until the request is deleted, its booking ends or its capacity is revoked";
/// `Provisioned=True` on a request for pods the options say the class can never provision.
pub const UNFIT_NEVER_PROVISIONED: &str =
    "a request for pods that cannot fit is never Provisioned=True";
/// A request whose fitting pods are never provisioned.
pub const FITTING_REQUESTS_PROVISIONED: &str =
    "a request whose pods fit the cluster is provisioned";
/// A condition status other than True, False or Unknown.
pub const STATUS_IS_TRUE_FALSE_OR_UNKNOWN: &str = "a condition's status is True, False or Unknown";
/// A spec update that was accepted.
pub const SPEC_IS_IMMUTABLE: &str = "a ProvisioningRequest's spec is immutable";
