//! Load (issue 9 §5): 64 concurrent HTTP clients × 200 read-tool calls each against the
//! sandbox, as stateless 2026-07-28 JSON-RPC POSTs: zero errors; p50/p99 latency and the
//! server's RSS (idle before, peak, after) are printed; memory returns to near its idle level.
//!
//! `RELIABILITY_LOAD_CLIENTS` and `RELIABILITY_LOAD_CALLS` change the shape (defaults 64 and
//! 200, the figures).

mod common;

use std::{
    process::Stdio,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use common::World;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

struct HttpServer {
    child: tokio::process::Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

async fn start(w: &World) -> HttpServer {
    let mut env = w.env(0);
    // The figures are for the server as deployed: keep the log at its default level
    // (a debug log line per request would measure the terminal, not the server).
    env.retain(|(k, _)| k != "FACTORY_MCP_LOG");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
        .args(["serve", "--http", "127.0.0.1:0", "--workspace"])
        .arg(w.workspace.path())
        .env_clear()
        .envs(env)
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
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    HttpServer { child, url }
}

/// `VmRSS` / `VmHWM` of a process, in KiB.
fn mem_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{field} not in /proc/{pid}/status"))
}

/// One stateless tools/call; the JSON-RPC message of the answer (JSON or one SSE event).
async fn tool_call(
    http: &reqwest::Client,
    url: &str,
    bearer: &str,
    id: u64,
    name: &str,
    args: Value,
) -> Result<Value, String> {
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": args,
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "load", "version": "0"}
            }
        }
    });
    let resp = http
        .post(url)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", name)
        .header("Authorization", bearer)
        .json(&body)
        .send()
        .await
        .map_err(|e| format!("send: {e}"))?;
    let status = resp.status();
    let text = resp.text().await.map_err(|e| format!("body: {e}"))?;
    if !status.is_success() {
        return Err(format!("{status}: {text}"));
    }
    let msg = if text.trim_start().starts_with('{') {
        serde_json::from_str::<Value>(&text).map_err(|e| format!("{e}: {text}"))?
    } else {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .find(|v| v.get("id").is_some())
            .ok_or_else(|| format!("no answer in: {text}"))?
    };
    if msg.get("error").is_some() || msg["result"]["isError"] == true {
        return Err(format!("{name}: {msg}"));
    }
    Ok(msg)
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_clients_times_two_hundred_read_calls() {
    factory_platform::ensure_tls_provider();
    let clients = env_usize("RELIABILITY_LOAD_CLIENTS", 64);
    let calls = env_usize("RELIABILITY_LOAD_CALLS", 200);
    let w = World::new().await;
    let run = w.create_run(0, "load-run", 40, None).await;
    w.advance(30);
    let s = start(&w).await;
    let pid = s.child.id().expect("pid");
    let url = s.url.clone();
    // The token the server created in its state directory (none was configured).
    let bearer = Arc::new(format!("Bearer {}", w.http_token()));
    let mix: Arc<Vec<(&'static str, Value)>> = Arc::new(vec![
        ("whoami", json!({})),
        ("list_runs", json!({"limit": 10})),
        ("get_run", json!({"run_id": run})),
        ("get_progress", json!({"run_id": run})),
        ("get_metrics", json!({"run_id": run})),
        ("list_checkpoints", json!({"run_id": run})),
        ("get_logs", json!({"run_id": run, "tail": 20})),
        ("list_traces", json!({"run_id": run, "limit": 5})),
    ]);
    // Warm up every tool once, so "idle" includes what the first call of each initialises.
    let http = reqwest::Client::new();
    for (i, (name, args)) in mix.iter().enumerate() {
        tool_call(&http, &url, &bearer, i as u64, name, args.clone())
            .await
            .unwrap_or_else(|e| panic!("warm-up {name}: {e}"));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = mem_kib(pid, "VmRSS:");

    let errors = Arc::new(AtomicU64::new(0));
    let t0 = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..clients {
        let (url, mix, errors, bearer) = (url.clone(), mix.clone(), errors.clone(), bearer.clone());
        tasks.spawn(async move {
            // Each client has its own connection pool, like a separate assistant.
            let http = reqwest::Client::new();
            let mut lat = Vec::with_capacity(calls);
            let mut first_err = None;
            for i in 0..calls {
                let (name, args) = &mix[(c + i) % mix.len()];
                let t = Instant::now();
                let r = tool_call(
                    &http,
                    &url,
                    &bearer,
                    (c * calls + i) as u64,
                    name,
                    args.clone(),
                )
                .await;
                lat.push(t.elapsed());
                if let Err(e) = r {
                    errors.fetch_add(1, Ordering::Relaxed);
                    first_err.get_or_insert(e);
                }
            }
            (lat, first_err)
        });
    }
    let mut lat: Vec<Duration> = Vec::with_capacity(clients * calls);
    let mut first_err = None;
    while let Some(r) = tasks.join_next().await {
        let (l, e) = r.expect("client task");
        lat.extend(l);
        if first_err.is_none() {
            first_err = e;
        }
    }
    let wall = t0.elapsed();
    let peak = mem_kib(pid, "VmHWM:");
    lat.sort();
    let pct = |p: f64| lat[((lat.len() as f64 * p).ceil() as usize).clamp(1, lat.len()) - 1];
    // Memory settles back (bounded wait): connection buffers and per-request state are freed.
    let mut after = mem_kib(pid, "VmRSS:");
    for _ in 0..50 {
        if after <= idle + idle / 4 + 16 * 1024 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = mem_kib(pid, "VmRSS:");
    }
    eprintln!(
        "load: {clients} clients x {calls} calls = {} calls in {:.1} s ({:.0} calls/s); errors {}; \
         latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; RSS idle {} KiB, peak {} KiB, after {} KiB",
        lat.len(),
        wall.as_secs_f64(),
        lat.len() as f64 / wall.as_secs_f64(),
        errors.load(Ordering::Relaxed),
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
        lat.last().unwrap().as_secs_f64() * 1e3,
        idle,
        peak,
        after
    );
    assert_eq!(
        errors.load(Ordering::Relaxed),
        0,
        "first error: {first_err:?}"
    );
    assert_eq!(lat.len(), clients * calls);
    // "Returns to its idle level": within a quarter of idle plus 16 MiB of allocator slack.
    assert!(
        after <= idle + idle / 4 + 16 * 1024,
        "RSS after load {after} KiB vs idle {idle} KiB (peak {peak} KiB)"
    );
    // The server still answers normally.
    tool_call(&http, &url, &bearer, 999_999, "whoami", json!({}))
        .await
        .expect("after load");
}
