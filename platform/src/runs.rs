//! Run endpoints: the prepare handshake, create (dispatch), pause, resume, restart, delete,
//! stop, list, get, and the monitoring reads (logs, env servers, metrics, progress,
//! checkpoints, samples, distributions, usage). §5, §6.
//!
//! Create, resume, restart, delete, stop and pause are sent exactly once: none is idempotent
//! on the server, and a timeout or 5xx leaves the outcome unknown
//! ([`PlatformError::is_ambiguous`]).

use reqwest::Method;
use serde_json::{Map, Value};

use crate::client::{PlatformClient, TeamScope};
use crate::error::PlatformError;
use crate::http::{Call, Service, decode, segment};
use crate::wire::runs::{
    CheckpointsResponse, CreateRunRequest, CreateRunResponse, DistributionsResponse,
    EnvServersResponse, ListedRun, LogsBody, LogsResponse, MetricsResponse, PauseRunResponse,
    PrepareRequest, PrepareResponse, ProgressResponse, ResumeRunRequest, RlRun, RunEnvelope,
    RunPage, RunUsage, SamplesResponse,
};

/// Substrings (case-insensitive) of a logs 404 that mean "the run has not started yet" (§5.6).
pub const LOG_STARTUP_MARKERS: [&str; 8] = [
    "queued",
    "pending",
    "starting",
    "initializing",
    "not started",
    "not available yet",
    "logs are not available",
    "logs not available",
];

/// Log levels the CLI accepts (sent upper-cased).
pub const LOG_LEVELS: [&str; 5] = ["ERROR", "WARNING", "SUCCESS", "INFO", "DEBUG"];

/// Outcome of the prepare handshake.
#[derive(Debug, Clone, PartialEq)]
pub enum PrepareOutcome {
    /// The server answered with a well-formed preparation.
    Prepared(Box<PrepareResponse>),
    /// 404 or 405: the server does not offer local validation; skip it.
    NotSupported {
        /// The status (404 or 405).
        status: u16,
    },
}

/// Page size of [`PlatformClient::scan_runs`] (the API's largest).
pub const SCAN_PAGE: u32 = 100;

/// What [`PlatformClient::scan_runs`] read.
#[derive(Debug, Clone, PartialEq)]
pub struct RunScan<R = RlRun> {
    /// The runs read, newest first.
    pub runs: Vec<R>,
    /// The platform's count of all the owner's runs, when it gave one.
    pub total: Option<u64>,
    /// The page limit stopped the scan before the last page (older runs not read).
    pub truncated: bool,
}

/// Query of `GET /rft/runs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListRunsQuery {
    /// 1-based page (default 1).
    pub page: u32,
    /// Page size (default 20).
    pub limit: u32,
    /// Team scoping (`team_id`); `prime train list --team` is `TeamScope::Team`.
    pub team: TeamScope,
    /// Only the caller's runs (`mine=true`).
    pub mine: bool,
}

impl Default for ListRunsQuery {
    fn default() -> Self {
        ListRunsQuery {
            page: 1,
            limit: 20,
            team: TeamScope::Active,
            mine: false,
        }
    }
}

/// Component whose logs to read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum LogComponent {
    /// The orchestrator (the default; `component` is not sent).
    #[default]
    Orchestrator,
    /// The trainer.
    Trainer,
    /// Inference.
    Inference,
    /// An environment server (requires `env_name`).
    EnvServer,
}

impl LogComponent {
    /// The wire value, `None` for the orchestrator.
    pub fn wire(self) -> Option<&'static str> {
        match self {
            LogComponent::Orchestrator => None,
            LogComponent::Trainer => Some("trainer"),
            LogComponent::Inference => Some("inference"),
            LogComponent::EnvServer => Some("env-server"),
        }
    }
}

/// Query of `GET /rft/runs/{id}/logs` (§5.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogsQuery {
    /// Lines from the end, 1..=5000 (default 1000); always sent.
    pub tail_lines: u32,
    /// Text (or regex) to search for.
    pub search: Option<String>,
    /// Treat `search` as a regex (`regex=true`; requires `search`).
    pub regex: bool,
    /// Minimum level; sent upper-cased; one of [`LOG_LEVELS`].
    pub level: Option<String>,
    /// Window in seconds, 60..=86400; server default (15 min) when absent.
    pub since_seconds: Option<u32>,
    /// Component.
    pub component: LogComponent,
    /// Environment name (with `component = EnvServer`).
    pub env_name: Option<String>,
    /// Pod index (supported by the API, never set by the CLI).
    pub pod_index: Option<u32>,
}

impl Default for LogsQuery {
    fn default() -> Self {
        LogsQuery {
            tail_lines: 1000,
            search: None,
            regex: false,
            level: None,
            since_seconds: None,
            component: LogComponent::Orchestrator,
            env_name: None,
            pod_index: None,
        }
    }
}

/// Query of `GET /rft/runs/{id}/metrics`; each bound is sent only when given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MetricsQuery {
    /// First step.
    pub min_step: Option<i64>,
    /// Last step.
    pub max_step: Option<i64>,
    /// Maximum records.
    pub limit: Option<u32>,
}

/// Query of `GET /rft/runs/{id}/samples` (rollouts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplesQuery {
    /// Step (required).
    pub step: i64,
    /// Page (default 1).
    pub page: u32,
    /// Page size (default 100).
    pub limit: u32,
}

impl SamplesQuery {
    /// First page of 100 samples at a step, as the CLI defaults.
    pub fn at_step(step: i64) -> Self {
        SamplesQuery {
            step,
            page: 1,
            limit: 100,
        }
    }
}

/// Query of `GET /rft/runs/{id}/distributions`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DistributionsQuery {
    /// Distribution type (`type`, free text, e.g. `rewards`).
    pub kind: Option<String>,
    /// Step.
    pub step: Option<i64>,
}

fn invalid(msg: impl Into<String>) -> PlatformError {
    PlatformError::InvalidArgument(msg.into())
}

impl LogsQuery {
    fn validate(&self) -> Result<Option<String>, PlatformError> {
        if !(1..=5000).contains(&self.tail_lines) {
            return Err(invalid("tail_lines must be between 1 and 5000"));
        }
        if let Some(s) = self.since_seconds
            && !(60..=86_400).contains(&s)
        {
            return Err(invalid("since_seconds must be between 60 and 86400"));
        }
        if self.regex && self.search.is_none() {
            return Err(invalid("regex needs a search pattern"));
        }
        if self.component == LogComponent::EnvServer && self.env_name.is_none() {
            return Err(invalid("env-server logs need an environment name"));
        }
        let level = self.level.as_ref().map(|l| l.trim().to_ascii_uppercase());
        if let Some(l) = &level
            && !LOG_LEVELS.contains(&l.as_str())
        {
            return Err(invalid(format!(
                "level '{l}' is not one of {}",
                LOG_LEVELS.join(", ")
            )));
        }
        Ok(level)
    }

    /// The query pairs after `tail_lines` (shared by `/logs` and `/env-server-logs`).
    fn filters(&self, call: Call, level: Option<String>) -> Call {
        call.query_opt("search", self.search.as_deref())
            .query_opt("regex", self.regex.then_some("true"))
            .query_opt("level", level)
            .query_opt("since_seconds", self.since_seconds)
    }
}

impl PlatformClient {
    fn run_path(id: &str, suffix: &str) -> Result<String, PlatformError> {
        Ok(format!("/rft/runs/{}{suffix}", segment(id, "run id")?))
    }

    /// `POST /training/runs/prepare` (§6.2). The body always carries `teamId` (null allowed).
    /// 404/405 → [`PrepareOutcome::NotSupported`]; a 5xx or a timeout is an error the caller may
    /// treat as "skip" (`status() >= 500` or `is_timeout()`); any other error or a malformed
    /// answer aborts a dispatch.
    pub async fn prepare_run(
        &self,
        request: &PrepareRequest,
    ) -> Result<PrepareOutcome, PlatformError> {
        let call = Call::new(
            Method::POST,
            Service::Platform,
            "/training/runs/prepare".into(),
            self.timeout(),
        )
        .json(request)?;
        let endpoint = call.endpoint();
        let map = match self.http.json_object(call).await {
            Ok(map) => map,
            Err(e @ (PlatformError::NotFound { .. } | PlatformError::Api { status: 405, .. })) => {
                return Ok(PrepareOutcome::NotSupported {
                    status: e.status().unwrap_or(404),
                });
            }
            Err(e) => return Err(e),
        };
        let parsed: PrepareResponse =
            decode(Value::Object(map), &endpoint).map_err(|e| PlatformError::Decode {
                endpoint: endpoint.clone(),
                message: format!("Failed to parse local validation preparation: {e}"),
            })?;
        parsed.validate().map_err(|m| PlatformError::Decode {
            endpoint,
            message: format!("Failed to parse local validation preparation: {m}"),
        })?;
        Ok(PrepareOutcome::Prepared(Box::new(parsed)))
    }

    /// `POST /training/runs` (§6.4): create a run. 120 s timeout, never retried; a timeout or
    /// 5xx is ambiguous (the run may exist). The body may hold secrets; it is never logged.
    pub async fn create_run(
        &self,
        request: &CreateRunRequest,
    ) -> Result<CreateRunResponse, PlatformError> {
        let call = Call::new(
            Method::POST,
            Service::Platform,
            "/training/runs".into(),
            self.http.settings.timeouts.create,
        )
        .json(request)?;
        tracing::info!(name = ?request.name, "dispatching run");
        self.http.json(call).await
    }

    /// `POST /training/runs/{id}/pause` (no body); the answer must carry `status`.
    pub async fn pause_run(&self, run_id: &str) -> Result<PauseRunResponse, PlatformError> {
        let path = format!("/training/runs/{}/pause", segment(run_id, "run id")?);
        let call = Call::new(Method::POST, Service::Platform, path, self.timeout());
        self.http.json(call).await
    }

    /// `POST /training/runs/{id}/resume` (§6.6): a **new** run from a paused one. 120 s,
    /// never retried; body only the keys set, no team.
    pub async fn resume_run(
        &self,
        run_id: &str,
        request: &ResumeRunRequest,
    ) -> Result<CreateRunResponse, PlatformError> {
        let path = format!("/training/runs/{}/resume", segment(run_id, "run id")?);
        let call = Call::new(
            Method::POST,
            Service::Platform,
            path,
            self.http.settings.timeouts.create,
        )
        .json(request)?;
        self.http.json(call).await
    }

    /// `PUT /rft/runs/{id}/restart` (no body) → the run. Never retried.
    pub async fn restart_run(&self, run_id: &str) -> Result<RlRun, PlatformError> {
        let call = Call::new(
            Method::PUT,
            Service::Platform,
            Self::run_path(run_id, "/restart")?,
            self.timeout(),
        );
        Ok(self.http.json::<RunEnvelope>(call).await?.run)
    }

    /// `DELETE /rft/runs/{id}` → any JSON object (returned as is) or 204 (`{}`). Never retried.
    pub async fn delete_run(&self, run_id: &str) -> Result<Map<String, Value>, PlatformError> {
        let call = Call::new(
            Method::DELETE,
            Service::Platform,
            Self::run_path(run_id, "")?,
            self.timeout(),
        );
        self.http.json_object(call).await
    }

    /// `PUT /rft/runs/{id}/stop` (no body) → the run (maybe not terminal yet; poll
    /// [`PlatformClient::get_run`]). Never retried.
    pub async fn stop_run(&self, run_id: &str) -> Result<RlRun, PlatformError> {
        let call = Call::new(
            Method::PUT,
            Service::Platform,
            Self::run_path(run_id, "/stop")?,
            self.timeout(),
        );
        Ok(self.http.json::<RunEnvelope>(call).await?.run)
    }

    /// `GET /rft/runs?page=&limit=[&team_id=][&mine=true]`: a page of runs, newest first.
    ///
    /// A legacy server that answers without `total` ignored paging: then, like the CLI, the
    /// client filters `mine` on the configured user id, sorts by `createdAt` descending and
    /// slices the page locally.
    pub async fn list_runs(&self, query: &ListRunsQuery) -> Result<RunPage, PlatformError> {
        self.list_runs_as(query).await
    }

    /// [`PlatformClient::list_runs`], each run read as `R`: [`crate::wire::runs::RunHead`]
    /// reads only what a list shows.
    pub async fn list_runs_as<R: ListedRun>(
        &self,
        query: &ListRunsQuery,
    ) -> Result<RunPage<R>, PlatformError> {
        if query.page == 0 || query.limit == 0 {
            return Err(invalid("page and limit must be at least 1"));
        }
        let call = Call::get(Service::Platform, "/rft/runs".into(), self.timeout())
            .query("page", query.page)
            .query("limit", query.limit)
            .query_opt("team_id", self.team_for(&query.team))
            .query_opt("mine", query.mine.then_some("true"));
        let page: RunPage<R> = self.http.json(call).await?;
        if page.total.is_some() {
            return Ok(page);
        }
        self.page_locally(page.runs, query)
    }

    /// Pages of 100 runs from the newest, until `enough` says so after a page, the last page
    /// is read, or `max_pages` (at least 1) are read. The one place runs are paged through.
    pub async fn scan_runs(
        &self,
        team: &TeamScope,
        mine: bool,
        max_pages: u32,
        enough: impl FnMut(&[RlRun]) -> bool,
    ) -> Result<RunScan, PlatformError> {
        self.scan_runs_as(team, mine, SCAN_PAGE, max_pages, enough)
            .await
    }

    /// [`PlatformClient::scan_runs`] in pages of `page_size` (1 to 100; a caller that needs
    /// only the newest n asks for pages of n), each run read as `R`.
    pub async fn scan_runs_as<R: ListedRun>(
        &self,
        team: &TeamScope,
        mine: bool,
        page_size: u32,
        max_pages: u32,
        mut enough: impl FnMut(&[R]) -> bool,
    ) -> Result<RunScan<R>, PlatformError> {
        let page_size = page_size.clamp(1, SCAN_PAGE);
        let mut runs = Vec::new();
        let mut total = None;
        for page in 1..=max_pages.max(1) {
            let p = self
                .list_runs_as::<R>(&ListRunsQuery {
                    page,
                    limit: page_size,
                    team: team.clone(),
                    mine,
                })
                .await?;
            total = p.total.or(total);
            let last = p.runs.len() < page_size as usize
                || p.total_pages.is_some_and(|tp| u64::from(page) >= tp);
            runs.extend(p.runs);
            if last || enough(&runs) {
                return Ok(RunScan {
                    runs,
                    total,
                    truncated: false,
                });
            }
        }
        Ok(RunScan {
            runs,
            total,
            truncated: true,
        })
    }

    fn page_locally<R: ListedRun>(
        &self,
        mut runs: Vec<R>,
        query: &ListRunsQuery,
    ) -> Result<RunPage<R>, PlatformError> {
        if query.mine {
            let user = self.settings().user_id.as_deref().ok_or_else(|| {
                invalid(
                    "this server cannot filter runs by owner and no user id is configured \
                     (set PRIME_USER_ID or run 'prime whoami' once)",
                )
            })?;
            runs.retain(|r| r.user_id() == user);
        }
        runs.sort_by_key(|r| std::cmp::Reverse(r.created_at_utc()));
        let total = runs.len() as u64;
        let limit = u64::from(query.limit);
        let start = (u64::from(query.page) - 1).saturating_mul(limit);
        let runs = runs
            .into_iter()
            .skip(usize::try_from(start).unwrap_or(usize::MAX))
            .take(query.limit as usize)
            .collect();
        Ok(RunPage {
            runs,
            total: Some(total),
            page: Some(u64::from(query.page)),
            limit: Some(limit),
            total_pages: Some(total.div_ceil(limit)),
        })
    }

    /// `GET /rft/runs/{id}` → the run.
    pub async fn get_run(&self, run_id: &str) -> Result<RlRun, PlatformError> {
        let call = Call::get(
            Service::Platform,
            Self::run_path(run_id, "")?,
            self.timeout(),
        );
        Ok(self.http.json::<RunEnvelope>(call).await?.run)
    }

    /// After [`PlatformClient::stop_run`]: poll `GET /rft/runs/{id}` every `poll_interval`
    /// until the run is terminal or `budget` is spent (CLI: 3 s, 180 s), each poll bounded by
    /// the time left (at least 1 s). As in the CLI, a failed poll ends polling quietly. Returns
    /// the last run seen; check [`RlRun::is_terminal`].
    pub async fn wait_until_terminal(
        &self,
        last: RlRun,
        poll_interval: std::time::Duration,
        budget: std::time::Duration,
    ) -> RlRun {
        let deadline = tokio::time::Instant::now() + budget;
        let mut last = last;
        while !last.is_terminal() {
            let now = tokio::time::Instant::now();
            if now + poll_interval > deadline {
                break;
            }
            tokio::time::sleep(poll_interval).await;
            let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
            let timeout = remaining
                .max(std::time::Duration::from_secs(1))
                .min(self.timeout());
            let Ok(path) = Self::run_path(&last.id, "") else {
                break;
            };
            let call = Call::new(Method::GET, Service::Platform, path, timeout);
            match self.http.json::<RunEnvelope>(call).await {
                Ok(env) => last = env.run,
                Err(e) => {
                    tracing::debug!(run = %last.id, error = %e, "stop poll failed; giving up");
                    break;
                }
            }
        }
        last
    }

    /// `GET /rft/runs/{id}/logs` with the options of §5.6, decoded. A 404 whose detail
    /// carries a startup marker becomes [`PlatformError::NotStartedYet`].
    pub async fn get_logs(
        &self,
        run_id: &str,
        query: &LogsQuery,
    ) -> Result<LogsResponse, PlatformError> {
        let body = self.get_logs_body(run_id, query).await?;
        Ok(LogsResponse { logs: body.text()? })
    }

    /// [`PlatformClient::get_logs`](crate::PlatformClient::get_logs), the text left as sent: a caller that needs only the last lines
    /// decodes only those ([`LogsBody`]).
    pub async fn get_logs_body(
        &self,
        run_id: &str,
        query: &LogsQuery,
    ) -> Result<LogsBody, PlatformError> {
        let level = query.validate()?;
        let call = Call::get(
            Service::Platform,
            Self::run_path(run_id, "/logs")?,
            self.timeout(),
        )
        .query("tail_lines", query.tail_lines);
        let call = query
            .filters(call, level)
            .query_opt("component", query.component.wire())
            .query_opt("env_name", query.env_name.as_deref())
            .query_opt("pod_index", query.pod_index);
        let endpoint = call.endpoint();
        self.http
            .json_fast(call, LogsBody::from_plain_body)
            .await
            .map(|body| body.with_endpoint(endpoint))
            .map_err(not_started_yet)
    }

    /// Legacy `GET /rft/runs/{id}/env-server-logs?env_name=&env_index=&tail_lines=…` for
    /// indexed environment servers of non-dedicated runs (§5.6). `component`, `env_name` and
    /// `pod_index` of the query are ignored.
    pub async fn get_env_server_logs_legacy(
        &self,
        run_id: &str,
        env_name: &str,
        env_index: u32,
        query: &LogsQuery,
    ) -> Result<LogsResponse, PlatformError> {
        let plain = LogsQuery {
            component: LogComponent::Orchestrator,
            ..query.clone()
        };
        let level = plain.validate()?;
        let call = Call::get(
            Service::Platform,
            Self::run_path(run_id, "/env-server-logs")?,
            self.timeout(),
        )
        .query("env_name", env_name)
        .query("env_index", env_index)
        .query("tail_lines", query.tail_lines);
        let call = plain.filters(call, level);
        self.http.json(call).await.map_err(not_started_yet)
    }

    /// `GET /rft/runs/{id}/env-servers` (snake_case answer).
    pub async fn list_env_servers(
        &self,
        run_id: &str,
    ) -> Result<EnvServersResponse, PlatformError> {
        let call = Call::get(
            Service::Platform,
            Self::run_path(run_id, "/env-servers")?,
            self.timeout(),
        );
        self.http.json(call).await
    }

    /// `GET /rft/runs/{id}/metrics[?min_step=][&max_step=][&limit=]`.
    pub async fn get_metrics(
        &self,
        run_id: &str,
        query: &MetricsQuery,
    ) -> Result<MetricsResponse, PlatformError> {
        let call = Call::get(
            Service::Platform,
            Self::run_path(run_id, "/metrics")?,
            self.timeout(),
        )
        .query_opt("min_step", query.min_step)
        .query_opt("max_step", query.max_step)
        .query_opt("limit", query.limit);
        // Read in one pass from the body's text; anything that does not read so is read as
        // any answer is, and reported so.
        self.http
            .json_fast(call, |body| MetricsResponse::from_body(body))
            .await
    }

    /// `GET /rft/runs/{id}/progress`.
    pub async fn get_progress(&self, run_id: &str) -> Result<ProgressResponse, PlatformError> {
        let call = Call::get(
            Service::Platform,
            Self::run_path(run_id, "/progress")?,
            self.timeout(),
        );
        self.http.json(call).await
    }

    /// `GET /rft/runs/{id}/checkpoints[?status_filter=]` (e.g. `READY`).
    pub async fn list_checkpoints(
        &self,
        run_id: &str,
        status_filter: Option<&str>,
    ) -> Result<CheckpointsResponse, PlatformError> {
        let call = Call::get(
            Service::Platform,
            Self::run_path(run_id, "/checkpoints")?,
            self.timeout(),
        )
        .query_opt("status_filter", status_filter);
        self.http.json(call).await
    }

    /// `GET /rft/runs/{id}/samples?page=&limit=&step=` (rollouts).
    pub async fn get_samples(
        &self,
        run_id: &str,
        query: &SamplesQuery,
    ) -> Result<SamplesResponse, PlatformError> {
        if query.page == 0 || query.limit == 0 {
            return Err(invalid("page and limit must be at least 1"));
        }
        let call = Call::get(
            Service::Platform,
            Self::run_path(run_id, "/samples")?,
            self.timeout(),
        )
        .query("page", query.page)
        .query("limit", query.limit)
        .query("step", query.step);
        self.http.json(call).await
    }

    /// `GET /rft/runs/{id}/distributions[?type=][&step=]`, `bins` normalised.
    pub async fn get_distributions(
        &self,
        run_id: &str,
        query: &DistributionsQuery,
    ) -> Result<DistributionsResponse, PlatformError> {
        let call = Call::get(
            Service::Platform,
            Self::run_path(run_id, "/distributions")?,
            self.timeout(),
        )
        .query_opt("type", query.kind.as_deref())
        .query_opt("step", query.step);
        self.http.json(call).await
    }

    /// `GET /billing/runs/{id}/usage`.
    pub async fn get_run_usage(&self, run_id: &str) -> Result<RunUsage, PlatformError> {
        let path = format!("/billing/runs/{}/usage", segment(run_id, "run id")?);
        let call = Call::get(Service::Platform, path, self.timeout());
        self.http.json(call).await
    }
}

/// Turn a logs 404 with a startup marker into `NotStartedYet`.
fn not_started_yet(e: PlatformError) -> PlatformError {
    match e {
        PlatformError::NotFound { detail, .. } if has_startup_marker(&detail) => {
            PlatformError::NotStartedYet { detail }
        }
        other => other,
    }
}

/// Whether a logs error detail says the run has not started (§5.6 markers).
pub fn has_startup_marker(detail: &str) -> bool {
    let lower = detail.to_lowercase();
    LOG_STARTUP_MARKERS.iter().any(|m| lower.contains(m))
}
