//! Reads: get and paginated, filtered lists.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use super::{ListOptions, ObjKey, Store, Stored, render};
use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};

/// One page of a list.
#[derive(Debug)]
pub struct ListPage {
    pub items: Vec<Value>,
    pub resource_version: u64,
    pub continue_token: Option<String>,
    pub remaining: Option<u64>,
}

impl ListPage {
    /// The `<Kind>List` body.
    pub fn to_json(&self, rt: &ResourceType) -> Value {
        let mut metadata = json!({"resourceVersion": self.resource_version.to_string()});
        if let Some(token) = &self.continue_token {
            metadata["continue"] = json!(token);
        }
        if let Some(n) = self.remaining {
            metadata["remainingItemCount"] = json!(n);
        }
        if rt.crd.is_some() {
            // An unstructured list always has the key, as kube-apiserver writes it.
            metadata["continue"] = json!(self.continue_token.as_deref().unwrap_or(""));
            return json!({"kind": rt.list_kind, "apiVersion": rt.api_version(), "metadata": metadata, "items": self.items});
        }
        // A typed list's items have an empty TypeMeta, which Go leaves out.
        let items: Vec<Value> = self
            .items
            .iter()
            .map(|item| {
                let mut item = item.clone();
                if let Some(map) = item.as_object_mut() {
                    map.remove("kind");
                    map.remove("apiVersion");
                }
                item
            })
            .collect();
        json!({"kind": rt.list_kind, "apiVersion": rt.api_version(), "metadata": metadata, "items": items})
    }
}

const EXPIRED_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// The continue token as kube-apiserver writes it: unpadded URL-safe base64 of
/// `{"v","rv","start"}`, with the key to start from relative to the list's prefix (`/name\0`,
/// `/<ns>/name\0` across namespaces) and the list's resourceVersion (-1: the latest), in Go's
/// field order. Clients (and humans debugging pagination) decode it.
fn encode_continue(rv: Option<u64>, start: &str) -> String {
    let rv = rv.map_or(-1, |rv| i64::try_from(rv).unwrap_or(i64::MAX));
    let start = serde_json::to_string(start).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(format!(
        r#"{{"v":"meta.k8s.io/v1","rv":{rv},"start":{start}}}"#
    ))
}

/// Where a page ends, as the next token's start: just after `key`.
fn start_after(key: &ObjKey, across_namespaces: bool) -> String {
    match across_namespaces {
        true => format!("/{}/{}\0", key.namespace, key.name),
        false => format!("/{}\0", key.name),
    }
}

/// The first key a token's (cleaned) start addresses, in the list's key space.
fn start_key(rt: &ResourceType, ns: Option<&str>, start: &str) -> ObjKey {
    let rel = &start[1..];
    let (namespace, name) = match (rt.namespaced, ns) {
        (true, Some(ns)) => (ns, rel),
        (true, None) => rel.split_once('/').unwrap_or((rel, "")),
        (false, _) => ("", rel),
    };
    ObjKey {
        storage: rt.storage.clone(),
        namespace: namespace.to_string(),
        name: name.to_string(),
    }
}

/// A continue token read as kube-apiserver reads it: its resourceVersion (`None`: the latest)
/// and its start key (rooted, cleaned). Errors in kube-apiserver's words, Go's included.
fn decode_continue(token: &str) -> ApiResult<(Option<u64>, String)> {
    let bad = |why: &str| {
        ApiError::bad_request(format!(
            "invalid continue token: continue key is not valid{why}"
        ))
    };
    let raw = go_raw_url_base64(token).map_err(|e| bad(&format!(": {e}")))?;
    let (version, rv, start) = continue_fields(&raw).map_err(|e| bad(&format!(": {e}")))?;
    if version != "meta.k8s.io/v1" {
        return Err(bad(&format!(
            ": server does not recognize this encoded version {version}"
        )));
    }
    if rv == 0 {
        return Err(bad(
            ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    if start.is_empty() {
        return Err(bad(": encoded start key empty (version meta.k8s.io/v1)"));
    }
    // A start that is not a clean path could range outside the list's prefix.
    let rooted = match start.starts_with('/') {
        true => start.clone(),
        false => format!("/{start}"),
    };
    if clean_path(&rooted) != rooted {
        return Err(bad(&format!(": {start}")));
    }
    Ok((u64::try_from(rv).ok(), rooted))
}

/// Go's `base64.RawURLEncoding.DecodeString`: no padding, line breaks skipped, trailing bits
/// ignored, and its error naming the offending byte.
fn go_raw_url_base64(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    let (mut in_quantum, mut quantum_start) = (0usize, 0usize);
    for (i, c) in s.bytes().enumerate() {
        let v = match c {
            b'\n' | b'\r' => continue,
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return Err(format!("illegal base64 data at input byte {i}")),
        };
        if in_quantum == 0 {
            quantum_start = i;
        }
        in_quantum = (in_quantum + 1) % 4;
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // One character cannot make a byte.
    if in_quantum == 1 {
        return Err(format!("illegal base64 data at input byte {quantum_start}"));
    }
    Ok(out)
}

/// Go's `json.Unmarshal` of a token into kube-apiserver's `continueToken` struct: the syntax
/// error or the first type error in its words; keys match case-insensitively, null is zero.
fn continue_fields(raw: &[u8]) -> Result<(String, i64, String), String> {
    if let Some(e) = crate::semantics::go_decode::syntax_error(raw) {
        return Err(e);
    }
    let value: Value = serde_json::from_slice(raw).map_err(|e| e.to_string())?;
    let word = |v: &Value| match v {
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null => "null",
    };
    let (mut version, mut rv, mut start) = (String::new(), 0i64, String::new());
    let fields = match &value {
        Value::Object(fields) => fields,
        Value::Null => return Ok((version, rv, start)),
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type storage.continueToken",
                word(other)
            ));
        }
    };
    let mut first_error = None;
    let mismatch = |field: &str, what: &str, go_type: &str| {
        format!(
            "json: cannot unmarshal {what} into Go struct field continueToken.{field} of type {go_type}"
        )
    };
    for (key, v) in fields {
        let error = match (key.to_ascii_lowercase().as_str(), v) {
            (_, Value::Null) => None,
            ("v", Value::String(s)) => {
                version = s.clone();
                None
            }
            ("v", v) => Some(mismatch("v", word(v), "string")),
            ("rv", Value::Number(n)) if n.as_i64().is_some() => {
                rv = n.as_i64().unwrap_or_default();
                None
            }
            // A number that is no int64 is named with its literal.
            ("rv", Value::Number(n)) => Some(mismatch("rv", &format!("number {n}"), "int64")),
            ("rv", v) => Some(mismatch("rv", word(v), "int64")),
            ("start", Value::String(s)) => {
                start = s.clone();
                None
            }
            ("start", v) => Some(mismatch("start", word(v), "string")),
            _ => None,
        };
        if first_error.is_none() {
            first_error = error;
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok((version, rv, start)),
    }
}

/// Go's `path.Clean` of a rooted path.
fn clean_path(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for segment in p.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

impl Store {
    /// The real server's answer to a resourceVersion it has not reached (after waiting 3 s for it).
    pub fn too_large_rv(asked: u64, current: u64) -> ApiError {
        ApiError {
            details: Some(json!({
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1,
            })),
            ..ApiError::new(
                504,
                "Timeout",
                format!("Timeout: Too large resource version: {asked}, current: {current}"),
            )
        }
    }

    pub fn get(&self, rt: &ResourceType, ns: &str, name: &str) -> ApiResult<Value> {
        self.get_stored(rt, ns, name).map(|o| render(rt, &o))
    }

    pub(super) fn get_stored(
        &self,
        rt: &ResourceType,
        ns: &str,
        name: &str,
    ) -> ApiResult<Arc<Value>> {
        if rt.create_only {
            return Err(ApiError::method_not_allowed(format!(
                "{} only supports create",
                rt.plural
            )));
        }
        self.objects
            .get(&Store::key(rt, ns, name))
            .map(Stored::object)
            .ok_or_else(|| ApiError::not_found(&rt.group, &rt.plural, name))
    }

    /// Reject field selectors the kind does not support, as the real server does.
    pub fn check_field_selector(rt: &ResourceType, opts: &ListOptions) -> ApiResult<()> {
        for field in opts.fields.fields() {
            let supported = matches!(field, "metadata.name" | "metadata.namespace")
                || rt.behavior.field_selectors.contains(&field);
            if !supported {
                // Kinds with field selectors of their own (and custom resources) answer with
                // their conversion function's words; the others with the scheme's default.
                let message = match (rt.group.as_str(), rt.plural.as_str()) {
                    ("batch", "jobs") => {
                        format!("field label \"{field}\" not supported for Job")
                    }
                    _ if rt.crd.is_some() || !rt.behavior.field_selectors.is_empty() => {
                        format!("field label not supported: {field}")
                    }
                    _ => format!(
                        "\"{field}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                    ),
                };
                return Err(ApiError::bad_request(message));
            }
        }
        Ok(())
    }

    /// Whether a stored object is selected by a list or watch of `rt` in `ns`.
    pub fn selects(
        rt: &ResourceType,
        ns: Option<&str>,
        opts: &ListOptions,
        stored: &Value,
    ) -> bool {
        if let Some(ns) = ns
            && rt.namespaced
            && stored["metadata"]["namespace"].as_str().unwrap_or("") != ns
        {
            return false;
        }
        if !opts.labels.matches(stored) {
            return false;
        }
        if opts.fields.is_empty() {
            return true;
        }
        // Field paths are those of the served version (events.k8s.io has other names than core).
        match (rt.behavior.convert, rt.crd.is_some()) {
            (Some(_), _) => opts.fields.matches_builtin(&render(rt, stored)),
            (None, false) => opts.fields.matches_builtin(stored),
            (None, true) => opts.fields.matches(stored),
        }
    }

    pub fn list(
        &self,
        rt: &ResourceType,
        ns: Option<&str>,
        opts: &ListOptions,
    ) -> ApiResult<ListPage> {
        if rt.create_only {
            return Err(ApiError::method_not_allowed(format!(
                "{} only supports create",
                rt.plural
            )));
        }
        Self::check_field_selector(rt, opts)?;
        // A field selector pinning the namespace narrows the scan (and the key space continue
        // tokens are relative to) like the URL's namespace would.
        let ns = if rt.namespaced {
            ns.filter(|n| !n.is_empty())
                .or_else(|| opts.fields.exact("metadata.namespace"))
        } else {
            None
        };
        let (list_rv, start) = match &opts.continue_token {
            Some(token) if !token.is_empty() => {
                let (rv, start) = decode_continue(token)?;
                let rv = match rv {
                    Some(rv) if rv < self.compacted_rv => {
                        // The real server offers a token for the rest of the list at the latest
                        // resourceVersion, accepting that the result is then inconsistent.
                        let mut e = ApiError::expired(EXPIRED_CONTINUE);
                        e.list_continue = Some(encode_continue(None, &start));
                        return Err(e);
                    }
                    Some(rv) => rv,
                    None => self.rv,
                };
                (rv, Some(start_key(rt, ns, &start)))
            }
            _ => match opts.resource_version {
                Some(rv) if rv > self.rv => return Err(Self::too_large_rv(rv, self.rv)),
                // The state at an older resourceVersion is rebuilt from the history, as long as
                // every later change is still in it.
                Some(rv) if opts.exact && rv < self.compacted_rv => {
                    return Err(ApiError::expired(
                        "The resourceVersion for the provided list is too old.",
                    ));
                }
                Some(rv) if opts.exact => (rv, None),
                _ => (self.rv, None),
            },
        };
        let in_scope = |k: &ObjKey| k.storage == rt.storage && ns.is_none_or(|n| k.namespace == n);
        let after_start = |k: &ObjKey| match &start {
            Some(s) => k >= s,
            None => true,
        };
        let lower = match &start {
            Some(s) => Bound::Included(s.clone()),
            None => Bound::Included(ObjKey {
                storage: rt.storage.clone(),
                namespace: ns.unwrap_or("").to_string(),
                name: String::new(),
            }),
        };
        // A continued list reads the objects as they were at the first page's resourceVersion:
        // the state before the first later change of each key, from the history.
        let mut past: BTreeMap<&ObjKey, Option<&Arc<Value>>> = BTreeMap::new();
        for change in self.history.iter().rev().take_while(|c| c.rv > list_rv) {
            if in_scope(&change.key) && after_start(&change.key) {
                past.insert(&change.key, change.old.as_ref());
            }
        }
        let current = self
            .objects
            .range((lower, Bound::Unbounded))
            .map(|(k, _)| k)
            .take_while(|k| in_scope(k));
        let keys: Vec<&ObjKey> = if past.is_empty() {
            current.collect()
        } else {
            let mut all: BTreeSet<&ObjKey> = current.collect();
            all.extend(past.keys().copied());
            all.into_iter().collect()
        };
        let limit = opts.limit.filter(|l| *l > 0);
        let unfiltered = opts.labels.is_empty() && opts.fields.is_empty();
        let mut items = Vec::new();
        let mut last: Option<&ObjKey> = None;
        let mut remaining = 0u64;
        for key in keys {
            let obj = match past.get(key) {
                Some(then) => then.cloned(),
                None => self.objects.get(key).map(Stored::object),
            };
            let Some(obj) = obj else { continue };
            // A full page with any key after it gets a continue token, whether or not that key
            // matches the selectors: etcd's list says there is more, not that more matches.
            if limit.is_some_and(|l| items.len() >= l) {
                remaining += 1;
                if !unfiltered {
                    break;
                }
                continue;
            }
            if !Self::selects(rt, ns, opts, &obj) {
                continue;
            }
            items.push(render(rt, &obj));
            last = Some(key);
        }
        let continue_token = match (remaining > 0, last) {
            (true, Some(k)) => Some(encode_continue(
                Some(list_rv),
                &start_after(k, rt.namespaced && ns.is_none()),
            )),
            _ => None,
        };
        // Like etcd, the count of what is left is given only for lists without selectors.
        let remaining = (continue_token.is_some() && unfiltered).then_some(remaining);
        Ok(ListPage {
            items,
            resource_version: list_rv,
            continue_token,
            remaining,
        })
    }
}
