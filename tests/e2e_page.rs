//! The approval page (issue 16 §2) end to end: the real binary over stdio, rmcp's client
//! declaring URL-mode elicitation in both eras, the page on its loopback port, and headless
//! Chromium (JavaScript off) driven through chromedriver's W3C WebDriver API. A missing
//! browser fails with an install hint; it is never skipped.

mod common;

use std::process::Stdio;

use common::{Era, World, call, chromium::Browser, connect, err, ok, rl_config as config};
use factory_policies::store::Store;
use rmcp::{
    ClientHandler, ErrorData,
    model::{
        CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
        ElicitationAction, ElicitationCapability, FormElicitationCapability, Implementation,
        UrlElicitationCapability,
    },
    service::{RequestContext, RoleClient},
};
use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;

const TEAM: &str = factory_sandbox::TEAM_ALPHA_ID;

/// A client that declares form and URL elicitation. Every URL it is asked to open goes to
/// the test (as a person's browser would get it); it answers "opened" or "not opened".
#[derive(Clone)]
struct Opener {
    urls: mpsc::UnboundedSender<String>,
    open: bool,
}

impl ClientHandler for Opener {
    fn get_info(&self) -> ClientConfig {
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
            ElicitRequestParams::UrlElicitationParams { url, message, .. } => {
                assert!(!message.contains(&url), "the message repeats the URL");
                let _ = self.urls.send(url);
                Ok(ElicitResult::new(if self.open {
                    ElicitationAction::Accept
                } else {
                    ElicitationAction::Decline
                }))
            }
            _ => Err(ErrorData::invalid_request(
                "a client that declared URL mode was sent a form",
                None,
            )),
        }
    }
}

fn opener(open: bool) -> (Opener, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Opener { urls: tx, open }, rx)
}

fn runs_named(w: &World, name: &str) -> Vec<Value> {
    w.sandbox
        .runs()
        .into_iter()
        .filter(|r| r["run"]["name"] == name)
        .map(|r| r["run"].clone())
        .collect()
}

/// The parts of a page URL: origin, plan id, token.
fn parts(url: &str) -> (String, String, String) {
    let u = reqwest::Url::parse(url).expect("page URL");
    assert_eq!(
        u.host_str(),
        Some("127.0.0.1"),
        "the page is on loopback: {url}"
    );
    let origin = format!("http://127.0.0.1:{}", u.port().expect("port"));
    let plan = u
        .path()
        .strip_prefix("/approve/")
        .expect("page path")
        .to_string();
    let token = u
        .query_pairs()
        .find(|(k, _)| k == "t")
        .map(|(_, v)| v.into_owned())
        .expect("token");
    (origin, plan, token)
}

/// A plain HTTP client of the page (no cookie jar: cookies are passed by hand).
struct PageClient {
    http: reqwest::Client,
}

struct Answer {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: String,
}

impl Answer {
    /// The page cookie it set (`name=value`).
    fn cookie(&self) -> Option<String> {
        self.headers
            .get(reqwest::header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .map(str::to_owned)
    }
}

impl PageClient {
    fn new() -> Self {
        PageClient {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
        }
    }

    async fn answer(resp: reqwest::Response) -> Answer {
        Answer {
            status: resp.status().as_u16(),
            headers: resp.headers().clone(),
            body: resp.text().await.unwrap(),
        }
    }

    async fn get(&self, url: &str) -> Answer {
        Self::answer(self.http.get(url).send().await.expect("GET page")).await
    }

    async fn post(
        &self,
        origin: &str,
        plan: &str,
        token: &str,
        decision: &str,
        cookie: Option<&str>,
        sent_origin: Option<&str>,
    ) -> Answer {
        let mut req = self
            .http
            .post(format!("{origin}/approve/{plan}"))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("t={token}&decision={decision}"));
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        if let Some(o) = sent_origin {
            req = req.header("origin", o);
        }
        Self::answer(req.send().await.expect("POST page")).await
    }

    /// Open the page and decide as its buttons would.
    async fn decide(&self, url: &str, decision: &str) -> Answer {
        let (origin, plan, token) = parts(url);
        let shown = self.get(url).await;
        assert_eq!(shown.status, 200, "{}", shown.body);
        let cookie = shown.cookie().expect("page cookie");
        self.post(
            &origin,
            &plan,
            &token,
            decision,
            Some(&cookie),
            Some(&origin),
        )
        .await
    }
}

// ----- the browser -------------------------------------------------------------------------

/// The luminance variance of a PNG: near zero for a blank page.
fn pixel_variance(png_bytes: &[u8]) -> f64 {
    let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
    let mut reader = decoder.read_info().expect("PNG header");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("PNG frame");
    let channels = info.color_type.samples();
    let px: Vec<f64> = buf[..info.buffer_size()]
        .chunks(channels)
        .map(|c| {
            let (r, g, b) = if channels >= 3 {
                (c[0], c[1], c[2])
            } else {
                (c[0], c[0], c[0])
            };
            0.299 * f64::from(r) + 0.587 * f64::from(g) + 0.114 * f64::from(b)
        })
        .collect();
    let mean = px.iter().sum::<f64>() / px.len() as f64;
    px.iter().map(|p| (p - mean).powi(2)).sum::<f64>() / px.len() as f64
}

// ----- the tests ---------------------------------------------------------------------------

#[tokio::test]
async fn a_person_approves_on_the_page_in_a_real_browser_and_exactly_one_run_starts() {
    let w = World::new().await;
    let (handler, mut urls) = opener(true);
    let c = connect(handler, w.transport(w.env(0), &[]), Era::Legacy).await;
    // An earlier plan of the same run name: the page shows what changed since.
    ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("page-run", 5), "team_id": TEAM}),
    )
    .await);
    let p = ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("page-run", 7), "team_id": TEAM}),
    )
    .await);
    let plan_id = p["plan_id"].as_str().unwrap().to_string();
    let per_hour = p["price_per_hour_usd"].as_f64().expect("a priced plan");

    // launch_run waits for the page's decision (up to 120 s) while the person decides.
    let peer = c.peer().clone();
    let args = json!({"plan_id": plan_id}).as_object().unwrap().clone();
    let launch = tokio::spawn(async move {
        peer.call_tool(CallToolRequestParams::new("launch_run").with_arguments(args))
            .await
    });
    let url = urls
        .recv()
        .await
        .expect("the client was asked to open the page");
    let (origin, path_plan, token) = parts(&url);
    assert_eq!(path_plan, plan_id);

    // The page's headers, as a plain client sees them.
    let pc = PageClient::new();
    let head = pc.get(&url).await;
    assert_eq!(head.status, 200, "{}", head.body);
    let csp = head.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'")
            && csp.contains("form-action 'self'")
            && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert_eq!(head.headers["x-frame-options"], "DENY");
    assert_eq!(head.headers["cache-control"], "no-store");
    assert_eq!(head.headers["referrer-policy"], "same-origin");
    let cookie = head.cookie().expect("a page cookie");
    let set_cookie = head.headers["set-cookie"].to_str().unwrap();
    assert!(
        set_cookie.contains("SameSite=Strict") && set_cookie.contains("HttpOnly"),
        "{set_cookie}"
    );
    assert!(!head.body.contains("<script"), "no script on the page");

    let b = Browser::start().await;
    b.goto(&url).await;
    // JavaScript is off in this browser: <noscript> content is part of the DOM.
    assert!(
        b.find("#noscript").await.is_some(),
        "the browser runs JavaScript"
    );
    let price = b.text("#price").await;
    assert!(price.contains(&format!("${per_hour:.2}")), "{price}");
    let gpus = b.text("#gpus").await;
    assert!(gpus.starts_with("1 trainer + 1 inference = 2 ×"), "{gpus}");
    let owner = b.text("#owner").await;
    assert!(owner.contains(TEAM) && owner.contains("Alpha"), "{owner}");
    assert!(b.text("#length").await.contains("max_steps = 7"));
    assert!(b.text("#run-name").await.contains("page-run"));
    let diff = b.text("#difference").await;
    assert!(
        diff.contains("- max_steps = 5") && diff.contains("+ max_steps = 7"),
        "{diff}"
    );
    assert!(b.text("#config").await.contains("max_steps = 7"));
    let shot = b.screenshot().await;
    let variance = pixel_variance(&shot);
    assert!(
        variance > 50.0,
        "the screenshot is blank (variance {variance})"
    );
    let browser_cookie = b
        .page_cookie()
        .await
        .expect("the browser holds the page cookie");
    assert_ne!(browser_cookie, cookie, "each showing binds a fresh cookie");
    b.click("#approve").await;
    let said = b.text("#message").await;
    assert!(said.starts_with("Approved"), "{said}");
    b.quit().await;

    let r = launch.await.unwrap().expect("launch_run answers");
    let out = ok(&r);
    assert_eq!(out["deduplicated"], false);
    assert_eq!(runs_named(&w, "page-run").len(), 1);
    assert_eq!(w.sandbox.create_requests(), 1);

    // The token is spent: the same post again, with the browser's own cookie, is refused.
    let again = pc
        .post(
            &origin,
            &plan_id,
            &token,
            "approve",
            Some(&browser_cookie),
            Some(&origin),
        )
        .await;
    assert_eq!(again.status, 410, "{}", again.body);
    assert!(again.body.contains("already used"));
    // A second launch_run of the plan is the same run.
    let twice = ok(&call(&c, "launch_run", json!({"plan_id": plan_id})).await);
    assert_eq!(twice["run_id"], out["run_id"]);
    assert_eq!(w.sandbox.create_requests(), 1);

    // The decision is audited with its channel.
    let store = Store::open(&w.state_dir()).unwrap();
    let entries = store.audit_entries(200).unwrap();
    assert!(
        entries.iter().any(|e| e.event.actor == "page"
            && e.event.action == "decide"
            && e.event.outcome == "approved"
            && e.event.plan_id.as_deref() == Some(plan_id.as_str())),
        "{entries:?}"
    );
    c.cancel().await.unwrap();
}

/// A server whose calls do not wait for the page (the wait is a test knob).
fn no_wait_env(w: &World) -> Vec<(String, String)> {
    let mut env = w.env(0);
    env.push(("FACTORY_MCP_PAGE_WAIT_MS".into(), "0".into()));
    env
}

#[tokio::test]
async fn the_page_refuses_foreign_reused_cross_site_and_changed_and_the_next_call_picks_up_a_decision()
 {
    let w = World::new().await;
    let (handler, mut urls) = opener(true);
    // The 2026-07-28 era: the URL request travels in an input-required round trip.
    let c = connect(handler, w.transport(no_wait_env(&w), &[]), Era::Modern).await;
    std::fs::write(w.workspace_path().join("a.toml"), config("file-run", 5)).unwrap();
    let pa = ok(&call(
        &c,
        "plan_run",
        json!({"config_path": "a.toml", "team_id": TEAM}),
    )
    .await);
    let pb = ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("b-run", 6), "team_id": TEAM}),
    )
    .await);
    let (a, b) = (
        pa["plan_id"].as_str().unwrap(),
        pb["plan_id"].as_str().unwrap(),
    );

    // Opened, but nobody decided yet: "not yet approved — call again"; no token in the error.
    let msg = err(&call(&c, "launch_run", json!({"plan_id": a})).await);
    assert!(
        msg.contains("Not yet approved") && msg.contains("call"),
        "{msg}"
    );
    let url_a = urls.recv().await.unwrap();
    let (origin, _, token_a) = parts(&url_a);
    assert!(
        !msg.contains(&token_a) && !msg.contains("/approve/"),
        "{msg}"
    );
    err(&call(&c, "launch_run", json!({"plan_id": b})).await);
    let url_b = urls.recv().await.unwrap();
    let (_, _, token_b) = parts(&url_b);

    let pc = PageClient::new();
    // Another plan's token.
    let foreign = pc.get(&format!("{origin}/approve/{b}?t={token_a}")).await;
    assert_eq!(foreign.status, 404);
    assert!(foreign.body.contains("another plan"), "{}", foreign.body);
    // A cross-site post: wrong Origin, or no page cookie, or no Origin at all.
    let shown = pc.get(&url_b).await;
    let cookie_b = shown.cookie().unwrap();
    for (cookie, sent_origin) in [
        (Some(cookie_b.as_str()), Some("http://evil.example")),
        (None, Some(origin.as_str())),
        (Some(cookie_b.as_str()), None),
    ] {
        let r = pc
            .post(&origin, b, &token_b, "approve", cookie, sent_origin)
            .await;
        assert_eq!(r.status, 403, "{cookie:?} {sent_origin:?}: {}", r.body);
    }
    // A foreign Host (DNS rebinding) is not answered.
    let rebound = pc
        .http
        .get(&url_b)
        .header("host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status().as_u16(), 421);
    assert!(runs_named(&w, "b-run").is_empty());
    assert!(
        Store::open(&w.state_dir())
            .unwrap()
            .decision(b)
            .unwrap()
            .is_none()
    );

    // The config file changed after the page was made: neither shown nor approvable.
    let shown_a = pc.get(&url_a).await;
    assert_eq!(shown_a.status, 200);
    let cookie_a = shown_a.cookie().unwrap();
    std::fs::write(w.workspace_path().join("a.toml"), config("file-run", 9)).unwrap();
    let changed = pc
        .post(
            &origin,
            a,
            &token_a,
            "approve",
            Some(&cookie_a),
            Some(&origin),
        )
        .await;
    assert_eq!(changed.status, 409, "{}", changed.body);
    assert!(changed.body.contains("changed"));
    assert_eq!(pc.get(&url_a).await.status, 409);

    // Approved on the page after the call gave up waiting: the next call picks it up.
    let shown = pc.get(&url_b).await;
    let cookie_b = shown.cookie().unwrap();
    let approved = pc
        .post(
            &origin,
            b,
            &token_b,
            "approve",
            Some(&cookie_b),
            Some(&origin),
        )
        .await;
    assert_eq!(approved.status, 200, "{}", approved.body);
    let out = ok(&call(&c, "launch_run", json!({"plan_id": b})).await);
    assert_eq!(runs_named(&w, "b-run").len(), 1);
    assert_eq!(runs_named(&w, "b-run")[0]["id"], out["run_id"]);
    // The used token is dead, even with everything else right.
    let reused = pc
        .post(
            &origin,
            b,
            &token_b,
            "approve",
            Some(&cookie_b),
            Some(&origin),
        )
        .await;
    assert_eq!(reused.status, 410, "{}", reused.body);

    // Declined on the page: the next call says so, and nothing runs.
    let pd = ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("d-run", 8), "team_id": TEAM}),
    )
    .await);
    let d = pd["plan_id"].as_str().unwrap();
    err(&call(&c, "launch_run", json!({"plan_id": d})).await);
    let url_d = urls.recv().await.unwrap();
    assert_eq!(pc.decide(&url_d, "decline").await.status, 200);
    let msg = err(&call(&c, "launch_run", json!({"plan_id": d})).await);
    assert!(msg.contains("refused") || msg.contains("declined"), "{msg}");
    assert!(runs_named(&w, "d-run").is_empty());
    assert_eq!(w.sandbox.create_requests(), 1);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn a_page_not_opened_decides_nothing_and_a_client_without_elicitation_gets_the_commands() {
    let w = World::new().await;
    let (handler, mut urls) = opener(false);
    let c = connect(handler, w.transport(no_wait_env(&w), &[]), Era::Legacy).await;
    let p = ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("closed-run", 5), "team_id": TEAM}),
    )
    .await);
    let id = p["plan_id"].as_str().unwrap();
    let msg = err(&call(&c, "launch_run", json!({"plan_id": id})).await);
    assert!(msg.contains("was not opened"), "{msg}");
    let url = urls.recv().await.unwrap();
    assert!(!msg.contains(&parts(&url).2));
    assert!(
        Store::open(&w.state_dir())
            .unwrap()
            .decision(id)
            .unwrap()
            .is_none()
    );
    c.cancel().await.unwrap();

    // No elicitation at all: the person's two commands, and no page address.
    let c = w.client(0, &[], Era::Legacy).await;
    let msg = err(&call(&c, "launch_run", json!({"plan_id": id})).await);
    assert!(
        msg.contains(&format!("factory-mcp approve {id}`"))
            && msg.contains(&format!("factory-mcp approve {id} --page")),
        "{msg}"
    );
    assert!(!msg.contains("/approve/") && !msg.contains("?t="), "{msg}");
    assert_eq!(w.sandbox.create_requests(), 0);
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn delete_run_asks_through_the_page_too() {
    let w = World::new().await;
    let run = w.create_run(0, "to-delete", 5, Some(TEAM)).await;
    // Let the sandbox finish it (a run that holds GPUs is not deleted).
    w.advance(100_000);
    let (handler, mut urls) = opener(true);
    let c = connect(handler, w.transport(no_wait_env(&w), &[]), Era::Modern).await;
    let msg = err(&call(&c, "delete_run", json!({"run_id": run})).await);
    assert!(
        msg.contains("Not yet approved") && msg.contains("intent_id"),
        "{msg}"
    );
    let url = urls.recv().await.unwrap();
    let pc = PageClient::new();
    let shown = pc.get(&url).await;
    // The page renders the intent's structured summary: it says delete, never launch.
    assert!(
        shown.body.contains("PERMANENTLY")
            && shown.body.contains("Approve this PERMANENT delete?")
            && shown.body.contains(&format!("<code>{run}</code>")),
        "{}",
        shown.body
    );
    assert!(
        !shown.body.to_lowercase().contains("launch"),
        "{}",
        shown.body
    );
    assert_eq!(pc.decide(&url, "approve").await.status, 200);
    let intent = parts(&url).1;
    let out = call(
        &c,
        "delete_run",
        json!({"run_id": run, "intent_id": intent}),
    )
    .await;
    ok(&out);
    assert!(w.sandbox.runs().iter().all(|r| r["run"]["id"] != run));
    c.cancel().await.unwrap();
}

#[tokio::test]
async fn under_serve_http_the_page_is_a_path_of_the_same_server_without_the_bearer_token() {
    use rmcp::{
        ClientLifecycleMode, ClientServiceExt,
        model::ProtocolVersion,
        transport::{
            StreamableHttpClientTransport,
            streamable_http_client::StreamableHttpClientTransportConfig,
        },
    };
    factory_platform::ensure_tls_provider();
    let w = World::new().await;
    let token = "page-test-bearer-token-0123456789abcdef";
    let token_path = common::write_token_file(w.home.path(), "mcp-token", token);
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_factory-mcp"))
        .args(["serve", "--http", "127.0.0.1:0", "--workspace"])
        .arg(w.workspace.path())
        .arg("--auth-token-file")
        .arg(&token_path)
        .env_clear()
        .envs(no_wait_env(&w))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn");
    let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
    let mcp_url = loop {
        match lines.next_line().await {
            Ok(Some(l)) => {
                if let Some(rest) = l.split("serving MCP at ").nth(1) {
                    break rest.trim().to_string();
                }
            }
            _ => panic!("server exited before listening"),
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let (handler, mut urls) = opener(true);
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(mcp_url.clone()).auth_header(token),
    );
    let c = handler
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .expect("connects");
    let p = ok(&call(
        &c,
        "plan_run",
        json!({"config_toml": config("http-page-run", 5), "team_id": TEAM}),
    )
    .await);
    let id = p["plan_id"].as_str().unwrap();
    let msg = err(&call(&c, "launch_run", json!({"plan_id": id})).await);
    assert!(msg.contains("Not yet approved"), "{msg}");
    let url = urls.recv().await.unwrap();
    let (origin, _, _) = parts(&url);
    assert!(mcp_url.starts_with(&origin), "{url} is not on {mcp_url}");
    // The browser has no bearer token: the page answers without one.
    let pc = PageClient::new();
    assert_eq!(pc.decide(&url, "approve").await.status, 200);
    ok(&call(&c, "launch_run", json!({"plan_id": id})).await);
    assert_eq!(runs_named(&w, "http-page-run").len(), 1);
    // /mcp still needs the token.
    let bare = pc.http.post(&mcp_url).send().await.unwrap();
    assert_eq!(bare.status().as_u16(), 401);
    c.cancel().await.unwrap();
}
