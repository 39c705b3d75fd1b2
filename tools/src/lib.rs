//! The MCP surface: the tool catalogue (one module per family), typed arguments and results,
//! and the rmcp `ServerHandler` that serves them. Tools are thin: parse, ask `policies`, call
//! `platform`, shape the result.

pub mod validation;
