//! The HTTP gateway as an OAuth 2.1 resource server (issue 21 §2), against a real authorization
//! server: `oidc-provider` started by the test on loopback (`common::oidc`), issuing JWT access
//! tokens for the gateway's resource URI. Resource metadata; 401/403 with the right
//! `WWW-Authenticate`; audience, expiry and not-before; a key rotation picked up through an
//! unknown `kid`; scopes per tool; an assistant that cannot approve; the audit log's `sub`.

mod common;

use std::{
    process::Stdio,
    sync::{Arc, Mutex},
    time::Duration,
};

use common::{PlainClient, World, oidc::Provider};
use rmcp::{
    ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData,
    model::{
        ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
        Implementation, ProtocolVersion,
    },
    service::{RequestContext, RoleClient},
    transport::{
        StreamableHttpClientTransport, streamable_http_client::StreamableHttpClientTransportConfig,
    },
};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// A `serve --http` child process and where it serves.
struct Gateway {
    child: tokio::process::Child,
    /// `http://127.0.0.1:PORT`
    base: String,
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

impl Gateway {
    fn mcp(&self) -> String {
        format!("{}/mcp", self.base)
    }
}

/// A free loopback port (the gateway's resource URI must be known before it starts).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Write the policy file with `[oauth]` for `provider`, start the gateway on `port`.
async fn start_gateway(w: &World, provider: &Provider, port: u16, extra_policy: &str) -> Gateway {
    factory_platform::ensure_tls_provider();
    let policy = w.home.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "{extra_policy}\n[oauth]\nissuer = \"{}\"\nresource = \"{}\"\njwks_min_refresh_s = 0\n",
            provider.issuer, provider.resource
        ),
    )
    .expect("policy file");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
        .args([
            "serve",
            "--http",
            &format!("127.0.0.1:{port}"),
            "--workspace",
        ])
        .arg(w.workspace.path())
        .arg("--config")
        .arg(&policy)
        .env_clear()
        .envs(w.env(0))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("serving MCP at ") {
                return;
            }
        }
        panic!("gateway exited before listening");
    })
    .await
    .expect("gateway listens within 30 s");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Gateway {
        child,
        base: format!("http://127.0.0.1:{port}"),
    }
}

macro_rules! authed {
    ($url:expr, $token:expr) => {
        StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri($url.to_string()).auth_header($token),
        )
    };
}

fn init_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
}

fn call_body(tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
}

/// POST a JSON-RPC body with `token`; the status and the `WWW-Authenticate` header.
async fn post(g: &Gateway, token: Option<&str>, body: &Value) -> (u16, String) {
    let mut req = reqwest::Client::new()
        .post(g.mcp())
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-11-25")
        .json(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().await.expect("post");
    let www = resp
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().expect("ascii").to_owned())
        .unwrap_or_default();
    (resp.status().as_u16(), www)
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs()
}

/// Call `tool` through rmcp's HTTP client with `token`; `Ok(isError)` or the transport error.
async fn rmcp_call(g: &Gateway, token: &str, tool: &str) -> Result<bool, String> {
    let client = PlainClient
        .serve_with_lifecycle(
            authed!(g.mcp(), token.to_owned()),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .map_err(|e| e.to_string())?;
    let r = common::try_call(&client, tool, json!({})).await;
    let _ = client.cancel().await;
    r.map(|r| r.is_error == Some(true))
        .map_err(|e| e.to_string())
}

#[tokio::test]
async fn access_tokens_from_the_issuer_are_checked() {
    let w = World::new().await;
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let mut provider = Provider::start(w.home.path(), &resource, &[]).await;
    let g = start_gateway(&w, &provider, port, "").await;
    let metadata_url = format!("{}/.well-known/oauth-protected-resource/mcp", g.base);

    // Protected Resource Metadata, at the RFC 9728 path and at the root form.
    for url in [
        metadata_url.clone(),
        format!("{}/.well-known/oauth-protected-resource", g.base),
    ] {
        let doc: Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
        assert_eq!(doc["resource"], json!(resource), "{url}");
        assert_eq!(doc["authorization_servers"], json!([provider.issuer]));
        assert_eq!(
            doc["scopes_supported"],
            json!(["factory:read", "factory:launch", "factory:approve"])
        );
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    }

    // No token: 401 pointing at the metadata, without an error code.
    let (status, www) = post(&g, None, &init_body()).await;
    assert_eq!(status, 401);
    assert_eq!(www, format!("Bearer resource_metadata=\"{metadata_url}\""));

    // The assistant's token (client credentials): calls work.
    let assistant = provider
        .client_token("assistant", "factory:read factory:launch", &resource)
        .await
        .expect("assistant token");
    assert_eq!(rmcp_call(&g, &assistant, "whoami").await, Ok(false));
    assert_eq!(post(&g, Some(&assistant), &init_body()).await.0, 200);

    // A token for another resource: 401 invalid_token.
    let elsewhere = provider
        .client_token("assistant", "factory:read", "http://127.0.0.1:1/other")
        .await
        .expect("token for another resource");
    let (status, www) = post(&g, Some(&elsewhere), &init_body()).await;
    assert_eq!(status, 401);
    assert!(www.contains("error=\"invalid_token\""), "{www}");
    assert!(
        www.contains(&format!("resource_metadata=\"{metadata_url}\"")),
        "{www}"
    );
    assert!(www.contains("not issued for this resource"), "{www}");

    // Read scope only: reads work, planning is 403 insufficient_scope naming factory:launch.
    let reader = provider
        .client_token("reader", "factory:read", &resource)
        .await
        .expect("reader token");
    assert_eq!(rmcp_call(&g, &reader, "list_gpus").await, Ok(false));
    let (status, www) = post(&g, Some(&reader), &call_body("plan_run")).await;
    assert_eq!(status, 403);
    assert!(
        www.contains("error=\"insufficient_scope\", scope=\"factory:launch\""),
        "{www}"
    );
    assert!(
        www.contains(&format!("resource_metadata=\"{metadata_url}\"")),
        "{www}"
    );
    let (status, _) = post(&g, Some(&reader), &call_body("stop_run")).await;
    assert_eq!(status, 403);

    // A token holding none of this resource's scopes: 403 on anything.
    let outsider = provider
        .client_token("outsider", "", &resource)
        .await
        .expect("outsider token");
    let (status, www) = post(&g, Some(&outsider), &init_body()).await;
    assert_eq!(status, 403);
    assert!(www.contains("insufficient_scope"), "{www}");

    // Tokens minted with the provider's own key: valid, expired, not yet valid, wrong issuer.
    let t = now();
    let claims = |exp: u64, nbf: u64, iss: &str| {
        json!({"iss": iss, "sub": "minted", "aud": resource, "iat": t, "exp": exp, "nbf": nbf,
               "scope": "factory:read", "client_id": "assistant", "jti": format!("j{exp}{nbf}")})
    };
    let valid = provider
        .mint(claims(t + 600, t - 5, &provider.issuer))
        .await;
    assert_eq!(
        rmcp_call(&g, &valid, "list_gpus").await,
        Ok(false),
        "the minted control token"
    );
    for (what, token, reason) in [
        (
            "expired",
            provider
                .mint(claims(t - 3600, t - 7200, &provider.issuer))
                .await,
            "token expired",
        ),
        (
            "not yet valid",
            provider
                .mint(claims(t + 7200, t + 3600, &provider.issuer))
                .await,
            "token not yet valid",
        ),
        (
            "another issuer",
            provider
                .mint(claims(t + 600, t - 5, "http://127.0.0.1:1"))
                .await,
            "another issuer",
        ),
    ] {
        let (status, www) = post(&g, Some(&token), &init_body()).await;
        assert_eq!(status, 401, "{what}");
        assert!(www.contains("error=\"invalid_token\""), "{what}: {www}");
        assert!(www.contains(reason), "{what}: {www}");
    }

    // Rotation: the provider restarts with new keys; a token signed with a key the gateway has
    // not seen makes it fetch the keys again, and is accepted.
    provider.restart_with_rotated_keys().await;
    let rotated = provider
        .client_token("assistant", "factory:read factory:launch", &resource)
        .await
        .expect("token after rotation");
    assert_eq!(rmcp_call(&g, &rotated, "whoami").await, Ok(false));
    // The old key is gone from the issuer's set: its tokens no longer pass once refetched.
    let (status, _) = post(&g, Some(&assistant), &init_body()).await;
    assert_eq!(status, 401, "a token signed with a retired key");

    // The audit log names who called.
    drop(g);
    let store = factory_policies::store::Store::open(&w.state_dir()).expect("store");
    let entries = store.audit_entries(1000).expect("audit");
    let calls: Vec<_> = entries
        .iter()
        .filter(|e| e.event.action == "call")
        .map(|e| (e.event.actor.as_str(), e.event.subject.as_deref()))
        .collect();
    assert!(calls.contains(&("whoami", Some("assistant"))), "{calls:?}");
    assert!(calls.contains(&("list_gpus", Some("reader"))), "{calls:?}");
    assert!(calls.contains(&("list_gpus", Some("minted"))), "{calls:?}");
    assert!(calls.iter().all(|(_, s)| s.is_some()), "{calls:?}");
}

/// A client with a form dialog that says yes and records what it was shown.
#[derive(Clone, Default)]
struct SaysYes {
    seen: Arc<Mutex<Vec<String>>>,
}

impl ClientHandler for SaysYes {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_elicitation().build(),
            Implementation::new("says-yes", "0.0.1"),
        )
    }
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams { message, .. } = &request {
            self.seen.lock().unwrap().push(message.clone());
        }
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"confirm": true})))
    }
}

#[tokio::test]
async fn an_assistant_without_the_approving_scope_plans_but_never_approves() {
    let w = World::new().await;
    let port = free_port();
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let provider = Provider::start(w.home.path(), &resource, &[]).await;
    let g = start_gateway(&w, &provider, port, "").await;
    let connect = |token: String, handler: SaysYes| {
        let url = g.mcp();
        async move {
            handler
                .serve_with_lifecycle(
                    authed!(url, token),
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                )
                .await
                .expect("connect")
        }
    };

    // The assistant (read + launch) plans and asks to launch; its client would say yes to a
    // form, but none is shown: a person must approve.
    let assistant = SaysYes::default();
    let token = provider
        .client_token("assistant", "factory:read factory:launch", &resource)
        .await
        .unwrap();
    let c = connect(token, assistant.clone()).await;
    let p = common::ok(
        &common::call(
            &c,
            "plan_run",
            json!({"config_toml": common::rl_config("oauth-run", 5), "team_id": factory_sandbox::TEAM_ALPHA_ID}),
        )
        .await,
    );
    let id = p["plan_id"].as_str().unwrap().to_owned();
    let msg = common::err(&common::call(&c, "launch_run", json!({"plan_id": id})).await);
    assert!(msg.contains(&format!("factory-mcp approve {id}")), "{msg}");
    assert!(
        assistant.seen.lock().unwrap().is_empty(),
        "no form was shown"
    );
    assert_eq!(w.sandbox.create_requests(), 0, "nothing launched");
    c.cancel().await.unwrap();

    // A caller holding the approving scope is asked, and its yes launches.
    let approver = SaysYes::default();
    let token = provider
        .client_token(
            "approver-bot",
            "factory:read factory:launch factory:approve",
            &resource,
        )
        .await
        .unwrap();
    let c = connect(token, approver.clone()).await;
    let launched = common::ok(&common::call(&c, "launch_run", json!({"plan_id": id})).await);
    assert_eq!(launched["deduplicated"], false, "{launched}");
    assert_eq!(approver.seen.lock().unwrap().len(), 1, "the form was shown");
    assert_eq!(w.sandbox.create_requests(), 1);
    c.cancel().await.unwrap();

    // The audit log: who planned, who asked, who decided.
    drop(g);
    let store = factory_policies::store::Store::open(&w.state_dir()).expect("store");
    let entries = store.audit_entries(1000).expect("audit");
    let rows: Vec<_> = entries
        .iter()
        .map(|e| {
            (
                e.event.actor.as_str(),
                e.event.action.as_str(),
                e.event.subject.as_deref(),
            )
        })
        .collect();
    assert!(
        rows.contains(&("plan_run", "call", Some("assistant"))),
        "{rows:?}"
    );
    assert!(
        rows.contains(&("launch_run", "call", Some("assistant"))),
        "{rows:?}"
    );
    assert!(
        rows.contains(&("launch_run", "call", Some("approver-bot"))),
        "{rows:?}"
    );
    assert!(
        rows.contains(&("input_required", "decide", Some("approver-bot"))),
        "the decision names who approved: {rows:?}"
    );
    assert!(
        entries
            .iter()
            .filter(|e| e.event.action != "call" && e.event.plan_id.as_deref() == Some(&id))
            .all(|e| e.event.subject.is_some()),
        "every action on the plan names its subject: {rows:?}"
    );
}
