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
/// How often a watch checks that its client is still there.
const LIVENESS_CHECK: Duration = Duration::from_secs(5);
/// How long before its timeout a watch gets its last bookmark.
const PRE_TIMEOUT_BOOKMARK: Duration = Duration::from_secs(2);
/// The longest watch timeout honoured (a year): keeps deadlines far from overflowing.
const MAX_TIMEOUT_SECS: u64 = 365 * 24 * 3600;
/// A watch without `timeoutSeconds` ends after this long, like the real server's minimum.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

struct Params {
    view: super::View,
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
    view: super::View,
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
        None | Some("") => DEFAULT_TIMEOUT,
        Some(t) => match t.parse::<u64>() {
            // Like the real server, 0 means "not set"; a huge value is capped, not overflowed.
            Ok(0) => DEFAULT_TIMEOUT,
            Ok(secs) => Duration::from_secs(secs.min(MAX_TIMEOUT_SECS)),
            Err(_) => {
                return Err(ApiError::bad_request(format!(
                    "invalid timeoutSeconds: {t:?}"
                )));
            }
        },
    };
    let start = match query.get("resourceVersion") {
        None | Some("") | Some("0") => WatchStart::Now,
        // A streaming list starts from the current state, whatever resourceVersion it names.
        Some(_) if initial_events => WatchStart::Now,
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
        view,
    };
    let (tx, rx) = mpsc::channel::<Bytes>(64);
    let init = shared.store().watch(&rt, start);
    match init {
        // Only a too-old resourceVersion is reported inside the stream; other errors are answers.
        Err(e) if e.code != 410 => return Err(e),
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
    event_line_json(kind, &super::encode::to_vec(object))
}

/// A watch event line around an object already serialised (a whole document: its newline goes).
fn event_line_json(kind: &str, object: &[u8]) -> Bytes {
    let object = object.strip_suffix(b"\n").unwrap_or(object);
    let mut line = Vec::with_capacity(object.len() + 32);
    line.extend_from_slice(b"{\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\",\"object\":");
    line.extend_from_slice(object);
    line.extend_from_slice(b"}\n");
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

/// The client went away.
struct Closed;

/// One watch's output side: its selection and where its lines go.
struct Sink {
    clock: crate::clock::Clock,
    rt: Arc<ResourceType>,
    p: Params,
    tx: mpsc::Sender<Bytes>,
    last_rv: u64,
}

impl Sink {
    async fn send(&self, kind: &str, object: &Value) -> Result<(), Closed> {
        self.tx
            .send(event_line(kind, object))
            .await
            .map_err(|_| Closed)
    }

    /// Send an object as the watch's view (Table, metadata only) asks.
    async fn send_viewed(&self, kind: &str, obj: Value) -> Result<(), Closed> {
        let rv = obj["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let viewed = self.p.view.single(&self.rt, obj, &rv, self.now());
        self.send(kind, &viewed).await
    }

    fn now(&self) -> jiff::Timestamp {
        self.clock.now()
    }

    /// Send a change if this watch's selection makes it an event.
    async fn deliver(&mut self, change: &Change) -> Result<(), Closed> {
        self.last_rv = self.last_rv.max(change.rv);
        let Some(kind) = classify(&self.rt, &self.p, change) else {
            return Ok(());
        };
        let leaving = kind == "DELETED" && change.kind == ChangeType::Modified;
        match (&change.old, leaving) {
            // An object leaving the selection is reported with the content it last matched with,
            // stamped with the change's resourceVersion, as the real watch cache does.
            (Some(old), true) => {
                let mut last = render(&self.rt, old);
                last["metadata"]["resourceVersion"] = json!(change.rv.to_string());
                self.send_viewed(kind, last).await
            }
            _ if self.p.view != super::View::Full => {
                self.send_viewed(kind, render(&self.rt, &change.object))
                    .await
            }
            _ => {
                let line = event_line_json(kind, &change.json_for(&self.rt));
                self.tx.send(line).await.map_err(|_| Closed)
            }
        }
    }

    async fn bookmark(&self, rv: u64, initial_events_end: bool) -> Result<(), Closed> {
        self.send(
            "BOOKMARK",
            &crate::store::watch_bookmark(&self.rt, rv, initial_events_end),
        )
        .await
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
    let mut sink = Sink {
        clock: shared.clock.clone(),
        rt,
        p,
        tx,
        last_rv: resource_version,
    };
    let _ = stream(
        &shared,
        &mut sink,
        initial,
        replay,
        &mut rx,
        resource_version,
    )
    .await;
}

async fn stream(
    shared: &Shared,
    sink: &mut Sink,
    initial: Vec<Arc<Change>>,
    replay: Vec<Arc<Change>>,
    rx: &mut mpsc::Receiver<Arc<Change>>,
    resource_version: u64,
) -> Result<(), Closed> {
    for change in initial.iter().chain(replay.iter()) {
        sink.deliver(change).await?;
    }
    if sink.p.initial_events {
        sink.bookmark(resource_version, true).await?;
    }
    let clock = shared.clock.clone();
    let deadline = tokio::time::Instant::now() + sink.p.timeout;
    // Like the real watch cache: a bookmark every minute, and one just before the timeout.
    let next_bookmark_at = |now: tokio::time::Instant| {
        let every = now + BOOKMARK_EVERY;
        let pre_timeout = deadline
            .checked_sub(PRE_TIMEOUT_BOOKMARK)
            .unwrap_or(deadline);
        if pre_timeout > now {
            every.min(pre_timeout)
        } else {
            every
        }
    };
    let timeout = clock.sleep_until(deadline);
    tokio::pin!(timeout);
    let mut next_bookmark =
        Box::pin(clock.sleep_until(next_bookmark_at(tokio::time::Instant::now())));
    let bookmarks = sink.p.bookmarks;
    let mut liveness = Box::pin(clock.sleep(LIVENESS_CHECK));
    loop {
        tokio::select! {
            biased;
            change = rx.recv() => match change {
                Some(change) => sink.deliver(&change).await?,
                None => return Ok(()),
            },
            _ = &mut timeout => return Ok(()),
            // A client that went away is noticed within a few seconds even on a quiet kind.
            // (Polling `tx.closed()` in this select instead stalled deliveries under load.)
            _ = &mut liveness => {
                if sink.tx.is_closed() {
                    return Err(Closed);
                }
                liveness = Box::pin(clock.sleep(LIVENESS_CHECK));
            }
            _ = &mut next_bookmark, if bookmarks => {
                // Everything committed up to `now_rv` is already in `rx`: drain it first, so the
                // bookmark cannot run ahead of an event still to be sent.
                let now_rv = shared.store().resource_version();
                loop {
                    match rx.try_recv() {
                        Ok(change) => sink.deliver(&change).await?,
                        Err(mpsc::error::TryRecvError::Empty) => break,
                        // The store dropped this watch (closed, or too far behind): changes after
                        // the last one delivered were never queued, so no bookmark may claim them.
                        Err(mpsc::error::TryRecvError::Disconnected) => return Ok(()),
                    }
                }
                sink.last_rv = sink.last_rv.max(now_rv);
                sink.bookmark(sink.last_rv, false).await?;
                next_bookmark = Box::pin(clock.sleep_until(next_bookmark_at(tokio::time::Instant::now())));
            }
        }
    }
}
