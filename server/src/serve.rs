//! `factory-mcp serve`: build the shared state from the settings and the environment, gate the
//! catalogue, and serve MCP over stdio (default) or streamable HTTP (`--http ADDR`).

use std::{net::SocketAddr, process::ExitCode, sync::Arc};

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
    #[arg(long, default_value_t = 10.0, value_name = "X")]
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
}

/// Build the state from settings; errors are for the operator and stop the server at start.
pub fn prepare(settings: &Settings, over: Option<&PlatformOverride>) -> Result<Prepared, String> {
    let policy = settings.policy.clone();
    let gate = Gate::new(
        policy.read_only,
        policy.disable_destructive,
        policy.toolsets.as_deref(),
        policy.tools.as_deref(),
    )?;
    let http_token = policy
        .http
        .auth_token_file
        .as_deref()
        .map(http::read_token_file)
        .transpose()?;
    let mut extra = KnownSecrets::new();
    if let Some(token) = &http_token {
        extra.add("FACTORY_MCP_HTTP_TOKEN", token);
    }
    let built = AppState::build(policy, over, &env, extra)?;
    Ok(Prepared {
        redactor: Arc::new(Redactor::new(built.known)),
        state: Arc::new(built.state),
        gate,
        http_token,
    })
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
    let prepared = match prepare(&settings, over.as_ref()) {
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
        ..
    } = prepared;
    let server = factory_tools::build_server(state, |spec| gate.allows(spec));
    let result = match args.http {
        None => serve_stdio(server).await,
        Some(listen) => {
            let opts = HttpOptions {
                listen,
                auth_token: http_token,
                extra_allowed_hosts: args.allowed_hosts,
                extra_allowed_origins: args.allowed_origins,
                max_body_bytes: http::DEFAULT_MAX_BODY_BYTES,
            };
            serve_http(server, opts).await
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
    let running = server
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| format!("stdio transport failed to start: {e}"))?;
    running
        .waiting()
        .await
        .map(|_| ())
        .map_err(|e| format!("stdio transport failed: {e}"))
}

async fn serve_http(server: FactoryServer<AppState>, opts: HttpOptions) -> Result<(), String> {
    let listener = http::bind(&opts).await.map_err(|e| e.to_string())?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let ct = CancellationToken::new();
    let app = http::router(move || server.clone(), &opts, ct.child_token());
    tracing::info!(%addr, "serving MCP over streamable HTTP at /mcp");
    eprintln!("factory-mcp: serving MCP at http://{addr}/mcp");
    let shutdown = ct.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        shutdown.cancel();
    });
    http::serve(listener, app, ct)
        .await
        .map_err(|e| e.to_string())
}
