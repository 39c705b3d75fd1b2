//! Shared harness for end-to-end tests: a manual-clock sandbox in-process, the real
//! `factory-mcp` binary started as a child process with a clean environment pointing at it,
//! and an rmcp client speaking either protocol era.
#![allow(dead_code)]

pub mod chromium;
pub mod oidc;
pub mod postgres;
pub mod pty;

use std::{path::PathBuf, time::Duration};

use factory_sandbox::{Sandbox, SandboxHandle, SandboxOptions};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt,
    model::{
        CallToolRequestParams, CallToolResult, ClientCapabilities, ClientConfig, Implementation,
        ProtocolVersion,
    },
    service::RunningService,
    transport::TokioChildProcess,
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Which protocol era the client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28: `server/discover`, stateless requests.
    Modern,
    /// 2025-11-25: the `initialize` handshake.
    Legacy,
}

#[derive(Clone, Default)]
pub struct PlainClient;

impl ClientHandler for PlainClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("e2e-test", "0.0.1"),
        )
    }
}

pub type Client = RunningService<RoleClient, PlainClient>;

/// A sandbox plus the scratch directories a server process needs.
pub struct World {
    pub sandbox: SandboxHandle,
    pub home: TempDir,
    pub workspace: TempDir,
}

impl World {
    pub async fn new() -> World {
        World::with_sandbox(SandboxOptions::manual_clock()).await
    }

    /// A world whose sandbox starts with `opts` (e.g. a seed with other timings).
    pub async fn with_sandbox(opts: SandboxOptions) -> World {
        let sandbox = Sandbox::start(opts).await.expect("sandbox starts");
        World {
            sandbox,
            home: tempfile::tempdir().expect("tempdir"),
            workspace: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn key(&self, user: usize) -> String {
        self.sandbox.api_key(user).expect("seeded user")
    }

    /// The environment of a server acting as seeded user `user`.
    pub fn env(&self, user: usize) -> Vec<(String, String)> {
        let home = self.home.path().display().to_string();
        vec![
            ("PATH".into(), std::env::var("PATH").unwrap_or_default()),
            ("HOME".into(), home.clone()),
            ("XDG_CONFIG_HOME".into(), format!("{home}/.config")),
            ("XDG_STATE_HOME".into(), format!("{home}/.state")),
            ("PRIME_API_BASE_URL".into(), self.sandbox.base_url()),
            ("PRIME_TRACES_URL".into(), self.sandbox.base_url()),
            ("PRIME_FRONTEND_URL".into(), self.sandbox.frontend_url()),
            ("PRIME_API_KEY".into(), self.key(user)),
            ("FACTORY_MCP_LOG".into(), "debug".into()),
        ]
    }

    pub fn advance(&self, secs: u64) {
        self.sandbox.advance(Duration::from_secs(secs));
    }

    /// Create a run directly on the sandbox as `user` (as another client of the platform would).
    pub async fn create_run(
        &self,
        user: usize,
        name: &str,
        max_steps: u32,
        team: Option<&str>,
    ) -> String {
        let mut body = json!({
            "config": {
                "name": name,
                "max_steps": max_steps,
                "model": {"name": "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"},
                "orchestrator": {"batch_size": 8, "eval": {"interval": 5}},
                "trainer": {},
                "inference": {}
            },
            "name": name,
        });
        if let Some(t) = team {
            body["teamId"] = json!(t);
        }
        let resp = reqwest::Client::new()
            .post(format!("{}/api/v1/training/runs", self.sandbox.base_url()))
            .bearer_auth(self.key(user))
            .json(&body)
            .send()
            .await
            .expect("create request");
        let status = resp.status();
        let v: Value = resp.json().await.expect("json");
        assert!(status.is_success(), "create failed: {status} {v}");
        v["runId"].as_str().expect("runId").to_string()
    }

    /// Start `factory-mcp serve <args>` as `user` and connect a client of `era`.
    pub async fn client(&self, user: usize, args: &[&str], era: Era) -> Client {
        self.client_with_env(self.env(user), args, era).await
    }

    pub async fn client_with_env(
        &self,
        env: Vec<(String, String)>,
        args: &[&str],
        era: Era,
    ) -> Client {
        connect(PlainClient, self.transport(env, args), era).await
    }

    /// The server as a child process, ready for a client of any kind.
    pub fn transport(&self, env: Vec<(String, String)>, args: &[&str]) -> TokioChildProcess {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_factory-mcp"));
        cmd.arg("serve")
            .arg("--workspace")
            .arg(self.workspace.path())
            .args(args)
            .env_clear()
            .envs(env)
            .current_dir(self.workspace.path());
        let stderr = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.stderr_path())
            .expect("stderr log");
        let (transport, _stderr) = TokioChildProcess::builder(cmd)
            .stderr(stderr)
            .spawn()
            .expect("spawn factory-mcp");
        transport
    }

    /// Where every server process of this world writes its stderr (for leak checks).
    pub fn stderr_path(&self) -> PathBuf {
        self.home.path().join("server-stderr.log")
    }

    /// The state directory every server of this world uses.
    pub fn state_dir(&self) -> PathBuf {
        self.home.path().join(".state").join("factory-mcp")
    }

    pub fn workspace_path(&self) -> PathBuf {
        self.workspace.path().to_path_buf()
    }

    /// The bearer token a `serve --http` of this world created in its state directory.
    pub fn http_token(&self) -> String {
        read_http_token(&self.state_dir().join("http-token"))
    }
}

/// The token in a token file (as the server reads it: trimmed).
pub fn read_http_token(path: &std::path::Path) -> String {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("token file {}: {e}", path.display()))
        .trim()
        .to_string()
}

/// Write `token` to a new file `dir/name`, readable by its owner only (the server refuses a
/// token file others can read). Created with mode 0600, never wider even for an instant.
pub fn write_token_file(dir: &std::path::Path, name: &str, token: &str) -> PathBuf {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(name);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .unwrap_or_else(|e| panic!("token file {}: {e}", path.display()));
    writeln!(f, "{token}").expect("write token");
    path
}

/// Connect `handler` to a server over `transport` in `era`.
pub async fn connect<H: ClientHandler>(
    handler: H,
    transport: TokioChildProcess,
    era: Era,
) -> RunningService<RoleClient, H> {
    let client = match era {
        Era::Legacy => handler.serve(transport).await,
        Era::Modern => {
            handler
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                )
                .await
        }
    };
    client.expect("client connects")
}

/// Call a tool; a protocol error panics (tests that expect one use `try_call`).
pub async fn call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    args: Value,
) -> CallToolResult {
    try_call(client, name, args)
        .await
        .unwrap_or_else(|e| panic!("{name}: protocol error {e}"))
}

pub async fn try_call<H: ClientHandler>(
    client: &RunningService<RoleClient, H>,
    name: &str,
    args: Value,
) -> Result<CallToolResult, rmcp::ServiceError> {
    let Value::Object(map) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(map))
        .await
}

pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The structured result of a successful call.
pub fn ok(r: &CallToolResult) -> Value {
    assert_ne!(r.is_error, Some(true), "tool failed: {}", text(r));
    r.structured_content.clone().expect("structured content")
}

/// The text of a failed call.
pub fn err(r: &CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "expected isError, got: {}", text(r));
    text(r)
}

/// Plan-confirmation mode with the cost caps it requires (automation: no person asked).
pub fn plan_mode_args() -> Vec<&'static str> {
    vec![
        "--confirm",
        "plan",
        "--max-cost-per-hour-usd",
        "1000",
        "--max-active-cost-per-hour-usd",
        "5000",
    ]
}

/// A small healthy RL config for the sandbox's models; it passes validation.
pub fn rl_config(name: &str, max_steps: u32) -> String {
    format!(
        r#"name = "{name}"
max_steps = {max_steps}
seq_len = 2048

[model]
name = "PrimeIntellect/Qwen3-0.6B-Reverse-Text-SFT"

[deployment]
num_train_gpus = 1
num_infer_gpus = 1

[orchestrator]
batch_size = 8

[orchestrator.renderer]
name = "prime-qwen3"

[[orchestrator.train.source]]
name = "reverse-text"

[orchestrator.train.source.env.taskset]
id = "reverse-text"

[trainer]

[inference]
"#
    )
}
