//! The policy file model (`--config FILE` or `$XDG_CONFIG_HOME/factory-mcp/config.toml`):
//! every key, its safe default, and the checks that stop the server at start naming the key.
//! Tool and toolset names are checked by the server against the catalogue
//! ([`Policy::check_tool_names`]), since the catalogue lives elsewhere.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// How a billable launch is confirmed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmMode {
    /// A person confirms each launch (the client's form, or `factory-mcp approve PLAN_ID`).
    #[default]
    Human,
    /// A person confirms each launch out of band only: a form answer in the client is never
    /// taken as a person's yes (a client can answer its own form); only `factory-mcp approve`
    /// on a terminal (or the approval page) counts.
    OutOfBand,
    /// The plan id suffices (automation); requires both cost caps.
    Plan,
}

impl fmt::Display for ConfirmMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfirmMode::Human => "human",
            ConfirmMode::OutOfBand => "out_of_band",
            ConfirmMode::Plan => "plan",
        })
    }
}

impl FromStr for ConfirmMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "human" => Ok(ConfirmMode::Human),
            "out_of_band" => Ok(ConfirmMode::OutOfBand),
            "plan" => Ok(ConfirmMode::Plan),
            other => Err(format!(
                "expected \"human\", \"out_of_band\" or \"plan\", got {other:?}"
            )),
        }
    }
}

/// `[secrets]`: where the forwardable secret values come from besides the environment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecretsPolicy {
    /// An env file (`KEY=VALUE` lines) holding `WANDB_API_KEY` / `HF_TOKEN`.
    pub env_file: Option<PathBuf>,
}

/// What `factory-mcp guard` does to a run that breaks a limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuardAction {
    /// Stop the run (it ends; its checkpoints stay).
    #[default]
    Stop,
    /// Pause the run (it holds no GPUs; a person may resume it).
    Pause,
}

impl GuardAction {
    pub fn as_str(self) -> &'static str {
        match self {
            GuardAction::Stop => "stop",
            GuardAction::Pause => "pause",
        }
    }
}

/// `[guard]`: stop conditions `factory-mcp guard` enforces on the owner's active runs (besides
/// `max_active_cost_per_hour_usd`, which it enforces by stopping the newest runs first).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GuardPolicy {
    /// Longest a run may run, in hours of the platform's clock since it started.
    pub max_wall_clock_hours: Option<f64>,
    /// Most a run may cost: its hourly rate × hours since it started.
    pub max_run_cost_usd: Option<f64>,
    pub action: GuardAction,
    /// Seconds between sweeps (default 60).
    pub interval_seconds: Option<u64>,
}

/// `[http]`: the streamable-HTTP transport.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HttpPolicy {
    /// A file holding the bearer token HTTP clients must present. Absent: the token file in the
    /// state directory (`$XDG_STATE_HOME/factory-mcp/http-token`), created on first use.
    pub auth_token_file: Option<PathBuf>,
    /// Seconds a connection may take to send a request's headers (also how long an idle
    /// keep-alive connection stays open); then it is closed.
    pub header_read_timeout_s: u64,
    /// Most connections open at once; past it the oldest idle connection is closed to admit a
    /// new one (a new one is refused with 503 when every connection is busy).
    pub max_connections: u32,
    /// Most MCP sessions (2025-11-25 era) alive at once; past it the session idle the longest
    /// is closed to admit a new one.
    pub max_sessions: u32,
    // ---- operators (issue 21 §3) ----
    /// Serve Prometheus metrics at `/metrics` on this separate address (off when absent). Off
    /// loopback only with `metrics_token_file`.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// A file holding the bearer token `/metrics` requires (never the MCP clients' token).
    pub metrics_token_file: Option<PathBuf>,
    /// How long `/readyz` keeps its answer, in milliseconds (so a load balancer polling it
    /// cannot hammer the platform); 0 probes on every request.
    pub ready_cache_ms: u64,
    /// The address people reach this server at (`https://factory.example.com`), when it is
    /// not the listening address — replicas behind one load balancer or reverse proxy. The
    /// approval page's links use it, and its host passes the page's Host check.
    pub public_url: Option<String>,
}

impl HttpPolicy {
    pub const DEFAULT_HEADER_READ_TIMEOUT_S: u64 = 10;
    pub const DEFAULT_MAX_CONNECTIONS: u32 = 256;
    pub const DEFAULT_MAX_SESSIONS: u32 = 128;
    pub const DEFAULT_READY_CACHE_MS: u64 = 2_000;
    pub const MAX_READY_CACHE_MS: u64 = 60_000;
}

impl Default for HttpPolicy {
    fn default() -> Self {
        HttpPolicy {
            auth_token_file: None,
            header_read_timeout_s: HttpPolicy::DEFAULT_HEADER_READ_TIMEOUT_S,
            max_connections: HttpPolicy::DEFAULT_MAX_CONNECTIONS,
            max_sessions: HttpPolicy::DEFAULT_MAX_SESSIONS,
            metrics_listen: None,
            metrics_token_file: None,
            ready_cache_ms: HttpPolicy::DEFAULT_READY_CACHE_MS,
            public_url: None,
        }
    }
}

/// `[state]`: where durable state lives. Absent `url`: the SQLite database in the state
/// directory (one machine). `url = "postgres://user@host:port/db"`: a PostgreSQL database
/// every replica of a gateway shares. The password is never in the URL: `password_file`, or
/// the `FACTORY_MCP_STATE_PASSWORD` environment variable.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StatePolicy {
    pub url: Option<String>,
    /// A file holding the database password (readable by the server's user only).
    pub password_file: Option<PathBuf>,
    /// How long a dispatch claim holds before another process may take it over (default:
    /// the create timeout + 30 s).
    pub dispatch_lease_seconds: Option<u64>,
}

impl StatePolicy {
    /// Whether `url` is refused, and why (a password in it; not PostgreSQL).
    pub fn check_url(url: &str) -> Result<(), String> {
        crate::store::postgres::check_url(url)
            .map(|_| ())
            .map_err(|e| match e {
                crate::store::StoreError::Config(why) => why,
                other => other.to_string(),
            })
    }
}

/// `[platform]`: timeouts for calls to the Prime API, in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PlatformTimeouts {
    pub request_timeout_s: u64,
    pub connect_timeout_s: u64,
    /// Run creation (the platform validates the config synchronously; the CLI waits 120 s).
    pub create_timeout_s: u64,
}

impl Default for PlatformTimeouts {
    fn default() -> Self {
        PlatformTimeouts {
            request_timeout_s: 30,
            connect_timeout_s: 10,
            create_timeout_s: 120,
        }
    }
}

// ---- hardening (issue 17): checkers that run code, uploads of secret-looking files ----------

/// `[validate]`: the optional checkers of `validate_config`. Each runs code on this machine, so
/// only a person turns it on (here or with a flag); a tool argument never can.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ValidatePolicy {
    /// A prime-rl checkout (outside the workspace and the allowed directories) whose own schema
    /// also checks configs: `uv run --no-sync python -I` inside it, with a scrubbed environment.
    pub prime_rl_checkout: Option<PathBuf>,
    /// Also run `prime train validate -o json` when `prime` is on the PATH.
    pub prime_cli: bool,
    /// Time limit of each checker, in seconds.
    pub checker_timeout_s: u64,
}

impl Default for ValidatePolicy {
    fn default() -> Self {
        ValidatePolicy {
            prime_rl_checkout: None,
            prime_cli: false,
            checker_timeout_s: 60,
        }
    }
}

/// `[upload]`: what `upload_to_volume` may send to a (shared) volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UploadPolicy {
    /// Upload files named like secret files (`.env*`, `.netrc`, `id_*`, `*.pem`,
    /// `*credentials*`). Their content is still scanned for secrets either way.
    pub allow_secret_files: bool,
}

// ---- end hardening block ---------------------------------------------------------------------

/// `[results]`: how large a tool's answer may be (issue 19). A default answer aims at 4 KB; this
/// is the hard cap past which an answer is never sent whole.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ResultsPolicy {
    /// Most bytes of a result's text block (the summary line and the compact JSON of the
    /// structured content, which it repeats).
    pub max_bytes: u64,
}

impl ResultsPolicy {
    pub const DEFAULT_MAX_BYTES: u64 = 16 * 1024;
    /// Below this the compact answer that replaces a cut one (its summary and how to get the
    /// rest) could itself be cut.
    pub const MIN_MAX_BYTES: u64 = 4 * 1024;
    /// The transports' request body cap; a larger answer would not help any client.
    pub const MAX_MAX_BYTES: u64 = 1024 * 1024;

    /// Whether an answer of `bytes` may be sent whole.
    pub fn admits(&self, bytes: usize) -> bool {
        u64::try_from(bytes).is_ok_and(|b| b <= self.max_bytes)
    }
}

impl Default for ResultsPolicy {
    fn default() -> Self {
        ResultsPolicy {
            max_bytes: ResultsPolicy::DEFAULT_MAX_BYTES,
        }
    }
}

/// The policy. Every field has a safe default; `Policy::default()` is what runs with no file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Policy {
    /// Hide every tool that is not read-only.
    pub read_only: bool,
    pub confirm: ConfirmMode,
    /// How long a plan stays launchable.
    pub plan_ttl_seconds: u64,
    /// Team ids runs may be launched for; `"personal"` stands for the personal account.
    /// Absent: any.
    pub allowed_teams: Option<Vec<String>>,
    /// GPU types runs may use (case-insensitive). Absent: any.
    pub allowed_gpu_types: Option<Vec<String>>,
    pub max_gpus_per_run: Option<u32>,
    /// On-demand price cap of one run, USD per hour.
    pub max_cost_per_hour_usd: Option<f64>,
    pub max_active_runs: Option<u32>,
    /// Cap on the summed hourly price of all active runs plus the new one.
    pub max_active_cost_per_hour_usd: Option<f64>,
    pub max_steps: Option<u64>,
    /// What a GPU-hour of reserved capacity costs, so budgets count reserved runs (the
    /// platform publishes no price for it). Absent: a reserved plan is shown as "reserved —
    /// not counted in budgets", and refused under `confirm = "plan"` (the caps cannot be
    /// checked).
    pub reserved_price_per_gpu_hour_usd: Option<f64>,
    /// Whether the model may set `personal` / `relaunch_after_failure` in plan mode.
    pub allow_model_overrides: bool,
    pub secrets: SecretsPolicy,
    /// The root that `config_path` and `dest_dir` must resolve inside.
    pub workspace: Option<PathBuf>,
    /// Further directories file arguments may resolve inside.
    pub allow_dirs: Vec<PathBuf>,
    /// Toolsets to expose. Absent: all.
    pub toolsets: Option<Vec<String>>,
    /// Individual tools to expose (in addition to `toolsets`). Absent: none beyond toolsets.
    pub tools: Option<Vec<String>>,
    /// Hide destructive tools.
    pub disable_destructive: bool,
    pub http: HttpPolicy,
    pub state: StatePolicy,
    pub platform: PlatformTimeouts,
    pub guard: GuardPolicy,
    pub validate: ValidatePolicy,
    pub upload: UploadPolicy,
    pub results: ResultsPolicy,
    /// `[oauth]` (issue 21 §2): the HTTP gateway as an OAuth resource server.
    pub oauth: Option<crate::scopes::OAuthPolicy>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            read_only: false,
            confirm: ConfirmMode::Human,
            plan_ttl_seconds: Policy::DEFAULT_PLAN_TTL_SECONDS,
            allowed_teams: None,
            allowed_gpu_types: None,
            max_gpus_per_run: None,
            max_cost_per_hour_usd: None,
            max_active_runs: None,
            max_active_cost_per_hour_usd: None,
            max_steps: None,
            reserved_price_per_gpu_hour_usd: None,
            allow_model_overrides: false,
            secrets: SecretsPolicy::default(),
            workspace: None,
            allow_dirs: Vec::new(),
            toolsets: None,
            tools: None,
            disable_destructive: false,
            http: HttpPolicy::default(),
            state: StatePolicy::default(),
            platform: PlatformTimeouts::default(),
            guard: GuardPolicy::default(),
            validate: ValidatePolicy::default(),
            upload: UploadPolicy::default(),
            results: ResultsPolicy::default(),
            oauth: None,
        }
    }
}

/// A refused policy: the dotted key and why. `Display`: `policy key max_gpus_per_run: …`.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum PolicyError {
    #[error("policy file is not valid TOML (line {line}, column {column}): {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("policy key {key}: {reason}")]
    Key { key: String, reason: String },
}

impl PolicyError {
    /// The dotted key the error is about, when it is about one.
    pub fn key(&self) -> Option<&str> {
        match self {
            PolicyError::Key { key, .. } => Some(key),
            PolicyError::Syntax { .. } => None,
        }
    }

    fn key_err(key: &str, reason: impl Into<String>) -> Self {
        PolicyError::Key {
            key: key.to_string(),
            reason: reason.into(),
        }
    }
}

const MAX_TIMEOUT_S: u64 = 3600;

/// The longest create timeout: a create that commits later than the run-list cache re-reads
/// (`runs_cache::STOP_MARGIN_MS` before its last read, less a minute for the settle margin and
/// skew) could be missed by the reconciliation before a retry, and a second run follow.
pub const MAX_CREATE_TIMEOUT_S: u64 = (crate::runs_cache::STOP_MARGIN_MS / 1000) as u64 - 60;
const MAX_PLAN_TTL_SECONDS: u64 = 7 * 24 * 3600;
const MAX_HEADER_READ_TIMEOUT_S: u64 = 300;
const MAX_HTTP_CONNECTIONS: u64 = 65_536;
const MAX_HTTP_SESSIONS: u64 = 65_536;

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Turns serde's "unknown field `x`, expected …" into the key name `x`.
fn unknown_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split('`').next()
}

impl Policy {
    pub const DEFAULT_PLAN_TTL_SECONDS: u64 = 3600;

    /// Parses and validates a policy file. Errors name the dotted key and the reason.
    pub fn from_toml_str(text: &str) -> Result<Policy, PolicyError> {
        // Syntax first, so that a syntax error reports a position rather than a key.
        if let Err(e) = toml::from_str::<toml::Table>(text) {
            let (line, column) = e.span().map_or((0, 0), |s| line_col(text, s.start));
            return Err(PolicyError::Syntax {
                line,
                column,
                message: e.message().trim().to_string(),
            });
        }
        let de = toml::Deserializer::parse(text).map_err(|e| PolicyError::Syntax {
            line: 0,
            column: 0,
            message: e.message().trim().to_string(),
        })?;
        let policy: Policy = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = e.path().to_string();
            let message = e.inner().message().trim().to_string();
            match unknown_field(&message) {
                Some(field) => {
                    // serde_path_to_error already ends the path with the unknown key.
                    let key = if path == "." || path.is_empty() {
                        field.to_string()
                    } else if path == field || path.ends_with(&format!(".{field}")) {
                        path
                    } else {
                        format!("{path}.{field}")
                    };
                    PolicyError::key_err(&key, "unknown key")
                }
                None => PolicyError::key_err(&path, message),
            }
        })?;
        policy.validate()?;
        Ok(policy)
    }

    /// The checks that do not depend on the catalogue: caps positive and finite, timeouts
    /// and plan lifetime in range, and `confirm = "plan"` only with both cost caps.
    pub fn validate(&self) -> Result<(), PolicyError> {
        self.validate_state()?;
        self.validate_guard()?;
        self.validate_caps()?;
        self.validate_timeouts_and_http()?;
        self.validate_lists()?;
        if let Some((key, reason)) = self.oauth.as_ref().and_then(|o| o.refusal()) {
            return Err(PolicyError::key_err(key, reason));
        }
        self.validate_checkers_and_confirm()
    }

    /// `[state]` and `http.public_url`: a PostgreSQL URL without a password; a lease in range;
    /// an http(s) public address.
    fn validate_state(&self) -> Result<(), PolicyError> {
        if let Some(url) = &self.state.url {
            StatePolicy::check_url(url).map_err(|why| PolicyError::key_err("state.url", why))?;
        }
        if let Some(s) = self.state.dispatch_lease_seconds
            && !(1..=MAX_TIMEOUT_S).contains(&s)
        {
            return Err(PolicyError::key_err(
                "state.dispatch_lease_seconds",
                format!("must be between 1 and {MAX_TIMEOUT_S} seconds, got {s}"),
            ));
        }
        if let Some(u) = &self.http.public_url {
            let ok = (u.starts_with("https://") || u.starts_with("http://"))
                && u.len() < 2048
                && !u.chars().any(|c| c.is_control() || c.is_whitespace());
            if !ok {
                return Err(PolicyError::key_err(
                    "http.public_url",
                    "must be an http:// or https:// address without spaces, e.g. \
                     https://factory.example.com",
                ));
            }
        }
        Ok(())
    }

    /// `[guard]`: positive limits, a sane sweep interval.
    fn validate_guard(&self) -> Result<(), PolicyError> {
        for (key, v) in [
            (
                "guard.max_wall_clock_hours",
                self.guard.max_wall_clock_hours,
            ),
            ("guard.max_run_cost_usd", self.guard.max_run_cost_usd),
        ] {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0)
            {
                return Err(PolicyError::key_err(
                    key,
                    format!("must be a positive number, got {v}"),
                ));
            }
        }
        if let Some(i) = self.guard.interval_seconds
            && !(5..=86_400).contains(&i)
        {
            return Err(PolicyError::key_err(
                "guard.interval_seconds",
                format!("must be between 5 and 86400, got {i}"),
            ));
        }
        Ok(())
    }

    /// Money caps positive; count caps at least 1; the plan lifetime in range.
    fn validate_caps(&self) -> Result<(), PolicyError> {
        for (key, cap) in [
            ("max_cost_per_hour_usd", self.max_cost_per_hour_usd),
            (
                "max_active_cost_per_hour_usd",
                self.max_active_cost_per_hour_usd,
            ),
            (
                "reserved_price_per_gpu_hour_usd",
                self.reserved_price_per_gpu_hour_usd,
            ),
        ] {
            if let Some(v) = cap
                && !(v.is_finite() && v > 0.0)
            {
                return Err(PolicyError::key_err(
                    key,
                    format!("must be a positive number of USD per hour, got {v}"),
                ));
            }
        }
        for (key, cap) in [
            ("max_gpus_per_run", self.max_gpus_per_run.map(u64::from)),
            ("max_active_runs", self.max_active_runs.map(u64::from)),
            ("max_steps", self.max_steps),
        ] {
            if cap == Some(0) {
                return Err(PolicyError::key_err(
                    key,
                    "must be at least 1 (to allow no launches, set read_only = true)",
                ));
            }
        }
        if self.plan_ttl_seconds == 0 || self.plan_ttl_seconds > MAX_PLAN_TTL_SECONDS {
            return Err(PolicyError::key_err(
                "plan_ttl_seconds",
                format!(
                    "must be between 1 and {MAX_PLAN_TTL_SECONDS}, got {}",
                    self.plan_ttl_seconds
                ),
            ));
        }
        Ok(())
    }

    /// `[platform]` timeouts and `[http]` limits in range.
    fn validate_timeouts_and_http(&self) -> Result<(), PolicyError> {
        for (key, v) in [
            (
                "platform.request_timeout_s",
                self.platform.request_timeout_s,
            ),
            (
                "platform.connect_timeout_s",
                self.platform.connect_timeout_s,
            ),
            ("platform.create_timeout_s", self.platform.create_timeout_s),
        ] {
            if v == 0 || v > MAX_TIMEOUT_S {
                return Err(PolicyError::key_err(
                    key,
                    format!("must be between 1 and {MAX_TIMEOUT_S} seconds, got {v}"),
                ));
            }
        }
        if self.platform.create_timeout_s > MAX_CREATE_TIMEOUT_S {
            return Err(PolicyError::key_err(
                "platform.create_timeout_s",
                format!(
                    "must be at most {MAX_CREATE_TIMEOUT_S} seconds (a create committing later could be missed by the check before a retry), got {}",
                    self.platform.create_timeout_s
                ),
            ));
        }
        let ranges: [(&str, u64, u64, u64); 5] = [
            (
                "http.ready_cache_ms",
                self.http.ready_cache_ms,
                0,
                HttpPolicy::MAX_READY_CACHE_MS,
            ),
            (
                "http.header_read_timeout_s",
                self.http.header_read_timeout_s,
                1,
                MAX_HEADER_READ_TIMEOUT_S,
            ),
            (
                "http.max_connections",
                u64::from(self.http.max_connections),
                1,
                MAX_HTTP_CONNECTIONS,
            ),
            (
                "http.max_sessions",
                u64::from(self.http.max_sessions),
                1,
                MAX_HTTP_SESSIONS,
            ),
            (
                "results.max_bytes",
                self.results.max_bytes,
                ResultsPolicy::MIN_MAX_BYTES,
                ResultsPolicy::MAX_MAX_BYTES,
            ),
        ];
        for (key, v, lo, hi) in ranges {
            if !(lo..=hi).contains(&v) {
                return Err(PolicyError::key_err(
                    key,
                    format!("must be between {lo} and {hi}, got {v}"),
                ));
            }
        }
        Ok(())
    }

    /// No empty entries in the allow lists and tool selections.
    fn validate_lists(&self) -> Result<(), PolicyError> {
        for (key, list) in [
            ("allowed_teams", &self.allowed_teams),
            ("allowed_gpu_types", &self.allowed_gpu_types),
            ("toolsets", &self.toolsets),
            ("tools", &self.tools),
        ] {
            if let Some(items) = list
                && items.iter().any(|s| s.trim().is_empty())
            {
                return Err(PolicyError::key_err(key, "entries must not be empty"));
            }
        }
        Ok(())
    }

    /// The checkers' timeout; `confirm = "plan"` needs both money caps.
    fn validate_checkers_and_confirm(&self) -> Result<(), PolicyError> {
        let t = self.validate.checker_timeout_s;
        if t == 0 || t > MAX_TIMEOUT_S {
            return Err(PolicyError::key_err(
                "validate.checker_timeout_s",
                format!("must be between 1 and {MAX_TIMEOUT_S} seconds, got {t}"),
            ));
        }
        if self.confirm == ConfirmMode::Plan {
            let missing: Vec<&str> = [
                ("max_cost_per_hour_usd", self.max_cost_per_hour_usd),
                (
                    "max_active_cost_per_hour_usd",
                    self.max_active_cost_per_hour_usd,
                ),
            ]
            .into_iter()
            .filter(|(_, v)| v.is_none())
            .map(|(k, _)| k)
            .collect();
            if !missing.is_empty() {
                return Err(PolicyError::key_err(
                    "confirm",
                    format!(
                        "\"plan\" launches without asking a person, so it requires {}",
                        missing.join(" and ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks `toolsets` and `tools` against the catalogue's names.
    pub fn check_tool_names(
        &self,
        known_toolsets: &[&str],
        known_tools: &[&str],
    ) -> Result<(), PolicyError> {
        for (key, list, known) in [
            ("toolsets", &self.toolsets, known_toolsets),
            ("tools", &self.tools, known_tools),
        ] {
            for name in list.iter().flatten() {
                if !known.contains(&name.as_str()) {
                    return Err(PolicyError::key_err(
                        key,
                        format!("unknown name {name:?}; known: {}", known.join(", ")),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether a launch for `team` (`None` = the personal account) is allowed.
    pub fn allows_team(&self, team: Option<&str>) -> bool {
        match &self.allowed_teams {
            None => true,
            Some(list) => list.iter().any(|t| t == team.unwrap_or("personal")),
        }
    }

    /// Whether a GPU type is allowed (case-insensitive).
    pub fn allows_gpu_type(&self, gpu_type: &str) -> bool {
        match &self.allowed_gpu_types {
            None => true,
            Some(list) => list.iter().any(|g| g.eq_ignore_ascii_case(gpu_type)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_at_the_cap_is_sent_and_one_byte_more_is_not() {
        let cap = ResultsPolicy::default();
        assert!(cap.admits(0));
        assert!(cap.admits(16 * 1024));
        assert!(!cap.admits(16 * 1024 + 1));
        assert!(!cap.admits(usize::MAX));
    }

    #[test]
    fn a_create_timeout_the_run_cache_could_not_cover_is_refused() {
        assert_eq!(MAX_CREATE_TIMEOUT_S, 540);
        let at = |s: u64| Policy::from_toml_str(&format!("[platform]\ncreate_timeout_s = {s}\n"));
        assert!(at(540).is_ok());
        let e = at(541).unwrap_err().to_string();
        assert!(
            e.contains("platform.create_timeout_s") && e.contains("at most 540"),
            "{e}"
        );
    }
}
