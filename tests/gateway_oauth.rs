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
    start_gateway_with(w, provider, port, extra_policy, "", w.env(0)).await
}

/// [`start_gateway`], with more keys in `[oauth]` and the given environment.
async fn start_gateway_with(
    w: &World,
    provider: &Provider,
    port: u16,
    extra_policy: &str,
    oauth_extra: &str,
    env: Vec<(String, String)>,
) -> Gateway {
    factory_platform::ensure_tls_provider();
    let policy = w.home.path().join("policy.toml");
    std::fs::write(
        &policy,
        format!(
            "{extra_policy}\n[oauth]\nissuer = \"{}\"\nresource = \"{}\"\njwks_min_refresh_s = 0\n{oauth_extra}\n",
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
        .envs(env)
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

// ----- the approval page, signed in with the issuer ------------------------------------------

/// A client that declares URL elicitation: every page address it is asked to open goes to the
/// test (the person's browser), and it says "opened".
#[derive(Clone)]
struct Opener {
    urls: tokio::sync::mpsc::UnboundedSender<String>,
}

impl ClientHandler for Opener {
    fn get_info(&self) -> ClientConfig {
        use rmcp::model::{
            ElicitationCapability, FormElicitationCapability, UrlElicitationCapability,
        };
        ClientConfig::new(
            ClientCapabilities::builder()
                .enable_elicitation_with(
                    ElicitationCapability::new()
                        .with_form(FormElicitationCapability::new())
                        .with_url(UrlElicitationCapability::new()),
                )
                .build(),
            Implementation::new("url-client", "0.0.1"),
        )
    }
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match request {
            ElicitRequestParams::UrlElicitationParams { url, .. } => {
                let _ = self.urls.send(url);
                Ok(ElicitResult::new(ElicitationAction::Accept))
            }
            _ => Err(ErrorData::invalid_request(
                "an assistant without the approving scope was shown a form",
                None,
            )),
        }
    }
}

/// A person's browser without JavaScript: follows redirects itself and keeps cookies per
/// host:port (honouring `Max-Age=0`; paths are not needed here).
struct Browser {
    http: reqwest::Client,
    cookies: std::collections::HashMap<String, std::collections::BTreeMap<String, String>>,
    /// Every address visited, in order.
    visited: Vec<String>,
}

struct Page {
    status: u16,
    url: reqwest::Url,
    body: String,
}

impl Browser {
    fn new() -> Self {
        Browser {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: Default::default(),
            visited: Vec::new(),
        }
    }

    fn key(url: &reqwest::Url) -> String {
        format!(
            "{}:{}",
            url.host_str().unwrap_or(""),
            url.port_or_known_default().unwrap_or(0)
        )
    }

    /// A request, then every redirect as a GET; the last answer.
    async fn go(
        &mut self,
        url: &str,
        form: Option<Vec<(&str, &str)>>,
        origin: Option<&str>,
    ) -> Page {
        let mut url = reqwest::Url::parse(url).expect("url");
        let mut form = form;
        for _ in 0..20 {
            self.visited.push(url.to_string());
            let mut req = match &form {
                Some(f) => self.http.post(url.clone()).form(f),
                None => self.http.get(url.clone()),
            };
            if let Some(o) = origin.filter(|_| form.is_some()) {
                req = req.header("origin", o);
            }
            let jar = self.cookies.entry(Self::key(&url)).or_default();
            if !jar.is_empty() {
                let c: Vec<String> = jar.iter().map(|(k, v)| format!("{k}={v}")).collect();
                req = req.header("cookie", c.join("; "));
            }
            let resp = req.send().await.expect("browser request");
            let status = resp.status().as_u16();
            for sc in resp.headers().get_all("set-cookie") {
                let sc = sc.to_str().unwrap();
                let (nv, attrs) = sc.split_once(';').unwrap_or((sc, ""));
                let (n, v) = nv.split_once('=').unwrap();
                if v.is_empty() || attrs.to_ascii_lowercase().contains("max-age=0") {
                    jar.remove(n.trim());
                } else {
                    jar.insert(n.trim().to_owned(), v.to_owned());
                }
            }
            let location = resp
                .headers()
                .get("location")
                .map(|l| l.to_str().unwrap().to_owned());
            match (status, location) {
                (301..=303 | 307 | 308, Some(l)) => {
                    url = url.join(&l).expect("location");
                    form = None;
                }
                _ => {
                    return Page {
                        status,
                        url,
                        body: resp.text().await.unwrap(),
                    };
                }
            }
        }
        panic!("too many redirects: {:?}", self.visited);
    }

    /// Open the page address, sign in at the provider's development login form as `login`,
    /// give consent if asked; the page it lands on.
    async fn sign_in_and_open(&mut self, page_url: &str, login: &str) -> Page {
        let form_action = |p: &Page| {
            let at = p.body.find("<form").expect("a form");
            let rest = &p.body[at..];
            let a = rest.find("action=\"").unwrap() + 8;
            let b = rest[a..].find('"').unwrap();
            p.url.join(&rest[a..a + b]).unwrap().to_string()
        };
        let login_form = self.go(page_url, None, None).await;
        assert_eq!(login_form.status, 200, "{}", login_form.body);
        assert!(
            login_form.body.contains("name=\"login\""),
            "the provider's login form: {} {}",
            login_form.url,
            login_form.body
        );
        let mut page = self
            .go(
                &form_action(&login_form),
                Some(vec![
                    ("prompt", "login"),
                    ("login", login),
                    ("password", "any"),
                ]),
                None,
            )
            .await;
        if page.body.contains("name=\"prompt\" value=\"consent\"") {
            page = self
                .go(&form_action(&page), Some(vec![("prompt", "consent")]), None)
                .await;
        }
        page
    }
}

#[tokio::test]
async fn a_person_signs_in_with_the_issuer_on_the_page_and_only_an_approver_decides() {
    let w = World::new().await;
    let port = free_port();
    let origin = format!("http://127.0.0.1:{port}");
    let resource = format!("{origin}/mcp");
    let provider = Provider::start(
        w.home.path(),
        &resource,
        &[format!("{origin}/approve/callback")],
    )
    .await;
    let (g, c, id, url) = page_gateway_and_plan(&w, &provider, port, "signin-run").await;

    // Without a session the page sends the browser to the issuer, with PKCE, state, nonce and
    // the resource; nothing of the plan is shown.
    let bare = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(&url)
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status().as_u16(), 303);
    let to = reqwest::Url::parse(bare.headers()["location"].to_str().unwrap()).unwrap();
    assert!(to.as_str().starts_with(&provider.issuer), "{to}");
    let q: std::collections::HashMap<_, _> = to.query_pairs().into_owned().collect();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], "page");
    assert_eq!(q["redirect_uri"], format!("{origin}/approve/callback"));
    assert_eq!(q["scope"], "openid factory:approve");
    assert_eq!(q["resource"], resource);
    assert_eq!(q["code_challenge_method"], "S256");
    assert!(q["state"].len() >= 43 && q["nonce"].len() >= 43 && q["code_challenge"].len() == 43);
    let set_cookie = bare.headers()["set-cookie"].to_str().unwrap();
    assert!(
        set_cookie.contains("HttpOnly")
            && set_cookie.contains("SameSite=Lax")
            && set_cookie.contains("Path=/approve"),
        "{set_cookie}"
    );
    // A callback that was not started here is refused.
    let forged = reqwest::get(format!(
        "{origin}/approve/callback?code=x&state={}",
        q["state"]
    ))
    .await
    .unwrap();
    assert_eq!(forged.status().as_u16(), 403);

    // A person without the approving scope signs in and is refused; nothing is recorded.
    let mut viewer = Browser::new();
    let refused = viewer.sign_in_and_open(&url, "viewer-bob").await;
    assert_eq!(refused.status, 403, "{} {}", refused.url, refused.body);
    assert!(
        refused.body.contains("Not allowed to approve"),
        "{}",
        refused.body
    );
    assert!(refused.body.contains("factory:approve"), "{}", refused.body);
    assert!(
        !refused.body.contains("signin-run"),
        "nothing of the plan is shown"
    );
    assert!(
        viewer
            .visited
            .iter()
            .any(|u| u.starts_with(&format!("{origin}/approve/callback?"))),
        "{:?}",
        viewer.visited
    );
    let (_, plan, token) = page_parts(&url);
    let post = viewer
        .go(
            &format!("{origin}/approve/{plan}"),
            Some(vec![("t", token.as_str()), ("decision", "approve")]),
            Some(&origin),
        )
        .await;
    assert_eq!(post.status, 403, "{}", post.body);

    // A person with it signs in, sees the plan and approves.
    let mut alice = Browser::new();
    let page = alice.sign_in_and_open(&url, "alice").await;
    assert_eq!(page.status, 200, "{} {}", page.url, page.body);
    assert_eq!(page.url.as_str(), url, "back on the page it started from");
    assert!(page.body.contains("signin-run"), "{}", page.body);
    // The decision needs the page's own Origin, as before.
    let cross = alice
        .go(
            &format!("{origin}/approve/{plan}"),
            Some(vec![("t", token.as_str()), ("decision", "approve")]),
            Some("http://evil.example"),
        )
        .await;
    assert_eq!(cross.status, 403, "{}", cross.body);
    let done = alice
        .go(
            &format!("{origin}/approve/{plan}"),
            Some(vec![("t", token.as_str()), ("decision", "approve")]),
            Some(&origin),
        )
        .await;
    assert_eq!(done.status, 200, "{}", done.body);
    assert!(done.body.contains("Approved"), "{}", done.body);

    // The assistant's next call launches, once; the decision names the person who signed in.
    let store = launched_once_as_alice_decided(&w, c, g, &id).await;
    // Every page event on the plan names who was signed in: the refused viewer, then alice.
    let page_rows: Vec<_> = store
        .audit_entries(1000)
        .expect("audit")
        .into_iter()
        .filter(|e| e.event.actor == "page" && e.event.plan_id.as_deref() == Some(&id))
        .map(|e| (e.event.action, e.event.subject))
        .collect();
    assert!(
        page_rows.contains(&(
            "page_show_refused".to_owned(),
            Some("viewer-bob".to_owned())
        )),
        "{page_rows:?}"
    );
    assert!(
        page_rows.contains(&("page_shown".to_owned(), Some("alice".to_owned()))),
        "{page_rows:?}"
    );
    assert!(page_rows.iter().all(|(_, s)| s.is_some()), "{page_rows:?}");
}

/// A gateway with page sign-in on `port`, an assistant (read + launch, no approving scope)
/// connected with URL elicitation, a plan named `run` it asked to launch: the gateway, the
/// client, the plan id and the page address the assistant was given.
async fn page_gateway_and_plan(
    w: &World,
    provider: &Provider,
    port: u16,
    run: &str,
) -> (
    Gateway,
    rmcp::service::RunningService<RoleClient, Opener>,
    String,
    String,
) {
    let origin = format!("http://127.0.0.1:{port}");
    let resource = provider.resource.clone();
    let mut env = w.env(0);
    env.push(("FACTORY_MCP_PAGE_WAIT_MS".into(), "0".into()));
    let g = start_gateway_with(w, provider, port, "", "page_client_id = \"page\"", env).await;

    // The assistant (read + launch, no approving scope) plans and asks to launch: it is given
    // the page's address to open, never a form.
    let (tx, mut urls) = tokio::sync::mpsc::unbounded_channel();
    let token = provider
        .client_token("assistant", "factory:read factory:launch", &resource)
        .await
        .unwrap();
    let c = Opener { urls: tx }
        .serve_with_lifecycle(
            authed!(g.mcp(), token),
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("connect");
    let p = common::ok(
        &common::call(
            &c,
            "plan_run",
            json!({"config_toml": common::rl_config(run, 5), "team_id": factory_sandbox::TEAM_ALPHA_ID}),
        )
        .await,
    );
    let id = p["plan_id"].as_str().unwrap().to_owned();
    let msg = common::err(&common::call(&c, "launch_run", json!({"plan_id": id})).await);
    assert!(msg.contains("Not yet approved"), "{msg}");
    let url = urls.recv().await.expect("the page address");
    assert!(
        url.starts_with(&format!("{origin}/approve/{id}?t=")),
        "{url}"
    );

    (g, c, id, url)
}

/// Sign in at the provider's development login form in Chromium, giving consent if asked.
async fn chromium_sign_in(
    b: &common::chromium::Browser,
    provider: &Provider,
    url: &str,
    login: &str,
) {
    b.goto(url).await;
    let at = b.current_url().await;
    assert!(at.starts_with(&provider.issuer), "sent to the issuer: {at}");
    b.type_into("input[name=login]", login).await;
    b.type_into("input[name=password]", "any").await;
    b.click("button[type=submit]").await;
    // A click returns once dispatched, not once the form's navigation is done: the login and
    // the consent forms share one URL, so wait for the login form to be gone before reading
    // where the browser is (else the consent form can be taken for the login one, never sent).
    let mut polls = 0;
    while b.find("input[name=login]").await.is_some() {
        polls += 1;
        assert!(polls < 10_000, "the login form never went away");
    }
    if b.current_url().await.starts_with(&provider.issuer) {
        // The development consent form.
        b.click("button[type=submit]").await;
        let mut polls = 0;
        while b.current_url().await.starts_with(&provider.issuer) {
            polls += 1;
            assert!(
                polls < 10_000,
                "the consent form never sent the browser back"
            );
        }
    }
}

#[tokio::test]
async fn in_headless_chromium_a_person_signs_in_approves_and_one_run_starts() {
    let w = World::new().await;
    let port = free_port();
    let origin = format!("http://127.0.0.1:{port}");
    let provider = Provider::start(
        w.home.path(),
        &format!("{origin}/mcp"),
        &[format!("{origin}/approve/callback")],
    )
    .await;
    let (g, c, id, url) = page_gateway_and_plan(&w, &provider, port, "chromium-run").await;

    // Someone without the approving scope signs in and is refused.
    let b = common::chromium::Browser::start().await;
    chromium_sign_in(&b, &provider, &url, "viewer-carol").await;
    assert!(
        b.current_url()
            .await
            .starts_with(&format!("{origin}/approve/"))
    );
    assert!(b.body_text().await.contains("Not allowed to approve"));
    assert!(b.find("#approve").await.is_none(), "no Approve button");
    b.quit().await;

    // A person holding it signs in, lands on the page and approves.
    let b = common::chromium::Browser::start().await;
    chromium_sign_in(&b, &provider, &url, "alice").await;
    assert_eq!(b.current_url().await, url, "back on the page");
    assert!(b.text("#run-name").await.contains("chromium-run"));
    b.click("#approve").await;
    let said = b.text("#message").await;
    assert!(said.starts_with("Approved"), "{said}");
    b.quit().await;

    launched_once_as_alice_decided(&w, c, g, &id).await;
}

/// After a page approval: the assistant's `launch_run` starts exactly one run, and the audit
/// log's one decision on the plan is the page's, under alice's `sub`. The gateway is stopped
/// (the store is read after); the store is returned for more checks.
async fn launched_once_as_alice_decided(
    w: &World,
    c: rmcp::service::RunningService<RoleClient, Opener>,
    g: Gateway,
    id: &str,
) -> factory_policies::store::Store {
    let launched = common::ok(&common::call(&c, "launch_run", json!({"plan_id": id})).await);
    assert_eq!(launched["deduplicated"], false, "{launched}");
    assert_eq!(w.sandbox.create_requests(), 1, "exactly one run");
    c.cancel().await.unwrap();
    drop(g);
    let store = factory_policies::store::Store::open(&w.state_dir()).expect("store");
    let decides: Vec<_> = store
        .audit_entries(1000)
        .expect("audit")
        .into_iter()
        .filter(|e| e.event.action == "decide" && e.event.plan_id.as_deref() == Some(id))
        .map(|e| (e.event.actor, e.event.subject))
        .collect();
    assert_eq!(decides, vec![("page".to_owned(), Some("alice".to_owned()))]);
    store
}

/// `http://host/approve/PLAN?t=TOKEN` → (origin, plan, token).
fn page_parts(url: &str) -> (String, String, String) {
    let u = reqwest::Url::parse(url).unwrap();
    let plan = u.path().rsplit('/').next().unwrap().to_owned();
    let token = u
        .query_pairs()
        .find(|(k, _)| k == "t")
        .map(|(_, v)| v.into_owned())
        .unwrap();
    (u.origin().ascii_serialization(), plan, token)
}
