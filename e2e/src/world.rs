//! What the scenario engine needs of an environment, whatever runs it: a [`Cluster`], and
//! components it can stop, start and check. [`TestEnv`] is the embedded world (components are
//! tasks in this process, on virtual time); [`crate::remote::ProcessEnv`] is a real cluster with
//! components as processes. A MultiKueue world also has worker clusters, each a world of its own
//! for the steps that address it, and the manager's link to each.

use std::sync::Arc;

use futures::future::BoxFuture;
use jiff::Timestamp;

use crate::cluster::Cluster;
use crate::env::{EnvError, TestEnv};
use crate::harness::Link;

pub trait World: Send + Sync {
    fn cluster(&self) -> Arc<dyn Cluster>;
    /// When the environment started (the virtual clock's start, or the wall clock's).
    fn start_time(&self) -> Timestamp;
    fn stop<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), EnvError>>;
    fn start(&self, name: &str) -> Result<(), EnvError>;
    fn restart<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), EnvError>> {
        Box::pin(async move {
            self.stop(name).await?;
            self.start(name)
        })
    }
    /// An error for the first component that has ended on its own.
    fn check_components(&self) -> Result<(), EnvError>;

    /// The worker clusters, by name: none but in MultiKueue worlds.
    fn worker_names(&self) -> Vec<String> {
        Vec::new()
    }

    /// A worker cluster, with its components.
    fn worker(&self, name: &str) -> Result<&dyn World, EnvError> {
        Err(EnvError::UnknownWorker {
            name: name.into(),
            known: "none".into(),
        })
    }

    /// The manager's link to a worker.
    fn link(&self, worker: &str) -> Result<&Link, EnvError> {
        Err(EnvError::UnknownWorker {
            name: worker.into(),
            known: "none".into(),
        })
    }
}

impl World for TestEnv {
    fn cluster(&self) -> Arc<dyn Cluster> {
        TestEnv::cluster(self)
    }
    fn start_time(&self) -> Timestamp {
        TestEnv::start_time(self)
    }
    fn stop<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), EnvError>> {
        Box::pin(TestEnv::stop(self, name))
    }
    fn start(&self, name: &str) -> Result<(), EnvError> {
        TestEnv::start(self, name)
    }
    fn check_components(&self) -> Result<(), EnvError> {
        TestEnv::check_components(self)
    }
    fn worker_names(&self) -> Vec<String> {
        TestEnv::worker_names(self)
    }
    fn worker(&self, name: &str) -> Result<&dyn World, EnvError> {
        Ok(TestEnv::worker(self, name)?)
    }
    fn link(&self, worker: &str) -> Result<&Link, EnvError> {
        TestEnv::link(self, worker)
    }
}
