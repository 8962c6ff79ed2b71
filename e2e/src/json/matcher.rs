//! Partial matching of a cluster object against the fields a scenario expects:
//! only what the scenario names must match, so objects can carry any other fields.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Number, Value};
use similar::{ChangeTag, TextDiff};

use super::path::Path;

/// List path pattern (e.g. `spec.podSets`, see [`Path::pattern`]) -> the field that
/// identifies an element of that list (e.g. `name`).
pub type ListKeys = BTreeMap<String, String>;

/// Lists ending in this field are matched by [`CONDITIONS_KEY`] unless [`ListKeys`] says otherwise.
const CONDITIONS_FIELD: &str = "conditions";
const CONDITIONS_KEY: &str = "type";

/// One field whose actual value differs from the expected one.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub path: Path,
    pub expected: Value,
    /// `None`: the field is missing.
    pub found: Option<Value>,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: expected {}, found ", self.path, self.expected)?;
        match &self.found {
            Some(found) => write!(f, "{found}"),
            None => f.write_str("nothing"),
        }
    }
}

/// Every way `actual` fails to contain `expected`; empty when it matches.
pub fn partial_match(expected: &Value, actual: &Value, keys: &ListKeys) -> Vec<Mismatch> {
    let mut matcher = Matcher {
        keys,
        mismatches: Vec::new(),
    };
    matcher.value(&Path::root(), expected, actual);
    matcher.mismatches
}

/// `actual` cut down to the fields `expected` names, so a diff of the two shows
/// only what the scenario cares about. Missing fields are left out, and numbers
/// equal by value keep the expected spelling (`1` for `1.0`).
pub fn project(expected: &Value, actual: &Value, keys: &ListKeys) -> Value {
    project_at(&Path::root(), expected, actual, keys)
}

/// A line diff of `expected` and the projection of `actual`, both as YAML:
/// `- ` lines only expected, `+ ` lines only found, `  ` lines in both.
pub fn render_diff(expected: &Value, actual: &Value, keys: &ListKeys) -> String {
    let expected_yaml = to_yaml(expected);
    let found_yaml = to_yaml(&project(expected, actual, keys));
    TextDiff::from_lines(&expected_yaml, &found_yaml)
        .iter_all_changes()
        .map(|change| {
            let prefix = match change.tag() {
                ChangeTag::Delete => "- ",
                ChangeTag::Insert => "+ ",
                ChangeTag::Equal => "  ",
            };
            format!("{prefix}{}", change.value().trim_end_matches('\n'))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Walks expected and actual together, collecting mismatches.
struct Matcher<'a> {
    keys: &'a ListKeys,
    mismatches: Vec<Mismatch>,
}

impl Matcher<'_> {
    fn value(&mut self, path: &Path, expected: &Value, actual: &Value) {
        match (expected, actual) {
            (Value::Object(expected), Value::Object(actual)) => self.map(path, expected, actual),
            (Value::Array(expected), Value::Array(actual)) => match list_key(path, self.keys) {
                Some(key) => self.keyed_list(path, key, expected, actual),
                None => self.positional_list(path, expected, actual),
            },
            _ if scalars_equal(expected, actual) => {}
            _ => self.mismatch(path.clone(), expected.clone(), Some(actual.clone())),
        }
    }

    fn map(&mut self, path: &Path, expected: &Map<String, Value>, actual: &Map<String, Value>) {
        for (key, expected) in expected {
            match actual.get(key) {
                Some(actual) => self.value(&path.key(key), expected, actual),
                None if expected.is_null() => {}
                None => self.mismatch(path.key(key), expected.clone(), None),
            }
        }
    }

    fn positional_list(&mut self, path: &Path, expected: &[Value], actual: &[Value]) {
        if expected.len() != actual.len() {
            let (expected, actual) = (expected.to_vec(), actual.to_vec());
            self.mismatch(
                path.clone(),
                Value::Array(expected),
                Some(Value::Array(actual)),
            );
            return;
        }
        for (index, (expected, actual)) in expected.iter().zip(actual).enumerate() {
            self.value(&path.index(index), expected, actual);
        }
    }

    fn keyed_list(&mut self, path: &Path, key: &str, expected: &[Value], actual: &[Value]) {
        for (index, expected) in expected.iter().enumerate() {
            let Some(wanted) = expected.get(key) else {
                let requirement = format!("list key field `{key}` in the expected element");
                self.mismatch(path.index(index), Value::String(requirement), None);
                continue;
            };
            let element_path = path.keyed(key, wanted);
            match find_by_key(actual, key, wanted) {
                Some(actual) => self.value(&element_path, expected, actual),
                None => self.mismatch(element_path, expected.clone(), None),
            }
        }
    }

    fn mismatch(&mut self, path: Path, expected: Value, found: Option<Value>) {
        self.mismatches.push(Mismatch {
            path,
            expected,
            found,
        });
    }
}

fn project_at(path: &Path, expected: &Value, actual: &Value, keys: &ListKeys) -> Value {
    match (expected, actual) {
        (Value::Object(expected), Value::Object(actual)) => Value::Object(
            expected
                .iter()
                .filter_map(|(key, expected)| {
                    let actual = actual.get(key)?;
                    Some((
                        key.clone(),
                        project_at(&path.key(key), expected, actual, keys),
                    ))
                })
                .collect(),
        ),
        (Value::Array(expected), Value::Array(actual)) => match list_key(path, keys) {
            Some(key) => Value::Array(
                expected
                    .iter()
                    .filter_map(|expected| {
                        let wanted = expected.get(key)?;
                        let actual = find_by_key(actual, key, wanted)?;
                        Some(project_at(&path.keyed(key, wanted), expected, actual, keys))
                    })
                    .collect(),
            ),
            // Elements past the expected length have no shape to cut them to: keep them whole.
            None => Value::Array(
                actual
                    .iter()
                    .enumerate()
                    .map(|(index, actual)| match expected.get(index) {
                        Some(expected) => project_at(&path.index(index), expected, actual, keys),
                        None => actual.clone(),
                    })
                    .collect(),
            ),
        },
        // Numbers equal by value take the expected spelling, so `1` vs `1.0` is no diff line.
        (Value::Number(_), Value::Number(_)) if scalars_equal(expected, actual) => expected.clone(),
        _ => actual.clone(),
    }
}

/// The field that identifies elements of the list at `path`, if it is matched by key.
fn list_key<'k>(path: &Path, keys: &'k ListKeys) -> Option<&'k str> {
    match keys.get(&path.pattern()) {
        Some(key) => Some(key),
        None => (path.last_key() == Some(CONDITIONS_FIELD)).then_some(CONDITIONS_KEY),
    }
}

fn find_by_key<'a>(list: &'a [Value], key: &str, wanted: &Value) -> Option<&'a Value> {
    list.iter().find(|element| {
        element
            .get(key)
            .is_some_and(|value| json_equal(value, wanted))
    })
}

/// Scalar equality where numbers compare by value, so YAML's `1` matches JSON's `1.0`.
fn scalars_equal(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Number(expected), Value::Number(actual)) => numbers_equal(expected, actual),
        _ => expected == actual,
    }
}

/// Deep equality with numbers compared by value.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(key, a)| b.get(key).is_some_and(|b| json_equal(a, b)))
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| json_equal(a, b))
        }
        _ => scalars_equal(a, b),
    }
}

fn numbers_equal(a: &Number, b: &Number) -> bool {
    if a.is_f64() || b.is_f64() {
        return a.as_f64() == b.as_f64();
    }
    match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) => a == b,
        // At least one is above i64::MAX, so both must be u64 to be equal.
        _ => a.as_u64().is_some_and(|a| b.as_u64() == Some(a)),
    }
}

/// YAML without a document marker; serialising a JSON value cannot really fail,
/// but if it does the error text shows up in the diff rather than panicking.
fn to_yaml(value: &Value) -> String {
    let yaml = serde_yaml::to_string(value).unwrap_or_else(|error| format!("<{error}>\n"));
    match yaml.strip_prefix("---\n") {
        Some(rest) => rest.to_owned(),
        None => yaml,
    }
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    fn no_keys() -> ListKeys {
        ListKeys::new()
    }

    fn rendered(mismatches: &[Mismatch]) -> Vec<String> {
        mismatches.iter().map(ToString::to_string).collect()
    }

    #[rstest]
    #[case::extra_actual_keys_are_ignored(json!({"a": 1}), json!({"a": 1, "b": 2}))]
    #[case::nested_maps(json!({"spec": {"x": "y"}}), json!({"spec": {"x": "y", "z": 1}}))]
    #[case::null_matches_missing_field(json!({"a": null}), json!({}))]
    #[case::null_matches_null(json!({"a": null}), json!({"a": null}))]
    #[case::integer_equals_float(json!({"n": 1}), json!({"n": 1.0}))]
    #[case::float_equals_integer(json!({"n": 2.0}), json!({"n": 2}))]
    #[case::large_unsigned(json!(u64::MAX), json!(u64::MAX))]
    #[case::positional_list(json!([{"a": 1}, 2]), json!([{"a": 1, "b": 0}, 2]))]
    #[case::empty_expected_map(json!({}), json!({"a": 1}))]
    fn matches(#[case] expected: Value, #[case] actual: Value) {
        assert_eq!(partial_match(&expected, &actual, &no_keys()), vec![]);
    }

    #[rstest]
    #[case::different_strings(
        json!({"data": {"color": "blue"}}), json!({"data": {"color": "red"}}),
        r#"data.color: expected "blue", found "red""#
    )]
    #[case::missing_field(
        json!({"metadata": {"finalizers": ["x"]}}), json!({"metadata": {}}),
        r#"metadata.finalizers: expected ["x"], found nothing"#
    )]
    #[case::string_is_not_a_number(json!({"n": "1"}), json!({"n": 1}), r#"n: expected "1", found 1"#)]
    #[case::string_is_not_a_bool(json!({"b": "true"}), json!({"b": true}), r#"b: expected "true", found true"#)]
    #[case::different_numbers(json!({"n": 1}), json!({"n": 1.5}), "n: expected 1, found 1.5")]
    #[case::negative_vs_huge(json!(-1), json!(u64::MAX), ".: expected -1, found 18446744073709551615")]
    #[case::null_vs_value(json!({"a": null}), json!({"a": 0}), "a: expected null, found 0")]
    #[case::map_vs_list(json!({"spec": {"a": 1}}), json!({"spec": [1]}), r#"spec: expected {"a":1}, found [1]"#)]
    #[case::scalar_vs_map(json!({"spec": 1}), json!({"spec": {}}), "spec: expected 1, found {}")]
    #[case::root_scalars(json!("a"), json!("b"), r#".: expected "a", found "b""#)]
    #[case::positional_length_mismatch(
        json!({"spec": {"args": ["a", "b"]}}), json!({"spec": {"args": ["a"]}}),
        r#"spec.args: expected ["a","b"], found ["a"]"#
    )]
    #[case::positional_element(
        json!({"spec": {"containers": [{"image": "x:1"}]}}),
        json!({"spec": {"containers": [{"image": "x:2", "name": "c"}]}}),
        r#"spec.containers[0].image: expected "x:1", found "x:2""#
    )]
    #[case::quoted_key(
        json!({"metadata": {"labels": {"app.kubernetes.io/name": "a"}}}),
        json!({"metadata": {"labels": {}}}),
        r#"metadata.labels["app.kubernetes.io/name"]: expected "a", found nothing"#
    )]
    fn reports_one_mismatch(#[case] expected: Value, #[case] actual: Value, #[case] message: &str) {
        assert_eq!(
            rendered(&partial_match(&expected, &actual, &no_keys())),
            vec![message]
        );
    }

    #[test]
    fn reports_every_mismatch_with_its_path() {
        let expected = json!({"a": 1, "b": {"c": 2, "d": 3}});
        let actual = json!({"a": 0, "b": {"c": 2}});
        let mismatches = partial_match(&expected, &actual, &no_keys());
        assert_eq!(
            mismatches,
            vec![
                Mismatch {
                    path: Path::root().key("a"),
                    expected: json!(1),
                    found: Some(json!(0)),
                },
                Mismatch {
                    path: Path::root().key("b").key("d"),
                    expected: json!(3),
                    found: None,
                },
            ]
        );
    }

    fn pod_status() -> Value {
        json!({"status": {"conditions": [
            {"type": "Scheduled", "status": "True"},
            {"type": "Ready", "status": "False", "reason": "Pending"},
        ]}})
    }

    #[test]
    fn conditions_are_matched_by_type_by_default() {
        let expected = json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}});
        assert_eq!(partial_match(&expected, &pod_status(), &no_keys()), vec![]);
    }

    #[test]
    fn condition_field_mismatch_has_a_keyed_path() {
        let expected = json!({"status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert_eq!(
            rendered(&partial_match(&expected, &pod_status(), &no_keys())),
            vec![r#"status.conditions[type=Ready].status: expected "True", found "False""#]
        );
    }

    #[test]
    fn missing_condition_is_reported_at_its_key() {
        let expected = json!({"status": {"conditions": [{"type": "Evicted"}]}});
        let mismatches = partial_match(&expected, &pod_status(), &no_keys());
        assert_eq!(
            mismatches,
            vec![Mismatch {
                path: Path::root()
                    .key("status")
                    .key("conditions")
                    .keyed("type", &json!("Evicted")),
                expected: json!({"type": "Evicted"}),
                found: None,
            }]
        );
        assert_eq!(
            mismatches[0].to_string(),
            r#"status.conditions[type=Evicted]: expected {"type":"Evicted"}, found nothing"#
        );
    }

    #[test]
    fn expected_element_without_the_key_field_is_reported() {
        let expected = json!({"status": {"conditions": [{"status": "True"}]}});
        assert_eq!(
            rendered(&partial_match(&expected, &pod_status(), &no_keys())),
            vec![
                "status.conditions[0]: expected \"list key field `type` in the expected element\", found nothing"
            ]
        );
    }

    #[test]
    fn explicit_list_key_matches_by_that_field_in_any_order() {
        let keys = ListKeys::from([("spec.podSets".to_owned(), "name".to_owned())]);
        let actual =
            json!({"spec": {"podSets": [{"name": "a", "count": 1}, {"name": "b", "count": 2}]}});
        let expected = json!({"spec": {"podSets": [{"count": 3, "name": "b"}, {"name": "c"}]}});
        assert_eq!(
            rendered(&partial_match(&expected, &actual, &keys)),
            vec![
                "spec.podSets[name=b].count: expected 3, found 2",
                r#"spec.podSets[name=c]: expected {"name":"c"}, found nothing"#,
            ]
        );
        // Without the entry the same list is matched by position.
        let positional: Vec<String> = partial_match(&expected, &actual, &no_keys())
            .iter()
            .map(|mismatch| mismatch.path.to_string())
            .collect();
        assert_eq!(
            positional,
            vec![
                "spec.podSets[0].count",
                "spec.podSets[0].name",
                "spec.podSets[1].name"
            ]
        );
    }

    #[test]
    fn explicit_list_key_applies_to_nested_lists_by_pattern() {
        let keys = ListKeys::from([("spec.podSets.containers".to_owned(), "name".to_owned())]);
        let actual = json!({"spec": {"podSets": [{"containers": [{"name": "x"}, {"name": "y", "image": "i"}]}]}});
        let expected =
            json!({"spec": {"podSets": [{"containers": [{"name": "y", "image": "j"}]}]}});
        assert_eq!(
            rendered(&partial_match(&expected, &actual, &keys)),
            vec![r#"spec.podSets[0].containers[name=y].image: expected "j", found "i""#]
        );
    }

    #[test]
    fn list_key_values_compare_as_json_values() {
        let keys = ListKeys::from([("ports".to_owned(), "port".to_owned())]);
        let actual = json!({"ports": [{"port": 80.0, "name": "http"}, {"port": "443"}]});
        assert_eq!(
            partial_match(
                &json!({"ports": [{"port": 80, "name": "http"}]}),
                &actual,
                &keys
            ),
            vec![]
        );
        assert_eq!(
            rendered(&partial_match(
                &json!({"ports": [{"port": 443}]}),
                &actual,
                &keys
            )),
            vec![r#"ports[port=443]: expected {"port":443}, found nothing"#]
        );
    }

    #[test]
    fn explicit_list_key_overrides_the_conditions_default() {
        let keys = ListKeys::from([("status.conditions".to_owned(), "reason".to_owned())]);
        let expected = json!({"status": {"conditions": [{"reason": "Pending", "type": "Ready"}]}});
        assert_eq!(partial_match(&expected, &pod_status(), &keys), vec![]);
    }

    #[test]
    fn project_keeps_only_expected_fields() {
        let expected = json!({
            "metadata": {"name": "p", "labels": {"a": "1"}},
            "spec": {"args": ["x"]},
            "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Gone"}]},
        });
        let actual = json!({
            "metadata": {"name": "p", "uid": "u"},
            "spec": {"args": ["x", "y"], "image": "i"},
            "status": {"conditions": [
                {"type": "Scheduled", "status": "True"},
                {"type": "Ready", "status": "False", "reason": "Pending"},
            ]},
        });
        assert_eq!(
            project(&expected, &actual, &no_keys()),
            json!({
                "metadata": {"name": "p"},
                "spec": {"args": ["x", "y"]},
                "status": {"conditions": [{"type": "Ready", "status": "False"}]},
            })
        );
    }

    #[test]
    fn project_keeps_the_expected_order_for_keyed_lists_and_actual_order_for_positional_ones() {
        let keys = ListKeys::from([("keyed".to_owned(), "name".to_owned())]);
        let expected = json!({
            "keyed": [{"name": "b"}, {"name": "a"}],
            "positional": [{"v": 1}, {"v": 2}],
        });
        let actual = json!({
            "keyed": [{"name": "a", "x": 1}, {"name": "b", "x": 2}],
            "positional": [{"v": 2, "w": 0}, {"v": 1, "w": 0}],
        });
        assert_eq!(
            project(&expected, &actual, &keys),
            json!({
                "keyed": [{"name": "b"}, {"name": "a"}],
                "positional": [{"v": 2}, {"v": 1}],
            })
        );
    }

    #[test]
    fn project_of_a_type_mismatch_is_the_actual_value() {
        assert_eq!(
            project(&json!({"a": {"b": 1}}), &json!({"a": "s"}), &no_keys()),
            json!({"a": "s"})
        );
    }

    #[test]
    fn render_diff_shows_expected_and_found_lines() {
        let expected = json!({
            "data": {"color": "blue", "size": 1},
            "status": {"conditions": [{"status": "True", "type": "Ready"}]},
        });
        let actual = json!({
            "data": {"color": "red", "extra": "x", "size": 1.0},
            "status": {"conditions": [{"reason": "r", "status": "False", "type": "Ready"}]},
        });
        let expected_diff = [
            "  data:",
            "-   color: blue",
            "+   color: red",
            "    size: 1",
            "  status:",
            "    conditions:",
            "-   - status: 'True'",
            "+   - status: 'False'",
            "      type: Ready",
        ]
        .join("\n");
        assert_eq!(render_diff(&expected, &actual, &no_keys()), expected_diff);
    }

    #[test]
    fn render_diff_of_a_match_has_only_common_lines() {
        let expected = json!({"a": 1});
        assert_eq!(
            render_diff(&expected, &json!({"a": 1, "b": 2}), &no_keys()),
            "  a: 1"
        );
    }

    #[test]
    fn render_diff_marks_missing_fields() {
        let expected = json!({"a": 1, "b": 2});
        assert_eq!(
            render_diff(&expected, &json!({"a": 1}), &no_keys()),
            "  a: 1\n- b: 2"
        );
    }
}
