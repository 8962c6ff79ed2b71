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
}
