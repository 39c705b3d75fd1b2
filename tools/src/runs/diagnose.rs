//! `diagnose_run`: one answer to "what is going on with this run" — status, components,
//! progress and stall, recent errors, checkpoints, queue.
use std::sync::Arc;

use chrono::{DateTime, Utc};
use factory_platform::{
    LogComponent, LogsQuery, PlatformClient, PlatformError,
    wire::{
        parse_wire_datetime,
        runs::{Checkpoint, ProgressResponse, RlRun},
    },
};
use factory_policies::watchdog::judge_stall;
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
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiagnoseArgs {
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
    let status = run.run_status();
    let started =
        run.started_at.is_some() || !matches!(status, RunStatus::Queued | RunStatus::Pending);

    let (components, log_targets) = components_of(platform, &run).await;
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
    let (progress, checkpoints) = if started {
        let progress = platform.get_progress(&id).await.ok();
        let checkpoints = platform
            .list_checkpoints(&id, None)
            .await
            .map(|c| c.checkpoints)
            .unwrap_or_default();
        (progress, checkpoints)
    } else {
        (None, Vec::new())
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
    let now = now_for(platform, &run, progress.as_ref(), &checkpoints);
    let progress_state = progress_state(&run, &status, progress.as_ref(), now);
    let age_s = parse_wire_datetime(&run.created_at).map(|c| (now - c).num_seconds().max(0));
    let queue = matches!(status, RunStatus::Queued | RunStatus::Pending).then(|| QueueState {
        reason: run.queue_reason.clone(),
        runs_ahead: run.runs_ahead,
    });
    let failure_analysis = run.failure_analysis.as_ref().map(|f| FailureOut {
        root_cause: f.root_cause.clone(),
        evidence: f.evidence.clone(),
        confidence: f.confidence,
    });
    let (verdict, mut next_action) = verdict(
        &run,
        &status,
        looks_like_oom(&failure_texts(&run, &recent_errors)),
        &progress_state,
        latest_ready,
    );
    let pods = components
        .iter()
        .filter(|c| c.component == "env-server")
        .count();
    if factory_policies::lifecycle::logs_exportable(&status, started, pods) {
        next_action.push_str(&format!(
            " While its pods exist, export_logs {{\"run_id\": \"{id}\"}} saves every component's logs to files."
        ));
    }
    let latest_step = progress_state.latest_step;
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

/// A log component to read ERROR lines from: which, its name in the answer, its env server.
type LogTarget = (LogComponent, &'static str, Option<String>);

/// The run's components (the primary one, SFT's online-eval pair, then env servers) and the
/// logs to read for errors.
async fn components_of(
    platform: &PlatformClient,
    run: &RlRun,
) -> (Vec<ComponentState>, Vec<LogTarget>) {
    let mut components = Vec::new();
    let mut log_targets: Vec<LogTarget> = Vec::new();
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
    match platform.list_env_servers(&run.id).await {
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
    (components, log_targets)
}

/// "Now": the newest of our clock, the platform's (its last `Date` header) and every timestamp
/// it reported for the run.
fn now_for(
    platform: &PlatformClient,
    run: &RlRun,
    progress: Option<&ProgressResponse>,
    checkpoints: &[Checkpoint],
) -> DateTime<Utc> {
    let mut now = platform
        .server_time()
        .map_or_else(Utc::now, |t| t.max(Utc::now()));
    let last_updated = progress
        .and_then(|p| p.last_updated_at.as_deref())
        .and_then(parse_wire_datetime);
    let started_at = run.started_at.as_deref().and_then(parse_wire_datetime);
    for t in [
        parse_wire_datetime(&run.updated_at),
        last_updated,
        started_at,
    ]
    .into_iter()
    .flatten()
    .chain(
        checkpoints
            .iter()
            .filter_map(|c| parse_wire_datetime(&c.created_at)),
    ) {
        now = now.max(t);
    }
    now
}

/// Progress, and for a RUNNING run the stall judgement (`policies::watchdog::judge_stall`).
fn progress_state(
    run: &RlRun,
    status: &RunStatus,
    progress: Option<&ProgressResponse>,
    now: DateTime<Utc>,
) -> ProgressState {
    let last_updated = progress
        .and_then(|p| p.last_updated_at.as_deref())
        .and_then(parse_wire_datetime);
    let latest_step = progress.and_then(|p| p.latest_step);
    let mut out = ProgressState {
        latest_step,
        max_steps: run.max_steps,
        last_updated_at: progress.and_then(|p| p.last_updated_at.clone()),
        ..ProgressState::default()
    };
    if *status == RunStatus::Running {
        let started_at = run.started_at.as_deref().and_then(parse_wire_datetime);
        let stall = judge_stall(started_at, last_updated, latest_step, now);
        out.seconds_since_progress = stall.since_s.map(|s| s.round());
        out.seconds_per_step = stall.pace_s.map(|p| (p * 10.0).round() / 10.0);
        out.stall_threshold_s = stall.threshold_s;
        out.stalled = stall.stalled;
    }
    out
}

/// Every text that may name the failure: the run's error, its failure analysis, ERROR lines.
fn failure_texts<'a>(run: &'a RlRun, recent_errors: &'a [ComponentErrors]) -> Vec<&'a str> {
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
    texts
}

/// The verdict and the advice for what to do next.
fn verdict(
    run: &RlRun,
    status: &RunStatus,
    out_of_memory: bool,
    progress: &ProgressState,
    latest_ready: Option<i64>,
) -> (&'static str, String) {
    match status {
        RunStatus::Failed if out_of_memory => (
            "failed",
            "The trainer ran out of GPU memory. Give it more memory: more trainer GPUs (deployment.num_train_gpus), a GPU type with more memory (list_gpus), a smaller model, or a smaller batch_size/seq_len; then validate_config and plan_run again (relaunch_after_failure: true).".to_string(),
        ),
        RunStatus::Failed => (
            "failed",
            "Read the root cause and the ERROR lines above, fix the config, validate_config, then plan_run again (relaunch_after_failure: true). get_logs with component and level ERROR shows more.".to_string(),
        ),
        RunStatus::Queued => (
            "queued",
            format!(
                "Waiting for capacity{}{}. Wait with watch_run until_status RUNNING, or stop_run it and plan again with a GPU type that is available now (list_gpus).",
                run.queue_reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default(),
                run.runs_ahead.map(|n| format!(" ({n} run(s) ahead)")).unwrap_or_default()
            ),
        ),
        RunStatus::Pending => (
            "starting",
            "The run is being scheduled. watch_run until_status RUNNING, then follow it with get_logs.".to_string(),
        ),
        RunStatus::Running if progress.stalled => (
            "stalled",
            format!(
                "No step has completed for {} s (the run's pace is {} per step). Read the newest logs (get_logs component trainer and orchestrator); if it stays stuck, stop_run it — a stalled run still bills GPU time{}.",
                progress.seconds_since_progress.unwrap_or_default(),
                progress
                    .seconds_per_step
                    .map(|p| format!("{p} s"))
                    .unwrap_or_else(|| "unknown".into()),
                latest_ready.map(|s| format!("; the checkpoint of step {s} is ready to resume from")).unwrap_or_default()
            ),
        ),
        RunStatus::Running if progress.latest_step.is_none() => (
            "starting",
            "Running, no step completed yet (start-up: images and weights load). watch_run until_step 1.".to_string(),
        ),
        RunStatus::Running => (
            "healthy",
            match (progress.latest_step, run.max_steps, progress.seconds_per_step) {
                (Some(s), Some(m), Some(p)) if m > s => format!(
                    "Progressing at about {p} s per step: step {s} of {m}, about {} s left. watch_run to wait for it.",
                    ((m - s) as f64 * p).round()
                ),
                _ => "Progressing. watch_run to wait for it; get_metrics shows the curve.".to_string(),
            },
        ),
        RunStatus::Completed => (
            "completed",
            "Completed. list_checkpoints (or fetch_checkpoint) for the weights, get_metrics for the curve, fetch_traces for the rollouts.".to_string(),
        ),
        RunStatus::Stopped => (
            "stopped",
            "Stopped. Its checkpoints stay available (list_checkpoints); plan_run again to train more.".to_string(),
        ),
        RunStatus::Paused | RunStatus::Pausing => (
            "paused",
            "Paused. resume_run makes a new run from it (billable: planned and confirmed like a launch).".to_string(),
        ),
        RunStatus::Other(_) => (
            "unknown",
            "The platform reports a status this server does not know: get_run and get_logs show more.".to_string(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(status: &str) -> RlRun {
        serde_json::from_value(serde_json::json!({
            "id": "r1", "name": "n", "userId": "u",
            "status": status, "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:00Z",
            "maxSteps": 100
        }))
        .unwrap()
    }

    #[test]
    fn each_status_gets_its_verdict() {
        let p = ProgressState::default();
        let v = |s: &str, oom: bool, p: &ProgressState| {
            let r = run(s);
            verdict(&r, &r.run_status(), oom, p, None).0
        };
        assert_eq!(v("FAILED", true, &p), "failed");
        assert_eq!(v("QUEUED", false, &p), "queued");
        assert_eq!(v("PENDING", false, &p), "starting");
        assert_eq!(v("RUNNING", false, &p), "starting");
        let stalled = ProgressState {
            latest_step: Some(3),
            stalled: true,
            ..ProgressState::default()
        };
        assert_eq!(v("RUNNING", false, &stalled), "stalled");
        let going = ProgressState {
            latest_step: Some(3),
            seconds_per_step: Some(2.0),
            ..ProgressState::default()
        };
        assert_eq!(v("running", false, &going), "healthy");
        assert_eq!(v("COMPLETED", false, &p), "completed");
        assert_eq!(v("STOPPED", false, &p), "stopped");
        assert_eq!(v("PAUSING", false, &p), "paused");
        assert_eq!(v("REBALANCING", false, &p), "unknown");
        // The advice names the fix for the failure it saw.
        let r = run("FAILED");
        assert!(
            verdict(&r, &r.run_status(), true, &p, None)
                .1
                .contains("out of GPU memory")
        );
        assert!(
            !verdict(&r, &r.run_status(), false, &p, None)
                .1
                .contains("out of GPU memory")
        );
        // A healthy run's advice estimates the time left on its own pace: 97 steps × 2 s.
        let r = run("RUNNING");
        assert!(
            verdict(&r, &r.run_status(), false, &going, None)
                .1
                .contains("about 194 s left")
        );
    }
}
