//! Whether a ProvisioningRequest AdmissionCheck is usable: its `Active` condition, from its
//! parameters reference and whether the ProvisioningRequestConfig it names exists. Reasons and
//! messages are Kueue's (`Active` / `BadParametersRef`, the reference errors of
//! `pkg/util/admissioncheck`, the API server's not-found message).

use api::kueue::AdmissionCheckParametersReference;

use crate::admissionchecks::params;
pub use crate::admissionchecks::params::Activity;

const KIND: &str = "ProvisioningRequestConfig";

/// The name of the ProvisioningRequestConfig a check's parameters reference, or why it has none.
pub fn config_name(params: Option<&AdmissionCheckParametersReference>) -> Result<&str, String> {
    params::config_name(params, KIND)
}

/// The check's activity, given whether a config of that name exists.
pub fn activity(
    params: Option<&AdmissionCheckParametersReference>,
    config_exists: impl Fn(&str) -> bool,
) -> Activity {
    let problem = match config_name(params) {
        Err(why) => Some(why),
        Ok(name) if !config_exists(name) => Some(format!(
            "provisioningrequestconfigs.kueue.x-k8s.io {name:?} not found"
        )),
        Ok(_) => None,
    };
    match problem {
        None => Activity {
            active: true,
            reason: "Active",
            message: "The admission check is active".into(),
        },
        Some(message) => Activity {
            active: false,
            reason: "BadParametersRef",
            message,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::admissionchecks::params::{GROUP, reference as params};
    use rstest::rstest;

    #[rstest]
    #[case::active(
        params(GROUP, KIND, "gpu"),
        true,
        "Active",
        "The admission check is active"
    )]
    #[case::no_reference(None, false, "BadParametersRef", "missing parameters reference")]
    #[case::empty_name(
        params(GROUP, KIND, ""),
        false,
        "BadParametersRef",
        "empty name: bad parameters reference"
    )]
    #[case::wrong_group(
        params("example.com", KIND, "gpu"),
        false,
        "BadParametersRef",
        "wrong group \"example.com\", expecting \"kueue.x-k8s.io\": bad parameters reference"
    )]
    #[case::wrong_kind(
        params(GROUP, "MultiKueueConfig", "gpu"),
        false,
        "BadParametersRef",
        "wrong kind \"MultiKueueConfig\", expecting \"ProvisioningRequestConfig\": bad parameters reference"
    )]
    #[case::missing_config(
        params(GROUP, KIND, "cpu"),
        false,
        "BadParametersRef",
        "provisioningrequestconfigs.kueue.x-k8s.io \"cpu\" not found"
    )]
    fn a_check_is_active_when_its_config_exists(
        #[case] params: Option<AdmissionCheckParametersReference>,
        #[case] active: bool,
        #[case] reason: &str,
        #[case] message: &str,
    ) {
        let got = activity(params.as_ref(), |name| name == "gpu");
        assert_eq!(
            (got.active, got.reason, got.message.as_str()),
            (active, reason, message)
        );
    }
}
