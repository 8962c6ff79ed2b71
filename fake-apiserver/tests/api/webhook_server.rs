//! The tests' admission webhook: the fake's scripted webhook (`webhooks::scripted`), answering
//! every call alike whatever its path, and failing the test when it cannot start.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use fake_apiserver::webhooks::scripted::{self, Answered, Call};
pub use fake_apiserver::webhooks::scripted::{Webhook, patched};
use serde_json::Value;

/// What the webhook answers a review's `request` with (see [`scripted::Answered`]).
pub type Answer = Arc<dyn Fn(&Value) -> Answered + Send + Sync>;

/// An answer that takes its time (it may call the API server itself before it answers).
pub type AsyncAnswer =
    Arc<dyn Fn(Value) -> Pin<Box<dyn Future<Output = Answered> + Send>> + Send + Sync>;

/// Serve `answer` on a port of loopback, with a certificate for 127.0.0.1.
pub async fn start(answer: Answer) -> Webhook {
    let answer: AsyncAnswer = Arc::new(move |request: Value| {
        let answered = answer(&request);
        Box::pin(async move { answered })
    });
    start_as(&["127.0.0.1"], answer).await
}

/// Serve `answer` on a port of loopback, with a certificate for these names.
pub async fn start_as(names: &[&str], answer: AsyncAnswer) -> Webhook {
    scripted::serve(names, Arc::new(move |call: Call| answer(call.request)))
        .await
        .expect("a webhook on loopback")
}
