//! Watch streams: newline-delimited JSON events over a chunked response, fed by the store's change
//! channel, filtered by namespace and selectors, with bookmarks and timeouts on the server's clock.
//! The response body pulls events straight from the store's channel (see [`Watch`]).

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use http::{Response, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::media::Media;
use super::{Query, ResponseBody, Shared};
use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};
use crate::store::{Change, ChangeType, ListOptions, Store, WatchStart, render};

/// How often a watch that asked for bookmarks gets one.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);
/// How long before its timeout a watch gets its last bookmark.
const PRE_TIMEOUT_BOOKMARK: Duration = Duration::from_secs(2);
/// The longest watch timeout honoured (a year): keeps deadlines far from overflowing.
const MAX_TIMEOUT_SECS: u64 = 365 * 24 * 3600;
/// A watch without `timeoutSeconds` ends after this long, like the real server's minimum.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

struct Params {
    view: super::View,
    media: Media,
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
    media: Media,
) -> ApiResult<Response<ResponseBody>> {
    Store::check_field_selector(&rt, &opts)?;
    // Checked as kube-apiserver checks a watch's ListOptions (see `watch_options`).
    let initial = super::watch_options(query)?;
    let initial_events = initial == Some(true);
    let bookmarks = query.flag("allowWatchBookmarks");
    let timeout = match query.get("timeoutSeconds") {
        None | Some("") => DEFAULT_TIMEOUT,
        // Like the real server, 0 means "not set"; a huge value is capped, not overflowed.
        Some(t) => {
            match crate::semantics::go_decode::parse_int(t).map_err(ApiError::bad_request)? {
                0 => DEFAULT_TIMEOUT,
                // A negative timeout ends the watch at once, as on kube-apiserver.
                secs if secs < 0 => Duration::ZERO,
                secs => Duration::from_secs(secs.unsigned_abs().min(MAX_TIMEOUT_SECS)),
            }
        }
    };
    let start = match super::watch_resource_version(query)? {
        // sendInitialEvents=false without a resourceVersion starts at the present.
        None if initial == Some(false) => WatchStart::After(shared.store().resource_version()),
        None => WatchStart::Now,
        // A streaming list starts from the current state, whatever resourceVersion it names.
        Some(_) if initial_events => WatchStart::Now,
        Some(rv) => WatchStart::After(rv),
    };
    let params = Params {
        ns,
        opts,
        bookmarks,
        // The bookmark that ends the initial events goes only to a watch that takes bookmarks.
        initial_events: initial_events && bookmarks,
        timeout,
        view,
        media,
    };
    // The store's lock is released before the stream is made.
    let init = shared.store().watch(&rt, params.ns.as_deref(), start);
    let body: BoxStream<'static, Bytes> = match init {
        // Only a too-old resourceVersion is reported inside the stream; other errors are answers.
        Err(e) if e.code != 410 => return Err(e),
        Ok(init) => events(Watch::new(shared.clone(), rt, params, init)),
        // The real server answers 200 and reports a too-old resourceVersion inside the stream.
        Err(e) => futures::stream::once(futures::future::ready(event(
            media,
            "ERROR",
            &e.to_status(),
        )))
        .boxed(),
    };
    let stream = body.map(|b| Ok::<_, std::convert::Infallible>(Frame::data(b)));
    let mut resp = Response::new(StreamBody::new(stream).boxed_unsync());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static(match media {
            Media::Json => "application/json",
            Media::Protobuf => super::protobuf::WATCH_MEDIA_TYPE,
        }),
    );
    resp.headers_mut().insert(
        header::TRANSFER_ENCODING,
        header::HeaderValue::from_static("chunked"),
    );
    Ok(resp)
}

/// One event in the stream's encoding: a JSON line, or a protobuf frame.
fn event(media: Media, kind: &str, object: &Value) -> Bytes {
    match media {
        Media::Json => event_line_json(kind, &super::encode::to_vec(object)),
        Media::Protobuf => match super::protobuf::watch_frame(kind, object) {
            Ok(frame) => Bytes::from(frame),
            // A stored object that does not fit its Go type: the real server cannot have one.
            Err(e) => {
                tracing::error!(%e, "a watch event does not encode as protobuf");
                let status = ApiError::internal(format!("encoding a watch event: {e}")).to_status();
                Bytes::from(super::protobuf::watch_frame("ERROR", &status).unwrap_or_default())
            }
        },
    }
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

/// One watch's selection, and how it turns changes into lines.
struct Sink {
    clock: crate::clock::Clock,
    rt: Arc<ResourceType>,
    p: Params,
    last_rv: u64,
    /// A Table watch has sent its column definitions (kube-apiserver sends them once).
    columns_sent: bool,
}

impl Sink {
    /// An object as the watch's view (Table, metadata only) asks.
    fn viewed_line(&mut self, kind: &str, obj: Value) -> Bytes {
        let rv = obj["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let mut viewed = self.p.view.single(&self.rt, obj, &rv, self.clock.now());
        if std::mem::replace(&mut self.columns_sent, true) {
            super::table::drop_column_definitions(&mut viewed);
        }
        event(self.p.media, kind, &viewed)
    }

    /// The line for a change, if this watch's selection makes it an event.
    fn line(&mut self, change: &Change) -> Option<Bytes> {
        self.last_rv = self.last_rv.max(change.rv);
        let kind = classify(&self.rt, &self.p, change)?;
        let leaving = kind == "DELETED" && change.kind == ChangeType::Modified;
        Some(match (&change.old, leaving) {
            // An object leaving the selection is reported with the content it last matched with,
            // stamped with the change's resourceVersion, as the real watch cache does.
            (Some(old), true) => {
                let mut last = render(&self.rt, old);
                last["metadata"]["resourceVersion"] = json!(change.rv.to_string());
                self.viewed_line(kind, last)
            }
            _ if self.p.view != super::View::Full => {
                self.viewed_line(kind, render(&self.rt, &change.object))
            }
            // Every full-view JSON watcher of this kind shares the change's one serialisation.
            _ if self.p.media == Media::Json => event_line_json(kind, &change.json_for(&self.rt)),
            _ => event(self.p.media, kind, &render(&self.rt, &change.object)),
        })
    }

    fn bookmark(&self, rv: u64, initial_events_end: bool) -> Bytes {
        event(
            self.p.media,
            "BOOKMARK",
            &crate::store::watch_bookmark(&self.rt, rv, initial_events_end),
        )
    }
}

/// The server's clock sleeps on tokio's time (paused and advanced in tests), as `Clock` does.
type Timer = Pin<Box<tokio::time::Sleep>>;

/// The watch's deadline and its next bookmark, set once the initial events have been taken.
struct Timers {
    deadline: tokio::time::Instant,
    timeout: Timer,
    next_bookmark: Timer,
}

/// A watch as its response body pulls it. It runs in the connection's task, when the connection
/// can take more: no task of its own and no channel between it and the socket, so a change costs
/// one wakeup per watcher. A client that goes away drops the body and with it the store's
/// receiver; one that stops reading leaves its receiver to fill, and the store then drops it.
struct Watch {
    shared: Arc<Shared>,
    sink: Sink,
    /// The initial state, then the history to replay.
    backlog: std::iter::Chain<std::vec::IntoIter<Arc<Change>>, std::vec::IntoIter<Arc<Change>>>,
    rx: mpsc::Receiver<Arc<Change>>,
    resource_version: u64,
    timers: Option<Timers>,
    /// Lines already made (a bookmark's catch-up), sent before anything else.
    pending: VecDeque<Bytes>,
    /// The stream ends once `pending` is sent.
    ending: bool,
}

impl Watch {
    fn new(
        shared: Arc<Shared>,
        rt: Arc<ResourceType>,
        p: Params,
        init: crate::store::WatchInit,
    ) -> Self {
        let crate::store::WatchInit {
            initial,
            replay,
            rx,
            resource_version,
        } = init;
        Watch {
            sink: Sink {
                clock: shared.clock.clone(),
                rt,
                p,
                last_rv: resource_version,
                columns_sent: false,
            },
            shared,
            backlog: initial.into_iter().chain(replay),
            rx,
            resource_version,
            timers: None,
            pending: VecDeque::new(),
            ending: false,
        }
    }

    /// Like the real watch cache: a bookmark every minute, and one just before the timeout.
    fn next_bookmark_at(deadline: tokio::time::Instant) -> tokio::time::Instant {
        let now = tokio::time::Instant::now();
        let every = now + BOOKMARK_EVERY;
        let pre_timeout = deadline
            .checked_sub(PRE_TIMEOUT_BOOKMARK)
            .unwrap_or(deadline);
        if pre_timeout > now {
            every.min(pre_timeout)
        } else {
            every
        }
    }

    /// The next line to send; `None` ends the stream.
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(line) = self.pending.pop_front() {
                return Some(line);
            }
            if self.ending {
                return None;
            }
            if let Some(change) = self.backlog.next() {
                match self.sink.line(&change) {
                    Some(line) => return Some(line),
                    None => continue,
                }
            }
            if self.timers.is_none() {
                let deadline = tokio::time::Instant::now() + self.sink.p.timeout;
                self.timers = Some(Timers {
                    deadline,
                    timeout: Box::pin(tokio::time::sleep_until(deadline)),
                    next_bookmark: Box::pin(tokio::time::sleep_until(Self::next_bookmark_at(
                        deadline,
                    ))),
                });
                if self.sink.p.initial_events {
                    return Some(self.sink.bookmark(self.resource_version, true));
                }
            }
            let timers = self.timers.as_mut()?;
            tokio::select! {
                biased;
                change = self.rx.recv() => match change {
                    Some(change) => {
                        if let Some(line) = self.sink.line(&change) {
                            return Some(line);
                        }
                    }
                    None => return None,
                },
                _ = &mut timers.timeout => return None,
                _ = &mut timers.next_bookmark, if self.sink.p.bookmarks => {
                    // Everything committed up to `now_rv` is already in `rx`: take it first, so
                    // the bookmark cannot run ahead of an event still to be sent.
                    let now_rv = self.shared.store().resource_version();
                    loop {
                        match self.rx.try_recv() {
                            Ok(change) => self.pending.extend(self.sink.line(&change)),
                            Err(mpsc::error::TryRecvError::Empty) => break,
                            // The store dropped this watch (closed, or too far behind): changes
                            // after the last one taken were never queued, so no bookmark may
                            // claim them.
                            Err(mpsc::error::TryRecvError::Disconnected) => {
                                self.ending = true;
                                break;
                            }
                        }
                    }
                    if !self.ending {
                        self.sink.last_rv = self.sink.last_rv.max(now_rv);
                        self.pending.push_back(self.sink.bookmark(self.sink.last_rv, false));
                        let at = Self::next_bookmark_at(timers.deadline);
                        timers.next_bookmark.as_mut().reset(at);
                    }
                }
            }
        }
    }
}

fn events(watch: Watch) -> BoxStream<'static, Bytes> {
    futures::stream::unfold(watch, |mut watch| async move {
        let line = watch.next().await?;
        Some((line, watch))
    })
    .boxed()
}
