//! The streamable HTTP transport of the real binary: rmcp's HTTP client in both eras, the
//! bearer token (configured, or created in the state directory when none is), Host and Origin
//! checks, the body cap, and a server that refuses to start off loopback without a token.

mod common;

use std::{process::Stdio, time::Duration};

use common::{PlainClient, World};
use rmcp::{
    ClientLifecycleMode, ClientServiceExt, ServiceExt,
    model::{CallToolRequestParams, ProtocolVersion},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

/// A `serve --http` child process and the URL it serves.
struct HttpServer {
    child: tokio::process::Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

async fn start(w: &World, extra: &[&str]) -> HttpServer {
    // This process's reqwest 0.13 (rmcp's HTTP client) needs a rustls provider.
    factory_platform::ensure_tls_provider();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
        .args(["serve", "--http", "127.0.0.1:0", "--workspace"])
        .arg(w.workspace.path())
        .args(extra)
        .env_clear()
        .envs(w.env(0))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.split("serving MCP at ").nth(1) {
                return rest.trim().to_string();
            }
        }
        panic!("server exited before listening");
    })
    .await
    .expect("server listens within 30 s");
    // Keep draining stderr so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    HttpServer { child, url }
}

fn token_file(w: &World, token: &str) -> String {
    common::write_token_file(w.home.path(), "mcp-token", token)
        .display()
        .to_string()
}

/// An rmcp HTTP client transport that sends `Authorization: Bearer <token>` (a macro: its
/// reqwest is not this crate's, so the type cannot be named here).
macro_rules! authed {
    ($url:expr, $token:expr) => {
        StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri($url.to_string()).auth_header($token),
        )
    };
}

const TOKEN: &str = "test-bearer-token-0123456789abcdef";

#[tokio::test]
async fn rmcp_http_client_works_in_both_eras() {
    let w = World::new().await;
    let s = start(&w, &[]).await;
    // No token configured: the server created one in its state directory and requires it.
    let token = w.http_token();
    for era in ["modern", "legacy"] {
        let transport = authed!(s.url, token.clone());
        let client = if era == "modern" {
            PlainClient
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                )
                .await
                .unwrap()
        } else {
            PlainClient.serve(transport).await.unwrap()
        };
        let tools = client.list_all_tools().await.unwrap();
        assert!(tools.len() >= 13, "{era}");
        let r = client
            .call_tool(CallToolRequestParams::new("whoami"))
            .await
            .unwrap();
        assert_ne!(r.is_error, Some(true), "{era}: {r:?}");
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn bearer_token_is_required_and_never_forwarded() {
    let w = World::new().await;
    let tf = token_file(&w, TOKEN);
    let s = start(&w, &["--auth-token-file", &tf]).await;
    let http = reqwest::Client::new();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    for auth in [None, Some("Bearer wrong-token"), Some("Basic dXNlcjpwYXNz")] {
        let mut req = http
            .post(&s.url)
            .header("Accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(a) = auth {
            req = req.header("Authorization", a);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 401, "{auth:?}");
        assert!(resp.headers().get("www-authenticate").is_some());
    }
    // With the token, a real client works; and the platform saw the platform key, never ours.
    let transport = authed!(s.url, TOKEN);
    let client = PlainClient
        .serve(transport)
        .await
        .expect("authorised client connects");
    let r = client
        .call_tool(CallToolRequestParams::new("list_runs"))
        .await
        .unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    client.cancel().await.unwrap();
    let log = w.sandbox.request_log();
    assert!(log.iter().any(|r| r.path.ends_with("/rft/runs")));
    // The sandbox accepts only its seeded keys: a forwarded MCP token would have been a 401.
    assert!(!format!("{log:?}").contains(TOKEN));
}

#[tokio::test]
async fn wrong_host_or_origin_is_forbidden_and_big_bodies_are_refused() {
    let w = World::new().await;
    let s = start(&w, &[]).await;
    let bearer = format!("Bearer {}", w.http_token());
    let http = reqwest::Client::new();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let post = |host: Option<&str>, origin: Option<&str>| {
        let mut req = http
            .post(&s.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Authorization", &bearer)
            .json(&ping);
        if let Some(h) = host {
            req = req.header("Host", h);
        }
        if let Some(o) = origin {
            req = req.header("Origin", o);
        }
        req.send()
    };
    assert_eq!(
        post(Some("evil.example"), None).await.unwrap().status(),
        403
    );
    assert_eq!(
        post(None, Some("https://evil.example"))
            .await
            .unwrap()
            .status(),
        403
    );
    assert_ne!(
        post(None, Some("http://localhost:3000"))
            .await
            .unwrap()
            .status(),
        403
    );
    let big = "x".repeat(2 << 20);
    let resp = http
        .post(&s.url)
        .header("Accept", "application/json, text/event-stream")
        .header("Content-Type", "application/json")
        .header("Authorization", &bearer)
        .body(format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{big}\"}}}}"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
}

#[tokio::test]
async fn off_loopback_without_a_token_does_not_start() {
    let w = World::new().await;
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
        .args(["serve", "--http", "0.0.0.0:0", "--workspace"])
        .arg(w.workspace.path())
        .env_clear()
        .envs(w.env(0))
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), out)
        .await
        .unwrap()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--auth-token-file"), "{stderr}");
}

#[tokio::test]
async fn a_real_client_without_the_token_fails_fast_instead_of_hanging() {
    let w = World::new().await;
    let tf = token_file(&w, TOKEN);
    let s = start(&w, &["--auth-token-file", &tf]).await;
    for era in ["modern", "legacy"] {
        let transport = StreamableHttpClientTransport::from_uri(s.url.clone());
        let attempt = async {
            if era == "modern" {
                PlainClient
                    .serve_with_lifecycle(
                        transport,
                        ClientLifecycleMode::Discover {
                            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                        },
                    )
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            } else {
                PlainClient
                    .serve(transport)
                    .await
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
        };
        let outcome = tokio::time::timeout(Duration::from_secs(15), attempt)
            .await
            .unwrap_or_else(|_| panic!("{era}: the client hung on a 401"));
        let e = outcome.expect_err("connecting without the token must fail");
        assert!(
            e.contains("401")
                || e.to_lowercase().contains("unauthorized")
                || e.to_lowercase().contains("auth"),
            "{era}: {e}"
        );
    }
}
