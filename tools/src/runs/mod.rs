//! The runs toolset, one module per concern: listing runs (`list`), reading one and its
//! components (here), logs and their follow cursor (`logs`), metrics and progress (`metrics`),
//! checkpoints and their paging (`checkpoints`), the RL signals (`rollouts`), waiting (`watch`), diagnosis (`diagnose`) and
//! the end-of-run report (`report`). Bounded, paginated, redacted on the way out.

mod checkpoints;
mod diagnose;
mod export;
mod list;
mod log_record;
mod log_tail;
mod logs;
mod metrics;
pub(crate) mod report;
mod rollouts;
mod watch;

use std::sync::Arc;

use factory_platform::{PlatformError, wire::runs::RunStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{catalogue, server::ServerTool};
use crate::{
    error::ToolError,
    reply::{Outcome, ToolResult},
    run_view::{RunDetail, fetch_run, run_detail},
    server::Call,
    state::{AppState, platform_error},
};

pub(crate) fn tools() -> Vec<ServerTool<AppState>> {
    vec![
        ServerTool::new(&catalogue::LIST_RUNS, list::list_runs),
        ServerTool::new(&catalogue::GET_RUN, get_run),
        ServerTool::new(&catalogue::GET_COMPONENTS, get_components),
        ServerTool::new(&catalogue::GET_LOGS, logs::get_logs),
        ServerTool::new(&catalogue::EXPORT_LOGS, export::export_logs),
        ServerTool::new(&catalogue::GET_METRICS, metrics::get_metrics),
        ServerTool::new(&catalogue::GET_PROGRESS, metrics::get_progress),
        ServerTool::new(&catalogue::LIST_CHECKPOINTS, checkpoints::list_checkpoints),
        ServerTool::new(&catalogue::GET_ROLLOUTS, rollouts::get_rollouts),
        ServerTool::new(&catalogue::GET_DISTRIBUTIONS, rollouts::get_distributions),
        ServerTool::new(&catalogue::WATCH_RUN, watch::watch_run),
        ServerTool::new(&catalogue::DIAGNOSE_RUN, diagnose::diagnose_run),
        ServerTool::new(&catalogue::RUN_REPORT, report::run_report),
    ]
}

/// Run statuses the platform reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub(crate) enum StatusArg {
    Queued,
    Pending,
    Running,
    Completed,
    Failed,
    Stopped,
    Pausing,
    Paused,
}

impl StatusArg {
    /// The status this argument names (its wire spelling is the platform's).
    pub(crate) fn status(self) -> RunStatus {
        match self {
            StatusArg::Queued => RunStatus::Queued,
            StatusArg::Pending => RunStatus::Pending,
            StatusArg::Running => RunStatus::Running,
            StatusArg::Completed => RunStatus::Completed,
            StatusArg::Failed => RunStatus::Failed,
            StatusArg::Stopped => RunStatus::Stopped,
            StatusArg::Pausing => RunStatus::Pausing,
            StatusArg::Paused => RunStatus::Paused,
        }
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunIdArgs {
    pub run_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GetRunOut {
    pub run: RunDetail,
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
    /// The rows `prime train components` shows.
    pub components: Vec<ComponentItem>,
    /// The log components get_logs accepts for this run (its `component`, and `env` for an
    /// env server): where to look for each part's output.
    pub log_components: Vec<LogComponentItem>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LogComponentItem {
    /// get_logs' `component`: orchestrator, trainer, inference or env-server.
    pub component: String,
    /// get_logs' `env`, for an env server.
    pub env: Option<String>,
    /// What these logs hold.
    pub holds: String,
}

/// The log components of a run, for get_logs: an RL run has an orchestrator (the default), a
/// trainer, inference servers and its env servers; an SFT run has a trainer, and with online
/// eval also an orchestrator and inference.
fn log_components(sft: bool, online_eval: bool, envs: &[String]) -> Vec<LogComponentItem> {
    let item = |c: &str, holds: &str| LogComponentItem {
        component: c.into(),
        env: None,
        holds: holds.into(),
    };
    let mut out = Vec::new();
    if sft {
        out.push(item(
            "trainer",
            "the SFT trainer: losses, steps, checkpoints, errors",
        ));
    }
    if !sft || online_eval {
        out.push(item(
            "orchestrator",
            "rollouts, rewards, step pacing (get_logs' default)",
        ));
    }
    if !sft {
        out.push(item(
            "trainer",
            "the RL trainer: losses, weight updates, checkpoints",
        ));
    }
    if !sft || online_eval {
        out.push(item(
            "inference",
            "the vLLM inference servers: model loading, generation errors",
        ));
    }
    let mut seen: Vec<&String> = Vec::new();
    for env in envs {
        if seen.contains(&env) {
            continue;
        }
        seen.push(env);
        out.push(LogComponentItem {
            component: "env-server".into(),
            env: Some(env.clone()),
            holds: "the environment server: dataset loading, verifier and reward errors".into(),
        });
    }
    out
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
    let online_eval = run
        .run_config
        .as_ref()
        .and_then(|c| c.get("eval"))
        .is_some_and(Value::is_object);
    let row = |name: &str| ComponentItem {
        component: name.into(),
        env_name: None,
        env_index: None,
        pod_name: None,
        status: run.status.clone(),
    };
    if run.is_sft() {
        components.push(row("trainer"));
        if online_eval {
            components.push(row("orchestrator"));
            components.push(row("inference"));
        }
    } else {
        components.push(row("orchestrator"));
    }
    let envs: Vec<String> = servers
        .env_servers
        .iter()
        .filter_map(|s| s.env_name.clone())
        .collect();
    let log_components = log_components(run.is_sft(), online_eval, &envs);
    for s in servers.env_servers {
        components.push(ComponentItem {
            component: "env-server".into(),
            env_name: s.env_name,
            env_index: s.env_index,
            pod_name: Some(s.pod_name),
            status: s.status,
        });
    }
    let logs: Vec<String> = log_components
        .iter()
        .map(|l| match &l.env {
            Some(e) => format!(
                "env-server (env {})",
                factory_policies::untrusted::one_line(e, 60)
            ),
            None => l.component.clone(),
        })
        .collect();
    Ok(Outcome::done(
        format!(
            "{} component(s) of run {} ({}); get_logs components: {}",
            components.len(),
            run.id,
            run.status,
            logs.join(", ")
        ),
        ComponentsOut {
            run_id: run.id.clone(),
            run_status: run.status.clone(),
            components,
            log_components,
        },
    ))
}

/// What to do after a launch, for its success message.
pub(crate) fn after_launch(run_id: &str) -> String {
    format!(
        "Next: watch_run {{\"run_id\": \"{run_id}\"}} follows it to its first steps (diagnose_run if it does not start); stop_run ends it early; run_report sums it up when it is done."
    )
}

pub(super) fn not_found_or(run_id: &str, what: &str, e: PlatformError) -> ToolError {
    match e {
        PlatformError::NotFound { .. } => ToolError::new(format!(
            "Run {run_id} was not found, or is not visible to this key and owner. list_runs shows the runs you can see."
        )),
        e => platform_error(&format!("{what} {run_id}"), &e),
    }
}

/// The client cancelled the request.
#[derive(Debug)]
pub(super) struct Cancelled;

#[cfg(test)]
mod tests {
    use super::*;

    fn names(items: &[LogComponentItem]) -> Vec<String> {
        items
            .iter()
            .map(|l| match &l.env {
                Some(e) => format!("{}:{e}", l.component),
                None => l.component.clone(),
            })
            .collect()
    }

    #[test]
    fn an_rl_run_names_trainer_and_inference_logs() {
        let envs = vec!["reverse-text".to_string(), "reverse-text".to_string()];
        assert_eq!(
            names(&log_components(false, false, &envs)),
            [
                "orchestrator",
                "trainer",
                "inference",
                "env-server:reverse-text"
            ]
        );
    }

    #[test]
    fn an_sft_run_has_trainer_logs_and_inference_only_with_online_eval() {
        assert_eq!(names(&log_components(true, false, &[])), ["trainer"]);
        assert_eq!(
            names(&log_components(true, true, &[])),
            ["trainer", "orchestrator", "inference"]
        );
    }
}
