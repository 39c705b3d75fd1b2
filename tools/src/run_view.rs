//! How a run is read and shown, shared by the run tools, the lifecycle tools, the launch
//! pipeline and the `factory://runs/…` resources: reading one run by a user-supplied id, the
//! full view of a run, and the bounding of log text.

use factory_platform::{PlatformError, wire::runs::RlRun};
use schemars::JsonSchema;
use serde::Serialize;

use crate::{
    error::ToolError,
    ids::RunId,
    state::{AppState, platform_error},
};

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

/// Read a run, mapping "not found" to a message that names the id.
pub(crate) async fn fetch_run(state: &AppState, run_id: &str) -> Result<RlRun, ToolError> {
    let id = RunId::parse(run_id)?;
    state
        .platform()?
        .get_run(id.as_str())
        .await
        .map_err(|e| match e {
            PlatformError::NotFound { .. } => ToolError::not_found(format!(
                "Run {run_id} was not found, or is not visible to this key and owner. list_runs shows the runs you can see (pass team_id for a team's runs)."
            )),
            e => platform_error(&format!("get run {run_id}"), &e),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

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
