//! Installing CustomResourceDefinitions as a user would (server-side apply), and waiting until
//! the API server serves them.

use std::time::Duration;

use serde::Deserialize;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};

use crate::Error;

/// The field manager of installs made here.
pub const FIELD_MANAGER: &str = "tollgate-install";

/// Apply each `(origin, yaml)` (one CRD per document) and wait until every one is Established.
pub async fn install_crds(
    client: &kube::Client,
    crds: &[(&str, &str)],
    timeout: Duration,
) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut names = Vec::new();
    for (origin, yaml) in crds {
        for doc in serde_yaml::Deserializer::from_str(yaml) {
            let value = serde_yaml::Value::deserialize(doc)
                .map_err(|e| Error::Client(format!("{origin}: {e}")))?;
            if value.is_null() {
                continue;
            }
            let crd: CustomResourceDefinition = serde_yaml::from_value(value).map_err(|e| {
                Error::Client(format!("{origin}: not a CustomResourceDefinition: {e}"))
            })?;
            let name = crd.metadata.name.clone().unwrap_or_default();
            api.patch(&name, &params, &Patch::Apply(&crd))
                .await
                .map_err(|e| Error::Client(format!("applying {origin} ({name}): {e}")))?;
            names.push(name);
        }
    }
    for name in names {
        let established = await_condition(api.clone(), &name, conditions::is_crd_established());
        tokio::time::timeout(timeout, established)
            .await
            .map_err(|_| Error::NotReady(timeout, format!("{name} was not Established")))?
            .map_err(|e| Error::Client(format!("watching {name}: {e}")))?;
    }
    Ok(())
}
