//! Settling a dispatch in doubt. Before anything else a plan's journal record is read: a
//! dispatched plan returns its run; a dispatch in flight or with a lost answer is reconciled
//! by listing the owner's runs; a miss waits out the settle window (the policy's rule) before
//! the plan may be dispatched again.

use std::time::Duration;

use chrono::Utc;
use factory_platform::{PlatformClient, wire::runs::RlRun};
use factory_policies::{
    dispatch::{self, Existing},
    store::{Claim, DispatchRecord, DispatchState, PlanRecord, StateStore},
};
use serde_json::{Value, json};

use super::{PlanBody, run::LaunchOut};
use crate::{audit::audit, error::ToolError, reply::Outcome, spend::owner_runs, state::AppState};

/// The answer for a plan whose run already exists.
pub(super) fn dedup_out(
    state: &AppState,
    plan_id: &str,
    run_id: &str,
    run: Option<&RlRun>,
    details: &Value,
) -> LaunchOut {
    let url = state
        .platform()
        .map(|p| p.settings().run_dashboard_url(run_id))
        .unwrap_or_default();
    LaunchOut {
        plan_id: plan_id.into(),
        run_id: run_id.into(),
        status: run.map(|r| r.status.clone()),
        dashboard_url: url,
        deduplicated: true,
        on_demand: details.get("on_demand").and_then(Value::as_bool),
        gpu_type: details
            .get("gpu_type")
            .and_then(Value::as_str)
            .map(str::to_owned),
        price_per_gpu_hour_usd: details
            .get("price_per_gpu_hour_usd")
            .and_then(Value::as_f64),
        estimated_cost_per_hour_usd: details.get("rate_per_hour_usd").and_then(Value::as_f64),
        volume_created: false,
    }
}

/// Find the run a dispatch created: same name and owner, not a run that carried the name
/// before the plan was made, and not a run journalled to another plan. (Matching by name, not
/// by time, keeps this right whatever the skew between our clock and the platform's.)
pub(super) async fn reconcile(
    state: &AppState,
    platform: &PlatformClient,
    plan_id: &str,
    body: &PlanBody,
) -> Result<Option<RlRun>, ToolError> {
    let dispatched = match state.store() {
        Ok(s) => s.dispatched_runs().await.unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    let others: Vec<String> = dispatched
        .into_iter()
        .filter(|d| d.plan_id != plan_id)
        .filter_map(|d| match d.state {
            DispatchState::Dispatched { run_id, .. } => Some(run_id),
            _ => None,
        })
        .collect();
    let runs = owner_runs(state, platform, &body.team_id)
        .await?
        .with(std::slice::from_ref(&body.run_name), &[], &[])
        .await?;
    Ok(runs.into_iter().find(|r| {
        r.name.as_deref() == Some(body.run_name.as_str())
            && r.team_id == body.team_id
            && !body.preexisting_same_name.contains(&r.id)
            && !others.contains(&r.id)
    }))
}

/// The plan was already dispatched, or its dispatch is in doubt: settle that first.
/// `Ok(None)`: nothing to settle, go on.
pub(super) async fn settle_existing(
    state: &AppState,
    store: &dyn StateStore,
    platform: &PlatformClient,
    plan: &PlanRecord,
    body: &PlanBody,
) -> Result<Option<Outcome<LaunchOut>>, ToolError> {
    let Some(rec) = store
        .dispatch(&plan.id)
        .await
        .map_err(|e| ToolError::unavailable(format!("cannot read the dispatch journal: {e}")))?
    else {
        return Ok(None);
    };
    let in_flight = match dispatch::on_existing(&rec.state) {
        Existing::ReturnRun { run_id, details } => {
            let run = platform.get_run(run_id).await.ok();
            crate::meter::launch(crate::meter::Launch::Deduplicated);
            audit(
                state,
                "launch_run",
                "deduplicated",
                Some(&plan.id),
                Some(run_id),
                json!({}),
            )
            .await;
            return Ok(Some(Outcome::done(
                format!(
                    "Plan {} was already launched as run {run_id}: nothing new was dispatched",
                    plan.id
                ),
                dedup_out(state, &plan.id, run_id, run.as_ref(), details),
            )));
        }
        Existing::Proceed => return Ok(None),
        Existing::Reconcile { in_flight } => in_flight,
    };
    settle_doubt(state, store, platform, plan, body, &rec, in_flight).await
}

/// Settle the attempt `rec`, whose outcome is in doubt: return its run when the platform has
/// it; else refuse while a live holder may still create it (`in_flight`) or while a create sent
/// at its start could still appear (the settle window). `Ok(None)`: that attempt created
/// nothing, and the plan may be dispatched again — by a retry of that very attempt
/// (`StateStore::retry_dispatch`), never by a claim that ignores which attempt was judged.
pub(super) async fn settle_doubt(
    state: &AppState,
    store: &dyn StateStore,
    platform: &PlatformClient,
    plan: &PlanRecord,
    body: &PlanBody,
    rec: &DispatchRecord,
    in_flight: bool,
) -> Result<Option<Outcome<LaunchOut>>, ToolError> {
    // The window is judged at the listing's start: a create committed while it ran may be
    // missing from it.
    let listed_at = Utc::now();
    if let Some(run) = reconcile(state, platform, &plan.id, body).await? {
        let details = record_reconciled(state, store, &plan.id, &run.id, body).await;
        return Ok(Some(Outcome::done(
            format!(
                "Plan {} had already created run {} (found by reconciliation): nothing new was dispatched",
                plan.id, run.id
            ),
            dedup_out(state, &plan.id, &run.id, Some(&run), &details),
        )));
    }
    if in_flight {
        return Err(ToolError::new(format!(
            "A launch of plan {} is in progress in this or another session; call launch_run again in a few seconds. Nothing new was dispatched.",
            plan.id
        )));
    }
    // No run under the plan's name: safe to dispatch again only once the platform has had
    // time to commit a create that was in flight.
    if let Some(wait) = dispatch::settle_wait(rec.started_at, listed_at, create_timeout(state)) {
        return Err(ToolError::new(format!(
            "The last dispatch of plan {} has an unknown outcome and no run has appeared yet; call launch_run again in {wait} s, when a late create would be visible. Nothing new was dispatched.",
            plan.id,
        )));
    }
    Ok(None)
}

/// The timeout of a create request: within it the platform commits a create or it never will.
pub(super) fn create_timeout(state: &AppState) -> Duration {
    state
        .platform()
        .map(|p| p.settings().timeouts.create)
        .unwrap_or(Duration::from_secs(120))
}

/// Journal and audit a run found by reconciliation, with the same details a direct dispatch
/// records (the rate for spend, `max_steps` for the watchdog's step budget); returns them.
pub(super) async fn record_reconciled(
    state: &AppState,
    store: &dyn StateStore,
    plan_id: &str,
    run_id: &str,
    body: &PlanBody,
) -> Value {
    let details = json!({"reconciled": true, "rate_per_hour_usd": body.price.per_hour_usd, "max_steps": body.max_steps});
    settle_found(store, plan_id, run_id, &details).await;
    crate::meter::launch(crate::meter::Launch::Reconciled);
    audit(
        state,
        "launch_run",
        "reconciled",
        Some(plan_id),
        Some(run_id),
        json!({}),
    )
    .await;
    details
}

/// Record a run that reconciliation found. Only the lease holder may settle a `dispatching`
/// record: when its holder died (the lease expired) this process takes the lease over first;
/// when the holder is alive it records the run itself. Either way the run exists, so a journal
/// refusal is logged, never turned into an error that would hide it.
pub(super) async fn settle_found(
    store: &dyn StateStore,
    plan_id: &str,
    run_id: &str,
    details: &Value,
) {
    if store
        .mark_dispatched(plan_id, run_id, details)
        .await
        .is_ok()
    {
        return;
    }
    let taken = matches!(
        store.take_over(plan_id, Duration::from_secs(60)).await,
        Ok(Claim::Claimed(_))
    );
    if !(taken
        && store
            .mark_dispatched(plan_id, run_id, details)
            .await
            .is_ok())
    {
        tracing::info!(
            plan_id,
            run_id,
            "reconciled run left for the live dispatch holder to record"
        );
    }
}
