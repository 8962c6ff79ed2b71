//! Field ownership for non-apply writes (create, update, patch), edited in place.
//!
//! Every write of a busy object goes through here, so the stored `fieldsV1` trees are edited where
//! they stand rather than decoded into path sets and encoded again: the entries a write does not
//! touch keep their JSON as it was. As in structured-merge-diff's `Updater.Update`, the writer
//! takes the fields it added or changed, other managers lose those, and every manager loses the
//! fields the write removed.

use serde_json::{Map, Value};

use super::{
    AtomicLists, ListTypes, Path, Pe, changed_fields, is_ignored, item_key, item_matches,
    key_defaults, set_to_fields,
};

/// Records a non-apply write (create/update/patch) by `manager` in managedFields: the manager
/// (operation Update) takes ownership of every field whose value it changed or added; other
/// managers lose those fields, and everyone loses the fields the write removed.
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    manager: &str,
    now: &str,
    api_version: &str,
    subresource: &str,
    lists: &dyn ListTypes,
) {
    // As kube-apiserver: managedFields a client sends to the main resource replace the stored
    // ones (`[]` or `[{}]` clear them), unless they are empty or malformed; a subresource write
    // keeps the stored ones. An update usually carries the stored entries unchanged, so they are
    // taken rather than copied.
    let sent = take_managed_fields(new);
    let stored = old.and_then(|o| o.pointer("/metadata/managedFields"));
    let mut entries: Vec<Value> = match (sent, stored) {
        (Some(s), _) if subresource.is_empty() && is_reset(&s) => Vec::new(),
        (Some(s), Some(st)) if &s == st => array(s),
        (Some(s), _) if subresource.is_empty() && well_formed(&s) => array(s),
        (_, Some(st)) => array(st.clone()),
        (_, None) => Vec::new(),
    };
    // An existing object without managedFields stays without them until an apply.
    if old.is_some() && entries.is_empty() {
        return;
    }

    let Some(old) = old else {
        // A create: a change from the kind's Go zero value (for a custom resource, an empty
        // object), so the fields that value holds are not the writer's own members.
        let Some(fields) = fields_of_new(new, lists) else {
            return;
        };
        let entries = if fields.is_empty() {
            Vec::new()
        } else {
            let fields = Value::Object(fields);
            vec![update_entry(manager, api_version, now, subresource, fields)]
        };
        put_entries(new, entries);
        return;
    };
    // A list with duplicate or missing keys is treated as atomic when the write changed it. One
    // in an unchanged part of the object is not looked at.
    let Ok(touched) = changed_fields(Some(old), new, lists)
        .or_else(|_| changed_fields(Some(old), new, &AtomicLists(lists)))
    else {
        // Not reached (atomic lists cannot fail), but the stored entries are never dropped.
        put_entries(new, entries);
        return;
    };
    let removed = removed_fields(old, new, lists);

    let is_me = |e: &Value| {
        e["operation"] != "Apply"
            && e["manager"] == manager
            && e["apiVersion"] == api_version
            && e.get("subresource").and_then(Value::as_str).unwrap_or("") == subresource
    };
    for e in entries.iter_mut() {
        let mine = is_me(e);
        let Some(fields) = e.get_mut("fieldsV1").and_then(Value::as_object_mut) else {
            continue;
        };
        if !mine {
            for p in &touched {
                unmark(fields, p, false);
            }
        }
        for p in &removed {
            unmark(fields, p, true);
        }
    }
    if !touched.is_empty() {
        match entries.iter_mut().find(|e| is_me(e)) {
            Some(e) => {
                if let Some(fields) = fields_mut(e) {
                    for p in &touched {
                        mark(fields, p);
                    }
                }
                e["time"] = Value::String(now.to_string());
            }
            None => entries.push(update_entry(
                manager,
                api_version,
                now,
                subresource,
                set_to_fields(&touched),
            )),
        }
    }
    entries.retain(|e| {
        e.get("fieldsV1")
            .and_then(Value::as_object)
            .is_some_and(|f| !f.is_empty())
    });
    // Sorted as the real server sorts them: operation, time, manager, apiVersion, subresource.
    let text = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    entries.sort_by_cached_key(|e| {
        (
            text(e, "operation"),
            e.get("time").and_then(Value::as_str).map(str::to_string),
            text(e, "manager"),
            text(e, "apiVersion"),
            text(e, "subresource"),
        )
    });
    put_entries(new, entries);
}

/// A new entry of operation Update owning `fields`.
fn update_entry(
    manager: &str,
    api_version: &str,
    now: &str,
    subresource: &str,
    fields: Value,
) -> Value {
    let mut entry = Map::new();
    for (k, v) in [
        ("manager", manager),
        ("operation", "Update"),
        ("apiVersion", api_version),
        ("time", now),
        ("fieldsType", "FieldsV1"),
    ] {
        entry.insert(k.into(), Value::String(v.to_string()));
    }
    entry.insert("fieldsV1".into(), fields);
    if !subresource.is_empty() {
        entry.insert("subresource".into(), Value::String(subresource.to_string()));
    }
    Value::Object(entry)
}

/// Stores `entries` as the object's managedFields (taken out beforehand; none leaves none).
fn put_entries(obj: &mut Value, entries: Vec<Value>) {
    if entries.is_empty() {
        return;
    }
    if let Some(Value::Object(meta)) = obj.as_object_mut().map(|root| {
        root.entry("metadata")
            .or_insert_with(|| Value::Object(Map::new()))
    }) {
        meta.insert("managedFields".into(), Value::Array(entries));
    }
}

/// `[]` or `[{}]`: a client clearing managedFields.
fn is_reset(sent: &Value) -> bool {
    match sent.as_array().map(Vec::as_slice) {
        Some([]) => true,
        Some([one]) => one.as_object().is_some_and(Map::is_empty),
        _ => false,
    }
}

/// Entries kube-apiserver would decode: objects with FieldsV1 trees.
fn well_formed(sent: &Value) -> bool {
    sent.as_array().is_some_and(|entries| {
        !entries.is_empty()
            && entries.iter().all(|e| {
                e["fieldsType"] == "FieldsV1" && e.get("fieldsV1").is_some_and(Value::is_object)
            })
    })
}

fn array(v: Value) -> Vec<Value> {
    match v {
        Value::Array(items) => items.into_iter().filter(Value::is_object).collect(),
        _ => Vec::new(),
    }
}

fn take_managed_fields(obj: &mut Value) -> Option<Value> {
    obj.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("managedFields"))
}

/// An entry's `fieldsV1`, made an object if it was missing or malformed.
fn fields_mut(e: &mut Value) -> Option<&mut Map<String, Value>> {
    let e = e.as_object_mut()?;
    let fields = e
        .entry("fieldsV1")
        .or_insert_with(|| Value::Object(Map::new()));
    if !fields.is_object() {
        *fields = Value::Object(Map::new());
    }
    fields.as_object_mut()
}

// ---------------------------------------------------------------------------------------------
// fieldsV1 trees
//
// A node's children are keyed by encoded path elements. A member with no children is `{}`; a
// member with children also holds `"."`; a node without `"."` that has children is only their
// ancestor.
// ---------------------------------------------------------------------------------------------

/// The key under which `node` holds `pe`: its encoding, or an equal key written differently (a
/// `k:` or `v:` key whose JSON a client spelled its own way).
fn find_key(node: &Map<String, Value>, pe: &Pe) -> Option<String> {
    let encoded = pe.encode();
    if node.contains_key(&encoded) {
        return Some(encoded);
    }
    if matches!(pe, Pe::Field(_)) {
        return None;
    }
    let prefix = &encoded[..2];
    node.keys()
        .filter(|k| k.starts_with(prefix))
        .find(|k| Pe::decode(k).is_some_and(|d| d == *pe))
        .cloned()
}

fn has_children(node: &Map<String, Value>) -> bool {
    node.keys().any(|k| k != ".")
}

/// Makes `path` a member of the tree.
fn mark(root: &mut Map<String, Value>, path: &[Pe]) {
    let mut node = root;
    for (i, pe) in path.iter().enumerate() {
        let last = i + 1 == path.len();
        let key = find_key(node, pe).unwrap_or_else(|| pe.encode());
        let existed = node.contains_key(&key);
        let child = node.entry(key).or_insert_with(|| Value::Object(Map::new()));
        if !child.is_object() {
            *child = Value::Object(Map::new());
        }
        let Value::Object(child) = child else { return };
        if existed {
            let member = !has_children(child) || child.contains_key(".");
            let gains_children = !last && !has_children(child);
            // A member leaf about to hold children, or a bare ancestor becoming a member.
            if (member && gains_children) || (last && !member) {
                child.insert(".".into(), Value::Object(Map::new()));
            }
        }
        node = child;
    }
}

/// Takes `path` out of the tree: only its own membership, or (`subtree`) everything under it too.
/// Returns whether anything changed. Ancestors left with nothing to hold go as well.
fn unmark(node: &mut Map<String, Value>, path: &[Pe], subtree: bool) -> bool {
    let Some((pe, rest)) = path.split_first() else {
        return false;
    };
    let Some(key) = find_key(node, pe) else {
        return false;
    };
    let Some(Value::Object(child)) = node.get_mut(&key) else {
        return false;
    };
    if rest.is_empty() {
        if subtree || !has_children(child) {
            node.remove(&key);
        } else {
            child.remove(".");
        }
        return true;
    }
    if !unmark(child, rest, subtree) {
        return false;
    }
    if !has_children(child) {
        if child.contains_key(".") {
            // Still a member, now without children.
            child.clear();
        } else {
            node.remove(&key);
        }
    }
    true
}

// ---------------------------------------------------------------------------------------------
// What a create owns
// ---------------------------------------------------------------------------------------------

/// The fieldsV1 tree of a new object: what changed from an empty one, whose fields take their Go
/// zero values. A list whose keys are duplicate or missing is taken as atomic.
fn fields_of_new(v: &Value, lists: &dyn ListTypes) -> Option<Map<String, Value>> {
    let empty = Value::Object(Map::new());
    let set = changed_fields(Some(&empty), v, lists)
        .or_else(|_| changed_fields(Some(&empty), v, &AtomicLists(lists)))
        .ok()?;
    match set_to_fields(&set) {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// What a write removed
// ---------------------------------------------------------------------------------------------

/// The paths present in `old` and gone from `new` (each standing for its whole subtree): map keys
/// dropped, keyed or set items dropped, and the children of a value whose type changed.
fn removed_fields(old: &Value, new: &Value, lists: &dyn ListTypes) -> Vec<Path> {
    let mut out = Vec::new();
    removed(old, new, &mut Vec::new(), &mut Vec::new(), lists, &mut out);
    out
}

fn removed(
    old: &Value,
    new: &Value,
    path: &mut Path,
    names: &mut Vec<String>,
    lists: &dyn ListTypes,
    out: &mut Vec<Path>,
) {
    if is_ignored(path) || old == new {
        return;
    }
    match (old, new) {
        (Value::Object(om), Value::Object(nm)) => {
            for (k, ov) in om {
                path.push(Pe::Field(k.clone()));
                match nm.get(k) {
                    None => {
                        if !is_ignored(path) {
                            out.push(path.clone());
                        }
                    }
                    Some(nv) => {
                        names.push(k.clone());
                        removed(ov, nv, path, names, lists, out);
                        names.pop();
                    }
                }
                path.pop();
            }
        }
        (Value::Array(oi), Value::Array(ni)) => {
            let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
            match lists.list_keys(&name_refs) {
                // Atomic lists are owned whole; nothing below them is tracked.
                None => {}
                Some(keys) if keys.is_empty() => {
                    for it in oi.iter().filter(|it| !ni.contains(it)) {
                        path.push(Pe::Val(it.clone()));
                        out.push(path.clone());
                        path.pop();
                    }
                }
                Some(keys) => {
                    let defaults = key_defaults(lists, &name_refs, &keys);
                    drop(name_refs);
                    for it in oi {
                        let Ok(pe) = item_key(it, &keys, &defaults) else {
                            continue;
                        };
                        let after = ni.iter().find(|n| item_matches(n, &pe));
                        path.push(pe);
                        match after {
                            None => out.push(path.clone()),
                            Some(n) => removed(it, n, path, names, lists, out),
                        }
                        path.pop();
                    }
                }
            }
        }
        // The type changed: whatever was below the old value is gone.
        (Value::Object(om), _) => {
            for k in om.keys() {
                path.push(Pe::Field(k.clone()));
                out.push(path.clone());
                path.pop();
            }
        }
        (Value::Array(oi), _) => {
            let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
            if let Some(keys) = lists.list_keys(&name_refs) {
                let defaults = key_defaults(lists, &name_refs, &keys);
                for it in oi {
                    let pe = if keys.is_empty() {
                        Some(Pe::Val(it.clone()))
                    } else {
                        item_key(it, &keys, &defaults).ok()
                    };
                    if let Some(pe) = pe {
                        path.push(pe);
                        out.push(path.clone());
                        path.pop();
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::super::{
        Entry, FieldSet, fields_to_set, read_entries, resolve, strip_managed_fields, write_entries,
    };
    use super::*;

    fn tree_set(fields: &Value) -> FieldSet {
        fields_to_set(fields)
    }
    use rstest::rstest;
    use serde_json::json;

    struct Types;

    impl ListTypes for Types {
        fn list_keys(&self, path: &[&str]) -> Option<Vec<String>> {
            match path {
                ["status", "conditions"] => Some(vec!["type".into()]),
                ["spec", "containers"] => Some(vec!["name".into()]),
                ["metadata", "finalizers"] => Some(vec![]),
                _ => None,
            }
        }

        fn zero(&self, path: &[&str]) -> Option<Value> {
            match path {
                ["metadata"] | ["spec"] => Some(json!({})),
                ["spec", "containers"] => Some(Value::Null),
                _ => None,
            }
        }
    }

    /// The set-based form this module replaced: every entry decoded into a path set, each path
    /// checked against the new object, every entry encoded again.
    fn reference(
        old: Option<&Value>,
        new: &mut Value,
        manager: &str,
        now: &str,
        subresource: &str,
    ) {
        let mut entries = read_entries(old);
        let mut old_clean = old.cloned();
        if let Some(o) = old_clean.as_mut() {
            strip_managed_fields(o);
        }
        strip_managed_fields(new);
        // A create compares with an empty object.
        let before = old_clean.unwrap_or_else(|| json!({}));
        let touched = changed_fields(Some(&before), new, &Types)
            .or_else(|_| changed_fields(Some(&before), new, &AtomicLists(&Types)))
            .expect("fields");
        let is_me = |e: &Entry| {
            !e.is_apply()
                && e.manager == manager
                && e.api_version == "v1"
                && e.subresource == subresource
        };
        for e in entries.iter_mut().filter(|e| !is_me(e)) {
            e.set.retain(|p| !touched.contains(p));
        }
        if !touched.is_empty() {
            match entries.iter_mut().find(|e| is_me(e)) {
                Some(e) => {
                    e.set.extend(touched);
                    e.time = Some(now.to_string());
                }
                None => entries.push(Entry {
                    manager: manager.to_string(),
                    operation: "Update".into(),
                    api_version: "v1".into(),
                    time: Some(now.to_string()),
                    subresource: subresource.to_string(),
                    set: touched,
                }),
            }
        }
        write_entries(new, entries);
    }

    fn wl(status: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "w"},
               "spec": {"containers": [{"name": "a", "image": "1"}]}, "status": status})
    }

    fn cond(t: &str, s: &str, msg: &str) -> Value {
        json!({"type": t, "status": s, "message": msg})
    }

    /// A run of writes by three managers, the kind a workload sees: each step's managedFields are
    /// the same whether computed in place or by the set-based reference.
    #[test]
    fn in_place_edits_match_the_set_based_reference() {
        let steps: Vec<(&str, &str, Value)> = vec![
            ("creator", "", wl(json!(null))),
            (
                "ctl",
                "status",
                wl(json!({"conditions": [cond("QuotaReserved", "False", "pending")]})),
            ),
            (
                "ctl",
                "status",
                wl(
                    json!({"conditions": [cond("QuotaReserved", "False", "pending, 2 more")],
                          "resourceRequests": [{"name": "main"}]}),
                ),
            ),
            (
                "ctl",
                "status",
                wl(json!({"admission": {"clusterQueue": "cq"},
                          "conditions": [cond("QuotaReserved", "True", "reserved"),
                                         cond("Admitted", "True", "admitted")]})),
            ),
            (
                "runner",
                "status",
                wl(json!({"admission": {"clusterQueue": "cq"},
                          "conditions": [cond("QuotaReserved", "True", "reserved"),
                                         cond("Admitted", "True", "admitted"),
                                         cond("Finished", "True", "done")]})),
            ),
            (
                "ctl",
                "status",
                wl(
                    json!({"conditions": [cond("QuotaReserved", "False", "evicted"),
                                         cond("Admitted", "False", "evicted"),
                                         cond("Finished", "True", "done")],
                          "requeueState": {"count": 1}}),
                ),
            ),
            ("ctl", "status", wl(json!({"requeueState": 3}))),
            ("runner", "status", wl(json!({"requeueState": {"at": "x"}}))),
            ("creator", "", {
                let mut w = wl(json!({"requeueState": {"at": "x"}}));
                w["metadata"]["finalizers"] = json!(["a", "b"]);
                w["spec"]["containers"] = json!([{"name": "a", "image": "2"}, {"name": "b"}]);
                w
            }),
            ("ctl", "", {
                let mut w = wl(json!({"requeueState": {"at": "x"}}));
                w["metadata"]["finalizers"] = json!(["b"]);
                w["spec"]["containers"] = json!([{"name": "b", "image": "3"}]);
                w
            }),
            ("creator", "", wl(json!(null))),
        ];
        let mut current: Option<Value> = None;
        for (i, (manager, sub, next)) in steps.into_iter().enumerate() {
            let now = format!("2026-01-01T00:00:{i:02}Z");
            let mut fast = next.clone();
            if let Some(c) = &current {
                fast["metadata"]["managedFields"] = c["metadata"]["managedFields"].clone();
            }
            record_update(
                current.as_ref(),
                &mut fast,
                manager,
                &now,
                "v1",
                sub,
                &Types,
            );
            let mut slow = next;
            reference(current.as_ref(), &mut slow, manager, &now, sub);
            assert_eq!(
                fast["metadata"]["managedFields"], slow["metadata"]["managedFields"],
                "step {i} by {manager}"
            );
            // Every path still owned exists in the object.
            for e in fast["metadata"]["managedFields"]
                .as_array()
                .into_iter()
                .flatten()
            {
                for p in tree_set(&e["fieldsV1"]) {
                    assert!(resolve(&fast, &p).is_some(), "step {i}: {p:?} is gone");
                }
            }
            current = Some(fast);
        }
    }

    /// A create owns what changed from the Go zero value: the structs and nil lists that value
    /// holds are no members of their own; added maps, lists and list items are.
    #[rstest]
    #[case::configmap(json!({"apiVersion": "v1", "kind": "X",
        "metadata": {"name": "n", "labels": {"a": "1"}, "finalizers": ["x", "y"]},
        "data": {"k": "v", "n": null, "empty": {}}}),
        json!({"f:data": {".": {}, "f:empty": {}, "f:k": {}, "f:n": {}},
               "f:metadata": {"f:finalizers": {".": {}, "v:\"x\"": {}, "v:\"y\"": {}},
                              "f:labels": {".": {}, "f:a": {}}}}))]
    #[case::zero_struct_and_nil_list(json!({"metadata": {"name": "n"},
        "spec": {"containers": [{"name": "a", "image": "1", "args": ["x"]}, {"name": "b"}], "args": ["p", "q"]},
        "status": {"conditions": [{"type": "Ready", "status": "True"}]}}),
        json!({"f:spec": {"f:args": {}, "f:containers": {
                   "k:{\"name\":\"a\"}": {".": {}, "f:args": {}, "f:image": {}, "f:name": {}},
                   "k:{\"name\":\"b\"}": {".": {}, "f:name": {}}}},
               "f:status": {".": {}, "f:conditions": {".": {}, "k:{\"type\":\"Ready\"}": {
                   ".": {}, "f:status": {}, "f:type": {}}}}}))]
    #[case::only_ignored_metadata(json!({"metadata": {"name": "n", "uid": "u"}, "spec": {}}), json!({}))]
    #[case::duplicate_keys_fall_back_to_atomic(
        json!({"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}),
        json!({"f:spec": {"f:containers": {}}})
    )]
    fn a_create_owns_what_the_zero_value_lacks(#[case] obj: Value, #[case] fields: Value) {
        assert_eq!(fields_of_new(&obj, &Types).map(Value::Object), Some(fields));
    }

    #[rstest]
    #[case::new_leaf(json!({}), &["f:a"], json!({"f:a": {}}))]
    #[case::new_nested(json!({}), &["f:a", "f:b"], json!({"f:a": {"f:b": {}}}))]
    #[case::leaf_gains_child(json!({"f:a": {}}), &["f:a", "f:b"], json!({"f:a": {".": {}, "f:b": {}}}))]
    #[case::ancestor_becomes_member(json!({"f:a": {"f:b": {}}}), &["f:a"], json!({"f:a": {".": {}, "f:b": {}}}))]
    #[case::already_member(json!({"f:a": {".": {}, "f:b": {}}}), &["f:a"], json!({"f:a": {".": {}, "f:b": {}}}))]
    fn mark_keeps_fields_v1_well_formed(
        #[case] tree: Value,
        #[case] path: &[&str],
        #[case] expected: Value,
    ) {
        let path: Path = path.iter().map(|k| Pe::decode(k).expect("key")).collect();
        let mut tree = tree;
        mark(tree.as_object_mut().expect("map"), &path);
        assert_eq!(tree, expected);
        let mut set = tree_set(&json!({}));
        set.extend(tree_set(&tree));
        assert_eq!(
            set_to_fields(&set),
            tree,
            "a tree the set encoding would write"
        );
    }

    #[rstest]
    #[case::leaf(json!({"f:a": {"f:b": {}, "f:c": {}}}), &["f:a", "f:b"], false, json!({"f:a": {"f:c": {}}}))]
    #[case::last_leaf_takes_bare_ancestor(json!({"f:a": {"f:b": {}}}), &["f:a", "f:b"], false, json!({}))]
    #[case::member_ancestor_stays(json!({"f:a": {".": {}, "f:b": {}}}), &["f:a", "f:b"], false, json!({"f:a": {}}))]
    #[case::membership_only(json!({"f:a": {".": {}, "f:b": {}}}), &["f:a"], false, json!({"f:a": {"f:b": {}}}))]
    #[case::subtree(json!({"f:a": {".": {}, "f:b": {}}, "f:z": {}}), &["f:a"], true, json!({"f:z": {}}))]
    #[case::absent(json!({"f:a": {}}), &["f:a", "f:b"], false, json!({"f:a": {}}))]
    #[case::key_spelled_differently(
        json!({"f:c": {"k:{\"port\":80.0}": {}}}),
        &["f:c", "k:{\"port\":80}"],
        true,
        json!({})
    )]
    fn unmark_removes_and_tidies(
        #[case] tree: Value,
        #[case] path: &[&str],
        #[case] subtree: bool,
        #[case] expected: Value,
    ) {
        let path: Path = path.iter().map(|k| Pe::decode(k).expect("key")).collect();
        let mut tree = tree;
        unmark(tree.as_object_mut().expect("map"), &path, subtree);
        assert_eq!(tree, expected);
    }
}
