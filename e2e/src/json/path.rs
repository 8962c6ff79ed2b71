//! Field paths into JSON objects, rendered the way people read Kubernetes fields
//! (`status.conditions[type=Ready].status`), so mismatches and traces point at one field.

use std::fmt;

use serde_json::Value;

/// One step from a value into one of its children.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Segment {
    /// A map field.
    Key(String),
    /// A list element chosen by position.
    Index(usize),
    /// A list element chosen by the value of one of its fields (conditions by `type`).
    Keyed { key: String, value: String },
}

/// Where a field sits inside a JSON value; the empty path is the value itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Path {
    segments: Vec<Segment>,
}

impl Path {
    /// The path of the whole value.
    pub fn root() -> Self {
        Self::default()
    }

    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    pub fn is_root(&self) -> bool {
        self.segments.is_empty()
    }

    pub fn push(&mut self, segment: Segment) {
        self.segments.push(segment);
    }

    /// A new path one segment deeper; paths are small, so walkers clone freely.
    pub fn child(&self, segment: Segment) -> Self {
        let mut path = self.clone();
        path.push(segment);
        path
    }

    /// The path of map field `key` below this one.
    pub fn key(&self, key: impl Into<String>) -> Self {
        self.child(Segment::Key(key.into()))
    }

    /// The path of list element `index` below this one.
    pub fn index(&self, index: usize) -> Self {
        self.child(Segment::Index(index))
    }

    /// The path of the list element whose field `key` equals `value`.
    /// Strings render unquoted (`[type=Ready]`), anything else as compact JSON.
    pub fn keyed(&self, key: impl Into<String>, value: &Value) -> Self {
        let value = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        self.child(Segment::Keyed {
            key: key.into(),
            value,
        })
    }

    /// The name of the field this path ends in, if it ends in a map field.
    pub fn last_key(&self) -> Option<&str> {
        match self.segments.last() {
            Some(Segment::Key(key)) => Some(key),
            _ => None,
        }
    }

    /// The path without list positions or keys (`spec.podSets[0].name` -> `spec.podSets.name`),
    /// so every element of a list shares one pattern for looking up list keys.
    pub fn pattern(&self) -> String {
        self.segments
            .iter()
            .filter(|segment| matches!(segment, Segment::Key(_)))
            .cloned()
            .collect::<Path>()
            .to_string()
    }
}

impl From<Vec<Segment>> for Path {
    fn from(segments: Vec<Segment>) -> Self {
        Self { segments }
    }
}

impl FromIterator<Segment> for Path {
    fn from_iter<I: IntoIterator<Item = Segment>>(iter: I) -> Self {
        Self {
            segments: iter.into_iter().collect(),
        }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_root() {
            return f.write_str(".");
        }
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Key(key) if is_plain_key(key) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(key)?;
                }
                // Debug of a str is a quoted, escaped string literal.
                Segment::Key(key) => write!(f, "[{key:?}]")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
                Segment::Keyed { key, value } => write!(f, "[{key}={value}]")?,
            }
        }
        Ok(())
    }
}

/// Keys that can be written after a dot without ambiguity.
fn is_plain_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[cfg(test)]
mod tests {
    use rstest::rstest;
    use serde_json::json;

    use super::*;

    fn key(k: &str) -> Segment {
        Segment::Key(k.to_owned())
    }

    fn keyed(k: &str, v: &str) -> Segment {
        Segment::Keyed {
            key: k.to_owned(),
            value: v.to_owned(),
        }
    }

    #[rstest]
    #[case::root(vec![], ".")]
    #[case::single_key(vec![key("spec")], "spec")]
    #[case::index(vec![key("spec"), key("containers"), Segment::Index(0), key("image")], "spec.containers[0].image")]
    #[case::keyed(vec![key("status"), key("conditions"), keyed("type", "Ready"), key("status")], "status.conditions[type=Ready].status")]
    #[case::quoted_key(vec![key("metadata"), key("labels"), key("app.kubernetes.io/name")], r#"metadata.labels["app.kubernetes.io/name"]"#)]
    #[case::leading_quoted_key(vec![key("a.b")], r#"["a.b"]"#)]
    #[case::quoted_key_then_plain(vec![key("a.b"), key("c")], r#"["a.b"].c"#)]
    #[case::empty_key(vec![key("data"), key("")], r#"data[""]"#)]
    #[case::quote_inside_key(vec![key(r#"say "hi""#)], r#"["say \"hi\""]"#)]
    #[case::dash_and_underscore_are_plain(vec![key("x-y_z0")], "x-y_z0")]
    #[case::leading_index(vec![Segment::Index(2), key("name")], "[2].name")]
    fn display_renders_segments(#[case] segments: Vec<Segment>, #[case] rendered: &str) {
        assert_eq!(Path::from(segments).to_string(), rendered);
    }

    #[test]
    fn pattern_drops_list_positions_and_keys() {
        let path = Path::root()
            .key("spec")
            .key("podSets")
            .index(3)
            .key("template")
            .keyed("type", &json!("Ready"));
        assert_eq!(path.pattern(), "spec.podSets.template");
        assert_eq!(
            Path::root().key("spec").key("podSets").pattern(),
            "spec.podSets"
        );
    }

    #[test]
    fn keyed_renders_strings_unquoted_and_other_values_as_json() {
        assert_eq!(
            Path::root()
                .key("l")
                .keyed("type", &json!("Ready"))
                .to_string(),
            "l[type=Ready]"
        );
        assert_eq!(
            Path::root().key("l").keyed("port", &json!(80)).to_string(),
            "l[port=80]"
        );
    }

    #[test]
    fn last_key_is_only_a_trailing_map_field() {
        assert_eq!(
            Path::root().key("status").key("conditions").last_key(),
            Some("conditions")
        );
        assert_eq!(Path::root().key("conditions").index(0).last_key(), None);
        assert_eq!(Path::root().last_key(), None);
    }

    #[test]
    fn push_and_child_extend_the_path() {
        let mut path = Path::root();
        path.push(key("spec"));
        let child = path.child(Segment::Index(1));
        assert_eq!(path.to_string(), "spec");
        assert_eq!(child.to_string(), "spec[1]");
        assert!(Path::root().is_root());
        assert_eq!(child.segments(), &[key("spec"), Segment::Index(1)]);
    }
}
