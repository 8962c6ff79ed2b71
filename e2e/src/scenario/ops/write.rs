//! `apply` (server-side apply), `create` (POST), `update` (PUT), `patch` and `delete`: writes
//! on one or more objects, sent as a user would send them.

use futures::future::BoxFuture;
use kube::api::{DeleteParams, DynamicObject, Patch as KubePatch, PatchParams, PostParams};
use serde::Deserialize;
use serde_json::Value;

use super::{Check, OpResult, Operation, objects_label};
use crate::scenario::check::{Checker, DEFAULT_FIELD_MANAGER, NameRule};
use crate::scenario::context::Context;
use crate::scenario::naming::object_label;

/// The fields of `apply`, `create` and `update`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Write {
    pub object: Option<Value>,
    pub objects: Option<Vec<Value>>,
    pub file: Option<String>,
    /// `status` writes the status subresource, as the controller owning it would.
    pub subresource: Option<Subresource>,
    /// The field manager to write as. Default: `tollgate-scenario`.
    pub field_manager: Option<String>,
}

/// `apply`: server-side apply, forcing conflicts.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct Apply(pub Write);

/// `create`: POST.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct Create(pub Write);

/// `update`: PUT, of the version there now unless the object names one.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct Update(pub Write);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Subresource {
    Status,
}

/// `patch`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Patch {
    /// The object to patch (its apiVersion, kind and metadata name it). For merge and strategic
    /// patches it is also the patch body.
    pub object: Option<Value>,
    pub objects: Option<Vec<Value>>,
    pub file: Option<String>,
    #[serde(rename = "type", default)]
    pub patch_type: PatchType,
    /// The operations of a JSON patch (`type: json`).
    pub ops: Option<Vec<Value>>,
    pub subresource: Option<Subresource>,
    pub field_manager: Option<String>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PatchType {
    #[default]
    Merge,
    Strategic,
    Json,
}

/// `delete`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Delete {
    pub object: Option<Value>,
    pub objects: Option<Vec<Value>>,
    pub file: Option<String>,
    pub propagation_policy: Option<PropagationPolicy>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub enum PropagationPolicy {
    Background,
    Foreground,
    Orphan,
}

/// A write, checked: apply, create, update, patch or delete, on one or more objects.
#[derive(Debug, Clone)]
pub struct WriteOp {
    pub kind: WriteKind,
    pub objects: Vec<Value>,
    pub status: bool,
    pub field_manager: String,
}

#[derive(Debug, Clone)]
pub enum WriteKind {
    Apply,
    Create,
    Update,
    Patch {
        patch_type: PatchType,
        ops: Option<Vec<Value>>,
    },
    Delete {
        propagation: Option<PropagationPolicy>,
    },
}

impl WriteKind {
    pub fn verb(&self) -> &'static str {
        match self {
            WriteKind::Apply => "apply",
            WriteKind::Create => "create",
            WriteKind::Update => "update",
            WriteKind::Patch { .. } => "patch",
            WriteKind::Delete { .. } => "delete",
        }
    }
}

fn check_write(kind: WriteKind, w: Write, cx: &Checker<'_>) -> Result<WriteOp, String> {
    let rule = match kind {
        WriteKind::Create => NameRule::NameOrGenerateName,
        _ => NameRule::Required,
    };
    Ok(WriteOp {
        objects: cx.objects(w.object, w.objects, w.file, rule)?,
        kind,
        status: w.subresource == Some(Subresource::Status),
        field_manager: w
            .field_manager
            .unwrap_or_else(|| DEFAULT_FIELD_MANAGER.into()),
    })
}

impl Check for Apply {
    type Checked = WriteOp;
    fn check(self, cx: &Checker<'_>) -> Result<WriteOp, String> {
        check_write(WriteKind::Apply, self.0, cx)
    }
}

impl Check for Create {
    type Checked = WriteOp;
    fn check(self, cx: &Checker<'_>) -> Result<WriteOp, String> {
        check_write(WriteKind::Create, self.0, cx)
    }
}

impl Check for Update {
    type Checked = WriteOp;
    fn check(self, cx: &Checker<'_>) -> Result<WriteOp, String> {
        check_write(WriteKind::Update, self.0, cx)
    }
}

impl Check for Patch {
    type Checked = WriteOp;
    fn check(self, cx: &Checker<'_>) -> Result<WriteOp, String> {
        match (self.patch_type, &self.ops) {
            (PatchType::Json, None) => return Err("`type: json` needs `ops`".into()),
            (PatchType::Merge | PatchType::Strategic, Some(_)) => {
                return Err(
                    "`ops` is for `type: json`; a merge or strategic patch is the object itself"
                        .into(),
                );
            }
            _ => {}
        }
        Ok(WriteOp {
            objects: cx.objects(self.object, self.objects, self.file, NameRule::Required)?,
            kind: WriteKind::Patch {
                patch_type: self.patch_type,
                ops: self.ops,
            },
            status: self.subresource == Some(Subresource::Status),
            field_manager: self
                .field_manager
                .unwrap_or_else(|| DEFAULT_FIELD_MANAGER.into()),
        })
    }
}

impl Check for Delete {
    type Checked = WriteOp;
    fn check(self, cx: &Checker<'_>) -> Result<WriteOp, String> {
        Ok(WriteOp {
            objects: cx.objects(self.object, self.objects, self.file, NameRule::Required)?,
            kind: WriteKind::Delete {
                propagation: self.propagation_policy,
            },
            status: false,
            field_manager: DEFAULT_FIELD_MANAGER.into(),
        })
    }
}

impl Operation for WriteOp {
    fn verb(&self) -> &'static str {
        self.kind.verb()
    }

    fn describe(&self) -> String {
        format!("{} {}", self.kind.verb(), objects_label(&self.objects))
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        Box::pin(async move {
            for obj in &self.objects {
                self.send(cx, obj).await.map_err(|e| {
                    format!(
                        "{} {}: {}",
                        self.kind.verb(),
                        object_label(obj),
                        api_error_text(&e)
                    )
                })?;
            }
            Ok(())
        })
    }

    fn objects(&self) -> &[Value] {
        &self.objects
    }

    fn written(&self) -> &[Value] {
        &self.objects
    }
}

impl WriteOp {
    /// Send the write of one of its objects.
    pub(super) async fn send(&self, cx: &mut Context<'_>, obj: &Value) -> Result<(), WriteError> {
        let (api, mut obj) = cx.api_for(obj).await.map_err(WriteError::Other)?;
        cx.resolve_name(&api, &mut obj)
            .await
            .map_err(WriteError::Other)?;
        cx.fill_owner_uids(&mut obj)
            .await
            .map_err(WriteError::Other)?;
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let dynamic: DynamicObject =
            serde_json::from_value(obj.clone()).map_err(|e| WriteError::Other(e.to_string()))?;
        match &self.kind {
            WriteKind::Apply => {
                let pp = PatchParams::apply(&self.field_manager).force();
                let patch = KubePatch::Apply(&obj);
                if self.status {
                    api.patch_status(&name, &pp, &patch).await?;
                } else {
                    api.patch(&name, &pp, &patch).await?;
                }
            }
            WriteKind::Create => {
                let pp = PostParams {
                    field_manager: Some(self.field_manager.clone()),
                    ..PostParams::default()
                };
                api.create(&pp, &dynamic).await?;
            }
            WriteKind::Update => {
                let mut dynamic = dynamic;
                if dynamic.metadata.resource_version.is_none() {
                    // Like `kubectl replace`: update whatever version is there now.
                    let current = api.get(&name).await?;
                    dynamic.metadata.resource_version = current.metadata.resource_version;
                }
                let pp = PostParams {
                    field_manager: Some(self.field_manager.clone()),
                    ..PostParams::default()
                };
                if self.status {
                    api.replace_status(&name, &pp, &dynamic).await?;
                } else {
                    api.replace(&name, &pp, &dynamic).await?;
                }
            }
            WriteKind::Patch { patch_type, ops } => {
                let pp = PatchParams {
                    field_manager: Some(self.field_manager.clone()),
                    ..PatchParams::default()
                };
                let ops: json_patch::Patch = match ops {
                    Some(ops) => serde_json::from_value(Value::Array(ops.clone()))
                        .map_err(|e| WriteError::Other(format!("ops: {e}")))?,
                    None => json_patch::Patch(Vec::new()),
                };
                let patch = match patch_type {
                    PatchType::Merge => KubePatch::Merge(obj.clone()),
                    PatchType::Strategic => KubePatch::Strategic(obj.clone()),
                    PatchType::Json => KubePatch::Json::<Value>(ops),
                };
                if self.status {
                    api.patch_status(&name, &pp, &patch).await?;
                } else {
                    api.patch(&name, &pp, &patch).await?;
                }
            }
            WriteKind::Delete { propagation } => {
                let dp = DeleteParams {
                    propagation_policy: propagation.map(|p| match p {
                        PropagationPolicy::Background => kube::api::PropagationPolicy::Background,
                        PropagationPolicy::Foreground => kube::api::PropagationPolicy::Foreground,
                        PropagationPolicy::Orphan => kube::api::PropagationPolicy::Orphan,
                    }),
                    ..DeleteParams::default()
                };
                api.delete(&name, &dp).await?;
            }
        }
        Ok(())
    }
}

/// A failed write: the API's refusal, or a problem before the request was sent.
#[derive(Debug)]
pub(super) enum WriteError {
    Api(Box<kube::core::Status>),
    Other(String),
}

impl From<kube::Error> for WriteError {
    fn from(e: kube::Error) -> Self {
        match e {
            kube::Error::Api(status) => WriteError::Api(status),
            other => WriteError::Other(other.to_string()),
        }
    }
}

fn api_error_text(e: &WriteError) -> String {
    match e {
        WriteError::Api(s) => format!(
            "the server refused it: {} {}: {}",
            s.code, s.reason, s.message
        ),
        WriteError::Other(e) => e.clone(),
    }
}
