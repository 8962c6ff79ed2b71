//! Objects as the controller keeps them: without `metadata.managedFields`.
//!
//! Kueue's manager strips managedFields from every object it caches (controller-runtime's
//! `TransformStripManagedFields`): nothing in the controller reads them, and they are often half
//! of an object's JSON. Here they are skipped while decoding, so they are never decoded at all
//! (and malformed ones are not an error). An object read this way has none, so writing it back
//! sends none, and the API server keeps the ones it has. Writing does not strip them: an object
//! read in full would send its own.
//!
//! [`Lean<K>`] is `K` for kube-rs: the same resource and the same JSON when written, decoded
//! without managedFields. Watch with [`watcher()`]; read with [`kube::Api`] and take `.0`; write
//! `K` as [`Lean::of`].

use std::borrow::Cow;
use std::fmt;

use futures::{Stream, StreamExt};
use kube::api::ObjectMeta;
use kube::runtime::watcher::{self, Event};
use kube::{Api, Client, Resource};
use ref_cast::RefCast;
use serde::de::DeserializeOwned;
use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

/// `K`, decoded without `metadata.managedFields`.
#[derive(Clone, Debug, PartialEq, RefCast)]
#[repr(transparent)]
pub struct Lean<K>(pub K);

impl<K> Lean<K> {
    /// `obj` as a lean object, to write it with [`kube::Api`].
    pub fn of(obj: &K) -> &Lean<K> {
        Lean::ref_cast(obj)
    }
}

impl<K: Resource> Resource for Lean<K> {
    type DynamicType = K::DynamicType;
    type Scope = K::Scope;

    fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::kind(dt)
    }
    fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::group(dt)
    }
    fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::version(dt)
    }
    fn api_version(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::api_version(dt)
    }
    fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
        K::plural(dt)
    }
    fn url_path(dt: &Self::DynamicType, namespace: Option<&str>) -> String {
        K::url_path(dt, namespace)
    }
    fn metadata_api() -> bool {
        K::metadata_api()
    }
    fn meta(&self) -> &ObjectMeta {
        self.0.meta()
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0.meta_mut()
    }
}

impl<K: Serialize> Serialize for Lean<K> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de, K: Deserialize<'de>> Deserialize<'de> for Lean<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        K::deserialize(Skipping {
            inner: deserializer,
            level: Level::Object,
        })
        .map(Lean)
    }
}

/// kube-runtime's watcher over every `K` the client can see, decoded lean and handed on as `K`.
pub fn watcher<K>(
    client: Client,
    config: watcher::Config,
) -> impl Stream<Item = Result<Event<K>, watcher::Error>> + Send
where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + fmt::Debug + Send + 'static,
{
    watcher::watcher(Api::<Lean<K>>::all(client), config).map(|e| e.map(unwrap))
}

/// A watch event of a lean object, as one of the object itself.
fn unwrap<K>(event: Event<Lean<K>>) -> Event<K> {
    match event {
        Event::Apply(Lean(obj)) => Event::Apply(obj),
        Event::Delete(Lean(obj)) => Event::Delete(obj),
        Event::Init => Event::Init,
        Event::InitApply(Lean(obj)) => Event::InitApply(obj),
        Event::InitDone => Event::InitDone,
    }
}

/// Where in the object a map is: the object itself, or its metadata.
#[derive(Clone, Copy, PartialEq)]
enum Level {
    Object,
    Metadata,
}

/// A deserializer that hands the object's maps on with managedFields left out. Only a map can
/// hold them, so everything else goes to the inner deserializer untouched.
struct Skipping<D> {
    inner: D,
    level: Level,
}

macro_rules! untouched {
    ($($method:ident),*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
            self.inner.$method(visitor)
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Skipping<D> {
    type Error = D::Error;

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let level = self.level;
        self.inner.deserialize_map(Maps { visitor, level })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        let level = self.level;
        self.inner
            .deserialize_struct(name, fields, Maps { visitor, level })
    }

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let level = self.level;
        self.inner.deserialize_any(Maps { visitor, level })
    }

    /// k8s-openapi's kinds decode their metadata as an `Option`.
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let level = self.level;
        self.inner.deserialize_option(Maps { visitor, level })
    }

    untouched!(
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_str,
        deserialize_string,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_unit,
        deserialize_seq,
        deserialize_identifier,
        deserialize_ignored_any
    );

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_unit_struct(name, visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_newtype_struct(name, visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_tuple(len, visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_tuple_struct(name, len, visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_enum(name, variants, visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// The visitor of a map at `level`: the map it gets (directly or as an option's value) is
/// filtered; anything else passes through.
struct Maps<V> {
    visitor: V,
    level: Level,
}

macro_rules! passed_on {
    ($($method:ident($ty:ty)),*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.visitor.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Maps<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.visitor.expecting(f)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(Filtered {
            map,
            level: self.level,
            metadata_next: false,
        })
    }

    passed_on!(
        visit_bool(bool),
        visit_i64(i64),
        visit_i128(i128),
        visit_u64(u64),
        visit_u128(u128),
        visit_f64(f64),
        visit_str(&str),
        visit_borrowed_str(&'de str),
        visit_string(String),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>)
    );

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.visitor.visit_unit()
    }

    fn visit_some<D2: Deserializer<'de>>(self, d: D2) -> Result<V::Value, D2::Error> {
        self.visitor.visit_some(Skipping {
            inner: d,
            level: self.level,
        })
    }

    fn visit_newtype_struct<D2: Deserializer<'de>>(self, d: D2) -> Result<V::Value, D2::Error> {
        self.visitor.visit_newtype_struct(d)
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_seq(seq)
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_enum(data)
    }
}

/// An object's map with managedFields left out of its metadata.
struct Filtered<A> {
    map: A,
    level: Level,
    /// The key just read was the object's `metadata`.
    metadata_next: bool,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Filtered<A> {
    type Error = A::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        loop {
            let Some(Key(key)) = self.map.next_key::<Key<'de>>()? else {
                return Ok(None);
            };
            match self.level {
                Level::Metadata if key == "managedFields" => {
                    self.map.next_value::<IgnoredAny>()?;
                    continue;
                }
                Level::Metadata => {}
                Level::Object => self.metadata_next = key == "metadata",
            }
            return match key {
                Cow::Borrowed(k) => seed.deserialize(BorrowedStrDeserializer::new(k)),
                Cow::Owned(k) => seed.deserialize(StringDeserializer::new(k)),
            }
            .map(Some);
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        if std::mem::take(&mut self.metadata_next) {
            self.map.next_value_seed(Metadata(seed))
        } else {
            self.map.next_value_seed(seed)
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// The seed of the object's metadata: decodes it through a [`Skipping`] at metadata level.
struct Metadata<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Metadata<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Skipping {
            inner: deserializer,
            level: Level::Metadata,
        })
    }
}

/// A map key, borrowed from the input when it can be.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

#[cfg(test)]
#[path = "lean_tests.rs"]
mod tests;
