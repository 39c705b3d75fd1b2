//! The tool side of the page: mint a single-use token for the plan, ask the client to open the
//! page's URL (legacy `elicitation/create` in URL mode, or the 2026-07-28 input-required
//! round trip), then wait — cancellably, up to [`super::PageHub::wait`] — for the person's
//! decision on the page. The URL (and so the token) goes to the client's URL dialog only,
//! never into a tool result or error.

use chrono::Utc;
use factory_policies::{
    confirmation::Via,
    store::{
        Decision, DecisionRecord, PageTokenRecord, PlanRecord, StateStore, new_page_secret,
        secret_digest,
    },
    untrusted::one_line,
};
use rmcp::model::{
    CallToolResponse, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    InputRequest, InputRequests, InputRequiredResult, ProtocolVersion,
};
use serde::Deserialize;
use serde_json::json;

use super::{PATH_PREFIX, TOKEN_TTL};
use crate::{
    audit::audit,
    confirm::{Ask, Opened, open_state, seal_state},
    error::ToolError,
    ids,
    server::Call,
    state::AppState,
};

/// The key of the page's request in an input-required round trip.
const INPUT_KEY: &str = "page";
/// How long the sealed state of the round trip stays valid.
const SEAL_TTL: std::time::Duration = std::time::Duration::from_secs(300);

/// Ask through the page. `Ok(None)`: approved on the page, go on. `Ok(Some(resp))`: the first
/// leg of the input-required round trip. `Err`: declined, not opened, not decided yet, or no
/// way to ask.
pub(crate) async fn ask(
    state: &AppState,
    store: &dyn StateStore,
    plan: &PlanRecord,
    ask: &Ask<'_>,
    call: &Call,
) -> Result<Option<CallToolResponse>, ToolError> {
    let modern = call
        .ctx
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    let opened = if modern {
        match &call.request_state {
            None => {
                let url = mint(state, store, plan).await?;
                return first_leg(state, store, plan, ask, url).await.map(Some);
            }
            Some(sealed) => second_leg(store, plan, ask, call, sealed).await?,
        }
    } else {
        let url = mint(state, store, plan).await?;
        let url = url::Url::parse(&url)
            .map_err(|e| ToolError::unavailable(format!("the approval page's address: {e}")))?;
        crate::meter::confirmation(crate::meter::Confirmation::Asked);
        audit(
            state,
            ask.tool,
            "asked",
            Some(&plan.id),
            None,
            json!({"channel": Via::Page.as_str()}),
        )
        .await;
        match call
            .ctx
            .peer
            .elicit_url(message(plan, ask), url, ids::nonce())
            .await
        {
            Ok(action) => matches!(action, ElicitationAction::Accept),
            Err(e) => {
                // The client's error may echo the request (and so the token): not logged.
                let _ = e;
                tracing::debug!("the URL elicitation failed");
                return Err(ToolError::needs_person(format!(
                    "Could not ask the client to open the approval page. Ask the user to run `factory-mcp approve {id}` in their terminal (or `factory-mcp approve {id} --page` for the page), then call {tool} again{again}. Nothing was done.",
                    id = plan.id,
                    tool = ask.tool,
                    again = ask.again_with
                )));
            }
        }
    };
    if !opened {
        crate::meter::confirmation(crate::meter::Confirmation::Cancelled);
        audit(
            state,
            ask.tool,
            "page_not_opened",
            Some(&plan.id),
            None,
            json!({"channel": Via::Page.as_str()}),
        )
        .await;
        return Err(ToolError::needs_person(format!(
            "The approval page for plan {} was not opened, so nobody decided: nothing was done. Call {} again{} to offer the page again, or ask the user to run `factory-mcp approve {}` in their terminal.",
            plan.id, ask.tool, ask.again_with, plan.id
        )));
    }
    let cancelled = async {
        call.ctx.ct.cancelled().await;
    };
    let waited = wait_for_decision(state, store, &plan.id, state.page.wait, cancelled)
        .await?
        .ok_or_else(|| {
            crate::meter::confirmation(crate::meter::Confirmation::Cancelled);
            ToolError::new(
                "The call was cancelled while waiting for the approval page: nothing was done.",
            )
        })?;
    match waited {
        Some(d) if d.decision == Decision::Approved => {
            crate::meter::confirmation(crate::meter::Confirmation::Approved);
            audit(
                state,
                ask.tool,
                "approved",
                Some(&plan.id),
                None,
                json!({"channel": d.via, "at": d.decided_at.to_rfc3339()}),
            )
            .await;
            Ok(None)
        }
        Some(d) => {
            crate::meter::confirmation(crate::meter::Confirmation::Declined);
            audit(
                state,
                ask.tool,
                "declined",
                Some(&plan.id),
                None,
                json!({"channel": d.via, "at": d.decided_at.to_rfc3339()}),
            )
            .await;
            Err(ToolError::new(format!(
                "The {} for plan {} was declined by a person ({}): nothing was done.",
                ask.noun(),
                plan.id,
                d.via
            )))
        }
        None => {
            crate::meter::confirmation(crate::meter::Confirmation::Pending);
            Err(ToolError::needs_person(format!(
                "Not yet approved — the person has not decided on the approval page yet. Call {} again{} once they have: the next call picks their decision up. Nothing was done.",
                ask.tool, ask.again_with
            )))
        }
    }
}

/// The dialog's text: what the page is for (the figures are on the page itself).
fn message(plan: &PlanRecord, ask: &Ask<'_>) -> String {
    let head = plan.summary_text.lines().next().unwrap_or("");
    format!(
        "Open this page to approve or decline the {} ({}). Your decision is made on the page, not here.",
        ask.noun(),
        one_line(head, 160)
    )
}

/// A new single-use token for `plan`, stored by digest; returns the page's URL.
pub(super) async fn mint(
    state: &AppState,
    store: &dyn StateStore,
    plan: &PlanRecord,
) -> Result<String, ToolError> {
    let Some(host) = state.page.host() else {
        return Err(ToolError::needs_person(format!(
            "This server has no approval page. Ask the user to run `factory-mcp approve {}` in their terminal. Nothing was done.",
            plan.id
        )));
    };
    let origin = host
        .origin()
        .await
        .map_err(|e| ToolError::unavailable(format!("cannot serve the approval page: {e}")))?;
    let token = new_page_secret();
    let now = Utc::now();
    let ttl = chrono::Duration::from_std(TOKEN_TTL).unwrap_or_default();
    let record = PageTokenRecord {
        plan_id: plan.id.clone(),
        request_digest: plan.request_digest.clone(),
        created_at: now,
        expires_at: (now + ttl).min(plan.expires_at),
        used_at: None,
        cookie_digest: None,
    };
    store
        .put_page_token(&secret_digest(&token), &record)
        .await
        .map_err(|e| ToolError::unavailable(format!("cannot record the approval page: {e}")))?;
    Ok(format!("{origin}{PATH_PREFIX}/{}?t={token}", plan.id))
}

fn associated_data(ask: &Ask<'_>, plan: &PlanRecord) -> String {
    format!("page|{}|{}|{}", ask.tool, plan.id, plan.request_digest)
}

/// First leg of the round trip: the URL request, with the sealed state to come back with.
async fn first_leg(
    state: &AppState,
    store: &dyn StateStore,
    plan: &PlanRecord,
    ask: &Ask<'_>,
    url: String,
) -> Result<CallToolResponse, ToolError> {
    let state_str = seal_state(store, plan, &associated_data(ask, plan), SEAL_TTL).await?;
    let mut reqs = InputRequests::new();
    reqs.insert(
        INPUT_KEY.into(),
        InputRequest::Elicitation(ElicitRequest::new(
            ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: message(plan, ask),
                url,
                elicitation_id: String::new(),
            },
        )),
    );
    crate::meter::confirmation(crate::meter::Confirmation::Asked);
    audit(
        state,
        ask.tool,
        "asked",
        Some(&plan.id),
        None,
        json!({"channel": Via::Page.as_str()}),
    )
    .await;
    Ok(InputRequiredResult::new(Some(reqs), Some(state_str)).into())
}

/// Second leg: open the sealed state, spend its nonce; `true` when the page was opened.
async fn second_leg(
    store: &dyn StateStore,
    plan: &PlanRecord,
    ask: &Ask<'_>,
    call: &Call,
    sealed: &str,
) -> Result<bool, ToolError> {
    let again = || {
        ToolError::bad_argument(format!(
            "The approval state is invalid, tampered with or expired: call {} again to be asked afresh. Nothing was done.",
            ask.tool
        ))
    };
    match open_state(store, plan, &associated_data(ask, plan), SEAL_TTL, sealed).await? {
        Opened::Fresh => {}
        Opened::Invalid | Opened::Unreadable | Opened::OtherPlan => {
            crate::meter::confirmation(crate::meter::Confirmation::Expired);
            return Err(again());
        }
        Opened::Replayed => {
            crate::meter::confirmation(crate::meter::Confirmation::Replayed);
            return Err(ToolError::new(format!(
                "This approval state was already used. Call {} again.",
                ask.tool
            )));
        }
    }
    Ok(call
        .input_responses
        .as_ref()
        .and_then(|r| r.get(INPUT_KEY))
        .and_then(|v| ElicitResult::deserialize(v).ok())
        .is_some_and(|r| matches!(r.action, ElicitationAction::Accept)))
}

/// Wait for a decision on `plan_id`: woken by the page in this process, and every second
/// checking the store (a page served by another process, `factory-mcp approve --page`).
/// `Ok(Some(None))` when `limit` ran out; `Ok(None)` when `cancel` completed first.
pub(super) async fn wait_for_decision(
    state: &AppState,
    store: &dyn StateStore,
    plan_id: &str,
    limit: std::time::Duration,
    cancel: impl std::future::Future<Output = ()>,
) -> Result<Option<Option<DecisionRecord>>, ToolError> {
    let deadline = tokio::time::Instant::now() + limit;
    tokio::pin!(cancel);
    loop {
        let notified = state.page.decided.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(d) = store
            .decision(plan_id)
            .await
            .map_err(|e| ToolError::unavailable(format!("cannot read approvals: {e}")))?
        {
            return Ok(Some(Some(d)));
        }
        let now = tokio::time::Instant::now();
        if now >= deadline {
            return Ok(Some(None));
        }
        let tick = (now + std::time::Duration::from_secs(1)).min(deadline);
        tokio::select! {
            () = &mut notified => {}
            () = tokio::time::sleep_until(tick) => {}
            () = &mut cancel => return Ok(None),
        }
    }
}
