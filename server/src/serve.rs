//! `factory-mcp serve`: build the shared state from the settings and the environment, gate the
//! catalogue, and serve MCP over stdio (default) or streamable HTTP (`--http ADDR`).

use std::{net::SocketAddr, process::ExitCode, sync::Arc, time::Duration};

use factory_policies::{KnownSecrets, Redactor};
use factory_tools::{AppState, FactoryServer, state::PlatformOverride};
use rmcp::ServiceExt;
use secrecy::SecretString;
use tokio_util::sync::CancellationToken;

use crate::{
    gating::Gate,
    http::{self, HttpOptions},
    settings::{Settings, SettingsArgs},
};

/// Serve MCP over stdio (default) or streamable HTTP.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    #[command(flatten)]
    pub settings: SettingsArgs,
    /// Serve streamable HTTP on this address (path /mcp) instead of stdio, e.g. 127.0.0.1:8765.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Run the embedded platform simulator and point the tools at it: no account needed.
    #[arg(long)]
    pub sandbox: bool,
    /// Speed factor of the embedded simulator's clock (with --sandbox).
    #[arg(long, default_value = "10", value_name = "X")]
    pub sandbox_speed: f64,
    /// More log detail on stderr (-v debug, -vv trace); FACTORY_MCP_LOG or RUST_LOG override.
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Extra Host header value to accept over HTTP (e.g. a DNS name in front of the server).
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Extra Origin to accept over HTTP, as scheme://host:port.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// With --http on a loopback address only: require no bearer token, so that any local
    /// process (any user of this machine) can call every tool. Off by default.
    #[arg(long, requires = "http")]
    pub no_auth: bool,
}

/// How `serve --http` authenticates its clients, decided before anything starts.
#[derive(Debug, Clone, Copy)]
pub struct HttpAuth {
    pub listen: SocketAddr,
    /// `--no-auth`: loopback only.
    pub no_auth: bool,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// Everything `serve` needs, built and checked before any transport starts.
pub struct Prepared {
    pub state: Arc<AppState>,
    pub gate: Gate,
    pub http_token: Option<SecretString>,
    pub redactor: Arc<Redactor>,
    /// `/healthz`, `/readyz`, `/metrics` (HTTP only).
    pub ops: http::ops::OpsOptions,
}

/// Build the state from settings; errors are for the operator and stop the server at start.
/// `http` is `Some` for `serve --http`: the bearer token is then decided (and maybe created).
pub fn prepare(
    settings: &Settings,
    over: Option<&PlatformOverride>,
    http: Option<HttpAuth>,
    shared: Option<crate::state_store::Shared>,
) -> Result<Prepared, String> {
    let policy = settings.policy.clone();
    let gate = Gate::new(
        policy.read_only,
        policy.disable_destructive,
        policy.toolsets.as_deref(),
        policy.tools.as_deref(),
    )?;
    let (http_token, redact_only) = match http {
        Some(auth) => (http_token(settings, auth, &env)?, None),
        // Over stdio no token is needed, but one that exists is still never echoed.
        None => (None, existing_token(settings, &env)),
    };
    let mut extra = KnownSecrets::new();
    if let Some(token) = http_token.as_ref().or(redact_only.as_ref()) {
        extra.add("FACTORY_MCP_HTTP_TOKEN", token);
    }
    let ops = ops_options(settings, http.is_some(), http_token.as_ref())?;
    if let Some(token) = &ops.metrics_token {
        extra.add("FACTORY_MCP_METRICS_TOKEN", token);
    }
    if let Some(pw) = shared.as_ref().and_then(|s| s.password.as_ref()) {
        extra.add(crate::state_store::PASSWORD_ENV, pw);
    }
    let lease = policy.state.dispatch_lease_seconds.map(Duration::from_secs);
    let built = AppState::build(policy, over, &env, extra)?;
    // The shared store when the settings name one; else the SQLite store (opened on first
    // need), with the configured dispatch lease when there is one.
    let state = match (shared, lease) {
        (Some(shared), _) => built.state.with_state_store(shared.store),
        (None, Some(lease)) => {
            let dir = factory_policies::store::Store::default_dir(&env);
            built.state.with_store_on_first_use(move || {
                let dir =
                    dir.ok_or("set XDG_STATE_HOME or HOME so the server has a state directory")?;
                factory_policies::store::Store::open(&dir)
                    .map(|s| Arc::new(s.with_dispatch_lease(Some(lease))))
                    .map_err(|e| e.to_string())
            })
        }
        (None, None) => built.state,
    };
    Ok(Prepared {
        // One redactor for the tools and the log: its known forms are built once per start.
        redactor: Arc::clone(&state.redactor),
        state: Arc::new(state),
        gate,
        http_token,
        ops,
    })
}

/// The operators' settings (issue 21 §3), checked: metrics only under `--http`, their token
/// read and never the MCP clients' one.
fn ops_options(
    settings: &Settings,
    http: bool,
    mcp_token: Option<&SecretString>,
) -> Result<http::ops::OpsOptions, String> {
    let p = &settings.policy.http;
    if !http {
        return Ok(http::ops::OpsOptions::default());
    }
    let ops = http::ops::OpsOptions {
        metrics_listen: p.metrics_listen,
        metrics_token: match &p.metrics_token_file {
            Some(path) => {
                Some(http::read_token_file(path).map_err(|e| format!("metrics token: {e}"))?)
            }
            None => None,
        },
        ready_cache: Duration::from_millis(p.ready_cache_ms),
    };
    ops.check(mcp_token)?;
    Ok(ops)
}

/// The bearer token `serve --http` requires: the configured file; else, on loopback, the
/// state directory's `http-token` (created owner-only on first use, reused after); `None` only
/// with `--no-auth` on loopback. Says on stderr where the token is, never what it is.
pub fn http_token(
    settings: &Settings,
    auth: HttpAuth,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Option<SecretString>, String> {
    let loopback = auth.listen.ip().is_loopback();
    // OAuth (issue 21 §2) first: with `[oauth]` the issuer's access tokens are the only
    // credential; a static token or --no-auth beside it is a contradiction, refused.
    if let Some(oauth) = &settings.policy.oauth {
        if settings.policy.http.auth_token_file.is_some() || auth.no_auth {
            return Err(
                "[oauth] is configured, so HTTP clients present the issuer's access tokens:                  drop --auth-token-file / http.auth_token_file and --no-auth"
                    .into(),
            );
        }
        eprintln!(
            "factory-mcp: HTTP clients must send `Authorization: Bearer <access token>` issued by {} for {}",
            oauth.issuer, oauth.resource
        );
        return Ok(None);
    }
    if let Some(path) = &settings.policy.http.auth_token_file {
        if auth.no_auth {
            return Err(
                "--no-auth contradicts the configured auth token file (--auth-token-file or \
                 http.auth_token_file): drop one of them"
                    .into(),
            );
        }
        let token = http::read_token_file(path)?;
        eprintln!(
            "factory-mcp: HTTP clients must send `Authorization: Bearer <token>` with the token in {}",
            path.display()
        );
        return Ok(Some(token));
    }
    if !loopback {
        // No token was chosen by a person: off loopback that is refused, --no-auth or not.
        return Err(http::HttpError::NoTokenOffLoopback(auth.listen).to_string());
    }
    if auth.no_auth {
        eprintln!(
            "factory-mcp: WARNING: --no-auth: HTTP requests on {} are NOT authenticated. Any \
             process on this machine, of any user, can call every tool, spend money through \
             launches and answer confirmations. Use it only on a single-user machine you trust.",
            auth.listen
        );
        return Ok(None);
    }
    let path = http::default_token_path(env).ok_or(
        "no state directory for the HTTP auth token: set XDG_STATE_HOME or HOME, or pass \
         --auth-token-file FILE",
    )?;
    let (token, created) = http::load_or_create(&path)?;
    eprintln!(
        "factory-mcp: HTTP clients must send `Authorization: Bearer <token>` with the token in {} ({})",
        path.display(),
        if created {
            "created now, readable by you only"
        } else {
            "reused"
        }
    );
    Ok(Some(token))
}

/// A token file that already exists (configured or default), read only to redact its value.
fn existing_token(
    settings: &Settings,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<SecretString> {
    let path = settings
        .policy
        .http
        .auth_token_file
        .clone()
        .or_else(|| http::default_token_path(env))?;
    http::read_token_file(&path).ok()
}

/// Run `serve` to completion.
pub async fn run(args: ServeArgs, over: Option<PlatformOverride>) -> ExitCode {
    let settings = match Settings::load(&args.settings, &env) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("factory-mcp: {e}");
            return ExitCode::from(2);
        }
    };
    let auth = args.http.map(|listen| HttpAuth {
        listen,
        no_auth: args.no_auth,
    });
    let shared = match crate::state_store::open_shared(&settings.policy.state, &env).await {
        Ok(shared) => shared,
        Err(e) => {
            eprintln!("factory-mcp: {e}");
            return ExitCode::from(2);
        }
    };
    let prepared = match prepare(&settings, over.as_ref(), auth, shared) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("factory-mcp: {e}");
            return ExitCode::from(2);
        }
    };
    // A second init (tests that run serve twice in one process) keeps the first subscriber.
    let _ = crate::tracing_setup::init(args.verbose, prepared.redactor.clone());
    let Prepared {
        state,
        gate,
        http_token,
        ops,
        ..
    } = prepared;
    let page_state = state.clone();
    let server = factory_tools::build_server(state, |spec| gate.allows(spec));
    let limits = settings.policy.http.clone();
    let result = match args.http {
        None => {
            // The approval page: a loopback port opened on first need.
            page_state
                .page
                .install(Arc::new(crate::page::Loopback::new(Arc::downgrade(
                    &page_state,
                ))));
            serve_stdio(server).await
        }
        Some(listen) => {
            let opts = HttpOptions {
                listen,
                auth_token: http_token,
                extra_allowed_hosts: args.allowed_hosts,
                extra_allowed_origins: args.allowed_origins,
                max_body_bytes: http::DEFAULT_MAX_BODY_BYTES,
                header_read_timeout: Duration::from_secs(limits.header_read_timeout_s),
                max_connections: limits.max_connections as usize,
                max_sessions: limits.max_sessions as usize,
                oauth: None,
            };
            let mut opts = opts;
            if let Some(policy) = settings.policy.oauth.clone() {
                match http::oauth::OAuth::new(policy) {
                    Ok(o) => opts.oauth = Some(Arc::new(o)),
                    Err(e) => {
                        eprintln!("factory-mcp: {e}");
                        return ExitCode::from(2);
                    }
                }
            }
            serve_http(server, opts, ops, page_state).await
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("factory-mcp: {e}");
            ExitCode::from(1)
        }
    }
}

async fn serve_stdio(server: FactoryServer<AppState>) -> Result<(), String> {
    let (read, write) = crate::stdio::stdio();
    let running = server
        .serve(crate::lines::LineTransport::new(read, write))
        .await
        .map_err(|e| format!("stdio transport failed to start: {e}"))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("stdio transport failed: {e}"))
}

async fn serve_http(
    server: FactoryServer<AppState>,
    opts: HttpOptions,
    ops: http::ops::OpsOptions,
    state: Arc<AppState>,
) -> Result<(), String> {
    let listener = http::bind(&opts).await.map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let ct = CancellationToken::new();
    // The approval page lives on this server, outside the bearer check.
    let page_addr = if addr.ip().is_unspecified() {
        std::net::SocketAddr::from(([127, 0, 0, 1], addr.port()))
    } else {
        addr
    };
    // Under OAuth with `page_client_id`, a person signs in with the issuer on the page, whose
    // address is then the public page origin the issuer sends them back to. Otherwise, behind
    // a load balancer the page's links use the public address, and its host is ours.
    let signin = opts
        .oauth
        .clone()
        .and_then(http::signin::SignIn::new)
        .map(Arc::new);
    let public = state.policy.http.public_url.clone();
    let page_origin = match (&signin, &public) {
        (Some(s), _) => s.origin().to_owned(),
        (None, Some(url)) => url.trim_end_matches('/').to_string(),
        (None, None) => format!("http://{page_addr}"),
    };
    let mut page_hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()];
    if !addr.ip().is_loopback() && !addr.ip().is_unspecified() {
        page_hosts.push(page_addr.ip().to_string());
    }
    if let Some(host) = public.as_deref().and_then(public_host) {
        page_hosts.push(host);
    }
    if signin.is_some()
        && let Some(host) = page_origin.split_once("://").map(|(_, h)| h.to_owned())
    {
        page_hosts.push(host);
    }
    page_hosts.extend(opts.extra_allowed_hosts.iter().cloned());
    state
        .page
        .install(Arc::new(crate::page::SameServer(page_origin)));
    // Before the first request: the metrics recorder and listener, and /healthz, /readyz.
    let ops_routes = http::ops::start(&ops, state.clone(), &opts, ct.child_token()).await?;
    let app = http::router(move || server.clone(), &opts, ct.child_token())
        .merge(crate::page::router(state, page_hosts, signin))
        .merge(ops_routes);
    tracing::info!(
        %addr,
        header_read_timeout_s = opts.header_read_timeout.as_secs(),
        max_connections = http::effective_max_connections(opts.max_connections),
        max_sessions = opts.max_sessions,
        "serving MCP over streamable HTTP at /mcp"
    );
    eprintln!("factory-mcp: serving MCP at http://{addr}/mcp");
    let shutdown = ct.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        shutdown.cancel();
    });
    http::serve(listener, app, &opts, ct)
        .await
        .map_err(|e| e.to_string())
}

/// The host (with its port, when it has one) of a public URL, as a `Host` header names it.
fn public_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let host = rest.split(['/', '?', '#']).next()?;
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "pit_shared_redactor_test_0123456789abcdef";

    /// The log layer and the tools redact with the same redactor, built once per start.
    #[test]
    fn the_log_and_the_tools_share_one_redactor() {
        let settings = Settings {
            policy: factory_policies::Policy::default(),
            config_file: None,
        };
        let over = PlatformOverride {
            base_url: "http://127.0.0.1:9".into(),
            traces_url: "http://127.0.0.1:9".into(),
            api_key: SecretString::from(KEY),
            frontend_url: None,
        };
        let prepared = prepare(&settings, Some(&over), None, None).expect("the state builds");
        assert!(Arc::ptr_eq(&prepared.redactor, &prepared.state.redactor));
        let shown = prepared
            .redactor
            .redact(&format!("key={KEY} "))
            .into_owned();
        assert!(!shown.contains(KEY), "{shown}");
    }

    #[test]
    fn the_public_host_is_what_a_host_header_names() {
        assert_eq!(
            public_host("https://Factory.example.com/").as_deref(),
            Some("factory.example.com")
        );
        assert_eq!(
            public_host("http://gw.internal:8080/path?q").as_deref(),
            Some("gw.internal:8080")
        );
        assert_eq!(public_host("https://"), None);
        assert_eq!(public_host("nonsense"), None);
    }
}
