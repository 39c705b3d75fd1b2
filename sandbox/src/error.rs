//! The crate's one error type: why a sandbox could not start.

use std::net::SocketAddr;

/// Errors starting the sandbox.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("seed: {0}")]
    Seed(String),
    #[error("state file: {0}")]
    State(String),
}
