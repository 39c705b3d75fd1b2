//! `get_metrics` and `get_progress`.
use std::sync::Arc;

use factory_platform::MetricsQuery;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    error::ToolError,
    reply::{Outcome, ToolResult},
    server::Call,
    state::{AppState, check_id},
};

use super::*;

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

pub(super) async fn get_metrics(
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

pub(super) async fn get_progress(
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
