//! stdin and stdout for the stdio transport. rmcp's default (`tokio::io::stdin()`/`stdout()`)
//! does every read and write on tokio's blocking thread pool: each message in and each answer
//! out is a hand-off to another thread and back (two thread wake-ups per direction). When they
//! are pipes — as every MCP client that spawns a server makes them — they are read and written
//! here on the runtime's own reactor instead, non-blocking; anything else (a file, a terminal, a
//! socket) keeps rmcp's default.

use std::os::fd::AsFd;

use tokio::io::{AsyncRead, AsyncWrite};

pub(crate) type Reader = Box<dyn AsyncRead + Send + Unpin>;
pub(crate) type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// stdin and stdout as the stdio transport reads and writes them. Must be called inside the
/// runtime (the pipes register with its reactor).
pub(crate) fn stdio() -> (Reader, Writer) {
    // A duplicate of each descriptor: fd 0 and 1 stay open as they were (non-blocking now, as
    // they share the file description; nothing else in the process reads stdin or writes stdout,
    // the protocol channel).
    let reader: Reader = match std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| tokio::net::unix::pipe::Receiver::from_owned_fd(fd).ok())
    {
        Some(pipe) => Box::new(pipe),
        None => Box::new(tokio::io::stdin()),
    };
    let writer: Writer = match std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| tokio::net::unix::pipe::Sender::from_owned_fd(fd).ok())
    {
        Some(pipe) => Box::new(pipe),
        None => Box::new(tokio::io::stdout()),
    };
    (reader, writer)
}
