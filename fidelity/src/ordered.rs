//! JSON that keeps its keys in the order the server wrote them.
//!
//! The workspace's `serde_json` sorts object keys (its `Map` is a `BTreeMap`, and turning on
//! `preserve_order` would reorder every snapshot in the workspace), but key order is part of what
//! a client sees: it decides the column numbers in decode errors and the bytes of every answer.
//! So answers are parsed into this tree, normalised in place and rendered as they came.

use std::fmt::{self, Write};

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

/// A JSON value whose objects keep their keys' order.
#[derive(Clone, Debug, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    pub fn parse(bytes: &[u8]) -> Result<Json, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    /// The member `key` of an object.
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// Follow an RFC 6901 pointer (`/metadata/name`, `/items/0/metadata/uid`).
    pub fn pointer(&self, pointer: &str) -> Option<&Json> {
        if pointer.is_empty() {
            return Some(self);
        }
        let mut here = self;
        for token in pointer.strip_prefix('/')?.split('/') {
            let token = token.replace("~1", "/").replace("~0", "~");
            here = match here {
                Json::Object(_) => here.get(&token)?,
                Json::Array(items) => items.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some(here)
    }

    /// The value as a plain `serde_json::Value` (keys sorted), for comparisons that ignore order.
    pub fn to_value(&self) -> serde_json::Value {
        match self {
            Json::Null => serde_json::Value::Null,
            Json::Bool(b) => serde_json::Value::Bool(*b),
            Json::Number(n) => serde_json::Value::Number(n.clone()),
            Json::String(s) => serde_json::Value::String(s.clone()),
            Json::Array(items) => items.iter().map(Json::to_value).collect(),
            Json::Object(members) => serde_json::Value::Object(
                members
                    .iter()
                    .map(|(k, v)| (k.clone(), v.to_value()))
                    .collect(),
            ),
        }
    }

    /// Sort every object's keys (to look past key order while looking for other differences).
    pub fn sort_keys(&mut self) {
        match self {
            Json::Array(items) => items.iter_mut().for_each(Json::sort_keys),
            Json::Object(members) => {
                members.sort_by(|a, b| a.0.cmp(&b.0));
                members.iter_mut().for_each(|(_, v)| v.sort_keys());
            }
            _ => {}
        }
    }

    /// Two-space indented JSON in the value's own key order.
    pub fn pretty(&self) -> String {
        let mut out = String::new();
        self.write_pretty(&mut out, 0).expect("writing to a String");
        out
    }

    fn write_pretty(&self, out: &mut String, depth: usize) -> fmt::Result {
        let indent = |out: &mut String, d: usize| out.push_str(&"  ".repeat(d));
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => write!(out, "{b}")?,
            Json::Number(n) => write!(out, "{n}")?,
            Json::String(s) => out.push_str(&quote(s)),
            Json::Array(items) if items.is_empty() => out.push_str("[]"),
            Json::Object(members) if members.is_empty() => out.push_str("{}"),
            Json::Array(items) => {
                out.push_str("[\n");
                for (i, item) in items.iter().enumerate() {
                    indent(out, depth + 1);
                    item.write_pretty(out, depth + 1)?;
                    out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
                }
                indent(out, depth);
                out.push(']');
            }
            Json::Object(members) => {
                out.push_str("{\n");
                for (i, (k, v)) in members.iter().enumerate() {
                    indent(out, depth + 1);
                    out.push_str(&quote(k));
                    out.push_str(": ");
                    v.write_pretty(out, depth + 1)?;
                    out.push_str(if i + 1 < members.len() { ",\n" } else { "\n" });
                }
                indent(out, depth);
                out.push('}');
            }
        }
        Ok(())
    }
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serialises")
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Json, E> {
        Number::from_f64(n)
            .map(Json::Number)
            .ok_or_else(|| E::custom("a number JSON cannot hold"))
    }
    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut members = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            members.push((k, v));
        }
        Ok(Json::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_the_order_they_were_written_in() {
        let j = Json::parse(br#"{"kind":"ConfigMap","apiVersion":"v1","data":{"b":"1","a":"2"}}"#)
            .expect("json");
        assert_eq!(
            j.pretty(),
            "{\n  \"kind\": \"ConfigMap\",\n  \"apiVersion\": \"v1\",\n  \"data\": {\n    \"b\": \"1\",\n    \"a\": \"2\"\n  }\n}"
        );
        assert_eq!(j.pointer("/data/a").and_then(Json::as_str), Some("2"));
        assert_eq!(j.pointer("/nope"), None);
    }

    #[test]
    fn numbers_survive_as_written() {
        let j = Json::parse(b"[1, -2, 1.5, 12345678901234567890]").expect("json");
        assert_eq!(
            j.pretty(),
            "[\n  1,\n  -2,\n  1.5,\n  12345678901234567890\n]"
        );
    }
}
