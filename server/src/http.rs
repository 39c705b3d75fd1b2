//! Streamable HTTP transport (`serve --http ADDR`, path `/mcp`): loopback by default, a bearer
//! token required off loopback (constant-time comparison, 401 with `WWW-Authenticate`), Host and
//! Origin allowlists against DNS rebinding, and a request body cap.

use std::{net::SocketAddr, sync::Arc};

use axum::{
    Router,
    extract::{Request, State},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use http::{HeaderValue, StatusCode, header};
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
}

impl HttpOptions {
    pub fn loopback(port: u16) -> Self {
        HttpOptions {
            listen: SocketAddr::from(([127, 0, 0, 1], port)),
            auth_token: None,
            extra_allowed_hosts: Vec::new(),
            extra_allowed_origins: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error(
        "refusing to listen on {0}, which is not a loopback address, without a bearer token: pass --auth-token-file FILE (or http.auth_token_file in the policy file), or listen on 127.0.0.1"
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
    if !opts.listen.ip().is_loopback() && opts.auth_token.is_none() {
        return Err(HttpError::NoTokenOffLoopback(opts.listen));
    }
    TcpListener::bind(opts.listen)
        .await
        .map_err(|source| HttpError::Bind {
            addr: opts.listen,
            source,
        })
}

/// The axum app: `/mcp` behind the bearer check and rmcp's Host/Origin validation.
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
    let service = StreamableHttpService::new(
        move || Ok(make_handler()),
        LocalSessionManager::default().into(),
        config,
    );
    let auth = Arc::new(opts.auth_token.clone());
    Router::new()
        .nest_service("/mcp", service)
        .layer(middleware::from_fn_with_state(auth, bearer_auth))
}

/// Serve until `ct` is cancelled.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    ct: CancellationToken,
) -> Result<(), HttpError> {
    axum::serve(listener, app)
        .with_graceful_shutdown(async move { ct.cancelled().await })
        .await
        .map_err(HttpError::Serve)
}

async fn bearer_auth(
    State(token): State<Arc<Option<SecretString>>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(expected) = token.as_ref() else {
        return next.run(request).await;
    };
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let ok = presented
        .is_some_and(|p| constant_time_eq(p.as_bytes(), expected.expose_secret().as_bytes()));
    if ok {
        next.run(request).await
    } else {
        let mut response = (
            StatusCode::UNAUTHORIZED,
            "401 Unauthorized: send `Authorization: Bearer <token>` with the token from the server's --auth-token-file\n",
        )
            .into_response();
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"factory-mcp\""),
        );
        response
    }
}

/// Compare without an early exit, so the time taken says nothing about where the inputs differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0xff);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}

/// Read a bearer token from a file (trailing whitespace ignored); an empty file is an error.
pub fn read_token_file(path: &std::path::Path) -> Result<SecretString, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the auth token file {}: {e}", path.display()))?;
    let token = text.trim();
    if token.len() < 16 {
        return Err(format!(
            "the auth token in {} is shorter than 16 characters; use a long random token (e.g. `openssl rand -hex 32`)",
            path.display()
        ));
    }
    Ok(SecretString::from(token.to_string()))
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
}
