//! Sending a plan once: create its volume if needed, claim the dispatch in the journal (a
//! lease), POST, journal the answer. An ambiguous answer is recorded as `unknown` and
//! reconciled at once. Runs in its own task so a client that goes away mid-call cannot leave
//! the journal half-written.

use std::{sync::Arc, time::Duration};

use factory_platform::{PlatformClient, PlatformError, wire::runs::CreateRunResponse};
use factory_policies::{
    dispatch::{self, ClaimConflict},
    store::{Claim, PlanRecord, StateStore},
};
use serde_json::json;

use super::{
    PlanBody,
    reconcile::{create_timeout, dedup_out, reconcile, record_reconciled, settle_doubt},
    request::{WireRequest, wire_request},
    run::LaunchOut,
    volumes::ensure_volume,
};
use crate::{
    audit::audit,
    error::ToolError,
    owner::scope_of,
    reply::{Outcome, ToolResult},
    state::{AppState, platform_error},
};

fn refuse(msg: impl Into<String>) -> ToolError {
    ToolError::new(msg)
}

/// Journal, create the volume if needed, POST once, journal the result.
pub(super) async fn dispatch(
    state: Arc<AppState>,
    plan: PlanRecord,
    body: PlanBody,
) -> ToolResult<LaunchOut> {
    let subject = crate::audit::current_subject();
    let task = tokio::spawn(crate::audit::with_subject(subject, async move {
        dispatch_inner(&state, &plan, &body).await
    }));
    task.await.map_err(|e| {
        refuse(format!(
            "the dispatch task failed: {e}; call launch_run again (it reconciles first)"
        ))
    })?
}

async fn dispatch_inner(
    state: &AppState,
    plan: &PlanRecord,
    body: &PlanBody,
) -> ToolResult<LaunchOut> {
    let store = state.store()?;
    let platform = state.platform()?;
    let scope = scope_of(&body.team_id);
    let mut volume_created = false;
    if let Some(v) = body.volume.as_ref().filter(|v| v.create) {
        volume_created = ensure_volume(state, store, platform, &scope, body, v).await?;
    }
    if let Some(done) = claim(state, store, platform, plan, body).await? {
        return Ok(done);
    }
    let claimed = std::time::Instant::now();
    audit(
        state,
        "launch_run",
        "dispatching",
        Some(&plan.id),
        None,
        json!({"run_name": body.run_name, "kind": body.kind}),
    )
    .await;
    let request = wire_request(state, body)?;
    // The settle window that lets another session retry this attempt counts from the claim:
    // a create held up past the margin is not sent at all.
    if !dispatch::may_still_send(claimed.elapsed()) {
        let why = format!(
            "not sent: held up {} s between the claim and the request",
            claimed.elapsed().as_secs()
        );
        failed(state, store, plan, &why).await;
        return Err(ToolError::unavailable(format!(
            "The launch of plan {} was held up between its journal claim and its request (a slow state store or a suspended process), so nothing was sent; call launch_run again. Nothing was dispatched.",
            plan.id
        )));
    }
    let answer = match request {
        WireRequest::Resume(from, request) => platform.resume_run(&from, &request).await,
        WireRequest::Create(request) => platform.create_run(&request).await,
    };
    match answer {
        Ok(resp) => dispatched(state, store, platform, plan, body, resp, volume_created).await,
        Err(e) if e.is_ambiguous() => lost_answer(state, store, platform, plan, body, e).await,
        Err(e) => {
            failed(state, store, plan, &e.to_string()).await;
            Err(platform_error(
                &format!("launch plan {} (nothing was created)", plan.id),
                &e,
            ))
        }
    }
}

/// Claim the plan's dispatch. `Ok(Some(..))`: the plan was dispatched meanwhile (its run).
async fn claim(
    state: &AppState,
    store: &dyn StateStore,
    platform: &PlatformClient,
    plan: &PlanRecord,
    body: &PlanBody,
) -> Result<Option<Outcome<LaunchOut>>, ToolError> {
    // The lease: as the settings say (`[state] dispatch_lease_seconds`), else long enough for
    // the create call to time out with room to journal its answer.
    let lease = store
        .dispatch_lease()
        .unwrap_or(platform.settings().timeouts.create + Duration::from_secs(30));
    let busy = || {
        refuse(format!(
            "Another session is launching plan {} right now; call launch_run again shortly — it returns that run.",
            plan.id
        ))
    };
    let rec =
        match store.claim_dispatch(&plan.id, lease).await.map_err(|e| {
            ToolError::unavailable(format!("cannot write the dispatch journal: {e}"))
        })? {
            Claim::Claimed(_) => return Ok(None),
            Claim::Existing(rec) => rec,
        };
    match dispatch::on_claim_conflict(&rec.state) {
        ClaimConflict::ReturnRun { run_id, details } => {
            Ok(Some(already(state, platform, plan, run_id, details).await))
        }
        // The settling before this claim saw no record, or another attempt (replicas and
        // sessions race between the two): settle the attempt found now — its run, its settle
        // window — then retry that very attempt, atomically.
        ClaimConflict::InDoubt => {
            if let Some(done) =
                settle_doubt(state, store, platform, plan, body, &rec, false).await?
            {
                return Ok(Some(done));
            }
            let settle = dispatch::settle_window(create_timeout(state));
            match store
                .retry_dispatch(&plan.id, rec.attempts, settle, lease)
                .await
                .map_err(|e| {
                    ToolError::unavailable(format!("cannot write the dispatch journal: {e}"))
                })? {
                Claim::Claimed(_) => Ok(None),
                // Another session settled or retried it meanwhile.
                Claim::Existing(now) => match dispatch::on_claim_conflict(&now.state) {
                    ClaimConflict::ReturnRun { run_id, details } => {
                        Ok(Some(already(state, platform, plan, run_id, details).await))
                    }
                    // The same attempt, still in doubt: the store's clock says its window is
                    // not over yet.
                    ClaimConflict::InDoubt if now.attempts == rec.attempts => Err(refuse(format!(
                        "The last dispatch of plan {} has an unknown outcome and its settle window is not over yet on the state store's clock; call launch_run again in a few seconds. Nothing new was dispatched.",
                        plan.id
                    ))),
                    _ => Err(busy()),
                },
            }
        }
        ClaimConflict::Busy => Err(busy()),
    }
}

/// Journal, count and audit a dispatch that definitely created nothing.
async fn failed(state: &AppState, store: &dyn StateStore, plan: &PlanRecord, why: &str) {
    let _ = store.mark_failed(&plan.id, why).await;
    crate::meter::launch(crate::meter::Launch::Failed);
    audit(
        state,
        "launch_run",
        "failed",
        Some(&plan.id),
        None,
        json!({"error": why}),
    )
    .await;
}

/// The answer for a plan another session launched meanwhile.
async fn already(
    state: &AppState,
    platform: &PlatformClient,
    plan: &PlanRecord,
    run_id: &str,
    details: &serde_json::Value,
) -> Outcome<LaunchOut> {
    let run = platform.get_run(run_id).await.ok();
    Outcome::done(
        format!("Plan {} was already launched as run {run_id}", plan.id),
        dedup_out(state, &plan.id, run_id, run.as_ref(), details),
    )
}

/// The platform created the run: journal it (with the figures budgets need later) and answer.
async fn dispatched(
    state: &AppState,
    store: &dyn StateStore,
    platform: &PlatformClient,
    plan: &PlanRecord,
    body: &PlanBody,
    resp: CreateRunResponse,
    volume_created: bool,
) -> ToolResult<LaunchOut> {
    let details = json!({
        "request_digest": plan.request_digest,
        "content_digest": plan.content_digest,
        "team_id": body.team_id,
        "volume": body.volume.as_ref().map(|v| &v.name),
        "image_tag": body.request.image_tag(),
        "source_ref": body.request.source_ref(),
        "on_demand": resp.on_demand,
        "gpu_type": resp.gpu_type.clone().or(body.gpu_type.clone()),
        "price_per_gpu_hour_usd": resp.price_per_gpu_hour,
        "rate_per_hour_usd": resp.estimated_cost_per_hour.or(body.price.per_hour_usd),
        "max_steps": body.max_steps,
        "dashboard_url": platform.settings().run_dashboard_url(&resp.run_id),
    });
    store
        .mark_dispatched(&plan.id, &resp.run_id, &details).await
        .map_err(|e| refuse(format!("run {} was created but the journal could not record it ({e}); do not re-launch: get_run shows it", resp.run_id)))?;
    crate::meter::launch(crate::meter::Launch::Dispatched);
    audit(
        state,
        "launch_run",
        "dispatched",
        Some(&plan.id),
        Some(&resp.run_id),
        details.clone(),
    )
    .await;
    let run = platform.get_run(&resp.run_id).await.ok();
    Ok(Outcome::done(
        format!(
            "Launched run {} for plan {}. {}",
            resp.run_id,
            plan.id,
            crate::runs::after_launch(&resp.run_id)
        ),
        LaunchOut {
            plan_id: plan.id.clone(),
            run_id: resp.run_id.clone(),
            status: run.map(|r| r.status),
            dashboard_url: platform.settings().run_dashboard_url(&resp.run_id),
            deduplicated: false,
            on_demand: resp.on_demand,
            gpu_type: resp.gpu_type,
            price_per_gpu_hour_usd: resp.price_per_gpu_hour,
            estimated_cost_per_hour_usd: resp.estimated_cost_per_hour,
            volume_created,
        },
    ))
}

/// The answer was lost (timeout, 5xx, reset): journal `unknown`, then reconcile at once — the
/// run may exist although the answer never arrived.
async fn lost_answer(
    state: &AppState,
    store: &dyn StateStore,
    platform: &PlatformClient,
    plan: &PlanRecord,
    body: &PlanBody,
    e: PlatformError,
) -> ToolResult<LaunchOut> {
    let _ = store.mark_unknown(&plan.id, &e.to_string()).await;
    crate::meter::launch(crate::meter::Launch::Unknown);
    audit(
        state,
        "launch_run",
        "unknown",
        Some(&plan.id),
        None,
        json!({"error": e.to_string()}),
    )
    .await;
    if let Ok(Some(run)) = reconcile(state, platform, &plan.id, body).await {
        // The same journal details as a direct dispatch: a run whose answer was lost keeps its
        // step budget for the watchdog.
        let details = record_reconciled(state, store, &plan.id, &run.id, body).await;
        let mut out = dedup_out(state, &plan.id, &run.id, Some(&run), &details);
        out.deduplicated = false;
        return Ok(Outcome::done(
            format!(
                "Launched run {} for plan {} (the platform's answer was lost; found by reconciliation). {}",
                run.id,
                plan.id,
                crate::runs::after_launch(&run.id)
            ),
            out,
        ));
    }
    Err(ToolError::platform(format!(
        "The platform's answer to the launch of plan {} was lost ({e}); the run may or may not exist. Call launch_run again: it checks for the run before dispatching anything.",
        plan.id
    )))
}
