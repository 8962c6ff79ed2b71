//! The MultiKueueCluster controller: connections to workers and their `Active` condition.

/// The MultiKueue AdmissionChecks and the clusters each may use.
#[derive(Default)]
pub struct Setup {}

impl Setup {
    /// The clusters of a MultiKueue check, in its MultiKueueConfig's order.
    pub fn clusters_of(&self, _check: &str) -> Option<&[String]> {
        None
    }

    pub fn is_multikueue(&self, _check: &str) -> bool {
        false
    }
}
