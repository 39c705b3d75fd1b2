//! `launch_run` and `resume_run`: one pipeline. Settle an earlier dispatch first (a dispatched
//! plan returns its run, asking no one again), then refuse an expired, blocked or changed plan,
//! re-check budgets, ask a person when the policy says so, re-check, and dispatch once.

use std::sync::Arc;

use chrono::Utc;
use factory_platform::PlatformClient;
use factory_policies::{
    Policy,
    confirmation::Action,
    launch::{self, ActiveRun, PlanFigures},
    store::{PlanRecord, StateStore},
    summary::SummaryKind,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{KIND_RESUME, PlanBody, dispatch::dispatch, reconcile::settle_existing};
use crate::{
    audit::audit,
    confirm::{Ask, confirm, person_needed},
    error::ToolError,
    ids::PlanId,
    owner::scope_of,
    reply::{Outcome, ToolResult},
    server::Call,
    spend::{active_spend, owner_runs},
    state::{AppState, platform_error},
};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LaunchRunArgs {
    /// The plan_id from plan_run.
    pub plan_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct LaunchOut {
    pub plan_id: String,
    pub run_id: String,
    pub status: Option<String>,
    pub dashboard_url: String,
    /// The run already existed for this plan: nothing new was dispatched.
    pub deduplicated: bool,
    pub on_demand: Option<bool>,
    pub gpu_type: Option<String>,
    pub price_per_gpu_hour_usd: Option<f64>,
    pub estimated_cost_per_hour_usd: Option<f64>,
    pub volume_created: bool,
}

fn refuse(msg: impl Into<String>) -> ToolError {
    ToolError::new(msg)
}

pub(super) async fn launch_run(
    state: Arc<AppState>,
    args: LaunchRunArgs,
    call: Call,
) -> ToolResult<LaunchOut> {
    run_plan(state, &args.plan_id, call, "launch_run").await
}

pub(super) async fn resume_run(
    state: Arc<AppState>,
    args: LaunchRunArgs,
    call: Call,
) -> ToolResult<LaunchOut> {
    run_plan(state, &args.plan_id, call, "resume_run").await
}

async fn load_plan(
    store: &dyn StateStore,
    plan_id: &str,
) -> Result<(PlanRecord, PlanBody), ToolError> {
    let Some(id) = PlanId::parse_plan(plan_id) else {
        return Err(ToolError::bad_argument(format!(
            "`{}` is not a plan id: call plan_run first.",
            plan_id.chars().take(40).collect::<String>()
        )));
    };
    let plan = store
        .get_plan(id.as_str())
        .await
        .map_err(|e| ToolError::unavailable(format!("cannot read the plan store: {e}")))?
        .ok_or_else(|| {
            ToolError::not_found(format!(
                "Unknown plan {id}: call plan_run to make one. Nothing was dispatched."
            ))
        })?;
    let body: PlanBody = serde_json::from_value(plan.body.clone())
        .map_err(|e| refuse(format!("plan {id} is unreadable ({e}); re-plan")))?;
    Ok((plan, body))
}

/// The shared pipeline of launch_run and resume_run.
async fn run_plan(
    state: Arc<AppState>,
    plan_id: &str,
    call: Call,
    tool_name: &str,
) -> ToolResult<LaunchOut> {
    let store = state.store()?;
    let platform = state.platform()?;
    let (plan, body) = load_plan(store, plan_id).await?;
    let plan_id = plan.id.clone();
    match (tool_name, body.kind == KIND_RESUME) {
        ("launch_run", true) => {
            return Err(refuse(format!(
                "Plan {plan_id} resumes a paused run: call resume_run with it."
            )));
        }
        ("resume_run", false) => {
            return Err(refuse(format!(
                "Plan {plan_id} launches a new run: call launch_run with it."
            )));
        }
        _ => {}
    }

    // Settle an earlier dispatch first: a dispatched plan returns its run, asking no one again.
    if let Some(done) = settle_existing(&state, store, platform, &plan, &body).await? {
        return Ok(done);
    }
    if Utc::now() > plan.expires_at {
        crate::meter::refusal(crate::meter::Refusal::PlanExpired);
        return Err(refuse(format!(
            "Plan {plan_id} expired at {}: call plan_run again. Nothing was dispatched.",
            plan.expires_at.to_rfc3339()
        )));
    }
    if let Some(b) = &body.blocked {
        crate::meter::refusal(crate::meter::Refusal::PlanBlocked);
        audit(
            &state,
            tool_name,
            "refused_blocked",
            Some(&plan_id),
            None,
            json!({}),
        )
        .await;
        return Err(refuse(format!("{b} Nothing was dispatched.")));
    }
    recheck(&state, platform, &body).await?;

    if person_needed(&state, Action::Launch) {
        let ask = Ask {
            tool: tool_name,
            action: Action::Launch,
            kind: if body.kind == KIND_RESUME {
                SummaryKind::Resume
            } else {
                SummaryKind::Launch
            },
            again_with: String::new(),
        };
        if let Some(resp) = confirm(&state, store, &plan, ask, &call).await? {
            return Ok(Outcome::Response(Box::new(resp)));
        }
        recheck(&state, platform, &body).await?;
    }
    dispatch(state.clone(), plan, body).await
}

/// Refuse, with every broken limit and its figures, when the plan breaks the policy's budgets.
pub(super) fn enforce_budgets(
    policy: &Policy,
    figures: &PlanFigures<'_>,
    active: &[ActiveRun],
    head: &str,
    tail: &str,
) -> Result<(), ToolError> {
    let violations = launch::check_budgets(policy, figures, active);
    if violations.is_empty() {
        return Ok(());
    }
    crate::meter::refusal(crate::meter::Refusal::Budget);
    let lines: Vec<String> = violations
        .iter()
        .map(|v| format!("{}: {}", v.key, v.message))
        .collect();
    Err(refuse(format!(
        "{head}:\n- {}{}{tail}",
        lines.join("\n- "),
        if tail.is_empty() { "" } else { "\n" }
    )))
}

/// Budgets and the config file still as planned.
async fn recheck(
    state: &AppState,
    platform: &PlatformClient,
    body: &PlanBody,
) -> Result<(), ToolError> {
    if let (Some(path), Some(sha)) = (&body.config_path, &body.config_sha256) {
        let now = state
            .workspace()
            .ok()
            .and_then(|ws| {
                let limits = factory_policies::files::ReadLimits::CONFIG;
                factory_policies::files::read_file(ws, std::path::Path::new(path), limits).ok()
            })
            .map(|b| launch::digest_bytes(&b));
        if now.as_ref() != Some(sha) {
            crate::meter::refusal(crate::meter::Refusal::ConfigChanged);
            return Err(refuse(format!(
                "{path} changed (or vanished) since the plan was made: re-plan with plan_run. Nothing was dispatched."
            )));
        }
    }
    let scope = scope_of(&body.team_id);
    let models = platform
        .available_models(&scope)
        .await
        .map_err(|e| platform_error("list models to re-check budgets", &e))?;
    let known = owner_runs(state, platform, &body.team_id).await?;
    let active = active_spend(state, known.unfinished(), &models).await;
    let figures = PlanFigures {
        team: body.team_id.as_deref(),
        gpu_type: body.gpu_type.as_deref(),
        gpus: body.gpus,
        per_hour_usd: body.price.per_hour_usd,
        max_steps: body.max_steps,
        reserved: body.price.reserved,
    };
    enforce_budgets(
        &state.policy,
        &figures,
        &active,
        "Refused by the policy now",
        "Nothing was dispatched.",
    )
}
