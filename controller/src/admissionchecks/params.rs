//! What every admission check shares: the reference from an AdmissionCheck to its parameters
//! object, with the reference errors of Kueue's `pkg/util/admissioncheck`, and the `Active`
//! condition each check controller keeps on its AdmissionChecks.

use api::kueue::AdmissionCheckParametersReference;

/// The API group of every parameters kind Kueue's checks take.
pub const GROUP: &str = "kueue.x-k8s.io";

/// The `Active` condition a check should have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activity {
    pub active: bool,
    pub reason: &'static str,
    pub message: String,
}

/// The name of the `kind` object (in [`GROUP`]) a check's parameters reference, or why it has
/// none.
pub fn config_name<'p>(
    params: Option<&'p AdmissionCheckParametersReference>,
    kind: &str,
) -> Result<&'p str, String> {
    let bad = |why: String| format!("{why}: bad parameters reference");
    let Some(params) = params else {
        return Err("missing parameters reference".into());
    };
    if params.name.is_empty() {
        return Err(bad("empty name".into()));
    }
    if params.api_group != GROUP {
        return Err(bad(format!(
            "wrong group {:?}, expecting {GROUP:?}",
            params.api_group
        )));
    }
    if params.kind != kind {
        return Err(bad(format!(
            "wrong kind {:?}, expecting {kind:?}",
            params.kind
        )));
    }
    Ok(&params.name)
}

#[cfg(test)]
/// A reference to the `kind` object `name` in `group`, for tests.
pub fn reference(group: &str, kind: &str, name: &str) -> Option<AdmissionCheckParametersReference> {
    Some(AdmissionCheckParametersReference {
        api_group: group.into(),
        kind: kind.into(),
        name: name.into(),
    })
}
