//! The words of Go's JSON decoder when a built-in object has a field of the wrong type: what
//! kube-apiserver answers for a patch whose result its typed form cannot hold
//! (`json: cannot unmarshal number into Go struct field ConfigMap.data of type string`).

use schemars::generate::SchemaSettings;
use serde_json::{Map, Value};

use crate::catalog::SchemaFn;

/// Types that decode themselves in Go (numbers and strings both), never a type error here.
const SELF_DECODING: &[&str] = &[
    "Quantity",
    "IntOrString",
    "Time",
    "MicroTime",
    "RawExtension",
    "JSON",
    "JSONSchemaPropsOrBool",
    "JSONSchemaPropsOrArray",
    "JSONSchemaPropsOrStringArray",
    "Duration",
];

/// The decoder's error for the first wrongly typed field of `obj`, if the schema finds one.
pub fn unmarshal_error(schema: SchemaFn, obj: &Value) -> Option<String> {
    let mut generator = SchemaSettings::openapi3().into_generator();
    let root: Value = schema(&mut generator).into();
    let defs = generator.take_definitions(true);
    let mut walk = Walk {
        defs: &defs,
        stack: Vec::new(),
    };
    walk.value(&root, obj, "")
}

/// Go's decoder reads a null element of a map or a slice as the element's zero value: `{"q": null}`
/// in a `map[string]string` is stored as `"q": ""`. Only scalar elements are filled.
pub fn zero_nulls(schema: SchemaFn, obj: &mut Value) {
    fn has_null(v: &Value) -> bool {
        match v {
            Value::Null => true,
            Value::Array(a) => a.iter().any(has_null),
            Value::Object(m) => m.values().any(has_null),
            _ => false,
        }
    }
    // Most bodies have no null at all: spare them the schema.
    if !has_null(obj) {
        return;
    }
    let mut generator = SchemaSettings::openapi3().into_generator();
    let root: Value = schema(&mut generator).into();
    let defs = generator.take_definitions(true);
    zero_elements(&defs, &root, obj);
}

fn zero_elements(defs: &Map<String, Value>, node: &Value, v: &mut Value) {
    let (node, name) = resolve(defs, node);
    if name.is_some_and(|n| SELF_DECODING.contains(&n.rsplit('.').next().unwrap_or(n))) {
        return;
    }
    if let Some(props) = node.get("properties").and_then(Value::as_object) {
        if let Value::Object(m) = v {
            for (k, x) in m.iter_mut() {
                if let Some(p) = props.get(k) {
                    zero_elements(defs, p, x);
                }
            }
        }
        return;
    }
    let elem = match node["type"].as_str() {
        Some("array") => &node["items"],
        Some("object") => &node["additionalProperties"],
        _ => return,
    };
    let elements: Vec<&mut Value> = match v {
        Value::Array(a) => a.iter_mut().collect(),
        Value::Object(m) => m.values_mut().collect(),
        _ => return,
    };
    let (resolved, elem_name) = resolve(defs, elem);
    let self_decoding =
        elem_name.is_some_and(|n| SELF_DECODING.contains(&n.rsplit('.').next().unwrap_or(n)));
    let zero = match resolved["type"].as_str() {
        _ if self_decoding || resolved.get("properties").is_some() => None,
        Some("string") => Some(Value::from("")),
        Some("integer" | "number") => Some(Value::from(0)),
        Some("boolean") => Some(Value::from(false)),
        _ => None,
    };
    for x in elements {
        match (&zero, x.is_null()) {
            (Some(z), true) => *x = z.clone(),
            _ => zero_elements(defs, elem, x),
        }
    }
}

struct Walk<'a> {
    defs: &'a Map<String, Value>,
    stack: Vec<String>,
}

fn go_word(v: &Value) -> String {
    match v {
        Value::String(_) => "string".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if n.is_f64() => format!("number {n}"),
        Value::Number(_) => "number".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
        Value::Null => "null".into(),
    }
}

/// A node with its `$ref` followed, and the name it referred to.
fn resolve<'s>(defs: &'s Map<String, Value>, node: &'s Value) -> (&'s Value, Option<&'s str>) {
    static NULL: Value = Value::Null;
    let reference = node["$ref"]
        .as_str()
        .or_else(|| node["allOf"][0]["$ref"].as_str());
    match reference {
        Some(r) => {
            let name = r.rsplit('/').next().unwrap_or("");
            (defs.get(name).unwrap_or(&NULL), Some(name))
        }
        None => (node, None),
    }
}

impl<'a> Walk<'a> {
    /// The Go type a schema node decodes into.
    fn go_type(&self, node: &Value) -> String {
        let (node, name) = resolve(self.defs, node);
        if let Some(name) = name
            && node.get("properties").is_some()
        {
            let mut parts = name.rsplit('.');
            let ty = parts.next().unwrap_or("");
            let pkg = parts.next().unwrap_or("");
            return format!("{pkg}.{ty}");
        }
        match node["type"].as_str().unwrap_or("") {
            "string" => "string".into(),
            "boolean" => "bool".into(),
            "number" => "float64".into(),
            "integer" => match node["format"].as_str() {
                Some("int32") => "int32".into(),
                _ => "int64".into(),
            },
            "array" => format!("[]{}", self.go_type(&node["items"])),
            "object" => format!("map[string]{}", self.go_type(&node["additionalProperties"])),
            _ => "interface {}".into(),
        }
    }

    fn value(&mut self, node: &'a Value, v: &Value, strukt: &str) -> Option<String> {
        if v.is_null() {
            return None;
        }
        let defs = self.defs;
        let (resolved, name) = resolve(defs, node);
        let short = name.map(|n| n.rsplit('.').next().unwrap_or(n));
        if short.is_some_and(|s| SELF_DECODING.contains(&s)) {
            return None;
        }
        // A struct that is not an object is named as a field of the struct around it.
        if resolved.get("properties").is_some() && !v.is_object() {
            return Some(format!(
                "json: cannot unmarshal {} into Go struct field {strukt}.{} of type {}",
                go_word(v),
                self.stack.join("."),
                self.go_type(node)
            ));
        }
        let strukt = match short {
            Some(s) if resolved.get("properties").is_some() => s.to_string(),
            _ => strukt.to_string(),
        };
        let fail = |w: &Walk<'_>| {
            Some(format!(
                "json: cannot unmarshal {} into Go struct field {strukt}.{} of type {}",
                go_word(v),
                w.stack.join("."),
                w.go_type(node)
            ))
        };
        if let Some(props) = resolved.get("properties").and_then(Value::as_object) {
            let Value::Object(m) = v else {
                return fail(self);
            };
            for (k, x) in m {
                if let Some(p) = props.get(k) {
                    self.stack.push(k.clone());
                    let found = self.value(p, x, &strukt);
                    self.stack.pop();
                    if found.is_some() {
                        return found;
                    }
                }
            }
            return None;
        }
        let ok = match resolved["type"].as_str().unwrap_or("") {
            // A []byte field: Go's decoder reports bad base64 in base64's own words.
            "string" if resolved["format"] == "byte" => match v.as_str() {
                Some(s) => return base64_error(s),
                None => false,
            },
            "string" => v.is_string(),
            "boolean" => v.is_boolean(),
            "number" => v.is_number(),
            "integer" => v.is_i64() || v.is_u64(),
            "array" => {
                let Value::Array(items) = v else {
                    return fail(self);
                };
                return items
                    .iter()
                    .find_map(|x| self.value(&resolved["items"], x, &strukt));
            }
            "object" => {
                let Value::Object(m) = v else {
                    return fail(self);
                };
                let inner = resolved
                    .get("additionalProperties")
                    .filter(|a| a.is_object())?;
                return m.values().find_map(|x| self.value(inner, x, &strukt));
            }
            _ => true,
        };
        if ok { None } else { fail(self) }
    }
}

/// Go's `base64.StdEncoding` error for `s`: the offset of the first byte it cannot take, counting
/// the line breaks it skips.
fn base64_error(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let skip = |mut i: usize| {
        while i < b.len() && matches!(b[i], b'\r' | b'\n') {
            i += 1;
        }
        i
    };
    let alphabet = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let corrupt = |at: usize| Some(format!("illegal base64 data at input byte {at}"));
    let mut i = 0;
    loop {
        // One quantum of four symbols.
        let mut j = 0;
        while j < 4 {
            i = skip(i);
            if i == b.len() {
                return match j {
                    0 => None,
                    _ => corrupt(i - j),
                };
            }
            let c = b[i];
            i += 1;
            if alphabet(c) {
                j += 1;
                continue;
            }
            if c != b'=' || j < 2 {
                return corrupt(i - 1);
            }
            if j == 2 {
                // "==" ends a quantum of two symbols.
                i = skip(i);
                if i == b.len() {
                    return corrupt(b.len());
                }
                if b[i] != b'=' {
                    return corrupt(i - 1);
                }
                i += 1;
            }
            // Nothing but line breaks may follow padding.
            i = skip(i);
            return if i < b.len() { corrupt(i) } else { None };
        }
    }
}

/// Go's `strconv.ParseInt` (base 10, 64 bits), with its error words.
pub fn parse_int(s: &str) -> Result<i64, String> {
    s.parse::<i64>()
        .map_err(|e| strconv_error("ParseInt", s, e.kind()))
}

/// Go's `strconv.ParseUint` (base 10, 64 bits), with its error words.
pub fn parse_uint(s: &str) -> Result<u64, String> {
    // Go refuses a sign where Rust takes `+`.
    if s.starts_with('+') {
        return Err(strconv_error(
            "ParseUint",
            s,
            &std::num::IntErrorKind::InvalidDigit,
        ));
    }
    s.parse::<u64>()
        .map_err(|e| strconv_error("ParseUint", s, e.kind()))
}

fn strconv_error(func: &str, s: &str, kind: &std::num::IntErrorKind) -> String {
    let why = match kind {
        std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
            "value out of range"
        }
        _ => "invalid syntax",
    };
    format!("strconv.{func}: parsing {}: {why}", go_quote(s))
}

/// Go's `%q` of a string (`strconv.Quote`), close enough for parameters and keys.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            // Latin-1's C1 controls and soft hyphen are not printable to Go either.
            c if ('\u{80}'..='\u{9f}').contains(&c) || c == '\u{ad}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Problems libyaml's parser (not its scanner) reports: go-yaml gives their line 0-based.
const YAML_PARSER_PROBLEMS: &[&str] = &[
    "did not find expected <document start>",
    "did not find expected node content",
    "did not find expected key",
    "did not find expected '-' indicator",
    "did not find expected ',' or ']'",
    "did not find expected ',' or '}'",
    "found undefined tag handle",
    "found duplicate %YAML directive",
    "found incompatible YAML document",
    "found duplicate %TAG directive",
];

/// A YAML syntax error as go-yaml (under sigs.k8s.io/yaml) words it: `yaml: line N: <problem>`.
pub fn yaml_error(e: &serde_yaml::Error) -> String {
    let text = e.to_string();
    let problem = [" at line ", " at position ", ", while "]
        .iter()
        .filter_map(|sep| text.find(sep))
        .min()
        .map_or(text.as_str(), |i| &text[..i]);
    let line = e.location().map_or(0, |l| l.line());
    // go-yaml adds one to the scanner's 0-based line and not to the parser's.
    let line = if YAML_PARSER_PROBLEMS.contains(&problem) {
        line.saturating_sub(1)
    } else {
        line
    };
    if line == 0 {
        format!("yaml: {problem}")
    } else {
        format!("yaml: line {line}: {problem}")
    }
}

/// The anonymous struct kube-apiserver first decodes a body into, to find its kind.
const FIND_KIND: &str = "struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }";

/// What kube-apiserver's JSON serializer says when it cannot even read a body's apiVersion and
/// kind: a syntax error of Go's scanner, or a top level (or `kind`, `apiVersion`) of the wrong
/// type. `None` when the kind can be read.
pub fn find_kind_error(body: &[u8]) -> Option<String> {
    let why = match syntax_error(body) {
        Some(e) => e,
        None => {
            let v: Value = serde_json::from_slice(body).ok()?;
            match &v {
                Value::Object(m) => ["apiVersion", "kind"].iter().find_map(|k| {
                    m.get(*k)
                        .filter(|x| !x.is_string() && !x.is_null())
                        .map(|x| {
                            // Into a string, Go names any number just "number".
                            let word = if x.is_number() { "number".into() } else { go_word(x) };
                            format!(
                                "json: cannot unmarshal {word} into Go struct field .{k} of type string"
                            )
                        })
                })?,
                Value::Null => return None,
                other => {
                    let word = if other.is_number() { "number".into() } else { go_word(other) };
                    format!("json: cannot unmarshal {word} into Go value of type {FIND_KIND}")
                }
            }
        }
    };
    Some(format!(
        "couldn't get version/kind; json parse error: {why}"
    ))
}

/// The start of a body as kube-apiserver quotes it in decode errors: up to 30 bytes, as text for
/// a JSON object, else in hex.
pub fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let (head, more) = if body.len() > MAX {
        (&body[..MAX], " ...")
    } else {
        (body, "")
    };
    match body.first() {
        None => "<empty>".into(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(head)),
        Some(_) => {
            let hex: String = head.iter().map(|b| format!("{b:02x}")).collect();
            format!("{hex}{more}")
        }
    }
}

/// Go's `quoteChar`: how its JSON scanner shows the byte it stumbled on.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".into(),
        b'"' => "'\"'".into(),
        c => {
            let q = go_quote(&char::from(c).to_string());
            format!("'{}'", &q[1..q.len() - 1])
        }
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Scan {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside a literal: the rest still expected, and the literal's name.
    Literal(&'static [u8], &'static str),
}

#[derive(Clone, Copy, PartialEq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// The first syntax error of Go's `encoding/json` scanner in `body`, in its words.
pub fn syntax_error(body: &[u8]) -> Option<String> {
    let mut state = Scan::BeginValue;
    let mut stack: Vec<Parse> = Vec::new();
    let err = |c: u8, context: &str| Some(format!("invalid character {} {context}", quote_char(c)));
    let space = |c: u8| matches!(c, b' ' | b'\t' | b'\r' | b'\n');
    // One step of the scanner; `Err` carries the error message.
    let step = |state: &mut Scan, stack: &mut Vec<Parse>, c: u8| -> Option<String> {
        let mut s = *state;
        loop {
            match s {
                Scan::BeginValueOrEmpty if space(c) => return None,
                Scan::BeginValueOrEmpty if c == b']' => s = Scan::EndValue,
                Scan::BeginValueOrEmpty => s = Scan::BeginValue,
                Scan::BeginValue => {
                    *state = match c {
                        c if space(c) => return None,
                        b'{' => {
                            stack.push(Parse::ObjectKey);
                            Scan::BeginStringOrEmpty
                        }
                        b'[' => {
                            stack.push(Parse::ArrayValue);
                            Scan::BeginValueOrEmpty
                        }
                        b'"' => Scan::InString,
                        b'-' => Scan::Neg,
                        b'0' => Scan::Zero,
                        b'1'..=b'9' => Scan::One,
                        b't' => Scan::Literal(b"rue", "true"),
                        b'f' => Scan::Literal(b"alse", "false"),
                        b'n' => Scan::Literal(b"ull", "null"),
                        _ => return err(c, "looking for beginning of value"),
                    };
                    return None;
                }
                Scan::BeginStringOrEmpty if space(c) => return None,
                Scan::BeginStringOrEmpty if c == b'}' => {
                    if let Some(top) = stack.last_mut() {
                        *top = Parse::ObjectValue;
                    }
                    s = Scan::EndValue;
                }
                Scan::BeginStringOrEmpty | Scan::BeginString => {
                    if space(c) {
                        *state = Scan::BeginString;
                        return None;
                    }
                    if c == b'"' {
                        *state = Scan::InString;
                        return None;
                    }
                    return err(c, "looking for beginning of object key string");
                }
                Scan::EndValue => {
                    let Some(top) = stack.last().copied() else {
                        s = Scan::EndTop;
                        continue;
                    };
                    if space(c) {
                        *state = Scan::EndValue;
                        return None;
                    }
                    *state = match (top, c) {
                        (Parse::ObjectKey, b':') => {
                            stack.pop();
                            stack.push(Parse::ObjectValue);
                            Scan::BeginValue
                        }
                        (Parse::ObjectKey, _) => return err(c, "after object key"),
                        (Parse::ObjectValue, b',') => {
                            stack.pop();
                            stack.push(Parse::ObjectKey);
                            Scan::BeginString
                        }
                        (Parse::ObjectValue, b'}') => {
                            stack.pop();
                            Scan::EndValue
                        }
                        (Parse::ObjectValue, _) => return err(c, "after object key:value pair"),
                        (Parse::ArrayValue, b',') => Scan::BeginValue,
                        (Parse::ArrayValue, b']') => {
                            stack.pop();
                            Scan::EndValue
                        }
                        (Parse::ArrayValue, _) => return err(c, "after array element"),
                    };
                    if *state == Scan::EndValue && stack.is_empty() {
                        *state = Scan::EndTop;
                    }
                    return None;
                }
                Scan::EndTop => {
                    *state = Scan::EndTop;
                    return if space(c) {
                        None
                    } else {
                        err(c, "after top-level value")
                    };
                }
                Scan::InString => {
                    *state = match c {
                        b'"' => end_value(stack),
                        b'\\' => Scan::InStringEsc,
                        c if c < 0x20 => return err(c, "in string literal"),
                        _ => Scan::InString,
                    };
                    return None;
                }
                Scan::InStringEsc => {
                    *state = match c {
                        b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => Scan::InString,
                        b'u' => Scan::InStringEscU(0),
                        _ => return err(c, "in string escape code"),
                    };
                    return None;
                }
                Scan::InStringEscU(n) => {
                    if !c.is_ascii_hexdigit() {
                        return err(c, "in \\u hexadecimal character escape");
                    }
                    *state = if n == 3 {
                        Scan::InString
                    } else {
                        Scan::InStringEscU(n + 1)
                    };
                    return None;
                }
                Scan::Neg => {
                    *state = match c {
                        b'0' => Scan::Zero,
                        b'1'..=b'9' => Scan::One,
                        _ => return err(c, "in numeric literal"),
                    };
                    return None;
                }
                Scan::One if c.is_ascii_digit() => return None,
                Scan::One | Scan::Zero => match c {
                    b'.' => {
                        *state = Scan::Dot;
                        return None;
                    }
                    b'e' | b'E' => {
                        *state = Scan::E;
                        return None;
                    }
                    _ => s = Scan::EndValue,
                },
                Scan::Dot => {
                    if !c.is_ascii_digit() {
                        return err(c, "after decimal point in numeric literal");
                    }
                    *state = Scan::Dot0;
                    return None;
                }
                Scan::Dot0 if c.is_ascii_digit() => return None,
                Scan::Dot0 if c == b'e' || c == b'E' => {
                    *state = Scan::E;
                    return None;
                }
                Scan::Dot0 => s = Scan::EndValue,
                Scan::E if c == b'+' || c == b'-' => {
                    *state = Scan::ESign;
                    return None;
                }
                Scan::E | Scan::ESign => {
                    if !c.is_ascii_digit() {
                        return err(c, "in exponent of numeric literal");
                    }
                    *state = Scan::E0;
                    return None;
                }
                Scan::E0 if c.is_ascii_digit() => return None,
                Scan::E0 => s = Scan::EndValue,
                Scan::Literal(rest, name) => {
                    if c != rest[0] {
                        return err(
                            c,
                            &format!("in literal {name} (expecting {})", quote_char(rest[0])),
                        );
                    }
                    *state = if rest.len() == 1 {
                        end_value(stack)
                    } else {
                        Scan::Literal(&rest[1..], name)
                    };
                    return None;
                }
            }
        }
    };
    for &c in body {
        if let Some(e) = step(&mut state, &mut stack, c) {
            return Some(e);
        }
    }
    // At the end Go feeds one more space, which finishes a number or reports what is missing.
    if state == Scan::EndTop {
        return None;
    }
    if let Some(e) = step(&mut state, &mut stack, b' ') {
        return Some(e);
    }
    if state == Scan::EndTop {
        None
    } else {
        Some("unexpected end of JSON input".into())
    }
}

/// The state after a complete value: the end of the document when nothing is open.
fn end_value(stack: &[Parse]) -> Scan {
    if stack.is_empty() {
        Scan::EndTop
    } else {
        Scan::EndValue
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn configmap(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        g.subschema_for::<k8s_openapi::api::core::v1::ConfigMap>()
    }

    fn pod(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        g.subschema_for::<k8s_openapi::api::core::v1::Pod>()
    }

    #[test]
    fn names_the_struct_field_path_and_go_type() {
        assert_eq!(
            unmarshal_error(configmap, &json!({"data": {"k": 5}})).as_deref(),
            Some(
                "json: cannot unmarshal number into Go struct field ConfigMap.data of type string"
            )
        );
        assert_eq!(
            unmarshal_error(
                pod,
                &json!({"spec": {"containers": [{"name": "c", "image": true}]}})
            )
            .as_deref(),
            Some(
                "json: cannot unmarshal bool into Go struct field Container.spec.containers.image of type string"
            )
        );
        assert_eq!(
            unmarshal_error(configmap, &json!({"data": {"k": "v"}})),
            None
        );
    }

    #[test]
    fn bad_base64_is_worded_as_go_base64_words_it() {
        for (s, want) in [
            ("", None),
            ("dQ==", None),
            ("YWJj", None),
            ("YW\nJj", None),
            ("not base64!", Some(3)),
            ("dQ=", Some(3)),
            ("d", Some(0)),
            ("dQ", Some(0)),
            ("dQ=x", Some(2)),
            ("=", Some(0)),
            ("YWI=x", Some(4)),
        ] {
            let want = want.map(|n| format!("illegal base64 data at input byte {n}"));
            assert_eq!(base64_error(s), want, "{s:?}");
        }
    }

    #[test]
    fn syntax_errors_are_worded_as_go_scanner_words_them() {
        let cases: &[(&str, Option<&str>)] = &[
            ("", Some("unexpected end of JSON input")),
            ("{", Some("unexpected end of JSON input")),
            ("{\"a\":", Some("unexpected end of JSON input")),
            ("{\"a\" 1}", Some("invalid character '1' after object key")),
            (
                "{\"a\":1,}",
                Some("invalid character '}' looking for beginning of object key string"),
            ),
            (
                "{\"a\":1 \"b\"}",
                Some("invalid character '\"' after object key:value pair"),
            ),
            (
                "{\"a\":tru}",
                Some("invalid character '}' in literal true (expecting 'e')"),
            ),
            (
                "{\"a\":\"\\x\"}",
                Some("invalid character 'x' in string escape code"),
            ),
            (
                "{\"a\":1.}",
                Some("invalid character '}' after decimal point in numeric literal"),
            ),
            (
                "{\"a\":1e}",
                Some("invalid character '}' in exponent of numeric literal"),
            ),
            (
                "{\"a\":01}",
                Some("invalid character '1' after object key:value pair"),
            ),
            (
                "{\"a\":1}x",
                Some("invalid character 'x' after top-level value"),
            ),
            (
                "{p}",
                Some("invalid character 'p' looking for beginning of object key string"),
            ),
            ("[1, 2]", None),
            (" {\"a\": [1.5e-3, true, null, \"\\u00e9\"]} ", None),
            ("5", None),
            ("-", Some("invalid character ' ' in numeric literal")),
        ];
        for (body, want) in cases {
            assert_eq!(syntax_error(body.as_bytes()).as_deref(), *want, "{body}");
        }
    }

    #[test]
    fn kind_errors_and_summaries() {
        assert_eq!(
            find_kind_error(b"[1]").as_deref(),
            Some(
                "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }"
            )
        );
        assert_eq!(
            find_kind_error(b"{\"kind\":5}").as_deref(),
            Some(
                "couldn't get version/kind; json parse error: json: cannot unmarshal number into Go struct field .kind of type string"
            )
        );
        assert_eq!(find_kind_error(b"{\"kind\":\"A\"}"), None);
        assert_eq!(summarize(b""), "<empty>");
        assert_eq!(summarize(b"[1]"), "5b315d");
        assert_eq!(
            summarize(b"{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\"}"),
            "{\"apiVersion\": \"v1\", \"kind\": \" ..."
        );
        assert_eq!(
            parse_int("abc").unwrap_err(),
            "strconv.ParseInt: parsing \"abc\": invalid syntax"
        );
        assert_eq!(
            parse_uint("99999999999999999999").unwrap_err(),
            "strconv.ParseUint: parsing \"99999999999999999999\": value out of range"
        );
        assert_eq!(parse_int("-1"), Ok(-1));
        let flow =
            serde_yaml::from_str::<Value>("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n")
                .unwrap_err();
        assert_eq!(
            yaml_error(&flow),
            "yaml: line 3: did not find expected ',' or '}'"
        );
    }
}
