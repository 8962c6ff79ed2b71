//! MultiKueue AdmissionChecks: their `Active` condition, from their MultiKueueConfig and the
//! `Active` condition of its clusters. Reasons and messages are Kueue's (`ACReconciler` in
//! `pkg/controller/admissionchecks/multikueue/admissioncheck.go`): a check is usable while at
//! least one of its clusters is.

use api::constants::admission_check::{
    MESSAGE_ACTIVE, REASON_ACTIVE, REASON_BAD_CONFIG, REASON_NO_USABLE_CLUSTERS,
    REASON_SOME_ACTIVE_CLUSTERS,
};
use api::kueue::{AdmissionCheck, AdmissionCheckParametersReference};

use crate::admissionchecks::Ctx;
use crate::admissionchecks::params;
pub use crate::admissionchecks::params::Activity;
use crate::error::Error;
use crate::workload::conditions;
use crate::writer::Written;

const KIND: &str = "MultiKueueConfig";
/// The condition type, on AdmissionChecks and MultiKueueClusters alike.
pub const ACTIVE: &str = "Active";

/// What the check's MultiKueueConfig names, as the AdmissionCheck controller finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterState {
    /// No MultiKueueCluster of that name.
    Missing,
    /// It exists, without `Active=True`.
    Inactive,
    Active,
}

/// The name of the MultiKueueConfig a check's parameters reference, or why it has none.
pub fn config_name(params: Option<&AdmissionCheckParametersReference>) -> Result<&str, String> {
    params::config_name(params, KIND)
}

/// The check's activity, given its config's clusters (`None`: no config of that name) and the
/// state of each cluster.
pub fn activity<'a>(
    params: Option<&AdmissionCheckParametersReference>,
    config_clusters: impl Fn(&str) -> Option<&'a [String]>,
    cluster: impl Fn(&str) -> ClusterState,
) -> Activity {
    let clusters = match config_name(params) {
        Err(why) => return bad_config(why),
        Ok(name) => match config_clusters(name) {
            None => {
                return bad_config(format!(
                    "multikueueconfigs.kueue.x-k8s.io {name:?} not found"
                ));
            }
            Some(clusters) => clusters,
        },
    };
    let of = |state: ClusterState| -> Vec<&str> {
        clusters
            .iter()
            .map(String::as_str)
            .filter(|c| cluster(c) == state)
            .collect()
    };
    let (missing, inactive) = (of(ClusterState::Missing), of(ClusterState::Inactive));
    let unusable = missing.len() + inactive.len();
    if unusable == 0 {
        return Activity {
            active: true,
            reason: REASON_ACTIVE,
            message: MESSAGE_ACTIVE.into(),
        };
    }
    // Go's `%v` of a string slice: `[a b]`.
    let list = |names: &[&str]| format!("[{}]", names.join(" "));
    let mut parts = Vec::new();
    if !missing.is_empty() {
        parts.push(format!("Missing clusters: {}", list(&missing)));
    }
    if !inactive.is_empty() {
        parts.push(format!("Inactive clusters: {}", list(&inactive)));
    }
    let some = unusable < clusters.len();
    Activity {
        active: some,
        reason: if some {
            REASON_SOME_ACTIVE_CLUSTERS
        } else {
            REASON_NO_USABLE_CLUSTERS
        },
        message: parts.join(", "),
    }
}

fn bad_config(why: String) -> Activity {
    Activity {
        active: false,
        reason: REASON_BAD_CONFIG,
        message: format!("Cannot load the AdmissionChecks parameters: {why}"),
    }
}

/// Writes the check's `Active` condition if its status, reason or message differ (the
/// transition time moves only with the status). Whether it wrote.
pub async fn write(
    ctx: &mut Ctx<'_>,
    ac: &AdmissionCheck,
    activity: Activity,
) -> Result<bool, Error> {
    let current = ac
        .status
        .as_ref()
        .and_then(|s| conditions::find(&s.conditions, ACTIVE));
    let status = if activity.active { "True" } else { "False" };
    if current.is_some_and(|c| {
        c.status == status && c.reason == activity.reason && c.message == activity.message
    }) {
        return Ok(false);
    }
    let mut condition = conditions::new(
        ACTIVE,
        activity.active,
        activity.reason,
        &activity.message,
        &ctx.options.clock.now_time(),
    );
    condition.observed_generation = ac.metadata.generation;
    let mut next = ac.clone();
    conditions::set(
        &mut next.status.get_or_insert_with(Default::default).conditions,
        condition,
    );
    if let Written::Ok(written) = ctx.writer.replace_status(&next).await? {
        ctx.written_admission_check(written);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admissionchecks::params::{GROUP, reference as params};
    use rstest::rstest;

    fn mk() -> Option<AdmissionCheckParametersReference> {
        params(GROUP, KIND, "config")
    }

    /// `worker-a` and `worker-b` are active, `worker-c` is not, `gone-*` do not exist.
    fn state(name: &str) -> ClusterState {
        match name {
            "worker-a" | "worker-b" => ClusterState::Active,
            "worker-c" | "worker-d" => ClusterState::Inactive,
            _ => ClusterState::Missing,
        }
    }

    #[rstest]
    #[case::all_active(mk(), Some(&["worker-a", "worker-b"][..]), true, "Active",
        "The admission check is active")]
    #[case::one_inactive(mk(), Some(&["worker-a", "worker-c"][..]), true, "SomeActiveClusters",
        "Inactive clusters: [worker-c]")]
    #[case::one_missing(mk(), Some(&["gone-1", "worker-b"][..]), true, "SomeActiveClusters",
        "Missing clusters: [gone-1]")]
    #[case::missing_and_inactive_in_config_order(mk(),
        Some(&["worker-d", "gone-2", "worker-a", "worker-c", "gone-1"][..]),
        true, "SomeActiveClusters",
        "Missing clusters: [gone-2 gone-1], Inactive clusters: [worker-d worker-c]")]
    #[case::none_usable(mk(), Some(&["worker-c", "gone-1"][..]), false, "NoUsableClusters",
        "Missing clusters: [gone-1], Inactive clusters: [worker-c]")]
    #[case::all_inactive(mk(), Some(&["worker-c"][..]), false, "NoUsableClusters",
        "Inactive clusters: [worker-c]")]
    #[case::no_config(
        mk(),
        None,
        false,
        "BadConfig",
        "Cannot load the AdmissionChecks parameters: multikueueconfigs.kueue.x-k8s.io \"config\" not found"
    )]
    #[case::no_parameters(None, Some(&["worker-a"][..]), false, "BadConfig",
        "Cannot load the AdmissionChecks parameters: missing parameters reference")]
    #[case::empty_name(params(GROUP, KIND, ""), Some(&["worker-a"][..]), false, "BadConfig",
        "Cannot load the AdmissionChecks parameters: empty name: bad parameters reference")]
    #[case::wrong_group(params("example.com", KIND, "config"), Some(&["worker-a"][..]), false,
        "BadConfig",
        "Cannot load the AdmissionChecks parameters: wrong group \"example.com\", expecting \"kueue.x-k8s.io\": bad parameters reference")]
    #[case::wrong_kind(params(GROUP, "ProvisioningRequestConfig", "config"), Some(&["worker-a"][..]),
        false, "BadConfig",
        "Cannot load the AdmissionChecks parameters: wrong kind \"ProvisioningRequestConfig\", expecting \"MultiKueueConfig\": bad parameters reference")]
    fn a_check_is_active_while_one_of_its_clusters_is(
        #[case] params: Option<AdmissionCheckParametersReference>,
        #[case] clusters: Option<&[&str]>,
        #[case] active: bool,
        #[case] reason: &str,
        #[case] message: &str,
    ) {
        let owned: Option<Vec<String>> =
            clusters.map(|c| c.iter().map(|s| s.to_string()).collect());
        let got = activity(
            params.as_ref(),
            |name| (name == "config").then_some(owned.as_deref()).flatten(),
            state,
        );
        assert_eq!(
            (got.active, got.reason, got.message.as_str()),
            (active, reason, message)
        );
    }
}
