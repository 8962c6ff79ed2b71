#![allow(clippy::unwrap_used)]

use rstest::rstest;
use serde_json::{Value, json};

use super::Schema;
use crate::error::CauseReason;

fn schema(spec: Value) -> Schema {
    Schema::parse(&json!({
        "type": "object",
        "properties": {"spec": spec},
    }))
    .unwrap()
}

/// Validates `{"spec": spec}` and renders each problem as `reason|field|message`.
fn check(spec_schema: Value, spec: Value) -> Vec<String> {
    render(schema(spec_schema).validate(&json!({"spec": spec}), None))
}

fn reason(r: CauseReason) -> &'static str {
    r.as_str()
}

fn render(errs: Vec<crate::error::FieldCause>) -> Vec<String> {
    errs.into_iter()
        .map(|e| format!("{}|{}|{}", reason(e.reason), e.field, e.message))
        .collect()
}

#[test]
fn schema_is_send_and_sync() {
    fn assert<T: Send + Sync>() {}
    assert::<Schema>();
}

#[rstest]
#[case::type_integer_ok(json!({"type":"object","properties":{"count":{"type":"integer"}}}), json!({"count": 3}), &[])]
#[case::type_integer_string(
    json!({"type":"object","properties":{"count":{"type":"integer"}}}),
    json!({"count": "x"}),
    &["FieldValueTypeInvalid|spec.count|Invalid value: \"string\": spec.count in body must be of type integer: \"string\""]
)]
#[case::type_integer_float(
    json!({"type":"object","properties":{"count":{"type":"integer"}}}),
    json!({"count": 1.5}),
    &[
        "FieldValueTypeInvalid|spec.count|Invalid value: \"number\": spec.count in body must be of type integer: \"number\"",
        "FieldValueInvalid|<nil>|Invalid value: \"\": Checked value must be of type integer (default format) in spec.count"
    ]
)]
#[case::type_number_accepts_int(json!({"type":"object","properties":{"r":{"type":"number"}}}), json!({"r": 3}), &[])]
#[case::type_string(
    json!({"type":"object","properties":{"s":{"type":"string"}}}),
    json!({"s": true}),
    &["FieldValueTypeInvalid|spec.s|Invalid value: \"boolean\": spec.s in body must be of type string: \"boolean\""]
)]
#[case::type_object(
    json!({"type":"object","properties":{"o":{"type":"object"}}}),
    json!({"o": [1]}),
    &["FieldValueTypeInvalid|spec.o|Invalid value: \"array\": spec.o in body must be of type object: \"array\""]
)]
#[case::type_array(
    json!({"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}),
    json!({"a": {"x": 1}}),
    &["FieldValueTypeInvalid|spec.a|Invalid value: \"object\": spec.a in body must be of type array: \"object\""]
)]
#[case::type_boolean(
    json!({"type":"object","properties":{"b":{"type":"boolean"}}}),
    json!({"b": "true"}),
    &["FieldValueTypeInvalid|spec.b|Invalid value: \"string\": spec.b in body must be of type boolean: \"string\""]
)]
#[case::null_not_nullable(
    json!({"type":"object","properties":{"s":{"type":"string"}}}),
    json!({"s": null}),
    &["FieldValueTypeInvalid|spec.s|Invalid value: \"null\": spec.s in body must be of type string: \"null\""]
)]
#[case::null_nullable(json!({"type":"object","properties":{"s":{"type":"string","nullable":true}}}), json!({"s": null}), &[])]
#[case::required_missing(
    json!({"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}),
    json!({}),
    &["FieldValueRequired|spec.name|Required value"]
)]
#[case::required_present(json!({"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}), json!({"name":"a"}), &[])]
#[case::enum_ok(json!({"type":"object","properties":{"m":{"type":"string","enum":["a","b"]}}}), json!({"m":"a"}), &[])]
#[case::enum_fail(
    json!({"type":"object","properties":{"m":{"type":"string","enum":["a","b"]}}}),
    json!({"m":"x"}),
    &["FieldValueNotSupported|spec.m|Unsupported value: \"x\": supported values: \"a\", \"b\""]
)]
#[case::enum_int(
    json!({"type":"object","properties":{"m":{"type":"integer","enum":[1,2]}}}),
    json!({"m":3}),
    &["FieldValueNotSupported|spec.m|Unsupported value: 3: supported values: \"1\", \"2\""]
)]
#[case::pattern_ok(json!({"type":"object","properties":{"p":{"type":"string","pattern":"^[a-z]+$"}}}), json!({"p":"abc"}), &[])]
#[case::pattern_fail(
    json!({"type":"object","properties":{"p":{"type":"string","pattern":"^[a-z]+$"}}}),
    json!({"p":"AB"}),
    &["FieldValueInvalid|spec.p|Invalid value: \"AB\": spec.p in body should match '^[a-z]+$'"]
)]
#[case::minimum_fail(
    json!({"type":"object","properties":{"n":{"type":"integer","minimum":1}}}),
    json!({"n":0}),
    &["FieldValueInvalid|spec.n|Invalid value: 0: spec.n in body should be greater than or equal to 1"]
)]
#[case::minimum_ok(json!({"type":"object","properties":{"n":{"type":"integer","minimum":1}}}), json!({"n":1}), &[])]
#[case::exclusive_minimum_fail(
    json!({"type":"object","properties":{"n":{"type":"integer","minimum":1,"exclusiveMinimum":true}}}),
    json!({"n":1}),
    &["FieldValueInvalid|spec.n|Invalid value: 1: spec.n in body should be greater than 1"]
)]
#[case::maximum_fail(
    json!({"type":"object","properties":{"n":{"type":"number","maximum":2.5}}}),
    json!({"n":3.5}),
    &["FieldValueInvalid|spec.n|Invalid value: 3.5: spec.n in body should be less than or equal to 2.5"]
)]
#[case::exclusive_maximum_fail(
    json!({"type":"object","properties":{"n":{"type":"integer","maximum":10,"exclusiveMaximum":true}}}),
    json!({"n":10}),
    &["FieldValueInvalid|spec.n|Invalid value: 10: spec.n in body should be less than 10"]
)]
#[case::maximum_ok(json!({"type":"object","properties":{"n":{"type":"integer","maximum":10}}}), json!({"n":10}), &[])]
#[case::multiple_of_fail(
    json!({"type":"object","properties":{"n":{"type":"integer","multipleOf":5}}}),
    json!({"n":7}),
    &["FieldValueInvalid|spec.n|Invalid value: 7: spec.n in body should be a multiple of 5"]
)]
#[case::multiple_of_ok(json!({"type":"object","properties":{"n":{"type":"integer","multipleOf":5}}}), json!({"n":15}), &[])]
#[case::max_length_fail(
    json!({"type":"object","properties":{"s":{"type":"string","maxLength":3}}}),
    json!({"s":"abcd"}),
    &["FieldValueTooLong|spec.s|Too long: may not be more than 3 bytes"]
)]
#[case::max_length_ok(json!({"type":"object","properties":{"s":{"type":"string","maxLength":3}}}), json!({"s":"abc"}), &[])]
#[case::min_length_fail(
    json!({"type":"object","properties":{"s":{"type":"string","minLength":2}}}),
    json!({"s":"a"}),
    &["FieldValueInvalid|spec.s|Invalid value: \"a\": spec.s in body should be at least 2 chars long"]
)]
#[case::max_items_fail(
    json!({"type":"object","properties":{"a":{"type":"array","maxItems":1,"items":{"type":"integer"}}}}),
    json!({"a":[1,2]}),
    &["FieldValueTooMany|spec.a|Too many: 2: must have at most 1 item"]
)]
#[case::min_items_fail(
    json!({"type":"object","properties":{"a":{"type":"array","minItems":1,"items":{"type":"integer"}}}}),
    json!({"a":[]}),
    &["FieldValueInvalid|spec.a|Invalid value: 0: spec.a in body should have at least 1 items"]
)]
#[case::items_ok(json!({"type":"object","properties":{"a":{"type":"array","minItems":1,"maxItems":2,"items":{"type":"integer"}}}}), json!({"a":[1]}), &[])]
#[case::max_properties_fail(
    json!({"type":"object","properties":{"m":{"type":"object","maxProperties":1,"additionalProperties":{"type":"string"}}}}),
    json!({"m":{"a":"1","b":"2"}}),
    &["FieldValueTooMany|spec.m|Too many: 2: must have at most 1 item"]
)]
#[case::min_properties_fail(
    json!({"type":"object","properties":{"m":{"type":"object","minProperties":1,"additionalProperties":{"type":"string"}}}}),
    json!({"m":{}}),
    &["FieldValueInvalid|spec.m|Invalid value: 0: spec.m in body should have at least 1 properties"]
)]
#[case::additional_properties_value(
    json!({"type":"object","properties":{"params":{"type":"object","additionalProperties":{"type":"integer"}}}}),
    json!({"params":{"key":"v"}}),
    &["FieldValueTypeInvalid|spec.params.key|Invalid value: \"string\": spec.params.key in body must be of type integer: \"string\""]
)]
#[case::nested_array_path(
    json!({"type":"object","properties":{"podSets":{"type":"array","items":{"type":"object","properties":{"count":{"type":"integer","minimum":0}}}}}}),
    json!({"podSets":[{"count":1},{"count":-1}]}),
    &["FieldValueInvalid|spec.podSets[1].count|Invalid value: -1: spec.podSets[1].count in body should be greater than or equal to 0"]
)]
#[case::int_or_string_int(json!({"type":"object","properties":{"q":{"x-kubernetes-int-or-string":true}}}), json!({"q":3}), &[])]
#[case::int_or_string_string(json!({"type":"object","properties":{"q":{"x-kubernetes-int-or-string":true}}}), json!({"q":"50%"}), &[])]
#[case::int_or_string_bool(
    json!({"type":"object","properties":{"q":{"x-kubernetes-int-or-string":true}}}),
    json!({"q":true}),
    &["FieldValueTypeInvalid|spec.q|Invalid value: \"boolean\": spec.q in body must be of type integer,string: \"boolean\""]
)]
#[case::preserve_unknown_anything(json!({"type":"object","properties":{"x":{"x-kubernetes-preserve-unknown-fields":true}}}), json!({"x":{"a":[1,"b"]}}), &[])]
#[case::embedded_requires_kind(
    json!({"type":"object","properties":{"t":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true}}}),
    json!({"t":{"apiVersion":"v1"}}),
    &["FieldValueRequired|spec.t.kind|Required value"]
)]
#[case::format_date_time_ok(json!({"type":"object","properties":{"t":{"type":"string","format":"date-time"}}}), json!({"t":"2024-01-02T03:04:05Z"}), &[])]
#[case::format_date_time_fail(
    json!({"type":"object","properties":{"t":{"type":"string","format":"date-time"}}}),
    json!({"t":"yesterday"}),
    &["FieldValueTypeInvalid|spec.t|Invalid value: \"yesterday\": spec.t in body must be of type date-time: \"yesterday\""]
)]
#[case::format_byte_ok(json!({"type":"object","properties":{"b":{"type":"string","format":"byte"}}}), json!({"b":"aGVsbG8="}), &[])]
#[case::format_byte_fail(
    json!({"type":"object","properties":{"b":{"type":"string","format":"byte"}}}),
    json!({"b":"not base64!"}),
    &["FieldValueTypeInvalid|spec.b|Invalid value: \"not base64!\": spec.b in body must be of type byte: \"not base64!\""]
)]
#[case::format_uuid_fail(
    json!({"type":"object","properties":{"u":{"type":"string","format":"uuid"}}}),
    json!({"u":"nope"}),
    &["FieldValueTypeInvalid|spec.u|Invalid value: \"nope\": spec.u in body must be of type uuid: \"nope\""]
)]
#[case::format_int32_range(
    json!({"type":"object","properties":{"n":{"type":"integer","format":"int32"}}}),
    json!({"n":5_000_000_000_i64}),
    &["FieldValueInvalid|<nil>|Invalid value: \"\": Checked value must be of type integer with format int32 in spec.n"]
)]
#[case::format_int64_ok(json!({"type":"object","properties":{"n":{"type":"integer","format":"int64"}}}), json!({"n":5}), &[])]
fn keywords(#[case] spec_schema: Value, #[case] spec: Value, #[case] want: &[&str]) {
    assert_eq!(check(spec_schema, spec), want);
}

#[rstest]
#[case::map_duplicate(
    json!({"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["type"],
        "items":{"type":"object","properties":{"type":{"type":"string"},"v":{"type":"integer"}}}}),
    json!([{"type":"A","v":1},{"type":"B"},{"type":"A","v":2}]),
    &["FieldValueDuplicate|spec.list[2]|Duplicate value: {\"type\":\"A\"}"]
)]
#[case::map_unique(
    json!({"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["type"],
        "items":{"type":"object","properties":{"type":{"type":"string"}}}}),
    json!([{"type":"A"},{"type":"B"}]),
    &[]
)]
#[case::set_duplicate(
    json!({"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}}),
    json!(["a","b","a"]),
    &["FieldValueDuplicate|spec.list[2]|Duplicate value: \"a\""]
)]
#[case::atomic_allows_duplicates(
    json!({"type":"array","x-kubernetes-list-type":"atomic","items":{"type":"string"}}),
    json!(["a","a"]),
    &[]
)]
fn list_types(#[case] list_schema: Value, #[case] list: Value, #[case] want: &[&str]) {
    let s = json!({"type":"object","properties":{"list": list_schema}});
    assert_eq!(check(s, json!({"list": list})), want);
}

/// Duplicates in a list an update leaves unchanged are not reported again (ratcheting); one the
/// update adds is.
#[test]
fn list_duplicates_ratchet_on_unchanged_lists() {
    let s = schema(json!({"type":"object","properties":{
        "kept": {"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
        "edited": {"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},
    }}));
    let old = json!({"spec": {"kept": ["a", "a"], "edited": ["b"]}});
    let new = json!({"spec": {"kept": ["a", "a"], "edited": ["b", "b"]}});
    assert_eq!(
        render(s.validate(&new, Some(&old))),
        ["FieldValueDuplicate|spec.edited[1]|Duplicate value: \"b\""]
    );
    assert_eq!(
        render(s.validate(&new, None)).len(),
        2,
        "a create checks both"
    );
}

#[test]
fn parse_refuses_unique_items_and_defaults_with_unknown_fields() {
    let err = Schema::parse(&json!({"type":"object","properties":{
        "a":{"type":"array","uniqueItems":true,"items":{"type":"integer"}},
        "o":{"type":"object","default":{"a":"x","junk":1},"properties":{"a":{"type":"string"}}}}}))
    .unwrap_err();
    assert_eq!(
        err,
        "openAPIV3Schema.properties[a].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic, \
         openAPIV3Schema.properties[o].default: Invalid value: {\"a\":\"x\",\"junk\":1}: must not have unknown fields"
    );
}

#[test]
fn parse_rejects_map_list_without_keys() {
    let err = Schema::parse(&json!({"type":"object","properties":{"l":{"type":"array","x-kubernetes-list-type":"map","items":{"type":"object"}}}}))
        .unwrap_err();
    assert!(
        err.contains("x-kubernetes-list-map-keys: Required value"),
        "{err}"
    );
}

#[rstest]
#[case::unknown_dropped(
    json!({"type":"object","properties":{"a":{"type":"string"}}}),
    json!({"a":"x","b":"y"}),
    json!({"a":"x"})
)]
#[case::nested_dropped(
    json!({"type":"object","properties":{"o":{"type":"object","properties":{"k":{"type":"integer"}}}}}),
    json!({"o":{"k":1,"z":2}}),
    json!({"o":{"k":1}})
)]
#[case::preserved(
    json!({"type":"object","x-kubernetes-preserve-unknown-fields":true,"properties":{"o":{"type":"object","properties":{"k":{"type":"integer"}}}}}),
    json!({"free":{"any":1},"o":{"k":1,"z":2}}),
    json!({"free":{"any":1},"o":{"k":1}})
)]
#[case::in_arrays(
    json!({"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"n":{"type":"string"}}}}}}),
    json!({"l":[{"n":"a","x":1},{"y":2}]}),
    json!({"l":[{"n":"a"},{}]})
)]
#[case::additional_properties(
    json!({"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"object","properties":{"v":{"type":"string"}}}}}}),
    json!({"m":{"k1":{"v":"a","junk":1},"k2":{}}}),
    json!({"m":{"k1":{"v":"a"},"k2":{}}})
)]
#[case::object_without_properties(
    json!({"type":"object","properties":{"o":{"type":"object"}}}),
    json!({"o":{"a":1}}),
    json!({"o":{}})
)]
fn pruning(#[case] spec_schema: Value, #[case] spec: Value, #[case] want: Value) {
    let s = schema(spec_schema);
    let mut obj =
        json!({"apiVersion":"g/v1","kind":"K","metadata":{"name":"n"},"spec": spec, "extra": 1});
    s.prune(&mut obj);
    assert_eq!(
        obj,
        json!({"apiVersion":"g/v1","kind":"K","metadata":{"name":"n"},"spec": want})
    );
}

#[test]
fn pruning_keeps_object_meta_fields_only() {
    let s = schema(json!({"type":"object"}));
    let mut obj = json!({"apiVersion":"g/v1","kind":"K","metadata":{"name":"n","labels":{"a":"b"},"bogus":1}});
    s.prune(&mut obj);
    assert_eq!(
        obj,
        json!({"apiVersion":"g/v1","kind":"K","metadata":{"name":"n","labels":{"a":"b"}}})
    );
}

#[test]
fn pruning_embedded_resource_keeps_type_meta() {
    let s = schema(
        json!({"type":"object","properties":{"t":{"type":"object","x-kubernetes-embedded-resource":true,
        "properties":{"spec":{"type":"object","properties":{"a":{"type":"string"}}}}}}}),
    );
    let mut obj = json!({"spec":{"t":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","x":1},"spec":{"a":"1","b":2},"other":3}}});
    s.prune(&mut obj);
    assert_eq!(
        obj,
        json!({"spec":{"t":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"a":"1"}}}})
    );
}

#[rstest]
#[case::absent_gets_default(
    json!({"type":"object","properties":{"r":{"type":"integer","default":1}}}),
    json!({}),
    json!({"r":1})
)]
#[case::present_kept(
    json!({"type":"object","properties":{"r":{"type":"integer","default":1}}}),
    json!({"r":5}),
    json!({"r":5})
)]
#[case::null_replaced(
    json!({"type":"object","properties":{"r":{"type":"integer","default":1}}}),
    json!({"r":null}),
    json!({"r":1})
)]
#[case::null_without_default_dropped(
    json!({"type":"object","properties":{"r":{"type":"integer"}}}),
    json!({"r":null}),
    json!({})
)]
#[case::nullable_null_kept(
    json!({"type":"object","properties":{"r":{"type":"integer","nullable":true,"default":1}}}),
    json!({"r":null}),
    json!({"r":null})
)]
#[case::nested_defaults(
    json!({"type":"object","properties":{"o":{"type":"object","default":{},"properties":{"a":{"type":"string","default":"x"},"b":{"type":"integer"}}}}}),
    json!({}),
    json!({"o":{"a":"x"}})
)]
#[case::in_arrays(
    json!({"type":"object","properties":{"l":{"type":"array","items":{"type":"object","properties":{"p":{"type":"string","default":"TCP"}}}}}}),
    json!({"l":[{},{"p":"UDP"}]}),
    json!({"l":[{"p":"TCP"},{"p":"UDP"}]})
)]
#[case::in_map_values(
    json!({"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"object","properties":{"w":{"type":"integer","default":1}}}}}}),
    json!({"m":{"a":{},"b":{"w":3}}}),
    json!({"m":{"a":{"w":1},"b":{"w":3}}})
)]
fn defaulting(#[case] spec_schema: Value, #[case] spec: Value, #[case] want: Value) {
    let s = schema(spec_schema);
    let mut obj = json!({ "spec": spec });
    // Reads skip the copy when nothing would change: the check must agree with defaulting.
    let before = obj.clone();
    assert_eq!(s.needs_defaults(&obj), before != json!({ "spec": want }));
    s.apply_defaults(&mut obj);
    assert_eq!(obj, json!({ "spec": want }));
    assert!(
        !s.needs_defaults(&obj),
        "defaulted objects need nothing more"
    );
}

fn replicas_schema() -> Schema {
    schema(json!({
        "type":"object",
        "properties":{"replicas":{"type":"integer"},"minReplicas":{"type":"integer"}},
        "x-kubernetes-validations":[{"rule":"self.minReplicas <= self.replicas","message":"minReplicas must be <= replicas"}]
    }))
}

#[rstest]
#[case::ok(json!({"replicas":3,"minReplicas":1}), &[])]
#[case::fail(
    json!({"replicas":1,"minReplicas":3}),
    &["FieldValueInvalid|spec|Invalid value: minReplicas must be <= replicas"]
)]
fn cel_rule_with_message(#[case] spec: Value, #[case] want: &[&str]) {
    let errs = replicas_schema().validate(&json!({ "spec": spec }), None);
    assert_eq!(render(errs), want);
}

#[rstest]
#[case::default_message(
    json!({"type":"integer","x-kubernetes-validations":[{"rule":"self >= 0"}]}),
    json!(-1),
    &["FieldValueInvalid|spec.n|Invalid value: -1: failed rule: self >= 0"]
)]
#[case::message_expression(
    json!({"type":"integer","x-kubernetes-validations":[{"rule":"self >= 0","messageExpression":"'got ' + string(self)"}]}),
    json!(-1),
    &["FieldValueInvalid|spec.n|Invalid value: -1: got -1"]
)]
#[case::forbidden(
    json!({"type":"string","x-kubernetes-validations":[{"rule":"self != 'root'","message":"root not allowed","reason":"FieldValueForbidden"}]}),
    json!("root"),
    &["FieldValueForbidden|spec.n|Forbidden: root not allowed"]
)]
#[case::required(
    json!({"type":"string","x-kubernetes-validations":[{"rule":"self != ''","message":"must be set","reason":"FieldValueRequired"}]}),
    json!(""),
    &["FieldValueRequired|spec.n|Required value: must be set"]
)]
#[case::duplicate(
    json!({"type":"string","x-kubernetes-validations":[{"rule":"self != 'x'","reason":"FieldValueDuplicate"}]}),
    json!("x"),
    &["FieldValueDuplicate|spec.n|Duplicate value: \"x\""]
)]
#[case::field_path(
    json!({"type":"object","properties":{"a":{"type":"string"}},
        "x-kubernetes-validations":[{"rule":"self.a.startsWith('p-')","message":"needs prefix","fieldPath":".a"}]}),
    json!({"a":"x"}),
    &["FieldValueInvalid|spec.n.a|Invalid value: needs prefix"]
)]
#[case::kube_extension_quantity(
    json!({"x-kubernetes-int-or-string":true,"x-kubernetes-validations":[{"rule":"quantity(string(self)).isLessThan(quantity('1Gi'))","message":"too big"}]}),
    json!("2Gi"),
    &["FieldValueInvalid|spec.n|Invalid value: \"2Gi\": too big"]
)]
#[case::escaped_property(
    json!({"type":"object","properties":{"my-field":{"type":"integer"}},"x-kubernetes-validations":[{"rule":"self.my__dash__field > 1"}]}),
    json!({"my-field":1}),
    &["FieldValueInvalid|spec.n|Invalid value: failed rule: self.my__dash__field > 1"]
)]
#[case::map_values_and_items(
    json!({"type":"array","items":{"type":"object","additionalProperties":{"type":"string","x-kubernetes-validations":[{"rule":"self.size() < 3"}]}}}),
    json!([{"k":"ab"},{"key":"abcd"}]),
    &["FieldValueInvalid|spec.n[1][key]|Invalid value: \"abcd\": failed rule: self.size() < 3"]
)]
#[case::eval_error(
    json!({"type":"object","properties":{"a":{"type":"string"}},"x-kubernetes-validations":[{"rule":"self.a == 'x'"}]}),
    json!({}),
    &["FieldValueInvalid|spec.n|Invalid value: \"object\": no such key: a evaluating rule: self.a == 'x'"]
)]
// Only the fields a node's rules select are converted to CEL; a rule that uses the value whole
// (a size, a macro over its keys, a message expression) still sees every field.
#[case::fields_read_by_another_rule(
    json!({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
        "x-kubernetes-validations":[{"rule":"has(self.a)"},{"rule":"self.b < 2"}]}),
    json!({"a":1,"b":5}),
    &["FieldValueInvalid|spec.n|Invalid value: failed rule: self.b < 2"]
)]
#[case::whole_value_size(
    json!({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
        "x-kubernetes-validations":[{"rule":"self.a == 1"},{"rule":"size(self) < 2","message":"too many"}]}),
    json!({"a":1,"b":5}),
    &["FieldValueInvalid|spec.n|Invalid value: too many"]
)]
#[case::whole_value_macro(
    json!({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},
        "x-kubernetes-validations":[{"rule":"self.all(k, k == 'a')"}]}),
    json!({"a":1,"b":5}),
    &["FieldValueInvalid|spec.n|Invalid value: failed rule: self.all(k, k == 'a')"]
)]
#[case::message_expression_reads_another_field(
    json!({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},
        "x-kubernetes-validations":[{"rule":"self.a < 2","messageExpression":"'a is too big for ' + self.b"}]}),
    json!({"a":5,"b":"me"}),
    &["FieldValueInvalid|spec.n|Invalid value: a is too big for me"]
)]
fn cel_rules(#[case] n_schema: Value, #[case] n: Value, #[case] want: &[&str]) {
    let s = schema(json!({"type":"object","properties":{"n": n_schema}}));
    let errs = s.validate(&json!({"spec": {"n": n}}), None);
    assert_eq!(render(errs), want);
}

fn immutable_schema() -> Schema {
    schema(json!({
        "type":"object",
        "properties":{"class":{"type":"string","x-kubernetes-validations":[{"rule":"self == oldSelf","message":"Value is immutable"}]}}
    }))
}

#[rstest]
#[case::create(json!({"class":"a"}), None, &[])]
#[case::unchanged(json!({"class":"a"}), Some(json!({"class":"a"})), &[])]
#[case::changed(
    json!({"class":"b"}),
    Some(json!({"class":"a"})),
    &["FieldValueInvalid|spec.class|Invalid value: \"b\": Value is immutable"]
)]
#[case::newly_set_on_update(json!({"class":"b"}), Some(json!({})), &[])]
fn cel_transition_rule(#[case] spec: Value, #[case] old: Option<Value>, #[case] want: &[&str]) {
    let old = old.map(|o| json!({ "spec": o }));
    let errs = immutable_schema().validate(&json!({ "spec": spec }), old.as_ref());
    assert_eq!(render(errs), want);
}

#[test]
fn cel_transition_rule_in_map_list_correlates_by_key() {
    let s = schema(
        json!({"type":"object","properties":{"l":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
        "items":{"type":"object","properties":{"name":{"type":"string"},"size":{"type":"integer"}},
        "x-kubernetes-validations":[{"rule":"self.size >= oldSelf.size","message":"may not shrink"}]}}}}),
    );
    let old = json!({"spec":{"l":[{"name":"a","size":2},{"name":"b","size":5}]}});
    let new =
        json!({"spec":{"l":[{"name":"b","size":4},{"name":"a","size":3},{"name":"c","size":1}]}});
    assert_eq!(
        render(s.validate(&new, Some(&old))),
        ["FieldValueInvalid|spec.l[0]|Invalid value: may not shrink"]
    );
}

#[test]
fn cel_failures_on_unchanged_values_ratchet() {
    let s = replicas_schema();
    let bad = json!({"spec":{"replicas":1,"minReplicas":3}});
    assert!(s.validate(&bad, Some(&bad)).is_empty());
    assert_eq!(s.validate(&bad, None).len(), 1);
}

#[rstest]
#[case::syntax(
    "self.a ==",
    "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"self.a ==\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed"
)]
// Found by `cargo xtask fuzz` (crd_schema): the CRD was accepted, and every update failed with
// "no such key" instead.
#[case::undeclared_name(
    "!has(oldSDlf.name) || self.name == oldSelf.name",
    "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"!has(oldSDlf.name) || self.name == oldSelf.name\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:6: undeclared reference to 'oldSDlf' (in container '')"
)]
#[case::name_outside_its_macro(
    "self.items.all(x, x > 0) && y > 0",
    "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"self.items.all(x, x > 0) && y > 0\",\"Message\":\"\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:29: undeclared reference to 'y' (in container '')"
)]
#[case::empty(
    "",
    "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Required value"
)]
fn cel_compile_error_from_parse(#[case] rule: &str, #[case] want_prefix: &str) {
    let err = Schema::parse(&json!({"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule": rule}]}}}))
        .unwrap_err();
    assert!(err.starts_with(want_prefix), "{err}");
}

#[rstest]
#[case::macro_variables("self.items.all(x, self.items.exists_one(y, y == x))")]
#[case::map_macro_and_type_names("self.items.map(i, i * 2).size() >= 0 && type(self) == map")]
#[case::namespaces("optional.of(self.items).hasValue() && math.greatest([1, 2]) == 2")]
#[case::transition("!has(oldSelf.name) || self.name == oldSelf.name")]
fn cel_names_declared_or_bound_compile(#[case] rule: &str) {
    let schema = json!({"type":"object","properties":{"spec":{"type":"object","x-kubernetes-validations":[{"rule": rule}]}}});
    if let Err(e) = Schema::parse(&schema) {
        assert!(!e.contains("undeclared reference"), "{e}");
    }
}

#[test]
fn bad_reason_refused_by_parse() {
    let err = Schema::parse(
        &json!({"type":"object","x-kubernetes-validations":[{"rule":"true","reason":"Nope"}]}),
    )
    .unwrap_err();
    assert!(
        err.contains(".reason: Unsupported value: \"Nope\""),
        "{err}"
    );
}

#[test]
fn full_pipeline_create() {
    let s = Schema::parse(&json!({
        "type":"object",
        "properties":{
            "spec":{"type":"object","required":["replicas"],"properties":{
                "replicas":{"type":"integer","minimum":0,"default":1},
                "mode":{"type":"string","enum":["Fast","Slow"],"default":"Fast"}}}
        }
    }))
    .unwrap();
    let mut obj =
        json!({"apiVersion":"g/v1","kind":"K","metadata":{"name":"a"},"spec":{"junk":true}});
    s.prune(&mut obj);
    s.apply_defaults(&mut obj);
    assert_eq!(obj["spec"], json!({"replicas":1,"mode":"Fast"}));
    assert!(s.validate(&obj, None).is_empty());
    let reasons: Vec<CauseReason> = s
        .validate(&json!({"spec":{}}), None)
        .into_iter()
        .map(|e| e.reason)
        .collect();
    assert_eq!(reasons, [CauseReason::Required]);
}

#[rstest]
#[case(1.0, "1")]
#[case(2.5, "2.5")]
#[case(123456.0, "123456")]
#[case(1e6, "1e+06")]
#[case(0.0001, "0.0001")]
#[case(0.00001, "1e-05")]
fn go_float_format(#[case] f: f64, #[case] want: &str) {
    assert_eq!(super::validate::go_float(f), want);
}

#[test]
fn schema_failures_on_unchanged_values_ratchet() {
    let s = schema(
        json!({"type":"object","properties":{"n":{"type":"integer","maximum":3},"m":{"type":"integer","maximum":3}}}),
    );
    let old = json!({"spec":{"n":9,"m":1}});
    let new = json!({"spec":{"n":9,"m":7}});
    assert_eq!(
        render(s.validate(&new, Some(&old))),
        [
            "FieldValueInvalid|spec.m|Invalid value: 7: spec.m in body should be less than or equal to 3"
        ]
    );
}

#[rstest]
#[case::timestamp_ok(json!({"t":"2030-01-01T00:00:00Z"}), 0)]
#[case::timestamp_fail(json!({"t":"2020-01-01T00:00:00Z"}), 1)]
#[case::duration_fail(json!({"d":"2h"}), 1)]
#[case::bytes_ok(json!({"b":"aGVsbG8="}), 0)]
fn cel_formatted_strings(#[case] spec: Value, #[case] n_errs: usize) {
    let s = schema(json!({"type":"object","properties":{
        "t":{"type":"string","format":"date-time"},
        "d":{"type":"string","format":"duration"},
        "b":{"type":"string","format":"byte"}},
        "x-kubernetes-validations":[
            {"rule":"!has(self.t) || self.t > timestamp('2024-01-01T00:00:00Z')"},
            {"rule":"!has(self.d) || self.d <= duration('1h')"},
            {"rule":"!has(self.b) || self.b == b'hello'"}]}));
    assert_eq!(s.validate(&json!({ "spec": spec }), None).len(), n_errs);
}

#[test]
fn compile_error_message_is_readable() {
    let err =
        Schema::parse(&json!({"type":"object","x-kubernetes-validations":[{"rule":"self.a =="}]}))
            .unwrap_err();
    println!("{err}");
    assert!(err.len() < 600, "{err}");
}

#[test]
fn cel_root_rule_sees_metadata_name_only() {
    let s = Schema::parse(&json!({"type":"object","x-kubernetes-validations":[
        {"rule":"self.metadata.name.startsWith('a')","message":"name must start with a"},
        {"rule":"!has(self.metadata.labels)","message":"labels hidden"}]}))
    .unwrap();
    let obj = json!({"apiVersion":"g/v1","kind":"K","metadata":{"name":"bob","labels":{"x":"y"}}});
    assert_eq!(
        render(s.validate(&obj, None)),
        ["FieldValueInvalid||Invalid value: name must start with a"]
    );
}

#[rstest]
#[case::create_checked(None, json!({"v": 0}), 1)]
#[case::create_ok(None, json!({"v": 5}), 0)]
#[case::update_uses_old(Some(json!({"v": 3})), json!({"v": 2}), 1)]
#[case::update_ok(Some(json!({"v": 3})), json!({"v": 4}), 0)]
fn cel_optional_old_self(#[case] old: Option<Value>, #[case] spec: Value, #[case] n_errs: usize) {
    let s = schema(
        json!({"type":"object","properties":{"v":{"type":"integer"}},
        "x-kubernetes-validations":[{"rule":"self.v >= oldSelf.orValue({'v': 1}).v","optionalOldSelf":true}]}),
    );
    let old = old.map(|o| json!({ "spec": o }));
    assert_eq!(
        s.validate(&json!({ "spec": spec }), old.as_ref()).len(),
        n_errs
    );
}

/// Pruning names what it dropped as the warnings and strict errors spell it, in document order:
/// the same paths a comparison of the object before and after pruning finds.
#[test]
fn pruning_reports_dropped_fields_in_document_order() {
    let s = Schema::parse(&json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "b": {"type": "object", "properties": {"keep": {"type": "string"}}},
                "items": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
            }},
        },
    }))
    .unwrap();
    let mut obj = json!({
        "apiVersion": "x/v1", "kind": "X",
        "metadata": {"name": "n", "bogusMeta": 1},
        "spec": {"a": 1, "b": {"keep": "y", "junk": true}, "c": null, "items": [{"k": "1", "z": 2}], "d": [1]},
        "top": "x",
    });
    let before = obj.clone();
    let dropped = s.prune_reporting(&mut obj);
    assert_eq!(
        dropped,
        [
            "metadata.bogusMeta",
            "spec.a",
            "spec.b.junk",
            "spec.d",
            "spec.items[0].z",
            "top"
        ]
    );
    assert_eq!(
        dropped,
        crate::semantics::meta::unknown_fields(&before, &obj)
    );
}
