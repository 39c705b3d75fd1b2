//! The audit log: what a tool did (or declined), written through redaction to the state store.
//! A failure to write is logged, never turned into a tool failure.

use std::{future::Future, sync::Arc};

use serde_json::Value;

use crate::state::AppState;

tokio::task_local! {
    /// Who the current tool call is for (the OAuth token's `sub`), set around each call by
    /// `FactoryServer::call_tool`; unset over stdio and with a static token.
    static SUBJECT: Option<Arc<str>>;
}

/// Run `fut` with `subject` as the audit log's subject.
pub(crate) async fn with_subject<F: Future>(subject: Option<Arc<str>>, fut: F) -> F::Output {
    SUBJECT.scope(subject, fut).await
}

/// The current call's subject, to carry it into a task the call spawns.
pub(crate) fn current_subject() -> Option<Arc<str>> {
    SUBJECT.try_with(Clone::clone).ok().flatten()
}

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
            subject: current_subject().map(|s| s.to_string()),
        };
        if let Err(e) = store.audit(&event).await {
            tracing::warn!(error = %e, "could not write the audit log");
        }
    }
}
