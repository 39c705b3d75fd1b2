//! The operators' endpoints of the real binary (issue 21 §3): `/healthz` and `/readyz` on the
//! MCP port without a token, `/readyz` following the store and the platform (and kept for its
//! cache period), `/metrics` only on its own listener and behind its own token, and the
//! exposition counting tool calls, refusals and platform errors with fixed labels and no
//! secret.

mod common;

use std::{process::Stdio, time::Duration};

use common::{PlainClient, World};
use factory_sandbox::{FaultEffect, FaultRule};
use rmcp::{
    ServiceExt,
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const MCP_TOKEN: &str = "mcp-bearer-token-0123456789abcdef";
const METRICS_TOKEN: &str = "metrics-scrape-token-fedcba9876543210";
/// A Hugging Face token's shape: the secret guard refuses it in any argument.
const HF: &str = "hf_Ht4sQrW+eK9mZ2xP7vL/bN3cJ8gF5dA1yU6";

/// A `serve --http` child process, its MCP URL and (when asked for) its metrics URL.
struct Gateway {
    child: tokio::process::Child,
    /// `http://127.0.0.1:PORT` of the MCP port.
    base: String,
    metrics: Option<String>,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

fn token_file(w: &World, name: &str, token: &str) -> String {
    common::write_token_file(w.home.path(), name, token)
        .display()
        .to_string()
}

async fn start(w: &World, env: Vec<(String, String)>, extra: &[&str]) -> Gateway {
    // This process's reqwest 0.13 (rmcp's HTTP client) needs a rustls provider.
    factory_platform::ensure_tls_provider();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
        .args(["serve", "--http", "127.0.0.1:0", "--workspace"])
        .arg(w.workspace.path())
        .args(extra)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let (base, metrics) = tokio::time::timeout(Duration::from_secs(30), async {
        let mut metrics = None;
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.split("serving metrics at ").nth(1) {
                metrics = Some(rest.trim().to_string());
            }
            if let Some(rest) = line.split("serving MCP at ").nth(1) {
                let base = rest.trim().trim_end_matches("/mcp").to_string();
                return (base, metrics);
            }
        }
        panic!("server exited before listening");
    })
    .await
    .expect("server listens within 30 s");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Gateway {
        child,
        base,
        metrics,
    }
}

async fn get(url: &str, token: Option<&str>) -> (u16, String) {
    let mut req = reqwest::Client::new().get(url);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    (status, resp.text().await.expect("body"))
}

async fn readyz(g: &Gateway) -> (u16, Value) {
    let (status, body) = get(&format!("{}/readyz", g.base), None).await;
    let v: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
    (status, v)
}

fn whoami_fault(effect: FaultEffect, status: Option<u16>, times: Option<u32>) -> FaultRule {
    let mut rule = FaultRule::new("/api/v1/user/whoami", effect);
    rule.method = Some("GET".into());
    rule.status = status;
    rule.times = times;
    rule
}

fn whoami_requests(w: &World) -> usize {
    w.sandbox
        .request_log()
        .iter()
        .filter(|r| r.path == "/api/v1/user/whoami")
        .count()
}

#[tokio::test]
async fn healthz_needs_no_token_and_readyz_follows_the_platform() {
    let w = World::new().await;
    let tf = token_file(&w, "mcp-token", MCP_TOKEN);
    let g = start(
        &w,
        w.env(0),
        &["--auth-token-file", &tf, "--ready-cache-ms", "0"],
    )
    .await;
    let (status, body) = get(&format!("{}/healthz", g.base), None).await;
    assert_eq!((status, body.as_str()), (200, r#"{"status":"ok"}"#));

    let (status, body) = readyz(&g).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"status": "ready", "store": "ok", "platform": "ok"})
    );

    // The platform resets every connection: not ready, and the body says which part failed.
    w.sandbox
        .add_fault(whoami_fault(FaultEffect::Reset, None, None));
    let (status, body) = readyz(&g).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        body,
        json!({"status": "not_ready", "store": "ok", "platform": "unreachable"})
    );
    // The probe is one request, never retried (a load balancer polls again anyway).
    let before = whoami_requests(&w);
    let _ = readyz(&g).await;
    assert_eq!(whoami_requests(&w), before + 1);

    // A failing platform (5xx) is not ready either; once it recovers, ready again.
    w.sandbox.clear_faults();
    w.sandbox
        .add_fault(whoami_fault(FaultEffect::Status, Some(500), Some(1)));
    let (status, body) = readyz(&g).await;
    assert_eq!((status, &body["platform"]), (503, &json!("server_error")));
    let (status, _) = readyz(&g).await;
    assert_eq!(status, 200);

    // The platform gone altogether.
    let World {
        sandbox,
        home,
        workspace,
    } = w;
    sandbox.shutdown().await;
    let (status, body) = readyz(&g).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["platform"], "unreachable");
    assert_eq!(body["store"], "ok");
    drop((g, home, workspace));
}

#[tokio::test]
async fn readyz_keeps_its_answer_so_polling_cannot_hammer_the_platform() {
    let w = World::new().await;
    let tf = token_file(&w, "mcp-token", MCP_TOKEN);
    let g = start(
        &w,
        w.env(0),
        &["--auth-token-file", &tf, "--ready-cache-ms", "60000"],
    )
    .await;
    let before = whoami_requests(&w);
    let polls = (0..20).map(|_| readyz(&g));
    for (status, _) in futures::future::join_all(polls).await {
        assert_eq!(status, 200);
    }
    assert_eq!(
        whoami_requests(&w),
        before + 1,
        "twenty polls, one platform request"
    );
    // Within the period a failure is not seen yet: the kept answer stands.
    w.sandbox
        .add_fault(whoami_fault(FaultEffect::Reset, None, None));
    assert_eq!(readyz(&g).await.0, 200);
    assert_eq!(whoami_requests(&w), before + 1);
}

#[tokio::test]
async fn readyz_says_when_the_store_is_not_usable() {
    let w = World::new().await;
    let tf = token_file(&w, "mcp-token", MCP_TOKEN);
    // The state directory's parent is a regular file: the store cannot be opened.
    let blocker = w.home.path().join("not-a-directory");
    std::fs::write(&blocker, "x").unwrap();
    let mut env = w.env(0);
    for (k, v) in env.iter_mut() {
        if k == "XDG_STATE_HOME" {
            *v = blocker.display().to_string();
        }
    }
    let g = start(
        &w,
        env,
        &["--auth-token-file", &tf, "--ready-cache-ms", "0"],
    )
    .await;
    assert_eq!(get(&format!("{}/healthz", g.base), None).await.0, 200);
    let (status, body) = readyz(&g).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(
        body,
        json!({"status": "not_ready", "store": "unavailable", "platform": "ok"})
    );
}

#[tokio::test]
async fn metrics_are_on_their_own_port_behind_their_own_token_and_hold_no_secret() {
    let w = World::new().await;
    let mcp_tf = token_file(&w, "mcp-token", MCP_TOKEN);
    let metrics_tf = token_file(&w, "metrics-token", METRICS_TOKEN);
    let g = start(
        &w,
        w.env(0),
        &[
            "--auth-token-file",
            &mcp_tf,
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-token-file",
            &metrics_tf,
        ],
    )
    .await;
    let metrics = g.metrics.clone().expect("a metrics listener");

    // Not on the MCP port, whatever the token.
    for token in [None, Some(MCP_TOKEN), Some(METRICS_TOKEN)] {
        let (status, _) = get(&format!("{}/metrics", g.base), token).await;
        assert_eq!(status, 404, "{token:?}");
    }
    // On its own port only with its own token: the MCP token does not open it.
    for token in [None, Some(MCP_TOKEN), Some("wrong")] {
        let (status, _) = get(&metrics, token).await;
        assert_eq!(status, 401, "{token:?}");
    }
    assert_eq!(get(&metrics, Some(METRICS_TOKEN)).await.0, 200);

    // A few tool calls: a success, a refusal, a platform error, a tool that does not exist.
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", g.base))
            .auth_header(MCP_TOKEN),
    );
    let client = PlainClient.serve(transport).await.expect("client connects");
    let r = common::call(&client, "whoami", json!({})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let toml = format!("name = \"x\"\n[trainer]\nhf_token = \"{HF}\"\n");
    let r = common::call(&client, "validate_config", json!({"config_toml": toml})).await;
    assert_eq!(r.is_error, Some(true), "the secret is refused: {r:?}");
    w.sandbox
        .add_fault(whoami_fault(FaultEffect::Status, Some(500), Some(1)));
    let r = common::call(&client, "whoami", json!({})).await;
    assert_eq!(r.is_error, Some(true), "the platform failed: {r:?}");
    let secret_name = format!("tool_{}", &HF[3..12]);
    let unknown = common::try_call(&client, &secret_name, json!({})).await;
    assert!(unknown.is_err(), "no such tool");
    client.cancel().await.unwrap();

    let (status, text) = get(&metrics, Some(METRICS_TOKEN)).await;
    assert_eq!(status, 200);
    let has = |line: &str| {
        assert!(
            text.lines().any(|l| l == line),
            "missing `{line}` in:\n{text}"
        )
    };
    has(r#"factory_tool_calls_total{tool="whoami",outcome="ok"} 1"#);
    has(r#"factory_tool_calls_total{tool="whoami",outcome="platform_error"} 1"#);
    has(r#"factory_tool_calls_total{tool="validate_config",outcome="refused"} 1"#);
    has(r#"factory_tool_calls_total{tool="unknown",outcome="unknown_tool"} 1"#);
    has(r#"factory_refusals_total{reason="secret_value"} 1"#);
    has(r#"factory_platform_errors_total{service="platform",status="500"} 1"#);
    assert!(
        text.lines().any(
            |l| l.starts_with(r#"factory_tool_call_duration_seconds_bucket{tool="whoami",le="#)
        ),
        "a latency histogram per tool:\n{text}"
    );
    has(r#"factory_tool_call_duration_seconds_count{tool="whoami"} 2"#);
    assert!(text.contains("# HELP factory_tool_calls_total"), "{text}");
    // Nothing secret and nothing the client made up.
    for secret in [
        w.key(0).as_str(),
        MCP_TOKEN,
        METRICS_TOKEN,
        HF,
        &HF[3..12],
        secret_name.as_str(),
    ] {
        assert!(!text.contains(secret), "{secret} leaked into:\n{text}");
    }
}

#[tokio::test]
async fn metrics_off_loopback_without_their_own_token_do_not_start() {
    let w = World::new().await;
    let tf = token_file(&w, "mcp-token", MCP_TOKEN);
    let same = token_file(&w, "same-token", MCP_TOKEN);
    for (extra, needle) in [
        (
            vec!["--metrics-listen", "0.0.0.0:0"],
            "--metrics-token-file",
        ),
        (
            vec![
                "--metrics-listen",
                "127.0.0.1:0",
                "--metrics-token-file",
                same.as_str(),
            ],
            "must differ",
        ),
    ] {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
            .args(["serve", "--http", "127.0.0.1:0", "--auth-token-file", &tf])
            .args(&extra)
            .env_clear()
            .envs(w.env(0))
            .stdin(Stdio::null())
            .output()
            .await
            .expect("run");
        assert_eq!(out.status.code(), Some(2), "{extra:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{extra:?}: {stderr}");
        assert!(!stderr.contains(MCP_TOKEN), "{stderr}");
    }
}

/// The exposition of `g`'s metrics listener.
async fn scrape(g: &Gateway) -> String {
    let (status, text) = get(g.metrics.as_deref().expect("metrics"), None).await;
    assert_eq!(status, 200);
    text
}

fn has_line(text: &str, line: &str) {
    assert!(
        text.lines().any(|l| l == line),
        "missing `{line}` in:\n{text}"
    );
}

async fn http_client(g: &Gateway) -> common::Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", g.base))
            .auth_header(MCP_TOKEN),
    );
    PlainClient.serve(transport).await.expect("client connects")
}

#[tokio::test]
async fn launches_budget_refusals_and_confirmations_are_counted() {
    let w = World::new().await;
    let tf = token_file(&w, "mcp-token", MCP_TOKEN);
    let team = factory_sandbox::TEAM_ALPHA_ID;

    // Plan mode (no person asked): a launch, its retry, and a plan over the step budget.
    let mut args = vec![
        "--auth-token-file",
        tf.as_str(),
        "--metrics-listen",
        "127.0.0.1:0",
        "--max-steps",
        "100",
    ];
    args.extend(common::plan_mode_args());
    let g = start(&w, w.env(0), &args).await;
    let c = http_client(&g).await;
    let plan = common::ok(
        &common::call(
            &c,
            "plan_run",
            json!({"config_toml": common::rl_config("ops-run", 5), "team_id": team}),
        )
        .await,
    );
    let launch = json!({"plan_id": plan["plan_id"]});
    let first = common::ok(&common::call(&c, "launch_run", launch.clone()).await);
    assert_eq!(first["deduplicated"], false);
    let again = common::ok(&common::call(&c, "launch_run", launch).await);
    assert_eq!(again["deduplicated"], true);
    let over = common::call(
        &c,
        "plan_run",
        json!({"config_toml": common::rl_config("ops-big", 500), "team_id": team}),
    )
    .await;
    assert!(common::err(&over).contains("max_steps"), "{over:?}");
    let twin = common::call(
        &c,
        "plan_run",
        json!({"config_toml": common::rl_config("ops-run", 5), "team_id": team}),
    )
    .await;
    assert!(common::err(&twin).contains("already active"), "{twin:?}");
    c.cancel().await.unwrap();
    let text = scrape(&g).await;
    has_line(&text, r#"factory_launches_total{result="dispatched"} 1"#);
    has_line(&text, r#"factory_launches_total{result="deduplicated"} 1"#);
    has_line(&text, r#"factory_refusals_total{reason="budget"} 1"#);
    has_line(&text, r#"factory_refusals_total{reason="duplicate"} 1"#);
    has_line(
        &text,
        r#"factory_tool_calls_total{tool="launch_run",outcome="ok"} 2"#,
    );
    has_line(
        &text,
        r#"factory_tool_calls_total{tool="plan_run",outcome="refused"} 2"#,
    );
    assert!(!text.contains("confirmations"), "nobody was asked: {text}");
    drop(g);

    // Human confirmation, a client without dialogs: the person is waited for.
    let g = start(
        &w,
        w.env(0),
        &["--auth-token-file", &tf, "--metrics-listen", "127.0.0.1:0"],
    )
    .await;
    let c = http_client(&g).await;
    let plan = common::ok(
        &common::call(
            &c,
            "plan_run",
            json!({"config_toml": common::rl_config("ops-human", 7), "team_id": team}),
        )
        .await,
    );
    let msg =
        common::err(&common::call(&c, "launch_run", json!({"plan_id": plan["plan_id"]})).await);
    assert!(msg.contains("factory-mcp approve"), "{msg}");
    c.cancel().await.unwrap();
    let text = scrape(&g).await;
    has_line(&text, r#"factory_confirmations_total{outcome="pending"} 1"#);
    has_line(
        &text,
        r#"factory_tool_calls_total{tool="launch_run",outcome="needs_person"} 1"#,
    );
    assert!(!text.contains("factory_launches_total"), "{text}");
}
