//! The corpus and the runner, without kube-apiserver: two fake API servers that differ in
//! everything that legitimately differs (seeds for uids and generated names, start times) must
//! answer the whole corpus identically once normalised. A difference here is either a
//! normalisation gap (the comparison against kube-apiserver would then report noise) or a corpus
//! step whose answer depends on chance.

use std::net::SocketAddr;

use fake_apiserver::FakeApiServer;
use fidelity::{compare, corpus};

async fn served(seed: u64) -> (FakeApiServer, fake_apiserver::TcpServer, kube::Client) {
    let mut builder = FakeApiServer::builder().seed(seed);
    let crds = control_plane::binaries::workspace_root().join("api/crds");
    builder = builder.crds_dir(&crds).expect("the project's CRDs");
    let fake = builder.build().expect("a fake");
    let tcp = fake
        .serve_tcp(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("served");
    let client =
        kube::Client::try_from(kube::Config::new(tcp.url().parse().expect("url"))).expect("client");
    (fake, tcp, client)
}

#[tokio::test]
async fn two_differently_seeded_fakes_answer_the_corpus_identically() {
    let sequences = corpus::load(&fidelity::corpus_dir()).expect("the corpus loads");
    let known = compare::load_known(&fidelity::known_dir(), &sequences).expect("known loads");
    let (_a, _ta, a) = served(1).await;
    let (_b, _tb, b) = served(2).await;
    let results = fidelity::run(&sequences, &known, &a, &b, false, |_| {})
        .await
        .expect("the corpus replays");
    let differing: Vec<_> = results
        .iter()
        .filter(|r| r.diff.is_some())
        .map(|r| {
            format!(
                "{} step {}: {}\n{}",
                r.sequence,
                r.step,
                r.request,
                r.diff.as_deref().unwrap_or_default()
            )
        })
        .collect();
    assert!(differing.is_empty(), "{}", differing.join("\n"));
    assert!(
        results.len() >= 400,
        "the corpus has {} requests; it must have at least 400",
        results.len()
    );
}

#[test]
fn the_corpus_and_its_known_differences_load() {
    let sequences = corpus::load(&fidelity::corpus_dir()).expect("the corpus loads");
    compare::load_known(&fidelity::known_dir(), &sequences)
        .expect("every known difference names a sequence and a reason");
}
