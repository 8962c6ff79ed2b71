//! Protobuf to JSON: a request body's message as the JSON a client would have sent for the same
//! Go object. Zero values of value fields are left out (Go cannot tell them from absent ones);
//! set pointers are kept, zero or not. The JSON then takes the same path as a JSON body.

use base64::Engine;
use prost_reflect::{DynamicMessage, ReflectMessage, Value as Proto};
use serde_json::{Map, Value, json};

use super::schema::{Scalar, Schema, Special, Ty};

pub(super) type Result<T> = std::result::Result<T, String>;

/// Struct `id` as a JSON object.
pub(super) fn object(
    schema: &Schema,
    id: usize,
    msg: &DynamicMessage,
) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    for f in &schema.structs[id].fields {
        let Some(field) = msg.descriptor().get_field(f.number) else {
            continue;
        };
        if !msg.has_field(&field) {
            continue;
        }
        let v = msg.get_field(&field);
        let Some(json) = value(schema, &f.ty, &v, false)
            .map_err(|e| format!("{}.{}: {e}", schema.structs[id].name, f.json))?
        else {
            continue;
        };
        if f.json.is_empty() {
            // Inlined in JSON: its fields are the parent's.
            if let Value::Object(inner) = json {
                out.extend(inner);
            }
        } else {
            out.insert(f.json.to_string(), json);
        }
    }
    Ok(out)
}

/// A field's JSON, or `None` to leave it out. `keep` keeps a zero value (a set pointer's).
fn value(schema: &Schema, ty: &Ty, v: &Proto, keep: bool) -> Result<Option<Value>> {
    let zero_or = |zero: bool, json: Value| (keep || !zero).then_some(json);
    Ok(match (ty, v) {
        (Ty::Pointer(inner), v) => value(schema, inner, v, true)?,
        (Ty::Scalar(Scalar::Bytes), Proto::Bytes(b)) => {
            Some(json!(base64::engine::general_purpose::STANDARD.encode(b)))
        }
        (Ty::Scalar(_), Proto::String(s)) => zero_or(s.is_empty(), json!(s)),
        (Ty::Scalar(_), Proto::Bool(b)) => zero_or(!b, json!(b)),
        (Ty::Scalar(_), Proto::I32(n)) => zero_or(*n == 0, json!(n)),
        (Ty::Scalar(_), Proto::I64(n)) => zero_or(*n == 0, json!(n)),
        (Ty::Scalar(_), Proto::U32(n)) => zero_or(*n == 0, json!(n)),
        (Ty::Scalar(_), Proto::U64(n)) => zero_or(*n == 0, json!(n)),
        (Ty::Scalar(_), Proto::F64(n)) => zero_or(*n == 0.0, json!(n)),
        (Ty::Struct(id), Proto::Message(m)) => {
            let o = object(schema, *id, m)?;
            zero_or(o.is_empty(), Value::Object(o))
        }
        (Ty::Special(s), Proto::Message(m)) => special(schema, *s, m, keep)?,
        (Ty::List(inner), Proto::List(items)) => {
            let items = items
                .iter()
                .map(|i| Ok(value(schema, inner, i, true)?.unwrap_or(Value::Null)))
                .collect::<Result<Vec<_>>>()?;
            (!items.is_empty()).then_some(Value::Array(items))
        }
        (Ty::Map(inner), Proto::List(entries)) => {
            let mut out = Map::new();
            for entry in entries {
                let Proto::Message(e) = entry else {
                    return Err("a map entry that is not a message".into());
                };
                let key = match e.get_field_by_number(1).as_deref() {
                    Some(Proto::String(k)) => k.clone(),
                    _ => String::new(),
                };
                let v = match e.get_field_by_number(2) {
                    Some(v) => value(schema, inner, &v, true)?.unwrap_or(Value::Null),
                    None => Value::Null,
                };
                // A key given twice keeps its last value, as Go's map does.
                out.insert(key, v);
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        (Ty::Items(inner), Proto::Message(m)) => {
            let items = match m.get_field_by_number(1).as_deref() {
                Some(Proto::List(items)) => items
                    .iter()
                    .map(|i| Ok(value(schema, inner, i, true)?.unwrap_or(Value::Null)))
                    .collect::<Result<Vec<_>>>()?,
                _ => Vec::new(),
            };
            Some(Value::Array(items))
        }
        (ty, v) => return Err(format!("{v:?} where {ty:?} was expected")),
    })
}

fn special(schema: &Schema, s: Special, m: &DynamicMessage, keep: bool) -> Result<Option<Value>> {
    // Only what the message carries: an unset field reads as its default.
    let field = |n: u32| {
        m.has_field_by_number(n)
            .then(|| m.get_field_by_number(n).map(|v| v.into_owned()))
            .flatten()
    };
    let raw_json = |what: &str| -> Result<Option<Value>> {
        match field(1) {
            Some(Proto::Bytes(b)) if !b.is_empty() => serde_json::from_slice(&b)
                .map(Some)
                .map_err(|e| format!("{what}: {e}")),
            _ => Ok(keep.then_some(Value::Null)),
        }
    };
    Ok(match s {
        Special::Time | Special::MicroTime => {
            let seconds = match field(1) {
                Some(Proto::I64(s)) => s,
                _ => 0,
            };
            let nanos = match field(2) {
                Some(Proto::I32(n)) if s == Special::MicroTime => n,
                _ => 0,
            };
            // An empty message is the zero time, null in JSON.
            if field(1).is_none() && field(2).is_none() {
                return Ok(keep.then_some(Value::Null));
            }
            let ts = jiff::Timestamp::new(seconds, nanos)
                .map_err(|e| format!("time {seconds}s {nanos}ns: {e}"))?;
            let text = if s == Special::MicroTime {
                ts.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
            } else {
                ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
            };
            Some(json!(text))
        }
        Special::Quantity => match field(1) {
            Some(Proto::String(q)) => Some(json!(q)),
            _ => Some(json!("0")),
        },
        Special::IntOrString => {
            let kind = match field(1) {
                Some(Proto::I64(t)) => t,
                _ => 0,
            };
            match (kind, field(2), field(3)) {
                (1, _, Some(Proto::String(s))) => Some(json!(s)),
                (1, _, _) => Some(json!("")),
                (_, Some(Proto::I32(n)), _) => Some(json!(n)),
                _ => Some(json!(0)),
            }
        }
        Special::FieldsV1 => raw_json("fieldsV1")?,
        Special::RawExtension | Special::Json => raw_json("raw")?,
        Special::PropsOrBool => {
            let props = match field(2) {
                Some(Proto::Message(p)) => Some(props_object(schema, &p)?),
                _ => None,
            };
            match (props, field(1)) {
                (Some(p), _) => Some(Value::Object(p)),
                (None, Some(Proto::Bool(b))) => Some(json!(b)),
                (None, _) => Some(json!(false)),
            }
        }
        Special::PropsOrArray | Special::PropsOrStringArray => {
            if let Some(Proto::Message(p)) = field(1) {
                return Ok(Some(Value::Object(props_object(schema, &p)?)));
            }
            let items = match field(2) {
                Some(Proto::List(items)) => items,
                _ => Vec::new(),
            };
            let items = items
                .into_iter()
                .map(|i| match i {
                    Proto::Message(p) => props_object(schema, &p).map(Value::Object),
                    Proto::String(s) => Ok(json!(s)),
                    other => Err(format!("{other:?} in a schema list")),
                })
                .collect::<Result<Vec<_>>>()?;
            (keep || !items.is_empty()).then_some(Value::Array(items))
        }
    })
}

fn props_object(schema: &Schema, m: &DynamicMessage) -> Result<Map<String, Value>> {
    let id = schema
        .by_name("apiextensions/v1.JSONSchemaProps")
        .ok_or("no JSONSchemaProps in the table")?;
    object(schema, id, m)
}
