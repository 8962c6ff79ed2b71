//! Watch streams: newline-delimited JSON events over a chunked response, fed by the store's change
//! channel, filtered by namespace and selectors, with bookmarks and timeouts on the server's clock.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{Response, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::{Query, ResponseBody, Shared};
use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};
use crate::store::{Change, ChangeType, ListOptions, Store, WatchStart, render};

/// How often a watch that asked for bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);
/// A watch without `timeoutSeconds` ends after this long, like the real server's minimum.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

struct Params {
    ns: Option<String>,
    opts: ListOptions,
    bookmarks: bool,
    initial_events: bool,
    timeout: Duration,
}

pub fn serve_watch(
    shared: Arc<Shared>,
    rt: Arc<ResourceType>,
    ns: Option<String>,
    opts: ListOptions,
    query: &Query,
) -> ApiResult<Response<ResponseBody>> {
    Store::check_field_selector(&rt, &opts)?;
    let initial_events = query.flag("sendInitialEvents");
    let bookmarks = query.flag("allowWatchBookmarks");
    if initial_events && (!bookmarks || query.get("resourceVersionMatch") != Some("NotOlderThan")) {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            vec![crate::error::FieldCause::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for watch unless the WatchListClient feature gate is enabled, resourceVersionMatch is set to NotOlderThan and allowWatchBookmarks is set to true",
            )],
        ));
    }
    let timeout = match query.get("timeoutSeconds") {
        Some(t) if !t.is_empty() => Duration::from_secs(
            t.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds: {t:?}")))?,
        ),
        _ => DEFAULT_TIMEOUT,
    };
    let start = match query.get("resourceVersion") {
        None | Some("") | Some("0") => WatchStart::Now,
        Some(rv) if initial_events => {
            let _ = rv;
            WatchStart::Now
        }
        Some(rv) => WatchStart::After(
            rv.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv:?}")))?,
        ),
    };
    let params = Params {
        ns,
        opts,
        bookmarks,
        initial_events,
        timeout,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let init = shared.store().watch(&rt, start);
    match init {
        Ok(init) => {
            tokio::spawn(run(shared, rt, params, init, tx));
        }
        Err(e) => {
            // The real server answers 200 and reports a too-old resourceVersion inside the stream.
            let line = event_line("ERROR", &e.to_status());
            tokio::spawn(async move {
                let _ = tx.send(line).await;
            });
        }
    }
    let stream = ReceiverStream::new(rx).map(|b| Ok::<_, std::convert::Infallible>(Frame::data(b)));
    let mut resp = Response::new(StreamBody::new(stream).boxed_unsync());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    resp.headers_mut().insert(
        header::TRANSFER_ENCODING,
        header::HeaderValue::from_static("chunked"),
    );
    Ok(resp)
}

fn event_line(kind: &str, object: &Value) -> Bytes {
    let mut line = serde_json::to_vec(&json!({"type": kind, "object": object})).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

/// What a change means for a watch with this selection: which event, if any.
fn classify(rt: &ResourceType, p: &Params, change: &Change) -> Option<&'static str> {
    let sel = |o: &Value| Store::selects(rt, p.ns.as_deref(), &p.opts, o);
    let now = sel(&change.object);
    let before = change.old.as_deref().is_some_and(sel);
    match change.kind {
        ChangeType::Added => now.then_some("ADDED"),
        ChangeType::Deleted => (now || before).then_some("DELETED"),
        ChangeType::Modified => match (before, now) {
            (true, true) => Some("MODIFIED"),
            (true, false) => Some("DELETED"),
            (false, true) => Some("ADDED"),
            (false, false) => None,
        },
    }
}

async fn run(
    shared: Arc<Shared>,
    rt: Arc<ResourceType>,
    p: Params,
    init: crate::store::WatchInit,
    tx: mpsc::Sender<Bytes>,
) {
    let crate::store::WatchInit {
        initial,
        replay,
        mut rx,
        resource_version,
    } = init;
    let mut last_rv = resource_version;
    for change in initial.iter().chain(replay.iter()) {
        if let Some(kind) = classify(&rt, &p, change) {
            if tx
                .send(event_line(kind, &render(&rt, &change.object)))
                .await
                .is_err()
            {
                return;
            }
        }
        last_rv = last_rv.max(change.rv);
    }
    if p.initial_events {
        let mark = crate::store::watch_bookmark(&rt, resource_version, true);
        if tx.send(event_line("BOOKMARK", &mark)).await.is_err() {
            return;
        }
    }
    let clock = shared.clock.clone();
    let timeout = clock.sleep(p.timeout);
    tokio::pin!(timeout);
    let mut next_bookmark = Box::pin(clock.sleep(BOOKMARK_EVERY));
    loop {
        tokio::select! {
            biased;
            change = rx.recv() => {
                let Some(change) = change else { return };
                last_rv = last_rv.max(change.rv);
                if let Some(kind) = classify(&rt, &p, &change) {
                    if tx.send(event_line(kind, &render(&rt, &change.object))).await.is_err() {
                        return;
                    }
                }
            }
            _ = &mut timeout => return,
            _ = &mut next_bookmark, if p.bookmarks => {
                // Everything committed up to `now_rv` is already in `rx`: drain it, then the bookmark
                // cannot run ahead of an event still to be sent.
                let now_rv = shared.store().resource_version();
                while let Ok(change) = rx.try_recv() {
                    last_rv = last_rv.max(change.rv);
                    if let Some(kind) = classify(&rt, &p, &change) {
                        if tx.send(event_line(kind, &render(&rt, &change.object))).await.is_err() {
                            return;
                        }
                    }
                }
                last_rv = last_rv.max(now_rv);
                let mark = crate::store::watch_bookmark(&rt, last_rv, false);
                if tx.send(event_line("BOOKMARK", &mark)).await.is_err() {
                    return;
                }
                next_bookmark = Box::pin(clock.sleep(BOOKMARK_EVERY));
            }
        }
    }
}
