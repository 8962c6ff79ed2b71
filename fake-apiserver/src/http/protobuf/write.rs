//! JSON to protobuf: a stored object (JSON as kube-apiserver serves it) as the message Go's
//! generated marshallers write for it. A value field (a Go string, number or struct) is written
//! even when the JSON leaves it out, as its zero value; a pointer only when the JSON has it; a
//! slice or a map only with entries, a map's in key order.

use base64::Engine;
use prost_reflect::{DynamicMessage, MessageDescriptor, Value as Proto};
use serde_json::{Value, json};

use super::schema::{Scalar, Schema, Special, Ty};

/// Why a JSON value does not fit its Go type (a stored object always fits; a request's JSON
/// may not).
pub(super) type Result<T> = std::result::Result<T, String>;

/// Struct `id` from its JSON object (`None`: absent, the zero value).
pub(super) fn message(schema: &Schema, id: usize, json: Option<&Value>) -> Result<DynamicMessage> {
    let desc = schema.message(id);
    let mut msg = DynamicMessage::new(desc.clone());
    let object = match json {
        None => None,
        Some(Value::Object(o)) => Some(o),
        Some(other) => return Err(format!("{} is not an object", kind_of(other))),
    };
    for f in &schema.structs[id].fields {
        let v = if f.json.is_empty() {
            json
        } else {
            object.and_then(|o| o.get(&*f.json))
        };
        // Go decodes a JSON null as the zero value, or nil for a pointer, slice or map.
        let v = v.filter(|v| !v.is_null());
        let value = value(schema, &f.ty, v)
            .map_err(|e| format!("{}.{}: {e}", schema.structs[id].name, f.json))?;
        if let Some(value) = value {
            set(&mut msg, desc, f.number, value)?;
        }
    }
    Ok(msg)
}

fn set(
    msg: &mut DynamicMessage,
    desc: &MessageDescriptor,
    number: u32,
    value: Proto,
) -> Result<()> {
    let field = desc
        .get_field(number)
        .ok_or_else(|| format!("no field {number} in {}", desc.name()))?;
    msg.try_set_field(&field, value)
        .map_err(|e| format!("field {number} of {}: {e}", desc.name()))
}

/// A field's value, or `None` when Go would not write it.
fn value(schema: &Schema, ty: &Ty, v: Option<&Value>) -> Result<Option<Proto>> {
    Ok(match ty {
        Ty::Pointer(inner) => match v {
            None => None,
            Some(_) => value(schema, inner, v)?,
        },
        // A nil `[]byte` is not written.
        Ty::Scalar(Scalar::Bytes) if v.is_none() => None,
        Ty::Scalar(s) => Some(scalar(*s, v)?),
        Ty::Struct(id) => Some(Proto::Message(message(schema, *id, v)?)),
        Ty::Special(s) => Some(Proto::Message(special(schema, *s, v)?)),
        Ty::List(inner) => match v {
            None => None,
            Some(Value::Array(items)) if items.is_empty() => None,
            Some(Value::Array(items)) => Some(Proto::List(list(schema, inner, items)?)),
            Some(other) => return Err(format!("{} is not a list", kind_of(other))),
        },
        Ty::Map(inner) => match v {
            None => None,
            Some(Value::Object(m)) if m.is_empty() => None,
            Some(Value::Object(m)) => {
                let entry = schema.wrapper(ty);
                let mut entries = Vec::with_capacity(m.len());
                // serde_json's map is sorted by key, as Go sorts a map's keys before writing.
                for (k, val) in m {
                    let mut e = DynamicMessage::new(entry.clone());
                    set(&mut e, entry, 1, Proto::String(k.clone()))?;
                    let val = Some(val).filter(|v| !v.is_null());
                    if let Some(val) = value(schema, inner, val)? {
                        set(&mut e, entry, 2, val)?;
                    }
                    entries.push(Proto::Message(e));
                }
                Some(Proto::List(entries))
            }
            Some(other) => return Err(format!("{} is not a map", kind_of(other))),
        },
        Ty::Items(inner) => match v {
            None => None,
            Some(Value::Array(items)) => {
                let desc = schema.wrapper(ty);
                let mut msg = DynamicMessage::new(desc.clone());
                if !items.is_empty() {
                    set(&mut msg, desc, 1, Proto::List(list(schema, inner, items)?))?;
                }
                Some(Proto::Message(msg))
            }
            Some(other) => return Err(format!("{} is not a list", kind_of(other))),
        },
    })
}

fn list(schema: &Schema, inner: &Ty, items: &[Value]) -> Result<Vec<Proto>> {
    items
        .iter()
        .map(|item| {
            let item = Some(item).filter(|v| !v.is_null());
            // Only a `[]byte` entry can be nil, and a nil entry is still written, empty.
            Ok(match value(schema, inner, item)? {
                Some(v) => v,
                None => scalar(Scalar::Bytes, None)?,
            })
        })
        .collect()
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a bool",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn scalar(s: Scalar, v: Option<&Value>) -> Result<Proto> {
    let wrong = |v: &Value| format!("{} where Go has {s:?}", kind_of(v));
    Ok(match (s, v) {
        (Scalar::String, None) => Proto::String(String::new()),
        (Scalar::String, Some(Value::String(x))) => Proto::String(x.clone()),
        (Scalar::Bool, None) => Proto::Bool(false),
        (Scalar::Bool, Some(Value::Bool(b))) => Proto::Bool(*b),
        (Scalar::Int32, None) => Proto::I32(0),
        (Scalar::Int64, None) => Proto::I64(0),
        (Scalar::Uint32, None) => Proto::U32(0),
        (Scalar::Uint64, None) => Proto::U64(0),
        (Scalar::Float64, None) => Proto::F64(0.0),
        (Scalar::Bytes, None) => Proto::Bytes(Default::default()),
        (Scalar::Bytes, Some(v)) => Proto::Bytes(bytes(v)?.into()),
        (Scalar::Int32, Some(v @ Value::Number(n))) => Proto::I32(
            n.as_i64()
                .and_then(|i| i32::try_from(i).ok())
                .ok_or_else(|| wrong(v))?,
        ),
        (Scalar::Int64, Some(v @ Value::Number(n))) => {
            Proto::I64(n.as_i64().ok_or_else(|| wrong(v))?)
        }
        (Scalar::Uint32, Some(v @ Value::Number(n))) => Proto::U32(
            n.as_u64()
                .and_then(|i| u32::try_from(i).ok())
                .ok_or_else(|| wrong(v))?,
        ),
        (Scalar::Uint64, Some(v @ Value::Number(n))) => {
            Proto::U64(n.as_u64().ok_or_else(|| wrong(v))?)
        }
        (Scalar::Float64, Some(v @ Value::Number(n))) => {
            Proto::F64(n.as_f64().ok_or_else(|| wrong(v))?)
        }
        (_, Some(v)) => return Err(wrong(v)),
    })
}

fn bytes(v: &Value) -> Result<Vec<u8>> {
    let s = v
        .as_str()
        .ok_or_else(|| format!("{} where Go has []byte", kind_of(v)))?;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| format!("[]byte: {e}"))
}

/// The JSON of an embedded object or value as its raw bytes: as the JSON answer writes it.
fn raw(v: &Value) -> Vec<u8> {
    crate::http::encode::to_vec(v)
}

fn special(schema: &Schema, s: Special, v: Option<&Value>) -> Result<DynamicMessage> {
    let id = schema.special(s);
    let desc = schema.message(id);
    let with_raw = |raw: Option<Vec<u8>>| -> Result<DynamicMessage> {
        let mut msg = DynamicMessage::new(desc.clone());
        if let Some(raw) = raw {
            set(&mut msg, desc, 1, Proto::Bytes(raw.into()))?;
        }
        Ok(msg)
    };
    match s {
        // A zero time writes nothing inside (its marshaller checks IsZero); a set one its
        // seconds and, for MicroTime, nanoseconds.
        Special::Time | Special::MicroTime => match v {
            None => Ok(DynamicMessage::new(desc.clone())),
            Some(Value::String(t)) => {
                let ts: jiff::Timestamp = t.parse().map_err(|e| format!("time {t:?}: {e}"))?;
                let nanos = if s == Special::MicroTime {
                    ts.subsec_nanosecond()
                } else {
                    0
                };
                message(
                    schema,
                    id,
                    Some(&json!({"seconds": ts.as_second(), "nanos": nanos})),
                )
            }
            Some(other) => Err(format!("{} where Go has a time", kind_of(other))),
        },
        // Its canonical string; the zero Quantity is "0".
        Special::Quantity => {
            let text = match v {
                None => "0".to_string(),
                Some(Value::String(q)) => q.clone(),
                Some(Value::Number(n)) => n.to_string(),
                Some(other) => return Err(format!("{} where Go has a quantity", kind_of(other))),
            };
            message(schema, id, Some(&json!({ "string": text })))
        }
        Special::IntOrString => {
            let fields = match v {
                None => json!({}),
                Some(Value::Number(n)) => json!({"type": 0, "intVal": n}),
                Some(Value::String(x)) => json!({"type": 1, "strVal": x}),
                Some(other) => {
                    return Err(format!("{} where Go has an IntOrString", kind_of(other)));
                }
            };
            message(schema, id, Some(&fields))
        }
        Special::FieldsV1 | Special::RawExtension | Special::Json => with_raw(v.map(raw)),
        Special::PropsOrBool => {
            let mut msg = DynamicMessage::new(desc.clone());
            let (allows, schema_json) = match v {
                None => (false, None),
                Some(Value::Bool(b)) => (*b, None),
                Some(o @ Value::Object(_)) => (true, Some(o)),
                Some(other) => {
                    return Err(format!(
                        "{} where Go has a bool or a schema",
                        kind_of(other)
                    ));
                }
            };
            set(&mut msg, desc, 1, Proto::Bool(allows))?;
            if let Some(props) = schema_json {
                set(
                    &mut msg,
                    desc,
                    2,
                    Proto::Message(props_message(schema, props)?),
                )?;
            }
            Ok(msg)
        }
        Special::PropsOrArray | Special::PropsOrStringArray => {
            let mut msg = DynamicMessage::new(desc.clone());
            match v {
                None => {}
                Some(o @ Value::Object(_)) => {
                    set(&mut msg, desc, 1, Proto::Message(props_message(schema, o)?))?;
                }
                Some(Value::Array(items)) if !items.is_empty() => {
                    let entries = if s == Special::PropsOrArray {
                        items
                            .iter()
                            .map(|i| props_message(schema, i).map(Proto::Message))
                            .collect::<Result<Vec<_>>>()?
                    } else {
                        items
                            .iter()
                            .map(|i| scalar(Scalar::String, Some(i)))
                            .collect::<Result<Vec<_>>>()?
                    };
                    set(&mut msg, desc, 2, Proto::List(entries))?;
                }
                Some(Value::Array(_)) => {}
                Some(other) => {
                    return Err(format!(
                        "{} where Go has a schema or a list",
                        kind_of(other)
                    ));
                }
            }
            Ok(msg)
        }
    }
}

fn props_message(schema: &Schema, v: &Value) -> Result<DynamicMessage> {
    let id = schema
        .by_name("apiextensions/v1.JSONSchemaProps")
        .ok_or("no JSONSchemaProps in the table")?;
    message(schema, id, Some(v))
}
