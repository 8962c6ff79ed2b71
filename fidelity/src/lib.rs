//! The differential corpus: the same request sequences sent to the fake API server and to
//! kube-apiserver, every answer normalised for what legitimately differs and compared.
//!
//! `cargo xtask fidelity` starts both servers (the fake on loopback, the reference control plane
//! from `control-plane`), replays `fidelity/corpus/*.yaml` ([`corpus`]) against each
//! ([`replay`]), takes out uids, times and resourceVersion numbers ([`normalise`]), compares
//! ([`compare`]) and writes FIDELITY.md ([`report`]). A difference not listed with its reason in
//! `fidelity/known/` fails the run, and so does a listed one that no longer happens (unless it is
//! marked `racy: true`: it depends on when the real server's controllers write).

pub mod compare;
pub mod corpus;
pub mod normalise;
pub mod ordered;
pub mod replay;
pub mod report;
pub mod webhook;

use std::collections::BTreeMap;

use anyhow::Context as _;
use kube::Client;

use compare::{Known, StepResult};
use corpus::Sequence;

/// The corpus, the known differences and the CRDs installed on both servers, in the workspace.
pub fn corpus_dir() -> std::path::PathBuf {
    control_plane::binaries::workspace_root().join("fidelity/corpus")
}

pub fn known_dir() -> std::path::PathBuf {
    control_plane::binaries::workspace_root().join("fidelity/known")
}

/// Replay every sequence on both servers (one sequence at a time, the two servers at once) and
/// compare, with the corpus's webhook ([`webhook`]) serving both. `progress` hears each
/// sequence's name as it starts.
pub async fn run(
    corpus: &[Sequence],
    known: &[Known],
    fake: &Client,
    reference: &Client,
    ignore_key_order: bool,
    mut progress: impl FnMut(&Sequence),
) -> anyhow::Result<Vec<StepResult>> {
    let hook = webhook::start()
        .await
        .context("starting the corpus's webhook")?;
    let builtins = BTreeMap::from([
        ("webhook".to_string(), hook.url("")),
        ("webhook-ca".to_string(), hook.ca_bundle.clone()),
    ]);
    let mut results = Vec::new();
    for seq in corpus {
        progress(seq);
        let (f, r) = tokio::join!(
            replay::sequence(fake, seq, &builtins, false),
            replay::sequence(reference, seq, &builtins, true)
        );
        let (mut f, mut r) = (f?, r?);
        let prefixes = seq.generate_names();
        normalise::sequence(&mut f.answers, &prefixes);
        normalise::sequence(&mut r.answers, &prefixes);
        if ignore_key_order {
            for a in f.answers.iter_mut().chain(r.answers.iter_mut()) {
                a.body
                    .documents_mut()
                    .into_iter()
                    .for_each(ordered::Json::sort_keys);
            }
        }
        results.extend(compare::sequence(seq, &f, &r, known));
    }
    Ok(results)
}
