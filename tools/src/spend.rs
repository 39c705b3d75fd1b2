//! What an owner is spending now: its runs (newest first) and the hourly rate of each active
//! one — journalled for runs this server launched, estimated for the others. Used by plans,
//! the launch re-check, `whoami`'s spend line and the watchdog.

use factory_platform::{PlatformClient, wire::account::AvailableModels, wire::runs::RlRun};
use factory_policies::{
    launch::{self, ActiveRun},
    store::DispatchState,
};
use serde_json::Value;

use crate::{
    error::ToolError,
    owner::scope_of,
    state::{AppState, platform_error},
};

/// The owner's runs, newest first, up to `pages` pages of 100.
pub(crate) async fn owner_runs(
    platform: &PlatformClient,
    team: &Option<String>,
    pages: u32,
) -> Result<Vec<RlRun>, ToolError> {
    platform
        .scan_runs(&scope_of(team), false, pages, |_| false)
        .await
        .map(|scan| scan.runs)
        .map_err(|e| platform_error("list the owner's runs", &e))
}

/// Active runs with their rates: journalled for runs we launched, estimated for the others.
pub(crate) async fn active_spend(
    state: &AppState,
    runs: &[RlRun],
    models: &AvailableModels,
) -> Vec<ActiveRun> {
    let dispatched = match state.store() {
        Ok(s) => s.dispatched_runs().await.unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let journalled: Vec<(String, Option<f64>)> = dispatched
        .into_iter()
        .filter_map(|d| match d.state {
            DispatchState::Dispatched { run_id, details } => Some((
                run_id,
                details.get("rate_per_hour_usd").and_then(Value::as_f64),
            )),
            _ => None,
        })
        .collect();
    runs.iter()
        .filter(|r| r.is_active())
        .map(|r| {
            let ours = journalled.iter().find(|(id, _)| id == &r.id);
            let (rate, estimated) = match ours {
                Some((_, Some(rate))) => (Some(*rate), false),
                _ => (
                    launch::estimate_rate(r, models, state.policy.reserved_price_per_gpu_hour_usd),
                    true,
                ),
            };
            ActiveRun {
                id: r.id.clone(),
                name: r.name.clone(),
                status: r.status.clone(),
                created_at: r.created_at.clone(),
                rate_per_hour_usd: rate,
                estimated,
            }
        })
        .collect()
}
