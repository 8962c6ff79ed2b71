//! `application/vnd.kubernetes.protobuf`, the encoding client-go uses for built-in kinds, as
//! kube-apiserver reads and writes it. A document is the 4-byte magic `k8s\0` and a
//! `runtime.Unknown` holding the object's apiVersion and kind and the object's own message; a
//! watch stream is a sequence of frames, each a 4-byte big-endian length and a `metav1.WatchEvent`
//! whose object is such a document. Custom resources have no protobuf form.
//!
//! The messages come from the pinned Go types (see `schema`); prost-reflect does the wire
//! encoding. The store keeps JSON: a protobuf body becomes the JSON of the same Go object on the
//! way in, and an answer is written from its JSON on the way out.

mod read;
mod schema;
mod write;

use prost_reflect::prost::Message;
use prost_reflect::{DynamicMessage, Value as Proto};
use serde_json::{Value, json};

use schema::Schema;

/// The media type of protobuf requests and answers.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The Content-Type of a protobuf watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// What every protobuf document starts with.
const MAGIC: &[u8; 4] = b"k8s\0";

/// A document (an object, a list, a Status) as kube-apiserver writes it in protobuf, or `None`
/// when its kind has none. An error names the field whose JSON does not fit its Go type.
pub fn document(v: &Value) -> Option<Result<Vec<u8>, String>> {
    let schema = Schema::get()?;
    let api_version = v["apiVersion"].as_str().unwrap_or("");
    let kind = v["kind"].as_str().unwrap_or("");
    // `APIVersions` and the core group's `APIResourceList` are unversioned: no apiVersion in
    // their JSON or their envelope, v1's types.
    let id = match api_version {
        "" => schema.kind("v1", kind)?,
        _ => schema.kind(api_version, kind)?,
    };
    Some(envelope(schema, id, api_version, kind, v))
}

fn envelope(
    schema: &Schema,
    id: usize,
    api_version: &str,
    kind: &str,
    v: &Value,
) -> Result<Vec<u8>, String> {
    let raw = write::message(schema, id, Some(v))?.encode_to_vec();
    let unknown = schema.internal("Unknown")?;
    let mut msg = write::message(
        schema,
        unknown,
        Some(&json!({"apiVersion": api_version, "kind": kind})),
    )?;
    msg.set_field_by_number(2, Proto::Bytes(raw.into()));
    let mut out = Vec::with_capacity(MAGIC.len() + msg.encoded_len());
    out.extend_from_slice(MAGIC);
    msg.encode(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

/// A watch event as one frame of a protobuf watch stream.
pub fn watch_frame(event: &str, object: &Value) -> Result<Vec<u8>, String> {
    let schema = Schema::get().ok_or("protobuf is not served")?;
    let embedded =
        document(object).ok_or_else(|| format!("{} has no protobuf form", object["kind"]))??;
    let id = schema.internal("WatchEvent")?;
    let mut msg = write::message(schema, id, Some(&json!({ "type": event })))?;
    let mut raw = DynamicMessage::new(
        schema
            .message(schema.special(schema::Special::RawExtension))
            .clone(),
    );
    raw.set_field_by_number(1, Proto::Bytes(embedded.into()));
    msg.set_field_by_number(2, Proto::Message(raw));
    let body = msg.encode_to_vec();
    let len = u32::try_from(body.len()).map_err(|_| "a watch event over 4 GiB")?;
    let mut frame = Vec::with_capacity(4 + body.len());
    frame.extend_from_slice(&len.to_be_bytes());
    frame.extend_from_slice(&body);
    Ok(frame)
}

/// A protobuf request body as the JSON of the same Go object, with the apiVersion and kind its
/// envelope names. What the envelope leaves out is read as the URL's kind (`default`), as the Go
/// decoder does. The error is the decoder's complaint.
pub fn decode(body: &[u8], default: (&str, &str)) -> Result<Value, String> {
    let schema = Schema::get().ok_or("protobuf is not served")?;
    let Some(inner) = body.strip_prefix(MAGIC) else {
        // Go prints the prefix as a byte slice.
        return Err(
            "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
                .into(),
        );
    };
    let unknown_id = schema.internal("Unknown")?;
    let unknown =
        DynamicMessage::decode(schema.message(unknown_id).clone(), inner).map_err(go_words)?;
    let envelope = read::object(schema, unknown_id, &unknown)?;
    let api_version = envelope
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let kind = envelope.get("kind").and_then(Value::as_str).unwrap_or("");
    let raw = match unknown.get_field_by_number(2).as_deref() {
        Some(Proto::Bytes(b)) => b.clone(),
        _ => Default::default(),
    };
    let (typed_version, typed_kind) = (
        Some(api_version)
            .filter(|v| !v.is_empty())
            .unwrap_or(default.0),
        Some(kind).filter(|k| !k.is_empty()).unwrap_or(default.1),
    );
    let Some(id) = schema.kind(typed_version, typed_kind) else {
        return Err(format!(
            "no kind {typed_kind:?} is registered for version {typed_version:?} in scheme \"pkg/runtime/scheme.go:111\""
        ));
    };
    let msg = DynamicMessage::decode(schema.message(id).clone(), raw).map_err(go_words)?;
    let mut object = read::object(schema, id, &msg)?;
    if !api_version.is_empty() {
        object.insert("apiVersion".into(), json!(api_version));
    }
    if !kind.is_empty() {
        object.insert("kind".into(), json!(kind));
    }
    Ok(Value::Object(object))
}

/// One frame's message of a protobuf watch stream (without its 4-byte length) as the JSON
/// event it stands for: `{"type": ..., "object": ...}`, the object read as [`decode`] reads a
/// document. For clients and tests that read the fake's (or kube-apiserver's) streams.
pub fn watch_event(message: &[u8]) -> Result<Value, String> {
    let schema = Schema::get().ok_or("protobuf is not served")?;
    let id = schema.internal("WatchEvent")?;
    let event = DynamicMessage::decode(schema.message(id).clone(), message).map_err(go_words)?;
    let kind = match event.get_field_by_number(1).as_deref() {
        Some(Proto::String(s)) => s.clone(),
        _ => String::new(),
    };
    let raw = match event.get_field_by_number(2).as_deref() {
        Some(Proto::Message(raw)) => match raw.get_field_by_number(1).as_deref() {
            Some(Proto::Bytes(b)) => b.clone(),
            _ => Default::default(),
        },
        _ => Default::default(),
    };
    Ok(json!({"type": kind, "object": decode(&raw, ("", ""))?}))
}

/// A decoding error in the words of the Go decoder kube-apiserver uses (gogo's generated
/// unmarshallers), where prost's error says the same thing.
fn go_words(e: prost_reflect::prost::DecodeError) -> String {
    let text = e.to_string();
    let after = |prefix: &str| text.find(prefix).map(|at| &text[at + prefix.len()..]);
    if let Some(value) = after("invalid wire type value: ") {
        format!("proto: illegal wireType {value}")
    } else if text.contains("buffer underflow") || text.contains("delimited length exceeded") {
        "unexpected EOF".into()
    } else if text.contains("invalid varint") || text.contains("length delimiter exceeds") {
        "proto: integer overflow".into()
    } else if text.contains("invalid tag value: 0") {
        "proto: illegal tag 0".into()
    } else if text.contains("unexpected end group tag") {
        "proto: wiretype end group for non-group".into()
    } else if let Some(rest) = after("invalid wire type: ") {
        format!("proto: wrong wireType ({rest})")
    } else {
        text.trim_start_matches("failed to decode Protobuf message: ")
            .to_string()
    }
}

#[cfg(test)]
mod tests;
