//! Agent workflows over one run: `watch_run` (wait with progress, economical polling),
//! `diagnose_run` (one answer to "what is going on with this run"), and the RL signals
//! `get_rollouts` and `get_distributions`. Bounded and redacted like every read.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use chrono::{DateTime, Utc};
use factory_platform::{
    DistributionsQuery, LogComponent, LogsQuery, PlatformError, SamplesQuery,
    wire::runs::{ProgressResponse, RlRun},
};
use rmcp::model::ProgressNotificationParam;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    reply::{Outcome, ToolError, ToolResult},
    runs::{FailureOut, RunStatus, fetch_run},
    server::{Call, ToolDef, tool},
    state::{AppState, check_id, platform_error},
};

pub fn tools() -> Vec<ToolDef<AppState>> {
    vec![
        tool("get_rollouts", get_rollouts),
        tool("get_distributions", get_distributions),
        tool("watch_run", watch_run),
        tool("diagnose_run", diagnose_run),
    ]
}

/// The client cancelled the request.
#[derive(Debug)]
struct Cancelled;

fn not_found_or(run_id: &str, what: &str, e: PlatformError) -> ToolError {
    match e {
        PlatformError::NotFound { .. } => ToolError::new(format!(
            "Run {run_id} was not found, or is not visible to this key and owner. list_runs shows the runs you can see."
        )),
        e => platform_error(&format!("{what} {run_id}"), &e),
    }
}

fn parse_ts(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

// ---- get_rollouts ----------------------------------------------------------------------------

/// Longest string kept inside one rollout sample (prompts and completions can be long).
const SAMPLE_STRING_CHARS: usize = 2000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RolloutsArgs {
    pub run_id: String,
    /// Training step (default: the latest step with samples).
    #[schemars(range(min = 0))]
    pub step: Option<i64>,
    /// Page, from 1 (default 1).
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    /// Samples per page, 1 to 50 (default 10).
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RolloutsOut {
    pub run_id: String,
    pub step: Option<i64>,
    pub samples: Vec<Value>,
    pub count: usize,
    pub total: Option<u64>,
    pub page: u32,
    pub total_pages: Option<u64>,
    pub truncated: bool,
    pub note: Option<String>,
}

/// Shorten every string longer than `max` chars inside `v`.
fn shorten_strings(v: &mut Value, max: usize) -> bool {
    match v {
        Value::String(s) if s.chars().count() > max => {
            let cut: String = s.chars().take(max).collect();
            let dropped = s.chars().count() - max;
            *s = format!("{cut}… [{dropped} more characters]");
            true
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |acc, i| shorten_strings(i, max) | acc),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |acc, i| shorten_strings(i, max) | acc),
        _ => false,
    }
}

async fn get_rollouts(
    state: Arc<AppState>,
    args: RolloutsArgs,
    _call: Call,
) -> ToolResult<RolloutsOut> {
    check_id("run", &args.run_id)?;
    let page = args.page.unwrap_or(1);
    let limit = args.limit.unwrap_or(10);
    if page == 0 || !(1..=50).contains(&limit) {
        return Err(ToolError::new(format!(
            "`page` starts at 1 and `limit` is 1 to 50; got page {page}, limit {limit}"
        )));
    }
    let platform = state.platform()?;
    let step = match args.step {
        Some(s) if s < 0 => {
            return Err(ToolError::new(format!("`step` must be 0 or more; got {s}")));
        }
        Some(s) => Some(s),
        None => {
            let p = platform
                .get_progress(&args.run_id)
                .await
                .map_err(|e| not_found_or(&args.run_id, "get progress of run", e))?;
            p.steps_with_samples.iter().copied().max()
        }
    };
    let Some(step) = step else {
        return Ok(Outcome::done(
            format!("Run {} has no rollout samples yet", args.run_id),
            RolloutsOut {
                run_id: args.run_id,
                step: None,
                samples: Vec::new(),
                count: 0,
                total: Some(0),
                page,
                total_pages: Some(0),
                truncated: false,
                note: Some(
                    "No step has samples yet (SFT runs have none; RL runs have them once steps complete). watch_run until_step 1, then call again.".into(),
                ),
            },
        ));
    };
    let resp = platform
        .get_samples(&args.run_id, &SamplesQuery { step, page, limit })
        .await
        .map_err(|e| not_found_or(&args.run_id, "get samples of run", e))?;
    let budget = state.limits.log_bytes;
    let mut used = 0usize;
    let mut truncated = false;
    let mut samples = Vec::new();
    for mut s in resp.samples.into_iter().take(limit as usize) {
        truncated |= shorten_strings(&mut s, SAMPLE_STRING_CHARS);
        let cost = serde_json::to_string(&s).map(|t| t.len()).unwrap_or(0);
        if used + cost > budget && !samples.is_empty() {
            truncated = true;
            break;
        }
        used += cost;
        samples.push(s);
    }
    let count = samples.len();
    let note = truncated.then(|| {
        "Some texts or samples were cut to keep the answer small: ask for fewer samples (limit) or the next page.".to_string()
    });
    Ok(Outcome::done(
        format!(
            "{count} rollout sample(s) of run {} at step {step}{}",
            args.run_id,
            resp.total
                .map(|t| format!(" ({t} in all)"))
                .unwrap_or_default()
        ),
        RolloutsOut {
            run_id: args.run_id,
            step: Some(step),
            samples,
            count,
            total: resp.total,
            page,
            total_pages: resp.total_pages,
            truncated,
            note,
        },
    ))
}

// ---- get_distributions -----------------------------------------------------------------------

/// Most histogram bins returned.
const MAX_BINS: usize = 200;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistributionsArgs {
    pub run_id: String,
    /// Distribution type, e.g. rewards (the platform's default), advantages.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Training step (default: the platform's latest).
    #[schemars(range(min = 0))]
    pub step: Option<i64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DistributionsOut {
    pub run_id: String,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub step: Option<i64>,
    pub bins: Vec<Value>,
    pub bin_count: usize,
    pub total_count: Option<u64>,
    pub truncated: bool,
}

async fn get_distributions(
    state: Arc<AppState>,
    args: DistributionsArgs,
    _call: Call,
) -> ToolResult<DistributionsOut> {
    check_id("run", &args.run_id)?;
    if let Some(k) = &args.kind {
        let ok = !k.is_empty()
            && k.len() <= 64
            && !k.contains("..")
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
        if !ok {
            return Err(ToolError::new(
                "`type` is a distribution name such as rewards: letters, digits, '_', '-', '.', '/' (at most 64).",
            ));
        }
    }
    if let Some(s) = args.step.filter(|s| *s < 0) {
        return Err(ToolError::new(format!("`step` must be 0 or more; got {s}")));
    }
    let resp = state
        .platform()?
        .get_distributions(
            &args.run_id,
            &DistributionsQuery {
                kind: args.kind.clone(),
                step: args.step,
            },
        )
        .await
        .map_err(|e| not_found_or(&args.run_id, "get distributions of run", e))?;
    let mut bins = resp.bins;
    let truncated = bins.len() > MAX_BINS;
    bins.truncate(MAX_BINS);
    let counts: Vec<u64> = bins
        .iter()
        .filter_map(|b| b.get("count").and_then(Value::as_u64))
        .collect();
    let total_count = (!counts.is_empty()).then(|| counts.iter().sum());
    let step = resp.step.or(args.step);
    let bin_count = bins.len();
    Ok(Outcome::done(
        format!(
            "{bin_count} {} bin(s) of run {}{}",
            args.kind.as_deref().unwrap_or("distribution"),
            args.run_id,
            step.map(|s| format!(" at step {s}")).unwrap_or_default()
        ),
        DistributionsOut {
            run_id: args.run_id,
            kind: args.kind,
            step,
            bins,
            bin_count,
            total_count,
            truncated,
        },
    ))
}

// ---- watch_run -------------------------------------------------------------------------------

/// Longest `timeout_s` accepted.
pub const MAX_WATCH_S: u32 = 600;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WatchArgs {
    pub run_id: String,
    /// Return once this many steps are complete.
    #[schemars(range(min = 1))]
    pub until_step: Option<i64>,
    /// Return once the run is in this status (default, with no until_*: any terminal status).
    pub until_status: Option<RunStatus>,
    /// Longest wait in seconds, 1 to 600 (default 120).
    #[schemars(range(min = 1, max = 600))]
    pub timeout_s: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WatchOut {
    pub run_id: String,
    /// reached, timed_out, run_failed, run_stopped, or run_ended.
    pub reason: String,
    pub target: String,
    pub status: String,
    pub terminal: bool,
    pub latest_step: Option<i64>,
    pub max_steps: Option<i64>,
    pub error_message: Option<String>,
    pub waited_s: f64,
    pub requests: u32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    Step(i64),
    Status(RunStatus),
    Terminal,
}

impl Target {
    fn describe(self) -> String {
        match self {
            Target::Step(n) => format!("step {n}"),
            Target::Status(s) => format!("status {}", status_wire(s)),
            Target::Terminal => "a terminal status".into(),
        }
    }
}

fn status_wire(s: RunStatus) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// Whether the wait is over, and why.
fn verdict(
    target: Target,
    status: &str,
    terminal: bool,
    step: Option<i64>,
) -> Option<&'static str> {
    let reached = match target {
        Target::Step(n) => step.is_some_and(|s| s >= n),
        Target::Status(s) => status.eq_ignore_ascii_case(&status_wire(s)),
        Target::Terminal => terminal && status.eq_ignore_ascii_case("COMPLETED"),
    };
    if reached {
        return Some("reached");
    }
    if !terminal {
        return None;
    }
    Some(match status.to_ascii_uppercase().as_str() {
        "FAILED" => "run_failed",
        "STOPPED" | "PAUSED" => "run_stopped",
        _ => "run_ended",
    })
}

/// Paces platform requests: never two closer than the current interval, which backs off while
/// nothing changes. Waiting ends early on cancellation or at the deadline.
struct Pacer {
    min: Duration,
    max: Duration,
    interval: Duration,
    last: Option<Instant>,
    deadline: Instant,
    requests: u32,
    /// The server-wide budget every poll loop shares.
    budget: crate::pacing::PollBudget,
}

enum Wait {
    Go,
    Deadline,
}

impl Pacer {
    async fn wait(&mut self, call: &Call) -> Result<Wait, Cancelled> {
        let now = Instant::now();
        let due = self.last.map_or(now, |l| l + self.interval);
        if due >= self.deadline {
            tokio::select! {
                _ = call.ctx.ct.cancelled() => return Err(Cancelled),
                _ = tokio::time::sleep_until(self.deadline.into()) => return Ok(Wait::Deadline),
            }
        }
        if due > now {
            tokio::select! {
                _ = call.ctx.ct.cancelled() => return Err(Cancelled),
                _ = tokio::time::sleep_until(due.into()) => {}
            }
        }
        // A slot after the deadline is not reserved, and a cancelled wait gives its slot back.
        let Some(slot) = self.budget.reserve_before(Instant::now(), self.deadline) else {
            tokio::select! {
                _ = call.ctx.ct.cancelled() => return Err(Cancelled),
                _ = tokio::time::sleep_until(self.deadline.into()) => return Ok(Wait::Deadline),
            }
        };
        tokio::select! {
            _ = call.ctx.ct.cancelled() => {
                self.budget.give_back(slot);
                return Err(Cancelled);
            }
            _ = tokio::time::sleep_until(slot.at.into()) => {}
        }
        if call.ctx.ct.is_cancelled() {
            self.budget.give_back(slot);
            return Err(Cancelled);
        }
        self.last = Some(Instant::now());
        self.requests += 1;
        Ok(Wait::Go)
    }

    fn changed(&mut self, changed: bool) {
        self.interval = if changed {
            self.min
        } else {
            self.interval.mul_f64(1.5).min(self.max)
        };
    }
}

fn cancelled(run_id: &str) -> ToolError {
    ToolError::new(format!(
        "The wait for run {run_id} was cancelled; the run itself is untouched (get_run shows it)."
    ))
}

/// Run a platform request, abandoning it when the client cancels.
async fn abortable<T>(call: &Call, fut: impl Future<Output = T>) -> Result<T, Cancelled> {
    tokio::select! {
        _ = call.ctx.ct.cancelled() => Err(Cancelled),
        v = fut => Ok(v),
    }
}

async fn watch_run(state: Arc<AppState>, args: WatchArgs, call: Call) -> ToolResult<WatchOut> {
    check_id("run", &args.run_id)?;
    let target = match (args.until_step, args.until_status) {
        (Some(_), Some(_)) => {
            return Err(ToolError::new(
                "Give until_step or until_status, not both (neither: wait for the run to end).",
            ));
        }
        (Some(n), None) if n < 1 => {
            return Err(ToolError::new(format!(
                "`until_step` must be 1 or more; got {n}"
            )));
        }
        (Some(n), None) => Target::Step(n),
        (None, Some(s)) => Target::Status(s),
        (None, None) => Target::Terminal,
    };
    let timeout_s = args.timeout_s.unwrap_or(120);
    if !(1..=MAX_WATCH_S).contains(&timeout_s) {
        return Err(ToolError::new(format!(
            "`timeout_s` must be between 1 and {MAX_WATCH_S}; got {timeout_s}. For longer waits call watch_run again."
        )));
    }
    let platform = state.platform()?;
    let token = call.ctx.meta.get_progress_token();
    let need_steps = matches!(target, Target::Step(_)) || token.is_some();
    let started = Instant::now();
    let min = state.limits.watch_poll_min;
    let mut pacer = Pacer {
        min,
        max: state.limits.watch_poll_max.max(min),
        interval: min,
        last: None,
        deadline: started + Duration::from_secs(u64::from(timeout_s)),
        requests: 0,
        budget: state.polls.clone(),
    };
    let mut run: Option<RlRun> = None;
    let mut step: Option<i64> = None;
    let mut notified: Option<i64> = None;
    let id = args.run_id.clone();
    let reason = loop {
        // The run's status.
        match pacer.wait(&call).await.map_err(|_| cancelled(&id))? {
            Wait::Deadline if run.is_some() => break "timed_out",
            // Not one answer yet: read once anyway, so the result has a state.
            Wait::Deadline => {}
            Wait::Go => {}
        }
        let r = abortable(&call, fetch_run(&state, &id))
            .await
            .map_err(|_| cancelled(&id))??;
        let mut changed = run
            .as_ref()
            .is_none_or(|old| old.status != r.status || old.updated_at != r.updated_at);
        let status = r.status.clone();
        let terminal = r.is_terminal();
        let max_steps = r.max_steps;
        run = Some(r);
        // Steps, when the target or the progress notifications need them and there can be any.
        let started_running = !matches!(status.to_ascii_uppercase().as_str(), "QUEUED" | "PENDING");
        let done_early = verdict(target, &status, terminal, step);
        if need_steps && started_running && !matches!(done_early, Some("reached")) {
            match pacer.wait(&call).await.map_err(|_| cancelled(&id))? {
                Wait::Deadline => break "timed_out",
                Wait::Go => {}
            }
            match abortable(&call, platform.get_progress(&id))
                .await
                .map_err(|_| cancelled(&id))?
            {
                Ok(ProgressResponse { latest_step, .. }) => {
                    changed |= latest_step != step;
                    step = latest_step.or(step);
                }
                // Progress is a nicety: a failed read does not end the wait.
                Err(e) => tracing::debug!(error = %e, "progress read failed while watching"),
            }
            if let (Some(tok), Some(s)) = (&token, step)
                && notified.is_none_or(|n| s > n)
            {
                notified = Some(s);
                let mut p = ProgressNotificationParam::new(tok.clone(), s as f64).with_message(
                    match max_steps {
                        Some(m) => format!("step {s} of {m} ({status})"),
                        None => format!("step {s} ({status})"),
                    },
                );
                if let Some(m) = max_steps {
                    p = p.with_total(m as f64);
                }
                let _ = call.ctx.peer.notify_progress(p).await;
            }
        }
        if let Some(why) = verdict(target, &status, terminal, step) {
            break why;
        }
        if Instant::now() >= pacer.deadline {
            break "timed_out";
        }
        pacer.changed(changed);
    };
    let Some(r) = run else {
        return Err(ToolError::new(format!(
            "Run {id} could not be read before the wait ended: call watch_run again."
        )));
    };
    let waited_s = (started.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    let out = WatchOut {
        run_id: id.clone(),
        reason: reason.into(),
        target: target.describe(),
        status: r.status.clone(),
        terminal: r.is_terminal(),
        latest_step: step,
        max_steps: r.max_steps,
        error_message: r.error_message.clone(),
        waited_s,
        requests: pacer.requests,
    };
    let steps = match (step, r.max_steps) {
        (Some(s), Some(m)) => format!(", step {s} of {m}"),
        (Some(s), None) => format!(", step {s}"),
        _ => String::new(),
    };
    let summary = match reason {
        "reached" => format!(
            "Run {id} reached {} ({}{steps})",
            target.describe(),
            r.status
        ),
        "timed_out" => format!(
            "Timed out after {timeout_s} s waiting for {} of run {id}: it is {}{steps}; call watch_run again to keep waiting",
            target.describe(),
            r.status
        ),
        "run_failed" => format!("Run {id} FAILED{steps}: diagnose_run says why"),
        "run_stopped" => format!(
            "Run {id} is {}{steps}: it will not reach {}",
            r.status,
            target.describe()
        ),
        _ => format!(
            "Run {id} ended ({}{steps}) without reaching {}",
            r.status,
            target.describe()
        ),
    };
    Ok(Outcome::done(summary, out))
}

// ---- diagnose_run ----------------------------------------------------------------------------

/// ERROR lines kept per component, and characters per line.
const ERROR_LINES: usize = 5;
const ERROR_LINE_CHARS: usize = 600;
/// Stall thresholds: a run is stalled when no step completed for ten times its own pace, and
/// never before five minutes; before its first step, after thirty minutes of RUNNING.
const STALL_PACE_FACTOR: f64 = 10.0;
const STALL_FLOOR_S: f64 = 300.0;
const STALL_FIRST_STEP_S: f64 = 1800.0;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiagnoseArgs {
    /// The run id (from list_runs or launch_run).
    pub run_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DiagnoseOut {
    pub run_id: String,
    pub name: Option<String>,
    pub status: String,
    /// healthy, starting, queued, stalled, failed, completed, stopped, or paused.
    pub verdict: String,
    pub age_s: Option<i64>,
    pub components: Vec<ComponentState>,
    pub error_message: Option<String>,
    pub failure_analysis: Option<FailureOut>,
    pub recent_errors: Vec<ComponentErrors>,
    pub progress: ProgressState,
    pub latest_checkpoint: Option<CheckpointBrief>,
    pub queue: Option<QueueState>,
    pub platform_notice: Option<String>,
    pub next_action: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ComponentState {
    pub component: String,
    pub env_name: Option<String>,
    pub status: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ComponentErrors {
    pub component: String,
    pub env_name: Option<String>,
    pub lines: Vec<String>,
    pub note: Option<String>,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct ProgressState {
    pub latest_step: Option<i64>,
    pub max_steps: Option<i64>,
    pub last_updated_at: Option<String>,
    pub seconds_since_progress: Option<f64>,
    pub seconds_per_step: Option<f64>,
    pub stall_threshold_s: Option<f64>,
    pub stalled: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckpointBrief {
    pub step: i64,
    pub status: String,
    pub storage_url: String,
    pub latest_ready_step: Option<i64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct QueueState {
    pub reason: Option<String>,
    pub runs_ahead: Option<i64>,
}

/// The stall judgement. The API has no per-step timestamps, so the pace is the run's own
/// average: (lastUpdatedAt − startedAt) ÷ latestStep. "Now" is the newest of this server's
/// clock, the platform's (its `Date` header) and every timestamp it reported for the run, so a platform clock ahead of
/// ours never makes a healthy run look stalled.
pub fn judge_stall(
    started_at: Option<DateTime<Utc>>,
    last_updated_at: Option<DateTime<Utc>>,
    latest_step: Option<i64>,
    now: DateTime<Utc>,
) -> (Option<f64>, Option<f64>, Option<f64>, bool) {
    let Some(since_ref) = last_updated_at.or(started_at) else {
        return (None, None, None, false);
    };
    let since = ((now - since_ref).num_milliseconds() as f64 / 1000.0).max(0.0);
    let pace = match (started_at, last_updated_at, latest_step) {
        (Some(s), Some(l), Some(n)) if n > 0 && l > s => {
            Some((l - s).num_milliseconds() as f64 / 1000.0 / n as f64)
        }
        _ => None,
    };
    let threshold = match (pace, latest_step) {
        (Some(p), _) => (p * STALL_PACE_FACTOR).max(STALL_FLOOR_S),
        (None, Some(n)) if n > 0 => STALL_FLOOR_S,
        _ => STALL_FIRST_STEP_S,
    };
    (Some(since), pace, Some(threshold), since > threshold)
}

fn looks_like_oom(texts: &[&str]) -> bool {
    texts.iter().any(|t| {
        let l = t.to_ascii_lowercase();
        l.contains("out of memory") || l.contains("outofmemory") || l.contains("oom-kill")
    })
}

fn cut(line: &str) -> String {
    if line.chars().count() > ERROR_LINE_CHARS {
        format!(
            "{}…",
            line.chars().take(ERROR_LINE_CHARS).collect::<String>()
        )
    } else {
        line.to_string()
    }
}

async fn error_lines(
    state: &AppState,
    run_id: &str,
    component: LogComponent,
    name: &str,
    env: Option<String>,
) -> ComponentErrors {
    let query = LogsQuery {
        tail_lines: 200,
        search: None,
        regex: false,
        level: Some("ERROR".into()),
        since_seconds: None,
        component,
        env_name: env.clone(),
        pod_index: None,
    };
    let (lines, note) = match state.platform() {
        Err(e) => (Vec::new(), Some(e.message)),
        Ok(p) => match p.get_logs(run_id, &query).await {
            Ok(r) => {
                let all: Vec<&str> = r.logs.lines().filter(|l| !l.trim().is_empty()).collect();
                let keep = all.len().saturating_sub(ERROR_LINES);
                (all[keep..].iter().map(|l| cut(l)).collect(), None)
            }
            Err(PlatformError::NotStartedYet { .. }) => (Vec::new(), Some("no logs yet".into())),
            Err(e) => (Vec::new(), Some(format!("could not read the logs: {e}"))),
        },
    };
    ComponentErrors {
        component: name.into(),
        env_name: env,
        lines,
        note,
    }
}

async fn diagnose_run(
    state: Arc<AppState>,
    args: DiagnoseArgs,
    _call: Call,
) -> ToolResult<DiagnoseOut> {
    let run = fetch_run(&state, &args.run_id).await?;
    let platform = state.platform()?;
    let id = run.id.clone();
    let status = run.status.to_ascii_uppercase();
    let started = run.started_at.is_some() || !matches!(status.as_str(), "QUEUED" | "PENDING");

    // Components: the primary one (and SFT's online-eval pair), then env servers.
    let mut components = Vec::new();
    let mut log_targets: Vec<(LogComponent, &'static str, Option<String>)> = Vec::new();
    let row = |c: &str| ComponentState {
        component: c.into(),
        env_name: None,
        status: run.status.clone(),
    };
    let online_eval = run.is_sft()
        && run
            .run_config
            .as_ref()
            .and_then(|c| c.get("eval"))
            .is_some_and(Value::is_object);
    if run.is_sft() {
        components.push(row("trainer"));
        log_targets.push((LogComponent::Trainer, "trainer", None));
        if online_eval {
            components.push(row("orchestrator"));
            components.push(row("inference"));
            log_targets.push((LogComponent::Orchestrator, "orchestrator", None));
        }
    } else {
        components.push(row("orchestrator"));
        log_targets.push((LogComponent::Orchestrator, "orchestrator", None));
        log_targets.push((LogComponent::Trainer, "trainer", None));
        log_targets.push((LogComponent::Inference, "inference", None));
    }
    match platform.list_env_servers(&id).await {
        Ok(servers) => {
            for s in servers.env_servers {
                if let Some(env) = &s.env_name
                    && !log_targets
                        .iter()
                        .any(|(_, _, e)| e.as_deref() == Some(env.as_str()))
                {
                    log_targets.push((LogComponent::EnvServer, "env-server", Some(env.clone())));
                }
                components.push(ComponentState {
                    component: "env-server".into(),
                    env_name: s.env_name,
                    status: s.status,
                });
            }
        }
        Err(e) => tracing::debug!(error = %e, "env servers unreadable while diagnosing"),
    }

    // The newest ERROR lines of each component, once the run has logs.
    let mut recent_errors = Vec::new();
    if started {
        let reads = log_targets
            .into_iter()
            .map(|(c, name, env)| error_lines(&state, &id, c, name, env));
        recent_errors = futures::future::join_all(reads)
            .await
            .into_iter()
            .filter(|e| !e.lines.is_empty() || e.note.is_some())
            .collect();
    }

    // Progress and checkpoints.
    let progress = if started {
        platform.get_progress(&id).await.ok()
    } else {
        None
    };
    let checkpoints = if started {
        platform
            .list_checkpoints(&id, None)
            .await
            .map(|c| c.checkpoints)
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    let latest_ready = checkpoints
        .iter()
        .filter(|c| c.status.eq_ignore_ascii_case("READY"))
        .map(|c| c.step)
        .max();
    let latest_checkpoint = checkpoints
        .iter()
        .max_by_key(|c| c.step)
        .map(|c| CheckpointBrief {
            step: c.step,
            status: c.status.clone(),
            storage_url: c.storage_url.clone(),
            latest_ready_step: latest_ready.filter(|s| *s != c.step),
        });

    // "Now": the newest of our clock and what the platform reported.
    let last_updated = progress
        .as_ref()
        .and_then(|p| p.last_updated_at.as_deref())
        .and_then(parse_ts);
    let started_at = run.started_at.as_deref().and_then(parse_ts);
    // The platform's own clock (its last `Date` header) when it sent one.
    let mut now = platform
        .server_time()
        .map_or_else(Utc::now, |t| t.max(Utc::now()));
    for t in [parse_ts(&run.updated_at), last_updated, started_at]
        .into_iter()
        .flatten()
        .chain(checkpoints.iter().filter_map(|c| parse_ts(&c.created_at)))
    {
        now = now.max(t);
    }
    let latest_step = progress.as_ref().and_then(|p| p.latest_step);
    let mut progress_state = ProgressState {
        latest_step,
        max_steps: run.max_steps,
        last_updated_at: progress.as_ref().and_then(|p| p.last_updated_at.clone()),
        ..ProgressState::default()
    };
    if status == "RUNNING" {
        let (since, pace, threshold, stalled) =
            judge_stall(started_at, last_updated, latest_step, now);
        progress_state.seconds_since_progress = since.map(|s| s.round());
        progress_state.seconds_per_step = pace.map(|p| (p * 10.0).round() / 10.0);
        progress_state.stall_threshold_s = threshold;
        progress_state.stalled = stalled;
    }
    let age_s = parse_ts(&run.created_at).map(|c| (now - c).num_seconds().max(0));

    let queue = matches!(status.as_str(), "QUEUED" | "PENDING").then(|| QueueState {
        reason: run.queue_reason.clone(),
        runs_ahead: run.runs_ahead,
    });

    // Verdict and advice.
    let failure_analysis = run.failure_analysis.as_ref().map(|f| FailureOut {
        root_cause: f.root_cause.clone(),
        evidence: f.evidence.clone(),
        confidence: f.confidence,
    });
    let mut texts: Vec<&str> = Vec::new();
    texts.extend(run.error_message.as_deref());
    if let Some(f) = &run.failure_analysis {
        texts.extend(f.root_cause.as_deref());
        texts.extend(f.evidence.iter().map(String::as_str));
    }
    texts.extend(
        recent_errors
            .iter()
            .flat_map(|e| e.lines.iter().map(String::as_str)),
    );
    let (verdict, next_action) = match status.as_str() {
        "FAILED" if looks_like_oom(&texts) => (
            "failed",
            "The trainer ran out of GPU memory. Give it more memory: more trainer GPUs (deployment.num_train_gpus), a GPU type with more memory (list_gpus), a smaller model, or a smaller batch_size/seq_len; then validate_config and plan_run again (relaunch_after_failure: true).".to_string(),
        ),
        "FAILED" => (
            "failed",
            "Read the root cause and the ERROR lines above, fix the config, validate_config, then plan_run again (relaunch_after_failure: true). get_logs with component and level ERROR shows more.".to_string(),
        ),
        "QUEUED" | "PENDING" if status == "QUEUED" => (
            "queued",
            format!(
                "Waiting for capacity{}{}. Wait with watch_run until_status RUNNING, or stop_run it and plan again with a GPU type that is available now (list_gpus).",
                run.queue_reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default(),
                run.runs_ahead.map(|n| format!(" ({n} run(s) ahead)")).unwrap_or_default()
            ),
        ),
        "PENDING" => (
            "starting",
            "The run is being scheduled. watch_run until_status RUNNING, then follow it with get_logs.".to_string(),
        ),
        "RUNNING" if progress_state.stalled => (
            "stalled",
            format!(
                "No step has completed for {} s (the run's pace is {} per step). Read the newest logs (get_logs component trainer and orchestrator); if it stays stuck, stop_run it — a stalled run still bills GPU time{}.",
                progress_state.seconds_since_progress.unwrap_or_default(),
                progress_state
                    .seconds_per_step
                    .map(|p| format!("{p} s"))
                    .unwrap_or_else(|| "unknown".into()),
                latest_ready.map(|s| format!("; the checkpoint of step {s} is ready to resume from")).unwrap_or_default()
            ),
        ),
        "RUNNING" if latest_step.is_none() => (
            "starting",
            "Running, no step completed yet (start-up: images and weights load). watch_run until_step 1.".to_string(),
        ),
        "RUNNING" => (
            "healthy",
            match (latest_step, run.max_steps, progress_state.seconds_per_step) {
                (Some(s), Some(m), Some(p)) if m > s => format!(
                    "Progressing at about {p} s per step: step {s} of {m}, about {} s left. watch_run to wait for it.",
                    ((m - s) as f64 * p).round()
                ),
                _ => "Progressing. watch_run to wait for it; get_metrics shows the curve.".to_string(),
            },
        ),
        "COMPLETED" => (
            "completed",
            "Completed. list_checkpoints (or fetch_checkpoint) for the weights, get_metrics for the curve, fetch_traces for the rollouts.".to_string(),
        ),
        "STOPPED" => (
            "stopped",
            "Stopped. Its checkpoints stay available (list_checkpoints); plan_run again to train more.".to_string(),
        ),
        "PAUSED" | "PAUSING" => (
            "paused",
            "Paused. resume_run makes a new run from it (billable: planned and confirmed like a launch).".to_string(),
        ),
        _ => (
            "unknown",
            "The platform reports a status this server does not know: get_run and get_logs show more.".to_string(),
        ),
    };
    let summary = format!(
        "Run {id} is {} — {verdict}{}",
        run.status,
        latest_step
            .map(|s| match run.max_steps {
                Some(m) => format!(", step {s} of {m}"),
                None => format!(", step {s}"),
            })
            .unwrap_or_default()
    );
    Ok(Outcome::done(
        summary,
        DiagnoseOut {
            run_id: id,
            name: run.name.clone(),
            status: run.status.clone(),
            verdict: verdict.into(),
            age_s,
            components,
            error_message: run.error_message.clone(),
            failure_analysis,
            recent_errors,
            progress: progress_state,
            latest_checkpoint,
            queue,
            platform_notice: run.notice.clone(),
            next_action,
        },
    ))
}

// ---- the get_logs follow cursor -------------------------------------------------------------

/// Lines of history a cursor remembers (as hashes) to find where the next tail overlaps.
const CURSOR_LINES: usize = 16;
const CURSOR_PREFIX: &str = "lc1";

/// FNV-1a: stable across builds and processes, so a cursor survives a server restart. Hashes
/// of already-redacted lines only: a cursor carries nothing derived from a secret.
fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for b in p.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// What `get_logs` remembers between calls: which query, and the hashes of the last lines seen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogCursor {
    query: u64,
    seen: Vec<u64>,
}

impl LogCursor {
    /// A cursor for `query` (the component and filters, which a follow-up call must repeat).
    pub fn new(query_parts: &[&str]) -> Self {
        LogCursor {
            query: fnv(query_parts),
            seen: Vec::new(),
        }
    }

    /// Parse a cursor a previous answer gave, checking it belongs to the same query.
    pub fn parse(text: &str, query_parts: &[&str]) -> Result<Self, ToolError> {
        let bad = || {
            ToolError::new(
                "`cursor` is not one this server gave: pass the `cursor` of the previous get_logs answer unchanged, or drop it to read the tail.",
            )
        };
        let body = text.strip_prefix(CURSOR_PREFIX).ok_or_else(bad)?;
        if body.is_empty() || body.len() % 16 != 0 || body.len() > 16 * (CURSOR_LINES + 1) {
            return Err(bad());
        }
        let words: Vec<u64> = (0..body.len() / 16)
            .map(|i| u64::from_str_radix(body.get(i * 16..i * 16 + 16).unwrap_or(""), 16))
            .collect::<Result<_, _>>()
            .map_err(|_| bad())?;
        let cursor = LogCursor {
            query: words[0],
            seen: words[1..].to_vec(),
        };
        if cursor.query != fnv(query_parts) {
            return Err(ToolError::new(
                "This `cursor` belongs to another log query: repeat the same run, component, env and filters as the call that returned it, or drop the cursor.",
            ));
        }
        Ok(cursor)
    }

    pub fn encode(&self) -> String {
        let mut s = String::from(CURSOR_PREFIX);
        for w in std::iter::once(self.query).chain(self.seen.iter().copied()) {
            s.push_str(&format!("{w:016x}"));
        }
        s
    }

    /// Where the unseen lines of `lines` (a fresh tail, oldest first) begin, and whether the
    /// tail still overlaps what was seen (false: lines may have been missed in between). The
    /// API only returns tails, so this finds the overlap as the CLI's follow does: the earliest
    /// place where the remembered last lines end; else a tail that starts inside them.
    pub fn unseen_from(&self, lines: &[String]) -> (usize, bool) {
        let k = self.seen.len();
        if k == 0 || lines.is_empty() {
            return (0, true);
        }
        let h: Vec<u64> = lines.iter().map(|l| fnv(&[l])).collect();
        if let Some(j) = (k..=h.len()).find(|&j| h[j - k..j] == self.seen[..]) {
            return (j, true);
        }
        if let Some(j) = (1..k.min(h.len() + 1))
            .rev()
            .find(|&j| h[..j] == self.seen[k - j..])
        {
            return (j, true);
        }
        (0, false)
    }

    /// Remember `returned` as the newest lines seen.
    pub fn advance(&mut self, returned: &[String]) {
        self.seen.extend(returned.iter().map(|l| fnv(&[l])));
        let extra = self.seen.len().saturating_sub(CURSOR_LINES);
        self.seen.drain(..extra);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        parse_ts(s).unwrap()
    }

    #[test]
    fn a_run_is_stalled_only_after_ten_times_its_own_pace_and_five_minutes() {
        let start = Some(t("2026-01-01T00:00:00Z"));
        // 10 steps in 100 s: 10 s/step; threshold max(100 s, 300 s) = 300 s.
        let last = Some(t("2026-01-01T00:01:40Z"));
        let (since, pace, thr, stalled) =
            judge_stall(start, last, Some(10), t("2026-01-01T00:05:00Z"));
        assert_eq!(
            (since, pace, thr, stalled),
            (Some(200.0), Some(10.0), Some(300.0), false)
        );
        let (_, _, _, stalled) = judge_stall(start, last, Some(10), t("2026-01-01T00:06:41Z"));
        assert!(stalled);
        // A slow run (100 s/step) is judged against its own pace: 1000 s.
        let last = Some(t("2026-01-01T00:16:40Z"));
        let (_, _, thr, stalled) = judge_stall(start, last, Some(10), t("2026-01-01T00:30:00Z"));
        assert_eq!(thr, Some(1000.0));
        assert!(!stalled);
        // A platform clock ahead of ours: progress "in the future" is not a stall.
        let (since, _, _, stalled) = judge_stall(start, last, Some(10), t("2026-01-01T00:00:05Z"));
        assert_eq!(since, Some(0.0));
        assert!(!stalled);
    }

    #[test]
    fn before_the_first_step_the_start_up_gets_thirty_minutes() {
        let start = Some(t("2026-01-01T00:00:00Z"));
        let (_, pace, thr, stalled) = judge_stall(start, None, None, t("2026-01-01T00:20:00Z"));
        assert_eq!((pace, thr, stalled), (None, Some(1800.0), false));
        let (_, _, _, stalled) = judge_stall(start, None, None, t("2026-01-01T00:31:00Z"));
        assert!(stalled);
    }

    #[test]
    fn watch_verdicts_say_why_the_wait_ended() {
        assert_eq!(
            verdict(Target::Step(5), "RUNNING", false, Some(5)),
            Some("reached")
        );
        assert_eq!(verdict(Target::Step(5), "RUNNING", false, Some(4)), None);
        // RUNNING alone is not progress.
        assert_eq!(verdict(Target::Step(1), "RUNNING", false, None), None);
        assert_eq!(
            verdict(Target::Step(50), "COMPLETED", true, Some(20)),
            Some("run_ended")
        );
        assert_eq!(
            verdict(Target::Terminal, "COMPLETED", true, Some(20)),
            Some("reached")
        );
        assert_eq!(
            verdict(Target::Terminal, "FAILED", true, None),
            Some("run_failed")
        );
        assert_eq!(
            verdict(Target::Status(RunStatus::Running), "STOPPED", true, None),
            Some("run_stopped")
        );
        assert_eq!(
            verdict(Target::Status(RunStatus::Failed), "FAILED", true, None),
            Some("reached")
        );
    }

    #[test]
    fn long_sample_texts_are_shortened() {
        let mut v = serde_json::json!({"completion": [{"content": "x".repeat(3000)}], "reward": 1});
        assert!(shorten_strings(&mut v, 100));
        let s = v["completion"][0]["content"].as_str().unwrap();
        assert!(s.starts_with(&"x".repeat(100)) && s.contains("2900 more"));
    }

    fn lines(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_cursor_returns_only_lines_after_the_overlap() {
        let q = ["run", "orchestrator"];
        let mut c = LogCursor::new(&q);
        let first = lines(&["a", "b", "c"]);
        assert_eq!(c.unseen_from(&first), (0, true));
        c.advance(&first);
        let c = LogCursor::parse(&c.encode(), &q).unwrap();
        // The tail moved on: "a" scrolled out, "d", "e" are new.
        assert_eq!(c.unseen_from(&lines(&["b", "c", "d", "e"])), (2, true));
        // Nothing new.
        assert_eq!(c.unseen_from(&lines(&["a", "b", "c"])), (3, true));
        // The window no longer overlaps: everything is returned and the gap is said.
        assert_eq!(c.unseen_from(&lines(&["x", "y"])), (0, false));
        // Repeated text is matched as a sequence, not line by line.
        assert_eq!(
            c.unseen_from(&lines(&["a", "b", "c", "a", "b", "c"])),
            (3, true)
        );
        // Another query's cursor is refused.
        assert!(LogCursor::parse(&c.encode(), &["run", "trainer"]).is_err());
        assert!(LogCursor::parse("lc1zz", &q).is_err());
    }

    #[test]
    fn a_cursor_remembers_only_the_last_lines() {
        let mut c = LogCursor::new(&["q"]);
        let many: Vec<String> = (0..100).map(|i| format!("line {i}")).collect();
        c.advance(&many);
        assert_eq!(c.seen.len(), CURSOR_LINES);
        assert_eq!(c.unseen_from(&many[50..]), (50, true));
        assert!(c.encode().len() < 300);
    }
}
