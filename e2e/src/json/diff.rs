//! Field-level changes between two versions of an object, for traces: each change
//! names one field, so a trace shows what moved instead of whole objects.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

use super::path::Path;

/// Fields that identify list elements (conditions by `type`, containers by `name`),
/// tried in this order.
const ELEMENT_KEYS: [&str; 2] = ["type", "name"];

/// One field that differs between two versions of an object.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldChange {
    Added { path: Path, value: Value },
    Removed { path: Path, value: Value },
    Changed { path: Path, from: Value, to: Value },
}

impl FieldChange {
    pub fn path(&self) -> &Path {
        match self {
            Self::Added { path, .. } | Self::Removed { path, .. } | Self::Changed { path, .. } => {
                path
            }
        }
    }
}

/// One line per change, values as compact JSON: `+ path: v`, `- path: v`, `~ path: a -> b`.
impl fmt::Display for FieldChange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Added { path, value } => write!(f, "+ {path}: {value}"),
            Self::Removed { path, value } => write!(f, "- {path}: {value}"),
            Self::Changed { path, from, to } => write!(f, "~ {path}: {from} -> {to}"),
        }
    }
}

/// The changes that turn `old` into `new`, in a deterministic order; empty when equal.
pub fn diff(old: &Value, new: &Value) -> Vec<FieldChange> {
    let mut changes = Vec::new();
    diff_at(&Path::root(), old, new, &mut changes);
    changes
}

fn diff_at(path: &Path, old: &Value, new: &Value, changes: &mut Vec<FieldChange>) {
    if old == new {
        return;
    }
    match (old, new) {
        (Value::Object(old), Value::Object(new)) => diff_maps(path, old, new, changes),
        (Value::Array(old_list), Value::Array(new_list)) => {
            match shared_element_key(old_list, new_list) {
                Some(key) => diff_keyed_lists(path, key, old_list, new_list, changes),
                None if old_list.len() == new_list.len() => {
                    for (index, (old, new)) in old_list.iter().zip(new_list).enumerate() {
                        diff_at(&path.index(index), old, new, changes);
                    }
                }
                None => changes.push(changed(path, old, new)),
            }
        }
        _ => changes.push(changed(path, old, new)),
    }
}

/// Keys in sorted order whatever the map's own order, so output never depends on
/// serde_json's `preserve_order` feature.
fn diff_maps(
    path: &Path,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
    changes: &mut Vec<FieldChange>,
) {
    let keys: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for key in keys {
        let path = path.key(key);
        match (old.get(key), new.get(key)) {
            (Some(old), Some(new)) => diff_at(&path, old, new, changes),
            (None, Some(value)) => changes.push(FieldChange::Added {
                path,
                value: value.clone(),
            }),
            (Some(value), None) => changes.push(FieldChange::Removed {
                path,
                value: value.clone(),
            }),
            (None, None) => {}
        }
    }
}

/// New elements in the new list's order, then removed ones in the old list's order.
fn diff_keyed_lists(
    path: &Path,
    key: &str,
    old: &[Value],
    new: &[Value],
    changes: &mut Vec<FieldChange>,
) {
    for new_element in new {
        let value = key_value(new_element, key);
        let element_path = path.keyed(key, value);
        match find_by_key(old, key, value) {
            Some(old_element) => diff_at(&element_path, old_element, new_element, changes),
            None => changes.push(FieldChange::Added {
                path: element_path,
                value: new_element.clone(),
            }),
        }
    }
    for old_element in old {
        let value = key_value(old_element, key);
        if find_by_key(new, key, value).is_none() {
            changes.push(FieldChange::Removed {
                path: path.keyed(key, value),
                value: old_element.clone(),
            });
        }
    }
}

/// The element's key value; [`identifies_elements`] has checked every element has one.
fn key_value<'a>(element: &'a Value, key: &str) -> &'a Value {
    element.get(key).unwrap_or(&Value::Null)
}

fn find_by_key<'a>(list: &'a [Value], key: &str, wanted: &Value) -> Option<&'a Value> {
    list.iter().find(|element| element.get(key) == Some(wanted))
}

fn changed(path: &Path, from: &Value, to: &Value) -> FieldChange {
    FieldChange::Changed {
        path: path.clone(),
        from: from.clone(),
        to: to.clone(),
    }
}

/// The field both lists can be matched by: every element of each is a map with that
/// field, and its values are unique within each list.
fn shared_element_key(old: &[Value], new: &[Value]) -> Option<&'static str> {
    ELEMENT_KEYS
        .into_iter()
        .find(|key| identifies_elements(old, key) && identifies_elements(new, key))
}

fn identifies_elements(list: &[Value], key: &str) -> bool {
    let mut seen = BTreeSet::new();
    list.iter().all(|element| {
        element
            .as_object()
            .and_then(|map| map.get(key))
            // Compact JSON keeps "1" and 1 apart.
            .is_some_and(|value| seen.insert(value.to_string()))
    })
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    fn rendered(changes: &[FieldChange]) -> Vec<String> {
        changes.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn condition_status_flip_is_one_change_at_a_keyed_path() {
        let old = json!({"status": {"conditions": [
            {"type": "Scheduled", "status": "True"},
            {"type": "Ready", "status": "False"},
        ]}});
        let new = json!({"status": {"conditions": [
            {"type": "Ready", "status": "True"},
            {"type": "Scheduled", "status": "True"},
        ]}});
        let changes = diff(&old, &new);
        assert_eq!(
            changes,
            vec![FieldChange::Changed {
                path: Path::root()
                    .key("status")
                    .key("conditions")
                    .keyed("type", &json!("Ready"))
                    .key("status"),
                from: json!("False"),
                to: json!("True"),
            }]
        );
        assert_eq!(
            changes[0].path().to_string(),
            "status.conditions[type=Ready].status"
        );
    }

    #[test]
    fn added_and_removed_map_keys() {
        let old = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        let new =
            json!({"metadata": {"labels": {"b": "2", "c": "3"}, "annotations": {"x.io/y": "z"}}});
        assert_eq!(
            diff(&old, &new),
            vec![
                FieldChange::Added {
                    path: Path::root().key("metadata").key("annotations"),
                    value: json!({"x.io/y": "z"}),
                },
                FieldChange::Removed {
                    path: Path::root().key("metadata").key("labels").key("a"),
                    value: json!("1"),
                },
                FieldChange::Added {
                    path: Path::root().key("metadata").key("labels").key("c"),
                    value: json!("3"),
                },
            ]
        );
    }

    #[test]
    fn list_length_change_is_one_whole_list_change() {
        let old = json!({"spec": {"args": ["a", "b"]}});
        let new = json!({"spec": {"args": ["a", "b", "c"]}});
        assert_eq!(
            diff(&old, &new),
            vec![FieldChange::Changed {
                path: Path::root().key("spec").key("args"),
                from: json!(["a", "b"]),
                to: json!(["a", "b", "c"]),
            }]
        );
    }

    #[test]
    fn equal_length_lists_are_compared_by_index() {
        let old = json!({"args": ["a", "b"]});
        let new = json!({"args": ["a", "c"]});
        assert_eq!(
            rendered(&diff(&old, &new)),
            vec![r#"~ args[1]: "b" -> "c""#]
        );
    }

    #[test]
    fn keyed_lists_list_added_in_new_order_then_removed_in_old_order() {
        let old = json!({"containers": [
            {"image": "a", "name": "gone1"},
            {"name": "kept", "image": "a"},
            {"name": "gone2"},
        ]});
        let new = json!({"containers": [
            {"name": "new1"},
            {"name": "kept", "image": "b"},
            {"name": "new2"},
        ]});
        assert_eq!(
            rendered(&diff(&old, &new)),
            vec![
                r#"+ containers[name=new1]: {"name":"new1"}"#,
                r#"~ containers[name=kept].image: "a" -> "b""#,
                r#"+ containers[name=new2]: {"name":"new2"}"#,
                r#"- containers[name=gone1]: {"image":"a","name":"gone1"}"#,
                r#"- containers[name=gone2]: {"name":"gone2"}"#,
            ]
        );
    }

    #[test]
    fn type_is_preferred_over_name_when_both_identify_elements() {
        let old = json!([{"type": "A", "name": "x", "v": 1}]);
        let new = json!([{"type": "A", "name": "y", "v": 1}]);
        assert_eq!(
            rendered(&diff(&old, &new)),
            vec![r#"~ [type=A].name: "x" -> "y""#]
        );
    }

    #[test]
    fn condition_appearing_in_an_empty_list_is_added() {
        let old = json!({"conditions": []});
        let new = json!({"conditions": [{"status": "True", "type": "Ready"}]});
        assert_eq!(
            rendered(&diff(&old, &new)),
            vec![r#"+ conditions[type=Ready]: {"status":"True","type":"Ready"}"#]
        );
    }

    #[rstest]
    #[case::duplicate_keys(
        json!([{"name": "a", "v": 1}, {"name": "a", "v": 2}]),
        json!([{"name": "a", "v": 1}, {"name": "a", "v": 3}]),
        vec!["~ [1].v: 2 -> 3"]
    )]
    #[case::key_missing_on_one_side(
        json!([{"name": "a"}]),
        json!([{"other": "a"}]),
        vec![r#"- [0].name: "a""#, r#"+ [0].other: "a""#]
    )]
    #[case::not_maps(json!([1, 2]), json!([1, 3]), vec!["~ [1]: 2 -> 3"])]
    fn lists_without_an_identifying_key_fall_back_to_positions(
        #[case] old: Value,
        #[case] new: Value,
        #[case] expected: Vec<&str>,
    ) {
        assert_eq!(rendered(&diff(&old, &new)), expected);
    }

    #[rstest]
    #[case::scalar(json!({"a": 1}), json!({"a": 2}), r#"~ a: 1 -> 2"#)]
    #[case::type_change(json!({"a": {"b": 1}}), json!({"a": [1]}), r#"~ a: {"b":1} -> [1]"#)]
    #[case::null_to_value(json!({"a": null}), json!({"a": "x"}), r#"~ a: null -> "x""#)]
    #[case::root(json!("x"), json!("y"), r#"~ .: "x" -> "y""#)]
    fn scalars_and_differing_types_are_changed(
        #[case] old: Value,
        #[case] new: Value,
        #[case] expected: &str,
    ) {
        assert_eq!(rendered(&diff(&old, &new)), vec![expected]);
    }

    #[test]
    fn equal_values_produce_nothing() {
        let value = json!({"a": [1, {"b": null}], "status": {"conditions": [{"type": "Ready"}]}});
        assert_eq!(diff(&value, &value.clone()), vec![]);
    }
}
