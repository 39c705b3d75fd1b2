//! Run read tools: `list_runs`, `get_run`, `get_components`, `get_logs`, `get_metrics`,
//! `get_progress`, `list_checkpoints`. Bounded, paginated, redacted on the way out.

use std::sync::Arc;

use factory_platform::{
    ListRunsQuery, LogComponent, LogsQuery, MetricsQuery, PlatformError, wire::runs::RlRun,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    owner,
    reply::{Outcome, ToolError, ToolResult},
    server::{Call, ToolDef, tool},
    state::{AppState, check_id, platform_error},
    workflows::LogCursor,
};

pub fn tools() -> Vec<ToolDef<AppState>> {
    vec![
        tool("list_runs", list_runs),
        tool("get_run", get_run),
        tool("get_components", get_components),
        tool("get_logs", get_logs),
        tool("get_metrics", get_metrics),
        tool("get_progress", get_progress),
        tool("list_checkpoints", list_checkpoints),
    ]
}

/// Run statuses the platform reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RunStatus {
    Queued,
    Pending,
    Running,
    Completed,
    Failed,
    Stopped,
    Pausing,
    Paused,
}

impl RunStatus {
    fn wire(self) -> &'static str {
        match self {
            RunStatus::Queued => "QUEUED",
            RunStatus::Pending => "PENDING",
            RunStatus::Running => "RUNNING",
            RunStatus::Completed => "COMPLETED",
            RunStatus::Failed => "FAILED",
            RunStatus::Stopped => "STOPPED",
            RunStatus::Pausing => "PAUSING",
            RunStatus::Paused => "PAUSED",
        }
    }
}

/// A run as listed: the fields an assistant needs to pick one.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunSummary {
    pub id: String,
    pub name: Option<String>,
    pub status: String,
    pub base_model: Option<String>,
    pub max_steps: Option<i64>,
    pub gpu_count: Option<i64>,
    pub team_id: Option<String>,
    pub user_id: String,
    pub kind: Option<String>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub error_message: Option<String>,
}

impl From<&RlRun> for RunSummary {
    fn from(r: &RlRun) -> Self {
        RunSummary {
            id: r.id.clone(),
            name: r.name.clone(),
            status: r.status.clone(),
            base_model: r.base_model.clone(),
            max_steps: r.max_steps,
            gpu_count: r.gpu_count,
            team_id: r.team_id.clone(),
            user_id: r.user_id.clone(),
            kind: r.kind.clone(),
            created_at: r.created_at.clone(),
            started_at: r.started_at.clone(),
            completed_at: r.completed_at.clone(),
            error_message: r.error_message.clone(),
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRunsArgs {
    /// List this team's runs instead of the active team's.
    pub team_id: Option<String>,
    /// List the personal account's runs even when a team is active.
    pub personal: Option<bool>,
    /// Only runs created by the caller.
    pub mine: Option<bool>,
    /// Page, from 1 (default 1).
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    /// Runs per page, 1 to 100 (default 20).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
    /// Only runs in this status (filtered by this server over the pages it reads).
    pub status: Option<RunStatus>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ListRunsOut {
    pub runs: Vec<RunSummary>,
    /// Runs the platform reports for this owner (before any status filter).
    pub total: Option<u64>,
    pub page: u32,
    pub limit: u32,
    pub total_pages: Option<u64>,
    /// With a status filter: how many runs were read to find these.
    pub scanned: usize,
    /// With a status filter: whether older runs were left unread (call again with a later page).
    pub scan_incomplete: bool,
}

async fn list_runs(
    state: Arc<AppState>,
    args: ListRunsArgs,
    _call: Call,
) -> ToolResult<ListRunsOut> {
    let scope = owner::scope(args.team_id.as_deref(), args.personal, &state.policy)?;
    let page = args.page.unwrap_or(1).max(1);
    let limit = args.limit.unwrap_or(20).clamp(1, 100);
    let platform = state.platform()?;
    let query = |page: u32, limit: u32| ListRunsQuery {
        page,
        limit,
        team: scope.clone(),
        mine: args.mine.unwrap_or(false),
    };
    let Some(status) = args.status else {
        let p = platform
            .list_runs(&query(page, limit))
            .await
            .map_err(|e| platform_error("list runs", &e))?;
        let runs: Vec<RunSummary> = p.runs.iter().map(RunSummary::from).collect();
        let scanned = runs.len();
        let summary = format!(
            "{} run(s) on page {page}{}",
            runs.len(),
            p.total
                .map(|t| format!(" of {t} in all"))
                .unwrap_or_default()
        );
        return Ok(Outcome::done(
            summary,
            ListRunsOut {
                runs,
                total: p.total,
                page,
                limit,
                total_pages: p.total_pages,
                scanned,
                scan_incomplete: false,
            },
        ));
    };
    // The API has no status filter: read pages of 100 from the start, skip the matches that
    // belong to earlier pages of the filtered view, and stop when this page is full.
    let skip = (page as usize - 1) * limit as usize;
    let mut matches = Vec::new();
    let mut scanned = 0usize;
    let mut total = None;
    let mut incomplete = false;
    let mut api_page = 1u32;
    loop {
        let p = platform
            .list_runs(&query(api_page, 100))
            .await
            .map_err(|e| platform_error("list runs", &e))?;
        total = p.total.or(total);
        scanned += p.runs.len();
        matches.extend(
            p.runs
                .iter()
                .filter(|r| r.status.eq_ignore_ascii_case(status.wire()))
                .map(RunSummary::from),
        );
        let last = p.runs.len() < 100 || p.total_pages.is_some_and(|tp| u64::from(api_page) >= tp);
        if matches.len() >= skip + limit as usize || last {
            break;
        }
        if api_page >= state.limits.status_scan_pages {
            incomplete = true;
            break;
        }
        api_page += 1;
    }
    let runs: Vec<RunSummary> = matches
        .into_iter()
        .skip(skip)
        .take(limit as usize)
        .collect();
    Ok(Outcome::done(
        format!(
            "{} {} run(s) found among {scanned} scanned{}",
            runs.len(),
            status.wire(),
            if incomplete {
                " (older runs not scanned)"
            } else {
                ""
            }
        ),
        ListRunsOut {
            runs,
            total,
            page,
            limit,
            total_pages: None,
            scanned,
            scan_incomplete: incomplete,
        },
    ))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunIdArgs {
    /// The run id (from list_runs or launch_run).
    pub run_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FailureOut {
    pub root_cause: Option<String>,
    pub evidence: Vec<String>,
    pub confidence: Option<f64>,
}

/// One run in full.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunDetail {
    pub id: String,
    pub name: Option<String>,
    pub status: String,
    pub terminal: bool,
    pub kind: Option<String>,
    pub mode: String,
    pub base_model: Option<String>,
    pub max_steps: Option<i64>,
    pub seq_len: Option<i64>,
    pub batch_size: Option<i64>,
    pub gpu_count: Option<i64>,
    pub prime_cluster_id: Option<String>,
    pub team_id: Option<String>,
    pub user_id: String,
    pub volume_name: Option<String>,
    pub wandb_project: Option<String>,
    pub wandb_run_name: Option<String>,
    pub queue_reason: Option<String>,
    pub runs_ahead: Option<i64>,
    pub notice: Option<String>,
    pub error_message: Option<String>,
    pub failure_analysis: Option<FailureOut>,
    pub source_commit: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub started_at: Option<String>,
    pub completed_at: Option<String>,
    pub dashboard_url: String,
}

pub fn run_detail(r: &RlRun, dashboard_url: String) -> RunDetail {
    RunDetail {
        id: r.id.clone(),
        name: r.name.clone(),
        status: r.status.clone(),
        terminal: r.is_terminal(),
        kind: r.kind.clone(),
        mode: if r.is_sft() { "sft" } else { "rl" }.into(),
        base_model: r.base_model.clone(),
        max_steps: r.max_steps,
        seq_len: r.seq_len,
        batch_size: r.batch_size,
        gpu_count: r.gpu_count,
        prime_cluster_id: r.prime_cluster_id.clone(),
        team_id: r.team_id.clone(),
        user_id: r.user_id.clone(),
        volume_name: r.volume_name.clone(),
        wandb_project: r.wandb_project.clone(),
        wandb_run_name: r.wandb_run_name.clone(),
        queue_reason: r.queue_reason.clone(),
        runs_ahead: r.runs_ahead,
        notice: r.notice.clone(),
        error_message: r.error_message.clone(),
        failure_analysis: r.failure_analysis.as_ref().map(|f| FailureOut {
            root_cause: f.root_cause.clone(),
            evidence: f.evidence.clone(),
            confidence: f.confidence,
        }),
        source_commit: r.source_commit.clone(),
        created_at: r.created_at.clone(),
        updated_at: r.updated_at.clone(),
        started_at: r.started_at.clone(),
        completed_at: r.completed_at.clone(),
        dashboard_url,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GetRunOut {
    pub run: RunDetail,
}

/// Read a run, mapping "not found" to a message that names the id.
pub async fn fetch_run(state: &AppState, run_id: &str) -> Result<RlRun, ToolError> {
    check_id("run", run_id)?;
    state
        .platform()?
        .get_run(run_id)
        .await
        .map_err(|e| match e {
            PlatformError::NotFound { .. } => ToolError::new(format!(
                "Run {run_id} was not found, or is not visible to this key and owner. list_runs shows the runs you can see (pass team_id for a team's runs)."
            )),
            e => platform_error(&format!("get run {run_id}"), &e),
        })
}

async fn get_run(state: Arc<AppState>, args: RunIdArgs, _call: Call) -> ToolResult<GetRunOut> {
    let run = fetch_run(&state, &args.run_id).await?;
    let url = state.platform()?.settings().run_dashboard_url(&run.id);
    let detail = run_detail(&run, url);
    let summary = format!(
        "Run {} ({}) is {}",
        detail.id,
        detail.name.as_deref().unwrap_or("unnamed"),
        detail.status
    );
    Ok(Outcome::done(summary, GetRunOut { run: detail }))
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ComponentsOut {
    pub run_id: String,
    pub run_status: String,
    pub components: Vec<ComponentItem>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ComponentItem {
    /// orchestrator, trainer, inference, or env-server.
    pub component: String,
    /// For env servers: the environment name and index (use `env` with get_logs).
    pub env_name: Option<String>,
    pub env_index: Option<i64>,
    pub pod_name: Option<String>,
    pub status: String,
}

async fn get_components(
    state: Arc<AppState>,
    args: RunIdArgs,
    _call: Call,
) -> ToolResult<ComponentsOut> {
    let run = fetch_run(&state, &args.run_id).await?;
    let servers = state
        .platform()?
        .list_env_servers(&run.id)
        .await
        .map_err(|e| platform_error(&format!("list env servers of run {}", run.id), &e))?;
    // As `prime train components`: the primary row is the trainer for SFT, else the
    // orchestrator; an SFT run with online eval also has orchestrator and inference rows.
    let mut components = Vec::new();
    let row = |name: &str| ComponentItem {
        component: name.into(),
        env_name: None,
        env_index: None,
        pod_name: None,
        status: run.status.clone(),
    };
    if run.is_sft() {
        components.push(row("trainer"));
        let online_eval = run
            .run_config
            .as_ref()
            .and_then(|c| c.get("eval"))
            .is_some_and(Value::is_object);
        if online_eval {
            components.push(row("orchestrator"));
            components.push(row("inference"));
        }
    } else {
        components.push(row("orchestrator"));
    }
    for s in servers.env_servers {
        components.push(ComponentItem {
            component: "env-server".into(),
            env_name: s.env_name,
            env_index: s.env_index,
            pod_name: Some(s.pod_name),
            status: s.status,
        });
    }
    Ok(Outcome::done(
        format!(
            "{} component(s) of run {} ({})",
            components.len(),
            run.id,
            run.status
        ),
        ComponentsOut {
            run_id: run.id.clone(),
            run_status: run.status.clone(),
            components,
        },
    ))
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Component {
    Orchestrator,
    Trainer,
    Inference,
    EnvServer,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    Error,
    Warning,
    Success,
    Info,
    Debug,
}

impl Level {
    fn wire(self) -> &'static str {
        match self {
            Level::Error => "ERROR",
            Level::Warning => "WARNING",
            Level::Success => "SUCCESS",
            Level::Info => "INFO",
            Level::Debug => "DEBUG",
        }
    }
}

/// Largest `tail` accepted, as the platform's own limit.
pub const MAX_TAIL: u32 = 5000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LogsArgs {
    pub run_id: String,
    /// orchestrator (default), trainer, inference, or env-server (needs `env`).
    pub component: Option<Component>,
    /// Environment name for env-server logs (implies component env-server).
    pub env: Option<String>,
    /// Lines from the end, 1 to 5000 (default 200).
    #[schemars(range(min = 1, max = 5000))]
    pub tail: Option<u32>,
    /// Only lines from this long ago: seconds, or 15m, 1h, 24h, 2d (60 s to 24 h).
    pub since: Option<String>,
    /// Only lines containing this text (a regex with `regex: true`).
    pub search: Option<String>,
    pub regex: Option<bool>,
    /// Only lines at this level.
    pub level: Option<Level>,
    /// Most bytes of log text to return, newest lines kept (default and maximum 65536).
    #[schemars(range(min = 1024, max = 65536))]
    pub max_bytes: Option<u32>,
    /// The `cursor` of a previous answer (same component and filters): only newer lines.
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LogsOut {
    pub run_id: String,
    pub component: String,
    /// `ok`, or `not_started` when the run has no logs yet (it is queued or starting).
    pub state: String,
    pub lines: Vec<String>,
    pub line_count: usize,
    /// Lines left out to fit max_bytes (with a cursor: the newest, given by the next call).
    pub truncated: bool,
    pub note: Option<String>,
    /// Pass back (same filters) for only newer lines.
    pub cursor: String,
    /// With a cursor: the tail no longer overlapped, so lines may have been missed.
    pub possibly_missed: bool,
}

/// Parse `--since` as the CLI does: seconds, or a number with s/m/h/d; 60 s to 24 h.
pub fn parse_since(s: &str) -> Result<u32, ToolError> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last() {
        Some((i, 's')) => (&s[..i], 1),
        Some((i, 'm')) => (&s[..i], 60),
        Some((i, 'h')) => (&s[..i], 3600),
        Some((i, 'd')) => (&s[..i], 86400),
        _ => (s, 1),
    };
    let secs = num
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult));
    match secs {
        Some(v) if (60..=86400).contains(&v) => Ok(v as u32),
        _ => Err(ToolError::new(format!(
            "`since` must be between 60 seconds and 24 hours, as seconds or with s/m/h/d (e.g. 900, 15m, 1h); got `{}`",
            s.chars().take(32).collect::<String>()
        ))),
    }
}

/// Keep the newest whole lines that fit in `max_bytes`.
pub fn bound_lines(text: &str, max_bytes: usize) -> (Vec<String>, bool) {
    let all: Vec<&str> = text.lines().collect();
    let mut kept = Vec::new();
    let mut used = 0usize;
    for line in all.iter().rev() {
        let cost = line.len() + 1;
        if used + cost > max_bytes {
            break;
        }
        used += cost;
        kept.push((*line).to_string());
    }
    let truncated = kept.len() < all.len();
    kept.reverse();
    (kept, truncated)
}

async fn get_logs(state: Arc<AppState>, args: LogsArgs, _call: Call) -> ToolResult<LogsOut> {
    check_id("run", &args.run_id)?;
    let component = match (args.component, &args.env) {
        (Some(c), Some(_)) if c != Component::EnvServer => {
            return Err(ToolError::new(
                "`env` selects env-server logs: drop `component` or set it to env-server.",
            ));
        }
        (Some(Component::EnvServer), None) => {
            return Err(ToolError::new(
                "env-server logs need `env` (the environment name; get_components lists them).",
            ));
        }
        (_, Some(_)) => Component::EnvServer,
        (c, None) => c.unwrap_or(Component::Orchestrator),
    };
    if args.regex == Some(true) && args.search.is_none() {
        return Err(ToolError::new(
            "`regex: true` needs `search` (the pattern).",
        ));
    }
    // Following needs a window wide enough to overlap what was seen: the CLI's default, 1000.
    let tail = args
        .tail
        .unwrap_or(if args.cursor.is_some() { 1000 } else { 200 });
    if !(1..=MAX_TAIL).contains(&tail) {
        return Err(ToolError::new(format!(
            "`tail` must be between 1 and {MAX_TAIL}; got {tail}"
        )));
    }
    let since_seconds = args.since.as_deref().map(parse_since).transpose()?;
    let max_bytes = args
        .max_bytes
        .map(|b| b as usize)
        .unwrap_or(state.limits.log_bytes)
        .clamp(1024, state.limits.log_bytes);
    let (wire_component, name) = match component {
        Component::Orchestrator => (LogComponent::Orchestrator, "orchestrator"),
        Component::Trainer => (LogComponent::Trainer, "trainer"),
        Component::Inference => (LogComponent::Inference, "inference"),
        Component::EnvServer => (LogComponent::EnvServer, "env-server"),
    };
    // A cursor belongs to one query: the run, the component and the filters (not the tail).
    let level_name = args.level.map(|l| l.wire()).unwrap_or("");
    let since_text = since_seconds.map(|s| s.to_string()).unwrap_or_default();
    let regex_text = if args.regex == Some(true) {
        "regex"
    } else {
        ""
    };
    let query_parts = [
        args.run_id.as_str(),
        name,
        args.env.as_deref().unwrap_or(""),
        args.search.as_deref().unwrap_or(""),
        regex_text,
        level_name,
        since_text.as_str(),
    ];
    let cursor = match &args.cursor {
        Some(c) => Some(LogCursor::parse(c, &query_parts)?),
        None => None,
    };
    let query = LogsQuery {
        tail_lines: tail,
        search: args.search.clone(),
        regex: args.regex.unwrap_or(false),
        level: args.level.map(|l| l.wire().to_string()),
        since_seconds,
        component: wire_component,
        env_name: args.env.clone(),
        pod_index: None,
    };
    match state.platform()?.get_logs(&args.run_id, &query).await {
        Ok(resp) => {
            // Redacted before anything else, so the cursor's hashes never see a secret.
            let text = state.redactor.redact(&resp.logs).into_owned();
            let (lines, truncated, next, possibly_missed) = match cursor {
                None => {
                    let (lines, truncated) = bound_lines(&text, max_bytes);
                    let mut next = LogCursor::new(&query_parts);
                    next.advance(&lines);
                    (lines, truncated, next, false)
                }
                Some(mut c) => {
                    let all: Vec<String> = text.lines().map(str::to_string).collect();
                    let (from, overlapped) = c.unseen_from(&all);
                    // Oldest unseen lines first, so a later call continues where this one stops.
                    let mut used = 0usize;
                    let mut lines = Vec::new();
                    for line in &all[from..] {
                        let cost = line.len() + 1;
                        if used + cost > max_bytes && !lines.is_empty() {
                            break;
                        }
                        used += cost;
                        lines.push(line.clone());
                    }
                    let truncated = from + lines.len() < all.len();
                    c.advance(&lines);
                    (lines, truncated, c, !overlapped)
                }
            };
            let following = args.cursor.is_some();
            let summary = format!(
                "{} {}{name} log line(s) of run {}{}{}",
                lines.len(),
                if following { "new " } else { "" },
                args.run_id,
                match (truncated, following) {
                    (true, true) => " (more follow: call again with the cursor)",
                    (true, false) => " (older lines dropped to fit)",
                    _ => "",
                },
                if possibly_missed {
                    " (the tail no longer overlapped: lines may have been missed)"
                } else {
                    ""
                }
            );
            Ok(Outcome::done(
                summary,
                LogsOut {
                    run_id: args.run_id,
                    component: name.into(),
                    state: "ok".into(),
                    line_count: lines.len(),
                    lines,
                    truncated,
                    note: None,
                    cursor: next.encode(),
                    possibly_missed,
                },
            ))
        }
        Err(PlatformError::NotStartedYet { detail }) => Ok(Outcome::done(
            format!("Run {} has not started yet: no {name} logs", args.run_id),
            LogsOut {
                run_id: args.run_id.clone(),
                component: name.into(),
                state: "not_started".into(),
                lines: Vec::new(),
                line_count: 0,
                truncated: false,
                note: Some(format!(
                    "The platform says: {detail}. Wait for the run to reach RUNNING (watch_run until_status RUNNING) and call again."
                )),
                cursor: cursor
                    .unwrap_or_else(|| LogCursor::new(&query_parts))
                    .encode(),
                possibly_missed: false,
            },
        )),
        Err(PlatformError::NotFound { .. }) => Err(ToolError::new(format!(
            "Run {} was not found, or is not visible to this key and owner. list_runs shows the runs you can see.",
            args.run_id
        ))),
        Err(e) => Err(platform_error(
            &format!("get logs of run {}", args.run_id),
            &e,
        )),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MetricsArgs {
    pub run_id: String,
    /// Only steps at or after this one.
    pub min_step: Option<i64>,
    /// Only steps at or before this one.
    pub max_step: Option<i64>,
    /// Most records to return, 1 to 500 (the newest are kept).
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct MetricsOut {
    pub run_id: String,
    /// Per-step records as the platform sends them (`step` plus metric values).
    pub metrics: Vec<Value>,
    pub count: usize,
    pub truncated: bool,
}

async fn get_metrics(
    state: Arc<AppState>,
    args: MetricsArgs,
    _call: Call,
) -> ToolResult<MetricsOut> {
    check_id("run", &args.run_id)?;
    if let (Some(a), Some(b)) = (args.min_step, args.max_step)
        && a > b
    {
        return Err(ToolError::new(format!(
            "`min_step` ({a}) is after `max_step` ({b})."
        )));
    }
    let cap = args
        .limit
        .map(|l| l as usize)
        .unwrap_or(state.limits.metric_records)
        .clamp(1, state.limits.metric_records);
    let resp = state
        .platform()?
        .get_metrics(
            &args.run_id,
            &MetricsQuery {
                min_step: args.min_step,
                max_step: args.max_step,
                // The platform's `limit` keeps the first records; we want the newest, so the
                // range is read whole and cut here.
                limit: None,
            },
        )
        .await
        .map_err(|e| not_found_or(&args.run_id, "get metrics of run", e))?;
    let mut metrics = resp.metrics;
    let truncated = metrics.len() > cap;
    if truncated {
        metrics.drain(..metrics.len() - cap);
    }
    let count = metrics.len();
    Ok(Outcome::done(
        format!("{count} metric record(s) of run {}", args.run_id),
        MetricsOut {
            run_id: args.run_id,
            metrics,
            count,
            truncated,
        },
    ))
}

fn not_found_or(run_id: &str, what: &str, e: PlatformError) -> ToolError {
    match e {
        PlatformError::NotFound { .. } => ToolError::new(format!(
            "Run {run_id} was not found, or is not visible to this key and owner. list_runs shows the runs you can see."
        )),
        e => platform_error(&format!("{what} {run_id}"), &e),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ProgressOut {
    pub run_id: String,
    /// The latest completed step; null before the first.
    pub latest_step: Option<i64>,
    pub steps_with_samples: Vec<i64>,
    pub steps_with_distributions: Vec<i64>,
    /// When progress last changed, as the platform reports it.
    pub last_updated_at: Option<String>,
}

async fn get_progress(
    state: Arc<AppState>,
    args: RunIdArgs,
    _call: Call,
) -> ToolResult<ProgressOut> {
    check_id("run", &args.run_id)?;
    let p = state
        .platform()?
        .get_progress(&args.run_id)
        .await
        .map_err(|e| not_found_or(&args.run_id, "get progress of run", e))?;
    let summary = match p.latest_step {
        Some(s) => format!("Run {} has completed step {s}", args.run_id),
        None => format!("Run {} has completed no step yet", args.run_id),
    };
    Ok(Outcome::done(
        summary,
        ProgressOut {
            run_id: args.run_id,
            latest_step: p.latest_step,
            steps_with_samples: p.steps_with_samples,
            steps_with_distributions: p.steps_with_distributions,
            last_updated_at: p.last_updated_at,
        },
    ))
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CheckpointStatus {
    Ready,
    Pending,
    Uploading,
    Failed,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointsArgs {
    pub run_id: String,
    /// Only checkpoints in this status.
    pub status: Option<CheckpointStatus>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckpointsOut {
    pub run_id: String,
    pub checkpoints: Vec<CheckpointItem>,
    /// The newest READY checkpoint's step, if any.
    pub latest_ready_step: Option<i64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckpointItem {
    pub id: String,
    pub step: i64,
    pub status: String,
    pub size_bytes: Option<u64>,
    pub storage_url: String,
    pub created_at: String,
    pub uploaded_at: Option<String>,
}

async fn list_checkpoints(
    state: Arc<AppState>,
    args: CheckpointsArgs,
    _call: Call,
) -> ToolResult<CheckpointsOut> {
    check_id("run", &args.run_id)?;
    let filter = args.status.map(|s| match s {
        CheckpointStatus::Ready => "READY",
        CheckpointStatus::Pending => "PENDING",
        CheckpointStatus::Uploading => "UPLOADING",
        CheckpointStatus::Failed => "FAILED",
    });
    let resp = state
        .platform()?
        .list_checkpoints(&args.run_id, filter)
        .await
        .map_err(|e| not_found_or(&args.run_id, "list checkpoints of run", e))?;
    let mut checkpoints: Vec<CheckpointItem> = resp
        .checkpoints
        .into_iter()
        .map(|c| CheckpointItem {
            id: c.id,
            step: c.step,
            status: c.status,
            size_bytes: c.size_bytes,
            storage_url: c.storage_url,
            created_at: c.created_at,
            uploaded_at: c.uploaded_at,
        })
        .collect();
    checkpoints.sort_by_key(|c| c.step);
    let latest_ready_step = checkpoints
        .iter()
        .filter(|c| c.status == "READY")
        .map(|c| c.step)
        .max();
    Ok(Outcome::done(
        format!(
            "{} checkpoint(s) of run {}{}",
            checkpoints.len(),
            args.run_id,
            latest_ready_step
                .map(|s| format!("; latest ready at step {s}"))
                .unwrap_or_default()
        ),
        CheckpointsOut {
            run_id: args.run_id,
            checkpoints,
            latest_ready_step,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_parses_like_the_cli() {
        assert_eq!(parse_since("900").unwrap(), 900);
        assert_eq!(parse_since("15m").unwrap(), 900);
        assert_eq!(parse_since("1h").unwrap(), 3600);
        assert_eq!(parse_since("1d").unwrap(), 86400);
        assert!(parse_since("30").is_err());
        assert!(parse_since("2d").is_err());
        assert!(parse_since("abc").is_err());
        assert!(parse_since("99999999999999999999h").is_err());
    }

    #[test]
    fn bounding_keeps_the_newest_whole_lines() {
        let text = "aaaa\nbbbb\ncccc\n";
        let (lines, truncated) = bound_lines(text, 10);
        assert_eq!(lines, vec!["bbbb", "cccc"]);
        assert!(truncated);
        let (lines, truncated) = bound_lines(text, 1000);
        assert_eq!(lines.len(), 3);
        assert!(!truncated);
    }
}
