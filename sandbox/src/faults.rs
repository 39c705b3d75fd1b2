//! Fault injection: rules added with `POST /_sandbox/faults` (or the handle) that make matching
//! requests fail in the ways a client must survive — an error status with `Retry-After`, a delay
//! before or after the request is handled, a connection dropped after the work was committed,
//! a reset with no answer, a body cut half-way.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::{HeaderValue, StatusCode, header};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::api::AppState;

/// How a rule's path is compared with the request path (query string excluded).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultMatch {
    #[default]
    Exact,
    Prefix,
}

/// What a matching request suffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultEffect {
    /// Answer `status` (default 503) without handling, with `Retry-After` when set.
    Status,
    /// Wait `delay_ms`, then handle normally.
    Delay,
    /// Handle (commit), wait `delay_ms`, then answer.
    DelayAfterCommit,
    /// Handle (commit), then close the connection without answering.
    DropAfterCommit,
    /// Close the connection without handling or answering.
    Reset,
    /// Handle, send the headers (full `Content-Length`) and half the body, then close.
    CutBody,
    /// S3 endpoint only: the request's transfer credentials expire now (it is refused with
    /// `ExpiredToken`, and so is every later request with them).
    ExpireCredentials,
}

/// One fault rule. `times` absent or 0 means the rule never runs out.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FaultRule {
    /// Assigned by the sandbox.
    #[serde(default)]
    pub id: u64,
    /// HTTP method; absent or `*` matches any.
    #[serde(default)]
    pub method: Option<String>,
    pub path: String,
    #[serde(default, rename = "match")]
    pub match_kind: FaultMatch,
    pub effect: FaultEffect,
    #[serde(default)]
    pub status: Option<u16>,
    #[serde(default)]
    pub retry_after_s: Option<u64>,
    #[serde(default)]
    pub delay_ms: Option<u64>,
    #[serde(default)]
    pub times: Option<u32>,
    /// How many requests this rule has hit (read-only).
    #[serde(default)]
    pub hits: u32,
}

impl FaultRule {
    /// A rule with no method filter, exact match, unlimited.
    pub fn new(path: impl Into<String>, effect: FaultEffect) -> Self {
        Self {
            id: 0,
            method: None,
            path: path.into(),
            match_kind: FaultMatch::Exact,
            effect,
            status: None,
            retry_after_s: None,
            delay_ms: None,
            times: None,
            hits: 0,
        }
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        let method_ok = match self.method.as_deref() {
            None | Some("*") | Some("") => true,
            Some(m) => m.eq_ignore_ascii_case(method),
        };
        let path_ok = match self.match_kind {
            FaultMatch::Exact => self.path == path,
            FaultMatch::Prefix => path.starts_with(&self.path),
        };
        method_ok && path_ok
    }
}

#[derive(Debug, Default)]
pub(crate) struct Faults {
    rules: Vec<FaultRule>,
    next_id: u64,
}

impl Faults {
    pub(crate) fn add(&mut self, mut rule: FaultRule) -> FaultRule {
        self.next_id += 1;
        rule.id = self.next_id;
        rule.hits = 0;
        self.rules.push(rule.clone());
        rule
    }

    pub(crate) fn list(&self) -> Vec<FaultRule> {
        self.rules.clone()
    }

    pub(crate) fn clear(&mut self) {
        self.rules.clear();
    }

    /// The first rule matching the request, used up by one.
    fn take(&mut self, method: &str, path: &str) -> Option<FaultRule> {
        let idx = self.rules.iter().position(|r| r.matches(method, path))?;
        let rule = &mut self.rules[idx];
        rule.hits += 1;
        let fired = rule.clone();
        if let Some(t) = rule.times.as_mut()
            && *t > 0
        {
            *t -= 1;
            if *t == 0 {
                self.rules.remove(idx);
            }
        }
        Some(fired)
    }
}

/// Per-connection switch: notifying it makes the accept loop drop the connection unanswered.
#[derive(Clone, Debug)]
pub(crate) struct ConnKill(pub Arc<Notify>);

async fn kill_and_hang(kill: Option<ConnKill>) -> Response {
    match kill {
        Some(k) => {
            k.0.notify_one();
            // Never answer: the connection task drops the connection on the notification.
            std::future::pending::<()>().await;
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
        None => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// Records the request and applies the first matching fault rule. `/_sandbox/` is exempt.
pub(crate) async fn middleware(
    State(state): State<Arc<AppState>>,
    req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path().to_string();
    // The volumes' S3 endpoint lives under /_sandbox/s3 but is part of the platform.
    if path.starts_with("/_sandbox") && !path.starts_with("/_sandbox/s3/") {
        return next.run(req).await;
    }
    let method = req.method().as_str().to_string();
    state.log_request(&method, &path, req.uri().query());
    let rule = state
        .faults
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take(&method, &path);
    let Some(rule) = rule else {
        return next.run(req).await;
    };
    let kill = req.extensions().get::<ConnKill>().cloned();
    let delay = Duration::from_millis(rule.delay_ms.unwrap_or(0));
    match rule.effect {
        FaultEffect::Status => {
            let status = StatusCode::from_u16(rule.status.unwrap_or(503))
                .unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
            let mut resp = if crate::api::is_traces_path(&path) {
                crate::api::trace_error(status, "injected_fault", "Injected fault (sandbox)")
            } else {
                crate::api::detail(status, "Injected fault (sandbox)")
            };
            if let Some(s) = rule.retry_after_s
                && let Ok(v) = HeaderValue::from_str(&s.to_string())
            {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
            resp
        }
        FaultEffect::Delay => {
            tokio::time::sleep(delay).await;
            next.run(req).await
        }
        FaultEffect::DelayAfterCommit => {
            let resp = next.run(req).await;
            tokio::time::sleep(delay).await;
            resp
        }
        FaultEffect::DropAfterCommit => {
            let _committed = next.run(req).await;
            kill_and_hang(kill).await
        }
        FaultEffect::Reset => kill_and_hang(kill).await,
        FaultEffect::CutBody => {
            let resp = next.run(req).await;
            cut_body(resp, kill)
        }
        FaultEffect::ExpireCredentials => {
            let mut req = req;
            req.extensions_mut().insert(crate::s3::ExpireNow);
            next.run(req).await
        }
    }
}

/// Keeps the headers (and the full Content-Length), sends half the body, then closes.
fn cut_body(resp: Response, kill: Option<ConnKill>) -> Response {
    use axum::body::HttpBody;
    let (mut parts, body) = resp.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .or_else(|| body.size_hint().exact());
    if let Some(len) = declared
        && let Ok(v) = HeaderValue::from_str(&len.to_string())
    {
        // Announce the full length, so the client knows the body it got was cut.
        parts.headers.insert(header::CONTENT_LENGTH, v);
    }
    let state = CutState {
        inner: body.into_data_stream().boxed(),
        // Unknown length: half of the first chunk.
        budget: declared.map(|l| l / 2),
        kill,
        done: false,
    };
    let cut = futures::stream::unfold(state, |mut st| async move {
        if st.done {
            if let Some(k) = st.kill.take() {
                // Let the half already written reach the socket, then drop the connection.
                tokio::time::sleep(Duration::from_millis(100)).await;
                k.0.notify_one();
            }
            std::future::pending::<()>().await;
            return None;
        }
        match st.inner.next().await {
            Some(Ok(chunk)) => {
                let budget = st.budget.get_or_insert((chunk.len() as u64) / 2);
                let take = (*budget).min(chunk.len() as u64);
                *budget -= take;
                if *budget == 0 {
                    st.done = true;
                }
                Some((Ok::<_, axum::Error>(chunk.slice(..take as usize)), st))
            }
            Some(Err(e)) => Some((Err(e), st)),
            None => {
                st.done = true;
                Some((Ok(bytes::Bytes::new()), st))
            }
        }
    });
    Response::from_parts(parts, Body::from_stream(cut))
}

struct CutState {
    inner: futures::stream::BoxStream<'static, Result<bytes::Bytes, axum::Error>>,
    budget: Option<u64>,
    kill: Option<ConnKill>,
    done: bool,
}
