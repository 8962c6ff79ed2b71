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

/// The opaque continue token: the list's resourceVersion (-1: the latest) and the last key returned.
fn encode_continue(rv: Option<u64>, ns: &str, name: &str) -> String {
    let rv = rv.map_or(-1, |rv| i64::try_from(rv).unwrap_or(i64::MAX));
    URL_SAFE_NO_PAD
        .encode(json!({"v": "meta.k8s.io/v1", "rv": rv, "start": [ns, name]}).to_string())
}

fn decode_continue(token: &str) -> ApiResult<(Option<u64>, String, String)> {
    let bad = |why: &str| ApiError::bad_request(format!("continue key is not valid: {why}"));
    let raw = URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|e| bad(&e.to_string()))?;
    let v: Value = serde_json::from_slice(&raw).map_err(|e| bad(&e.to_string()))?;
    let rv = match v["rv"].as_i64() {
        Some(-1) => None,
        Some(rv) if rv > 0 => Some(rv as u64),
        _ => {
            return Err(bad(
                "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ));
        }
    };
    let ns = v["start"][0]
        .as_str()
        .ok_or_else(|| bad("missing start key"))?;
    let name = v["start"][1]
        .as_str()
        .ok_or_else(|| bad("missing start key"))?;
    Ok((rv, ns.to_string(), name.to_string()))
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
        // A field selector pinning the namespace narrows the scan like the URL's namespace would.
        let ns = if rt.namespaced {
            ns.filter(|n| !n.is_empty())
                .or_else(|| opts.fields.exact("metadata.namespace"))
        } else {
            None
        };
        let (list_rv, start) = match &opts.continue_token {
            Some(token) if !token.is_empty() => {
                let (rv, start_ns, start_name) = decode_continue(token)?;
                let rv = match rv {
                    Some(rv) if rv < self.compacted_rv => {
                        // The real server offers a token for the rest of the list at the latest
                        // resourceVersion, accepting that the result is then inconsistent.
                        let mut e = ApiError::expired(EXPIRED_CONTINUE);
                        e.list_continue = Some(encode_continue(None, &start_ns, &start_name));
                        return Err(e);
                    }
                    Some(rv) => rv,
                    None => self.rv,
                };
                let start = ObjKey {
                    storage: rt.storage.clone(),
                    namespace: start_ns,
                    name: start_name,
                };
                (rv, Some(start))
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
            Some(s) => k > s,
            None => true,
        };
        let lower = match &start {
            Some(s) => Bound::Excluded(s.clone()),
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
            (true, Some(k)) => Some(encode_continue(Some(list_rv), &k.namespace, &k.name)),
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
