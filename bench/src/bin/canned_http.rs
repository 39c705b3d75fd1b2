//! `canned-http FILE`: factory-mcp's own streamable-HTTP transport — the accept loop, the
//! bearer check, rmcp's service configured as `serve --http` configures it, and the same
//! redacting log on stderr with the same default filter — around a server whose every tool
//! call is answered with one canned answer (`canned.rs`), on the same multi-threaded runtime.
//! FILE holds `{"answer": CallToolResult, "tools": [Tool], "token": "..."}`, written by
//! factory-bench from the real server's own answer and tool list. Prints `serving MCP at URL`
//! on stderr. What the transport costs per call with no tool behind it.

#[path = "../canned.rs"]
mod canned;

use anyhow::Context;
use rmcp::model::{CallToolResult, Tool};
use secrecy::SecretString;
use tokio_util::sync::CancellationToken;

#[derive(serde::Deserialize)]
struct Spec {
    answer: CallToolResult,
    tools: Vec<Tool>,
    token: String,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let path = std::env::args().nth(1).context("usage: canned-http FILE")?;
    let spec: Spec = serde_json::from_slice(&std::fs::read(&path)?)?;
    // The log `serve` installs: what rmcp logs per request or session costs both alike.
    // Its redactor knows a secret, as `serve`'s knows the platform key: the token.
    let token = SecretString::from(spec.token);
    let redactor = std::sync::Arc::new(factory_policies::redact::Redactor::new(
        factory_policies::KnownSecrets::new().with("FACTORY_MCP_HTTP_TOKEN", &token),
    ));
    let _ = factory_server::tracing_setup::init(0, redactor);
    let server = canned::Canned::new(spec.answer, spec.tools);
    let mut opts = factory_server::http::HttpOptions::loopback(0);
    opts.auth_token = Some(token);
    let listener = factory_server::http::bind(&opts).await?;
    let addr = listener.local_addr()?;
    let ct = CancellationToken::new();
    let app = factory_server::http::router(move || server.clone(), &opts, ct.child_token());
    eprintln!("canned-http: serving MCP at http://{addr}/mcp");
    factory_server::http::serve(listener, app, &opts, ct).await?;
    Ok(())
}
