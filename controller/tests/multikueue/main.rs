//! MultiKueue as a user sees it, with the manager and each worker an embedded fake API server on
//! one virtual clock. One test binary (modules below) shares the set-up and is linked once.

mod clusters;
mod common;
mod prebuilt;
mod workloads;
