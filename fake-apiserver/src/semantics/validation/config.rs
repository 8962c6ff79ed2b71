//! Secrets and ConfigMaps: key names, the keys each Secret type needs, `immutable`, and the
//! Secret `type` that never changes.

use base64::Engine;
use serde_json::{Map, Value};

use crate::error::FieldCause;

const CONFIG_KEY_ERR: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
const IMMUTABLE: &str = "field is immutable when `immutable` is set";
/// The most a Secret's or a ConfigMap's data may hold (`core.MaxSecretSize`), counted in bytes of
/// the values only, binary values decoded.
pub const MAX_DATA_BYTES: usize = 1024 * 1024;

/// How many bytes a map of values holds: strings as they are, or base64 decoded (a value that is
/// not base64 was refused when decoding).
fn data_bytes(obj: &Value, field: &str, base64: bool) -> usize {
    let Some(map) = obj[field].as_object() else {
        return 0;
    };
    map.values()
        .filter_map(Value::as_str)
        .map(|v| match base64 {
            // Decoded size without decoding: 3 bytes per 4 characters, less the padding.
            true => (v.len() / 4) * 3 - v.bytes().rev().take_while(|b| *b == b'=').count(),
            false => v.len(),
        })
        .sum()
}

/// kube-apiserver's decoding writes `stringData` into `data` (base64, over the same key) and
/// never stores it.
pub fn merge_string_data(secret: &mut Value) {
    let Some(m) = secret.as_object_mut() else {
        return;
    };
    let Some(Value::Object(strings)) = m.remove("stringData") else {
        return;
    };
    if strings.is_empty() {
        return;
    }
    let data = m.entry("data").or_insert_with(|| Value::Object(Map::new()));
    if !data.is_object() {
        *data = Value::Object(Map::new());
    }
    if let Some(data) = data.as_object_mut() {
        for (k, v) in strings {
            let plain = v.as_str().unwrap_or_default();
            let encoded = base64::engine::general_purpose::STANDARD.encode(plain);
            data.insert(k, Value::from(encoded));
        }
    }
}

/// `IsConfigMapKey`'s messages for one key.
fn key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let valid = !key.is_empty()
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !valid {
        errs.push(CONFIG_KEY_ERR.to_string());
    }
    match key {
        "." => errs.push("must not be '.'".into()),
        ".." => errs.push("must not be '..'".into()),
        k if k.starts_with("..") => errs.push("must not start with '..'".into()),
        _ => {}
    }
    errs
}

fn keys(obj: &Value, field: &str) -> Vec<String> {
    let mut keys: Vec<String> = obj[field]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    // Go walks the map in random order; sorted is one of its orders.
    keys.sort();
    keys
}

fn key_causes(field: &str, key: &str) -> Vec<FieldCause> {
    key_errors(key)
        .iter()
        .map(|msg| FieldCause::invalid(format!("{field}[{key}]"), key, msg))
        .collect()
}

fn is_immutable(obj: &Value) -> bool {
    obj["immutable"] == Value::Bool(true)
}

/// A map field as Go compares it: absent and empty are both nothing.
fn map_of<'a>(obj: &'a Value, field: &str) -> Option<&'a Map<String, Value>> {
    obj[field].as_object().filter(|m| !m.is_empty())
}

/// The immutability causes of an update of an immutable Secret or ConfigMap.
fn immutable_causes(new: &Value, old: &Value, fields: &[&str]) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    if !is_immutable(old) {
        return causes;
    }
    if !is_immutable(new) {
        causes.push(FieldCause::forbidden("immutable", IMMUTABLE));
    }
    for field in fields {
        if map_of(new, field) != map_of(old, field) {
            causes.push(FieldCause::forbidden(*field, IMMUTABLE));
        }
    }
    causes
}

fn secret_type(obj: &Value) -> &str {
    obj["type"]
        .as_str()
        .filter(|t| !t.is_empty())
        .unwrap_or("Opaque")
}

pub fn secret(obj: &Value, old: Option<&Value>) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    if let Some(old) = old {
        let (new_type, old_type) = (secret_type(obj), secret_type(old));
        if new_type != old_type {
            causes.push(FieldCause::invalid("type", new_type, "field is immutable"));
        }
        causes.extend(immutable_causes(obj, old, &["data"]));
    }
    for key in keys(obj, "data") {
        causes.extend(key_causes("data", &key));
    }
    if data_bytes(obj, "data", true) > MAX_DATA_BYTES {
        causes.push(FieldCause::too_long("data", MAX_DATA_BYTES));
    }
    let data = obj["data"].as_object();
    let has = |k: &str| data.is_some_and(|d| d.contains_key(k));
    let required = |k: &str| FieldCause::required(format!("data[{k}]"), "");
    match secret_type(obj) {
        "kubernetes.io/service-account-token" => {
            let name = &obj["metadata"]["annotations"]["kubernetes.io/service-account.name"];
            if name.as_str().unwrap_or("").is_empty() {
                causes.push(FieldCause::required(
                    "metadata.annotations[kubernetes.io/service-account.name]",
                    "",
                ));
            }
        }
        kind @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if kind.ends_with("json") {
                ".dockerconfigjson"
            } else {
                ".dockercfg"
            };
            match data.and_then(|d| d.get(key)) {
                None => causes.push(required(key)),
                Some(v) => {
                    let bytes = base64::engine::general_purpose::STANDARD
                        .decode(v.as_str().unwrap_or(""))
                        .unwrap_or_default();
                    if let Some(err) = json_object_error(&bytes) {
                        causes.push(FieldCause::invalid(
                            format!("data[{key}]"),
                            "<secret contents redacted>",
                            &err,
                        ));
                    }
                }
            }
        }
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            causes.push(required("username"));
            causes.push(required("password"));
        }
        "kubernetes.io/ssh-auth" => {
            let key = data.and_then(|d| d.get("ssh-privatekey"));
            if key.and_then(Value::as_str).unwrap_or("").is_empty() {
                causes.push(required("ssh-privatekey"));
            }
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !has(key) {
                    causes.push(required(key));
                }
            }
        }
        _ => {}
    }
    causes
}

/// Go's `json.Unmarshal` error for bytes that should hold a JSON object, in its words for the
/// usual mistakes.
fn json_object_error(bytes: &[u8]) -> Option<String> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(_) | Value::Null) => None,
        Ok(other) => {
            let word = match other {
                Value::Array(_) => "array",
                Value::String(_) => "string",
                Value::Number(_) => "number",
                _ => "bool",
            };
            Some(format!(
                "json: cannot unmarshal {word} into Go value of type map[string]interface {{}}"
            ))
        }
        Err(e) if e.is_eof() => Some("unexpected end of JSON input".into()),
        Err(_) => {
            let first = bytes
                .iter()
                .find(|b| !b.is_ascii_whitespace())
                .map(|b| *b as char)
                .unwrap_or(' ');
            Some(format!(
                "invalid character '{first}' looking for beginning of value"
            ))
        }
    }
}

pub fn config_map(obj: &Value, old: Option<&Value>) -> Vec<FieldCause> {
    let mut causes = Vec::new();
    if let Some(old) = old {
        causes.extend(immutable_causes(obj, old, &["data", "binaryData"]));
    }
    let binary = obj["binaryData"].as_object();
    for key in keys(obj, "data") {
        causes.extend(key_causes("data", &key));
        if binary.is_some_and(|b| b.contains_key(&key)) {
            causes.push(FieldCause::invalid(
                format!("data[{key}]"),
                &key,
                "duplicate of key present in binaryData",
            ));
        }
    }
    for key in keys(obj, "binaryData") {
        causes.extend(key_causes("binaryData", &key));
    }
    if data_bytes(obj, "data", false) + data_bytes(obj, "binaryData", true) > MAX_DATA_BYTES {
        // Go's empty field path, which refers to the whole object, prints as `[]`.
        causes.push(FieldCause::too_long("[]", MAX_DATA_BYTES));
    }
    causes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn fields(causes: &[FieldCause]) -> Vec<String> {
        causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect()
    }

    #[test]
    fn string_data_is_merged_into_data() {
        let mut s = json!({"data": {"a": "YQ=="}, "stringData": {"a": "over", "b": "bee"}});
        merge_string_data(&mut s);
        assert_eq!(s, json!({"data": {"a": "b3Zlcg==", "b": "YmVl"}}));
    }

    #[test]
    fn key_names_and_types() {
        let s = json!({"type": "kubernetes.io/tls", "data": {"..": "", "a/b": "", "tls.crt": ""}});
        assert_eq!(
            fields(&secret(&s, None)),
            [
                "data[..]: Invalid value: \"..\": must not be '..'".to_string(),
                format!("data[a/b]: Invalid value: \"a/b\": {CONFIG_KEY_ERR}"),
                "data[tls.key]: Required value".to_string(),
            ]
        );
    }

    #[test]
    fn immutable_secrets_and_types() {
        let old = json!({"immutable": true, "data": {"k": "dg=="}});
        let new = json!({"type": "x", "data": {"k": "dw=="}});
        assert_eq!(
            fields(&secret(&new, Some(&old))),
            [
                "type: Invalid value: \"x\": field is immutable",
                "immutable: Forbidden: field is immutable when `immutable` is set",
                "data: Forbidden: field is immutable when `immutable` is set",
            ]
        );
    }

    #[test]
    fn config_map_keys_in_both_maps() {
        let cm = json!({"data": {"k": "v"}, "binaryData": {"k": "AA==", ".": "AA=="}});
        assert_eq!(
            fields(&config_map(&cm, None)),
            [
                "data[k]: Invalid value: \"k\": duplicate of key present in binaryData",
                "binaryData[.]: Invalid value: \".\": must not be '.'",
            ]
        );
    }

    #[test]
    fn docker_config_must_be_json() {
        assert_eq!(
            json_object_error(b"x").as_deref(),
            Some("invalid character 'x' looking for beginning of value")
        );
        assert_eq!(json_object_error(b"{}"), None);
    }
}
