//! `PlatformError`: every way a platform or traces call can fail, with messages that tell the
//! user what to do, and the classification the launch pipeline relies on (`is_ambiguous`,
//! `is_retryable`, `retry_after`).
//!
//! No variant ever holds the API key or a request body. Details quoted from server answers
//! are scrubbed of the key by the HTTP core before they land here.

use std::time::Duration;

/// Fixed text for 401, as the CLI prints it (§1.1); the body is ignored.
pub const UNAUTHORIZED_MESSAGE: &str = "API key unauthorized. Please check that your API key has the correct permissions, generate a new one at https://app.primeintellect.ai/dashboard/tokens or run 'prime login' to configure a new API key.";
/// Fixed text for 402, as the CLI prints it (§1.1); the body is ignored.
pub const PAYMENT_REQUIRED_MESSAGE: &str = "Payment required. Please check your billing status at https://app.primeintellect.ai/dashboard/billing";

/// One item of a FastAPI 422 `detail` list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// `loc` joined with `.`, `body` elements dropped (e.g. `config.trainer`).
    pub field: String,
    /// `msg`.
    pub message: String,
}

/// Errors of the platform client.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// No key configured: nothing was sent.
    #[error(
        "No API key configured. Set PRIME_API_KEY or run 'prime login' to save one in ~/.prime/config.json."
    )]
    MissingApiKey,

    /// 401.
    #[error("{UNAUTHORIZED_MESSAGE}")]
    Unauthorized,

    /// 402.
    #[error("{PAYMENT_REQUIRED_MESSAGE}")]
    PaymentRequired,

    /// 403: the key or the team lacks a permission (the detail usually names it).
    #[error(
        "HTTP 403: {detail} (the API key or the active team is not allowed to do this; check the team and the key's scopes)"
    )]
    Forbidden {
        /// Server detail.
        detail: String,
        /// Traces error code, when given.
        code: Option<String>,
    },

    /// 404.
    #[error("HTTP 404: {detail}")]
    NotFound {
        /// Server detail.
        detail: String,
        /// Traces error code (`trace_not_found`, …); a code-less traces 404 means "route absent".
        code: Option<String>,
    },

    /// A log request answered 404 with one of the CLI's startup markers (§5.6).
    #[error(
        "The run has not started yet, so it has no logs (HTTP 404: {detail}). Try again in a little while."
    )]
    NotStartedYet {
        /// Server detail.
        detail: String,
    },

    /// 409: a conflicting state (e.g. "Run is not RUNNING", a volume's single writer).
    #[error("HTTP 409: {detail}")]
    Conflict {
        /// Server detail.
        detail: String,
        /// Traces error code (`trace_not_indexed`, …).
        code: Option<String>,
    },

    /// 422 with a list `detail`: the request did not validate.
    #[error("Validation failed:{}", format_field_errors(.errors))]
    Validation {
        /// One entry per invalid field.
        errors: Vec<FieldError>,
    },

    /// 429.
    #[error("HTTP 429: {detail} (rate limited{}; wait before retrying)", retry_after_hint(.retry_after))]
    RateLimited {
        /// Server detail.
        detail: String,
        /// `Retry-After`, when given.
        retry_after: Option<Duration>,
    },

    /// 5xx: the server failed; for a write the outcome is unknown.
    #[error("HTTP {status}: {detail} (server error at {endpoint})")]
    Server {
        /// Status code.
        status: u16,
        /// Server detail.
        detail: String,
        /// `METHOD /path` of the call.
        endpoint: String,
        /// `Retry-After` on 503, when given.
        retry_after: Option<Duration>,
    },

    /// Any other non-2xx (400, 405, 422 with a string detail, other 4xx).
    #[error("HTTP {status}: {detail}")]
    Api {
        /// Status code.
        status: u16,
        /// Server detail.
        detail: String,
        /// Traces error code, when given.
        code: Option<String>,
    },

    /// No answer within the timeout. A write may still have happened on the server.
    #[error("Request timed out after {}s: {endpoint} (the server may still have acted on it)", .after.as_secs_f64())]
    Timeout {
        /// `METHOD /path` of the call.
        endpoint: String,
        /// The timeout that expired.
        after: Duration,
    },

    /// Connection-level failure.
    #[error("Request failed: {endpoint}: {message}")]
    Transport {
        /// `METHOD /path` of the call.
        endpoint: String,
        /// The transport error (no headers, no body).
        message: String,
        /// Whether the request may have reached the server (false for connect failures).
        maybe_sent: bool,
    },

    /// A 2xx body that is not a JSON object (the CLI: "API response was not a dictionary").
    #[error("API response was not a JSON object ({endpoint})")]
    NotJsonObject {
        /// `METHOD /path` of the call.
        endpoint: String,
    },

    /// A 2xx JSON object that does not have the documented shape.
    #[error("Unexpected response from {endpoint}: {message}")]
    Decode {
        /// `METHOD /path` of the call.
        endpoint: String,
        /// What did not match.
        message: String,
    },

    /// A caller-supplied argument refused before anything was sent.
    #[error("Invalid argument: {0}")]
    InvalidArgument(String),

    /// A raw download ended before the announced length, or the connection broke mid-stream.
    #[error("Download of {endpoint} was cut short after {received} bytes{}; nothing was written to the destination", expected_hint(.expected))]
    Truncated {
        /// `METHOD /path` of the call.
        endpoint: String,
        /// Bytes received.
        received: u64,
        /// `Content-Length`, when announced.
        expected: Option<u64>,
    },

    /// Local file I/O for a download.
    #[error("Cannot write {path}: {message}")]
    Io {
        /// The file or directory.
        path: String,
        /// The I/O error.
        message: String,
    },

    /// Volume creation reached `FAILED` or `TOMBSTONED`.
    #[error("Volume '{name}' could not be created: status {status}")]
    VolumeFailed {
        /// Volume name.
        name: String,
        /// The terminal status.
        status: String,
    },

    /// Volume creation did not reach `RUNNING` in time.
    #[error("Volume '{name}' did not become ready within {}s (last status: {last_status}); it may still become ready", .waited.as_secs())]
    VolumeTimeout {
        /// Volume name.
        name: String,
        /// Last status seen (or the last poll error).
        last_status: String,
        /// How long we waited.
        waited: Duration,
    },
}

fn format_field_errors(errors: &[FieldError]) -> String {
    errors
        .iter()
        .map(|e| format!("\n  - {}: {}", e.field, e.message))
        .collect()
}

fn retry_after_hint(retry_after: &Option<Duration>) -> String {
    match retry_after {
        Some(d) => format!(", retry after {}s", d.as_secs()),
        None => String::new(),
    }
}

fn expected_hint(expected: &Option<u64>) -> String {
    match expected {
        Some(n) => format!(" of {n} announced"),
        None => String::new(),
    }
}

/// The operators' counter of failed platform and traces requests (issue 21 §3), one per
/// attempt (a retried GET counts each failure), labelled `service` and `status`.
pub const ERRORS_METRIC: &str = "factory_platform_errors_total";

/// The `status` label of an HTTP status: the statuses the platform documents or a proxy
/// commonly sends, by number; any other as its class. A fixed set, so a misbehaving server
/// cannot grow the metric's series without bound.
pub fn status_label(status: u16) -> &'static str {
    const NAMED: [(u16, &str); 17] = [
        (400, "400"),
        (401, "401"),
        (402, "402"),
        (403, "403"),
        (404, "404"),
        (405, "405"),
        (408, "408"),
        (409, "409"),
        (410, "410"),
        (413, "413"),
        (422, "422"),
        (429, "429"),
        (500, "500"),
        (501, "501"),
        (502, "502"),
        (503, "503"),
        (504, "504"),
    ];
    match NAMED.iter().find(|(s, _)| *s == status) {
        Some((_, label)) => label,
        None if (400..500).contains(&status) => "4xx",
        None if (500..600).contains(&status) => "5xx",
        None => "other",
    }
}

impl PlatformError {
    /// The `status` label this error is counted under: the HTTP status ([`status_label`]),
    /// `timeout` or `transport`; `None` for what never reached the wire (no key, a refused
    /// argument) or was no answer of the server's (local I/O).
    pub fn metric_label(&self) -> Option<&'static str> {
        match self {
            PlatformError::Timeout { .. } => Some("timeout"),
            PlatformError::Transport { .. } => Some("transport"),
            _ => self.status().map(status_label),
        }
    }

    /// The HTTP status, when the server answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            PlatformError::Unauthorized => Some(401),
            PlatformError::PaymentRequired => Some(402),
            PlatformError::Forbidden { .. } => Some(403),
            PlatformError::NotFound { .. } | PlatformError::NotStartedYet { .. } => Some(404),
            PlatformError::Conflict { .. } => Some(409),
            PlatformError::Validation { .. } => Some(422),
            PlatformError::RateLimited { .. } => Some(429),
            PlatformError::Server { status, .. } | PlatformError::Api { status, .. } => {
                Some(*status)
            }
            _ => None,
        }
    }

    /// The outcome is unknown: the request may have reached the server and been acted upon
    /// (timeout, 5xx, connection lost after sending). The launch pipeline reconciles before
    /// doing anything else after such an error.
    pub fn is_ambiguous(&self) -> bool {
        match self {
            PlatformError::Timeout { .. } | PlatformError::Server { .. } => true,
            PlatformError::Transport { maybe_sent, .. } => *maybe_sent,
            _ => false,
        }
    }

    /// Worth retrying for an idempotent read: 429, 502, 503, 504, timeouts and transport
    /// failures (as prime_traces does).
    pub fn is_retryable(&self) -> bool {
        match self {
            PlatformError::RateLimited { .. }
            | PlatformError::Timeout { .. }
            | PlatformError::Transport { .. } => true,
            PlatformError::Server { status, .. } => matches!(status, 502..=504),
            _ => false,
        }
    }

    /// The server's `Retry-After`, when it sent one.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            PlatformError::RateLimited { retry_after, .. }
            | PlatformError::Server { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// A timeout (the call did not answer in time).
    pub fn is_timeout(&self) -> bool {
        matches!(self, PlatformError::Timeout { .. })
    }

    /// The error code of a traces-service error body, when given.
    pub fn code(&self) -> Option<&str> {
        match self {
            PlatformError::Forbidden { code, .. }
            | PlatformError::NotFound { code, .. }
            | PlatformError::Conflict { code, .. }
            | PlatformError::Api { code, .. } => code.as_deref(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_labels_are_a_fixed_set_whatever_the_server_sends() {
        assert_eq!(PlatformError::Unauthorized.metric_label(), Some("401"));
        let server = |status| PlatformError::Server {
            status,
            detail: "secret-looking detail".into(),
            endpoint: "GET /x".into(),
            retry_after: None,
        };
        assert_eq!(server(503).metric_label(), Some("503"));
        assert_eq!(server(599).metric_label(), Some("5xx"));
        let api = |status| PlatformError::Api {
            status,
            detail: String::new(),
            code: None,
        };
        assert_eq!(api(418).metric_label(), Some("4xx"));
        assert_eq!(api(302).metric_label(), Some("other"));
        let timeout = PlatformError::Timeout {
            endpoint: "GET /x".into(),
            after: Duration::from_secs(1),
        };
        assert_eq!(timeout.metric_label(), Some("timeout"));
        let transport = PlatformError::Transport {
            endpoint: "GET /x".into(),
            message: "connection refused".into(),
            maybe_sent: false,
        };
        assert_eq!(transport.metric_label(), Some("transport"));
        // Nothing sent: not a platform error.
        assert_eq!(PlatformError::MissingApiKey.metric_label(), None);
        assert_eq!(
            PlatformError::InvalidArgument("x".into()).metric_label(),
            None
        );
        // Every label is short and plain: digits, a class, or one of two words.
        for s in 0..=1000u16 {
            let l = status_label(s);
            assert!(
                l.chars().all(|c| c.is_ascii_alphanumeric()) && l.len() <= 5,
                "{l}"
            );
        }
    }
}
