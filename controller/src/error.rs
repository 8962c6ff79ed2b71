//! Why the controller stopped.

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("watch stream ended")]
    WatchEnded,
    #[error("API request failed: {0}")]
    Api(#[from] kube::Error),
}
