//! The resolved client settings: where the platform and the traces service live, the API key,
//! the active team and where each came from, timeouts and the retry policy.
//!
//! Resolution from the environment and `~/.prime` lives in [`crate::credentials`]; this module
//! only holds the result, so tests and the sandbox can build settings by hand.

use std::time::Duration;

use secrecy::{ExposeSecret, SecretString};

/// Default API base (`prime` CLI 0.18.0).
pub const DEFAULT_BASE_URL: &str = "https://api.primeintellect.ai";
/// Default dashboard base used for "monitor run at" links.
pub const DEFAULT_FRONTEND_URL: &str = "https://app.primeintellect.ai";
/// Default Prime Traces base. The traces service never falls back to the API base (§9).
pub const DEFAULT_TRACES_URL: &str = "https://api.primeintellect.ai";

/// Where a resolved setting came from, so `whoami` can say so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingSource {
    /// An environment variable (its name).
    Env(&'static str),
    /// A named context file `~/.prime/environments/<name>.json` selected by `PRIME_CONTEXT`.
    Context(String),
    /// `~/.prime/config.json`.
    ConfigFile,
    /// The built-in default.
    Default,
    /// Set by the embedding program (sandbox, tests).
    Explicit,
}

impl std::fmt::Display for SettingSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingSource::Env(name) => write!(f, "environment variable {name}"),
            SettingSource::Context(name) => {
                write!(f, "context '{name}' (~/.prime/environments/{name}.json)")
            }
            SettingSource::ConfigFile => f.write_str("~/.prime/config.json"),
            SettingSource::Default => f.write_str("built-in default"),
            SettingSource::Explicit => f.write_str("set by the server"),
        }
    }
}

/// The team requests are scoped to by default, with its origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveTeam {
    /// The team id (a CUID such as `cteam…`).
    pub id: String,
    /// Where it came from (`PRIME_TEAM_ID`, a context, the config file).
    pub source: SettingSource,
}

/// Timeouts, as the CLI uses them by default (§1); tests shorten them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Whole-request timeout of ordinary platform calls (CLI: 30 s).
    pub request: Duration,
    /// TCP/TLS connect timeout (CLI: 10 s).
    pub connect: Duration,
    /// Create run and resume run (CLI: 120 s).
    pub create: Duration,
    /// Traces service calls; for raw downloads this bounds the wait for headers and for each
    /// chunk, not the whole transfer (prime_traces: 120 s).
    pub traces: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            request: Duration::from_secs(30),
            connect: Duration::from_secs(10),
            create: Duration::from_secs(120),
            traces: Duration::from_secs(120),
        }
    }
}

/// Retry policy for idempotent GETs (the CLI never retries platform calls; we do, for reads
/// only). Creates, resumes, restarts, deletes, stops and volume creates are never retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Total attempts including the first (prime_traces: 3). `1` disables retries.
    pub max_attempts: usize,
    /// First backoff delay (prime_traces: 1 s, doubling).
    pub base_delay: Duration,
    /// Cap on a computed backoff delay (prime_traces: 30 s).
    pub max_delay: Duration,
    /// Cap on a delay asked for by `Retry-After` (prime_traces: 60 s).
    pub retry_after_cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            base_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(30),
            retry_after_cap: Duration::from_secs(60),
        }
    }
}

/// Everything the client needs. `Debug` never shows the key (`SecretString`).
#[derive(Debug, Clone)]
pub struct PlatformSettings {
    /// API base without a trailing `/` or `/api/v1`; the client appends `/api/v1`.
    pub base_url: String,
    /// Where `base_url` came from.
    pub base_url_source: SettingSource,
    /// Prime Traces base without a trailing `/`; the client appends `/api/v1`.
    pub traces_url: String,
    /// Dashboard base for links (`{frontend_url}/dashboard/training/{runId}`).
    pub frontend_url: String,
    /// The API key; `None` means every request fails before anything is sent.
    pub api_key: Option<SecretString>,
    /// Where the key came from (meaningful when `api_key` is set).
    pub api_key_source: SettingSource,
    /// The team calls are scoped to unless a call says otherwise; `None` = personal account.
    pub team: Option<ActiveTeam>,
    /// The user id saved by `prime whoami` (or `PRIME_USER_ID`), used by the legacy `mine`
    /// filter of run listing.
    pub user_id: Option<String>,
    /// Timeouts.
    pub timeouts: Timeouts,
    /// Retry policy for idempotent GETs.
    pub retry: RetryPolicy,
}

impl PlatformSettings {
    /// Settings for a known base and key (sandbox, tests): traces on the same base, no team.
    pub fn new(base_url: impl Into<String>, api_key: SecretString) -> Self {
        let base_url = normalize_base_url(&base_url.into());
        PlatformSettings {
            traces_url: base_url.clone(),
            base_url,
            base_url_source: SettingSource::Explicit,
            frontend_url: DEFAULT_FRONTEND_URL.to_owned(),
            api_key: Some(api_key),
            api_key_source: SettingSource::Explicit,
            team: None,
            user_id: None,
            timeouts: Timeouts::default(),
            retry: RetryPolicy::default(),
        }
    }

    /// Same settings with an explicitly chosen active team.
    pub fn with_team(mut self, team_id: impl Into<String>) -> Self {
        self.team = Some(ActiveTeam {
            id: team_id.into(),
            source: SettingSource::Explicit,
        });
        self
    }

    /// The active team id, if any.
    pub fn team_id(&self) -> Option<&str> {
        self.team.as_ref().map(|t| t.id.as_str())
    }

    /// The key masked to its last four characters (`…wxyz`), or `None` without a key. Keys of
    /// eight characters or fewer are fully masked, since four of them would be half the key.
    pub fn masked_api_key(&self) -> Option<String> {
        let key = self.api_key.as_ref()?.expose_secret();
        let count = key.chars().count();
        if count <= 8 {
            return Some("****".to_owned());
        }
        let tail: String = key.chars().skip(count - 4).collect();
        Some(format!("…{tail}"))
    }

    /// Dashboard link of a run, as the CLI prints it after dispatch.
    pub fn run_dashboard_url(&self, run_id: &str) -> String {
        format!(
            "{}/dashboard/training/{run_id}",
            self.frontend_url.trim_end_matches('/')
        )
    }
}

/// Strip trailing `/` and then one trailing `/api/v1`, as the CLI does for the API base.
pub fn normalize_base_url(raw: &str) -> String {
    let trimmed = raw.trim().trim_end_matches('/');
    let without = trimmed.strip_suffix("/api/v1").unwrap_or(trimmed);
    without.trim_end_matches('/').to_owned()
}
