//! The watchdog's sweep (`factory-mcp guard`): over the caller's own active runs, enforce the
//! policy's `[guard]` stop conditions (wall-clock hours, cost so far), the step budget of runs
//! we launched, and `max_active_cost_per_hour_usd` (newest runs first). Elapsed time is measured
//! on the platform's clock (its `Date` header), so a skewed local clock cannot trigger it.
//! Every action is audited with its reason; the audit log is also the guard's memory across
//! restarts, so a run it already acted on is not acted on twice.

use chrono::{DateTime, Utc};
use factory_platform::{
    PlatformClient,
    wire::{parse_wire_datetime, runs::RlRun, wire_datetime_is_naive},
};
use factory_policies::{
    GuardAction, launch,
    store::{AuditEvent, DispatchState},
    watchdog,
};
use serde::Serialize;
use serde_json::{Value, json};

use crate::{
    audit::audit,
    error::ToolError,
    owner::scope_of,
    spend::active_spend,
    state::{AppState, platform_error},
};

/// One run the guard would act, or acted, on.
#[derive(Debug, Clone, Serialize)]
pub struct GuardFinding {
    pub run_id: String,
    pub name: Option<String>,
    pub status: String,
    pub reason: String,
    /// `stop` or `pause`.
    pub action: String,
    /// What happened: `acted`, `would_act` (dry run), `already_acted` (an earlier sweep did),
    /// or `failed: …`.
    pub outcome: String,
}

/// What one sweep saw and did.
#[derive(Debug, Clone, Serialize)]
pub struct SweepReport {
    pub owner: String,
    pub platform_time: String,
    pub active_runs: usize,
    pub active_rate_per_hour_usd: f64,
    pub findings: Vec<GuardFinding>,
    pub dry_run: bool,
}

/// How long a run has been running at `now`, in hours, and whether the time it was counted
/// from carried no offset: from its start, or from its creation when it has no readable start;
/// times read as the platform sends them (RFC 3339, or a naive time taken as UTC, as the
/// platform's example times are), so no run escapes the wall-clock and cost limits for the
/// form of its times. A reason given from a naive time says so.
fn hours_running(run: &RlRun, now: DateTime<Utc>) -> Option<(f64, bool)> {
    [run.started_at.as_deref(), Some(run.created_at.as_str())]
        .into_iter()
        .flatten()
        .find_map(|raw| parse_wire_datetime(raw).map(|s| (s, raw)))
        .map(|(s, raw)| {
            let hours = ((now - s).num_milliseconds().max(0) as f64) / 3_600_000.0;
            (hours, wire_datetime_is_naive(raw))
        })
}

/// The caller's own runs (never another user's, even in a shared team).
async fn my_runs(
    platform: &PlatformClient,
    team: &Option<String>,
    me: Option<&str>,
) -> Result<Vec<RlRun>, ToolError> {
    let mut out = platform
        .scan_runs(&scope_of(team), true, 5, |_| false)
        .await
        .map_err(|e| platform_error("list your runs", &e))?
        .runs;
    if let Some(me) = me {
        out.retain(|r| r.user_id == me);
    }
    Ok(out)
}

/// One sweep. With `dry_run`, report what would be done and change nothing.
pub async fn sweep(state: &AppState, dry_run: bool) -> Result<SweepReport, ToolError> {
    let platform = state.platform()?;
    let team = platform.active_team_id().map(str::to_owned);
    let me = platform
        .whoami()
        .await
        .map_err(|e| platform_error("read the current user", &e))?
        .id;
    let runs = my_runs(platform, &team, me.as_deref()).await?;
    let now = platform.server_time().unwrap_or_else(Utc::now);
    let models = platform
        .available_models(&scope_of(&team))
        .await
        .map_err(|e| platform_error("list models for rates", &e))?;
    let active = active_spend(state, &runs, &models).await;
    let flagged = flag_runs(state, platform, &runs, &active, now).await;
    let acted_before = acted_before(state).await;

    let mut findings = Vec::new();
    for (id, reason) in flagged {
        let Some(run) = runs.iter().find(|r| r.id == id) else {
            continue;
        };
        let act = watchdog::action_for(state.policy.guard.action, &run.run_status());
        let outcome = if acted_before.contains(&id) {
            "already_acted".to_string()
        } else if dry_run {
            "would_act".to_string()
        } else {
            act_on(state, platform, &id, act, &reason).await
        };
        findings.push(GuardFinding {
            run_id: id.clone(),
            name: run.name.clone(),
            status: run.status.clone(),
            reason,
            action: act.as_str().into(),
            outcome,
        });
    }
    Ok(SweepReport {
        owner: team
            .map(|t| format!("team {t}"))
            .unwrap_or_else(|| "personal account".into()),
        platform_time: now.to_rfc3339(),
        active_runs: active.len(),
        active_rate_per_hour_usd: active.iter().filter_map(|a| a.rate_per_hour_usd).sum(),
        findings,
        dry_run,
    })
}

/// The step budgets declared by the runs we launched (from the dispatch journal).
async fn step_budgets(state: &AppState) -> Vec<(String, i64)> {
    let dispatched = match state.store() {
        Ok(s) => s.dispatched_runs().await.unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    dispatched
        .into_iter()
        .filter_map(|d| match d.state {
            DispatchState::Dispatched { run_id, details } => details
                .get("max_steps")
                .and_then(Value::as_i64)
                .map(|m| (run_id, m)),
            _ => None,
        })
        .collect()
}

/// The active runs the policy says to act on, each with its reason (`policies::watchdog`):
/// each run's own limits and step budget, then the active hourly cap over the rest.
async fn flag_runs(
    state: &AppState,
    platform: &PlatformClient,
    runs: &[RlRun],
    active: &[launch::ActiveRun],
    now: DateTime<Utc>,
) -> Vec<(String, String)> {
    let budgets = step_budgets(state).await;
    let mut flagged: Vec<(String, String)> = Vec::new();
    for a in active {
        let Some(run) = runs.iter().find(|r| r.id == a.id) else {
            continue;
        };
        let elapsed = hours_running(run, now);
        if let Some(mut reason) = watchdog::over_limits(
            &state.policy.guard,
            elapsed.map(|e| e.0),
            a.rate_per_hour_usd,
            a.estimated,
        ) {
            if elapsed.is_some_and(|e| e.1) {
                reason.push_str(
                    " (the platform sent this run's time without an offset: read as UTC)",
                );
            }
            flagged.push((a.id.clone(), reason));
            continue;
        }
        // The run's progress is read only for a run with a budget.
        if let Some((_, budget)) = budgets.iter().find(|(id, _)| id == &a.id)
            && let Ok(p) = platform.get_progress(&a.id).await
            && let Some(step) = p.latest_step
            && let Some(reason) = watchdog::past_step_budget(step, *budget)
        {
            flagged.push((a.id.clone(), reason));
        }
    }
    if let Some(cap) = state.policy.max_active_cost_per_hour_usd {
        let remaining: Vec<watchdog::Active<'_>> = active
            .iter()
            .filter(|a| !flagged.iter().any(|(id, _)| id == &a.id))
            .map(|a| watchdog::Active {
                id: &a.id,
                created_at: parse_wire_datetime(&a.created_at),
                rate_per_hour_usd: a.rate_per_hour_usd,
            })
            .collect();
        flagged.extend(watchdog::over_active_cap(cap, &remaining));
    }
    flagged
}

/// The runs an earlier sweep acted on: the audit log is the guard's memory across restarts.
async fn acted_before(state: &AppState) -> Vec<String> {
    let entries = match state.store() {
        Ok(s) => s.audit_entries(10_000).await.unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    entries
        .into_iter()
        .filter(|e| e.event.actor == "guard" && e.event.outcome == "acted")
        .filter_map(|e| e.event.run_id)
        .collect()
}

/// Stop or pause one run, audited with its reason; the outcome as the report shows it.
async fn act_on(
    state: &AppState,
    platform: &PlatformClient,
    id: &str,
    act: GuardAction,
    reason: &str,
) -> String {
    let result = match act {
        GuardAction::Stop => platform.stop_run(id).await.map(|r| r.status),
        GuardAction::Pause => platform.pause_run(id).await.map(|r| r.status),
    };
    match result {
        Ok(status) => {
            if let Ok(store) = state.store() {
                let _ = store
                    .audit(
                        &AuditEvent::new("guard", act.as_str(), "acted")
                            .run(id)
                            .detail(json!({"reason": reason, "status": status})),
                    )
                    .await;
            }
            "acted".to_string()
        }
        Err(e) => {
            audit(
                state,
                "guard",
                act.as_str(),
                None,
                Some(id),
                json!({"reason": reason, "error": e.to_string()}),
            )
            .await;
            format!("failed: {e}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(started_at: Option<&str>, created_at: &str) -> RlRun {
        serde_json::from_value(json!({
            "id": "r1", "userId": "u", "status": "RUNNING",
            "createdAt": created_at, "updatedAt": created_at, "startedAt": started_at,
        }))
        .unwrap()
    }

    /// A run's hours are counted from its start, or its creation, whatever the form of the
    /// platform's times: a naive time counts as its `Z` form, so the guard's limits apply.
    #[test]
    fn hours_are_counted_from_naive_times_as_from_rfc3339_ones() {
        let now = parse_wire_datetime("2026-01-02T05:04:05Z").unwrap();
        let hours = |r: &RlRun| hours_running(r, now);
        assert_eq!(
            hours(&run(Some("2026-01-02T03:04:05Z"), "x")),
            Some((2.0, false))
        );
        assert_eq!(
            hours(&run(Some("2026-01-02T03:04:05"), "x")),
            Some((2.0, true))
        );
        assert_eq!(
            hours(&run(Some("2026-01-02 04:04:05.000"), "x")),
            Some((1.0, true))
        );
        assert_eq!(
            hours(&run(Some("2026-01-02 06:04:05+02:00"), "x")),
            Some((1.0, false))
        );
        // The start counts, not the creation, whichever forms they have.
        let created = "2026-01-02T02:04:05Z";
        assert_eq!(
            hours(&run(Some("2026-01-02T04:04:05Z"), created)),
            Some((1.0, false))
        );
        assert_eq!(
            hours(&run(Some("2026-01-02 04:04:05"), created)),
            Some((1.0, true))
        );
        // No readable start: from the creation, in either form.
        assert_eq!(hours(&run(None, "2026-01-02 02:04:05")), Some((3.0, true)));
        assert_eq!(hours(&run(Some("soon"), created)), Some((3.0, false)));
        assert_eq!(hours(&run(None, "never")), None);
        // A start after the platform's now counts as none elapsed.
        assert_eq!(
            hours(&run(Some("2026-01-02T06:04:05"), "x")),
            Some((0.0, true))
        );
    }
}
