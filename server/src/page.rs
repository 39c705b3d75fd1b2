//! The approval page over HTTP (the page itself is `factory_tools::approval_page`): under
//! stdio, a loopback listener on an ephemeral `127.0.0.1` port opened on first need; under
//! `serve --http`, the paths `/approve/…` on the same server, outside the bearer check (a
//! browser has no bearer token: the page's single-use token is its credential). Under OAuth
//! with `[oauth] page_client_id`, a visitor also signs in with the issuer first
//! (`http::signin`, `/approve/callback`) and only a holder of the approving scope sees the plan
//! or decides (`factory_policies::scopes::page_visitor`); the decision names their `sub`.
//!
//! Every answer carries a strict Content-Security-Policy, `no-store`, `Referrer-Policy: same-origin` (the
//! token is in the address) and framing refusals. A request whose `Host` is not one of this
//! server's is refused (DNS rebinding); a POST must carry an `Origin` equal to the page's own
//! origin and the page's SameSite=Strict cookie, and its body is capped.

use std::{
    future::Future,
    pin::Pin,
    sync::{Arc, Weak},
};

use axum::{
    Form, Router,
    extract::{DefaultBodyLimit, Path, Query, Request, State},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
};
use factory_policies::scopes::{PageVisitor, page_visitor};
use factory_tools::{
    AppState,
    approval_page::{self, PageAnswer, PageHost, PagePost},
};

use crate::http::signin::{CallbackQuery, SignIn};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use serde::Deserialize;
use tokio::sync::OnceCell;

/// Largest form body accepted (a token and a word).
const MAX_FORM_BYTES: usize = 4 * 1024;

/// Which `Host` values the page answers to.
#[derive(Debug, Clone)]
struct Hosts(Arc<Vec<String>>);

impl Hosts {
    /// `host` (a `Host` header) is allowed: equal to an entry, or its name (without the port)
    /// equal to an entry that has no port.
    fn allows(&self, host: &str) -> bool {
        let name = host_name(host);
        self.0.iter().any(|a| {
            a.eq_ignore_ascii_case(host)
                || ((!a.contains(':') || a.starts_with('[')) && a.eq_ignore_ascii_case(name))
        })
    }
}

/// The name part of a `Host` value: `127.0.0.1:80` → `127.0.0.1`, `[::1]:80` → `[::1]`.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host
            .split_once(']')
            .map_or(host, |(n, _)| &host[..=n.len()]);
    }
    host.rsplit_once(':').map_or(host, |(n, _)| n)
}

#[derive(Clone)]
struct PageState {
    app: Arc<AppState>,
    hosts: Hosts,
    /// Under OAuth with `page_client_id`: the person signs in with the issuer first.
    signin: Option<Arc<SignIn>>,
}

/// The page's routes. `hosts`: the `Host` values it answers to; `signin`: the issuer sign-in
/// every visitor goes through (under OAuth).
pub fn router(app: Arc<AppState>, hosts: Vec<String>, signin: Option<Arc<SignIn>>) -> Router {
    let state = PageState {
        app,
        hosts: Hosts(Arc::new(hosts)),
        signin,
    };
    let prefix = approval_page::PATH_PREFIX;
    Router::new()
        .route(&format!("{prefix}/style.css"), get(style))
        .route(&format!("{prefix}/callback"), get(callback))
        .route(&format!("{prefix}/{{plan_id}}"), get(show).post(decide))
        .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Host check first, security headers on every answer.
async fn guard(State(s): State<PageState>, request: Request, next: Next) -> Response {
    let host_ok = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|h| s.hosts.allows(h));
    let mut response = if host_ok {
        next.run(request).await
    } else {
        (StatusCode::MISDIRECTED_REQUEST, "unknown Host\n").into_response()
    };
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(approval_page::CSP),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // `same-origin`, not `no-referrer`: under `no-referrer` a browser sends `Origin: null` with
    // the form POST, which the origin check refuses; the token still never leaves the origin.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        "cross-origin-opener-policy",
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        "cross-origin-resource-policy",
        HeaderValue::from_static("same-origin"),
    );
    response
}

async fn style() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        approval_page::STYLE,
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
struct ShowQuery {
    #[serde(default)]
    t: String,
}

/// Only the characters a plan id or a page token is made of (anything else is not one of ours,
/// and is never put into a redirect).
fn plain(s: &str) -> bool {
    s.len() <= 128
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Under sign-in: the signed-in approver, or the answer for anyone else (sent to sign in, or
/// refused). `return_to`: where to come back after signing in (`None`: no sign-in from here).
async fn signed_in(
    s: &PageState,
    signin: &SignIn,
    plan_id: &str,
    headers: &HeaderMap,
    return_to: Option<String>,
) -> Result<String, Response> {
    let session = signin.session(headers);
    match page_visitor(session.as_ref()) {
        PageVisitor::Approver => Ok(session.map(|c| c.subject).unwrap_or_default()),
        PageVisitor::NotAnApprover => {
            let who = session.map(|c| c.subject).unwrap_or_default();
            tracing::info!(subject = %who, "the approval page refused a signed-in person without the approving scope");
            Err(html(
                approval_page::not_an_approver(&s.app, plan_id, &who, signin.approve_scope()).await,
            ))
        }
        PageVisitor::SignIn => match return_to {
            Some(to) => match signin.begin(to).await {
                Ok(r) => Err(r),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot start the approval page's sign-in");
                    Err(notice(
                        503,
                        "Unavailable",
                        "The sign-in with the authorization server cannot start right now; try again in a moment.",
                    ))
                }
            },
            None => Err(notice(
                401,
                "Sign in first",
                "Your sign-in has ended. Open the page's address again from your assistant and sign in.",
            )),
        },
    }
}

fn notice(status: u16, title: &str, text: &str) -> Response {
    html(approval_page::notice(status, title, text))
}

async fn show(
    State(s): State<PageState>,
    Path(plan_id): Path<String>,
    headers: HeaderMap,
    Query(q): Query<ShowQuery>,
) -> Response {
    let mut subject = None;
    if let Some(signin) = &s.signin {
        if !plain(&plan_id) || !plain(&q.t) {
            return notice(404, "Not accepted", "This page address is not one of ours.");
        }
        let back = format!("{}/{plan_id}?t={}", approval_page::PATH_PREFIX, q.t);
        match signed_in(&s, signin, &plan_id, &headers, Some(back)).await {
            Ok(sub) => subject = Some(sub),
            Err(r) => return r,
        }
    }
    html(
        approval_page::signed_in_as(
            subject.as_deref(),
            approval_page::show(&s.app, &plan_id, &q.t),
        )
        .await,
    )
}

async fn decide(
    State(s): State<PageState>,
    Path(plan_id): Path<String>,
    headers: HeaderMap,
    Form(post): Form<PagePost>,
) -> Response {
    let same_origin = same_origin(&headers);
    let subject = match &s.signin {
        Some(signin) => match signed_in(&s, signin, &plan_id, &headers, None).await {
            Ok(sub) => Some(sub),
            Err(r) => return r,
        },
        None => None,
    };
    let cookie = page_cookie(&headers);
    html(
        approval_page::signed_in_as(
            subject.as_deref(),
            approval_page::decide(
                &s.app,
                &plan_id,
                &post,
                cookie.as_deref(),
                same_origin,
                subject.as_deref(),
            ),
        )
        .await,
    )
}

/// GET `/approve/callback`: the issuer sends the signed-in person back here.
async fn callback(
    State(s): State<PageState>,
    headers: HeaderMap,
    Query(q): Query<CallbackQuery>,
) -> Response {
    let Some(signin) = &s.signin else {
        return notice(404, "Not found", "This server has no sign-in for the page.");
    };
    match signin.callback(&q, &headers).await {
        Ok(r) => r,
        Err(e) => {
            tracing::info!(reason = %e, "refused an approval page sign-in");
            notice(403, "Not signed in", &format!("Sign-in refused: {e}."))
        }
    }
}

/// The POST's `Origin` is the page's own: `http://` (or `https://`, behind a proxy) plus the
/// `Host` it was sent to (already checked against our hosts). A missing `Origin` is refused:
/// every browser sends one with a form POST.
fn same_origin(headers: &HeaderMap) -> bool {
    let get = |name| {
        headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    match (get(header::ORIGIN), get(header::HOST)) {
        (Some(origin), Some(host)) => {
            origin.eq_ignore_ascii_case(&format!("http://{host}"))
                || origin.eq_ignore_ascii_case(&format!("https://{host}"))
        }
        _ => false,
    }
}

/// The page's cookie, if the request carries it.
fn page_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == approval_page::COOKIE)
        .map(|(_, v)| v.to_owned())
}

fn html(answer: PageAnswer) -> Response {
    let status = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        answer.html,
    )
        .into_response();
    if let Some(c) = answer
        .set_cookie
        .and_then(|c| HeaderValue::from_str(&c).ok())
    {
        response.headers_mut().append(header::SET_COOKIE, c);
    }
    response
}

/// Under stdio: a listener on an ephemeral `127.0.0.1` port, opened on first need, serving
/// the page until the process ends.
pub struct Loopback {
    app: Weak<AppState>,
    origin: OnceCell<String>,
}

impl Loopback {
    pub fn new(app: Weak<AppState>) -> Self {
        Loopback {
            app,
            origin: OnceCell::new(),
        }
    }

    async fn start(&self) -> Result<String, String> {
        let app = self
            .app
            .upgrade()
            .ok_or_else(|| "the server is shutting down".to_string())?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| format!("cannot open a loopback port for the approval page: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let authority = format!("127.0.0.1:{}", addr.port());
        let routes = router(app, vec![authority.clone()], None);
        tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, routes).await {
                tracing::warn!(error = %e, "the approval page's listener stopped");
            }
        });
        tracing::info!(%addr, "serving the approval page on loopback");
        Ok(format!("http://{authority}"))
    }
}

impl PageHost for Loopback {
    fn origin(&self) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send + '_>> {
        Box::pin(async move { self.origin.get_or_try_init(|| self.start()).await.cloned() })
    }
}

/// Under `serve --http`: the page lives on the same server, at this origin.
pub struct SameServer(pub String);

impl PageHost for SameServer {
    fn origin(&self) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send + '_>> {
        let origin = self.0.clone();
        Box::pin(async move { Ok(origin) })
    }
}

/// How long `approve --page` serves the page at most (its token lives no longer).
const APPROVE_PAGE_LIMIT: std::time::Duration = approval_page::TOKEN_TTL;

/// `factory-mcp approve PLAN_ID --page`: print a fresh page address on this terminal (only:
/// stdout must be a terminal, so an assistant that runs the command cannot read the token),
/// serve the page on loopback, wait for the decision. Exit 0 approved, 1 declined or no
/// decision, 2 unusable.
pub fn approve_on_page(args: &crate::approve::ApproveArgs) -> u8 {
    use std::io::Write;
    let mut tty = match crate::approve::open_terminal() {
        Ok((_, writer)) => writer,
        Err(e) => {
            eprintln!(
                "factory-mcp approve --page: {} ({e}). Nothing was recorded. Run it yourself in a terminal window: the page's address is printed there only.",
                crate::approve::NEEDS_TERMINAL
            );
            return 2;
        }
    };
    let run = async {
        let env = |k: &str| std::env::var(k).ok();
        let dir = match &args.state_dir {
            Some(d) => d.clone(),
            None => factory_policies::store::Store::default_dir(&env)
                .ok_or("no state directory: set XDG_STATE_HOME or HOME, or pass --state-dir")?,
        };
        if !dir.join(factory_policies::store::DB_FILE).exists() {
            return Err(format!(
                "no state database in {} (pass the server's --state-dir)",
                dir.display()
            ));
        }
        let store =
            Arc::new(factory_policies::store::Store::open(&dir).map_err(|e| e.to_string())?);
        let id = args.plan_id.trim();
        let plan = store
            .get_plan(id)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("no plan {id} in {}", dir.display()))?;
        if let Some(d) = store.decision(id).map_err(|e| e.to_string())? {
            return Err(format!("plan {id} is already {} ({})", d.decision, d.via));
        }
        // The page re-checks the plan's config file: a workspace around it (the path is absolute).
        let cwd = std::env::current_dir().map_err(|e| e.to_string())?;
        let workspace = plan
            .body
            .get("config_path")
            .and_then(|p| p.as_str())
            .and_then(|p| {
                std::path::Path::new(p)
                    .parent()
                    .map(std::path::Path::to_path_buf)
            })
            .ok_or_else(|| "this plan has no config file".to_string())
            .and_then(|root| {
                factory_policies::Workspace::new(Some(root), Vec::new(), &cwd, None)
                    .map_err(|e| e.to_string())
            });
        let known = factory_policies::KnownSecrets::new();
        let state = Arc::new(
            AppState::new(
                Err("approve --page does not call the platform".into()),
                factory_policies::Policy::default(),
                factory_policies::SecretGuard::new(known.clone()),
                factory_policies::Redactor::new(known),
                workspace,
                false,
            )
            .with_store(Ok(store)),
        );
        state
            .page
            .install(Arc::new(Loopback::new(Arc::downgrade(&state))));
        let url = approval_page::page_url(&state, id).await?;
        let _ = writeln!(
            tty,
            "Open this address in your browser to approve or decline plan {id} (it works once):\n\n  {url}\n\nWaiting for your decision (Ctrl-C stops without deciding)…"
        );
        let cancel = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        approval_page::wait_decided(&state, id, APPROVE_PAGE_LIMIT, cancel).await
    };
    let outcome = tokio::task::block_in_place(|| tokio::runtime::Handle::current().block_on(run));
    match outcome {
        Ok(Some(factory_policies::store::Decision::Approved)) => {
            println!("Approved. Ask your assistant to call launch_run (or delete_run) again.");
            0
        }
        Ok(Some(factory_policies::store::Decision::Refused)) => {
            println!("Declined: nothing will be done for this plan.");
            1
        }
        Ok(None) => {
            println!("No decision was made; nothing was recorded.");
            1
        }
        Err(e) => {
            eprintln!("factory-mcp approve --page: {e}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_hosts_and_our_own_origin_pass() {
        let hosts = Hosts(Arc::new(vec!["127.0.0.1:4000".into(), "localhost".into()]));
        assert!(hosts.allows("127.0.0.1:4000"));
        assert!(!hosts.allows("127.0.0.1:4001"));
        assert!(hosts.allows("localhost:9"));
        assert!(!hosts.allows("evil.example:4000"));
        assert_eq!(host_name("[::1]:80"), "[::1]");
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:4000"));
        assert!(!same_origin(&h), "no Origin");
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(!same_origin(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:4000"),
        );
        assert!(same_origin(&h));
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=b; factory_mcp_page=xyz"),
        );
        assert_eq!(page_cookie(&h).as_deref(), Some("xyz"));
    }
}
