//! How a tool answers: a one-line summary plus an object-rooted structured result (also sent as
//! text, since some clients read only text), or an `isError` result whose text says what to do.
//! Everything passes through redaction on the way out.

use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use serde::Serialize;
use serde_json::Value;

pub use crate::error::ToolError;

/// A successful tool answer, before it is shaped into a `CallToolResult`.
pub enum Outcome<O> {
    /// The usual answer: a one-line summary and the structured body.
    Done { summary: String, body: O },
    /// A protocol-level response built by the tool itself (the input-required round trip).
    Response(Box<CallToolResponse>),
}

impl<O> Outcome<O> {
    pub fn done(summary: impl Into<String>, body: O) -> Self {
        Outcome::Done {
            summary: summary.into(),
            body,
        }
    }
}

/// What a tool handler returns.
pub type ToolResult<O> = Result<Outcome<O>, ToolError>;

/// Access to the redactor of the shared state, so every answer is redacted.
pub trait HasRedactor {
    fn redactor(&self) -> &dyn Redact;
}

/// Redaction applied to everything that leaves the server.
pub trait Redact: Send + Sync {
    fn redact_str(&self, s: &str) -> String;
    fn redact_value(&self, v: &mut Value);
}

/// Shape a successful body: structured content plus a text block led by the summary.
pub fn success<O: Serialize>(summary: &str, body: &O, redactor: &dyn Redact) -> CallToolResult {
    let mut value = match serde_json::to_value(body) {
        Ok(v) => v,
        Err(e) => return failure(&format!("internal error shaping the result: {e}"), redactor),
    };
    redactor.redact_value(&mut value);
    let summary = redactor.redact_str(summary);
    // Compact: the text block repeats the structured result for clients that read only text.
    let json = serde_json::to_string(&value).unwrap_or_default();
    let mut result =
        CallToolResult::success(vec![ContentBlock::text(format!("{summary}\n{json}"))]);
    result.structured_content = Some(value);
    result
}

/// The one place a tool's result becomes an MCP answer: a body is shaped by [`success`]; a
/// protocol response (the input-required round trip) passes through; every [`ToolError`] kind
/// becomes an `isError` result whose text says what to do ([`failure`]).
pub fn answer<O: Serialize>(result: ToolResult<O>, redactor: &dyn Redact) -> CallToolResponse {
    match result {
        Ok(Outcome::Done { summary, body }) => success(&summary, &body, redactor).into(),
        Ok(Outcome::Response(r)) => *r,
        Err(e) => failure(&e.message, redactor).into(),
    }
}

/// Shape a failure the model can act on.
pub fn failure(message: &str, redactor: &dyn Redact) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(redactor.redact_str(message))])
}
