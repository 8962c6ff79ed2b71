//! The `watch` operation: a kube-runtime watcher, like any controller's, whose every event the
//! trace shows at the end. It shows what a client sees through faults: after closed watches it
//! must resume from its last resourceVersion with nothing lost and nothing twice.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::utils::Backoff;
use kube::runtime::{WatchStreamExt, watcher};

use crate::env::lock;

/// How long a failed watch waits before trying again. Fixed rather than jittered, so that two
/// runs retry at the same virtual instants.
const RETRY_AFTER: Duration = Duration::from_secs(1);

#[derive(Clone, Copy)]
struct FixedBackoff;

impl Iterator for FixedBackoff {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        Some(RETRY_AFTER)
    }
}

impl Backoff for FixedBackoff {
    fn reset(&mut self) {}
}

/// One running watch and what it has seen.
pub struct ScenarioWatch {
    pub name: String,
    pub seen: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ScenarioWatch {
    /// Start watching objects of `kind`; returns once the initial list has arrived, so later
    /// steps' changes reach the watch as events.
    pub async fn start(
        name: String,
        kind: String,
        api: Api<DynamicObject>,
    ) -> Result<Self, String> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (listed_tx, listed_rx) = tokio::sync::oneshot::channel();
        let log = seen.clone();
        let task = tokio::spawn(async move {
            let mut listed = Some(listed_tx);
            let stream = watcher(api, watcher::Config::default()).backoff(FixedBackoff);
            futures::pin_mut!(stream);
            while let Some(event) = stream.next().await {
                let line = match event {
                    Ok(watcher::Event::Init) => continue,
                    Ok(watcher::Event::InitApply(obj)) => format!("listed {}", label(&kind, &obj)),
                    Ok(watcher::Event::InitDone) => {
                        if let Some(tx) = listed.take() {
                            let _ = tx.send(());
                            continue;
                        }
                        "relisted".to_string()
                    }
                    Ok(watcher::Event::Apply(obj)) => format!("applied {}", label(&kind, &obj)),
                    Ok(watcher::Event::Delete(obj)) => format!("deleted {}", label(&kind, &obj)),
                    Err(e) => format!("error: {e}"),
                };
                lock(&log).push(line);
            }
        });
        listed_rx
            .await
            .map_err(|_| format!("watch {name} ended before its initial list"))?;
        Ok(ScenarioWatch { name, seen, task })
    }

    pub fn seen(&self) -> Vec<String> {
        lock(&self.seen).clone()
    }
}

impl Drop for ScenarioWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `Kind namespace/name at resourceVersion N`: the resourceVersion shows gaps and repeats. The
/// kind is the watched one: kube-apiserver writes list items without `kind`.
fn label(kind: &str, obj: &DynamicObject) -> String {
    let name = obj.metadata.name.as_deref().unwrap_or("?");
    let rv = obj.metadata.resource_version.as_deref().unwrap_or("?");
    match obj.metadata.namespace.as_deref() {
        Some(ns) => format!("{kind} {ns}/{name} at resourceVersion {rv}"),
        None => format!("{kind} {name} at resourceVersion {rv}"),
    }
}
