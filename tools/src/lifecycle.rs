//! The lifecycle toolset: `stop_run`, `pause_run`, `restart_run` and `delete_run`. Which status
//! allows what is the policy's decision (`factory_policies::lifecycle`). A delete is always
//! confirmed by a person (the client's dialog where the policy takes it, or an intent approved
//! with `factory-mcp approve`), whatever the policy's `confirm` mode; the person is shown a
//! delete summary (never a launch's words), and the run's identity is re-checked after the yes.

use std::{sync::Arc, time::Duration};

use chrono::Utc;
use factory_platform::wire::runs::{RlRun, RunStatus};
use factory_policies::{
    confirmation::Action,
    launch,
    lifecycle::{self, Pause},
    store::{Claim, Decision, DispatchState, PlanRecord, StateStore},
    summary::{Line, Part, Summary, SummaryKind},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::{
    audit::audit,
    catalogue,
    confirm::{Ask, confirm},
    error::ToolError,
    ids::{PlanId, RunId},
    reply::{Outcome, ToolResult},
    run_view::fetch_run,
    runs::RunIdArgs,
    server::{Call, ServerTool},
    state::{AppState, platform_error},
};

pub(crate) fn tools() -> Vec<ServerTool<AppState>> {
    vec![
        ServerTool::new(&catalogue::STOP_RUN, stop_run),
        ServerTool::new(&catalogue::PAUSE_RUN, pause_run),
        ServerTool::new(&catalogue::RESTART_RUN, restart_run),
        ServerTool::new(&catalogue::DELETE_RUN, delete_run),
    ]
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StopRunArgs {
    pub run_id: String,
    /// Wait for a terminal state (default true).
    pub wait: Option<bool>,
    /// Longest wait in seconds, 1 to 300 (default 60).
    #[schemars(range(min = 1, max = 300))]
    pub timeout_s: Option<u64>,
    /// Once terminal and its checkpoints are settled, end with the run report (run_report).
    pub then_report: Option<bool>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct StopOut {
    pub run_id: String,
    pub status: String,
    pub terminal: bool,
    /// The run was already in a terminal state: nothing was sent.
    pub already_stopped: bool,
    pub note: Option<String>,
    /// With then_report: the end-of-run report.
    pub report: Option<crate::runs::report::RunReport>,
}

async fn stop_run(state: Arc<AppState>, args: StopRunArgs, _call: Call) -> ToolResult<StopOut> {
    let run = fetch_run(&state, &args.run_id).await?;
    let budget = Duration::from_secs(args.timeout_s.unwrap_or(60).clamp(1, 300));
    let want_report = args.then_report.unwrap_or(false);
    if !lifecycle::needs_stop(&run.run_status()) {
        let report = if want_report {
            Some(crate::runs::report::report_when_synced(&state, &run.id, budget).await?)
        } else {
            None
        };
        audit(
            &state,
            "stop_run",
            "already_terminal",
            None,
            Some(&run.id),
            json!({"status": run.status}),
        )
        .await;
        return Ok(Outcome::done(
            format!("Run {} is already {}: nothing to stop", run.id, run.status),
            StopOut {
                run_id: run.id.clone(),
                status: run.status.clone(),
                terminal: true,
                already_stopped: true,
                note: Some("No stop was sent.".into()),
                report,
            },
        ));
    }
    let platform = state.platform()?;
    let stopped = platform.stop_run(&run.id).await.map_err(|e| {
        platform_error(
            &format!(
                "stop run {} (call get_run to see its state before retrying)",
                run.id
            ),
            &e,
        )
    })?;
    audit(
        &state,
        "stop_run",
        "stop_sent",
        None,
        Some(&run.id),
        json!({"status": stopped.status}),
    )
    .await;
    let mut last = stopped;
    if (args.wait.unwrap_or(true) || want_report) && !last.is_terminal() {
        last = platform
            .wait_until_terminal(last, state.limits.stop_poll, budget)
            .await;
    }
    let terminal = last.is_terminal();
    let report = if want_report && terminal {
        Some(crate::runs::report::report_when_synced(&state, &last.id, budget).await?)
    } else {
        None
    };
    Ok(Outcome::done(
        format!("Run {} is {}", last.id, last.status),
        StopOut {
            run_id: last.id.clone(),
            status: last.status.clone(),
            terminal,
            already_stopped: false,
            note: (!terminal).then(|| "The stop was accepted but the run has not reached a terminal state yet; get_run shows it.".to_string()),
            report,
        },
    ))
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
    let decision = lifecycle::pause(&run.run_status());
    if decision == Pause::AlreadyPaused {
        return Ok(Outcome::done(
            format!("Run {} is already {}", run.id, run.status),
            LifecycleOut {
                run_id: run.id,
                status: run.status,
                note: Some("No pause was sent.".into()),
            },
        ));
    }
    if decision == Pause::Refused {
        crate::meter::refusal(crate::meter::Refusal::RunState);
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
    )
    .await;
    // Pausing settles on PAUSED; wait (bounded) like the CLI's stop does.
    let settled = if RunStatus::parse(&answer.status) == RunStatus::Paused {
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
    if !lifecycle::may_restart(&run.run_status()) {
        crate::meter::refusal(crate::meter::Refusal::RunState);
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
    )
    .await;
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

/// `delete_run`: a run that holds no GPUs, an intent a person approves (the client's dialog
/// or `factory-mcp approve`, as the policy allows), the run re-checked after the yes, one
/// delete per intent.
async fn delete_run(state: Arc<AppState>, args: DeleteArgs, call: Call) -> ToolResult<DeleteOut> {
    let run = deletable_run(&state, &args.run_id).await?;
    let store = state.store()?;
    let intent = delete_intent(&state, store, &run, args.intent_id.as_deref()).await?;
    // Always a person, whatever `confirm` says (and through the channels it allows).
    let ask = Ask {
        tool: "delete_run",
        action: Action::Delete,
        kind: SummaryKind::Delete,
        again_with: format!(" with intent_id: \"{}\"", intent.id),
    };
    if let Some(resp) = confirm(&state, store, &intent, ask, &call).await? {
        return Ok(Outcome::Response(Box::new(resp)));
    }
    still_as_shown(&state, &run).await?;
    if let Some(done) = claim_delete(store, &run, &intent).await? {
        return Ok(done);
    }
    delete_now(&state, store, run, intent).await
}

/// The run, if it may be deleted at all (a run holding GPUs is stopped first).
async fn deletable_run(state: &AppState, run_id: &str) -> Result<RlRun, ToolError> {
    RunId::parse(run_id)?;
    let run = fetch_run(state, run_id).await?;
    if !lifecycle::may_delete(&run.run_status()) {
        crate::meter::refusal(crate::meter::Refusal::RunState);
        return Err(ToolError::new(format!(
            "Run {} is {}: a run that holds GPUs is not deleted. Stop it first (stop_run), then delete it.",
            run.id, run.status
        )));
    }
    Ok(run)
}

/// The delete intent of `run`: the one named by `intent_id`, else the newest open one, else a
/// new one stored like a plan (so `factory-mcp approve` accepts its id).
async fn delete_intent(
    state: &AppState,
    store: &dyn StateStore,
    run: &RlRun,
    intent_id: Option<&str>,
) -> Result<PlanRecord, ToolError> {
    let digest = launch::digest(&json!({"delete": run.id}));
    let now = Utc::now();
    let existing = match intent_id {
        Some(id) => Some(named_intent(store, id, &digest, &run.id).await?),
        None => open_intent(store, &digest, now).await?,
    };
    match existing {
        Some(p) if p.is_expired(now) => Err(ToolError::new(format!(
            "Intent {} expired: call delete_run without intent_id for a new one.",
            p.id
        ))),
        Some(p) => Ok(p),
        None => new_intent(state, store, run, digest, now).await,
    }
}

async fn named_intent(
    store: &dyn StateStore,
    id: &str,
    digest: &str,
    run_id: &str,
) -> Result<PlanRecord, ToolError> {
    let plan = store
        .get_plan(id)
        .await
        .map_err(|e| ToolError::new(format!("cannot read intents: {e}")))?
        .ok_or_else(|| {
            ToolError::new(format!(
                "Unknown intent {}: call delete_run without intent_id to make one.",
                factory_policies::untrusted::one_line(id, 40)
            ))
        })?;
    if plan.content_digest != digest {
        return Err(ToolError::new(format!(
            "Intent {} is not for run {run_id}.",
            plan.id
        )));
    }
    Ok(plan)
}

/// The newest intent for this run that is neither expired nor used.
async fn open_intent(
    store: &dyn StateStore,
    digest: &str,
    now: chrono::DateTime<Utc>,
) -> Result<Option<PlanRecord>, ToolError> {
    let mut open = Vec::new();
    for p in store
        .plans_by_content_digest(digest)
        .await
        .map_err(|e| ToolError::new(format!("cannot read intents: {e}")))?
    {
        if !p.is_expired(now) && !matches!(store.dispatch(&p.id).await, Ok(Some(_))) {
            open.push(p);
        }
    }
    Ok(open.into_iter().max_by_key(|p| p.created_at))
}

async fn new_intent(
    state: &AppState,
    store: &dyn StateStore,
    run: &RlRun,
    digest: String,
    now: chrono::DateTime<Utc>,
) -> Result<PlanRecord, ToolError> {
    let id = PlanId::generate().to_string();
    let expires_at = now + INTENT_TTL;
    let team_name = match state.platform() {
        Ok(p) => crate::owner::team_name(p, run.team_id.as_deref()).await,
        Err(_) => None,
    };
    let screen = delete_summary(&id, expires_at, run, team_name.as_deref());
    let plan = PlanRecord {
        id,
        created_at: now,
        expires_at,
        request_digest: digest.clone(),
        content_digest: digest,
        owner: run.team_id.clone(),
        summary_text: screen.to_text(),
        body: json!({"kind": "delete", "run_id": run.id, "name": run.name, "summary": screen}),
    };
    store
        .put_plan(&plan)
        .await
        .map_err(|e| ToolError::new(format!("cannot record the delete intent: {e}")))?;
    Ok(plan)
}

/// What a person reads before a delete: the run, its owner (team id and name), and that it
/// cannot be undone; the run's name, status and model are the platform's (untrusted) text.
fn delete_summary(
    intent_id: &str,
    expires_at: chrono::DateTime<Utc>,
    run: &RlRun,
    team_name: Option<&str>,
) -> Summary {
    let value = |v: Option<&str>, absent: &str| {
        v.map_or_else(|| Part::Ours(absent.into()), |s| Part::Untrusted(s.into()))
    };
    Summary {
        kind: SummaryKind::Delete,
        id: intent_id.to_owned(),
        expires_at,
        figures: vec![
            Line::new(
                "Deletes",
                vec![
                    Part::Ours("run ".into()),
                    Part::Untrusted(run.id.clone()),
                    Part::Ours(
                        " PERMANENTLY: its record, logs and metrics go; this cannot be undone"
                            .into(),
                    ),
                ],
            ),
            crate::launch::owner_line(run.team_id.as_deref(), team_name, "the run"),
        ],
        details: vec![
            Line::new("Run name", vec![value(run.name.as_deref(), "unnamed")]),
            Line::new("Status", vec![Part::Untrusted(run.status.clone())]),
            Line::new("Model", vec![value(run.base_model.as_deref(), "?")]),
            Line::new("Created", vec![Part::Untrusted(run.created_at.clone())]),
        ],
    }
}

/// After the yes: the run is still the one shown, and still not active.
async fn still_as_shown(state: &AppState, run: &RlRun) -> Result<(), ToolError> {
    let again = fetch_run(state, &run.id).await?;
    if lifecycle::delete_still_valid(
        run.name.as_deref(),
        again.name.as_deref(),
        &again.run_status(),
    ) {
        return Ok(());
    }
    Err(ToolError::new(format!(
        "Run {} changed since it was shown ({} → {}): nothing was deleted; call delete_run again.",
        run.id,
        factory_policies::untrusted::inline(&run.status, 40),
        factory_policies::untrusted::inline(&again.status, 40)
    )))
}

/// Claim the intent's one delete; `Some` when it was already done (or is being done).
async fn claim_delete(
    store: &dyn StateStore,
    run: &RlRun,
    intent: &PlanRecord,
) -> Result<Option<Outcome<DeleteOut>>, ToolError> {
    match store
        .claim_dispatch(&intent.id, Duration::from_secs(120))
        .await
    {
        Ok(Claim::Claimed(_)) => Ok(None),
        Ok(Claim::Existing(rec)) if matches!(rec.state, DispatchState::Dispatched { .. }) => {
            Ok(Some(Outcome::done(
                format!(
                    "Run {} was already deleted through intent {}",
                    run.id, intent.id
                ),
                DeleteOut {
                    run_id: run.id.clone(),
                    deleted: true,
                    intent_id: intent.id.clone(),
                },
            )))
        }
        _ => Err(ToolError::new(
            "Another call is deleting this run; call again in a moment.",
        )),
    }
}

async fn delete_now(
    state: &AppState,
    store: &dyn StateStore,
    run: RlRun,
    intent: PlanRecord,
) -> ToolResult<DeleteOut> {
    match state.platform()?.delete_run(&run.id).await {
        Ok(_) => {
            let _ = store
                .mark_dispatched(&intent.id, &run.id, &json!({"deleted": true}))
                .await;
            audit(
                state,
                "delete_run",
                "deleted",
                Some(&intent.id),
                Some(&run.id),
                json!({}),
            )
            .await;
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
            let _ = store.mark_failed(&intent.id, &e.to_string()).await;
            // The person's yes stands for a retry of the same intent, through the channel it
            // came by (so a policy that takes only some channels still judges it rightly).
            if let Ok(Some(d)) = store.decision(&intent.id).await {
                let _ = store
                    .record_decision(&intent.id, Decision::Approved, &d.via)
                    .await;
            }
            Err(platform_error(&format!("delete run {}", run.id), &e))
        }
    }
}
