//! `diagnose_run`: one answer to "what is going on with this run" — status, components,
//! progress and stall, recent errors, checkpoints, queue.
use std::sync::Arc;

use chrono::{DateTime, Utc};
use factory_platform::{LogComponent, LogsQuery, PlatformError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    reply::{Outcome, ToolResult},
    run_view::{FailureOut, fetch_run},
    server::Call,
    state::AppState,
};

use super::*;

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

pub(super) async fn diagnose_run(
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
}
