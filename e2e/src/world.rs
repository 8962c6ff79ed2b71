//! What the scenario engine needs of an environment, whatever runs it: a [`Cluster`], and
//! components it can stop, start and check. [`TestEnv`] is the embedded world (components are
//! tasks in this process, on virtual time); [`crate::remote::ProcessEnv`] is a real cluster with
//! components as processes.

use std::sync::Arc;

use futures::future::BoxFuture;
use jiff::Timestamp;

use crate::cluster::Cluster;
use crate::env::{EnvError, TestEnv};

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
}
