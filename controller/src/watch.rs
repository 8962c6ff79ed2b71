//! The controller's watches. The core and every admission check controller declare the kinds
//! they watch; the manager merges all their streams into one, and hands each event back to the
//! one that asked for it. Events travel type-erased, so the manager needs no list of kinds: its
//! owner turns an event back into `Event<K>` with [`take`].

use std::any::Any;

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use kube::{Client, Resource};

use crate::lean;
use support::backoff::WatchBackoff;
use support::mirror::Mirror;

/// A watch event of some kind, as its watch delivers it.
pub type AnyEvent = Box<dyn Any + Send>;

/// One delivered event.
pub struct Delivery {
    pub event: AnyEvent,
    /// The event ends a (re-)list: the watch has delivered everything there is.
    pub init_done: bool,
}

/// One watch: the resource it lists and watches, and its events.
pub struct Watch {
    pub group: String,
    pub resource: String,
    pub stream: BoxStream<'static, Delivery>,
}

/// A watch of every `K` the client can see that `config` selects. Objects are kept without
/// managedFields, as Kueue's cache keeps them. Nothing is requested until the stream is polled.
pub fn watch<K>(client: &Client, config: watcher::Config) -> Watch
where
    K: Resource<DynamicType = ()>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug
        + Send
        + 'static,
{
    crate::rbac::check::<K>(None, "list");
    crate::rbac::check::<K>(None, "watch");
    let stream = lean::watcher::<K>(client.clone(), config)
        .backoff(WatchBackoff::default())
        .filter_map(|ev| {
            let out = match ev {
                Ok(ev) => Some(Delivery {
                    init_done: matches!(ev, Event::InitDone),
                    event: Box::new(ev) as AnyEvent,
                }),
                Err(e) => {
                    tracing::warn!(kind = K::kind(&()).as_ref(), error = %e, "watch error");
                    None
                }
            };
            futures::future::ready(out)
        })
        .boxed();
    Watch {
        group: K::group(&()).into_owned(),
        resource: K::plural(&()).into_owned(),
        stream,
    }
}

pub use crate::state::Changed;

/// If `event` is an `Event<K>`, applies it to `mirror` and returns what changed; otherwise hands
/// the event back for the next kind to try.
pub fn take<K>(mirror: &mut Mirror<K>, event: AnyEvent) -> Result<Vec<Changed<K>>, AnyEvent>
where
    K: Resource + Clone + Send + 'static,
{
    let event = event.downcast::<Event<K>>()?;
    Ok(mirror.apply_event(*event))
}
