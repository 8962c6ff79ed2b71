//! `x-kubernetes-validations` CEL rules, evaluated with kube-cel's Kubernetes libraries.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, LazyLock};

use kube_cel::KubeCelExt;
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};
use kube_cel::cel::{Context, Program, Value as Cel};
use serde_json::Value;

use super::validate::{correlate_list_item, go_value};
use super::{Node, Ty, child_path};
use crate::error::{CauseReason, FieldCause};

/// The `reason` of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reason {
    Invalid,
    Forbidden,
    Required,
    Duplicate,
}

/// One compiled `x-kubernetes-validations` entry.
#[derive(Debug)]
pub(super) struct Rule {
    rule: String,
    program: Program,
    message: Option<String>,
    message_expression: Option<Program>,
    reason: Reason,
    /// The rule's `fieldPath`, as a suffix of a field path (`.a.b[k]`).
    field_path: Option<String>,
    /// Whether the rule refers to `oldSelf`.
    transition: bool,
    /// `optionalOldSelf`: evaluated on create too, with `oldSelf` an optional.
    optional_old_self: bool,
    /// The fields of `self` and `oldSelf` the rule and its message read, as CEL names; `None`
    /// when it uses the value some other way (iterates it, passes it to a function).
    reads: Reads,
}

impl Rule {
    /// Parses and compiles one rule; errors are CRD problems at `path`.
    pub(super) fn parse(v: &Value, path: &str) -> Result<Rule, String> {
        let get = |k: &str| v.get(k).and_then(Value::as_str);
        let rule = get("rule")
            .filter(|r| !r.trim().is_empty())
            .ok_or_else(|| format!("{path}.rule: Required value"))?
            .to_string();
        let compiled = Program::compile(&rule).and_then(|program| {
            // cel-go checks every name against the declared variables when it compiles a rule;
            // kube-cel only parses, so an unknown name would fail each evaluation instead.
            match undeclared(program.expression(), &mut Vec::new()) {
                Some(name) => Err(undeclared_error(&rule, name)),
                None => Ok(program),
            }
        });
        let program = compiled.map_err(|e| {
            // The real server shows the whole rule, as the JSON of its Go struct.
            let text = |k: &str| Value::String(get(k).unwrap_or("").to_string());
            let or_null = |k: &str| v.get(k).cloned().unwrap_or(Value::Null);
            format!(
                "{path}.rule: Invalid value: {{\"Rule\":{},\"Message\":{},\"MessageExpression\":{},\"Reason\":{},\"FieldPath\":{},\"OptionalOldSelf\":{}}}: compilation failed: {e}",
                text("rule"),
                text("message"),
                text("messageExpression"),
                or_null("reason"),
                text("fieldPath"),
                or_null("optionalOldSelf"),
            )
        })?;
        let message_expression = match get("messageExpression") {
            Some(me) => Some(Program::compile(me).map_err(|e| {
                format!(
                    "{path}.messageExpression: Invalid value: {me:?}: messageExpression compilation failed: {e}"
                )
            })?),
            None => None,
        };
        let reason = match get("reason") {
            None | Some("FieldValueInvalid") => Reason::Invalid,
            Some("FieldValueForbidden") => Reason::Forbidden,
            Some("FieldValueRequired") => Reason::Required,
            Some("FieldValueDuplicate") => Reason::Duplicate,
            Some(other) => {
                return Err(format!(
                    "{path}.reason: Unsupported value: {other:?}: supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
                ));
            }
        };
        let field_path = match get("fieldPath") {
            Some(fp) if !fp.is_empty() => Some(normalize_field_path(fp).ok_or_else(|| {
                format!("{path}.fieldPath: Invalid value: {fp:?}: fieldPath must be a valid path")
            })?),
            _ => None,
        };
        let transition = program.references().has_variable("oldSelf");
        let mut reads = Reads::default();
        for p in std::iter::once(&program).chain(&message_expression) {
            reads.collect(p.expression());
        }
        Ok(Rule {
            message: get("message")
                .map(str::trim)
                .filter(|m| !m.is_empty())
                .map(str::to_string),
            rule,
            program,
            message_expression,
            reason,
            field_path,
            transition,
            optional_old_self: v
                .get("optionalOldSelf")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            reads,
        })
    }

    /// Whether the rule compares with the old value (`oldSelf`).
    pub(super) fn is_transition(&self) -> bool {
        self.transition
    }

    /// The rule text or message used in error details.
    fn error_string(&self) -> String {
        self.message
            .clone()
            .unwrap_or_else(|| self.rule.trim().to_string())
    }

    fn default_message(&self) -> String {
        match &self.message {
            Some(m) => m.clone(),
            None => format!("failed rule: {}", self.rule.trim()),
        }
    }
}

/// Which fields of `self` and `oldSelf` a rule reads. A rule on a large object (a Workload's
/// `status`) usually reads one or two fields; only those are converted to CEL.
#[derive(Debug, Default, Clone)]
struct Reads {
    /// Fields selected directly on `self` or `oldSelf` (`self.x`, `has(self.x)`).
    fields: BTreeSet<String>,
    /// Whether the value is also used whole.
    whole: bool,
}

impl Reads {
    fn collect(&mut self, e: &IdedExpr) {
        match &e.expr {
            Expr::Select(sel) => match &sel.operand.expr {
                Expr::Ident(v) if is_self(v) => {
                    self.fields.insert(sel.field.clone());
                }
                _ => self.collect(&sel.operand),
            },
            Expr::Ident(v) if is_self(v) => self.whole = true,
            Expr::Call(call) => {
                if let Some(t) = &call.target {
                    self.collect(t);
                }
                call.args.iter().for_each(|a| self.collect(a));
            }
            Expr::Comprehension(c) => {
                for x in [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ] {
                    self.collect(x);
                }
            }
            Expr::List(l) => l.elements.iter().for_each(|x| self.collect(x)),
            Expr::Map(m) => m.entries.iter().for_each(|x| self.collect_entry(&x.expr)),
            Expr::Struct(st) => st.entries.iter().for_each(|x| self.collect_entry(&x.expr)),
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }

    fn collect_entry(&mut self, e: &EntryExpr) {
        match e {
            EntryExpr::StructField(f) => self.collect(&f.value),
            EntryExpr::MapEntry(m) => {
                self.collect(&m.key);
                self.collect(&m.value);
            }
        }
    }
}

/// The names a rule may read: its variables, and CEL's type names (`int`, `type(x) == string`).
const DECLARED: &[&str] = &[
    "self",
    "oldSelf",
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
];

/// The first name `e` reads that is neither declared nor bound by a macro (`all(x, ...)`) around
/// it. A call's target may be a namespace (`optional.of`, `math.greatest`): it is not looked at.
fn undeclared<'e>(e: &'e IdedExpr, bound: &mut Vec<&'e str>) -> Option<&'e str> {
    match &e.expr {
        Expr::Ident(name) => {
            let known = DECLARED.contains(&name.as_str()) || bound.contains(&name.as_str());
            (!known).then_some(name.as_str())
        }
        Expr::Select(sel) => undeclared(&sel.operand, bound),
        Expr::Call(call) => {
            let target = call.target.as_deref().filter(|t| !is_namespace(t));
            target
                .into_iter()
                .chain(&call.args)
                .find_map(|x| undeclared(x, bound))
        }
        Expr::Comprehension(c) => {
            if let Some(name) = [&c.iter_range, &c.accu_init]
                .into_iter()
                .find_map(|x| undeclared(x, bound))
            {
                return Some(name);
            }
            let outer = bound.len();
            bound.push(&c.iter_var);
            bound.extend(c.iter_var2.as_deref());
            bound.push(&c.accu_var);
            let found = [&c.loop_cond, &c.loop_step, &c.result]
                .into_iter()
                .find_map(|x| undeclared(x, bound));
            bound.truncate(outer);
            found
        }
        Expr::List(l) => l.elements.iter().find_map(|x| undeclared(x, bound)),
        Expr::Map(m) => m
            .entries
            .iter()
            .find_map(|x| entry_undeclared(&x.expr, bound)),
        Expr::Struct(st) => st
            .entries
            .iter()
            .find_map(|x| entry_undeclared(&x.expr, bound)),
        Expr::Literal(_) | Expr::Unspecified => None,
    }
}

fn entry_undeclared<'e>(e: &'e EntryExpr, bound: &mut Vec<&'e str>) -> Option<&'e str> {
    match e {
        EntryExpr::StructField(f) => undeclared(&f.value, bound),
        EntryExpr::MapEntry(m) => undeclared(&m.key, bound).or_else(|| undeclared(&m.value, bound)),
    }
}

/// A name, or a dotted path of names, that can only be a function's namespace.
fn is_namespace(e: &IdedExpr) -> bool {
    match &e.expr {
        Expr::Ident(name) => !DECLARED.contains(&name.as_str()),
        Expr::Select(sel) => is_namespace(&sel.operand),
        _ => false,
    }
}

/// cel-go's words for an undeclared name, placed at the first free-standing use of the name in
/// the rule's text (the parsed rule keeps no positions).
fn undeclared_error(rule: &str, name: &str) -> kube_cel::cel::ParseErrors {
    let at = rule
        .match_indices(name)
        .map(|(i, _)| i)
        .find(|&i| {
            let before = rule[..i].chars().next_back();
            let after = rule[i + name.len()..].chars().next();
            let part_of_name = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            !part_of_name(before) && !part_of_name(after) && before != Some('.')
        })
        .unwrap_or(0);
    let line = rule[..at].matches('\n').count() as isize + 1;
    let column = rule[..at]
        .rsplit('\n')
        .next()
        .map_or(0, |l| l.chars().count()) as isize;
    kube_cel::cel::ParseErrors {
        errors: vec![kube_cel::cel::ParseError {
            source: None,
            pos: (line, column + 1),
            msg: format!("undeclared reference to '{name}' (in container '')"),
            expr_id: 0,
            source_info: None,
        }],
    }
}

/// The fields of `self` every one of `rules` reads, or `None` when one of them needs the whole
/// value. Computed once per schema node.
pub(super) fn fields_read(rules: &[Rule]) -> Option<BTreeSet<String>> {
    let mut all = BTreeSet::new();
    for r in rules {
        if r.reads.whole {
            return None;
        }
        all.extend(r.reads.fields.iter().cloned());
    }
    Some(all)
}

fn is_self(name: &str) -> bool {
    name == "self" || name == "oldSelf"
}

/// Turns `.a.b['c']` into the suffix `.a.b[c]`.
fn normalize_field_path(fp: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = fp;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end == 0 {
                return None;
            }
            out.push('.');
            out.push_str(&r[..end]);
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['") {
            let end = r.find("']")?;
            out.push('[');
            out.push_str(&r[..end].replace("\\'", "'"));
            out.push(']');
            rest = &r[end + 2..];
        } else {
            return None;
        }
    }
    Some(out)
}

const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Escapes a property name for CEL access, like the real server; `None` if inaccessible.
fn escape(name: &str) -> Option<String> {
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || "_.-/".contains(c));
    if !first_ok || !chars.all(|c| c.is_ascii_alphanumeric() || "_.-/".contains(c)) {
        return None;
    }
    Some(
        name.replace("__", "__underscores__")
            .replace('.', "__dot__")
            .replace('-', "__dash__")
            .replace('/', "__slash__"),
    )
}

/// Programs converting a formatted string the way the real server types it in CEL.
static TIMESTAMP: LazyLock<Option<Program>> =
    LazyLock::new(|| Program::compile("timestamp(s)").ok());
static DURATION: LazyLock<Option<Program>> = LazyLock::new(|| Program::compile("duration(s)").ok());
static OPTIONAL_NONE: LazyLock<Option<Program>> =
    LazyLock::new(|| Program::compile("optional.none()").ok());
static OPTIONAL_OF: LazyLock<Option<Program>> =
    LazyLock::new(|| Program::compile("optional.of(s)").ok());
static BYTES: LazyLock<Option<Program>> =
    LazyLock::new(|| Program::compile("base64.decode(s)").ok());

/// `oldSelf` for a rule with `optionalOldSelf`: `optional.of(old)` or `optional.none()`.
fn optional(ctx: &Context, old: Option<&Cel>) -> Option<Cel> {
    let mut scope = ctx.new_inner_scope();
    let program = match old {
        Some(o) => {
            scope.add_variable_from_value("s", o.clone());
            &OPTIONAL_OF
        }
        None => &OPTIONAL_NONE,
    };
    program.as_ref()?.execute(&scope).ok()
}

/// A `date-time`, `duration` or `byte` string as a CEL timestamp, duration or bytes.
fn formatted(ctx: &Context, format: &str, s: &str) -> Option<Cel> {
    let program = match format {
        "date-time" => &TIMESTAMP,
        "duration" => &DURATION,
        "byte" => &BYTES,
        _ => return None,
    };
    let mut scope = ctx.new_inner_scope();
    scope.add_variable_from_value("s", s.to_string());
    program.as_ref()?.execute(&scope).ok()
}

/// Converts a JSON value to CEL, typed by its schema node.
fn to_cel(ctx: &Context, node: Option<&Node>, v: &Value) -> Cel {
    to_cel_reading(ctx, node, v, None)
}

/// [`to_cel`], keeping of an object only the fields in `only` (CEL names), when given.
fn to_cel_reading(
    ctx: &Context,
    node: Option<&Node>,
    v: &Value,
    only: Option<&BTreeSet<String>>,
) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            let want_float = node.is_some_and(|n| n.ty == Some(Ty::Number));
            match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) if !want_float => Cel::Int(i),
                (None, Some(u), _) if !want_float => Cel::UInt(u),
                (_, _, Some(f)) => Cel::Float(f),
                _ => Cel::Null,
            }
        }
        Value::String(s) => node
            .filter(|n| n.ty == Some(Ty::String))
            .and_then(|n| n.format.as_deref())
            .and_then(|f| formatted(ctx, f, s))
            .unwrap_or_else(|| Cel::String(Arc::new(s.clone()))),
        Value::Array(items) => {
            let item = node.and_then(|n| n.items.as_deref());
            Cel::List(Arc::new(
                items.iter().map(|x| to_cel(ctx, item, x)).collect(),
            ))
        }
        Value::Object(m) => {
            let mut out: HashMap<String, Cel> = HashMap::new();
            for (k, x) in m {
                let (sub, named) = match node {
                    Some(n) if n.properties.contains_key(k) => (n.properties.get(k), true),
                    Some(n) if n.additional.is_some() => (n.additional.as_deref(), false),
                    // Unknown fields (preserved or embedded) are accessed as properties.
                    Some(_) => (None, true),
                    None => (None, false),
                };
                let key = if named { escape(k) } else { Some(k.clone()) };
                let Some(key) = key else { continue };
                if only.is_some_and(|o| !o.contains(&key)) {
                    continue;
                }
                let resource = node.is_some_and(|n| n.resource_root || n.embedded);
                if resource && k == "metadata" {
                    // Only name and generateName of ObjectMeta are visible to rules.
                    let meta: HashMap<String, Cel> = ["name", "generateName"]
                        .into_iter()
                        .filter_map(|f| Some((f.to_string(), to_cel(ctx, None, x.get(f)?))))
                        .collect();
                    out.insert(key, Cel::from(meta));
                    continue;
                }
                out.insert(key, to_cel(ctx, sub, x));
            }
            Cel::from(out)
        }
    }
}

thread_local! {
    /// The CEL environment with Kubernetes' libraries: built once per thread, since registering
    /// every function is costly and the environment never changes.
    static CONTEXT: Context<'static> = Context::default().with_all();
}

/// Evaluates every rule in the schema tree against `obj` (and `old` on updates).
pub(super) fn validate(root: &Node, obj: &Value, old: Option<&Value>, errs: &mut Vec<FieldCause>) {
    CONTEXT.with(|ctx| walk(ctx, root, obj, old, "", errs));
}

fn walk(
    ctx: &Context,
    node: &Node,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    errs: &mut Vec<FieldCause>,
) {
    if v.is_null() || !node.rules_below {
        return;
    }
    let old = old.filter(|o| !o.is_null());
    // Ratcheting: failures of non-transition rules on unchanged values are not errors, so an
    // unchanged value needs only its transition rules evaluated.
    let unchanged = old.is_some_and(|o| o == v);
    if unchanged && !node.transition_rules_below {
        return;
    }
    let mut evaluated = node
        .rules
        .iter()
        .filter(|r| r.transition || !unchanged)
        .peekable();
    if evaluated.peek().is_some() {
        let reads = node.rule_reads.as_ref();
        let this = to_cel_reading(ctx, Some(node), v, reads);
        // oldSelf is only converted when a transition rule will read it.
        let prev = old
            .filter(|_| node.rules.iter().any(|r| r.transition))
            .map(|o| to_cel_reading(ctx, Some(node), o, reads));
        for rule in evaluated {
            let old_self = if rule.transition && rule.optional_old_self {
                optional(ctx, prev.as_ref())
            } else if rule.transition {
                let Some(p) = &prev else { continue };
                Some(p.clone())
            } else {
                None
            };
            if let Some(e) = eval(ctx, node, rule, v, &this, old_self, path) {
                errs.push(e);
            }
        }
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let old_x = old.and_then(|o| o.get(k));
                if let Some(sub) = node.properties.get(k) {
                    walk(ctx, sub, x, old_x, &child_path(path, k), errs);
                } else if let Some(sub) = node.additional.as_deref() {
                    walk(ctx, sub, x, old_x, &format!("{path}[{k}]"), errs);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = node.items.as_deref() {
                for (i, x) in items.iter().enumerate() {
                    let old_x = correlate_list_item(node, old, x);
                    walk(ctx, item, x, old_x, &format!("{path}[{i}]"), errs);
                }
            }
        }
        _ => {}
    }
}

/// Evaluates one rule; `Some` error when it fails.
fn eval(
    ctx: &Context,
    node: &Node,
    rule: &Rule,
    v: &Value,
    this: &Cel,
    old_self: Option<Cel>,
    path: &str,
) -> Option<FieldCause> {
    let mut scope = ctx.new_inner_scope();
    scope.add_variable_from_value("self", this.clone());
    if let Some(p) = old_self {
        scope.add_variable_from_value("oldSelf", p);
    }
    let type_name = format!("{:?}", node.type_name());
    match rule.program.execute(&scope) {
        Ok(Cel::Bool(true)) => None,
        Ok(Cel::Bool(false)) => {
            let detail = rule
                .message_expression
                .as_ref()
                .and_then(|me| match me.execute(&scope) {
                    Ok(Cel::String(s)) => {
                        let s = s.trim();
                        (!s.is_empty() && !s.contains('\n')).then(|| s.to_string())
                    }
                    _ => None,
                })
                .unwrap_or_else(|| rule.default_message());
            let field = match &rule.field_path {
                Some(fp) if path.is_empty() => fp.trim_start_matches('.').to_string(),
                Some(fp) => format!("{path}{fp}"),
                None => path.to_string(),
            };
            // Objects and arrays are omitted from the message, scalars are shown.
            let shown = (!v.is_object() && !v.is_array()).then(|| go_value(v));
            Some(match rule.reason {
                Reason::Forbidden => FieldCause::forbidden(field, &detail),
                Reason::Required => FieldCause::required(field, &detail),
                Reason::Duplicate => FieldCause {
                    reason: CauseReason::Duplicate,
                    field,
                    message: match shown {
                        Some(s) => format!("Duplicate value: {s}"),
                        None => "Duplicate value".to_string(),
                    },
                },
                Reason::Invalid => FieldCause {
                    reason: CauseReason::Invalid,
                    field,
                    message: match shown {
                        Some(s) => format!("Invalid value: {s}: {detail}"),
                        None => format!("Invalid value: {detail}"),
                    },
                },
            })
        }
        Ok(other) => Some(FieldCause {
            reason: CauseReason::Invalid,
            field: path.to_string(),
            message: format!(
                "Invalid value: {type_name}: rule did not evaluate to a bool ({other:?}) evaluating rule: {}",
                rule.error_string()
            ),
        }),
        Err(e) => Some(FieldCause {
            reason: CauseReason::Invalid,
            field: path.to_string(),
            message: format!(
                "Invalid value: {type_name}: {} evaluating rule: {}",
                lower_first(&e.to_string()),
                rule.error_string()
            ),
        }),
    }
}

/// cel-go's errors start lower-case (`no such key: x`).
fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

/// A CEL expression of admission (a webhook's `matchConditions` entry), compiled once and
/// evaluated on untyped JSON variables (`object`, `oldObject`, `request`), as admission sees them.
#[derive(Debug)]
pub struct AdmissionExpression {
    program: Program,
}

impl AdmissionExpression {
    /// Compiles `text`; the error is the CEL compiler's.
    pub fn compile(text: &str) -> Result<Self, String> {
        Program::compile(text)
            .map(|program| AdmissionExpression { program })
            .map_err(|e| e.to_string())
    }

    /// Evaluates to a bool; an evaluation error, or a result of another type, is the error.
    pub fn evaluate_bool(&self, vars: &[(&str, &Value)]) -> Result<bool, String> {
        CONTEXT.with(|ctx| {
            let mut scope = ctx.new_inner_scope();
            for (name, value) in vars {
                scope.add_variable_from_value(*name, to_cel(ctx, None, value));
            }
            match self.program.execute(&scope) {
                Ok(Cel::Bool(b)) => Ok(b),
                Ok(other) => Err(format!(
                    "expression must evaluate to bool, got {}",
                    cel_type_name(&other)
                )),
                Err(e) => Err(cel_go_error(&e)),
            }
        })
    }
}

/// An evaluation error in cel-go's words, where they differ from the interpreter's.
fn cel_go_error(e: &kube_cel::cel::ExecutionError) -> String {
    use kube_cel::cel::ExecutionError as E;
    match e {
        E::NoSuchKey(key) => format!("no such key: {key}"),
        E::NoSuchOverload => "no such overload".to_string(),
        other => other.to_string(),
    }
}

/// The CEL type of a value, as cel-go names it in errors.
fn cel_type_name(v: &Cel) -> &'static str {
    match v {
        Cel::Null => "null_type",
        Cel::Bool(_) => "bool",
        Cel::Int(_) => "int",
        Cel::UInt(_) => "uint",
        Cel::Float(_) => "double",
        Cel::String(_) => "string",
        Cel::Bytes(_) => "bytes",
        Cel::List(_) => "list",
        Cel::Map(_) => "map",
        _ => "unknown",
    }
}
