//! Kubernetes label and field selectors, parsed from their query-string form
//! (`?labelSelector=` / `?fieldSelector=`) and matched against objects held as
//! `serde_json::Value`.
//!
//! The grammar, the inputs accepted or rejected, and the error wording follow
//! apimachinery (`pkg/labels` and `pkg/fields`, Kubernetes 1.35), so a client
//! under test gets the same 400 message from Tollgate as from a real
//! kube-apiserver. Deliberate departures are marked where they happen.

use std::borrow::Cow;
use std::collections::BTreeSet;

use serde_json::{Map, Value};

/// A selector that failed to parse. The text is what kube-apiserver puts in
/// the `message` of its 400 `Status`, so callers can pass it through verbatim.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
#[error("{0}")]
pub struct SelectorError(pub String);

// ---------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------

/// A parsed label selector: requirements that must all hold (logical AND).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LabelSelector {
    /// Sorted by key (stable), as apimachinery does, so equal selectors
    /// written in a different order compare equal.
    requirements: Vec<LabelRequirement>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LabelOp {
    Equals,
    DoubleEquals,
    NotEquals,
    In,
    NotIn,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

#[derive(Debug, Clone, PartialEq)]
struct LabelRequirement {
    key: String,
    op: LabelOp,
    /// Sorted and deduplicated, the order apimachinery validates them in
    /// (which decides the `values[i]` index in error messages).
    values: Vec<String>,
}

impl LabelSelector {
    /// Parses the `labelSelector` syntax. An empty or all-whitespace string
    /// selects everything.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut parser = LabelParser {
            tokens: tokenize(s),
            pos: 0,
        };
        let mut requirements = parser.parse().map_err(SelectorError)?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements })
    }

    /// True when every requirement holds for this label map.
    pub fn matches_labels(&self, labels: &Map<String, Value>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Matches against `obj.metadata.labels`; an object without labels is
    /// treated as having an empty label map (so `!key` and `key!=v` match it).
    pub fn matches(&self, obj: &Value) -> bool {
        match obj
            .get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
        {
            Some(labels) => self.matches_labels(labels),
            None => self.matches_labels(&Map::new()),
        }
    }

    /// True when the selector places no restriction at all.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
}

impl LabelRequirement {
    fn matches(&self, labels: &Map<String, Value>) -> bool {
        let actual = labels.get(&self.key).map(json_text);
        let listed = |v: &str| self.values.iter().any(|w| w == v);
        match self.op {
            LabelOp::Equals | LabelOp::DoubleEquals | LabelOp::In => {
                actual.is_some_and(|v| listed(&v))
            }
            // Absence counts as "not equal", the documented Kubernetes rule.
            LabelOp::NotEquals | LabelOp::NotIn => actual.is_none_or(|v| !listed(&v)),
            LabelOp::Exists => actual.is_some(),
            LabelOp::DoesNotExist => actual.is_none(),
            LabelOp::GreaterThan | LabelOp::LessThan => {
                let Some(Ok(have)) = actual.map(|v| v.parse::<i64>()) else {
                    return false;
                };
                let Some(Ok(want)) = self.values.first().map(|v| v.parse::<i64>()) else {
                    return false;
                };
                if self.op == LabelOp::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    End,
    Ident,
    In,
    NotIn,
    OpenParen,
    CloseParen,
    Comma,
    Bang,
    Equals,
    DoubleEquals,
    NotEquals,
    Greater,
    Less,
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    tok: Tok,
    /// The source text, echoed in "found '…'" errors (empty for `End`).
    lit: &'a str,
}

/// Which reading of `in`/`notin` applies: only where an operator is expected
/// are they keywords; elsewhere (keys, values) they are plain identifiers, so
/// `in in (in)` is a valid selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Operator,
    Values,
}

fn is_selector_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_selector_symbol(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits the selector into tokens. Byte-wise is safe: every delimiter is
/// ASCII, so slices always fall on UTF-8 boundaries.
fn tokenize(input: &str) -> Vec<Token<'_>> {
    // apimachinery's lexer uses NUL as its end-of-input sentinel, so anything
    // after a NUL byte is silently ignored there; mirror that.
    let input = input.split('\0').next().unwrap_or_default();
    let bytes = input.as_bytes();
    let mut tokens = Vec::new();
    let mut pos = 0;
    loop {
        while pos < bytes.len() && is_selector_space(bytes[pos]) {
            pos += 1;
        }
        let start = pos;
        let Some(&first) = bytes.get(pos) else {
            tokens.push(Token {
                tok: Tok::End,
                lit: "",
            });
            return tokens;
        };
        let tok = if is_selector_symbol(first) {
            let (tok, len) = match bytes.get(pos..pos + 2) {
                Some(b"==") => (Tok::DoubleEquals, 2),
                Some(b"!=") => (Tok::NotEquals, 2),
                _ => {
                    let tok = match first {
                        b'=' => Tok::Equals,
                        b'!' => Tok::Bang,
                        b'(' => Tok::OpenParen,
                        b')' => Tok::CloseParen,
                        b',' => Tok::Comma,
                        b'>' => Tok::Greater,
                        _ => Tok::Less,
                    };
                    (tok, 1)
                }
            };
            pos += len;
            tok
        } else {
            while pos < bytes.len()
                && !is_selector_space(bytes[pos])
                && !is_selector_symbol(bytes[pos])
            {
                pos += 1;
            }
            match &input[start..pos] {
                "in" => Tok::In,
                "notin" => Tok::NotIn,
                _ => Tok::Ident,
            }
        };
        tokens.push(Token {
            tok,
            lit: &input[start..pos],
        });
    }
}

/// Recursive-descent parser over the token list. Errors are plain strings;
/// `LabelSelector::parse` wraps them.
struct LabelParser<'a> {
    /// Always ends with exactly one `End` token.
    tokens: Vec<Token<'a>>,
    pos: usize,
}

impl<'a> LabelParser<'a> {
    fn peek(&self, ctx: Ctx) -> (Tok, &'a str) {
        // Never reads past `End`: every path that consumes `End` stops.
        let token = self.tokens[self.pos.min(self.tokens.len() - 1)];
        let tok = match (ctx, token.tok) {
            (Ctx::Values, Tok::In | Tok::NotIn) => Tok::Ident,
            (_, tok) => tok,
        };
        (tok, token.lit)
    }

    fn next(&mut self, ctx: Ctx) -> (Tok, &'a str) {
        let item = self.peek(ctx);
        self.pos += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<LabelRequirement>, String> {
        let mut requirements = Vec::new();
        loop {
            match self.peek(Ctx::Values) {
                (Tok::End, _) => return Ok(requirements),
                (Tok::Ident | Tok::Bang, _) => {
                    let req = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(req);
                    match self.next(Ctx::Values) {
                        (Tok::End, _) => return Ok(requirements),
                        (Tok::Comma, _) => match self.peek(Ctx::Values) {
                            (Tok::Ident | Tok::Bang, _) => {}
                            (_, lit) => {
                                return Err(format!(
                                    "found '{lit}', expected: identifier after ','"
                                ));
                            }
                        },
                        (_, lit) => {
                            return Err(format!("found '{lit}', expected: ',' or 'end of string'"));
                        }
                    }
                }
                (_, lit) => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<LabelRequirement, String> {
        let negated = self.peek(Ctx::Values).0 == Tok::Bang;
        if negated {
            self.pos += 1;
        }
        let key = match self.next(Ctx::Values) {
            (Tok::Ident, lit) => lit,
            (_, lit) => return Err(format!("found '{lit}', expected: identifier")),
        };
        let key_errors = label_key_errors(key);
        if !key_errors.is_empty() {
            // apimachinery validates with a nil field path, which prints as "<nil>".
            return Err(invalid_value(
                "<nil>",
                &go_quote(key),
                &key_errors.join("; "),
            ));
        }
        // `!key` is always unary: whatever follows must be `,` or the end,
        // which the caller checks (so `!a=b` fails there, as upstream).
        if negated {
            return Ok(LabelRequirement {
                key: key.to_owned(),
                op: LabelOp::DoesNotExist,
                values: Vec::new(),
            });
        }
        if matches!(self.peek(Ctx::Values).0, Tok::End | Tok::Comma) {
            return Ok(LabelRequirement {
                key: key.to_owned(),
                op: LabelOp::Exists,
                values: Vec::new(),
            });
        }
        let op = match self.next(Ctx::Operator) {
            (Tok::In, _) => LabelOp::In,
            (Tok::NotIn, _) => LabelOp::NotIn,
            (Tok::Equals, _) => LabelOp::Equals,
            (Tok::DoubleEquals, _) => LabelOp::DoubleEquals,
            (Tok::NotEquals, _) => LabelOp::NotEquals,
            (Tok::Greater, _) => LabelOp::GreaterThan,
            (Tok::Less, _) => LabelOp::LessThan,
            (_, lit) => {
                return Err(format!(
                    "found '{lit}', expected: in, notin, =, ==, !=, gt, lt"
                ));
            }
        };
        let values = match op {
            LabelOp::In | LabelOp::NotIn => self.value_set()?,
            _ => self.exact_value()?,
        };
        new_requirement(key, op, values)
    }

    /// `( v1, v2, … )`. Empty entries (`(a,,b)`, `(,a)`, `(a,)`) stand for
    /// the empty string, as upstream.
    fn value_set(&mut self) -> Result<BTreeSet<String>, String> {
        match self.next(Ctx::Values) {
            (Tok::OpenParen, _) => {}
            // Upstream's wording really lacks the comma here.
            (_, lit) => return Err(format!("found '{lit}' expected: '('")),
        }
        let mut values = BTreeSet::new();
        match self.peek(Ctx::Values) {
            (Tok::Ident | Tok::Comma, _) => {}
            // As upstream: `()` reads as `("")`, so `in ()` selects nothing
            // and `notin ()` whatever lacks the empty value.
            (Tok::CloseParen, _) => {
                self.pos += 1;
                values.insert(String::new());
                return Ok(values);
            }
            (_, lit) => return Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
        loop {
            match self.next(Ctx::Values) {
                (Tok::Ident, lit) => {
                    values.insert(lit.to_owned());
                    match self.peek(Ctx::Values) {
                        (Tok::Comma, _) => {}
                        (Tok::CloseParen, _) => break,
                        (_, lit) => return Err(format!("found '{lit}', expected: ',' or ')'")),
                    }
                }
                (Tok::Comma, _) => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    match self.peek(Ctx::Values).0 {
                        Tok::CloseParen => {
                            values.insert(String::new());
                            break;
                        }
                        Tok::Comma => {
                            values.insert(String::new());
                        }
                        _ => {}
                    }
                }
                (_, lit) => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
        // The loop only exits with `)` next.
        self.pos += 1;
        Ok(values)
    }

    /// The single value after `=`, `==`, `!=`, `>` or `<`; nothing at all
    /// (`key=` followed by `,` or the end) means the empty string.
    fn exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        if matches!(self.peek(Ctx::Values).0, Tok::End | Tok::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        match self.next(Ctx::Values) {
            (Tok::Ident, lit) => Ok(BTreeSet::from([lit.to_owned()])),
            (_, lit) => Err(format!("found '{lit}', expected: identifier")),
        }
    }
}

/// The checks apimachinery runs when building a requirement, reported as one
/// aggregated field error list.
fn new_requirement(
    key: &str,
    op: LabelOp,
    values: BTreeSet<String>,
) -> Result<LabelRequirement, String> {
    let values: Vec<String> = values.into_iter().collect();
    let mut errors: Vec<String> = Vec::new();
    if matches!(op, LabelOp::In | LabelOp::NotIn) && values.is_empty() {
        errors.push(invalid_value(
            "values",
            "[]",
            "for 'in', 'notin' operators, values set can't be empty",
        ));
    }
    if matches!(op, LabelOp::GreaterThan | LabelOp::LessThan) {
        for (i, v) in values.iter().enumerate() {
            if v.parse::<i64>().is_err() {
                errors.push(invalid_value(
                    &format!("values[{i}]"),
                    &go_quote(v),
                    "for 'Gt', 'Lt' operators, the value must be an integer",
                ));
            }
        }
    }
    for (i, v) in values.iter().enumerate() {
        let problems = label_value_errors(v);
        if !problems.is_empty() {
            errors.push(invalid_value(
                &format!("values[{i}][{key}]"),
                &go_quote(v),
                &problems.join("; "),
            ));
        }
    }
    let mut unique: Vec<String> = Vec::new();
    for e in errors {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    match unique.len() {
        0 => Ok(LabelRequirement {
            key: key.to_owned(),
            op,
            values,
        }),
        1 => Err(unique.concat()),
        _ => Err(format!("[{}]", unique.join(", "))),
    }
}

// ---------------------------------------------------------------------------
// Label key / value validation (apimachinery's IsQualifiedName and
// IsValidLabelValue, with their messages)
// ---------------------------------------------------------------------------

const LABEL_NAME_REGEX: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_REGEX: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS_SUBDOMAIN_REGEX: &str =
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const LABEL_NAME_MAX: usize = 63;
const LABEL_VALUE_MAX: usize = 63;
const DNS_SUBDOMAIN_MAX: usize = 253;

/// Upstream's regex-failure sentence, including its odd `',  or '`
/// spacing, so messages compare byte-for-byte.
fn regex_error(msg: &str, regex: &str, examples: &[&str]) -> String {
    let examples: String = examples
        .iter()
        .map(|e| format!("'{e}', "))
        .collect::<Vec<_>>()
        .join(" or ");
    format!("{msg} (e.g. {examples}regex used for validation is '{regex}')")
}

fn max_len_error(n: usize) -> String {
    format!("must be no more than {n} bytes")
}

/// `name` in a label key: alphanumeric at both ends, `-_.` allowed inside.
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    let inner_ok = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric() && last.is_ascii_alphanumeric() && b.iter().all(inner_ok)
        }
        _ => false,
    }
}

/// Lowercase RFC 1123 subdomain: dot-separated labels of `[a-z0-9-]`, each
/// starting and ending alphanumeric.
fn is_dns1123_subdomain(s: &str) -> bool {
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        match (b.first(), b.last()) {
            (Some(first), Some(last)) => {
                edge(first) && edge(last) && b.iter().all(|c| edge(c) || *c == b'-')
            }
            _ => false,
        }
    };
    s.split('.').all(label_ok)
}

fn label_key_errors(key: &str) -> Vec<String> {
    let name_regex_error = || {
        regex_error(
            LABEL_NAME_MSG,
            LABEL_NAME_REGEX,
            &["MyName", "my.name", "123-abc"],
        )
    };
    let mut errors = Vec::new();
    let parts: Vec<&str> = key.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errors.push("prefix part must be non-empty".to_owned());
            } else {
                if prefix.len() > DNS_SUBDOMAIN_MAX {
                    errors.push(format!("prefix part {}", max_len_error(DNS_SUBDOMAIN_MAX)));
                }
                if !is_dns1123_subdomain(prefix) {
                    errors.push(format!(
                        "prefix part {}",
                        regex_error(DNS_SUBDOMAIN_MSG, DNS_SUBDOMAIN_REGEX, &["example.com"])
                    ));
                }
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                name_regex_error()
            )];
        }
    };
    if name.is_empty() {
        errors.push("name part must be non-empty".to_owned());
    } else if name.len() > LABEL_NAME_MAX {
        errors.push(format!("name part {}", max_len_error(LABEL_NAME_MAX)));
    }
    if !is_label_name(name) {
        errors.push(format!("name part {}", name_regex_error()));
    }
    errors
}

fn label_value_errors(value: &str) -> Vec<String> {
    let mut errors = Vec::new();
    if value.len() > LABEL_VALUE_MAX {
        errors.push(max_len_error(LABEL_VALUE_MAX));
    }
    if !value.is_empty() && !is_label_name(value) {
        errors.push(regex_error(
            LABEL_VALUE_MSG,
            LABEL_VALUE_REGEX,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errors
}

/// One `field.Invalid` error as Go prints it: `<path>: Invalid value: <v>: <detail>`.
fn invalid_value(path: &str, shown_value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {shown_value}: {detail}")
}

/// Go's `%q` for a string, which is how bad values appear in upstream
/// messages. Printable non-ASCII is kept; controls are escaped.
fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if c < ' ' || c == '\u{7f}' => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() || (c.is_whitespace() && c != ' ') => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

// ---------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------

/// A parsed field selector: `field=value` / `field!=value` terms, all of
/// which must hold.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSelector {
    /// Sorted by their source text, as apimachinery sorts the terms.
    terms: Vec<FieldTerm>,
}

#[derive(Debug, Clone, PartialEq)]
struct FieldTerm {
    field: String,
    /// Already unescaped.
    value: String,
    negated: bool,
}

impl FieldSelector {
    /// Parses the `fieldSelector` syntax. Field names are not checked here:
    /// which fields are selectable depends on the resource, so the caller
    /// rejects unknown ones (see [`FieldSelector::fields`]). Whitespace is
    /// not trimmed, matching upstream (`a = b` names the field `"a "`).
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut parts = split_unescaped_commas(s);
        // Upstream sorts before parsing, which also decides which bad term
        // an error reports first.
        parts.sort_unstable();
        let mut terms = Vec::with_capacity(parts.len());
        for part in parts.into_iter().filter(|p| !p.is_empty()) {
            let Some((field, op, raw)) = split_field_term(part) else {
                return Err(SelectorError(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            terms.push(FieldTerm {
                field: field.to_owned(),
                value: unescape_field_value(raw)?,
                negated: op == "!=",
            });
        }
        Ok(Self { terms })
    }

    /// The field path of every term, in term order (a path used twice is
    /// yielded twice), so the caller can reject unsupported fields.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|t| t.field.as_str())
    }

    /// Looks each field up as a dotted path into the object. A missing field
    /// (or `null`) reads as `""`; strings compare as-is and other values by
    /// their JSON text, e.g. `spec.hostNetwork=true`.
    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|t| {
            let actual = field_text(obj, &t.field);
            (actual == t.value.as_str()) != t.negated
        })
    }

    /// As [`FieldSelector::matches`], for a built-in kind: kube-apiserver formats the Go field,
    /// so an unset field reads as Go's zero value (`false`, `0`), and a few selectable names read
    /// another field (see [`builtin_field_text`]).
    pub fn matches_builtin(&self, obj: &Value) -> bool {
        self.terms.iter().all(|t| {
            let actual = builtin_field_text(obj, &t.field);
            (actual == t.value.as_str()) != t.negated
        })
    }

    /// True when the selector places no restriction at all.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The value `field` is pinned to by an `=`/`==` term, if any, so the
    /// store can narrow a scan (it does so for `metadata.namespace`). With conflicting pins the first (in sorted term
    /// order) wins, as upstream; the caller must still run
    /// [`FieldSelector::matches`] on what it finds.
    pub fn exact(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| !t.negated && t.field == field)
            .map(|t| t.value.as_str())
    }
}

/// Splits on commas not preceded by a backslash; escapes stay in place for
/// `unescape_field_value`.
fn split_unescaped_commas(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut parts = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            parts.push(&s[start..i]);
            start = i + 1;
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Splits at the first operator; the field name has no escaping, so an
/// operator character always ends it. `!=` and `==` are tried before `=` so
/// neither leaves a stray `=` or `!` behind.
fn split_field_term(term: &str) -> Option<(&str, &'static str, &str)> {
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        ["!=", "==", "="]
            .into_iter()
            .find(|op| rest.starts_with(op))
            .map(|op| (&term[..i], op, &rest[op.len()..]))
    })
}

/// Resolves `\\`, `\,` and `\=`. Anything else after a backslash, a trailing
/// backslash, or a bare `=` is rejected with upstream's messages. (Upstream
/// has no `\!` escape; `!` is simply literal in values.)
fn unescape_field_value(raw: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(raw.len());
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            if !matches!(c, '\\' | ',' | '=') {
                return Err(SelectorError(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                )));
            }
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if matches!(c, ',' | '=') {
            // Upstream prints the rune with %v, i.e. as its code point number.
            return Err(SelectorError(format!(
                "invalid field selector: unescaped character in value: {}",
                c as u32
            )));
        } else {
            out.push(c);
        }
    }
    if escaped {
        return Err(SelectorError(
            "invalid field selector: invalid escape sequence: \\".to_owned(),
        ));
    }
    Ok(out)
}

/// The text a field selector compares against for a dotted path.
fn field_text<'v>(obj: &'v Value, path: &str) -> Cow<'v, str> {
    let mut cur = obj;
    for segment in path.split('.') {
        match cur.get(segment) {
            Some(next) => cur = next,
            None => return Cow::Borrowed(""),
        }
    }
    json_text(cur)
}

/// What a built-in kind's selectable field reads, as its registry's `ToSelectableFields` formats
/// it. The paths are unique to their kind (each kind refuses the others' fields first).
fn builtin_field_text<'v>(obj: &'v Value, path: &str) -> Cow<'v, str> {
    let or_zero = |v: Cow<'v, str>, zero: &'static str| {
        if v.is_empty() { Cow::Borrowed(zero) } else { v }
    };
    match path {
        // Go bools and ints: unset is false / 0.
        "spec.unschedulable" | "spec.hostNetwork" => or_zero(field_text(obj, path), "false"),
        // Jobs name `status.succeeded` so; replication controllers' replicas.
        "status.successful" => or_zero(field_text(obj, "status.succeeded"), "0"),
        "status.replicas" => or_zero(field_text(obj, path), "0"),
        // The internal Pod keeps only podIPs: podIP is the first of them.
        "status.podIP" => match obj["status"]["podIPs"][0]["ip"].as_str() {
            Some(ip) => Cow::Borrowed(ip),
            None => field_text(obj, path),
        },
        // Accepted (for the downward API) but never set: always "".
        "status.podIPs" => Cow::Borrowed(""),
        // A core Event's source is its component.
        "source" => field_text(obj, "source.component"),
        _ => field_text(obj, path),
    }
}

/// Strings as-is, `null` as `""`, anything else as compact JSON.
fn json_text(v: &Value) -> Cow<'_, str> {
    match v {
        Value::String(s) => Cow::Borrowed(s),
        Value::Null => Cow::Borrowed(""),
        other => Cow::Owned(other.to_string()),
    }
}

/// Whether a LabelSelector object (matchLabels, matchExpressions) selects these labels. An empty
/// selector selects everything (policy/v1 semantics), a missing one nothing.
pub(crate) fn label_selector_selects(selector: &Value, labels: &Value) -> bool {
    if !selector.is_object() {
        return false;
    }
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let labels_match = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str());
    let expressions_match = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e["key"].as_str().unwrap_or("");
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match e["operator"].as_str().unwrap_or("") {
                "In" => label(key).is_some_and(|v| values.contains(&v)),
                "NotIn" => label(key).is_none_or(|v| !values.contains(&v)),
                "Exists" => label(key).is_some(),
                "DoesNotExist" => label(key).is_none(),
                _ => false,
            }
        });
    labels_match && expressions_match
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use rstest::rstest;
    use serde_json::json;

    const KEY_REGEX_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const VALUE_REGEX_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn with_labels(v: Value) -> Value {
        json!({"metadata": {"name": "x", "labels": v}})
    }

    #[rstest]
    // everything
    #[case("", true)]
    #[case("   \t", true)]
    // = and ==
    #[case("app=web", true)]
    #[case("app==web", true)]
    #[case("app=db", false)]
    #[case("app==db", false)]
    #[case("missing=web", false)]
    // != (absent key matches)
    #[case("app!=db", true)]
    #[case("app!=web", false)]
    #[case("missing!=web", true)]
    // in
    #[case("app in (web,db)", true)]
    #[case("app in (db)", false)]
    #[case("missing in (web)", false)]
    // notin (absent key matches)
    #[case("app notin (db,cache)", true)]
    #[case("app notin (web)", false)]
    #[case("missing notin (web)", true)]
    // exists / does not exist
    #[case("app", true)]
    #[case("missing", false)]
    #[case("!missing", true)]
    #[case("!app", false)]
    // gt / lt (integers only)
    #[case("replicas>2", true)]
    #[case("replicas>3", false)]
    #[case("replicas<4", true)]
    #[case("replicas<3", false)]
    #[case("app>1", false)]
    #[case("missing<10", false)]
    // empty values
    #[case("empty=", true)]
    #[case("empty==", true)]
    #[case("app=", false)]
    #[case("empty in (,x)", true)]
    #[case("empty in (x,)", true)]
    #[case("empty in (x,,y)", true)]
    #[case("empty in (x,y)", false)]
    #[case("empty notin (x,)", false)]
    #[case("app in ()", false)]
    #[case("app notin ( )", true)]
    // AND of requirements, whitespace the way upstream tolerates it
    #[case("app=web,tier=frontend", true)]
    #[case("app=web,tier=backend", false)]
    #[case("  app = web ,\ttier in ( frontend , x ) ,!missing  ", true)]
    #[case("app in(web),tier notin(db)", true)]
    // keywords are plain identifiers outside operator position
    #[case("in in (in)", true)]
    #[case("notin=notin", true)]
    // prefixed keys
    #[case("example.com/team=core", true)]
    #[case("example.com/team!=core", false)]
    fn label_selector_matches(#[case] selector: &str, #[case] expected: bool) {
        let l = labels(json!({
            "app": "web",
            "tier": "frontend",
            "replicas": "3",
            "empty": "",
            "in": "in",
            "notin": "notin",
            "example.com/team": "core",
        }));
        let sel = LabelSelector::parse(selector).unwrap();
        assert_eq!(sel.matches_labels(&l), expected, "{selector}");
        assert_eq!(
            sel.matches(&with_labels(Value::Object(l))),
            expected,
            "{selector}"
        );
    }

    #[rstest]
    #[case("", true)]
    #[case("app", false)]
    #[case("!app", true)]
    #[case("app=web", false)]
    #[case("app!=web", true)]
    #[case("app in (web)", false)]
    #[case("app notin (web)", true)]
    #[case("app>1", false)]
    fn label_selector_on_objects_without_labels(#[case] selector: &str, #[case] expected: bool) {
        let sel = LabelSelector::parse(selector).unwrap();
        for obj in [
            json!({}),
            json!({"metadata": {"name": "x"}}),
            json!({"metadata": {"name": "x", "labels": null}}),
            json!({"metadata": {"name": "x", "labels": {}}}),
        ] {
            assert_eq!(sel.matches(&obj), expected, "{selector} on {obj}");
        }
    }

    #[rstest]
    #[case("", true)]
    #[case(" \t\r\n ", true)]
    #[case("a", false)]
    #[case("!a", false)]
    fn label_selector_is_empty(#[case] selector: &str, #[case] expected: bool) {
        assert_eq!(LabelSelector::parse(selector).unwrap().is_empty(), expected);
    }

    #[test]
    fn label_selector_equality_ignores_order_and_duplicates() {
        assert_eq!(
            LabelSelector::parse("b=1,a in (y,x,x)").unwrap(),
            LabelSelector::parse(" a in (x,y) , b=1").unwrap()
        );
        assert_ne!(
            LabelSelector::parse("a=1").unwrap(),
            LabelSelector::parse("a!=1").unwrap()
        );
        assert_eq!(LabelSelector::parse("").unwrap(), LabelSelector::default());
    }

    #[rstest]
    // structure
    #[case(",", "found ',', expected: !, identifier, or 'end of string'")]
    #[case("(", "found '(', expected: !, identifier, or 'end of string'")]
    #[case("a,", "found '', expected: identifier after ','")]
    #[case("a,,b", "found ',', expected: identifier after ','")]
    #[case("a=b c", "found 'c', expected: ',' or 'end of string'")]
    #[case("a in (b) c", "found 'c', expected: ',' or 'end of string'")]
    #[case("!a=b", "found '=', expected: ',' or 'end of string'")]
    #[case("!a in (b)", "found 'in', expected: ',' or 'end of string'")]
    #[case("!", "unable to parse requirement: found '', expected: identifier")]
    #[case("!!a", "unable to parse requirement: found '!', expected: identifier")]
    #[case(
        "a b",
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"
    )]
    #[case(
        "a !b",
        "unable to parse requirement: found '!', expected: in, notin, =, ==, !=, gt, lt"
    )]
    #[case(
        "a=(b)",
        "unable to parse requirement: found '(', expected: identifier"
    )]
    #[case(
        "a!=!b",
        "unable to parse requirement: found '!', expected: identifier"
    )]
    // set syntax
    #[case("a in b", "unable to parse requirement: found 'b' expected: '('")]
    #[case("a in", "unable to parse requirement: found '' expected: '('")]
    #[case(
        "a in (b",
        "unable to parse requirement: found '', expected: ',' or ')'"
    )]
    #[case(
        "a in (b c)",
        "unable to parse requirement: found 'c', expected: ',' or ')'"
    )]
    #[case(
        "a in (=)",
        "unable to parse requirement: found '=', expected: ',', ')' or identifier"
    )]
    #[case(
        "a in (b,=)",
        "unable to parse requirement: found '=', expected: ',', or identifier"
    )]
    #[case(
        "a in (b,",
        "unable to parse requirement: found '', expected: ',', or identifier"
    )]
    // gt / lt
    #[case(
        "a>b",
        "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer"
    )]
    #[case(
        "a<",
        "unable to parse requirement: values[0]: Invalid value: \"\": for 'Gt', 'Lt' operators, the value must be an integer"
    )]
    fn label_selector_syntax_errors(#[case] selector: &str, #[case] message: &str) {
        assert_eq!(
            LabelSelector::parse(selector),
            Err(SelectorError(message.to_owned())),
            "{selector}"
        );
    }

    #[rstest]
    #[case("a$b", r#""a$b": name part "#.to_owned() + KEY_REGEX_MSG)]
    #[case("-a", r#""-a": name part "#.to_owned() + KEY_REGEX_MSG)]
    #[case("a.", r#""a.": name part "#.to_owned() + KEY_REGEX_MSG)]
    #[case(&"k".repeat(64), format!("\"{}\": name part must be no more than 63 bytes", "k".repeat(64)))]
    #[case("/a", r#""/a": prefix part must be non-empty"#.to_owned())]
    #[case("a/", r#""a/": name part must be non-empty; name part "#.to_owned() + KEY_REGEX_MSG)]
    #[case(
        "Example.com/a",
        r#""Example.com/a": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#.to_owned()
    )]
    #[case("a/b/c", r#""a/b/c": a valid label key "#.to_owned() + KEY_REGEX_MSG + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')")]
    #[case("a\"b", r#""a\"b": name part "#.to_owned() + KEY_REGEX_MSG)]
    #[case("a\u{1}", r#""a\x01": name part "#.to_owned() + KEY_REGEX_MSG)]
    #[case("ключ", r#""ключ": name part "#.to_owned() + KEY_REGEX_MSG)]
    fn label_selector_bad_keys(#[case] key: &str, #[case] detail: String) {
        let expected = format!("unable to parse requirement: <nil>: Invalid value: {detail}");
        for selector in [
            key.to_owned(),
            format!("!{key}"),
            format!("{key}=v"),
            format!("{key} in (v)"),
        ] {
            assert_eq!(
                LabelSelector::parse(&selector),
                Err(SelectorError(expected.clone())),
                "{selector}"
            );
        }
    }

    #[rstest]
    #[case("a=b$", format!(r#"values[0][a]: Invalid value: "b$": {VALUE_REGEX_MSG}"#))]
    #[case("a!=-b", format!(r#"values[0][a]: Invalid value: "-b": {VALUE_REGEX_MSG}"#))]
    #[case("a>-1", format!(r#"values[0][a]: Invalid value: "-1": {VALUE_REGEX_MSG}"#))]
    #[case(
        &format!("a={}", "v".repeat(64)),
        format!(r#"values[0][a]: Invalid value: "{}": must be no more than 63 bytes"#, "v".repeat(64))
    )]
    #[case(
        &format!("a={}_", "v".repeat(63)),
        format!(r#"values[0][a]: Invalid value: "{}_": must be no more than 63 bytes; {VALUE_REGEX_MSG}"#, "v".repeat(63))
    )]
    #[case(
        "x.io/k in (ok, b$, a$)",
        format!(r#"[values[0][x.io/k]: Invalid value: "a$": {VALUE_REGEX_MSG}, values[1][x.io/k]: Invalid value: "b$": {VALUE_REGEX_MSG}]"#)
    )]
    #[case(
        "a>x$",
        format!(r#"[values[0]: Invalid value: "x$": for 'Gt', 'Lt' operators, the value must be an integer, values[0][a]: Invalid value: "x$": {VALUE_REGEX_MSG}]"#)
    )]
    fn label_selector_bad_values(#[case] selector: &str, #[case] detail: String) {
        assert_eq!(
            LabelSelector::parse(selector),
            Err(SelectorError(format!(
                "unable to parse requirement: {detail}"
            ))),
            "{selector}"
        );
    }

    #[rstest]
    #[case("a=b\0,!!!")]
    #[case("a=b\0")]
    fn label_selector_stops_at_nul_like_upstream(#[case] selector: &str) {
        assert_eq!(
            LabelSelector::parse(selector).unwrap(),
            LabelSelector::parse("a=b").unwrap()
        );
    }

    fn pod() -> Value {
        json!({
            "metadata": {"name": "web-0", "namespace": "default"},
            "spec": {"nodeName": "node-1", "hostNetwork": false, "priority": 5, "tags": ["x"]},
            "status": {"phase": "Running", "podIP": null},
            "data": {"v": "a,b=c\\d", "bang": "x!y"}
        })
    }

    #[rstest]
    #[case("", true)]
    #[case(",", true)]
    #[case("metadata.name=web-0", true)]
    #[case("metadata.name==web-0", true)]
    #[case("metadata.name!=web-0", false)]
    #[case("metadata.name=web-1", false)]
    #[case("metadata.name!=web-1", true)]
    #[case("metadata.namespace=default,metadata.name=web-0", true)]
    #[case("metadata.namespace=default,metadata.name=web-1", false)]
    // nested lookups
    #[case("status.phase=Running", true)]
    #[case("status.phase!=Pending", true)]
    #[case("status.phase=Pending", false)]
    #[case("spec.nodeName=node-1", true)]
    #[case("spec.nodeName=node-2", false)]
    #[case("spec.nodeName==node-1,status.phase!=Failed", true)]
    // non-strings by their JSON text
    #[case("spec.hostNetwork=false", true)]
    #[case("spec.hostNetwork=true", false)]
    #[case("spec.priority=5", true)]
    #[case(r#"spec.tags=["x"]"#, true)]
    // missing and null read as ""
    #[case("status.podIP=", true)]
    #[case("status.podIP!=", false)]
    #[case("status.hostIP=", true)]
    #[case("spec.nodeName.deeper=", true)]
    #[case("nope.nope=x", false)]
    #[case("nope.nope!=x", true)]
    // empty terms are skipped
    #[case("metadata.name=web-0,", true)]
    #[case(",,metadata.name=web-0,,", true)]
    // escapes
    #[case(r"data.v=a\,b\=c\\d", true)]
    #[case(r"data.v==a\,b\=c\\d", true)]
    #[case(r"data.v!=a\,b\=c\\d", false)]
    #[case(r"data.v=a\,b", false)]
    #[case("data.bang=x!y", true)]
    #[case("data.bang==x!y", true)]
    #[case("data.bang!=x!y", false)]
    fn field_selector_matches(#[case] selector: &str, #[case] expected: bool) {
        let sel = FieldSelector::parse(selector).unwrap();
        assert_eq!(sel.matches(&pod()), expected, "{selector}");
    }

    #[rstest]
    #[case("foo", "invalid selector: 'foo'; can't understand 'foo'")]
    #[case("b=1,foo", "invalid selector: 'b=1,foo'; can't understand 'foo'")]
    // terms are sorted before parsing, so the lexically first bad one is named
    #[case("zz,aa", "invalid selector: 'zz,aa'; can't understand 'aa'")]
    #[case(r"a\,b", r"invalid selector: 'a\,b'; can't understand 'a\,b'")]
    #[case(r"a=b\!", r"invalid field selector: invalid escape sequence: \!")]
    #[case(r"a=b\n", r"invalid field selector: invalid escape sequence: \n")]
    #[case(r"a=b\", r"invalid field selector: invalid escape sequence: \")]
    #[case("a=b=c", "invalid field selector: unescaped character in value: 61")]
    #[case("a==b=c", "invalid field selector: unescaped character in value: 61")]
    #[case("a!==b", "invalid field selector: unescaped character in value: 61")]
    fn field_selector_errors(#[case] selector: &str, #[case] message: &str) {
        assert_eq!(
            FieldSelector::parse(selector),
            Err(SelectorError(message.to_owned())),
            "{selector}"
        );
    }

    #[rstest]
    #[case("", vec![])]
    #[case("status.phase=Running,metadata.name=x", vec!["metadata.name", "status.phase"])]
    #[case("spec.nodeName!=,spec.nodeName=a", vec!["spec.nodeName", "spec.nodeName"])]
    // no trimming: the caller's "field label not supported" check sees the spaces
    #[case("metadata.name = x", vec!["metadata.name "])]
    #[case("=x", vec![""])]
    #[case("a!b=c", vec!["a!b"])]
    fn field_selector_fields(#[case] selector: &str, #[case] expected: Vec<&str>) {
        let sel = FieldSelector::parse(selector).unwrap();
        assert_eq!(sel.fields().collect::<Vec<_>>(), expected);
        assert_eq!(sel.is_empty(), expected.is_empty());
    }

    #[rstest]
    #[case("metadata.name=web-0", "metadata.name", Some("web-0"))]
    #[case("metadata.name==web-0", "metadata.name", Some("web-0"))]
    #[case("metadata.name!=web-0", "metadata.name", None)]
    #[case("metadata.name=web-0", "metadata.namespace", None)]
    #[case(
        "metadata.namespace=ns,metadata.name=web-0",
        "metadata.namespace",
        Some("ns")
    )]
    #[case(
        "metadata.namespace=ns,metadata.name=web-0",
        "metadata.name",
        Some("web-0")
    )]
    #[case("metadata.name!=a,metadata.name=b", "metadata.name", Some("b"))]
    #[case(r"metadata.name=a\,b", "metadata.name", Some("a,b"))]
    #[case("metadata.name=", "metadata.name", Some(""))]
    #[case("", "metadata.name", None)]
    #[case("spec.nodeName=n1", "spec.nodeName", Some("n1"))]
    fn field_selector_exact(
        #[case] selector: &str,
        #[case] field: &str,
        #[case] expected: Option<&str>,
    ) {
        assert_eq!(
            FieldSelector::parse(selector).unwrap().exact(field),
            expected
        );
    }

    #[test]
    fn field_selector_equality_ignores_term_order() {
        assert_eq!(
            FieldSelector::parse("b=1,a!=2").unwrap(),
            FieldSelector::parse("a!=2,b=1,").unwrap()
        );
        assert_eq!(FieldSelector::parse("").unwrap(), FieldSelector::default());
    }

    #[test]
    fn errors_display_their_message() {
        let err = FieldSelector::parse("foo").unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid selector: 'foo'; can't understand 'foo'"
        );
    }
}
