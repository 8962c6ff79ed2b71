//! JSON as kube-apiserver writes it. Go's `encoding/json` writes a struct's fields in declaration
//! order (`kind`, `apiVersion`, `metadata`, then the type's own), maps with sorted keys, escapes
//! `<`, `>`, `&`, U+2028 and U+2029, and the API server ends each document with a newline. Custom
//! resources are unstructured maps, so their keys are sorted at every level, which is also what
//! serde_json's sorted `Map` gives.
//!
//! The field order of every served built-in type is a fact of the Go types: `go_field_order.json`
//! is generated from them by `tools/control-plane/fieldorder` (regenerate with
//! `cargo run -p control-plane --bin control-plane -- field-order`). A document's type is found
//! from its `apiVersion` and `kind`, and nested fields follow the declared field types; keys the Go
//! type does not declare come after the declared ones, sorted.

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Map, Number, Value};

/// How a value of some field is written.
#[derive(Debug)]
enum Ty {
    /// Anything without declared structure: maps sorted, recursively.
    Leaf,
    /// A `runtime.RawExtension`: an embedded object written as its own kind.
    Dynamic,
    Struct(u32),
    List(Box<Ty>),
    Map(Box<Ty>),
}

#[derive(Debug)]
struct Field {
    name: Box<str>,
    /// Position in Go's order.
    pos: u32,
    ty: Ty,
}

#[derive(Debug)]
struct Struct {
    /// Sorted by name, for lookups by key.
    fields: Vec<Field>,
}

#[derive(Debug)]
struct Types {
    /// apiVersion -> kind -> struct.
    kinds: HashMap<String, HashMap<String, u32>>,
    structs: Vec<Struct>,
    version_info: Option<u32>,
    object_meta: Option<u32>,
    managed_fields_entry: Option<u32>,
}

/// The generated table; `pub(crate)` so a test can compare it with a fresh generation.
pub(crate) const FIELD_ORDER_JSON: &str = include_str!("go_field_order.json");

#[derive(serde::Deserialize)]
struct FieldOrderFile {
    kinds: std::collections::BTreeMap<String, String>,
    types: std::collections::BTreeMap<String, Vec<(String, String)>>,
}

static TYPES: LazyLock<Types> = LazyLock::new(|| load(FIELD_ORDER_JSON));

fn load(json: &str) -> Types {
    // The file is generated and compiled in; a broken one leaves every document sorted.
    let file: FieldOrderFile = match serde_json::from_str(json) {
        Ok(f) => f,
        Err(e) => {
            tracing::error!(%e, "go_field_order.json does not parse");
            return Types {
                kinds: HashMap::new(),
                structs: Vec::new(),
                version_info: None,
                object_meta: None,
                managed_fields_entry: None,
            };
        }
    };
    let ids: HashMap<&str, u32> = file
        .types
        .keys()
        .enumerate()
        .map(|(i, name)| (name.as_str(), i as u32))
        .collect();
    let parse = |r: &str| parse_ty(r, &ids);
    let structs = file
        .types
        .values()
        .map(|fields| {
            let mut fields: Vec<Field> = fields
                .iter()
                .enumerate()
                .map(|(pos, (name, ty))| Field {
                    name: name.as_str().into(),
                    pos: pos as u32,
                    ty: parse(ty),
                })
                .collect();
            fields.sort_by(|a, b| a.name.cmp(&b.name));
            Struct { fields }
        })
        .collect();
    let mut kinds: HashMap<String, HashMap<String, u32>> = HashMap::new();
    let mut version_info = None;
    for (key, ty) in &file.kinds {
        let Some(&id) = ids.get(ty.as_str()) else {
            continue;
        };
        match key.rsplit_once('/') {
            Some((api_version, kind)) => {
                kinds
                    .entry(api_version.to_string())
                    .or_default()
                    .insert(kind.to_string(), id);
            }
            None if key == "version.Info" => version_info = Some(id),
            None => {}
        }
    }
    Types {
        kinds,
        structs,
        version_info,
        object_meta: ids.get("meta/v1.ObjectMeta").copied(),
        managed_fields_entry: ids.get("meta/v1.ManagedFieldsEntry").copied(),
    }
}

fn parse_ty(r: &str, ids: &HashMap<&str, u32>) -> Ty {
    if let Some(inner) = r.strip_prefix("[]") {
        Ty::List(Box::new(parse_ty(inner, ids)))
    } else if let Some(inner) = r.strip_prefix("{}") {
        Ty::Map(Box::new(parse_ty(inner, ids)))
    } else if r == "*" {
        Ty::Dynamic
    } else {
        ids.get(r).map_or(Ty::Leaf, |&id| Ty::Struct(id))
    }
}

/// A whole response document: Go's order and the trailing newline.
pub(crate) fn document(v: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    write(&mut out, v);
    out.push(b'\n');
    out
}

/// A value in Go's order, without the newline (a watch event's object).
pub(crate) fn to_vec(v: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    write(&mut out, v);
    out
}

/// The `/version` answer: kube-apiserver indents it and adds no newline.
pub(crate) fn version_document(v: &Value) -> Vec<u8> {
    let mut compact = Vec::with_capacity(512);
    match (&TYPES.version_info, v) {
        (Some(id), Value::Object(map)) => write_struct(&mut compact, map, *id),
        _ => write(&mut compact, v),
    }
    indent(&compact)
}

/// An object as kube-apiserver quotes it in a patch's error: the unstructured map Go writes (keys
/// sorted), its `metadata` written as ObjectMeta when it decodes as one (`typed_metadata`), and
/// otherwise a map whose managedFields entries are still ManagedFieldsEntry structs.
pub(crate) fn quoted_object(v: &Value, typed_metadata: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    let Value::Object(map) = v else {
        write_as(&mut out, v, &Ty::Leaf);
        return out;
    };
    write_members(&mut out, map.iter(), |out, k, x| match (k, x) {
        ("metadata", Value::Object(meta)) => match TYPES.object_meta {
            Some(id) if typed_metadata => write_struct(out, meta, id),
            // Metadata ObjectMeta cannot hold: a sorted map but for its managedFields entries.
            _ => write_members(out, meta.iter(), |out, k, v| {
                match (k, TYPES.managed_fields_entry) {
                    ("managedFields", Some(id)) => {
                        write_as(out, v, &Ty::List(Box::new(Ty::Struct(id))))
                    }
                    _ => write_as(out, v, &Ty::Leaf),
                }
            }),
        },
        _ => write_as(out, x, &Ty::Leaf),
    });
    out
}

/// `{`, each member's key and its value as `value` writes it, in the order given, `}`.
fn write_members<'a>(
    out: &mut Vec<u8>,
    members: impl Iterator<Item = (&'a String, &'a Value)>,
    mut value: impl FnMut(&mut Vec<u8>, &str, &Value),
) {
    out.push(b'{');
    for (i, (k, v)) in members.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        value(out, k, v);
    }
    out.push(b'}');
}

fn write(out: &mut Vec<u8>, v: &Value) {
    write_as(out, v, &Ty::Dynamic);
}

/// The struct a document (or an embedded object) is, by its apiVersion and kind. Unversioned
/// types (`APIVersions`) carry only a kind and are registered under `v1`.
fn kind_of(map: &Map<String, Value>) -> Option<u32> {
    let kind = map.get("kind")?.as_str()?;
    let api_version = match map.get("apiVersion") {
        Some(v) => v.as_str()?,
        None => "v1",
    };
    // meta.k8s.io/v1beta1's Table and PartialObjectMetadata are v1's types under another name.
    let api_version = match api_version {
        "meta.k8s.io/v1beta1" => "meta.k8s.io/v1",
        v => v,
    };
    TYPES.kinds.get(api_version)?.get(kind).copied()
}

fn write_as(out: &mut Vec<u8>, v: &Value, ty: &Ty) {
    match (ty, v) {
        (Ty::Struct(id), Value::Object(map)) => write_struct(out, map, *id),
        (Ty::Dynamic, Value::Object(map)) => match kind_of(map) {
            Some(id) => write_struct(out, map, id),
            None => write_map(out, map, &Ty::Leaf),
        },
        (Ty::Map(inner), Value::Object(map)) => write_map(out, map, inner),
        (Ty::List(inner), Value::Array(items)) => write_array(out, items, inner),
        // JSONSchemaPropsOrArray: one schema or a list of them.
        (Ty::Struct(_), Value::Array(items)) => write_array(out, items, ty),
        (_, Value::Object(map)) => write_map(out, map, &Ty::Leaf),
        (_, Value::Array(items)) => write_array(out, items, &Ty::Leaf),
        (_, Value::String(s)) => write_str(out, s),
        (_, Value::Number(n)) => write_number(out, n),
        (_, Value::Bool(true)) => out.extend_from_slice(b"true"),
        (_, Value::Bool(false)) => out.extend_from_slice(b"false"),
        (_, Value::Null) => out.extend_from_slice(b"null"),
    }
}

fn write_array(out: &mut Vec<u8>, items: &[Value], ty: &Ty) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_as(out, item, ty);
    }
    out.push(b']');
}

/// A Go map: keys sorted (serde_json's `Map` already iterates them so).
fn write_map(out: &mut Vec<u8>, map: &Map<String, Value>, ty: &Ty) {
    let value = |out: &mut Vec<u8>, _: &str, v: &Value| write_as(out, v, ty);
    // A managedFields tree keeps structured-merge-diff's order of list keys (numbers by value).
    match crate::semantics::apply::fields_v1_order(map) {
        Some(keys) => write_members(out, keys.into_iter().map(|k| (k, &map[k])), value),
        None => write_members(out, map.iter(), value),
    }
}

/// Objects with more keys than this sort their entries on the heap.
const INLINE_KEYS: usize = 40;

fn write_struct(out: &mut Vec<u8>, map: &Map<String, Value>, id: u32) {
    let Some(st) = TYPES.structs.get(id as usize) else {
        return write_map(out, map, &Ty::Leaf);
    };
    if map.len() <= INLINE_KEYS {
        let mut buf: [Option<Entry<'_>>; INLINE_KEYS] = [None; INLINE_KEYS];
        for (i, kv) in map.iter().enumerate() {
            buf[i] = Some(entry(st, i, kv));
        }
        let entries = &mut buf[..map.len()];
        entries.sort_unstable_by_key(|e| e.map_or(u32::MAX, |e| e.0));
        write_entries(out, entries.iter().flatten());
    } else {
        let mut entries: Vec<Entry<'_>> = map
            .iter()
            .enumerate()
            .map(|(i, kv)| entry(st, i, kv))
            .collect();
        entries.sort_unstable_by_key(|e| e.0);
        write_entries(out, entries.iter());
    }
}

type Entry<'a> = (u32, &'a String, &'a Value, &'a Ty);

/// A key's place: its field's position in Go's order, or after every declared field (keys Go
/// does not declare follow in sorted order, as `map` iterates them).
fn entry<'a>(st: &'a Struct, i: usize, (k, v): (&'a String, &'a Value)) -> Entry<'a> {
    let known = st.fields.len() as u32;
    match st.fields.binary_search_by(|f| (*f.name).cmp(k.as_str())) {
        Ok(f) => (st.fields[f].pos, k, v, &st.fields[f].ty),
        Err(_) => (known + i as u32, k, v, &Ty::Leaf),
    }
}

fn write_entries<'a>(out: &mut Vec<u8>, entries: impl Iterator<Item = &'a Entry<'a>>) {
    out.push(b'{');
    for (i, (_, k, v, ty)) in entries.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_str(out, k);
        out.push(b':');
        write_as(out, v, ty);
    }
    out.push(b'}');
}

/// Bytes Go's encoder escapes: control characters, the quote, the backslash, the HTML-sensitive
/// `<`, `>`, `&`, and 0xE2, the first byte of U+2028 and U+2029 (checked further when met).
static ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t[b'<' as usize] = true;
    t[b'>' as usize] = true;
    t[b'&' as usize] = true;
    t[0xE2] = true;
    t
};

fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if !ESCAPE[b as usize] {
            i += 1;
            continue;
        }
        let escaped: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0C => b"\\f",
            0xE2 => match bytes.get(i + 1..i + 3) {
                Some([0x80, 0xA8]) => b"\\u2028",
                Some([0x80, 0xA9]) => b"\\u2029",
                _ => {
                    i += 1;
                    continue;
                }
            },
            _ => &[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 0xF) as usize],
            ],
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escaped);
        i += if b == 0xE2 { 3 } else { 1 };
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

fn write_number(out: &mut Vec<u8>, n: &Number) {
    use std::io::Write;
    if let Some(u) = n.as_u64() {
        let _ = write!(out, "{u}");
    } else if let Some(i) = n.as_i64() {
        let _ = write!(out, "{i}");
    } else if let Some(f) = n.as_f64() {
        write_float(out, f);
    }
}

/// Go's float64 format: shortest digits, plain between 1e-6 and 1e21 (so `1.0` is `1`), else an
/// exponent with its sign (`1e+21`, `1e-7`).
fn write_float(out: &mut Vec<u8>, f: f64) {
    use std::io::Write;
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => {
                let _ = write!(out, "{mantissa}e+{exp}");
            }
            _ => out.extend_from_slice(s.as_bytes()),
        }
    } else {
        let _ = write!(out, "{f}");
    }
}

/// Go's `json.Indent` with two spaces: `"key": value`, empty `{}` and `[]` kept on one line.
pub(crate) fn indent(compact: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(compact.len() * 2);
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    let newline = |out: &mut Vec<u8>, depth: usize| {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', depth * 2));
    };
    let mut i = 0;
    while i < compact.len() {
        let c = compact[i];
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_str = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'"' => {
                in_str = true;
                out.push(c);
            }
            b'{' | b'[' => {
                out.push(c);
                let close = if c == b'{' { b'}' } else { b']' };
                if compact.get(i + 1) == Some(&close) {
                    out.push(close);
                    i += 1;
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            b',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            b':' => out.extend_from_slice(b": "),
            _ => out.push(c),
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn s(v: &Value) -> String {
        String::from_utf8(to_vec(v)).unwrap_or_default()
    }

    #[test]
    fn built_in_kinds_follow_go_declaration_order() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"z": "1", "a": "2"},
            "metadata": {"uid": "u", "name": "n", "namespace": "ns", "labels": {"b": "1", "a": "2"}},
            "zz": 1, "aa": 2});
        assert_eq!(
            s(&cm),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"n","namespace":"ns","uid":"u","labels":{"a":"2","b":"1"}},"data":{"a":"2","z":"1"},"aa":2,"zz":1}"#
        );
    }

    #[test]
    fn custom_resources_and_unknown_kinds_are_sorted() {
        let cr = json!({"kind": "Widget", "apiVersion": "example.com/v1", "spec": {"b": 1, "a": 2}, "metadata": {"uid": "u", "name": "n"}});
        assert_eq!(
            s(&cr),
            r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"n","uid":"u"},"spec":{"a":2,"b":1}}"#
        );
    }

    #[test]
    fn a_quoted_patch_object_is_sorted_but_for_typed_metadata_and_managed_fields_entries() {
        let obj = json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"b": "<", "a": "1"},
            "metadata": {"uid": "u", "name": "n", "labels": {"z": "1", "a": "2"},
                "managedFields": [{"time": "t", "manager": "m", "operation": "Update"}]}});
        let quoted = |typed| String::from_utf8(quoted_object(&obj, typed)).expect("utf-8");
        assert_eq!(
            quoted(true),
            r#"{"apiVersion":"v1","data":{"a":"1","b":"\u003c"},"kind":"ConfigMap","metadata":{"name":"n","uid":"u","labels":{"a":"2","z":"1"},"managedFields":[{"manager":"m","operation":"Update","time":"t"}]}}"#
        );
        assert_eq!(
            quoted(false),
            r#"{"apiVersion":"v1","data":{"a":"1","b":"\u003c"},"kind":"ConfigMap","metadata":{"labels":{"a":"2","z":"1"},"managedFields":[{"manager":"m","operation":"Update","time":"t"}],"name":"n","uid":"u"}}"#
        );
    }

    #[test]
    fn lists_tables_and_status_follow_their_types() {
        let list = json!({"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "5", "continue": "c"},
            "items": [{"spec": {"containers": [{"name": "c", "image": "i"}]}, "metadata": {"name": "p"}}]});
        assert_eq!(
            s(&list),
            r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"5","continue":"c"},"items":[{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}]}"#
        );
        let status = json!({"kind": "Status", "apiVersion": "v1", "code": 404, "details": {"kind": "configmaps", "name": "x"},
            "message": "m", "metadata": {}, "reason": "NotFound", "status": "Failure"});
        assert_eq!(
            s(&status),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"m","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404}"#
        );
        let table = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "1"},
            "columnDefinitions": [], "rows": [{"cells": ["a"], "object": {"kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1", "metadata": {"uid": "u", "name": "a"}}}]});
        assert_eq!(
            s(&table),
            r#"{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"1"},"columnDefinitions":[],"rows":[{"cells":["a"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","uid":"u"}}}]}"#
        );
    }

    #[test]
    fn strings_and_numbers_are_written_as_go_writes_them() {
        let v = json!([
            "<a&b>",
            "\u{2028}\u{2029}é\u{1}\u{8}\u{c}\"\\",
            1.0,
            1.5,
            1e21,
            1e-7,
            -3,
            18446744073709551615u64
        ]);
        assert_eq!(
            s(&v),
            r#"["\u003ca\u0026b\u003e","\u2028\u2029é\u0001\b\f\"\\",1,1.5,1e+21,1e-7,-3,18446744073709551615]"#
        );
    }

    #[test]
    fn documents_end_in_a_newline_and_version_is_indented() {
        assert_eq!(document(&json!({})), b"{}\n");
        let v = version_document(&json!({"minor": "37", "major": "1", "x": []}));
        assert_eq!(
            String::from_utf8(v).unwrap_or_default(),
            "{\n  \"major\": \"1\",\n  \"minor\": \"37\",\n  \"x\": []\n}"
        );
    }
}
