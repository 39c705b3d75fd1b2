//! The one MCP client every server is measured through: rmcp's, over stdio (a child process),
//! streamable HTTP (either era), or an in-memory pipe to a server in this process. Beside it,
//! [`RawClient`]: JSON-RPC written and read by hand over that pipe, so the server's own work
//! can be told from rmcp's client-side framing.

use std::{path::Path, process::Stdio, sync::Arc};

use anyhow::{Context, bail};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
        ProtocolVersion,
    },
    service::RunningService,
    transport::{
        StreamableHttpClientTransport, TokioChildProcess,
        streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use secrecy::SecretString;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream};

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

/// The two eras of MCP over streamable HTTP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25: an `initialize` handshake and a session the server keeps.
    Sessions,
    /// 2026-07-28: no handshake, no session; every request stands alone.
    Stateless,
}

impl Era {
    pub fn label(self) -> &'static str {
        match self {
            Era::Sessions => "2025-11-25, a session per client",
            Era::Stateless => "2026-07-28, stateless",
        }
    }
}

/// Connect over streamable HTTP in `era`, presenting `token` as the bearer token the server
/// requires. The client keeps its connections (as the TypeScript SDK's `fetch` and the Python
/// SDK's `httpx` do); rmcp's default client opens a new one for every message.
pub async fn connect_http(url: &str, token: &str, era: Era) -> anyhow::Result<Client> {
    let transport = StreamableHttpClientTransport::with_client(
        reqwest13::Client::builder().build()?,
        StreamableHttpClientTransportConfig::with_uri(url.to_string()).auth_header(token),
    );
    match era {
        Era::Sessions => BenchClient.serve(transport).await,
        Era::Stateless => {
            BenchClient
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                )
                .await
        }
    }
    .with_context(|| format!("MCP connection over HTTP ({})", era.label()))
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
    let client_io = serve_in_process(base_url, api_key, workspace, state_home)?;
    BenchClient
        .serve(client_io)
        .await
        .context("MCP handshake in process")
}

/// Start the server `serve` would build, in this process, on one end of an in-memory pipe;
/// the other end is returned.
fn serve_in_process(
    base_url: &str,
    api_key: &str,
    workspace: &Path,
    state_home: &Path,
) -> anyhow::Result<DuplexStream> {
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
    serve_over_lines(server, server_io);
    Ok(client_io)
}

/// What the in-process servers are served over, as the report says it.
#[cfg(feature = "line-transport")]
pub const SERVED_OVER: &str = "the line transport `serve` uses";
#[cfg(not(feature = "line-transport"))]
pub const SERVED_OVER: &str =
    "rmcp's own transport, as this tree's `serve` did (the driver built without `line-transport`)";

/// Run `server` on `io` over the line transport `serve` uses over stdio, until the other end
/// goes away. Built without the `line-transport` feature (`scripts/bench.sh --before` on a
/// tree older than `server/src/lines.rs`), over rmcp's own, as that tree's `serve` did.
fn serve_over_lines<S: rmcp::ServerHandler>(server: S, io: DuplexStream) {
    let (read, write) = tokio::io::split(io);
    #[cfg(feature = "line-transport")]
    let transport = factory_server::lines::LineTransport::new(read, write);
    #[cfg(not(feature = "line-transport"))]
    let transport = (read, write);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(transport).await {
            let _ = running.waiting().await;
        }
    });
}

/// The in-process server spoken to without a client library: each request is one JSON line
/// written to the pipe; each answer is one line read back and read once, without building a
/// tree, for its id, `error` and `isError` (the least any client must do: find the answer and
/// whether it failed). Above the HTTP floor this leaves the server's own work (its JSON-RPC
/// framing, the tool, the answer) plus that one read of the answer's bytes.
pub struct RawClient(tokio::sync::Mutex<RawPipe>);

struct RawPipe {
    io: BufReader<DuplexStream>,
    next_id: u64,
    line: Vec<u8>,
}

/// One message from the server, read for what the client acts on; everything else in it is
/// skipped over (checked as JSON, not kept).
#[derive(serde::Deserialize)]
struct Incoming {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    result: Option<ResultHead>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(serde::Deserialize)]
struct ResultHead {
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
}

/// How long one answer may take before the measurement is abandoned (a hung server must not
/// hang the bench).
const RAW_ANSWER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

impl RawClient {
    /// Start the server in this process and shake hands (`initialize`, protocol 2025-11-25,
    /// then `notifications/initialized`).
    pub async fn in_process(
        base_url: &str,
        api_key: &str,
        workspace: &Path,
        state_home: &Path,
    ) -> anyhow::Result<RawClient> {
        let io = serve_in_process(base_url, api_key, workspace, state_home)?;
        RawClient::over(io).await
    }

    /// An rmcp server in this process that answers every tool call with `answer` (a real
    /// answer of the real server, read back by rmcp's client), making no platform request:
    /// what rmcp's server costs per call through the line transport `serve` uses
    /// (`factory_server::lines`; without the `line-transport` feature, rmcp's own) — its
    /// framing, its per-request task, serialising the answer — with none of the tool's own
    /// work. Spoken to by hand, as [`RawClient::in_process`].
    pub async fn canned(answer: CallToolResult) -> anyhow::Result<RawClient> {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        serve_over_lines(crate::canned::Canned::new(answer, Vec::new()), server_io);
        RawClient::over(client_io).await
    }

    /// No MCP server at all: a task that answers each request line with `answer` (as the
    /// result, under the request's id) after reading the line for its id, and `initialize`
    /// with an empty result. What the pipe and this client cost per call, for the figures to
    /// be read above it.
    pub async fn echo(answer: &CallToolResult) -> anyhow::Result<RawClient> {
        let (client_io, server_io) = tokio::io::duplex(1 << 20);
        let answer = serde_json::to_string(answer)?;
        tokio::spawn(async move {
            #[derive(serde::Deserialize)]
            struct Head<'a> {
                #[serde(borrow, default)]
                id: Option<&'a serde_json::value::RawValue>,
                #[serde(borrow, default)]
                method: Option<std::borrow::Cow<'a, str>>,
            }
            let (read, mut write) = tokio::io::split(server_io);
            let mut read = BufReader::new(read);
            let (mut line, mut out) = (Vec::new(), Vec::new());
            loop {
                line.clear();
                match read.read_until(b'\n', &mut line).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                let Ok(head) = serde_json::from_slice::<Head>(&line) else {
                    return;
                };
                let Some(id) = head.id else { continue };
                let result = match head.method.as_deref() {
                    Some("initialize") => "{}",
                    _ => answer.as_str(),
                };
                out.clear();
                out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
                out.extend_from_slice(id.get().as_bytes());
                out.extend_from_slice(b",\"result\":");
                out.extend_from_slice(result.as_bytes());
                out.extend_from_slice(b"}\n");
                if write.write_all(&out).await.is_err() || write.flush().await.is_err() {
                    return;
                }
            }
        });
        RawClient::over(client_io).await
    }

    async fn over(io: DuplexStream) -> anyhow::Result<RawClient> {
        let mut pipe = RawPipe {
            io: BufReader::new(io),
            next_id: 0,
            line: Vec::new(),
        };
        pipe.request(
            "initialize",
            json!({
                "protocolVersion": ProtocolVersion::LATEST_WITH_INITIALIZE,
                "capabilities": {},
                "clientInfo": {"name": "factory-bench-raw", "version": "0.1.0"},
            }),
        )
        .await
        .context("initialize in process")?;
        pipe.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await?;
        Ok(RawClient(tokio::sync::Mutex::new(pipe)))
    }

    /// Call `name` with `args`; a JSON-RPC error or an `isError` result is an error.
    pub async fn call(&self, name: &str, args: &Value) -> anyhow::Result<()> {
        let mut pipe = self.0.lock().await;
        let failed = pipe
            .request("tools/call", json!({"name": name, "arguments": args}))
            .await
            .with_context(|| format!("{name}: protocol error"))?;
        if failed {
            // Only now is the answer read whole, for the message to show.
            let answer: Value = serde_json::from_slice(&pipe.line)?;
            bail!("{name} failed: {}", answer["result"]["content"]);
        }
        Ok(())
    }
}

impl RawPipe {
    async fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let mut bytes = serde_json::to_vec(message)?;
        bytes.push(b'\n');
        let pipe = self.io.get_mut();
        pipe.write_all(&bytes).await?;
        pipe.flush().await?;
        Ok(())
    }

    /// Send a request and wait for its answer, whose line stays in `self.line`: whether the
    /// result says `isError`. Notifications the server sends first are passed over; a request
    /// from the server is refused (the bench's operations never need one).
    async fn request(&mut self, method: &str, params: Value) -> anyhow::Result<bool> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        loop {
            self.line.clear();
            let read = tokio::time::timeout(
                RAW_ANSWER_TIMEOUT,
                self.io.read_until(b'\n', &mut self.line),
            )
            .await
            .with_context(|| format!("no answer to {method} in {RAW_ANSWER_TIMEOUT:?}"))??;
            if read == 0 {
                bail!("the server closed the pipe");
            }
            let message: Incoming = serde_json::from_slice(&self.line)?;
            match (message.method, message.id) {
                (Some(asked), Some(their_id)) => {
                    self.send(&json!({"jsonrpc": "2.0", "id": their_id, "error": {
                        "code": -32601, "message": format!("the bench's client does not answer {asked}")}}))
                        .await?;
                }
                (Some(_), None) => {} // a notification
                (None, Some(Value::Number(n))) if n.as_u64() == Some(id) => {
                    if let Some(error) = message.error {
                        bail!("JSON-RPC error: {error}");
                    }
                    let result = message.result.context("an answer without a result")?;
                    return Ok(result.is_error == Some(true));
                }
                // An `"id": null` reads as `None` (an `Option` takes `null` for absent).
                (None, None) if message.error.is_some() => {
                    bail!(
                        "JSON-RPC error for no request: {}",
                        message.error.unwrap_or_default()
                    );
                }
                (None, other) => bail!("an answer to a request not sent (id {other:?})"),
            }
        }
    }
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
