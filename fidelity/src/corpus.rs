//! The corpus: request sequences in YAML under `fidelity/corpus/`.
//!
//! ```yaml
//! - name: configmap-crud              # unique in the corpus; also names its namespace, fid-<name>
//!   about: create, read, update and delete a ConfigMap
//!   steps:
//!     - request: POST /api/v1/namespaces/{ns}/configmaps
//!       body: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {x: "1"}}
//!       save: {rv: /metadata/resourceVersion}   # JSON pointers into the answer
//!     - request: GET /api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion={rv}
//!       events: 2                    # a watch: read this many events, then hang up
//!     - request: GET /api/v1/namespaces/{ns}/configmaps/a
//!       until: {status: 404}         # poll (the real server's controllers work asynchronously)
//! ```
//!
//! `{ns}` is the sequence's namespace (created before its first step, not compared), `{seq}` its
//! name (for cluster-scoped objects), `{webhook}` the address of the corpus's admission webhook
//! (`https://127.0.0.1:<port>`; a path after it picks what the webhook does, see [`crate::webhook`])
//! and `{webhook-ca}` its caBundle, and any other `{var}` a value saved by an earlier step of
//! the same sequence. `type` gives a body's media type: `json` (the default), `merge`, `strategic`,
//! `json-patch`, `apply` (server-side apply, sent as JSON), `yaml`, `protobuf` (the body's
//! object in `application/vnd.kubernetes.protobuf`, as client-go sends built-in kinds), or a full
//! media type. `raw` sends a string as the body exactly (malformed input). `accept` and `headers`
//! set headers.
//!
//! A protobuf answer is compared as the JSON of what it decodes to, under `protobuf` (so a saved
//! pointer into it starts `/protobuf/`), beside whether the fake's encoder writes the same object
//! in the same bytes: with both, two servers whose decoded answers agree answered the same bytes
//! but for the values normalised away. A protobuf watch is read frame by frame the same way.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The variables every sequence has before its first step.
pub const BUILTIN_VARS: &[&str] = &["ns", "seq", "webhook", "webhook-ca"];

/// One request sequence: run in order, in a namespace of its own.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sequence {
    pub name: String,
    #[serde(default)]
    pub about: String,
    pub steps: Vec<Step>,
    /// The file it came from (set when loading).
    #[serde(skip)]
    pub file: PathBuf,
    /// Appended to its namespace and `{seq}` (see [`Sequence::with_suffix`]).
    #[serde(skip)]
    pub suffix: String,
}

/// One request and what to do with its answer.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// `METHOD /path?query`.
    pub request: String,
    /// Shown in the report instead of the step's number.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub body: Option<serde_json::Value>,
    #[serde(default)]
    pub raw: Option<String>,
    #[serde(default, rename = "type")]
    pub media_type: Option<String>,
    #[serde(default)]
    pub accept: Option<String>,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    #[serde(default)]
    pub save: BTreeMap<String, String>,
    /// A watch: how many events to read before hanging up.
    #[serde(default)]
    pub events: Option<usize>,
    #[serde(default)]
    pub until: Option<Until>,
}

/// Repeat a request until its answer says an asynchronous effect happened.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Until {
    #[serde(default)]
    pub status: Option<u16>,
    /// A JSON pointer into the answer's body ...
    #[serde(default)]
    pub pointer: Option<String>,
    /// ... and the value it must have (absent: the pointer must not resolve).
    #[serde(default)]
    pub equals: Option<serde_json::Value>,
}

/// Why the corpus could not be loaded; names the file, sequence and step.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("reading {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Parse {
        path: PathBuf,
        source: serde_yaml::Error,
    },
    #[error("{path}: sequence {sequence:?}, step {step}: {problem}")]
    Step {
        path: PathBuf,
        sequence: String,
        step: usize,
        problem: String,
    },
    #[error("{path}: sequence {sequence:?}: {problem}")]
    Sequence {
        path: PathBuf,
        sequence: String,
        problem: String,
    },
}

impl Step {
    pub fn method(&self) -> &str {
        self.request.split_once(' ').map_or("", |(m, _)| m)
    }

    pub fn path(&self) -> &str {
        self.request.split_once(' ').map_or("", |(_, p)| p.trim())
    }

    /// The media type of the body, spelled out.
    pub fn content_type(&self) -> Option<&str> {
        let short = self.media_type.as_deref();
        if self.body.is_none() && self.raw.is_none() {
            return None;
        }
        Some(match short {
            None | Some("json") => "application/json",
            Some("merge") => "application/merge-patch+json",
            Some("strategic") => "application/strategic-merge-patch+json",
            Some("json-patch") => "application/json-patch+json",
            Some("apply") => "application/apply-patch+yaml",
            Some("yaml") => "application/yaml",
            Some("protobuf") => fake_apiserver::http::protobuf::MEDIA_TYPE,
            Some(full) => full,
        })
    }

    /// A short label: the step's name, or its number (from 1).
    pub fn label(&self, index: usize) -> String {
        self.name.clone().unwrap_or_else(|| (index + 1).to_string())
    }
}

impl Sequence {
    /// The namespace the sequence works in.
    pub fn namespace(&self) -> String {
        let mut ns = format!("fid-{}", self.unique_name());
        ns.truncate(63);
        ns.trim_end_matches('-').to_string()
    }

    /// Give the sequence's namespace and `{seq}` a suffix, so that a corpus can be replayed
    /// again on a cluster that still holds the last run's objects.
    pub fn with_suffix(mut self, suffix: &str) -> Sequence {
        self.suffix = suffix.to_string();
        self
    }

    /// The `generateName` prefixes its requests send.
    pub fn generate_names(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .steps
            .iter()
            .filter_map(|s| s.body.as_ref())
            .filter_map(|b| {
                b.pointer("/metadata/generateName")?
                    .as_str()
                    .map(String::from)
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Its name with the suffix: what `{seq}` stands for.
    pub fn unique_name(&self) -> String {
        match self.suffix.as_str() {
            "" => self.name.clone(),
            s => format!("{}-{s}", self.name),
        }
    }

    fn check(&self) -> Result<(), CorpusError> {
        let seq_err = |problem: String| CorpusError::Sequence {
            path: self.file.clone(),
            sequence: self.name.clone(),
            problem,
        };
        let valid_name = !self.name.is_empty()
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !valid_name {
            return Err(seq_err(
                "a name is lower-case letters, digits and '-' (it names a namespace)".into(),
            ));
        }
        if self.steps.is_empty() {
            return Err(seq_err("has no steps".into()));
        }
        let mut known: HashSet<String> = BUILTIN_VARS.iter().map(|s| s.to_string()).collect();
        for (i, step) in self.steps.iter().enumerate() {
            let err = |problem: String| CorpusError::Step {
                path: self.file.clone(),
                sequence: self.name.clone(),
                step: i + 1,
                problem,
            };
            let method = step.method();
            if !matches!(method, "GET" | "POST" | "PUT" | "PATCH" | "DELETE" | "HEAD") {
                return Err(err(format!(
                    "request {:?} must start with an HTTP method (GET, POST, PUT, PATCH, DELETE, HEAD)",
                    step.request
                )));
            }
            if !step.path().starts_with('/') {
                return Err(err(format!(
                    "request {:?} needs a path after the method",
                    step.request
                )));
            }
            if step.body.is_some() && step.raw.is_some() {
                return Err(err("give `body` or `raw`, not both".into()));
            }
            if method == "PATCH" && step.media_type.is_none() {
                return Err(err(
                    "a PATCH needs `type` (merge, strategic, json-patch or apply)".into(),
                ));
            }
            if step.events.is_some() && step.until.is_some() {
                return Err(err("a watch (`events`) cannot also poll (`until`)".into()));
            }
            if let Some(until) = &step.until
                && until.status.is_none()
                && until.pointer.is_none()
            {
                return Err(err("`until` needs `status` or `pointer`".into()));
            }
            let mut texts = vec![step.request.clone()];
            texts.extend(step.raw.clone());
            texts.extend(step.headers.values().cloned());
            if let Some(body) = &step.body {
                texts.push(body.to_string());
            }
            for text in &texts {
                for var in placeholders(text) {
                    if !known.contains(&var) {
                        return Err(err(format!(
                            "{{{var}}} is not saved by an earlier step (known: {})",
                            sorted(&known)
                        )));
                    }
                }
            }
            for (var, pointer) in &step.save {
                if !pointer.starts_with('/') {
                    return Err(err(format!(
                        "save {var}: {pointer:?} is not a JSON pointer (it starts with '/')"
                    )));
                }
                known.insert(var.clone());
            }
        }
        Ok(())
    }
}

fn sorted(set: &HashSet<String>) -> String {
    let mut v: Vec<_> = set.iter().cloned().collect();
    v.sort();
    v.join(", ")
}

/// The `{var}` placeholders in a text: a brace, a name of letters, digits, `_` or `-`, a brace.
pub fn placeholders(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find('}') else { break };
        let name = &rest[..close];
        if !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            out.push(name.to_string());
            rest = &rest[close + 1..];
        }
    }
    out
}

/// Replace every `{var}` of `vars` in `text`.
pub fn substitute(text: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = text.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

/// Load every `*.yaml` file of `dir` (sorted by name); each holds a list of sequences.
pub fn load(dir: &Path) -> Result<Vec<Sequence>, CorpusError> {
    let read_err = |path: &Path, source| CorpusError::Read {
        path: path.to_path_buf(),
        source,
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| read_err(dir, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut all: Vec<Sequence> = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).map_err(|e| read_err(&file, e))?;
        let sequences: Vec<Sequence> =
            serde_yaml::from_str(&text).map_err(|source| CorpusError::Parse {
                path: file.clone(),
                source,
            })?;
        for mut s in sequences {
            s.file = file.clone();
            s.check()?;
            if let Some(first) = all.iter().find(|o| o.namespace() == s.namespace()) {
                return Err(CorpusError::Sequence {
                    path: file.clone(),
                    sequence: s.name.clone(),
                    problem: format!(
                        "the name is taken (by a sequence in {})",
                        first.file.display()
                    ),
                });
            }
            all.push(s);
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Vec<Sequence>, CorpusError> {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.yaml"), yaml).expect("write");
        load(dir.path())
    }

    #[test]
    fn an_unsaved_variable_is_named_with_the_step_it_is_in() {
        let e = parse(
            "- name: s\n  steps:\n  - request: GET /api/v1/namespaces/{ns}/configmaps/{missing}\n",
        )
        .expect_err("refused");
        let text = e.to_string();
        assert!(text.contains("sequence \"s\", step 1"), "{text}");
        assert!(text.contains("{missing} is not saved"), "{text}");
    }

    #[test]
    fn a_saved_variable_is_known_to_later_steps_only() {
        let ok = "- name: s\n  steps:\n  - request: POST /api/v1/namespaces/{ns}/configmaps\n    body: {}\n    save: {rv: /metadata/resourceVersion}\n  - request: GET /api/v1/namespaces/{ns}/configmaps?resourceVersion={rv}\n";
        assert_eq!(parse(ok).expect("loads")[0].steps.len(), 2);
        let early = "- name: s\n  steps:\n  - request: GET /x?rv={rv}\n    save: {rv: /metadata/resourceVersion}\n";
        assert!(parse(early).is_err());
    }

    #[test]
    fn a_patch_without_a_type_and_a_bad_method_are_refused() {
        let e = parse("- name: s\n  steps:\n  - request: PATCH /api/v1/nodes/a\n    body: {}\n")
            .expect_err("refused");
        assert!(e.to_string().contains("needs `type`"), "{e}");
        let e = parse("- name: s\n  steps:\n  - request: FETCH /api\n").expect_err("refused");
        assert!(e.to_string().contains("HTTP method"), "{e}");
    }

    #[test]
    fn two_sequences_with_one_name_are_refused() {
        let e = parse("- name: s\n  steps: [{request: GET /api}]\n- name: s\n  steps: [{request: GET /api}]\n")
            .expect_err("refused");
        assert!(e.to_string().contains("the name is taken"), "{e}");
    }

    #[test]
    fn placeholders_are_found_and_replaced() {
        assert_eq!(placeholders("/a/{ns}/b?x={rv}&y={}"), vec!["ns", "rv"]);
        let vars = BTreeMap::from([("ns".to_string(), "fid-x".to_string())]);
        assert_eq!(substitute("/a/{ns}/b", &vars), "/a/fid-x/b");
    }
}
