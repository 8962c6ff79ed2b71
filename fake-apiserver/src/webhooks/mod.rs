//! Admission webhooks, as kube-apiserver calls them: the Mutating- and
//! ValidatingWebhookConfigurations the store holds decide which webhooks a write is shown to
//! ([`matching`]); the store stops a write at each phase's point
//! (`store::webhook_points`) and the HTTP layer calls the webhooks without the store's lock
//! ([`dispatch`], [`call`]), then runs the write again with their answers.

pub mod call;
pub mod config;
pub mod dispatch;
pub mod matching;
pub mod request;
pub mod review;
pub mod scripted;
