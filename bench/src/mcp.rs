//! The one MCP client every server is measured through: rmcp's, over stdio (a child process),
//! streamable HTTP, or an in-memory pipe to a server in this process.

use std::{path::Path, process::Stdio, sync::Arc};

use anyhow::{Context, bail};
use rmcp::{
    ClientHandler, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
    },
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use secrecy::SecretString;
use serde_json::Value;

#[derive(Clone, Default)]
pub struct BenchClient;

impl ClientHandler for BenchClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("factory-bench", "0.1.0"),
        )
    }
}

pub type Client = RunningService<RoleClient, BenchClient>;

/// A server started as a child process speaking MCP over stdio, and its pid.
pub struct Child {
    pub client: Client,
    pub pid: u32,
}

/// Spawn `program args` with exactly `env`, in `cwd`, and connect (the `initialize` handshake,
/// protocol 2025-11-25, the era both FastMCP and we speak).
pub async fn spawn_stdio(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
    cwd: &Path,
) -> anyhow::Result<Child> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .env_clear()
        .envs(env.iter().cloned())
        .current_dir(cwd);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("spawn {}", program.display()))?;
    let pid = transport.id().context("child pid")?;
    let client = BenchClient
        .serve(transport)
        .await
        .context("MCP handshake over stdio")?;
    Ok(Child { client, pid })
}

/// Connect over streamable HTTP, presenting `token` as the bearer token the server requires.
/// The client keeps its connections (as the TypeScript SDK's `fetch` and the Python SDK's
/// `httpx` do); rmcp's default client opens a new one for every message.
pub async fn connect_http(url: &str, token: &str) -> anyhow::Result<Client> {
    let transport = StreamableHttpClientTransport::with_client(
        reqwest13::Client::builder().build()?,
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token),
    );
    BenchClient
        .serve(transport)
        .await
        .context("MCP handshake over HTTP")
}

/// A `factory-mcp` server built in this process (the same state and catalogue `serve` builds),
/// connected to the client through an in-memory pipe: no process boundary, no pipe syscalls
/// beyond tokio's, so what remains above the HTTP floor is the server's own work plus rmcp's
/// JSON-RPC framing on both ends.
pub async fn in_process(
    base_url: &str,
    api_key: &str,
    workspace: &Path,
    state_home: &Path,
) -> anyhow::Result<Client> {
    let policy = factory_policies::Policy {
        workspace: Some(workspace.to_path_buf()),
        ..factory_policies::Policy::default()
    };
    let over = factory_tools::state::PlatformOverride {
        base_url: base_url.to_string(),
        traces_url: base_url.to_string(),
        api_key: SecretString::from(api_key.to_string()),
        frontend_url: Some(base_url.to_string()),
    };
    let state_home = state_home.display().to_string();
    let env = move |k: &str| match k {
        "HOME" | "XDG_STATE_HOME" => Some(state_home.clone()),
        _ => None,
    };
    let built = factory_tools::AppState::build(
        policy,
        Some(&over),
        &env,
        factory_policies::KnownSecrets::new(),
    )
    .map_err(anyhow::Error::msg)?;
    let server = factory_tools::build_server(Arc::new(built.state), |_| true);
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    BenchClient
        .serve(client_io)
        .await
        .context("MCP handshake in process")
}

/// Call `name` with `args`; a protocol error or an `isError` result is an error.
pub async fn call(client: &Client, name: &str, args: &Value) -> anyhow::Result<CallToolResult> {
    let Value::Object(map) = args.clone() else {
        bail!("arguments must be an object")
    };
    let r = client
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(map))
        .await
        .with_context(|| format!("{name}: protocol error"))?;
    if r.is_error == Some(true) {
        let text: Vec<String> = r
            .content
            .iter()
            .filter_map(|c| c.as_text().map(|t| t.text.clone()))
            .collect();
        bail!("{name} failed: {}", text.join("\n"));
    }
    Ok(r)
}
