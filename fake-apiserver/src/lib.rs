//! An in-process Kubernetes API server for tests.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use fake_apiserver::FakeApiServer;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kube::api::{Api, PostParams};
//!
//! let server = FakeApiServer::builder().build()?;
//! let cms: Api<ConfigMap> = Api::namespaced(server.client(), "default");
//! let mut cm = ConfigMap::default();
//! cm.metadata.name = Some("settings".into());
//! cms.create(&PostParams::default(), &cm).await?;
//!
//! // The same server for kubectl and other processes:
//! let tcp = server.serve_tcp("127.0.0.1:0".parse()?).await?;
//! tcp.write_kubeconfig(std::path::Path::new("kubeconfig"))?;
//! # Ok(()) }
//! ```
//!
//! Layers, from the bottom: [`semantics`] (pure functions: names, selectors, patches), [`store`]
//! (objects, resourceVersions, history, garbage collection; no IO), [`http`] (the `tower::Service`
//! adapter, watch streaming), [`server`] (builder, in-process client, TCP).

pub mod catalog;
pub mod clock;
pub mod envtest;
pub mod error;
pub mod faults;
pub mod http;
pub mod semantics;
pub mod server;
pub mod store;
pub mod tls;
pub mod webhooks;

pub use clock::Clock;
pub use error::ApiError;
pub use faults::{DropWhen, FaultRule, Faults, Verb};
pub use server::{Builder, FakeApiServer, Security, StartError, TcpServer};
pub use store::{ChangeFeed, ChangeType, Observed};
