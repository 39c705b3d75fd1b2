//! The audit log: what a tool did (or declined), written through redaction to the state store.
//! A failure to write is logged, never turned into a tool failure.

use serde_json::Value;

use crate::state::AppState;

/// Record `action` by `tool` (the actor), about a plan and/or a run.
pub(crate) async fn audit(
    state: &AppState,
    tool: &str,
    action: &str,
    plan_id: Option<&str>,
    run_id: Option<&str>,
    detail: Value,
) {
    if let Ok(store) = state.store() {
        let mut detail = detail;
        state.redactor.redact_json(&mut detail);
        let event = factory_policies::store::AuditEvent {
            actor: tool.into(),
            action: action.into(),
            plan_id: plan_id.map(str::to_owned),
            run_id: run_id.map(str::to_owned),
            outcome: action.into(),
            detail,
        };
        if let Err(e) = store.audit(&event).await {
            tracing::warn!(error = %e, "could not write the audit log");
        }
    }
}
