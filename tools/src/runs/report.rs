//! `run_report`: the end-of-run report of the platform playbook — outcome, steps, duration,
//! usage, where checkpoints and traces are, and the calls that would fetch what is not local
//! yet. `stop_run` with `then_report` waits for it.
use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use factory_platform::{
    PlatformError, TracesQuery,
    wire::runs::{Checkpoint, RlRun, RunUsage},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    error::ToolError,
    reply::{Outcome, ToolResult},
    run_view::fetch_run,
    server::Call,
    state::{AppState, platform_error},
};

use crate::artifacts::{checkpoint_volume_dir, run_scope};

use super::checkpoints::{self, Paging};

/// Checkpoints a report lists by default (the newest): the rest of the report fits beside them
/// in 4 KB.
const REPORT_CHECKPOINTS: u32 = 5;

/// Most trace pages `run_report` reads to count traces.
const TRACE_COUNT_PAGES: usize = 20;

// ---------------------------------------------------------------------------------------------
// run_report

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunReportArgs {
    pub run_id: String,
    /// Workspace directory fetch_checkpoint wrote into (its `dest_dir`), to say what is local.
    pub checkpoints_dir: Option<String>,
    /// Workspace directory fetch_traces wrote into, to say which traces are local.
    pub traces_dir: Option<String>,
    /// Page of the checkpoint list, from 1 (default 1: the newest).
    #[schemars(range(min = 1))]
    pub checkpoints_page: Option<u32>,
    /// Checkpoints listed per page, 1 to 40 (default 5).
    #[schemars(range(min = 1, max = 40))]
    pub checkpoints_limit: Option<u32>,
}

/// Which page of a run's checkpoints a report lists (newest first).
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckpointPage {
    pub page: Option<u32>,
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ReportCheckpoint {
    pub step: i64,
    pub status: String,
    pub size_bytes: Option<u64>,
    pub volume_path: String,
    pub storage_url: String,
    pub local_dir: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ReportTraces {
    pub count: usize,
    pub count_is_lower_bound: bool,
    pub local: usize,
    pub local_dir: Option<String>,
    /// Train steps up to the latest without traces (null: could not check).
    pub missing_uploads: Option<crate::traces::MissingUploads>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ReportUsage {
    pub training_tokens: Option<u64>,
    pub inference_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    /// The platform's reported cost of training so far (its billing usage), USD rounded to cents.
    pub training_cost_usd: Option<f64>,
    /// The platform's reported cost of inference so far, USD rounded to cents.
    pub inference_cost_usd: Option<f64>,
    /// The platform's reported total cost so far, USD rounded to cents: the figure to quote.
    pub total_cost_usd: Option<f64>,
    /// An hourly rate derived from total_cost_usd over the run's running time on the
    /// platform's clock — not a price the platform quotes. Null when the cost is too coarse
    /// for a rate to mean much (see cost_per_hour_basis).
    pub cost_per_hour_usd: Option<f64>,
    /// What cost_per_hour_usd is derived from, or why there is none.
    pub cost_per_hour_basis: String,
    /// Low and high bounds of the derived rate, given the cost's rounding to cents and the
    /// one-second resolution of the clock.
    pub cost_per_hour_range_usd: Option<[f64; 2]>,
    /// The hourly price this server priced the run at when it planned it (runs it launched).
    pub planned_per_hour_usd: Option<f64>,
}

/// A rate derived from a cost rounded to cents over `seconds` is too coarse when its bounds
/// are further apart than this fraction of the rate.
const RATE_SPREAD_LIMIT: f64 = 0.10;

/// The hourly rate a reported cost implies over a span of running time, with its basis: a
/// figure only when the cost's rounding (±$0.005) and the clock's resolution (±1 s) leave it
/// within [`RATE_SPREAD_LIMIT`]; otherwise only the bounds, and the basis says why.
fn derived_rate(
    cost: Option<f64>,
    seconds: Option<f64>,
    clock: &str,
) -> (Option<f64>, String, Option<[f64; 2]>) {
    let (Some(cost), Some(secs)) = (cost, seconds) else {
        return (
            None,
            match cost {
                None => "no rate: the platform reported no total cost".into(),
                Some(_) => {
                    "no rate: the run's running time is unknown on the platform's clock".into()
                }
            },
            None,
        );
    };
    let span = format!("{} of running time ({clock})", human_span(secs));
    if secs <= 1.0 {
        return (None, format!("no rate: {span} is too short"), None);
    }
    let lo = ((cost - 0.005).max(0.0) / ((secs + 1.0) / 3600.0)).max(0.0);
    let hi = (cost + 0.005) / ((secs - 1.0) / 3600.0);
    let range = Some([crate::figures::cents(lo), crate::figures::cents(hi)]);
    let rate = cost / (secs / 3600.0);
    if cost < 0.005 || (hi - lo) > RATE_SPREAD_LIMIT * rate {
        return (
            None,
            format!(
                "too coarse for a rate: the platform reports {} (rounded to cents) over {span}, which puts the rate anywhere from {} to {}/h; quote the plan's price or wait for a longer span",
                crate::figures::usd(cost),
                crate::figures::usd(lo),
                crate::figures::usd(hi)
            ),
            range,
        );
    }
    (
        Some(crate::figures::cents(rate)),
        format!(
            "derived: the platform's reported total cost {} over {span}; not a price the platform quotes",
            crate::figures::usd(cost)
        ),
        range,
    )
}

/// "42 s", "3.5 min", "2.25 h".
fn human_span(secs: f64) -> String {
    if secs < 120.0 {
        format!("{secs:.0} s")
    } else if secs < 7200.0 {
        format!("{:.1} min", secs / 60.0)
    } else {
        format!("{:.2} h", secs / 3600.0)
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RunReport {
    pub run_id: String,
    pub name: Option<String>,
    pub dashboard_url: String,
    pub status: String,
    pub terminal: bool,
    pub outcome: String,
    pub completed_steps: Option<i64>,
    pub max_steps: Option<i64>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub duration_s: Option<f64>,
    pub volume: Option<String>,
    pub volume_run_dir: Option<String>,
    pub usage: Option<ReportUsage>,
    pub usage_note: Option<String>,
    /// One page of the run's checkpoints, newest first (`checkpoints_paging` says which).
    pub checkpoints: Vec<ReportCheckpoint>,
    pub checkpoints_paging: Paging,
    /// How many of all the run's checkpoints are complete in `checkpoints_dir`.
    pub checkpoints_local: usize,
    pub outputs_synced: bool,
    pub traces: ReportTraces,
    pub wandb_project: Option<String>,
    pub wandb_run_name: Option<String>,
    pub next_calls: Vec<String>,
}

pub(super) async fn run_report(
    state: Arc<AppState>,
    args: RunReportArgs,
    _call: Call,
) -> ToolResult<RunReport> {
    if args.checkpoints_page == Some(0) || args.checkpoints_limit == Some(0) {
        return Err(ToolError::bad_argument(
            "`checkpoints_page` and `checkpoints_limit` start at 1: call run_report again without them for the newest checkpoints.",
        ));
    }
    let report = build_report(
        &state,
        &args.run_id,
        args.checkpoints_dir.as_deref(),
        args.traces_dir.as_deref(),
        CheckpointPage {
            page: args.checkpoints_page,
            limit: args.checkpoints_limit,
        },
    )
    .await?;
    let smaller = serde_json::json!({"run_id": report.run_id, "checkpoints_limit": 1});
    Ok(Outcome::done(report_summary(&report), report).with_rest(format!(
        "Call run_report {smaller} for the newest checkpoint only; list_checkpoints pages through them all."
    )))
}

/// The one-line summary of a report.
pub fn report_summary(r: &RunReport) -> String {
    format!(
        "Run {} {}: {} of {} steps, {} checkpoint(s) ({} local; {}), {} trace(s){}",
        r.run_id,
        r.outcome,
        r.completed_steps.map_or("?".into(), |s| s.to_string()),
        r.max_steps.map_or("?".into(), |s| s.to_string()),
        r.checkpoints_paging.total,
        r.checkpoints_local,
        checkpoints::describe(
            &r.checkpoints_paging,
            r.checkpoints.len(),
            "run_report",
            "checkpoints_page"
        ),
        r.traces.count,
        r.usage
            .as_ref()
            .and_then(|u| u.total_cost_usd)
            .map(|c| format!(", {} reported by the platform", crate::figures::usd(c)))
            .unwrap_or_default()
    )
}

fn parse_time(s: Option<&str>) -> Option<chrono::DateTime<chrono::Utc>> {
    s.and_then(factory_platform::wire::parse_wire_datetime)
}

fn outcome(run: &RlRun) -> String {
    match run.status.to_ascii_uppercase().as_str() {
        "COMPLETED" => "completed".into(),
        "FAILED" => format!(
            "failed: {}",
            run.error_message
                .as_deref()
                .unwrap_or("no reason given (get_logs shows the errors)")
        ),
        "STOPPED" => "stopped".into(),
        "PAUSED" => "paused".into(),
        other => format!("still {other}"),
    }
}

/// A checkpoint directory fetched completely: it exists and holds no partial download.
fn fetched_complete(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut any = false;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".part") {
            return false;
        }
        any = true;
    }
    any
}

/// The end-of-run report (also what `stop_run` with `then_report` ends with).
pub async fn build_report(
    state: &AppState,
    run_id: &str,
    checkpoints_dir: Option<&str>,
    traces_dir: Option<&str>,
    page: CheckpointPage,
) -> Result<RunReport, ToolError> {
    let run = fetch_run(state, run_id).await?;
    let platform = state.platform()?;
    let ws = state.workspace();
    let resolve = |arg: Option<&str>, what: &str| -> Result<Option<PathBuf>, ToolError> {
        match arg {
            None => Ok(None),
            Some(a) => ws
                .as_ref()
                .map_err(|e| e.clone())?
                .resolve_for_write(a)
                .map(Some)
                .map_err(|e| ToolError::new(format!("{what}: {e}"))),
        }
    };
    let ck_dir = resolve(checkpoints_dir, "checkpoints_dir")?;
    let tr_dir = resolve(traces_dir, "traces_dir")?;

    let progress = platform.get_progress(&run.id).await.ok();
    let checkpoints = platform
        .list_checkpoints(&run.id, None)
        .await
        .map_err(|e| platform_error(&format!("list checkpoints of run {}", run.id), &e))?
        .checkpoints;
    let (usage, usage_note) = match platform.get_run_usage(&run.id).await {
        Ok(u) => (Some(u), None),
        Err(e) => (None, Some(format!("usage unavailable: {e}"))),
    };
    let started = parse_time(run.started_at.as_deref());
    let ended = if run.is_terminal() {
        parse_time(run.completed_at.as_deref()).or_else(|| parse_time(Some(&run.updated_at)))
    } else {
        None
    };
    // Time on the platform's clock: its own timestamps for a run that ended, its `Date` for one
    // that runs — a skewed local clock must not bend the rate.
    let (now, clock) = match (ended, platform.server_time()) {
        (Some(e), _) => (
            Some(e),
            "started_at to completed_at, the platform's timestamps",
        ),
        (None, Some(t)) => (Some(t), "started_at to now by the platform's Date header"),
        (None, None) => (None, ""),
    };
    let duration_s = match (started, now) {
        (Some(s), Some(e)) => Some(((e - s).num_milliseconds().max(0) as f64) / 1000.0),
        _ => None,
    };
    let planned = planned_rate(state, &run.id).await;
    let usage = usage.map(|u| report_usage(&u, duration_s, clock, planned));

    let mut next_calls = Vec::new();
    let ck_arg = checkpoints_dir
        .map(str::to_string)
        .unwrap_or_else(|| format!("checkpoints/{}", run.id));
    let report_cks = report_checkpoints(&run.id, &checkpoints, ck_dir.as_deref());
    if run.volume_name.is_some()
        && let Some(latest) = report_cks
            .iter()
            .filter(|c| c.status == "READY")
            .max_by_key(|c| c.step)
        && latest.local_dir.is_none()
    {
        next_calls.push(format!(
            "fetch_checkpoint {}",
            serde_json::json!({"run_id": run.id, "step": latest.step, "dest_dir": ck_arg})
        ));
    }
    let checkpoints_local = report_cks.iter().filter(|c| c.local_dir.is_some()).count();
    let (report_cks, checkpoints_paging) = checkpoints::newest_first(
        report_cks,
        |c| c.step,
        page.page,
        page.limit,
        REPORT_CHECKPOINTS,
    );
    let outputs_synced = checkpoints
        .iter()
        .all(|c| matches!(c.status.as_str(), "READY" | "FAILED"));

    let mut traces = count_traces(state, &run, tr_dir.as_deref()).await;
    traces.missing_uploads = crate::traces::missing_uploads(
        platform,
        &run_scope(&run),
        &run.id,
        progress.as_ref().and_then(|p| p.latest_step),
    )
    .await;
    if traces.count > traces.local {
        next_calls.push(format!(
            "fetch_traces {}",
            serde_json::json!({"run_id": run.id, "dest_dir": traces_dir.map(str::to_string).unwrap_or_else(|| format!("traces/{}", run.id))})
        ));
    }
    let pods = platform
        .list_env_servers(&run.id)
        .await
        .map(|s| s.env_servers.len())
        .unwrap_or(0);
    if factory_policies::lifecycle::logs_exportable(
        &run.run_status(),
        run.started_at.is_some(),
        pods,
    ) {
        next_calls.push(format!(
            "export_logs {}",
            serde_json::json!({"run_id": run.id})
        ));
    }
    Ok(RunReport {
        dashboard_url: platform.settings().run_dashboard_url(&run.id),
        run_id: run.id.clone(),
        name: run.name.clone(),
        status: run.status.clone(),
        terminal: run.is_terminal(),
        outcome: outcome(&run),
        completed_steps: progress.and_then(|p| p.latest_step),
        max_steps: run.max_steps,
        started_at: run.started_at.clone(),
        ended_at: ended.map(|e| e.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        duration_s,
        volume_run_dir: run
            .volume_name
            .as_ref()
            .map(|_| format!("runs/{}/", run.id)),
        volume: run.volume_name.clone(),
        usage,
        usage_note,
        checkpoints: report_cks,
        checkpoints_paging,
        checkpoints_local,
        outputs_synced,
        traces,
        wandb_project: run.wandb_project.clone(),
        wandb_run_name: run.wandb_run_name.clone(),
        next_calls,
    })
}

/// The report's money: tokens and costs as the platform counts them, the rate derived over
/// the run's time on `clock`, beside the rate the plan expected.
fn report_usage(
    u: &RunUsage,
    duration_s: Option<f64>,
    clock: &str,
    planned: Option<f64>,
) -> ReportUsage {
    let (rate, basis, range) = derived_rate(u.total_cost_usd, duration_s, clock);
    ReportUsage {
        training_tokens: u.training.as_ref().and_then(|b| b.tokens),
        inference_tokens: u.inference.as_ref().and_then(|b| b.tokens),
        total_tokens: u.total_tokens,
        training_cost_usd: u
            .training
            .as_ref()
            .and_then(|b| b.cost_usd)
            .map(crate::figures::cents),
        inference_cost_usd: u
            .inference
            .as_ref()
            .and_then(|b| b.cost_usd)
            .map(crate::figures::cents),
        total_cost_usd: u.total_cost_usd.map(crate::figures::cents),
        cost_per_hour_usd: rate,
        cost_per_hour_basis: basis,
        cost_per_hour_range_usd: range,
        planned_per_hour_usd: planned,
    }
}

/// Every checkpoint of the run as the report lists it, with the local copy `fetch_checkpoint`
/// completed under `ck_dir` (its `step_<n>` directory), if any.
fn report_checkpoints(
    run_id: &str,
    checkpoints: &[Checkpoint],
    ck_dir: Option<&std::path::Path>,
) -> Vec<ReportCheckpoint> {
    checkpoints
        .iter()
        .map(|c| {
            let local = ck_dir
                .map(|d| d.join(format!("step_{}", c.step)))
                .filter(|d| fetched_complete(d));
            ReportCheckpoint {
                step: c.step,
                status: c.status.clone(),
                size_bytes: c.size_bytes,
                volume_path: checkpoint_volume_dir(run_id, c),
                storage_url: c.storage_url.clone(),
                local_dir: local.map(|d| d.display().to_string()),
            }
        })
        .collect()
}

/// The hourly price a plan of this server priced the run at, from the dispatch journal.
async fn planned_rate(state: &AppState, run_id: &str) -> Option<f64> {
    let store = state.store().ok()?;
    store
        .dispatched_runs()
        .await
        .ok()?
        .into_iter()
        .find_map(|d| match d.state {
            factory_policies::store::DispatchState::Dispatched {
                run_id: id,
                details,
            } if id == run_id => details
                .get("rate_per_hour_usd")
                .and_then(serde_json::Value::as_f64)
                .map(crate::figures::cents),
            _ => None,
        })
}

async fn count_traces(state: &AppState, run: &RlRun, dir: Option<&Path>) -> ReportTraces {
    let run_id = run.id.as_str();
    let mut out = ReportTraces {
        count: 0,
        count_is_lower_bound: false,
        local: 0,
        local_dir: dir.map(|d| d.display().to_string()),
        missing_uploads: None,
    };
    let Ok(platform) = state.platform() else {
        return out;
    };
    // The run's owner, not the active team: a team run's traces are visible under its team.
    let traces = platform.traces_scoped(&run_scope(run));
    let mut cursor = None;
    for page_no in 0..TRACE_COUNT_PAGES {
        let page = traces
            .list_traces(&TracesQuery {
                limit: 100,
                run_id: Some(run_id.to_string()),
                cursor: cursor.take(),
                ..TracesQuery::default()
            })
            .await;
        let page = match page {
            Ok(p) => p,
            Err(PlatformError::NotFound { .. }) => break,
            Err(e) => {
                tracing::debug!("trace count stopped: {e}");
                out.count_is_lower_bound = true;
                break;
            }
        };
        out.count += page.items.len();
        if let Some(d) = dir {
            out.local += page
                .items
                .iter()
                .filter(|t| d.join(format!("{}.json", t.trace_id)).is_file())
                .count();
        }
        match page.next_cursor {
            Some(c) if page_no + 1 < TRACE_COUNT_PAGES => cursor = Some(c),
            Some(_) => out.count_is_lower_bound = true,
            None => break,
        }
    }
    out
}

/// For `stop_run` with `then_report`: wait (bounded) until the run is terminal and none of its
/// checkpoints is PENDING or UPLOADING — the API has no "synced" flag — then build the report.
/// If the budget runs out first, the report says `outputs_synced: false`.
pub async fn report_when_synced(
    state: &AppState,
    run_id: &str,
    budget: Duration,
) -> Result<RunReport, ToolError> {
    let deadline = tokio::time::Instant::now() + budget;
    loop {
        let report = build_report(state, run_id, None, None, CheckpointPage::default()).await?;
        if (report.terminal && report.outputs_synced) || tokio::time::Instant::now() >= deadline {
            return Ok(report);
        }
        state.polls.pace(state.limits.stop_poll, deadline).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cent_over_a_short_span_is_too_coarse_for_a_rate() {
        // The trial's case: $0.02 reported after 11 s of a plan priced at $4.98/h reads as
        // $6.55/h when divided out; the bounds say it could be anywhere from $4.50 to $9.00.
        let (rate, basis, range) = derived_rate(Some(0.02), Some(11.0), "clock");
        assert_eq!(rate, None);
        assert!(basis.contains("too coarse"), "{basis}");
        let [lo, hi] = range.unwrap();
        assert!(lo <= 4.98 && hi >= 4.98, "{lo}..{hi}");
    }

    #[test]
    fn a_long_span_gives_a_derived_rate_with_its_basis() {
        // Two hours at $4.98/h: $9.96 reported.
        let (rate, basis, range) =
            derived_rate(Some(9.96), Some(7200.0), "the platform's timestamps");
        assert_eq!(rate, Some(4.98));
        assert!(
            basis.starts_with("derived: the platform's reported total cost $9.96 over 2.00 h"),
            "{basis}"
        );
        let [lo, hi] = range.unwrap();
        assert!(lo <= 4.98 && 4.98 <= hi);
    }

    #[test]
    fn nothing_reported_yet_is_no_rate_and_no_negative_zero() {
        let (rate, basis, range) = derived_rate(Some(0.0), Some(30.0), "clock");
        assert_eq!(rate, None);
        assert!(
            !basis.contains("-$0.00") && !basis.contains("$-0.00"),
            "{basis}"
        );
        assert!(range.unwrap()[0].is_sign_positive());
        let (rate, basis, _) = derived_rate(Some(1.0), None, "clock");
        assert_eq!(rate, None);
        assert!(basis.contains("running time is unknown"));
    }
}
