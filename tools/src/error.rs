//! Tool failures, typed by kind. Every kind reaches the model the same way — an `isError`
//! result whose text says what to do next ([`crate::reply::failure`]); protocol errors are kept
//! for what is not a tool call at all (an unknown or gated tool, a bad resource URI).

/// What kind of failure a tool met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// An argument is malformed or contradicts another.
    BadArgument,
    /// The run, plan or file named does not exist.
    NotFound,
    /// A policy or a safety rule refused the action.
    Refused,
    /// A person must act first (approve, confirm).
    NeedsPerson,
    /// The platform failed or refused.
    Platform,
    /// The server lacks something it needs (credentials, its state store).
    Unavailable,
}

/// A failure the model should read and act on: what went wrong and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    pub kind: ErrorKind,
    pub message: String,
}

impl ToolError {
    /// A refusal (the most common failure: the tool declines and says why).
    pub fn new(message: impl Into<String>) -> Self {
        Self::of(ErrorKind::Refused, message)
    }

    pub fn of(kind: ErrorKind, message: impl Into<String>) -> Self {
        ToolError {
            kind,
            message: message.into(),
        }
    }

    pub fn bad_argument(message: impl Into<String>) -> Self {
        Self::of(ErrorKind::BadArgument, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::of(ErrorKind::NotFound, message)
    }

    pub fn needs_person(message: impl Into<String>) -> Self {
        Self::of(ErrorKind::NeedsPerson, message)
    }

    pub fn platform(message: impl Into<String>) -> Self {
        Self::of(ErrorKind::Platform, message)
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::of(ErrorKind::Unavailable, message)
    }
}
