//! The operators' endpoints of `serve --http` (issue 21 §3):
//!
//! - `/healthz`: the process is up. Unauthenticated, on the MCP port (and the metrics port).
//! - `/readyz`: the state store answers a read and the platform answers a request, each within
//!   `factory_tools::ready::PROBE_TIMEOUT`; 200 or 503 with a short JSON body naming what failed in fixed words
//!   (no address, no error text, no secret). Unauthenticated, like `/healthz`: load balancers
//!   call it without credentials, and all it says is which of two dependencies is down. Its
//!   answer is kept for `http.ready_cache_ms` and one probe runs at a time, so however often it
//!   is polled the platform sees at most one request per period from it.
//! - `/metrics`: the Prometheus exposition of `factory_tools::meter`'s metrics, on its own
//!   listener (`--metrics-listen`, off by default), never on the MCP port: the MCP port is the
//!   one a reverse proxy exposes to every assistant, the metrics port stays on the operators'
//!   network. Off loopback it requires its own bearer token (`--metrics-token-file`), which
//!   must differ from the MCP clients' token, so holding the MCP token never opens it.

use std::{
    net::SocketAddr,
    sync::{Arc, OnceLock},
    time::{Duration, Instant},
};

use axum::{
    Router,
    extract::{Request, State},
    middleware::{self, Next},
    response::{IntoResponse, Response},
    routing::get,
};
use factory_tools::{AppState, meter, ready};
use http::{HeaderValue, StatusCode, header};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::HttpOptions;

/// How often the exporter folds recorded samples into its histograms (bounded memory between
/// scrapes).
const UPKEEP_EVERY: Duration = Duration::from_secs(5);
/// Connections the metrics listener keeps open at once (scrapers are few).
const METRICS_MAX_CONNECTIONS: usize = 16;

/// The operators' settings of `serve --http`.
#[derive(Clone, Default)]
pub struct OpsOptions {
    /// The metrics listener's address; `None`: no metrics (and no recorder: recording is free).
    pub metrics_listen: Option<SocketAddr>,
    /// The token `/metrics` requires; required off loopback.
    pub metrics_token: Option<SecretString>,
    /// How long `/readyz` keeps its answer.
    pub ready_cache: Duration,
}

impl OpsOptions {
    /// Refuse what would expose the metrics: a non-loopback listener without a token, or the
    /// MCP clients' own token.
    pub fn check(&self, mcp_token: Option<&SecretString>) -> Result<(), String> {
        let Some(addr) = self.metrics_listen else {
            if self.metrics_token.is_some() {
                return Err(
                    "a metrics token file is configured but no metrics listener: add \
                     --metrics-listen ADDR (or http.metrics_listen), or drop the token file"
                        .into(),
                );
            }
            return Ok(());
        };
        if !addr.ip().is_loopback() && self.metrics_token.is_none() {
            return Err(format!(
                "refusing to serve metrics on {addr}, which is not a loopback address, without a \
                 token: pass --metrics-token-file FILE (or http.metrics_token_file), or listen on \
                 127.0.0.1"
            ));
        }
        if let (Some(m), Some(t)) = (&self.metrics_token, mcp_token)
            && m.expose_secret() == t.expose_secret()
        {
            return Err(
                "the metrics token must differ from the MCP clients' bearer token: \
                 whoever may call tools should not need to be able to read the metrics, nor the \
                 other way round; put another token in --metrics-token-file"
                    .into(),
            );
        }
        Ok(())
    }
}

/// The process-wide Prometheus recorder, installed once (a second `serve` in one process, as
/// tests do, reuses it).
fn recorder() -> Result<PrometheusHandle, String> {
    static HANDLE: OnceLock<Result<PrometheusHandle, String>> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let handle = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full(meter::TOOL_DURATION.to_string()),
                    meter::DURATION_BUCKETS,
                )
                .and_then(PrometheusBuilder::install_recorder)
                .map_err(|e| format!("cannot start the metrics recorder: {e}"))?;
            meter::describe();
            Ok(handle)
        })
        .clone()
}

/// Start what the options ask for: the recorder and the metrics listener (serving until `ct`
/// is cancelled). Returns the routes the MCP port adds: `/healthz` and `/readyz`.
pub async fn start(
    ops: &OpsOptions,
    state: Arc<AppState>,
    limits: &HttpOptions,
    ct: CancellationToken,
) -> Result<Router, String> {
    let health = health_router(state, ops.ready_cache);
    let Some(addr) = ops.metrics_listen else {
        return Ok(health.clone());
    };
    let handle = recorder()?;
    let mut opts = limits.clone();
    opts.listen = addr;
    opts.max_connections = METRICS_MAX_CONNECTIONS;
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen for metrics on {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let app = metrics_router(handle.clone(), ops.metrics_token.clone()).merge(health.clone());
    let upkeep = ct.clone();
    tokio::spawn(async move {
        let mut every = tokio::time::interval(UPKEEP_EVERY);
        loop {
            tokio::select! {
                _ = every.tick() => handle.run_upkeep(),
                () = upkeep.cancelled() => break,
            }
        }
    });
    tokio::spawn(async move {
        if let Err(e) = super::serve(listener, app, &opts, ct).await {
            tracing::error!(error = %e, "the metrics listener stopped");
        }
    });
    tracing::info!(%bound, token = ops.metrics_token.is_some(), "serving metrics at /metrics");
    eprintln!("factory-mcp: serving metrics at http://{bound}/metrics");
    Ok(health)
}

/// `/healthz` and `/readyz`, outside every authentication layer.
pub fn health_router(state: Arc<AppState>, ready_cache: Duration) -> Router {
    let readiness = Arc::new(Readiness {
        state,
        ttl: ready_cache,
        last: tokio::sync::Mutex::new(None),
    });
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz).with_state(readiness))
}

/// `/metrics` behind its token (when one is configured).
pub fn metrics_router(handle: PrometheusHandle, token: Option<SecretString>) -> Router {
    Router::new()
        .route("/metrics", get(render).with_state(handle))
        .layer(middleware::from_fn_with_state(
            Arc::new(token),
            metrics_auth,
        ))
}

fn json_response(status: StatusCode, body: &impl Serialize) -> Response {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut response = (status, bytes).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

async fn healthz() -> Response {
    json_response(StatusCode::OK, &serde_json::json!({"status": "ok"}))
}

/// What `/readyz` says: each dependency in one fixed word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Ready {
    pub status: &'static str,
    pub store: &'static str,
    pub platform: &'static str,
}

impl Ready {
    fn of(store: &'static str, platform: &'static str) -> Ready {
        let ok = store == "ok" && platform == "ok";
        Ready {
            status: if ok { "ready" } else { "not_ready" },
            store,
            platform,
        }
    }

    fn is_ready(&self) -> bool {
        self.status == "ready"
    }
}

struct Readiness {
    state: Arc<AppState>,
    ttl: Duration,
    last: tokio::sync::Mutex<Option<(Instant, Ready)>>,
}

impl Readiness {
    /// The kept answer while it is fresh, else a new probe; callers arriving during a probe
    /// wait for it (the lock) and take its answer.
    async fn check(&self) -> Ready {
        let mut last = self.last.lock().await;
        if let Some((at, ready)) = *last
            && at.elapsed() < self.ttl
        {
            return ready;
        }
        let (store, platform) = ready::probe(&self.state).await;
        let ready = Ready::of(store, platform);
        *last = Some((Instant::now(), ready));
        ready
    }
}

async fn readyz(State(readiness): State<Arc<Readiness>>) -> Response {
    let ready = readiness.check().await;
    let status = if ready.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json_response(status, &ready)
}

async fn render(State(handle): State<PrometheusHandle>) -> Response {
    let mut response = handle.render().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    response
}

async fn metrics_auth(
    State(token): State<Arc<Option<SecretString>>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = token.as_ref() else {
        return next.run(request).await;
    };
    if super::bearer_matches(request.headers(), expected) {
        return next.run(request).await;
    }
    super::unauthorized(
        "401 Unauthorized: send `Authorization: Bearer <token>` with the token from the server's --metrics-token-file\n",
        "Bearer realm=\"factory-mcp-metrics\"",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(s: &str) -> SecretString {
        SecretString::from(s.to_string())
    }

    #[test]
    fn metrics_off_loopback_need_their_own_token() {
        let mut ops = OpsOptions {
            metrics_listen: Some("0.0.0.0:9464".parse().unwrap()),
            ..OpsOptions::default()
        };
        let err = ops.check(Some(&secret("mcp"))).unwrap_err();
        assert!(err.contains("--metrics-token-file"), "{err}");
        ops.metrics_token = Some(secret("mcp"));
        let err = ops.check(Some(&secret("mcp"))).unwrap_err();
        assert!(err.contains("must differ"), "{err}");
        ops.metrics_token = Some(secret("scrape"));
        ops.check(Some(&secret("mcp"))).unwrap();
        // Loopback without a token is allowed; a token without a listener is a mistake.
        let ops = OpsOptions {
            metrics_listen: Some("127.0.0.1:9464".parse().unwrap()),
            ..OpsOptions::default()
        };
        ops.check(None).unwrap();
        let ops = OpsOptions {
            metrics_token: Some(secret("scrape")),
            ..OpsOptions::default()
        };
        assert!(ops.check(None).unwrap_err().contains("--metrics-listen"));
    }

    #[test]
    fn readiness_is_ready_only_when_both_are_ok() {
        assert_eq!(Ready::of("ok", "ok").status, "ready");
        for (store, platform) in [("ok", "unreachable"), ("unavailable", "ok")] {
            let r = Ready::of(store, platform);
            assert!(!r.is_ready());
            assert_eq!(
                serde_json::to_value(r).unwrap(),
                serde_json::json!({"status": "not_ready", "store": store, "platform": platform})
            );
        }
    }
}
