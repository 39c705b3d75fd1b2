//! What an owner is spending now: its runs (through the run-list cache, `known_runs`) and the
//! hourly rate of each active one — journalled for runs this server launched, estimated for the
//! others. Used by plans, the launch re-check, `whoami`'s spend line and the watchdog.

pub(crate) mod known_runs;

pub(crate) use known_runs::owner_runs;

use factory_platform::{wire::account::AvailableModels, wire::runs::RlRun};
use factory_policies::{
    launch::{self, ActiveRun},
    store::DispatchState,
};
use serde_json::Value;

use crate::state::AppState;

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
