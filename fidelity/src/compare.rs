//! Comparing two servers' normalised answers, step by step, against the list of known
//! differences (`fidelity/known/*.yaml`).

use std::path::Path;

use serde::Deserialize;

use crate::corpus::Sequence;
use crate::replay::{Answer, Replayed};

/// A difference that is understood and accepted, with its reason.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Known {
    pub sequence: String,
    /// A step's label (its name or number); absent for every step of the sequence.
    #[serde(default)]
    pub step: Option<String>,
    pub reason: String,
    /// A difference that happens only when the real server's controllers write between two steps
    /// (a race the corpus cannot order): never reported stale.
    #[serde(default)]
    pub racy: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum KnownError {
    #[error("reading {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Parse {
        path: String,
        source: serde_yaml::Error,
    },
    #[error("{path}: entry {index} ({sequence}) names no sequence of the corpus")]
    Unknown {
        path: String,
        index: usize,
        sequence: String,
    },
    #[error("{path}: entry {index} ({sequence}) gives no reason")]
    NoReason {
        path: String,
        index: usize,
        sequence: String,
    },
}

/// Load the known differences from every `*.yaml` file of `dir` (one per area of the corpus,
/// each a list); every entry must name a sequence of `corpus` and give a reason.
pub fn load_known(dir: &Path, corpus: &[Sequence]) -> Result<Vec<Known>, KnownError> {
    let read = |path: &Path, source| KnownError::Read {
        path: path.display().to_string(),
        source,
    };
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| read(dir, e))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut all = Vec::new();
    for file in files {
        let p = file.display().to_string();
        let text = std::fs::read_to_string(&file).map_err(|e| read(&file, e))?;
        let known: Vec<Known> = serde_yaml::from_str::<Option<Vec<Known>>>(&text)
            .map_err(|source| KnownError::Parse {
                path: p.clone(),
                source,
            })?
            .unwrap_or_default();
        for (i, k) in known.iter().enumerate() {
            if !corpus.iter().any(|s| s.name == k.sequence) {
                return Err(KnownError::Unknown {
                    path: p.clone(),
                    index: i + 1,
                    sequence: k.sequence.clone(),
                });
            }
            if k.reason.trim().is_empty() {
                return Err(KnownError::NoReason {
                    path: p.clone(),
                    index: i + 1,
                    sequence: k.sequence.clone(),
                });
            }
        }
        all.extend(known);
    }
    Ok(all)
}

/// One step's verdict.
#[derive(Clone, Debug)]
pub struct StepResult {
    pub sequence: String,
    pub step: String,
    /// The request as the corpus writes it (placeholders unexpanded).
    pub request: String,
    /// A unified diff, fake (`-`) against the reference (`+`); `None` when identical.
    pub diff: Option<String>,
    /// The reason, when the difference is a known one.
    pub known: Option<String>,
}

impl StepResult {
    pub fn unlisted(&self) -> bool {
        self.diff.is_some() && self.known.is_none()
    }
}

/// Compare one sequence's answers from the fake and from the reference.
pub fn sequence(
    seq: &Sequence,
    fake: &Replayed,
    reference: &Replayed,
    known: &[Known],
) -> Vec<StepResult> {
    seq.steps
        .iter()
        .enumerate()
        .map(|(i, step)| {
            let label = step.label(i);
            let f = side(fake, i);
            let r = side(reference, i);
            let diff = (f != r).then(|| unified(&f, &r));
            let known = diff.as_ref().and_then(|_| {
                known
                    .iter()
                    .find(|k| k.sequence == seq.name && k.step.as_ref().is_none_or(|s| *s == label))
                    .map(|k| k.reason.clone())
            });
            StepResult {
                sequence: seq.name.clone(),
                step: label,
                request: step.request.clone(),
                diff,
                known,
            }
        })
        .collect()
}

/// What a server showed for step `i`: its answer, or why the sequence had stopped before it.
fn side(r: &Replayed, i: usize) -> String {
    match (r.answers.get(i), &r.stopped) {
        (Some(a), _) => Answer::render(a),
        (None, Some(e)) => format!(
            "(not sent: the sequence stopped at step {}: {})\n",
            e.step, e.problem
        ),
        (None, None) => "(not sent)\n".into(),
    }
}

fn unified(fake: &str, reference: &str) -> String {
    similar::TextDiff::from_lines(fake, reference)
        .unified_diff()
        .context_radius(3)
        .header("fake-apiserver", "kube-apiserver")
        .to_string()
}

/// Known differences that no longer happen: the list must shrink when the fake is fixed.
pub fn stale<'a>(known: &'a [Known], results: &[StepResult]) -> Vec<&'a Known> {
    known
        .iter()
        .filter(|k| !k.racy)
        .filter(|k| {
            !results.iter().any(|r| {
                r.diff.is_some()
                    && r.sequence == k.sequence
                    && k.step.as_ref().is_none_or(|s| *s == r.step)
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ordered::Json;
    use crate::replay::Body;

    fn seq() -> Sequence {
        serde_yaml::from_str::<Vec<Sequence>>(
            "- name: s\n  steps:\n  - request: GET /api\n  - request: GET /apis\n    name: groups\n",
        )
        .expect("yaml")
        .remove(0)
    }

    fn replayed(bodies: &[&str]) -> Replayed {
        Replayed {
            answers: bodies
                .iter()
                .map(|b| Answer {
                    status: 200,
                    headers: vec![],
                    body: Body::Json {
                        doc: Json::parse(b.as_bytes()).expect("json"),
                        newline: true,
                    },
                })
                .collect(),
            stopped: None,
        }
    }

    #[test]
    fn a_different_key_order_is_a_difference_and_a_listed_one_is_known() {
        let fake = replayed(&[r#"{"a":1,"b":2}"#, r#"{"x":1}"#]);
        let real = replayed(&[r#"{"b":2,"a":1}"#, r#"{"x":1}"#]);
        let known = vec![Known {
            sequence: "s".into(),
            step: Some("1".into()),
            reason: "why".into(),
            racy: false,
        }];
        let results = sequence(&seq(), &fake, &real, &[]);
        assert!(results[0].unlisted());
        assert!(results[1].diff.is_none());
        let results = sequence(&seq(), &fake, &real, &known);
        assert_eq!(results[0].known.as_deref(), Some("why"));
        assert!(stale(&known, &results).is_empty());
        let same = sequence(&seq(), &real, &real, &known);
        assert_eq!(stale(&known, &same).len(), 1, "a fixed difference is stale");
        let racy = vec![Known {
            racy: true,
            ..known[0].clone()
        }];
        assert!(stale(&racy, &same).is_empty(), "a race that did not happen");
    }

    #[test]
    fn a_missing_trailing_newline_is_a_difference() {
        let fake = replayed(&[r#"{"a":1}"#, "{}"]);
        let mut real = replayed(&[r#"{"a":1}"#, "{}"]);
        if let Body::Json { newline, .. } = &mut real.answers[0].body {
            *newline = false;
        }
        let results = sequence(&seq(), &fake, &real, &[]);
        let diff = results[0].diff.as_deref().expect("differs");
        assert!(
            diff.contains("+(no newline at the end of the body)"),
            "{diff}"
        );
    }
}
