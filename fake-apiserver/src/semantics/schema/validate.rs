//! OpenAPI keyword validation (kube-openapi's wording, converted to field errors the way
//! apiextensions-apiserver does) and `x-kubernetes-list-type` checks.

use serde_json::{Map, Value};

use super::{ListType, Node, Ty, child_path};
use crate::error::{CauseReason, FieldCause};

/// The JSON type name of a value, as kube-openapi reports it.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Formats a float like Go's `%v`.
pub(super) fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    if f == 0.0 {
        return "0".into();
    }
    let sci = format!("{f:e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mant}e{sign}{:02}", exp.abs());
    }
    format!("{f}")
}

/// Formats a bound: as an integer when the validated value is an integer and the bound is
/// integral (kube-openapi's `*Int` errors), else like Go's `%v` of a float.
fn bound(b: f64, int_value: bool) -> String {
    if int_value && b.fract() == 0.0 && b.abs() < 9.007_199_254_740_992e15 {
        format!("{}", b as i64)
    } else {
        go_float(b)
    }
}

/// Formats a bad value the way `field.Error` prints it.
pub(super) fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "\"null\"".into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if !(n.is_i64() || n.is_u64()) => go_float(f),
            _ => n.to_string(),
        },
        other => other.to_string(),
    }
}

fn invalid_raw(field: &str, value: String, detail: &str, reason: CauseReason) -> FieldCause {
    FieldCause {
        reason,
        field: field.to_string(),
        message: format!("Invalid value: {value}: {detail}"),
    }
}

fn type_error(path: &str, want: &str, got: &str) -> FieldCause {
    invalid_raw(
        path,
        format!("{got:?}"),
        &format!("{path} in body must be of type {want}: {got:?}"),
        CauseReason::TypeInvalid,
    )
}

fn invalid(path: &str, v: &Value, detail: String) -> FieldCause {
    invalid_raw(path, go_value(v), &detail, CauseReason::Invalid)
}

fn too_many(path: &str, actual: usize, max: u64) -> FieldCause {
    let unit = if max == 1 { "item" } else { "items" };
    FieldCause {
        reason: CauseReason::TooMany,
        field: path.to_string(),
        message: format!("Too many: {actual}: must have at most {max} {unit}"),
    }
}

fn type_matches(node: &Node, v: &Value) -> Result<(), &'static str> {
    let got = json_type(v);
    if node.int_or_string {
        return match got {
            "integer" | "string" => Ok(()),
            _ => Err("integer,string"),
        };
    }
    let Some(ty) = node.ty else { return Ok(()) };
    let ok = match ty {
        Ty::Number => matches!(got, "number" | "integer"),
        _ => got == ty.name(),
    };
    if ok { Ok(()) } else { Err(ty.name()) }
}

/// Validates the OpenAPI keywords of `node` against `v`, recursively. `old` is the
/// correlated previous value on updates: unchanged values are not re-validated (ratcheting).
pub(super) fn schema(
    node: &Node,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    root: bool,
    errs: &mut Vec<FieldCause>,
) {
    if (v.is_null() && node.nullable) || old == Some(v) {
        return;
    }
    if let Err(want) = type_matches(node, v) {
        errs.push(type_error(path, want, json_type(v)));
        // kube-openapi's format check of an integer also fails a fraction, with a nil path.
        if want == "integer" && json_type(v) == "number" && node.format.is_none() {
            errs.push(FieldCause {
                reason: CauseReason::Invalid,
                field: "<nil>".into(),
                message: format!(
                    "Invalid value: \"\": Checked value must be of type integer (default format) in {path}"
                ),
            });
        }
        // kube-openapi checks anyOf/oneOf/allOf/not even on a value of the wrong type.
        composition(node, v, path, errs);
        return;
    }
    composition(node, v, path, errs);
    if let Some(en) = &node.enumeration
        && !en.contains(v)
    {
        let supported: Vec<String> = en
            .iter()
            .map(|e| match e {
                Value::String(s) => format!("{s:?}"),
                other => format!("{:?}", other.to_string()),
            })
            .collect();
        errs.push(FieldCause {
            reason: CauseReason::NotSupported,
            field: path.to_string(),
            message: format!(
                "Unsupported value: {}: supported values: {}",
                go_value(v),
                supported.join(", ")
            ),
        });
    }
    match v {
        Value::String(s) => string(node, s, v, path, errs),
        Value::Number(n) => number(node, n, v, path, errs),
        Value::Array(items) => array(node, items, old, path, errs),
        Value::Object(m) => object(node, m, old, path, root, errs),
        _ => {}
    }
}

/// A failed `anyOf`/`oneOf`/`allOf`/`not`: kube-openapi reports it with no field path.
fn composite(path: &str, what: &str) -> FieldCause {
    FieldCause {
        reason: CauseReason::Invalid,
        field: "<nil>".into(),
        message: format!("Invalid value: \"\": \"{path}\" {what}"),
    }
}

/// The value validations `anyOf`, `oneOf`, `allOf` and `not`, in kube-openapi's order. A failed
/// `anyOf` or `oneOf` also reports the causes of one failed branch (kube-openapi picks the one
/// with the most passing checks; the first one here, which is the same for the usual
/// int-or-string `anyOf: [{type: integer}, {type: string}]`).
fn composition(node: &Node, v: &Value, path: &str, errs: &mut Vec<FieldCause>) {
    let run = |branch: &Node| {
        let mut e = Vec::new();
        schema(branch, v, None, path, false, &mut e);
        e
    };
    if !node.any_of.is_empty() {
        let results: Vec<Vec<FieldCause>> = node.any_of.iter().map(run).collect();
        if !results.iter().any(Vec::is_empty) {
            errs.push(composite(path, "must validate at least one schema (anyOf)"));
            errs.extend(results.into_iter().next().unwrap_or_default());
        }
    }
    if !node.one_of.is_empty() {
        let results: Vec<Vec<FieldCause>> = node.one_of.iter().map(run).collect();
        match results.iter().filter(|r| r.is_empty()).count() {
            1 => {}
            0 => {
                errs.push(composite(
                    path,
                    "must validate one and only one schema (oneOf). Found none valid",
                ));
                errs.extend(results.into_iter().next().unwrap_or_default());
            }
            n => errs.push(composite(
                path,
                &format!(
                    "must validate one and only one schema (oneOf). Found {n} valid alternatives"
                ),
            )),
        }
    }
    if !node.all_of.is_empty() {
        let mut valid = 0;
        for branch in &node.all_of {
            let e = run(branch);
            valid += usize::from(e.is_empty());
            errs.extend(e);
        }
        if valid == 0 {
            errs.push(composite(
                path,
                "must validate all the schemas (allOf). None validated",
            ));
        } else if valid < node.all_of.len() {
            errs.push(composite(path, "must validate all the schemas (allOf)"));
        }
    }
    if let Some(not) = &node.not
        && run(not).is_empty()
    {
        errs.push(composite(path, "must not validate the schema (not)"));
    }
}

fn string(node: &Node, s: &str, v: &Value, path: &str, errs: &mut Vec<FieldCause>) {
    let len = s.chars().count() as u64;
    if let Some(max) = node.max_length
        && len > max
    {
        let unit = if max == 1 { "byte" } else { "bytes" };
        errs.push(FieldCause {
            reason: CauseReason::TooLong,
            field: path.to_string(),
            message: format!("Too long: may not be more than {max} {unit}"),
        });
    }
    if let Some(min) = node.min_length
        && len < min
    {
        errs.push(invalid(
            path,
            v,
            format!("{path} in body should be at least {min} chars long"),
        ));
    }
    if let Some((p, re)) = &node.pattern
        && !re.is_match(s)
    {
        errs.push(invalid(
            path,
            v,
            format!("{path} in body should match '{p}'"),
        ));
    }
    if let Some(f) = &node.format
        && !super::formats::valid(f, s)
    {
        errs.push(invalid_raw(
            path,
            format!("{s:?}"),
            &format!("{path} in body must be of type {f}: {s:?}"),
            CauseReason::TypeInvalid,
        ));
    }
}

fn number(node: &Node, n: &serde_json::Number, v: &Value, path: &str, errs: &mut Vec<FieldCause>) {
    let Some(x) = n.as_f64() else { return };
    let is_int = n.is_i64() || n.is_u64();
    // kube-openapi checks the range of an int32 (with a nil path, as the real server reports it).
    if node.format.as_deref() == Some("int32")
        && is_int
        && n.as_i64().is_none_or(|i| i32::try_from(i).is_err())
    {
        errs.push(FieldCause {
            reason: CauseReason::Invalid,
            field: "<nil>".into(),
            message: format!(
                "Invalid value: \"\": Checked value must be of type integer with format int32 in {path}"
            ),
        });
    }
    if let Some(max) = node.maximum {
        let (bad, word) = if node.exclusive_maximum {
            (x >= max, "less than")
        } else {
            (x > max, "less than or equal to")
        };
        if bad {
            errs.push(invalid(
                path,
                v,
                format!("{path} in body should be {word} {}", bound(max, is_int)),
            ));
        }
    }
    if let Some(min) = node.minimum {
        let (bad, word) = if node.exclusive_minimum {
            (x <= min, "greater than")
        } else {
            (x < min, "greater than or equal to")
        };
        if bad {
            errs.push(invalid(
                path,
                v,
                format!("{path} in body should be {word} {}", bound(min, is_int)),
            ));
        }
    }
    if let Some(m) = node.multiple_of
        && m > 0.0
    {
        let q = x / m;
        if (q - q.round()).abs() > 1e-9 {
            errs.push(invalid(
                path,
                v,
                format!("{path} in body should be a multiple of {}", go_float(m)),
            ));
        }
    }
}

fn array(
    node: &Node,
    items: &[Value],
    old: Option<&Value>,
    path: &str,
    errs: &mut Vec<FieldCause>,
) {
    if let Some(max) = node.max_items
        && items.len() as u64 > max
    {
        errs.push(too_many(path, items.len(), max));
    }
    if let Some(min) = node.min_items
        && (items.len() as u64) < min
    {
        errs.push(invalid_raw(
            path,
            items.len().to_string(),
            &format!("{path} in body should have at least {min} items"),
            CauseReason::Invalid,
        ));
    }
    if node.unique_items
        && items
            .iter()
            .enumerate()
            .any(|(i, x)| items[..i].contains(x))
    {
        errs.push(invalid_raw(
            path,
            "\"\"".into(),
            &format!("{path} in body shouldn't contain duplicates"),
            CauseReason::Invalid,
        ));
    }
    if let Some(item) = node.items.as_deref() {
        for (i, x) in items.iter().enumerate() {
            let old_x = correlate_list_item(node, old, x);
            schema(item, x, old_x, &format!("{path}[{i}]"), item.embedded, errs);
        }
    }
}

fn object(
    node: &Node,
    m: &Map<String, Value>,
    old: Option<&Value>,
    path: &str,
    root: bool,
    errs: &mut Vec<FieldCause>,
) {
    if let Some(max) = node.max_properties
        && m.len() as u64 > max
    {
        errs.push(too_many(path, m.len(), max));
    }
    if let Some(min) = node.min_properties
        && (m.len() as u64) < min
    {
        errs.push(invalid_raw(
            path,
            m.len().to_string(),
            &format!("{path} in body should have at least {min} properties"),
            CauseReason::Invalid,
        ));
    }
    for r in &node.required {
        if !m.contains_key(r) {
            errs.push(FieldCause::required(child_path(path, r), ""));
        }
    }
    if root && node.embedded {
        for k in ["apiVersion", "kind"] {
            if m.get(k).and_then(Value::as_str).is_none_or(str::is_empty) {
                errs.push(FieldCause::required(child_path(path, k), ""));
            }
        }
    }
    for (k, x) in m {
        let old_x = old.and_then(|o| o.get(k));
        if let Some(sub) = node.properties.get(k) {
            schema(sub, x, old_x, &child_path(path, k), sub.embedded, errs);
        } else if let Some(sub) = node.additional.as_deref() {
            // kube-openapi names map values with a dot, not the `[key]` of field paths.
            schema(sub, x, old_x, &child_path(path, k), sub.embedded, errs);
        }
    }
}

/// The old item of a `map` list with the same key values as `item` (for ratcheting and
/// `oldSelf`); other lists do not correlate.
pub(super) fn correlate_list_item<'a>(
    node: &Node,
    old: Option<&'a Value>,
    item: &Value,
) -> Option<&'a Value> {
    if node.list_type != Some(ListType::Map) {
        return None;
    }
    let same_keys = |o: &Value| node.list_map_keys.iter().all(|k| o.get(k) == item.get(k));
    old?.as_array()?.iter().find(|o| same_keys(o))
}

/// The key object of a `map`-list item, as the real server prints duplicates.
fn map_key(keys: &[String], item: &Value) -> Value {
    let mut out = Map::new();
    if let Value::Object(m) = item {
        for k in keys {
            if let Some(x) = m.get(k) {
                out.insert(k.clone(), x.clone());
            }
        }
    }
    Value::Object(out)
}

/// Checks `x-kubernetes-list-type` `set` and `map` for duplicates, recursively. As with the
/// keywords, an unchanged value (`old` is the correlated previous value) is not checked again.
pub(super) fn lists(
    node: &Node,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    errs: &mut Vec<FieldCause>,
) {
    if old == Some(v) {
        return;
    }
    match v {
        Value::Array(items) => {
            let keyed: Option<Vec<Value>> = match node.list_type {
                Some(ListType::Set) => Some(items.clone()),
                Some(ListType::Map) => Some(
                    items
                        .iter()
                        .map(|x| map_key(&node.list_map_keys, x))
                        .collect(),
                ),
                _ => None,
            };
            if let Some(keys) = keyed {
                for (i, k) in keys.iter().enumerate() {
                    if keys[..i].contains(k) {
                        errs.push(FieldCause {
                            reason: CauseReason::Duplicate,
                            field: format!("{path}[{i}]"),
                            message: format!("Duplicate value: {}", go_value(k)),
                        });
                    }
                }
            }
            if let Some(item) = node.items.as_deref() {
                for (i, x) in items.iter().enumerate() {
                    let old_x = correlate_list_item(node, old, x);
                    lists(item, x, old_x, &format!("{path}[{i}]"), errs);
                }
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                let old_x = old.and_then(|o| o.get(k));
                if let Some(sub) = node.properties.get(k) {
                    lists(sub, x, old_x, &child_path(path, k), errs);
                } else if let Some(sub) = node.additional.as_deref() {
                    lists(sub, x, old_x, &format!("{path}[{k}]"), errs);
                }
            }
        }
        _ => {}
    }
}
