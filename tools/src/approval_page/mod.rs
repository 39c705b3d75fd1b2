//! The approval page: a person approves or declines a launch, resume or delete in their
//! browser, on a page this server serves on loopback (URL-mode elicitation). The client is only
//! asked to open the page; accepting or declining that request means the page was opened or
//! not, never a decision. The decision is the page's Approve or Decline (a same-origin form
//! POST carrying the single-use token and the page's SameSite cookie), recorded in the state
//! store with the channel `page`.
//!
//! `ask` is the tool side (mint a token, ask the client to open its URL, wait up to
//! [`PageHub::wait`] for the decision); `web` answers the page's requests (the HTTP serving is
//! the server crate's, `factory_server::page`); `render` writes the HTML. What may be shown or
//! decided is `factory_policies::approval_page`'s decision.

mod ask;
mod render;
mod web;

use std::{
    future::Future,
    pin::Pin,
    sync::{Arc, OnceLock},
    time::Duration,
};

pub(crate) use ask::ask;
pub use web::{
    CSP, PageAnswer, PagePost, STYLE, decide, not_an_approver, notice, show, signed_in_as,
};

/// The cookie the page sets when shown and a decision must carry back.
pub const COOKIE: &str = "factory_mcp_page";
/// Where the page lives on its server: `/approve/{plan_id}?t=TOKEN`.
pub const PATH_PREFIX: &str = "/approve";
/// How long a page token stays valid (never past its plan's expiry).
pub const TOKEN_TTL: Duration = Duration::from_secs(15 * 60);
/// How long the call after the page was opened waits for the person's decision.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(120);

/// What serves the page: the server crate installs one (a loopback listener opened on first
/// need under stdio; the HTTP server itself under `serve --http`).
pub trait PageHost: Send + Sync {
    /// The page's origin (`http://127.0.0.1:PORT`), starting to serve it if need be.
    fn origin(&self) -> Pin<Box<dyn Future<Output = Result<String, String>> + Send + '_>>;
}

/// The page's shared parts: who serves it, a wake-up for calls waiting on a decision, and how
/// long they wait.
pub struct PageHub {
    host: OnceLock<Arc<dyn PageHost>>,
    decided: tokio::sync::Notify,
    /// How long a call waits for the page's decision (120 s; `FACTORY_MCP_PAGE_WAIT_MS`, an
    /// undocumented knob, shortens it for tests).
    pub wait: Duration,
}

impl Default for PageHub {
    fn default() -> Self {
        PageHub {
            host: OnceLock::new(),
            decided: tokio::sync::Notify::new(),
            wait: DEFAULT_WAIT,
        }
    }
}

impl PageHub {
    pub fn with_wait(wait: Duration) -> Self {
        PageHub {
            wait,
            ..PageHub::default()
        }
    }

    /// Install what serves the page (once; a second call is ignored).
    pub fn install(&self, host: Arc<dyn PageHost>) {
        let _ = self.host.set(host);
    }

    pub(crate) fn host(&self) -> Option<&Arc<dyn PageHost>> {
        self.host.get()
    }

    /// A decision was recorded: wake the waiting calls.
    pub(crate) fn notify(&self) {
        self.decided.notify_waiters();
    }
}

/// For `factory-mcp approve PLAN_ID --page`: a fresh page address for a stored plan (its
/// host must be installed), or why there is none.
pub async fn page_url(state: &crate::AppState, plan_id: &str) -> Result<String, String> {
    let store = state.store().map_err(|e| e.message)?;
    let plan = store
        .get_plan(plan_id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("no plan {plan_id}"))?;
    ask::mint(state, store, &plan).await.map_err(|e| e.message)
}

/// For `factory-mcp approve PLAN_ID --page`: wait until the plan is decided (`Some`), `limit`
/// runs out or `cancel` completes (`None`).
pub async fn wait_decided(
    state: &crate::AppState,
    plan_id: &str,
    limit: Duration,
    cancel: impl Future<Output = ()>,
) -> Result<Option<factory_policies::store::Decision>, String> {
    let store = state.store().map_err(|e| e.message)?;
    Ok(ask::wait_for_decision(state, store, plan_id, limit, cancel)
        .await
        .map_err(|e| e.message)?
        .flatten()
        .map(|d| d.decision))
}

impl std::fmt::Debug for PageHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageHub")
            .field("installed", &self.host.get().is_some())
            .field("wait", &self.wait)
            .finish()
    }
}
