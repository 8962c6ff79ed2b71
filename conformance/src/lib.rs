//! The conformance suite for ProvisioningRequest provisioning classes: what Kueue relies on from a
//! class, tested against a real one.
//!
//! - [`suite`]: the tests, by profile (`core`: every class must pass; `extended`: features a class
//!   may claim) and the context each runs with (its own namespace, a client, the options);
//! - [`monitor`]: every request version a test causes, checked against the contract's rules
//!   ([`api::contract`]);
//! - [`runner`]: selection, namespaces and cleanup, diagnostic bundles;
//! - [`report`]: the `ConformanceReport` YAML, JUnit XML and the terminal summary;
//! - [`options`]: the vendor's options file;
//! - [`reference`]: the options of the fake autoscaler's reference classes;
//! - [`preflight`]: before any test, the cluster answers, serves the CRDs and grants the rights;
//! - [`cli`]: the command line of the `conformance` binary. The suite against the reference
//!   classes on virtual time is another package, `conformance-embedded`, so that this one links
//!   no test machinery (tokio's test-util, the scenario engine).
//!
//! As a library, a vendor's own test can run it:
//!
//! ```no_run
//! # async fn demo(client: kube::Client) {
//! let options = conformance::options::Options::load(std::path::Path::new("options.yaml")).unwrap();
//! let results = conformance::runner::run(
//!     &client,
//!     &options,
//!     &Default::default(),
//!     support::Clock::system(),
//!     |r| println!("{} {:?}", r.name, r.outcome),
//! )
//! .await;
//! assert!(results.iter().all(|r| !matches!(r.outcome, conformance::runner::Outcome::Failed(_))));
//! # }
//! ```

pub mod cli;
pub mod monitor;
pub mod options;
pub mod preflight;
pub mod reference;
pub mod report;
pub mod retry;
pub mod runner;
pub mod suite;
