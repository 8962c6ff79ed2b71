//! How a scenario names kinds (`Kind`, `v1/Kind`, `group/version/Kind`) and objects
//! (`Kind namespace/name`). The trace and the runner both use these names; this module uses
//! neither, so that they do not depend on each other.

use serde_json::Value;

/// A kind as a scenario names it: `apiVersion` may be empty when only the kind was given.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KindRef {
    pub api_version: String,
    pub kind: String,
}

impl KindRef {
    pub fn parse(text: &str) -> Result<Self, String> {
        let (api_version, kind) = match text.rsplit_once('/') {
            Some((av, kind)) => (av.to_string(), kind.to_string()),
            None => (String::new(), text.to_string()),
        };
        let bad = kind.is_empty() || !kind.starts_with(|c: char| c.is_ascii_uppercase());
        if bad {
            return Err(format!(
                "`{text}` is not a kind: write `Kind`, `v1/Kind` or `group/version/Kind`"
            ));
        }
        Ok(KindRef { api_version, kind })
    }

    /// The kind of an object (its `apiVersion` and `kind`, empty when missing).
    pub fn of(obj: &Value) -> Self {
        KindRef {
            api_version: obj["apiVersion"].as_str().unwrap_or_default().to_string(),
            kind: obj["kind"].as_str().unwrap_or_default().to_string(),
        }
    }
}

impl std::fmt::Display for KindRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.api_version.as_str() {
            "" => f.write_str(&self.kind),
            av => write!(f, "{av}/{}", self.kind),
        }
    }
}

/// `Kind namespace/name`, or `Kind name` for objects without a namespace.
pub fn object_label(obj: &Value) -> String {
    let kind = obj["kind"].as_str().unwrap_or("?");
    let meta = &obj["metadata"];
    let name = meta["name"]
        .as_str()
        .map(String::from)
        .or_else(|| meta["generateName"].as_str().map(|g| format!("{g}*")))
        .unwrap_or_else(|| "*".into());
    match meta["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{kind} {ns}/{name}"),
        _ => format!("{kind} {name}"),
    }
}

/// Whether a scenario's name is a pattern: `*` stands for any run of characters, for a name the
/// cluster generates from a uid (a Job's Workload is `job-sample-*`, its hash differing from one
/// cluster to the next). Kubernetes names never contain `*`.
pub fn is_pattern(name: &str) -> bool {
    name.contains('*')
}

/// Whether `name` matches `pattern` (see [`is_pattern`]); a name without `*` matches itself.
pub fn name_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let mut middle: Vec<&str> = parts.collect();
    let Some(last) = middle.pop() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_kind_is_named_alone_or_with_its_api_version() {
        assert_eq!(KindRef::parse("Pod").unwrap().to_string(), "Pod");
        let job = KindRef::parse("batch/v1/Job").unwrap();
        assert_eq!(
            (job.api_version.as_str(), job.kind.as_str()),
            ("batch/v1", "Job")
        );
        assert!(
            KindRef::parse("configmap")
                .unwrap_err()
                .contains("is not a kind")
        );
    }

    #[test]
    fn objects_are_labelled_by_kind_namespace_and_name() {
        let pod = json!({"kind": "Pod", "metadata": {"namespace": "ns", "name": "a"}});
        assert_eq!(object_label(&pod), "Pod ns/a");
        let node = json!({"kind": "Node", "metadata": {"name": "n"}});
        assert_eq!(object_label(&node), "Node n");
        let generated = json!({"kind": "Job", "metadata": {"generateName": "j-"}});
        assert_eq!(object_label(&generated), "Job j-*");
    }

    #[test]
    fn a_pattern_stands_for_generated_names() {
        assert!(name_matches("job-sample-*", "job-sample-7cfd7"));
        assert!(name_matches("job-sample", "job-sample"));
        assert!(!name_matches("job-sample", "job-sample-7cfd7"));
        assert!(!name_matches("job-sample-*", "job-other-7cfd7"));
        assert!(name_matches("*-7cfd7", "job-sample-7cfd7"));
        assert!(name_matches("job-*-*7", "job-sample-7cfd7"));
        assert!(!name_matches("job-*-*8", "job-sample-7cfd7"));
        // The parts may not overlap: `ab*ba` needs four characters at least.
        assert!(!name_matches("ab*ba", "aba"));
        assert!(is_pattern("job-sample-*") && !is_pattern("job-sample"));
    }
}
