//! Streamable HTTP transport (`serve --http ADDR`, path `/mcp`): loopback by default, a bearer
//! token always required unless `--no-auth` on loopback (constant-time comparison, 401 with
//! `WWW-Authenticate`; with none configured one is created in the state directory, see
//! [`token`]), Host and Origin allowlists against DNS rebinding, a request body cap, and limits
//! that hold *before* authentication: a header-read timeout, a connection cap that closes the
//! oldest idle connection ([`conns`]) and a session cap that closes the oldest idle session
//! ([`sessions`]).

pub mod conns;
pub mod oauth;
pub mod ops;
pub mod sessions;
pub mod signin;
pub mod token;

use std::{convert::Infallible, net::SocketAddr, sync::Arc, time::Duration};

use axum::{
    Router,
    extract::{Request, State},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use http::{HeaderValue, StatusCode, header};
use http_body_util::BodyExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::{
    ServerHandler,
    transport::{
        StreamableHttpServerConfig,
        streamable_http_server::{
            session::local::LocalSessionManager, tower::StreamableHttpService,
        },
    },
};
use secrecy::{ExposeSecret, SecretString};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

pub use token::{default_token_path, load_or_create, read_token_file};

/// Largest request body accepted (1 MiB): tool arguments are small; a larger body is refused
/// with 413 before it is parsed.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;

/// How the HTTP transport is exposed.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub listen: SocketAddr,
    /// Required for any non-loopback bind; when set, required on loopback too.
    pub auth_token: Option<SecretString>,
    /// Extra `Host` values to accept besides the loopback names (e.g. a DNS name in front).
    pub extra_allowed_hosts: Vec<String>,
    /// Extra `Origin` values to accept besides loopback origins (scheme://host:port).
    pub extra_allowed_origins: Vec<String>,
    pub max_body_bytes: usize,
    /// How long a connection may take to send a request's headers (and stay idle between
    /// requests) before it is closed.
    pub header_read_timeout: Duration,
    /// Most connections open at once (further lowered to fit the file-descriptor limit).
    pub max_connections: usize,
    /// Most live 2025-11-25-era sessions.
    pub max_sessions: usize,
    /// `[oauth]`: access tokens from an issuer instead of the static token (which must then
    /// be unset).
    pub oauth: Option<Arc<oauth::OAuth>>,
}

impl HttpOptions {
    pub fn loopback(port: u16) -> Self {
        let defaults = factory_policies::policy::HttpPolicy::default();
        HttpOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], port)),
            auth_token: None,
            extra_allowed_hosts: Vec::new(),
            extra_allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            header_read_timeout: Duration::from_secs(defaults.header_read_timeout_s),
            max_connections: defaults.max_connections as usize,
            max_sessions: defaults.max_sessions as usize,
            oauth: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error(
        "refusing to listen on {0}, which is not a loopback address, without a bearer token: pass --auth-token-file FILE (or http.auth_token_file in the policy file), or listen on 127.0.0.1 (--no-auth is allowed on loopback only)"
    )]
    NoTokenOffLoopback(SocketAddr),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("HTTP server failed: {0}")]
    Serve(std::io::Error),
}

/// Check the options, then bind. Binding is separate from serving so callers (and tests) can
/// learn the port of a `:0` listener before requests arrive.
pub async fn bind(opts: &HttpOptions) -> Result<TcpListener, HttpError> {
    if !opts.listen.ip().is_loopback() && opts.auth_token.is_none() && opts.oauth.is_none() {
        return Err(HttpError::NoTokenOffLoopback(opts.listen));
    }
    TcpListener::bind(opts.listen)
        .await
        .map_err(|source| HttpError::Bind {
            addr: opts.listen,
            source,
        })
}

/// The axum app: `/mcp` behind the bearer check (the static token, or OAuth access tokens with
/// the resource metadata beside it) and rmcp's Host/Origin validation.
pub fn router<H, F>(make_handler: F, opts: &HttpOptions, ct: CancellationToken) -> Router
where
    H: ServerHandler + Send + 'static,
    F: Fn() -> H + Send + Sync + 'static,
{
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into()];
    if !opts.listen.ip().is_loopback() && !opts.listen.ip().is_unspecified() {
        hosts.push(opts.listen.ip().to_string());
    }
    hosts.extend(opts.extra_allowed_hosts.iter().cloned());
    let mut origins: Vec<String> = vec![
        "http://localhost:*".into(),
        "http://127.0.0.1:*".into(),
        "http://[::1]:*".into(),
    ];
    origins.extend(opts.extra_allowed_origins.iter().cloned());
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(hosts)
        .with_allowed_origins(origins)
        .enforce_origin_validation()
        .with_json_response(true)
        .with_max_request_body_bytes(opts.max_body_bytes)
        .with_cancellation_token(ct);
    let sessions = sessions::CappedSessions::new(LocalSessionManager::default(), opts.max_sessions);
    let service = StreamableHttpService::new(move || Ok(make_handler()), sessions.into(), config);
    if let Some(o) = &opts.oauth {
        return Router::new()
            .nest_service("/mcp", service)
            .layer(middleware::from_fn_with_state(
                (o.clone(), opts.max_body_bytes),
                oauth::middleware,
            ))
            .merge(oauth::metadata_router(o.clone()));
    }
    let auth = Arc::new(opts.auth_token.clone());
    Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(auth, bearer_auth))
}

/// How long shutdown waits for open connections to finish their answers.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// File descriptors kept free for everything but client connections (the state database, the
/// platform's connections, logs).
const FD_RESERVE: u64 = 64;

/// The connection cap actually used: the configured one, lowered so that open connections
/// cannot exhaust the process's file descriptors (which would stop `accept` for everyone).
pub fn effective_max_connections(configured: usize) -> usize {
    match fd_soft_limit() {
        Some(limit) => {
            let room = limit.saturating_sub(FD_RESERVE).max(limit / 2).max(1);
            configured.min(usize::try_from(room).unwrap_or(usize::MAX))
        }
        None => configured,
    }
    .max(1)
}

fn fd_soft_limit() -> Option<u64> {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass and reads nothing else.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) };
    // `rlim_t` is u64 here but narrower on some targets.
    #[allow(clippy::unnecessary_cast)]
    let current = rl.rlim_cur as u64;
    (rc == 0 && rl.rlim_cur != libc::RLIM_INFINITY).then_some(current)
}

/// Serve until `ct` is cancelled: HTTP/1.1 connections with a header-read timeout, admitted
/// through the connection table (oldest idle closed past the cap).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    opts: &HttpOptions,
    ct: CancellationToken,
) -> Result<(), HttpError> {
    let table = conns::ConnTable::new(effective_max_connections(opts.max_connections));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(opts.header_read_timeout)
        .keep_alive(true);
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = ct.cancelled() => break,
        };
        while tasks.try_join_next().is_some() {}
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(e) => {
                // Out of file descriptors: give one back by closing the oldest idle
                // connection, then retry. Other errors concern one connection only.
                if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) {
                    table.evict_oldest_idle();
                    tracing::warn!(
                        "out of file descriptors accepting a connection; closed the oldest idle one"
                    );
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let conn = match table.admit() {
            Ok(conn) => conn,
            Err(conns::AllBusy) => {
                tracing::warn!(
                    cap = table.cap(),
                    "connection cap reached and every connection busy: refused one"
                );
                // Best effort, never blocking: the socket is fresh, so its buffer has room.
                let _ = stream.try_write(
                    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let requests = conn.requests();
        let app = app.clone();
        let service =
            hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                // Only an authenticated request marks the connection busy (`bearer_auth`), so a
                // client that never authenticates cannot keep a connection from eviction.
                req.extensions_mut().insert(requests.clone());
                let app = app.clone();
                async move {
                    let response = tower_call(app, req.map(axum::body::Body::new)).await;
                    Ok::<_, Infallible>(response)
                }
            });
        let connection = builder.serve_connection(TokioIo::new(stream), service);
        let shutdown = ct.clone();
        tasks.spawn(async move {
            let evicted = conn.evicted();
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => return,
                // Dropping the connection closes the socket.
                () = evicted.cancelled() => return,
                () = shutdown.cancelled() => {}
            }
            connection.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(SHUTDOWN_GRACE, connection).await;
            drop(conn);
        });
    }
    let _ = tokio::time::timeout(SHUTDOWN_GRACE + Duration::from_secs(1), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    Ok(())
}

/// One request through the axum app (whose service never fails).
async fn tower_call(app: Router, req: Request) -> Response {
    use tower_service::Service;
    let mut app = app;
    match app.call(req).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

async fn bearer_auth(
    State(token): State<Arc<Option<SecretString>>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = token.as_ref() else {
        return run_busy(request, next).await;
    };
    if bearer_matches(request.headers(), expected) {
        run_busy(request, next).await
    } else {
        unauthorized(
            "401 Unauthorized: send `Authorization: Bearer <token>` with the token from the server's --auth-token-file\n",
            "Bearer realm=\"factory-mcp\"",
        )
    }
}

/// Whether `headers` carry `Authorization: Bearer <expected>` (compared in constant time).
pub(crate) fn bearer_matches(headers: &http::HeaderMap, expected: &SecretString) -> bool {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .is_some_and(|p| constant_time_eq(p.as_bytes(), expected.expose_secret().as_bytes()))
}

/// A 401 saying `what` to do, with its `WWW-Authenticate` challenge.
pub(crate) fn unauthorized(what: &'static str, challenge: &'static str) -> Response {
    let mut response = (StatusCode::UNAUTHORIZED, what).into_response();
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    response
}

/// Run an authenticated request, its connection marked busy until the answer's last byte has
/// been handed over.
async fn run_busy(request: Request, next: Next) -> Response {
    let busy = request
        .extensions()
        .get::<conns::Requests>()
        .map(conns::Requests::begin);
    let response = next.run(request).await;
    match busy {
        Some(busy) => response.map(|body| {
            axum::body::Body::new(body.map_frame(move |frame| {
                let _held = &busy;
                frame
            }))
        }),
        None => response,
    }
}

/// Compare without an early exit, so the time taken says nothing about where the inputs differ.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0xff);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_eq_agrees_with_eq() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(!constant_time_eq(b"", b"a"));
        assert!(constant_time_eq(b"", b""));
    }

    #[tokio::test]
    async fn off_loopback_without_token_does_not_start() {
        let mut opts = HttpOptions::loopback(0);
        opts.listen = "0.0.0.0:0".parse().unwrap();
        let err = bind(&opts).await.unwrap_err();
        assert!(matches!(err, HttpError::NoTokenOffLoopback(_)));
        assert!(err.to_string().contains("--auth-token-file"));
    }

    #[test]
    fn the_connection_cap_leaves_file_descriptors_for_the_rest() {
        let limit = fd_soft_limit().expect("RLIMIT_NOFILE");
        let cap = effective_max_connections(usize::MAX);
        assert!((cap as u64) < limit, "{cap} vs {limit}");
        assert_eq!(effective_max_connections(8), 8.min(cap));
    }
}
