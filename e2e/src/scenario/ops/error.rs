//! `error`: a write the API server must refuse, and what the refusal must look like.

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use super::write::{Apply, Create, Delete, Patch, Update, WriteError, WriteOp};
use super::{Check, OpResult, Operation, objects_label};
use crate::scenario::check::Checker;
use crate::scenario::context::Context;
use crate::scenario::naming::object_label;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExpectError {
    pub apply: Option<Apply>,
    pub create: Option<Create>,
    pub update: Option<Update>,
    pub patch: Option<Patch>,
    pub delete: Option<Delete>,
    /// The HTTP status code, e.g. 422.
    pub code: Option<u16>,
    /// The Status reason, e.g. `Invalid`.
    pub reason: Option<String>,
    /// A substring of the Status message.
    pub message: Option<String>,
}

/// `error`, checked.
#[derive(Debug, Clone)]
pub struct ErrorOp {
    pub write: WriteOp,
    pub code: Option<u16>,
    pub reason: Option<String>,
    pub message: Option<String>,
}

impl Check for ExpectError {
    type Checked = ErrorOp;

    fn check(self, cx: &Checker<'_>) -> Result<ErrorOp, String> {
        let set = [
            self.apply.is_some(),
            self.create.is_some(),
            self.update.is_some(),
            self.patch.is_some(),
            self.delete.is_some(),
        ];
        if set.into_iter().filter(|s| *s).count() != 1 {
            return Err("needs exactly one of apply, create, update, patch or delete: the request that must be refused".into());
        }
        if self.code.is_none() && self.reason.is_none() && self.message.is_none() {
            return Err("say what the refusal looks like: `code`, `reason` or `message`".into());
        }
        let write = if let Some(w) = self.apply {
            w.check(cx)
        } else if let Some(w) = self.create {
            w.check(cx)
        } else if let Some(w) = self.update {
            w.check(cx)
        } else if let Some(p) = self.patch {
            p.check(cx)
        } else {
            self.delete.ok_or("no request")?.check(cx)
        }?;
        if write.objects.len() != 1 {
            return Err("the refused request must be about one object".into());
        }
        Ok(ErrorOp {
            write,
            code: self.code,
            reason: self.reason,
            message: self.message,
        })
    }
}

impl Operation for ErrorOp {
    fn verb(&self) -> &'static str {
        "error"
    }

    fn describe(&self) -> String {
        format!(
            "{} {} is refused",
            self.write.kind.verb(),
            objects_label(&self.write.objects)
        )
    }

    fn run<'a>(&'a self, cx: &'a mut Context<'_>) -> BoxFuture<'a, OpResult> {
        Box::pin(self.expect_refusal(cx))
    }

    fn objects(&self) -> &[Value] {
        &self.write.objects
    }
}

impl ErrorOp {
    async fn expect_refusal(&self, cx: &mut Context<'_>) -> OpResult {
        let w = &self.write;
        let obj = w.objects.first().ok_or("no object")?;
        let label = format!("{} {}", w.kind.verb(), object_label(obj));
        let status = match w.send(cx, obj).await {
            Ok(()) => {
                return Err(format!(
                    "{label} succeeded, but it should have been refused"
                ));
            }
            Err(WriteError::Api(status)) => status,
            Err(WriteError::Other(e)) => return Err(format!("{label}: {e}")),
        };
        let mut wrong = Vec::new();
        if let Some(code) = self.code
            && status.code != code
        {
            wrong.push(format!("code: expected {code}, got {}", status.code));
        }
        if let Some(reason) = &self.reason
            && status.reason != *reason
        {
            wrong.push(format!("reason: expected {reason}, got {}", status.reason));
        }
        if let Some(message) = &self.message
            && !status.message.contains(message.as_str())
        {
            wrong.push(format!("message: expected it to contain {message:?}"));
        }
        if wrong.is_empty() {
            return Ok(());
        }
        Err(format!(
            "{label} was refused, but not as expected:\n  {}\nthe server answered {} {}: {}",
            wrong.join("\n  "),
            status.code,
            status.reason,
            status.message
        ))
    }
}
