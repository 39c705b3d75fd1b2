//! Hardening of the HTTP transport and gating (issue 17), against the real binary:
//!
//! - before authentication: a half-sent header is closed by the header-read timeout; a flood of
//!   half-open connections (more than the process has file descriptors) does not starve a
//!   request with a valid token; 6,000 `initialize` calls grow the server by at most 50 MB;
//! - the token by default: `serve --http` on loopback with no token configured creates one in
//!   `$XDG_STATE_HOME/factory-mcp/http-token` (0600), reuses it, prints its path and never its
//!   value, and requires it; a token file others can read is refused; `--no-auth` is loopback
//!   only and loud;
//! - `--toolsets account --tools get_run` exposes the account tools *and* `get_run`.
//!
//! No assertion is on time: the bounds below only stop a hung test.

mod common;

use std::{
    os::unix::fs::PermissionsExt,
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use common::{Era, World};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::TcpStream,
};

/// Longest any single wait below may take before the test is declared hung.
const HANG: Duration = Duration::from_secs(90);

struct HttpServer {
    child: tokio::process::Child,
    url: String,
    addr: String,
    stderr: Arc<Mutex<String>>,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

impl HttpServer {
    fn log(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }
}

/// `factory-mcp serve --http 127.0.0.1:0 <args>` (through `sh -c PREFIX` when given, e.g. to
/// lower its file-descriptor limit). `Err(stderr)` when it exits before listening.
async fn spawn(
    w: &World,
    env: Vec<(String, String)>,
    shell_prefix: Option<&str>,
    args: &[&str],
) -> Result<HttpServer, String> {
    let bin = env!("CARGO_BIN_EXE_factory-mcp");
    let mut cmd = match shell_prefix {
        Some(prefix) => {
            let mut c = tokio::process::Command::new("sh");
            c.arg("-c")
                .arg(format!("{prefix} && exec \"$0\" \"$@\""))
                .arg(bin);
            c
        }
        None => tokio::process::Command::new(bin),
    };
    cmd.args(["serve", "--http", "127.0.0.1:0", "--workspace"])
        .arg(w.workspace.path())
        .args(args)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let stderr = Arc::new(Mutex::new(String::new()));
    let found = tokio::time::timeout(HANG, async {
        while let Ok(Some(line)) = lines.next_line().await {
            stderr.lock().unwrap().push_str(&format!("{line}\n"));
            if let Some(rest) = line.split("serving MCP at ").nth(1) {
                return Some(rest.trim().to_string());
            }
        }
        None
    })
    .await
    .expect("the server says where it listens, or exits");
    let Some(url) = found else {
        return Err(stderr.lock().unwrap().clone());
    };
    let sink = stderr.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            sink.lock().unwrap().push_str(&format!("{line}\n"));
        }
    });
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    Ok(HttpServer {
        child,
        url,
        addr,
        stderr,
    })
}

async fn start(w: &World, args: &[&str]) -> HttpServer {
    spawn(w, w.env(0), None, args)
        .await
        .unwrap_or_else(|stderr| panic!("the server did not start:\n{stderr}"))
}

/// A stateless 2026-07-28 `tools/call whoami`; the HTTP status and the body.
async fn whoami(http: &reqwest::Client, url: &str, token: Option<&str>) -> (u16, String) {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"}}}
    });
    let mut req = http
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "whoami")
        .json(&body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = tokio::time::timeout(HANG, req.send())
        .await
        .expect("whoami: no answer (hung)")
        .expect("whoami: transport error");
    let status = resp.status().as_u16();
    (status, resp.text().await.unwrap_or_default())
}

fn answered_ok(status: u16, body: &str) -> bool {
    status == 200 && body.contains("\"result\"") && !body.contains("\"isError\":true")
}

/// A legacy (2025-11-25) `initialize`; the session id the server assigned.
async fn initialize(http: &reqwest::Client, url: &str, token: &str) -> Result<String, String> {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "init-loop", "version": "0"}}});
    let resp = http
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .bearer_auth(token)
        .json(&init)
        .send()
        .await
        .map_err(|e| format!("send: {e}"))?;
    let status = resp.status();
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let text = resp.text().await.map_err(|e| format!("body: {e}"))?;
    match session {
        Some(id) if status.is_success() => Ok(id),
        _ => Err(format!("{status}: {text}")),
    }
}

/// `tools/list` in session `id`; the HTTP status.
async fn list_in_session(http: &reqwest::Client, url: &str, token: &str, id: &str) -> u16 {
    let resp = http
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("Mcp-Session-Id", id)
        .header("MCP-Protocol-Version", "2025-11-25")
        .bearer_auth(token)
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .send()
        .await
        .expect("tools/list");
    let status = resp.status().as_u16();
    let _ = resp.text().await;
    status
}

fn vm_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("proc status")
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{field} missing"))
}

const TOKEN: &str = "reliability-http-token-0123456789abcdef";

// ---- before authentication --------------------------------------------------------------------

#[tokio::test]
async fn a_half_sent_header_is_closed_by_the_header_read_timeout() {
    let w = World::new().await;
    let policy = w.home.path().join("policy.toml");
    std::fs::write(&policy, "[http]\nheader_read_timeout_s = 1\n").unwrap();
    let s = start(&w, &["--config", policy.to_str().unwrap()]).await;
    let mut conn = TcpStream::connect(&s.addr).await.expect("connect");
    // The request line and one header, never the blank line that ends the headers.
    conn.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .await
        .unwrap();
    let mut buf = [0u8; 1024];
    // Well under hyper's own 30 s default, so only the policy's 1 s closes it in time.
    let bound = Duration::from_secs(15);
    let outcome = tokio::time::timeout(bound, async {
        loop {
            match conn.read(&mut buf).await {
                // Closed by the server (hyper may first answer 408).
                Ok(0) | Err(_) => return,
                Ok(_) => continue,
            }
        }
    })
    .await;
    assert!(
        outcome.is_ok(),
        "a connection with a half-sent header was still open after {bound:?}\n{}",
        s.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_beyond_the_fd_limit_do_not_starve_a_valid_request() {
    factory_platform::ensure_tls_provider();
    let w = World::new().await;
    let tf = common::write_token_file(w.home.path(), "token", TOKEN);
    // 256 descriptors for the server, and more half-open connections than that: without a cap
    // below the limit, `accept` fails with EMFILE and the valid request waits forever.
    let s = spawn(
        &w,
        w.env(0),
        Some("ulimit -n 256"),
        &["--auth-token-file", tf.to_str().unwrap()],
    )
    .await
    .unwrap_or_else(|e| panic!("server: {e}"));
    let http = reqwest::Client::new();
    let (status, body) = whoami(&http, &s.url, Some(TOKEN)).await;
    assert!(answered_ok(status, &body), "warm-up: {status} {body}");
    let mut held = Vec::new();
    for _ in 0..400 {
        // A server that stopped accepting lets the backlog fill: stop opening more then, and
        // let the valid request below show the starvation.
        let Ok(Ok(mut c)) =
            tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(&s.addr)).await
        else {
            break;
        };
        if c.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .is_err()
        {
            continue;
        }
        held.push(c);
    }
    eprintln!("holding {} half-open connections", held.len());
    let fresh = reqwest::Client::new();
    let (status, body) = whoami(&fresh, &s.url, Some(TOKEN)).await;
    assert!(
        answered_ok(status, &body),
        "with 400 half-open connections held: {status} {body}\n{}",
        s.log()
    );
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unread_pipelined_unauthenticated_requests_do_not_make_connections_busy() {
    factory_platform::ensure_tls_provider();
    let w = World::new().await;
    let tf = common::write_token_file(w.home.path(), "token", TOKEN);
    let policy = w.home.path().join("policy.toml");
    const CAP: usize = 4;
    std::fs::write(&policy, format!("[http]\nmax_connections = {CAP}\n")).unwrap();
    let s = start(
        &w,
        &[
            "--auth-token-file",
            tf.to_str().unwrap(),
            "--config",
            policy.to_str().unwrap(),
        ],
    )
    .await;
    // Every connection up to the cap sends unauthenticated requests back to back and never
    // reads: the unread 401s fill the socket buffers, so the server is stuck writing an answer
    // on each. Were that counted as busy, every connection would be busy and a client with the
    // token would get 503.
    let request = b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".repeat(1000);
    let mut writers = tokio::task::JoinSet::new();
    let (stalled_tx, mut stalled_rx) = tokio::sync::mpsc::channel::<()>(CAP);
    for _ in 0..CAP {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let mut c = tokio::time::timeout(HANG, socket.connect(s.addr.parse().unwrap()))
            .await
            .expect("connect: hung")
            .expect("connect");
        let request = request.clone();
        let stalled = stalled_tx.clone();
        writers.spawn(async move {
            loop {
                let mut write = std::pin::pin!(c.write_all(&request));
                // Not an assertion: only when to try the valid request (a write that makes
                // no progress for a while means the server stopped reading this connection).
                match tokio::time::timeout(Duration::from_millis(500), write.as_mut()).await {
                    Ok(Ok(())) => continue,
                    Ok(Err(_)) => return,
                    Err(_) => {
                        let _ = stalled.send(()).await;
                        let _ = write.await;
                        return;
                    }
                }
            }
        });
    }
    for _ in 0..CAP {
        tokio::time::timeout(HANG, stalled_rx.recv())
            .await
            .expect("the writers never filled the buffers (hung)");
    }
    let fresh = reqwest::Client::new();
    let (status, body) = whoami(&fresh, &s.url, Some(TOKEN)).await;
    assert!(
        answered_ok(status, &body),
        "with {CAP} connections full of unread 401s: {status} {body}\n{}",
        s.log()
    );
    writers.abort_all();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn six_thousand_initialize_calls_grow_the_server_by_at_most_50_mb() {
    factory_platform::ensure_tls_provider();
    let calls: usize = std::env::var("RELIABILITY_INIT_CALLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(6000);
    let w = World::new().await;
    let tf = common::write_token_file(w.home.path(), "token", TOKEN);
    let mut env = w.env(0);
    env.retain(|(k, _)| k != "FACTORY_MCP_LOG");
    let s = spawn(&w, env, None, &["--auth-token-file", tf.to_str().unwrap()])
        .await
        .unwrap_or_else(|e| panic!("server: {e}"));
    let pid = s.child.id().expect("pid");
    let http = reqwest::Client::new();
    // Warm up (first session, first tools/list), then measure.
    let first = initialize(&http, &s.url, TOKEN).await.expect("first");
    assert_eq!(list_in_session(&http, &s.url, TOKEN, &first).await, 200);
    let before = vm_kib(pid, "VmRSS:");
    let url = Arc::new(s.url.clone());
    let mut tasks = tokio::task::JoinSet::new();
    let workers = 8;
    for k in 0..workers {
        let url = url.clone();
        tasks.spawn(async move {
            let http = reqwest::Client::new();
            let mut last = None;
            for _ in 0..(calls / workers + usize::from(k < calls % workers)) {
                last = Some(initialize(&http, &url, TOKEN).await?);
            }
            Ok::<_, String>(last)
        });
    }
    let mut last = None;
    while let Some(r) = tokio::time::timeout(Duration::from_secs(600), tasks.join_next())
        .await
        .expect("initialize loop hung")
    {
        last = r.expect("task").expect("initialize").or(last);
    }
    let after = vm_kib(pid, "VmRSS:");
    let peak = vm_kib(pid, "VmHWM:");
    let growth_mib = after.saturating_sub(before) as f64 / 1024.0;
    eprintln!(
        "{calls} initialize calls: RSS before {before} KiB, after {after} KiB (+{growth_mib:.1} MiB), peak {peak} KiB"
    );
    assert!(
        growth_mib <= 50.0,
        "{calls} initialize calls grew RSS by {growth_mib:.1} MiB ({before} → {after} KiB)"
    );
    // The oldest idle session made way; the newest still answers.
    assert_eq!(
        list_in_session(&http, &s.url, TOKEN, &first).await,
        404,
        "the first session should have been closed to admit newer ones"
    );
    let last = last.expect("a session");
    assert_eq!(list_in_session(&http, &s.url, TOKEN, &last).await, 200);
}

// ---- the token by default ---------------------------------------------------------------------

#[tokio::test]
async fn loopback_http_creates_requires_and_reuses_a_private_token() {
    factory_platform::ensure_tls_provider();
    let w = World::new().await;
    let path = w.state_dir().join("http-token");
    let s = start(&w, &[]).await;
    let meta = std::fs::metadata(&path)
        .unwrap_or_else(|e| panic!("no token file at {} ({e})\n{}", path.display(), s.log()));
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let token = w.http_token();
    assert!(token.len() >= 32, "a long random token");
    let log = s.log();
    assert!(
        log.contains(&path.display().to_string()),
        "path printed:\n{log}"
    );
    assert!(!log.contains(&token), "the token value was printed");
    let http = reqwest::Client::new();
    let (status, _) = whoami(&http, &s.url, None).await;
    assert_eq!(status, 401, "no token");
    let (status, _) = whoami(&http, &s.url, Some("not-the-token-0123456789")).await;
    assert_eq!(status, 401, "wrong token");
    let (status, body) = whoami(&http, &s.url, Some(&token)).await;
    assert!(answered_ok(status, &body), "{status} {body}");
    drop(s);
    // A restart reuses the same token: clients configured once keep working.
    let s = start(&w, &[]).await;
    assert_eq!(w.http_token(), token);
    let (status, body) = whoami(&http, &s.url, Some(&token)).await;
    assert!(answered_ok(status, &body), "{status} {body}");
    assert!(!s.log().contains(&token));
}

#[tokio::test]
async fn a_token_file_readable_by_others_is_refused() {
    let w = World::new().await;
    let tf = common::write_token_file(w.home.path(), "token", TOKEN);
    std::fs::set_permissions(&tf, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = match spawn(
        &w,
        w.env(0),
        None,
        &["--auth-token-file", tf.to_str().unwrap()],
    )
    .await
    {
        Ok(s) => panic!("started with a world-readable token file:\n{}", s.log()),
        Err(stderr) => stderr,
    };
    assert!(
        err.contains(&format!("chmod 600 {}", tf.display())),
        "{err}"
    );
    assert!(!err.contains(TOKEN), "{err}");
    // The default file too: loosened by someone, it is refused, not replaced.
    let s = start(&w, &[]).await;
    drop(s);
    let default = w.state_dir().join("http-token");
    std::fs::set_permissions(&default, std::fs::Permissions::from_mode(0o640)).unwrap();
    let err = match spawn(&w, w.env(0), None, &[]).await {
        Ok(s) => panic!("started with a group-readable token file:\n{}", s.log()),
        Err(stderr) => stderr,
    };
    assert!(err.contains("chmod 600"), "{err}");
}

#[tokio::test]
async fn no_auth_is_loopback_only_and_says_so_loudly() {
    factory_platform::ensure_tls_provider();
    let w = World::new().await;
    let s = start(&w, &["--no-auth"]).await;
    assert!(s.log().contains("NOT authenticated"), "{}", s.log());
    assert!(!w.state_dir().join("http-token").exists());
    let (status, body) = whoami(&reqwest::Client::new(), &s.url, None).await;
    assert!(answered_ok(status, &body), "{status} {body}");
    drop(s);
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
        .args(["serve", "--http", "0.0.0.0:0", "--no-auth", "--workspace"])
        .arg(w.workspace.path())
        .env_clear()
        .envs(w.env(0))
        .output();
    let out = tokio::time::timeout(HANG, out).await.unwrap().unwrap();
    assert!(
        !out.status.success(),
        "--no-auth off loopback must not start"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("loopback"), "{stderr}");
}

// ---- gating ---------------------------------------------------------------------------------

#[tokio::test]
async fn tools_add_to_the_selected_toolsets() {
    let w = World::new().await;
    let c = w
        .client(
            0,
            &["--toolsets", "account", "--tools", "get_run"],
            Era::Modern,
        )
        .await;
    let tools: Vec<String> = c
        .list_all_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    for name in [
        "whoami",
        "list_teams",
        "list_models",
        "list_gpus",
        "get_run",
    ] {
        assert!(
            tools.contains(&name.to_string()),
            "{name} missing: {tools:?}"
        );
    }
    assert_eq!(tools.len(), 5, "{tools:?}");
    let run = w.create_run(0, "gated", 10, None).await;
    let r = common::call(&c, "get_run", json!({"run_id": run})).await;
    let v: Value = common::ok(&r);
    assert!(v.is_object());
    c.cancel().await.unwrap();
}
