//! The layers every request passes: fault injection (the rules of `crate::faults`, applied
//! before or after the handler) and the simulated `Date` header.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::{HeaderValue, StatusCode, header};

use crate::faults::{ConnKill, FaultEffect};
use crate::http::{detail, is_traces_path, trace_error};
use crate::s3_store::ExpireNow;
use crate::state::AppState;

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
pub(super) async fn faults(
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
            let mut resp = if is_traces_path(&path) {
                trace_error(status, "injected_fault", "Injected fault (sandbox)")
            } else {
                detail(status, "Injected fault (sandbox)")
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
        FaultEffect::StallBody => {
            let resp = next.run(req).await;
            stall_body(resp, delay)
        }
        FaultEffect::Hold => {
            state.holds.hold().await;
            next.run(req).await
        }
        FaultEffect::ExpireCredentials => {
            let mut req = req;
            req.extensions_mut().insert(ExpireNow);
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

/// Sends half the body (by the declared length, else half the first chunk), waits `delay`,
/// then sends the rest.
fn stall_body(resp: Response, delay: Duration) -> Response {
    use axum::body::HttpBody;
    let (parts, body) = resp.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .or_else(|| body.size_hint().exact());
    let state = StallState {
        inner: body.into_data_stream().boxed(),
        budget: declared.map(|l| l / 2),
        pending: None,
        stalled: false,
        delay,
    };
    let held = futures::stream::unfold(state, |mut st| async move {
        if !st.stalled && st.budget == Some(0) {
            tokio::time::sleep(st.delay).await;
            st.stalled = true;
        }
        if let Some(rest) = st.pending.take() {
            return Some((Ok::<_, axum::Error>(rest), st));
        }
        match st.inner.next().await {
            Some(Ok(chunk)) if !st.stalled => {
                let budget = st.budget.get_or_insert((chunk.len() as u64) / 2);
                let take = (*budget).min(chunk.len() as u64) as usize;
                *budget -= take as u64;
                if take < chunk.len() {
                    st.pending = Some(chunk.slice(take..));
                }
                Some((Ok(chunk.slice(..take)), st))
            }
            Some(item) => Some((item, st)),
            None => None,
        }
    });
    Response::from_parts(parts, Body::from_stream(held))
}

struct StallState {
    inner: futures::stream::BoxStream<'static, Result<bytes::Bytes, axum::Error>>,
    budget: Option<u64>,
    /// The part of a chunk after the half-way point, sent after the stall.
    pending: Option<bytes::Bytes>,
    stalled: bool,
    delay: Duration,
}

struct CutState {
    inner: futures::stream::BoxStream<'static, Result<bytes::Bytes, axum::Error>>,
    budget: Option<u64>,
    kill: Option<ConnKill>,
    done: bool,
}

/// Every answer's `Date` header carries the simulated clock (invention: the sandbox's clock
/// is the platform's clock, so a client that measures elapsed time by the platform's `Date`,
/// as the guard does, sees simulated time pass).
pub(super) async fn simulated_date(
    axum::extract::State(state): axum::extract::State<Arc<AppState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let mut response = next.run(request).await;
    let date = state.now().format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    if let Ok(v) = http::HeaderValue::from_str(&date) {
        response.headers_mut().insert(http::header::DATE, v);
    }
    response
}
