//! Validation of `metadata` on writes, worded like the real server.

use serde_json::Value;

use super::names;
use crate::catalog::NameRule;
use crate::error::FieldCause;

/// Whether the object is being deleted (has a deletionTimestamp).
pub fn is_deleting(obj: &Value) -> bool {
    obj["metadata"]
        .get("deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .map(|f| {
            f.iter()
                .filter_map(|s| s.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

pub fn has_finalizer(obj: &Value, name: &str) -> bool {
    obj["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == name))
}

/// Set `metadata.finalizers`, leaving the field out when the list is empty (as the real server does).
pub fn set_finalizers(obj: &mut Value, list: &[String]) {
    if list.is_empty() {
        if let Some(m) = obj["metadata"].as_object_mut() {
            m.remove("finalizers");
        }
    } else {
        obj["metadata"]["finalizers"] = serde_json::json!(list);
    }
}

pub fn remove_finalizer(obj: &mut Value, name: &str) {
    let list: Vec<String> = finalizers(obj).into_iter().filter(|f| f != name).collect();
    set_finalizers(obj, &list);
}

/// The uids named in `metadata.ownerReferences`.
pub fn owner_uids(obj: &Value) -> Vec<String> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .map(|refs| {
            refs.iter()
                .filter_map(|r| r["uid"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether nothing holds a deleting object any more: no finalizers, and (for namespaces) no
/// `spec.finalizers`.
pub fn removable(obj: &Value) -> bool {
    finalizers(obj).is_empty()
        && obj["spec"]["finalizers"]
            .as_array()
            .is_none_or(Vec::is_empty)
}

/// The fields of `input` that a typed decode dropped (`known` is the decoded-and-encoded form), as
/// dotted paths like the real server's strict decoding errors name them. Nulls count as absent.
pub fn unknown_fields(input: &Value, known: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_unknown(input, known, None, &mut out);
    out
}

fn collect_unknown(input: &Value, known: &Value, at: Option<&Step>, out: &mut Vec<String>) {
    match (input, known) {
        (Value::Object(i), Value::Object(k)) => {
            for (key, v) in i {
                let step = Step::Key(at, key);
                match k.get(key) {
                    None if !v.is_null() => out.push(spell(Some(&step))),
                    // Equal subtrees hold nothing unknown: most of an object is known.
                    Some(kv) if kv != v => collect_unknown(v, kv, Some(&step), out),
                    _ => {}
                }
            }
        }
        (Value::Array(i), Value::Array(k)) => {
            for (n, (v, kv)) in i.iter().zip(k.iter()).enumerate() {
                collect_unknown(v, kv, Some(&Step::Index(at, n)), out);
            }
        }
        _ => {}
    }
}

/// The fields a JSON document names twice in one object, as dotted paths (the real server's strict
/// decoding refuses them; serde would silently keep the last).
pub fn duplicate_fields(json: &[u8]) -> Vec<String> {
    parse_json(json).map(|(_, dups)| dups).unwrap_or_default()
}

/// Parses a JSON document and names the fields it gives twice in one object, in one pass. As with
/// serde, the last of the duplicates is the one kept.
pub fn parse_json(json: &[u8]) -> Result<(Value, Vec<String>), serde_json::Error> {
    use serde::de::DeserializeSeed;
    let found = std::cell::RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_slice(json);
    let value = Parse {
        at: None,
        found: &found,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((value, found.into_inner()))
}

/// Where the parse is, as a chain up to the root: the dotted path is only spelled out when a
/// duplicate is found, since almost every body has none.
enum Step<'p> {
    Key(Option<&'p Step<'p>>, &'p str),
    Index(Option<&'p Step<'p>>, usize),
}

fn spell(at: Option<&Step>) -> String {
    match at {
        None => String::new(),
        Some(Step::Key(None, key)) => (*key).to_string(),
        Some(Step::Key(parent, key)) => format!("{}.{key}", spell(*parent)),
        Some(Step::Index(parent, i)) => format!("{}[{i}]", spell(*parent)),
    }
}

struct Parse<'a, 'p> {
    at: Option<&'p Step<'p>>,
    found: &'a std::cell::RefCell<Vec<String>>,
}

impl<'de> serde::de::DeserializeSeed<'de> for Parse<'_, '_> {
    type Value = Value;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Parse<'_, '_> {
    type Value = Value;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let step = Step::Key(self.at, &key);
            let value = map.next_value_seed(Parse {
                at: Some(&step),
                found: self.found,
            })?;
            let duplicate = out.contains_key(&key);
            if duplicate {
                self.found.borrow_mut().push(spell(Some(&step)));
            }
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        loop {
            let step = Step::Index(self.at, out.len());
            match seq.next_element_seed(Parse {
                at: Some(&step),
                found: self.found,
            })? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

/// Remove the given dotted paths (as [`unknown_fields`] names them) from `obj`.
pub fn remove_fields(obj: &mut Value, paths: &[String]) {
    for path in paths {
        let mut parts: Vec<String> = Vec::new();
        for segment in path.split('.') {
            let (name, indexes) = segment
                .split_once('[')
                .map_or((segment, ""), |(n, rest)| (n, rest));
            parts.push(name.to_string());
            for index in indexes.split('[').filter(|s| !s.is_empty()) {
                parts.push(format!("[{}", index.trim_end_matches(']')));
            }
        }
        remove_at(obj, &parts);
    }
}

fn remove_at(value: &mut Value, parts: &[String]) {
    match parts {
        [last] => {
            if let Some(m) = value.as_object_mut() {
                m.remove(last);
            }
        }
        [first, rest @ ..] => {
            let next = match first.strip_prefix('[') {
                Some(i) => i.parse::<usize>().ok().and_then(|i| value.get_mut(i)),
                None => value.get_mut(first.as_str()),
            };
            if let Some(next) = next {
                remove_at(next, rest);
            }
        }
        [] => {}
    }
}

/// Whether an apiVersion belongs to a built-in group (no dot, or `*.k8s.io`): their objects
/// also go through the core validation of finalizer names.
fn built_in(api_version: &str) -> bool {
    match api_version.rsplit_once('/') {
        None => true,
        Some((group, _)) => !group.contains('.') || group.ends_with(".k8s.io"),
    }
}

/// The finalizers every kind knows without a domain.
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

/// A value as Go's `encoding/json` prints an owner reference list, in its struct's field order.
fn owner_references_json(owners: &[Value]) -> String {
    let items: Vec<String> = owners
        .iter()
        .map(|o| {
            let mut fields = Vec::new();
            for key in ["apiVersion", "kind", "name", "uid"] {
                let v = o[key].as_str().unwrap_or("");
                fields.push(format!("\"{key}\":{}", Value::from(v)));
            }
            for key in ["controller", "blockOwnerDeletion"] {
                if let Some(b) = o[key].as_bool() {
                    fields.push(format!("\"{key}\":{b}"));
                }
            }
            format!("{{{}}}", fields.join(","))
        })
        .collect();
    format!("[{}]", items.join(","))
}

/// Field problems in an object's metadata (empty = valid), in the order kube-apiserver's
/// ObjectMeta validation finds them.
pub fn validate_metadata(obj: &Value, rule: NameRule) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    let meta = &obj["metadata"];
    let check_name = |value: &str, prefix: bool| -> Vec<String> {
        // A generateName may end in '-': it is checked as if that were a letter.
        let masked;
        let value = match value.strip_suffix('-') {
            Some(rest) if prefix => {
                masked = format!("{rest}a");
                masked.as_str()
            }
            _ => value,
        };
        match rule {
            NameRule::Subdomain => names::is_dns1123_subdomain(value),
            NameRule::Label => names::is_dns1123_label(value),
            NameRule::PathSegment => names::is_path_segment_name(value),
        }
    };
    if let Some(prefix) = meta["generateName"].as_str().filter(|g| !g.is_empty()) {
        causes.extend(
            check_name(prefix, true)
                .iter()
                .map(|p| FieldCause::invalid("metadata.generateName", prefix, p)),
        );
    }
    let name = meta["name"].as_str().unwrap_or("");
    if name.is_empty() {
        causes.push(FieldCause::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        causes.extend(
            check_name(name, false)
                .iter()
                .map(|p| FieldCause::invalid("metadata.name", name, p)),
        );
    }
    if let Some(labels) = meta["labels"].as_object() {
        for (k, v) in labels {
            for p in names::is_qualified_name(k) {
                causes.push(FieldCause::invalid("metadata.labels", k, &p));
            }
            match v.as_str() {
                Some(s) => causes.extend(
                    names::is_valid_label_value(s)
                        .iter()
                        .map(|p| FieldCause::invalid("metadata.labels", s, p)),
                ),
                None => causes.push(FieldCause::invalid(
                    "metadata.labels",
                    &v.to_string(),
                    "must be a string",
                )),
            }
        }
    }
    if let Some(annotations) = meta["annotations"].as_object() {
        for k in annotations.keys() {
            for p in names::is_qualified_name(&k.to_lowercase()) {
                causes.push(FieldCause::invalid("metadata.annotations", k, &p));
            }
        }
        let size: usize = annotations
            .iter()
            .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
            .sum();
        if size > 256 * 1024 {
            causes.push(FieldCause::too_long("metadata.annotations", 256 * 1024));
        }
    }
    if let Some(owners) = meta["ownerReferences"].as_array() {
        for (i, o) in owners.iter().enumerate() {
            let version = o["apiVersion"]
                .as_str()
                .map(|v| v.rsplit('/').next().unwrap_or(v))
                .unwrap_or("");
            let fields = [
                ("apiVersion", version),
                ("kind", o["kind"].as_str().unwrap_or("")),
                ("name", o["name"].as_str().unwrap_or("")),
                ("uid", o["uid"].as_str().unwrap_or("")),
            ];
            for (field, value) in fields {
                if value.is_empty() {
                    causes.push(FieldCause::required(
                        format!("metadata.ownerReferences[{i}].{field}"),
                        "must not be empty",
                    ));
                }
            }
        }
        // One cause for each controller after the first, naming both.
        let mut first_controller: Option<String> = None;
        for o in owners
            .iter()
            .filter(|o| o["controller"] == Value::Bool(true))
        {
            let this = format!(
                "{}/{}",
                o["kind"].as_str().unwrap_or(""),
                o["name"].as_str().unwrap_or("")
            );
            match &first_controller {
                None => first_controller = Some(this),
                Some(first) => causes.push(FieldCause {
                    reason: crate::error::CauseReason::Invalid,
                    field: "metadata.ownerReferences".into(),
                    message: format!(
                        "Invalid value: {}: Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}",
                        owner_references_json(owners)
                    ),
                }),
            }
        }
    }
    if let Some(finalizers) = meta["finalizers"].as_array() {
        let names: Vec<&str> = finalizers
            .iter()
            .map(|f| f.as_str().unwrap_or(""))
            .collect();
        for f in &names {
            for p in names::is_qualified_name(f) {
                causes.push(FieldCause::invalid("metadata.finalizers", f, &p));
            }
        }
        if names.contains(&"orphan") && names.contains(&"foregroundDeletion") {
            causes.push(FieldCause {
                reason: crate::error::CauseReason::Invalid,
                field: "metadata.finalizers".into(),
                message: format!(
                    "Invalid value: {}: finalizer orphan and foregroundDeletion cannot be both set",
                    Value::from(names.clone())
                ),
            });
        }
        // Built-in kinds also refuse a finalizer without a domain that is not a standard one.
        if built_in(obj["apiVersion"].as_str().unwrap_or("")) {
            for (i, f) in names.iter().enumerate() {
                if !f.contains('/') && !STANDARD_FINALIZERS.contains(f) {
                    causes.push(FieldCause::invalid(
                        format!("metadata.finalizers[{i}]"),
                        f,
                        "name is neither a standard finalizer name nor is it fully qualified",
                    ));
                }
            }
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_named_by_dotted_path_and_can_be_removed() {
        let input = json!({"a": 1, "bogus": 2, "spec": {"x": [{"k": 1, "extra": 3}], "nil": null}});
        let known = json!({"a": 1, "spec": {"x": [{"k": 1}]}});
        let unknown = unknown_fields(&input, &known);
        assert_eq!(unknown, vec!["bogus", "spec.x[0].extra"]);
        let mut pruned = input.clone();
        remove_fields(&mut pruned, &unknown);
        assert_eq!(
            pruned,
            json!({"a": 1, "spec": {"x": [{"k": 1}], "nil": null}})
        );
    }

    #[test]
    fn parsing_with_the_duplicate_check_reads_what_serde_reads() {
        let body =
            br#"{"a":1,"b":[true,null,-2,3.5,18446744073709551615,"x\u00e9"],"c":{"d":{}},"a":2}"#;
        let (value, dups) = parse_json(body).unwrap();
        assert_eq!(value, serde_json::from_slice::<Value>(body).unwrap());
        assert_eq!(dups, ["a"]);
        assert!(
            parse_json(b"{} x").is_err(),
            "trailing characters are refused"
        );
    }

    #[test]
    fn duplicate_fields_are_found_at_any_depth() {
        let body = br#"{"a":1,"a":2,"spec":{"items":[{"k":1,"k":2}]}}"#;
        assert_eq!(duplicate_fields(body), vec!["a", "spec.items[0].k"]);
        assert!(duplicate_fields(br#"{"a":{"b":1},"c":{"b":2}}"#).is_empty());
    }

    #[test]
    fn duplicate_fields_are_found_in_large_and_escaped_objects() {
        let keys: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        let body = format!(r#"{{"data":{{{},"k3":0,"k30":0}}}}"#, keys.join(","));
        assert_eq!(
            duplicate_fields(body.as_bytes()),
            vec!["data.k3", "data.k30"]
        );
        assert_eq!(
            duplicate_fields(br#"{"m":[{},{"a\u0062":1,"ab":2}]}"#),
            vec!["m[1].ab"]
        );
    }

    #[test]
    fn a_bad_name_is_reported_with_the_real_wording() {
        let causes = validate_metadata(
            &json!({"metadata": {"name": "Bad_Name"}}),
            NameRule::Subdomain,
        );
        assert_eq!(causes.len(), 1);
        assert_eq!(causes[0].field, "metadata.name");
        assert!(
            causes[0]
                .message
                .starts_with("Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain")
        );
    }

    #[test]
    fn namespaces_need_dns_labels() {
        assert!(
            validate_metadata(&json!({"metadata": {"name": "a.b"}}), NameRule::Label).len() == 1
        );
        assert!(
            validate_metadata(&json!({"metadata": {"name": "a.b"}}), NameRule::Subdomain)
                .is_empty()
        );
        assert!(
            validate_metadata(
                &json!({"metadata": {"name": "system:admin"}}),
                NameRule::PathSegment
            )
            .is_empty()
        );
    }

    #[test]
    fn label_values_and_owner_references_are_checked() {
        let obj = json!({"metadata": {"name": "x", "labels": {"a": "-bad"}, "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p"}]}});
        let fields: Vec<String> = validate_metadata(&obj, NameRule::Subdomain)
            .into_iter()
            .map(|c| c.field)
            .collect();
        assert_eq!(
            fields,
            vec!["metadata.labels", "metadata.ownerReferences[0].uid"]
        );
    }
}
