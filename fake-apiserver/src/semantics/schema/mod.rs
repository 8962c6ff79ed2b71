//! CRD structural schemas (`apiextensions.k8s.io/v1` `openAPIV3Schema`): pruning, defaulting
//! and validation (OpenAPI keywords, list types and `x-kubernetes-validations` CEL rules),
//! following the real apiextensions-apiserver.

mod cel;
pub use cel::AdmissionExpression;
mod defaults;
mod formats;
mod prune;
mod validate;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde_json::Value;

/// A parsed structural schema of one CRD version.
#[derive(Debug)]
pub struct Schema {
    root: Node,
}

/// The JSON types a schema node can declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
}

impl Ty {
    fn parse(s: &str) -> Option<Ty> {
        Some(match s {
            "object" => Ty::Object,
            "array" => Ty::Array,
            "string" => Ty::String,
            "integer" => Ty::Integer,
            "number" => Ty::Number,
            "boolean" => Ty::Boolean,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Ty::Object => "object",
            Ty::Array => "array",
            Ty::String => "string",
            Ty::Integer => "integer",
            Ty::Number => "number",
            Ty::Boolean => "boolean",
        }
    }
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListType {
    Atomic,
    Set,
    Map,
}

/// One schema node.
#[derive(Debug, Default)]
struct Node {
    ty: Option<Ty>,
    nullable: bool,
    format: Option<String>,
    properties: BTreeMap<String, Node>,
    additional: Option<Box<Node>>,
    items: Option<Box<Node>>,
    required: Vec<String>,
    enumeration: Option<Vec<Value>>,
    pattern: Option<(String, regex::Regex)>,
    minimum: Option<f64>,
    maximum: Option<f64>,
    exclusive_minimum: bool,
    exclusive_maximum: bool,
    multiple_of: Option<f64>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    unique_items: bool,
    preserve_unknown: bool,
    embedded: bool,
    /// The object root (where `apiVersion`, `kind` and `metadata` live).
    resource_root: bool,
    int_or_string: bool,
    list_type: Option<ListType>,
    list_map_keys: Vec<String>,
    default: Option<Value>,
    /// Value validations: `anyOf`, `oneOf`, `allOf` and `not` (in structural schemas they
    /// only check values; pruning and defaulting ignore them).
    any_of: Vec<Node>,
    one_of: Vec<Node>,
    all_of: Vec<Node>,
    not: Option<Box<Node>>,
    rules: Vec<cel::Rule>,
    /// The fields of `self` the rules read, when they read fields only: all CEL is given of it.
    rule_reads: Option<std::collections::BTreeSet<String>>,
    /// Whether this node or any below it has CEL rules, and transition rules (`oldSelf`): what
    /// the CEL walk may skip.
    rules_below: bool,
    transition_rules_below: bool,
}

impl Node {
    /// The type name the real server shows as the value of a failed rule.
    fn type_name(&self) -> &'static str {
        self.ty.map(Ty::name).unwrap_or("")
    }

    /// The schema of the value under `key` of an object.
    fn child(&self, key: &str) -> Option<&Node> {
        self.properties.get(key).or(self.additional.as_deref())
    }
}

impl Schema {
    /// Parses a version's `openAPIV3Schema`. Errors name the offending schema path, e.g.
    /// `openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: ...`;
    /// every problem is reported, like the real server does.
    pub fn parse(open_api_v3_schema: &Value) -> Result<Schema, String> {
        Self::parse_all(open_api_v3_schema).map_err(|errs| errs.join(", "))
    }

    /// [`Schema::parse`], each problem on its own.
    pub fn parse_all(open_api_v3_schema: &Value) -> Result<Schema, Vec<String>> {
        let mut errs = Vec::new();
        // A structural schema is an object at the root.
        match open_api_v3_schema.get("type").and_then(Value::as_str) {
            None | Some("") => errs
                .push("openAPIV3Schema.type: Required value: must not be empty at the root".into()),
            Some("object") => {}
            Some(t) => errs.push(format!(
                "openAPIV3Schema.type: Invalid value: {t:?}: must be object at the root"
            )),
        }
        let mut root = parse_node(open_api_v3_schema, "openAPIV3Schema", &mut errs);
        if !errs.is_empty() {
            return Err(errs);
        }
        root.resource_root = true;
        Ok(Schema { root })
    }

    /// How the list at `path` (object keys only; list items are looked through) merges: `Some(keys)`
    /// for a map list, `Some([])` for a set, `None` for an atomic list or a path the schema lacks.
    pub fn list_keys(&self, path: &[&str]) -> Option<Vec<String>> {
        let mut node = &self.root;
        for key in path {
            while let Some(items) = node.items.as_deref() {
                node = items;
            }
            node = node.child(key)?;
        }
        match node.list_type {
            Some(ListType::Map) => Some(node.list_map_keys.clone()),
            Some(ListType::Set) => Some(Vec::new()),
            _ => None,
        }
    }

    /// Drops fields the schema does not know (unless `x-kubernetes-preserve-unknown-fields`).
    /// `apiVersion` and `kind` at the root (and in embedded resources) are kept; `metadata`
    /// there is reduced to ObjectMeta's own fields, like the real server's ObjectMeta coercion.
    pub fn prune(&self, obj: &mut Value) {
        prune::prune_reporting(&self.root, obj, true);
    }

    /// [`Schema::prune`], returning the dotted paths of the non-null fields it dropped, in the
    /// order they appear in the object.
    pub fn prune_reporting(&self, obj: &mut Value) -> Vec<String> {
        prune::prune_reporting(&self.root, obj, true)
    }

    /// Drops non-nullable nulls that have no default, then applies `default`s to absent (or
    /// non-nullable null) fields, recursively, like the real server.
    pub fn apply_defaults(&self, obj: &mut Value) {
        defaults::prune_nulls(Some(&self.root), obj);
        defaults::apply(&self.root, obj);
    }

    /// Whether [`Schema::apply_defaults`] would change `obj`.
    pub fn needs_defaults(&self, obj: &Value) -> bool {
        defaults::needed(Some(&self.root), obj)
    }

    /// Validates a whole object (after pruning and defaulting): OpenAPI keywords, list types,
    /// then CEL rules. `old` is the previous object on updates: it feeds `oldSelf`, and
    /// unchanged values are not failed again (the real server's validation ratcheting).
    pub fn validate(&self, obj: &Value, old: Option<&Value>) -> Vec<crate::error::FieldCause> {
        let mut errs = Vec::new();
        validate::schema(&self.root, obj, old, "", true, &mut errs);
        validate::lists(&self.root, obj, old, "", &mut errs);
        if !self.root.rules_below {
            return errs;
        }
        // Like apiextensions-apiserver, CEL rules are not run on an object whose type, enum,
        // required or size checks failed (the rules would read fields of the wrong shape); one
        // cause says so instead.
        let blocking = errs.iter().any(|e| {
            use crate::error::CauseReason::*;
            matches!(
                e.reason,
                NotSupported | Required | TooLong | TooMany | TypeInvalid
            )
        });
        if blocking {
            errs.push(crate::error::FieldCause {
                reason: crate::error::CauseReason::Invalid,
                field: "<nil>".into(),
                message: "Invalid value: null: some validation rules were not checked because \
                          the object was invalid; correct the existing errors to complete validation"
                    .into(),
            });
        } else {
            cel::validate(&self.root, obj, old, &mut errs);
        }
        errs
    }
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn parse_node(v: &Value, path: &str, errs: &mut Vec<String>) -> Node {
    match parse_node_fallible(v, path, errs) {
        Ok(n) => n,
        Err(e) => {
            errs.push(e);
            Node::default()
        }
    }
}

fn parse_node_fallible(v: &Value, path: &str, errs: &mut Vec<String>) -> Result<Node, String> {
    let Some(m) = v.as_object() else {
        return Err(format!("{path}: Invalid value: must be an object"));
    };
    let mut n = Node::default();
    let str_of = |k: &str| m.get(k).and_then(Value::as_str);
    let bool_of = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
    let u64_of = |k: &str| m.get(k).and_then(Value::as_u64);
    let f64_of = |k: &str| m.get(k).and_then(Value::as_f64);
    if let Some(t) = str_of("type") {
        n.ty = Ty::parse(t);
        if n.ty.is_none() {
            errs.push(format!(
                "{path}.type: Unsupported value: {t:?}: supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""
            ));
        }
    }
    n.nullable = bool_of("nullable");
    n.format = str_of("format").map(str::to_string);
    n.preserve_unknown = bool_of("x-kubernetes-preserve-unknown-fields");
    n.embedded = bool_of("x-kubernetes-embedded-resource");
    n.int_or_string = bool_of("x-kubernetes-int-or-string");
    n.unique_items = bool_of("uniqueItems");
    if n.unique_items {
        errs.push(format!(
            "{path}.uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
        ));
    }
    n.exclusive_minimum = bool_of("exclusiveMinimum");
    n.exclusive_maximum = bool_of("exclusiveMaximum");
    n.minimum = f64_of("minimum");
    n.maximum = f64_of("maximum");
    n.multiple_of = f64_of("multipleOf");
    n.min_length = u64_of("minLength");
    n.max_length = u64_of("maxLength");
    n.min_items = u64_of("minItems");
    n.max_items = u64_of("maxItems");
    n.min_properties = u64_of("minProperties");
    n.max_properties = u64_of("maxProperties");
    n.enumeration = m.get("enum").and_then(Value::as_array).cloned();
    n.required = strings_of(m, "required");
    if let Some(p) = str_of("pattern") {
        let re = regex::Regex::new(p).map_err(|e| {
            format!("{path}.pattern: Invalid value: {p:?}: must be a valid regular expression, but isn't: {e}")
        })?;
        n.pattern = Some((p.to_string(), re));
    }
    n.list_type = match str_of("x-kubernetes-list-type") {
        None => None,
        Some("atomic") => Some(ListType::Atomic),
        Some("set") => Some(ListType::Set),
        Some("map") => Some(ListType::Map),
        Some(other) => {
            errs.push(format!(
                "{path}.x-kubernetes-list-type: Unsupported value: {other:?}: supported values: \"atomic\", \"set\", \"map\""
            ));
            None
        }
    };
    n.list_map_keys = strings_of(m, "x-kubernetes-list-map-keys");
    if n.list_type == Some(ListType::Map) && n.list_map_keys.is_empty() {
        errs.push(format!(
            "{path}.x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
        ));
    }
    if let Some(props) = m.get("properties").and_then(Value::as_object) {
        for (k, pv) in props {
            let sub_path = format!("{path}.properties[{k}]");
            // Every field of a structural schema has a type, except the ones that say they
            // hold anything (unknown fields kept, int-or-string, embedded resources).
            let untyped = pv
                .get("type")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty);
            let exempt = [
                "x-kubernetes-preserve-unknown-fields",
                "x-kubernetes-int-or-string",
                "x-kubernetes-embedded-resource",
            ]
            .iter()
            .any(|x| pv.get(*x) == Some(&Value::Bool(true)));
            if untyped && !exempt {
                errs.push(format!(
                    "{sub_path}.type: Required value: must not be empty for specified object fields"
                ));
            }
            let sub = parse_node(pv, &sub_path, errs);
            n.properties.insert(k.clone(), sub);
        }
    }
    match m.get("additionalProperties") {
        Some(ap @ Value::Object(_)) => {
            n.additional = Some(Box::new(parse_node(
                ap,
                &format!("{path}.additionalProperties"),
                errs,
            )));
        }
        Some(Value::Bool(true)) => n.preserve_unknown = true,
        _ => {}
    }
    if let Some(items) = m.get("items") {
        n.items = Some(Box::new(parse_node(items, &format!("{path}.items"), errs)));
    } else if n.ty == Some(Ty::Array) {
        errs.push(format!("{path}.items: Required value: must be specified"));
    }
    for (key, list) in [
        ("anyOf", &mut n.any_of),
        ("oneOf", &mut n.one_of),
        ("allOf", &mut n.all_of),
    ] {
        for (i, branch) in m
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            list.push(parse_node(branch, &format!("{path}.{key}[{i}]"), errs));
        }
    }
    if let Some(not) = m.get("not") {
        n.not = Some(Box::new(parse_node(not, &format!("{path}.not"), errs)));
    }
    if let Some(rules) = m.get("x-kubernetes-validations").and_then(Value::as_array) {
        for (i, r) in rules.iter().enumerate() {
            match cel::Rule::parse(r, &format!("{path}.x-kubernetes-validations[{i}]")) {
                Ok(rule) => n.rules.push(rule),
                Err(e) => errs.push(e),
            }
        }
    }
    n.rule_reads = cel::fields_read(&n.rules);
    let children = n
        .properties
        .values()
        .chain(n.additional.as_deref())
        .chain(n.items.as_deref());
    let (mut rules_below, mut transition_below) = (false, false);
    for child in children {
        rules_below |= child.rules_below;
        transition_below |= child.transition_rules_below;
    }
    n.rules_below = rules_below || !n.rules.is_empty();
    n.transition_rules_below = transition_below || n.rules.iter().any(cel::Rule::is_transition);
    if let Some(d) = m.get("default") {
        // A default must be pruned already: the real server refuses one with unknown fields.
        let mut pruned = d.clone();
        let dropped = prune::prune_reporting(&n, &mut pruned, n.embedded);
        if !dropped.is_empty() {
            errs.push(format!(
                "{path}.default: Invalid value: {}: must not have unknown fields",
                validate::go_value(d)
            ));
        }
        n.default = Some(pruned);
    }
    Ok(n)
}

/// The strings of an array-of-strings keyword (`required`, `x-kubernetes-list-map-keys`).
fn strings_of(m: &serde_json::Map<String, Value>, key: &str) -> Vec<String> {
    m.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}
