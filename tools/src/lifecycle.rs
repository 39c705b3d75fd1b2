//! Lifecycle tools: `pause_run`, `restart_run` and `delete_run`. A delete is always confirmed by
//! a person (the client's dialog, or an intent approved with `factory-mcp approve`), whatever
//! the policy's `confirm` mode, and the run's identity is re-checked after the yes.

use std::{sync::Arc, time::Duration};

use chrono::Utc;
use factory_policies::{
    launch,
    store::{Claim, Decision, DispatchState, PlanRecord},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{
    launch::{audit, confirm, new_plan_id},
    reply::{Outcome, ToolError, ToolResult},
    runs::{RunIdArgs, fetch_run},
    server::{Call, ToolDef, tool},
    state::{AppState, check_id, platform_error},
};

pub fn tools() -> Vec<ToolDef<AppState>> {
    vec![
        tool("pause_run", pause_run),
        tool("restart_run", restart_run),
        tool("delete_run", delete_run),
    ]
}

/// How long a delete intent waits for its approval.
const INTENT_TTL: chrono::Duration = chrono::Duration::minutes(30);

#[derive(Debug, Serialize, JsonSchema)]
pub struct LifecycleOut {
    pub run_id: String,
    pub status: String,
    pub note: Option<String>,
}

async fn pause_run(state: Arc<AppState>, args: RunIdArgs, _call: Call) -> ToolResult<LifecycleOut> {
    let run = fetch_run(&state, &args.run_id).await?;
    if run.status.eq_ignore_ascii_case("PAUSED") || run.status.eq_ignore_ascii_case("PAUSING") {
        return Ok(Outcome::done(
            format!("Run {} is already {}", run.id, run.status),
            LifecycleOut {
                run_id: run.id,
                status: run.status,
                note: Some("No pause was sent.".into()),
            },
        ));
    }
    if !run.status.eq_ignore_ascii_case("RUNNING") {
        return Err(ToolError::new(format!(
            "Run {} is {}: only a RUNNING run can be paused.",
            run.id, run.status
        )));
    }
    let platform = state.platform()?;
    let answer = platform.pause_run(&run.id).await.map_err(|e| {
        platform_error(
            &format!(
                "pause run {} (get_run shows its state before any retry)",
                run.id
            ),
            &e,
        )
    })?;
    audit(
        &state,
        "pause_run",
        "paused",
        None,
        Some(&run.id),
        json!({"status": answer.status}),
    );
    // Pausing settles on PAUSED; wait (bounded) like the CLI's stop does.
    let settled = if answer.status.eq_ignore_ascii_case("PAUSED") {
        answer.status.clone()
    } else {
        let now = platform
            .get_run(&run.id)
            .await
            .map_err(|e| platform_error("read the run", &e))?;
        platform
            .wait_until_terminal(now, state.limits.stop_poll, Duration::from_secs(60))
            .await
            .status
    };
    Ok(Outcome::done(
        format!("Run {} is {settled}; resume it with plan_run {{resume_from}} then resume_run (a new billable run)", run.id),
        LifecycleOut {
            run_id: run.id,
            status: settled,
            note: Some("A paused run holds no GPUs. Resuming creates a NEW run (billable) through plan_run with resume_from.".into()),
        },
    ))
}

async fn restart_run(
    state: Arc<AppState>,
    args: RunIdArgs,
    _call: Call,
) -> ToolResult<LifecycleOut> {
    let run = fetch_run(&state, &args.run_id).await?;
    if !run.status.eq_ignore_ascii_case("RUNNING") {
        return Err(ToolError::new(format!(
            "Run {} is {}: only a RUNNING run can be restarted from its last checkpoint.",
            run.id, run.status
        )));
    }
    let restarted = state.platform()?.restart_run(&run.id).await.map_err(|e| {
        platform_error(
            &format!(
                "restart run {} (do not retry blindly: get_run shows whether it restarted)",
                run.id
            ),
            &e,
        )
    })?;
    audit(
        &state,
        "restart_run",
        "restarted",
        None,
        Some(&run.id),
        json!({"status": restarted.status}),
    );
    Ok(Outcome::done(
        format!(
            "Run {} is restarting from its last checkpoint ({})",
            run.id, restarted.status
        ),
        LifecycleOut {
            run_id: run.id,
            status: restarted.status,
            note: None,
        },
    ))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteArgs {
    pub run_id: String,
    /// The intent id a person approved with `factory-mcp approve` (when the client cannot ask).
    pub intent_id: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DeleteOut {
    pub run_id: String,
    pub deleted: bool,
    pub intent_id: String,
}

async fn delete_run(state: Arc<AppState>, args: DeleteArgs, call: Call) -> ToolResult<DeleteOut> {
    check_id("run", &args.run_id)?;
    let run = fetch_run(&state, &args.run_id).await?;
    if launch::is_active_status(&run.status) {
        return Err(ToolError::new(format!(
            "Run {} is {}: a run that holds GPUs is not deleted. Stop it first (stop_run), then delete it.",
            run.id, run.status
        )));
    }
    let store = state.store()?;
    let digest = launch::digest(&json!({"delete": run.id}));
    // One intent per run: the confirmation round trip and `approve` both refer to it.
    let now = Utc::now();
    let existing = match &args.intent_id {
        Some(id) => {
            let plan = store
                .get_plan(id)
                .map_err(|e| ToolError::new(format!("cannot read intents: {e}")))?
                .ok_or_else(|| {
                    ToolError::new(format!(
                        "Unknown intent {id}: call delete_run without intent_id to make one."
                    ))
                })?;
            if plan.content_digest != digest {
                return Err(ToolError::new(format!(
                    "Intent {id} is not for run {}.",
                    run.id
                )));
            }
            Some(plan)
        }
        None => store
            .plans_by_content_digest(&digest)
            .map_err(|e| ToolError::new(format!("cannot read intents: {e}")))?
            .into_iter()
            .filter(|p| !p.is_expired(now))
            .filter(|p| !matches!(store.dispatch(&p.id), Ok(Some(_))))
            .max_by_key(|p| p.created_at),
    };
    let intent = match existing {
        Some(p) if p.is_expired(now) => {
            return Err(ToolError::new(format!(
                "Intent {} expired: call delete_run without intent_id for a new one.",
                p.id
            )));
        }
        Some(p) => p,
        None => {
            let id = new_plan_id();
            let summary = format!(
                "PERMANENTLY DELETE run {} ({}, {}, model {}, created {}). Its record, logs and metrics go; this cannot be undone.",
                run.id,
                run.name.as_deref().unwrap_or("unnamed"),
                run.status,
                run.base_model.as_deref().unwrap_or("?"),
                run.created_at
            );
            let plan = PlanRecord {
                id: id.clone(),
                created_at: now,
                expires_at: now + INTENT_TTL,
                request_digest: digest.clone(),
                content_digest: digest.clone(),
                owner: run.team_id.clone(),
                summary_text: summary,
                body: json!({"kind": "delete", "run_id": run.id, "name": run.name}),
            };
            store
                .put_plan(&plan)
                .map_err(|e| ToolError::new(format!("cannot record the delete intent: {e}")))?;
            plan
        }
    };
    // Always a person, whatever `confirm` says.
    if let Some(resp) = confirm(&state, store, &intent, "delete_run", &call).await? {
        return Ok(Outcome::Response(Box::new(resp)));
    }
    // After the yes: the run is still the one shown, and still not active.
    let again = fetch_run(&state, &run.id).await?;
    if again.name != run.name || launch::is_active_status(&again.status) {
        return Err(ToolError::new(format!(
            "Run {} changed since it was shown ({} → {}): nothing was deleted; call delete_run again.",
            run.id, run.status, again.status
        )));
    }
    match store.claim_dispatch(&intent.id, Duration::from_secs(120)) {
        Ok(Claim::Claimed(_)) => {}
        Ok(Claim::Existing(rec)) if matches!(rec.state, DispatchState::Dispatched { .. }) => {
            return Ok(Outcome::done(
                format!(
                    "Run {} was already deleted through intent {}",
                    run.id, intent.id
                ),
                DeleteOut {
                    run_id: run.id,
                    deleted: true,
                    intent_id: intent.id,
                },
            ));
        }
        _ => {
            return Err(ToolError::new(
                "Another call is deleting this run; call again in a moment.",
            ));
        }
    }
    match state.platform()?.delete_run(&run.id).await {
        Ok(_) => {
            let _ = store.mark_dispatched(&intent.id, &run.id, &json!({"deleted": true}));
            audit(
                &state,
                "delete_run",
                "deleted",
                Some(&intent.id),
                Some(&run.id),
                json!({}),
            );
            Ok(Outcome::done(
                format!("Deleted run {}", run.id),
                DeleteOut {
                    run_id: run.id,
                    deleted: true,
                    intent_id: intent.id,
                },
            ))
        }
        Err(e) => {
            let _ = store.mark_failed(&intent.id, &e.to_string());
            let _ = store.record_decision(&intent.id, Decision::Approved, "kept");
            Err(platform_error(&format!("delete run {}", run.id), &e))
        }
    }
}
