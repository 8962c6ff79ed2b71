//! Server-side apply as a pure function: field ownership (`metadata.managedFields`, FieldsV1
//! encoding), merging of an applied configuration into the live object, conflict detection and
//! the conflict Status message, plus ownership tracking for non-apply writes.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

mod record;
pub mod types;
pub use record::record_update;

/// How an object's fields are typed, as structured-merge-diff sees them: from the CRD schema's
/// x-kubernetes-list-type/-list-map-keys, or the built-in types' OpenAPI (see `types`).
///
/// `path` holds object keys only (e.g. ["spec","containers","ports"]): a list's items are
/// addressed by the list's name.
pub trait ListTypes {
    /// For the list at `path`: Some(keys) when it is a map list keyed by those fields, None when
    /// atomic. (Sets of scalars: return Some(vec![]) meaning "set".)
    fn list_keys(&self, path: &[&str]) -> Option<Vec<String>>;

    /// Whether the struct or map at `path` (for a list, its items) is atomic: owned whole.
    fn atomic(&self, _path: &[&str]) -> bool {
        false
    }

    /// Whether the object at `path` is a map rather than a struct: an apply owns each of its keys
    /// (`"."` where a key holds more), where a struct's fields are owned only down to leaves.
    fn is_map(&self, _path: &[&str]) -> bool {
        false
    }

    /// The value the field at `path` has in a Go zero value of its parent: `{}` for a non-pointer
    /// struct, null for a nil list without `omitempty`. A write that sets such a field did not add
    /// it, so it owns only what is below. None for custom resources (they start out empty).
    fn zero(&self, _path: &[&str]) -> Option<Value> {
        None
    }

    /// The default of key field `key` of the items of the keyed list at `path`.
    fn key_default(&self, _path: &[&str], _key: &str) -> Option<Value> {
        None
    }
}

/// One apply conflict. `manager` is the plain manager name when the conflicting owner is an
/// `Apply` entry without subresource; otherwise it is the owner's JSON identifier (as the real
/// server keys managers), e.g. `{"manager":"kubectl-edit","operation":"Update","apiVersion":"v1"}`,
/// which [`conflict_message`] renders as `"kubectl-edit" using v1`.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    pub manager: String,
    pub field: String,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ApplyError {
    #[error("{0}")]
    Invalid(String),
    #[error("conflicts")]
    Conflicts(Vec<Conflict>),
}

// ---------------------------------------------------------------------------------------------
// Field paths and sets
// ---------------------------------------------------------------------------------------------

/// One step of a field path.
#[derive(Debug, Clone)]
enum Pe {
    Field(String),
    /// Key fields of a map-list item, sorted by name.
    Key(Vec<(String, Value)>),
    /// Item of a set list.
    Val(Value),
    Index(usize),
}

/// structured-merge-diff's order of value types: numbers, strings, booleans, lists, maps, null.
fn type_rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

fn cmp_value(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => {
            let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            x.partial_cmp(&y).unwrap_or(Ordering::Equal)
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Null, Value::Null) => Ordering::Equal,
        _ => type_rank(a)
            .cmp(&type_rank(b))
            .then_with(|| a.to_string().cmp(&b.to_string())),
    }
}

impl Pe {
    fn rank(&self) -> u8 {
        match self {
            Pe::Field(_) => 0,
            Pe::Key(_) => 1,
            Pe::Val(_) => 2,
            Pe::Index(_) => 3,
        }
    }

    /// FieldsV1 key: `f:name`, `k:{"name":"app"}`, `v:"x"`, `i:0`.
    fn encode(&self) -> String {
        match self {
            Pe::Field(n) => format!("f:{n}"),
            Pe::Key(fields) => {
                let inner: Vec<String> = fields
                    .iter()
                    .map(|(n, v)| format!("{}:{}", json_str(n), v))
                    .collect();
                format!("k:{{{}}}", inner.join(","))
            }
            Pe::Val(v) => format!("v:{v}"),
            Pe::Index(i) => format!("i:{i}"),
        }
    }

    /// Human-readable form used in conflict messages: `.name`, `[name="app"]`, `[="x"]`, `[0]`.
    fn display(&self) -> String {
        match self {
            Pe::Field(n) => format!(".{n}"),
            Pe::Key(fields) => {
                let inner: Vec<String> = fields.iter().map(|(n, v)| format!("{n}={v}")).collect();
                format!("[{}]", inner.join(","))
            }
            Pe::Val(v) => format!("[={v}]"),
            Pe::Index(i) => format!("[{i}]"),
        }
    }

    fn decode(s: &str) -> Option<Pe> {
        let (kind, rest) = s.split_once(':')?;
        match kind {
            "f" => Some(Pe::Field(rest.to_string())),
            "k" => match serde_json::from_str::<Value>(rest).ok()? {
                Value::Object(m) => {
                    let mut fields: Vec<(String, Value)> = m.into_iter().collect();
                    fields.sort_by(|a, b| a.0.cmp(&b.0));
                    Some(Pe::Key(fields))
                }
                _ => None,
            },
            "v" => serde_json::from_str::<Value>(rest).ok().map(Pe::Val),
            "i" => rest.parse().ok().map(Pe::Index),
            _ => None,
        }
    }
}

impl Ord for Pe {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Pe::Field(a), Pe::Field(b)) => a.cmp(b),
            (Pe::Key(a), Pe::Key(b)) => {
                for ((an, av), (bn, bv)) in a.iter().zip(b.iter()) {
                    let c = an.cmp(bn).then_with(|| cmp_value(av, bv));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (Pe::Val(a), Pe::Val(b)) => cmp_value(a, b),
            (Pe::Index(a), Pe::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for Pe {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Pe {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Pe {}

type Path = Vec<Pe>;
type FieldSet = BTreeSet<Path>;

fn json_str(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

fn path_display(p: &[Pe]) -> String {
    p.iter().map(Pe::display).collect()
}

#[derive(Default)]
struct Node {
    member: bool,
    children: BTreeMap<Pe, Node>,
}

fn set_to_fields(set: &FieldSet) -> Value {
    let mut root = Node::default();
    for path in set {
        let mut node = &mut root;
        for pe in path {
            node = node.children.entry(pe.clone()).or_default();
        }
        node.member = true;
    }
    Value::Object(node_to_json(&root, false))
}

fn node_to_json(node: &Node, include_self: bool) -> Map<String, Value> {
    let mut out = Map::new();
    for (pe, child) in &node.children {
        out.insert(
            pe.encode(),
            Value::Object(node_to_json(child, child.member)),
        );
    }
    if include_self && !node.children.is_empty() {
        out.insert(".".to_string(), Value::Object(Map::new()));
    }
    out
}

/// The keys of a fieldsV1 node in the order structured-merge-diff writes them (`"."` first, then
/// fields by name, then list keys and set values by their JSON values, so `k:{"port":80}` comes
/// before `k:{"port":443}`), for a node with two or more such keys; None for any other map, which
/// keeps its sorted order.
pub fn fields_v1_order(map: &Map<String, Value>) -> Option<Vec<&String>> {
    let mut keyed = 0;
    for k in map.keys() {
        if k.starts_with("k:") || k.starts_with("v:") {
            keyed += 1;
        } else if !(k == "." || k.starts_with("f:") || k.starts_with("i:")) {
            return None;
        }
    }
    if keyed < 2 {
        return None;
    }
    let mut keys = Vec::with_capacity(map.len());
    for k in map.keys() {
        let pe = match k.as_str() {
            "." => None,
            _ => Some(Pe::decode(k)?),
        };
        keys.push((pe, k));
    }
    keys.sort_by(|a, b| a.0.cmp(&b.0));
    Some(keys.into_iter().map(|(_, k)| k).collect())
}

fn fields_to_set(fields: &Value) -> FieldSet {
    let mut set = FieldSet::new();
    let mut path = Path::new();
    if let Value::Object(m) = fields {
        read_fields(m, &mut path, &mut set);
    }
    set
}

fn read_fields(m: &Map<String, Value>, path: &mut Path, set: &mut FieldSet) {
    for (k, v) in m {
        if k == "." {
            continue;
        }
        let Some(pe) = Pe::decode(k) else { continue };
        path.push(pe);
        match v {
            Value::Object(child) => {
                let has_children = child.keys().any(|ck| ck != "." && Pe::decode(ck).is_some());
                if !has_children || child.contains_key(".") {
                    set.insert(path.clone());
                }
                read_fields(child, path, set);
            }
            _ => {
                set.insert(path.clone());
            }
        }
        path.pop();
    }
}

// ---------------------------------------------------------------------------------------------
// Navigating objects by path
// ---------------------------------------------------------------------------------------------

fn item_matches(item: &Value, pe: &Pe) -> bool {
    match pe {
        // A key field the item leaves out stands for its default, which the key spells out.
        Pe::Key(fields) => {
            item.is_object()
                && fields
                    .iter()
                    .all(|(n, v)| item.get(n).is_none_or(|iv| iv == v))
        }
        Pe::Val(v) => item == v,
        _ => false,
    }
}

fn step<'a>(v: &'a Value, pe: &Pe) -> Option<&'a Value> {
    match (v, pe) {
        (Value::Object(m), Pe::Field(n)) => m.get(n),
        (Value::Array(a), Pe::Index(i)) => a.get(*i),
        (Value::Array(a), Pe::Key(_) | Pe::Val(_)) => a.iter().find(|it| item_matches(it, pe)),
        _ => None,
    }
}

fn resolve<'a>(v: &'a Value, path: &[Pe]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, pe| step(cur, pe))
}

fn resolve_mut<'a>(v: &'a mut Value, path: &[Pe]) -> Option<&'a mut Value> {
    let mut cur = v;
    for pe in path {
        cur = match (cur, pe) {
            (Value::Object(m), Pe::Field(n)) => m.get_mut(n)?,
            (Value::Array(a), Pe::Index(i)) => a.get_mut(*i)?,
            (Value::Array(a), Pe::Key(_) | Pe::Val(_)) => {
                a.iter_mut().find(|it| item_matches(it, pe))?
            }
            _ => return None,
        };
    }
    Some(cur)
}

fn remove_path(obj: &mut Value, path: &[Pe]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    let Some(parent) = resolve_mut(obj, parent) else {
        return;
    };
    match (parent, last) {
        (Value::Object(m), Pe::Field(n)) => {
            m.remove(n);
        }
        (Value::Array(a), Pe::Key(_) | Pe::Val(_)) => a.retain(|it| !item_matches(it, last)),
        (Value::Array(a), Pe::Index(i)) if *i < a.len() => {
            a.remove(*i);
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Object -> field set
// ---------------------------------------------------------------------------------------------

/// Fields the server never tracks ownership of.
fn is_ignored(path: &[Pe]) -> bool {
    const META: [&str; 10] = [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "managedFields",
        "creationTimestamp",
        "generation",
        "selfLink",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ];
    match path {
        [Pe::Field(f), ..] if f == "apiVersion" || f == "kind" => true,
        [Pe::Field(m), Pe::Field(f), ..] if m == "metadata" => META.contains(&f.as_str()),
        _ => false,
    }
}

struct Collector<'a> {
    lists: &'a dyn ListTypes,
    /// How a non-apply write is recorded (structured-merge-diff's comparison of the old and new
    /// objects): every map, list, struct and list item the write added is a member itself, as is
    /// an atomic value or leaf it changed. Otherwise (an apply) the set of the applied
    /// configuration: leaves, list items, map keys, empty maps and atomic values.
    maps_as_members: bool,
    set: FieldSet,
}

fn refs(names: &[String]) -> Vec<&str> {
    names.iter().map(String::as_str).collect()
}

impl Collector<'_> {
    /// Walks `v`; `old` is the same place in the previous version, if there was one. Where the
    /// old value is equal nothing is collected: only what the write added or changed.
    fn object(
        &mut self,
        m: &Map<String, Value>,
        old: Option<&Map<String, Value>>,
        path: &mut Path,
        names: &mut Vec<String>,
    ) -> Result<(), String> {
        // An applied map owns its keys (not only the leaves below them).
        let keys_owned =
            !self.maps_as_members && !path.is_empty() && self.lists.is_map(&refs(names));
        for (k, child) in m {
            path.push(Pe::Field(k.clone()));
            names.push(k.clone());
            // A field the old object lacks but its Go zero value holds was there all along.
            let zero;
            let before = match old {
                Some(o) => match o.get(k) {
                    Some(v) => Some(v),
                    None => {
                        zero = self.lists.zero(&refs(names));
                        zero.as_ref()
                    }
                },
                None => None,
            };
            if keys_owned && !is_ignored(path) {
                self.set.insert(path.clone());
            }
            let r = self.value(child, before, path, names);
            names.pop();
            path.pop();
            r?;
        }
        Ok(())
    }

    fn value(
        &mut self,
        v: &Value,
        old: Option<&Value>,
        path: &mut Path,
        names: &mut Vec<String>,
    ) -> Result<(), String> {
        if is_ignored(path) || old == Some(v) {
            return Ok(());
        }
        match v {
            Value::Object(m) => {
                let top_meta =
                    path.len() == 1 && matches!(&path[0], Pe::Field(f) if f == "metadata");
                if !top_meta && !path.is_empty() {
                    let atomic = self.lists.atomic(&refs(names));
                    let member = if self.maps_as_members {
                        // Added, an atomic value changed, or an empty map replacing nothing.
                        let old_filled = old
                            .and_then(Value::as_object)
                            .is_some_and(|o| !o.is_empty());
                        old.is_none() || atomic || (m.is_empty() && !old_filled)
                    } else {
                        atomic || m.is_empty()
                    };
                    if member {
                        self.set.insert(path.clone());
                    }
                    if atomic {
                        return Ok(());
                    }
                }
                self.object(m, old.and_then(Value::as_object), path, names)
            }
            Value::Array(items) => self.list(items, old, path, names),
            _ => {
                self.set.insert(path.clone());
                Ok(())
            }
        }
    }

    fn list(
        &mut self,
        items: &[Value],
        old: Option<&Value>,
        path: &mut Path,
        names: &mut Vec<String>,
    ) -> Result<(), String> {
        let name_refs = refs(names);
        let Some(keys) = self.lists.list_keys(&name_refs) else {
            self.set.insert(path.clone());
            return Ok(());
        };
        let old_items = old.and_then(Value::as_array);
        // A write that adds a set or keyed list owns the list too; an empty one replacing
        // nothing is a leaf.
        if self.maps_as_members
            && (old.is_none() || (items.is_empty() && old_items.is_none_or(Vec::is_empty)))
        {
            self.set.insert(path.clone());
        }
        if keys.is_empty() {
            let mut seen = BTreeSet::new();
            for it in items {
                let pe = Pe::Val(it.clone());
                if !seen.insert(pe.clone()) {
                    return Err(format!(
                        "{}: duplicate entries for key [={}]",
                        path_display(path),
                        it
                    ));
                }
                if old_items.is_none_or(|o| !o.contains(it)) {
                    path.push(pe);
                    self.set.insert(path.clone());
                    path.pop();
                }
            }
            return Ok(());
        }
        let atomic_items = self.lists.atomic(&name_refs);
        let defaults = key_defaults(self.lists, &name_refs, &keys);
        drop(name_refs);
        let mut seen = BTreeSet::new();
        for it in items {
            let pe = item_key(it, &keys, &defaults)
                .map_err(|e| format!("{}: {e}", path_display(path)))?;
            if !seen.insert(pe.clone()) {
                return Err(format!(
                    "{}: duplicate entries for key {}",
                    path_display(path),
                    pe.display()
                ));
            }
            let before = old_items.and_then(|o| o.iter().find(|x| item_matches(x, &pe)));
            if before == Some(it) {
                continue;
            }
            path.push(pe);
            // A new item is a member; so is a changed atomic one, which is not looked into.
            if before.is_none() || atomic_items {
                self.set.insert(path.clone());
            }
            let r = match it {
                Value::Object(m) if !atomic_items => {
                    self.object(m, before.and_then(Value::as_object), path, names)
                }
                _ => Ok(()),
            };
            path.pop();
            r?;
        }
        Ok(())
    }
}

/// The schema defaults of a keyed list's key fields, in the order of `keys`.
fn key_defaults(lists: &dyn ListTypes, path: &[&str], keys: &[String]) -> Vec<Option<Value>> {
    keys.iter().map(|k| lists.key_default(path, k)).collect()
}

/// The path element of an item of a keyed list: its key fields, sorted by name, a missing one
/// taking its schema default or left out (as structured-merge-diff does).
fn item_key(item: &Value, keys: &[String], defaults: &[Option<Value>]) -> Result<Pe, String> {
    let Value::Object(m) = item else {
        return Err(if item.is_null() {
            "associative list with keys may not have a null element".to_string()
        } else {
            "associative list with keys may not have non-map elements".to_string()
        });
    };
    let mut fields = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let default = defaults.get(i).and_then(Option::as_ref);
        if let Some(v) = m.get(k).or(default) {
            fields.push((k.clone(), v.clone()));
        }
    }
    if fields.is_empty() {
        let quoted: Vec<String> = keys.iter().map(|k| json_str(k)).collect();
        return Err(format!(
            "associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
            quoted.join(" ")
        ));
    }
    fields.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Pe::Key(fields))
}

fn to_field_set(
    v: &Value,
    lists: &dyn ListTypes,
    maps_as_members: bool,
) -> Result<FieldSet, String> {
    let mut c = Collector {
        lists,
        maps_as_members,
        set: FieldSet::new(),
    };
    c.value(v, None, &mut Vec::new(), &mut Vec::new())?;
    Ok(c.set)
}

/// The fields a non-apply write added or changed going from `old` to `new` (maps and map-list
/// items only when added), without listing the unchanged rest.
fn changed_fields(
    old: Option<&Value>,
    new: &Value,
    lists: &dyn ListTypes,
) -> Result<FieldSet, String> {
    let mut c = Collector {
        lists,
        maps_as_members: true,
        set: FieldSet::new(),
    };
    c.value(new, old, &mut Vec::new(), &mut Vec::new())?;
    Ok(c.set)
}

/// Whether the value at `path` differs between `old` and `new` (added or modified). Maps and
/// map-list items only count when they were added.
fn changed(path: &[Pe], old: Option<&Value>, new: &Value) -> bool {
    let Some(nv) = resolve(new, path) else {
        return false;
    };
    match old.and_then(|o| resolve(o, path)) {
        None => true,
        Some(ov) => !nv.is_object() && ov != nv,
    }
}

// ---------------------------------------------------------------------------------------------
// Merging
// ---------------------------------------------------------------------------------------------

fn merge_into(live: &mut Value, applied: &Value, names: &mut Vec<String>, lists: &dyn ListTypes) {
    // An atomic struct or map is replaced whole.
    if applied.is_object() && !names.is_empty() && lists.atomic(&refs(names)) {
        *live = applied.clone();
        return;
    }
    match (live, applied) {
        (Value::Object(lm), Value::Object(am)) => {
            for (k, av) in am {
                names.push(k.clone());
                match lm.get_mut(k) {
                    Some(lv) => merge_into(lv, av, names, lists),
                    None => {
                        lm.insert(k.clone(), av.clone());
                    }
                }
                names.pop();
            }
        }
        (live @ Value::Array(_), Value::Array(items)) => {
            let name_refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let keys = lists.list_keys(&name_refs);
            let Value::Array(litems) = live else { return };
            match keys {
                None => *litems = items.clone(),
                Some(keys) if keys.is_empty() => {
                    for it in items {
                        if !litems.contains(it) {
                            litems.push(it.clone());
                        }
                    }
                }
                Some(keys) => {
                    let defaults = key_defaults(lists, &name_refs, &keys);
                    drop(name_refs);
                    for it in items {
                        let Ok(pe) = item_key(it, &keys, &defaults) else {
                            continue;
                        };
                        match litems.iter_mut().find(|l| item_matches(l, &pe)) {
                            Some(l) => merge_into(l, it, names, lists),
                            None => litems.push(it.clone()),
                        }
                    }
                }
            }
        }
        (live, applied) => *live = applied.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// managedFields entries
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: Option<String>,
    subresource: String,
    set: FieldSet,
}

impl Entry {
    fn is_apply(&self) -> bool {
        self.operation == "Apply"
    }

    /// The manager identifier as the real server keys it (apiVersion only for Update).
    fn identifier(&self) -> String {
        let mut s = format!(
            "{{\"manager\":{},\"operation\":{}",
            json_str(&self.manager),
            json_str(&self.operation)
        );
        if !self.is_apply() {
            s.push_str(&format!(",\"apiVersion\":{}", json_str(&self.api_version)));
        }
        if !self.subresource.is_empty() {
            s.push_str(&format!(",\"subresource\":{}", json_str(&self.subresource)));
        }
        s.push('}');
        s
    }

    /// The name put into [`Conflict::manager`].
    fn conflict_label(&self) -> String {
        if self.is_apply() && self.subresource.is_empty() {
            self.manager.clone()
        } else {
            self.identifier()
        }
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), Value::String(self.manager.clone()));
        m.insert("operation".into(), Value::String(self.operation.clone()));
        m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::String(t.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), set_to_fields(&self.set));
        if !self.subresource.is_empty() {
            m.insert(
                "subresource".into(),
                Value::String(self.subresource.clone()),
            );
        }
        Value::Object(m)
    }
}

fn str_field(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn read_entries(obj: Option<&Value>) -> Vec<Entry> {
    let Some(list) = obj
        .and_then(|o| o.pointer("/metadata/managedFields"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    list.iter()
        .filter(|e| e.is_object())
        .map(|e| Entry {
            manager: str_field(e, "manager"),
            operation: str_field(e, "operation"),
            api_version: str_field(e, "apiVersion"),
            time: e.get("time").and_then(Value::as_str).map(str::to_string),
            subresource: str_field(e, "subresource"),
            set: e.get("fieldsV1").map(fields_to_set).unwrap_or_default(),
        })
        .collect()
}

/// Drops paths that no longer exist in `obj`, drops empty entries, sorts as the real server does
/// and stores the entries into `obj.metadata.managedFields` (removed when there are none).
fn write_entries(obj: &mut Value, mut entries: Vec<Entry>) {
    for e in &mut entries {
        e.set.retain(|p| resolve(obj, p).is_some());
    }
    entries.retain(|e| !e.set.is_empty());
    entries.sort_by(|p, q| {
        p.operation
            .cmp(&q.operation)
            .then_with(|| p.time.cmp(&q.time))
            .then_with(|| p.manager.cmp(&q.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.subresource.cmp(&q.subresource))
    });
    let Value::Object(root) = obj else { return };
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        if entries.is_empty() {
            meta.remove("managedFields");
        } else {
            meta.insert(
                "managedFields".into(),
                Value::Array(entries.iter().map(Entry::to_json).collect()),
            );
        }
    }
}

fn strip_managed_fields(obj: &mut Value) {
    if let Some(Value::Object(meta)) = obj.get_mut("metadata") {
        meta.remove("managedFields");
    }
}

/// True for a key field of a map-list item (kept as long as the item is).
fn is_key_field(path: &[Pe]) -> bool {
    match path {
        [.., Pe::Key(keys), Pe::Field(f)] => keys.iter().any(|(k, _)| k == f),
        _ => false,
    }
}

/// After `removed` is gone, remove the maps and lists it leaves empty that nobody owns, up to the
/// first one that still holds something: structured-merge-diff prunes what the applier stops
/// owning parents included (so `annotations: {}` does not stay behind).
fn prune_emptied_parents(obj: &mut Value, removed: &[Pe], owned: &dyn Fn(&[Pe]) -> bool) {
    let mut end = removed.len();
    while end > 1 {
        end -= 1;
        let parent = &removed[..end];
        // A list item keeps its key fields, so it is never empty; stop at list items.
        if !matches!(parent.last(), Some(Pe::Field(_))) || owned(parent) {
            return;
        }
        let empty = match resolve(obj, parent) {
            Some(Value::Object(m)) => m.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            _ => false,
        };
        if !empty {
            return;
        }
        remove_path(obj, parent);
    }
}

/// True when `path` or one of its descendants is in `set`.
fn owns_at_or_below(set: &FieldSet, path: &[Pe]) -> bool {
    set.range(path.to_vec()..)
        .next()
        .is_some_and(|p| p.starts_with(path))
}

// ---------------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------------

/// The result of an apply: the new object (with updated metadata.managedFields) to store.
#[allow(clippy::too_many_arguments)]
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    force: bool,
    now: &str,
    api_version: &str,
    subresource: &str,
    lists: &dyn ListTypes,
) -> Result<Value, ApplyError> {
    if !applied.is_object() {
        return Err(ApplyError::Invalid(
            "applied configuration must be an object".into(),
        ));
    }
    if applied
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApplyError::Invalid(
            "metadata.managedFields must be nil".into(),
        ));
    }
    let applied_set = to_field_set(applied, lists, false).map_err(ApplyError::Invalid)?;

    let mut entries = read_entries(live);
    let mut live_clean = live.cloned();
    if let Some(l) = live_clean.as_mut() {
        strip_managed_fields(l);
    }
    let mut merged = live_clean
        .clone()
        .unwrap_or_else(|| Value::Object(Map::new()));
    merge_into(&mut merged, applied, &mut Vec::new(), lists);

    let is_me = |e: &Entry| e.is_apply() && e.manager == manager && e.subresource == subresource;

    // Conflicts: fields another manager owns whose value this apply changes.
    let mut conflicts: Vec<(String, Path)> = Vec::new();
    for e in entries.iter().filter(|e| !is_me(e)) {
        for p in e.set.intersection(&applied_set) {
            if changed(p, live_clean.as_ref(), &merged) {
                conflicts.push((e.conflict_label(), p.clone()));
            }
        }
    }
    if !conflicts.is_empty() {
        if !force {
            conflicts.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
            return Err(ApplyError::Conflicts(
                conflicts
                    .into_iter()
                    .map(|(manager, p)| Conflict {
                        manager,
                        field: path_display(&p),
                    })
                    .collect(),
            ));
        }
        for e in entries.iter_mut().filter(|e| !is_me(e)) {
            let label = e.conflict_label();
            for (_, p) in conflicts.iter().filter(|(l, _)| *l == label) {
                e.set.remove(p);
            }
        }
    }

    // Fields this manager applied before but omits now: remove unless someone else owns them.
    let previous: FieldSet = entries
        .iter()
        .find(|e| is_me(e))
        .map(|e| e.set.clone())
        .unwrap_or_default();
    let others: FieldSet = entries
        .iter()
        .filter(|e| !is_me(e))
        .flat_map(|e| e.set.iter().cloned())
        .collect();
    // Ancestors first: once a list item is gone, its fields go with it.
    let owned = |p: &[Pe]| owns_at_or_below(&others, p) || owns_at_or_below(&applied_set, p);
    for p in previous.difference(&applied_set) {
        if !owned(p) && !is_key_field(p) {
            remove_path(&mut merged, p);
            prune_emptied_parents(&mut merged, p, &owned);
        }
    }

    let mine = Entry {
        manager: manager.to_string(),
        operation: "Apply".into(),
        api_version: api_version.to_string(),
        time: Some(now.to_string()),
        subresource: subresource.to_string(),
        set: applied_set,
    };
    match entries.iter_mut().find(|e| is_me(e)) {
        Some(e) => *e = mine,
        None => entries.push(mine),
    }
    write_entries(&mut merged, entries);
    Ok(merged)
}

/// Fallback list typing when the declared keys do not fit the data: every list atomic, the rest
/// as declared.
struct AtomicLists<'a>(&'a dyn ListTypes);

impl ListTypes for AtomicLists<'_> {
    fn list_keys(&self, _path: &[&str]) -> Option<Vec<String>> {
        None
    }

    fn atomic(&self, path: &[&str]) -> bool {
        self.0.atomic(path)
    }

    fn is_map(&self, path: &[&str]) -> bool {
        self.0.is_map(path)
    }

    fn zero(&self, path: &[&str]) -> Option<Value> {
        self.0.zero(path)
    }
}

fn print_manager(manager: &str) -> String {
    let Ok(Value::Object(m)) = serde_json::from_str::<Value>(manager) else {
        return json_str(manager);
    };
    let get = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or_default();
    let mut s = json_str(get("manager"));
    if !get("subresource").is_empty() {
        s.push_str(&format!(
            " with subresource {}",
            json_str(get("subresource"))
        ));
    }
    if get("operation") == "Update" {
        s.push_str(&format!(" using {}", get("apiVersion")));
        if !get("time").is_empty() {
            s.push_str(&format!(" at {}", get("time")));
        }
    }
    s
}

/// Sort key for grouping: the manager's JSON identifier, as the real server sorts.
fn manager_sort_key(manager: &str) -> String {
    if manager.starts_with('{') {
        manager.to_string()
    } else {
        format!(
            "{{\"manager\":{},\"operation\":\"Apply\"}}",
            json_str(manager)
        )
    }
}

/// The Status message for conflicts, worded as the real server words it.
pub fn conflict_message(conflicts: &[Conflict]) -> String {
    if let [c] = conflicts {
        return format!(
            "Apply failed with 1 conflict: conflict with {}: {}",
            print_manager(&c.manager),
            c.field
        );
    }
    let mut groups: BTreeMap<String, (String, Vec<&str>)> = BTreeMap::new();
    for c in conflicts {
        groups
            .entry(manager_sort_key(&c.manager))
            .or_insert_with(|| (print_manager(&c.manager), Vec::new()))
            .1
            .push(&c.field);
    }
    let mut lines = Vec::new();
    for (printed, fields) in groups.values() {
        lines.push(format!("conflicts with {printed}:"));
        lines.extend(fields.iter().map(|f| format!("- {f}")));
    }
    format!(
        "Apply failed with {} conflicts: {}",
        conflicts.len(),
        lines.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    struct Types;

    impl ListTypes for Types {
        fn list_keys(&self, path: &[&str]) -> Option<Vec<String>> {
            match path {
                ["spec", "containers"] => Some(vec!["name".into()]),
                ["spec", "containers", "ports"] => {
                    Some(vec!["protocol".into(), "containerPort".into()])
                }
                ["metadata", "finalizers"] => Some(vec![]),
                _ => None,
            }
        }
    }

    /// For well-formed lists, the walk that skips unchanged subtrees finds exactly the fields that
    /// listing every field of the new object and checking each one against the old finds.
    #[rstest]
    #[case::created(None, json!({"spec": {"a": 1, "m": {"x": 1}}}))]
    #[case::leaf_changed(
        Some(json!({"spec": {"a": 1, "b": 2}})),
        json!({"spec": {"a": 1, "b": 3}})
    )]
    #[case::map_added_and_removed(
        Some(json!({"spec": {"old": {"x": 1}}})),
        json!({"spec": {"new": {"y": 2}}})
    )]
    #[case::keyed_items(
        Some(json!({"spec": {"containers": [
            {"name": "a", "image": "1", "ports": [{"protocol": "TCP", "containerPort": 80}]},
            {"name": "b", "image": "1"}]}})),
        json!({"spec": {"containers": [
            {"name": "b", "image": "2"},
            {"name": "a", "image": "1", "ports": [
                {"protocol": "TCP", "containerPort": 80}, {"protocol": "UDP", "containerPort": 53}]},
            {"name": "c"}]}})
    )]
    #[case::set_and_atomic_lists(
        Some(json!({"metadata": {"finalizers": ["x"]}, "spec": {"args": ["a"]}})),
        json!({"metadata": {"finalizers": ["x", "y"]}, "spec": {"args": ["a", "b"]}})
    )]
    #[case::type_changed(
        Some(json!({"spec": {"v": {"x": 1}, "w": [1]}})),
        json!({"spec": {"v": 5, "w": {"k": 1}}})
    )]
    fn changed_fields_match_listing_every_field(#[case] old: Option<Value>, #[case] new: Value) {
        let all = to_field_set(&new, &Types, true).unwrap();
        // A set or keyed list is a member of its own only when it was added.
        let keyed_list = |p: &Path| {
            let names: Vec<&str> = p
                .iter()
                .filter_map(|pe| match pe {
                    Pe::Field(f) => Some(f.as_str()),
                    _ => None,
                })
                .collect();
            resolve(&new, p).is_some_and(Value::is_array) && Types.list_keys(&names).is_some()
        };
        let expected: FieldSet = all
            .into_iter()
            .filter(|p| {
                if keyed_list(p) {
                    old.as_ref().is_none_or(|o| resolve(o, p).is_none())
                } else {
                    changed(p, old.as_ref(), &new)
                }
            })
            .collect();
        assert_eq!(
            changed_fields(old.as_ref(), &new, &Types).unwrap(),
            expected
        );
    }

    #[test]
    fn duplicate_keys_in_an_unchanged_list_leave_the_changed_fields_keyed() {
        let port = json!({"protocol": "TCP", "containerPort": 53});
        let old =
            json!({"spec": {"containers": [{"name": "dns", "image": "1", "ports": [port, port]}]}});
        let mut new = old.clone();
        new["spec"]["containers"][0]["image"] = json!("2");
        let touched = changed_fields(Some(&old), &new, &Types).unwrap();
        let image = vec![
            Pe::Field("spec".into()),
            Pe::Field("containers".into()),
            Pe::Key(vec![("name".into(), json!("dns"))]),
            Pe::Field("image".into()),
        ];
        assert_eq!(touched, FieldSet::from([image]));
        // Changing the malformed list itself is refused, and the write falls back to atomic lists.
        new["spec"]["containers"][0]["ports"][0]["name"] = json!("x");
        assert!(changed_fields(Some(&old), &new, &Types).is_err());
    }

    fn ap(
        live: Option<&Value>,
        applied: Value,
        manager: &str,
        force: bool,
    ) -> Result<Value, ApplyError> {
        apply(
            live,
            &applied,
            manager,
            force,
            "2026-01-01T00:00:00Z",
            "v1",
            "",
            &Types,
        )
    }

    fn cm(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}, "data": data})
    }

    fn entries(obj: &Value) -> Vec<Value> {
        obj["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn fields_of(obj: &Value, manager: &str) -> Option<Value> {
        entries(obj)
            .into_iter()
            .find(|e| e["manager"] == manager)
            .map(|e| e["fieldsV1"].clone())
    }

    #[rstest]
    #[case::configmap(
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "c", "namespace": "ns", "labels": {"app": "x"}},
               "data": {"k": "v"}}),
        json!({"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:app": {}}}})
    )]
    #[case::map_list_items(
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
               "spec": {"containers": [{"name": "app", "image": "i",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}),
        json!({"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {
            ".": {}, "f:image": {}, "f:name": {},
            "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:protocol": {}}}
        }}}})
    )]
    #[case::set_and_atomic(
        json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "x", "finalizers": ["a/b"]},
               "spec": {"args": ["-v", "2"]}}),
        json!({"f:metadata": {"f:finalizers": {"v:\"a/b\"": {}}}, "f:spec": {"f:args": {}}})
    )]
    fn apply_creates_with_exact_fields(#[case] applied: Value, #[case] fields: Value) {
        let out = ap(None, applied.clone(), "alpha", false).expect("apply");
        assert_eq!(
            entries(&out),
            vec![
                json!({"manager": "alpha", "operation": "Apply", "apiVersion": "v1",
                        "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields})
            ]
        );
        let mut stripped = out.clone();
        strip_managed_fields(&mut stripped);
        assert_eq!(stripped, applied);
    }

    #[test]
    fn reapply_without_a_field_removes_it() {
        let one = ap(None, cm(json!({"a": "1", "b": "2"})), "alpha", false).expect("apply");
        let two = ap(Some(&one), cm(json!({"a": "1"})), "alpha", false).expect("apply");
        assert_eq!(two["data"], json!({"a": "1"}));
        assert_eq!(
            fields_of(&two, "alpha"),
            Some(json!({"f:data": {"f:a": {}}}))
        );
    }

    #[test]
    fn same_value_is_shared_and_survives_one_owner_leaving() {
        let one = ap(None, cm(json!({"k": "v", "a": "1"})), "alpha", false).expect("apply");
        let two = ap(Some(&one), cm(json!({"k": "v"})), "beta", false).expect("shared");
        assert_eq!(
            fields_of(&two, "alpha"),
            Some(json!({"f:data": {"f:a": {}, "f:k": {}}}))
        );
        assert_eq!(
            fields_of(&two, "beta"),
            Some(json!({"f:data": {"f:k": {}}}))
        );
        let three = ap(Some(&two), cm(json!({"a": "1"})), "alpha", false).expect("drop");
        assert_eq!(three["data"], json!({"a": "1", "k": "v"}));
        assert_eq!(
            fields_of(&three, "alpha"),
            Some(json!({"f:data": {"f:a": {}}}))
        );
    }

    #[test]
    fn different_value_conflicts_and_force_takes_ownership() {
        let one = ap(None, cm(json!({"k": "v", "a": "1"})), "alpha", false).expect("apply");
        let err = ap(Some(&one), cm(json!({"k": "w"})), "beta", false).expect_err("conflict");
        let conflicts = vec![Conflict {
            manager: "alpha".into(),
            field: ".data.k".into(),
        }];
        assert_eq!(err, ApplyError::Conflicts(conflicts.clone()));
        assert_eq!(
            conflict_message(&conflicts),
            "Apply failed with 1 conflict: conflict with \"alpha\": .data.k"
        );
        let forced = ap(Some(&one), cm(json!({"k": "w"})), "beta", true).expect("force");
        assert_eq!(forced["data"], json!({"k": "w", "a": "1"}));
        assert_eq!(
            fields_of(&forced, "alpha"),
            Some(json!({"f:data": {"f:a": {}}}))
        );
        assert_eq!(
            fields_of(&forced, "beta"),
            Some(json!({"f:data": {"f:k": {}}}))
        );
        // Entries ordered as the real server: operation, time, manager.
        let names: Vec<Value> = entries(&forced)
            .iter()
            .map(|e| e["manager"].clone())
            .collect();
        assert_eq!(names, vec![json!("alpha"), json!("beta")]);
    }

    #[test]
    fn update_manager_ownership_conflicts_with_apply() {
        let mut created = cm(json!({"k": "v"}));
        record_update(
            None,
            &mut created,
            "kubectl-create",
            "2026-01-01T00:00:00Z",
            "v1",
            "",
            &Types,
        );
        assert_eq!(
            entries(&created),
            vec![
                json!({"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                        "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:data": {".": {}, "f:k": {}}}})
            ]
        );
        let err = ap(Some(&created), cm(json!({"k": "w"})), "alpha", false).expect_err("conflict");
        let ApplyError::Conflicts(conflicts) = err else {
            panic!("expected conflicts")
        };
        assert_eq!(
            conflict_message(&conflicts),
            "Apply failed with 1 conflict: conflict with \"kubectl-create\" using v1: .data.k"
        );
        // Same value: shared, no conflict.
        let shared = ap(Some(&created), cm(json!({"k": "v"})), "alpha", false).expect("shared");
        assert_eq!(
            fields_of(&shared, "kubectl-create"),
            Some(json!({"f:data": {".": {}, "f:k": {}}}))
        );
        assert_eq!(entries(&shared)[0]["operation"], "Apply");
    }

    #[test]
    fn record_update_takes_only_changed_fields() {
        let one = ap(None, cm(json!({"a": "1", "b": "2"})), "alpha", false).expect("apply");
        let mut new = one.clone();
        new["data"]["a"] = json!("9");
        new["data"]["c"] = json!("3");
        new["data"].as_object_mut().expect("map").remove("b");
        record_update(
            Some(&one),
            &mut new,
            "editor",
            "2026-01-02T00:00:00Z",
            "v1",
            "",
            &Types,
        );
        assert_eq!(
            fields_of(&new, "alpha"),
            None,
            "alpha lost a, b was removed"
        );
        assert_eq!(
            fields_of(&new, "editor"),
            Some(json!({"f:data": {"f:a": {}, "f:c": {}}}))
        );
    }

    fn pod(containers: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": containers}})
    }

    #[test]
    fn map_list_merges_by_key_and_keeps_other_owners_items() {
        let one = ap(
            None,
            pod(json!([{"name": "app", "image": "a1"}])),
            "beta",
            false,
        )
        .expect("beta");
        let two = ap(
            Some(&one),
            pod(json!([{"name": "side", "image": "s1"}])),
            "alpha",
            false,
        )
        .expect("alpha");
        assert_eq!(
            two["spec"]["containers"],
            json!([{"name": "app", "image": "a1"}, {"name": "side", "image": "s1"}])
        );
        let err = ap(
            Some(&two),
            pod(json!([{"name": "app", "image": "a2"}])),
            "alpha",
            false,
        )
        .expect_err("conflict");
        assert_eq!(
            err,
            ApplyError::Conflicts(vec![Conflict {
                manager: "beta".into(),
                field: ".spec.containers[name=\"app\"].image".into()
            }])
        );
        let three = ap(Some(&two), pod(json!([])), "alpha", false).expect("drop side");
        assert_eq!(
            three["spec"]["containers"],
            json!([{"name": "app", "image": "a1"}])
        );
        assert_eq!(fields_of(&three, "alpha"), None);
    }

    #[test]
    fn atomic_list_is_replaced_whole() {
        let obj = |args: Value| json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"}, "spec": {"args": args}});
        let one = ap(None, obj(json!(["a", "b"])), "alpha", false).expect("apply");
        let two = ap(Some(&one), obj(json!(["c"])), "alpha", false).expect("apply");
        assert_eq!(two["spec"]["args"], json!(["c"]));
        let err = ap(Some(&two), obj(json!(["d"])), "beta", false).expect_err("conflict");
        assert_eq!(
            err,
            ApplyError::Conflicts(vec![Conflict {
                manager: "alpha".into(),
                field: ".spec.args".into()
            }])
        );
    }

    #[test]
    fn labels_are_owned_per_key() {
        let obj = |labels: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": labels}});
        let one = ap(None, obj(json!({"a": "1"})), "alpha", false).expect("alpha");
        let two = ap(Some(&one), obj(json!({"b": "2"})), "beta", false).expect("beta");
        assert_eq!(two["metadata"]["labels"], json!({"a": "1", "b": "2"}));
        assert_eq!(
            fields_of(&two, "beta"),
            Some(json!({"f:metadata": {"f:labels": {"f:b": {}}}}))
        );
        let err = ap(Some(&two), obj(json!({"a": "x"})), "beta", false).expect_err("conflict");
        assert_eq!(
            err,
            ApplyError::Conflicts(vec![Conflict {
                manager: "alpha".into(),
                field: ".metadata.labels.a".into()
            }])
        );
        let three = ap(Some(&two), obj(json!({})), "alpha", false).expect("drop");
        assert_eq!(three["metadata"]["labels"], json!({"b": "2"}));
        assert_eq!(three["metadata"]["name"], "c");
    }

    #[test]
    fn invalid_inputs_are_rejected() {
        let mut applied = cm(json!({}));
        applied["metadata"]["managedFields"] = json!([]);
        assert_eq!(
            ap(None, applied, "alpha", false),
            Err(ApplyError::Invalid(
                "metadata.managedFields must be nil".into()
            ))
        );
        let dup = pod(json!([{"name": "a"}, {"name": "a"}]));
        assert!(matches!(
            ap(None, dup, "alpha", false),
            Err(ApplyError::Invalid(_))
        ));
        let missing = pod(json!([{"image": "a"}]));
        assert!(matches!(
            ap(None, missing, "alpha", false),
            Err(ApplyError::Invalid(_))
        ));
    }

    #[test]
    fn fields_v1_round_trips() {
        let f = json!({"f:spec": {"f:containers": {"k:{\"name\":\"app\"}": {".": {}, "f:image": {}}}},
                       "f:metadata": {"f:finalizers": {"v:\"x\"": {}}, "f:labels": {".": {}, "f:a": {}}}});
        assert_eq!(set_to_fields(&fields_to_set(&f)), f);
    }

    #[test]
    fn two_managers_conflict_message_and_untouched_entries_keep_time() {
        let one = ap(None, cm(json!({"a": "1"})), "alpha", false).expect("alpha");
        let mut two = one.clone();
        two["data"]["b"] = json!("2");
        record_update(
            Some(&one),
            &mut two,
            "editor",
            "2026-01-02T00:00:00Z",
            "v1",
            "status",
            &Types,
        );
        let e = entries(&two);
        assert_eq!(e[0]["time"], "2026-01-01T00:00:00Z");
        assert_eq!(e[1]["subresource"], "status");
        let err =
            ap(Some(&two), cm(json!({"a": "x", "b": "y"})), "beta", false).expect_err("conflicts");
        let ApplyError::Conflicts(conflicts) = err else {
            panic!("expected conflicts")
        };
        assert_eq!(
            conflict_message(&conflicts),
            "Apply failed with 2 conflicts: conflicts with \"alpha\":\n- .data.a\nconflicts with \"editor\" with subresource \"status\" using v1:\n- .data.b"
        );
    }

    #[test]
    fn set_lists_union_items() {
        let obj = |f: Value| json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "x", "finalizers": f}});
        let one = ap(None, obj(json!(["a"])), "alpha", false).expect("alpha");
        let two = ap(Some(&one), obj(json!(["b"])), "beta", false).expect("beta");
        assert_eq!(two["metadata"]["finalizers"], json!(["a", "b"]));
        let three = ap(Some(&two), obj(json!([])), "alpha", false).expect("drop");
        assert_eq!(three["metadata"]["finalizers"], json!(["b"]));
    }

    fn c(manager: &str, field: &str) -> Conflict {
        Conflict {
            manager: manager.into(),
            field: field.into(),
        }
    }

    #[rstest]
    #[case::one(vec![c("alpha", ".data.k")], "Apply failed with 1 conflict: conflict with \"alpha\": .data.k")]
    #[case::two_same_manager(
        vec![c("alpha", ".data.a"), c("alpha", ".data.b")],
        "Apply failed with 2 conflicts: conflicts with \"alpha\":\n- .data.a\n- .data.b"
    )]
    #[case::two_managers_sorted(
        vec![c("beta", ".data.b"), c("alpha", ".data.a"), c("beta", ".data.c")],
        "Apply failed with 3 conflicts: conflicts with \"alpha\":\n- .data.a\nconflicts with \"beta\":\n- .data.b\n- .data.c"
    )]
    #[case::update_manager(
        vec![c(r#"{"manager":"kubectl-edit","operation":"Update","apiVersion":"apps/v1"}"#, ".spec.replicas")],
        "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using apps/v1: .spec.replicas"
    )]
    #[case::subresource(
        vec![c(r#"{"manager":"ctl","operation":"Apply","subresource":"status"}"#, ".status.x")],
        "Apply failed with 1 conflict: conflict with \"ctl\" with subresource \"status\": .status.x"
    )]
    fn conflict_message_wording(#[case] conflicts: Vec<Conflict>, #[case] expected: &str) {
        assert_eq!(conflict_message(&conflicts), expected);
    }
}
