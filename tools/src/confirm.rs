//! Asking a person before an irreversible or billable action. The caller says what to ask
//! ([`Ask`]); the channel is the policy's decision (`factory_policies::confirmation`): the
//! 2026-07-28 input-required round trip (state sealed with the per-install key, bound to the
//! tool, plan and request digest, 5 minutes, single-use nonce), the legacy elicitation request,
//! or an approval recorded by `factory-mcp approve`.

use std::time::Duration;

use chrono::Utc;
use factory_policies::{
    confirmation::{self, Action, Channel, Client},
    store::{Decision, PlanRecord, StateStore},
};
use rmcp::model::{
    CallToolResponse, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    InputRequest, InputRequests, InputRequiredResult, ProtocolVersion, RequestStateCodec,
    SealOptions,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::{audit::audit, error::ToolError, ids, server::Call, state::AppState};

/// How long a sealed confirmation stays valid.
const CONFIRM_TTL: Duration = Duration::from_secs(300);

/// What to ask, supplied by the calling tool.
pub(crate) struct Ask<'a> {
    /// The calling tool: the audit actor, and the tool to call again.
    pub(crate) tool: &'a str,
    pub(crate) action: Action,
    /// The action's name in "The {what} for plan … was declined".
    pub(crate) what: &'a str,
    /// The dialog's text.
    pub(crate) question: String,
    /// The checkbox's description in the input-required form.
    pub(crate) tick: &'a str,
    /// Appended to "then call {tool} again" when the client cannot ask (e.g. the intent id).
    pub(crate) again_with: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Confirm {
    /// Tick to approve this billable launch.
    confirm: bool,
}
rmcp::elicit_safe!(Confirm);

#[derive(Debug, Serialize, Deserialize)]
struct SealedConfirm {
    plan_id: String,
    request_digest: String,
    nonce: String,
}

/// Whether `action` needs a person under this server's policy (before any client question).
pub(crate) fn person_needed(state: &AppState, action: Action) -> bool {
    confirmation::person_needed(state.policy.confirm, action)
}

/// Ask a person. `Ok(None)`: confirmed, go on. `Ok(Some(resp))`: answer the client with this
/// (the input-required round trip). `Err`: refused, or no way to ask.
pub(crate) async fn confirm(
    state: &AppState,
    store: &dyn StateStore,
    plan: &PlanRecord,
    ask: Ask<'_>,
    call: &Call,
) -> Result<Option<CallToolResponse>, ToolError> {
    let decision = store
        .decision(&plan.id)
        .await
        .map_err(|e| ToolError::unavailable(format!("cannot read approvals: {e}")))?;
    if let Some(d) = decision {
        return match d.decision {
            Decision::Approved => Ok(None),
            Decision::Refused => Err(ToolError::new(format!(
                "Plan {} was refused by a person ({}): nothing was dispatched. Make a new plan if the launch is still wanted.",
                plan.id, d.via
            ))),
        };
    }
    let ctx = &call.ctx;
    let client = Client {
        modern: ctx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28),
        can_elicit: ctx
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some()),
    };
    // URL-mode elicitation (either era) goes to the approval page (`approval_page`).
    let url_mode = ctx
        .client_capabilities()
        .is_some_and(|c| c.elicitation.as_ref().is_some_and(|e| e.url.is_some()));
    match confirmation::channel_with_modes(state.policy.confirm, ask.action, client, url_mode) {
        Channel::Page => crate::approval_page::ask(state, store, plan, &ask, call).await,
        Channel::NotNeeded => Ok(None),
        Channel::InputRequired => match &call.request_state {
            None => ask_input_required(state, store, plan, &ask).await.map(Some),
            Some(sealed) => answer_input_required(state, store, plan, &ask, call, sealed)
                .await
                .map(|()| None),
        },
        Channel::Elicitation => ask_elicitation(state, store, plan, ask, call)
            .await
            .map(|()| None),
        Channel::ApproveCommand => {
            audit(
                state,
                ask.tool,
                "needs_approval",
                Some(&plan.id),
                None,
                json!({}),
            )
            .await;
            Err(ToolError::needs_person(format!(
                "A person must approve this and this client cannot show a confirmation dialog. Ask the user to run `factory-mcp approve {}` in their terminal (or `factory-mcp approve {} --page` to decide on the approval page in their browser), then call {} again{}. Nothing was done.\n\n{}",
                plan.id, plan.id, ask.tool, ask.again_with, plan.summary_text
            )))
        }
    }
}

/// A "no" in either dialog: audited under the calling tool, nothing done.
async fn declined(state: &AppState, plan: &PlanRecord, ask: &Ask<'_>, via: &str) -> ToolError {
    audit(
        state,
        ask.tool,
        "declined",
        Some(&plan.id),
        None,
        json!({"via": via}),
    )
    .await;
    ToolError::new(format!(
        "The {} for plan {} was declined: nothing was done.",
        ask.what, plan.id
    ))
}

pub(crate) async fn codec(store: &dyn StateStore) -> Result<RequestStateCodec, ToolError> {
    let key = store
        .request_state_key()
        .await
        .map_err(|e| ToolError::unavailable(format!("cannot read the request-state key: {e}")))?;
    RequestStateCodec::try_new(secrecy::ExposeSecret::expose_secret(&key).to_vec())
        .map_err(|e| ToolError::unavailable(format!("request-state key unusable: {e}")))
}

/// The sealed state is bound to the tool, the plan and its request digest.
fn associated_data(ask: &Ask<'_>, plan: &PlanRecord) -> String {
    format!("{}|{}|{}", ask.tool, plan.id, plan.request_digest)
}

/// First leg of the round trip: the question, with the sealed state to come back with.
async fn ask_input_required(
    state: &AppState,
    store: &dyn StateStore,
    plan: &PlanRecord,
    ask: &Ask<'_>,
) -> Result<CallToolResponse, ToolError> {
    let codec = codec(store).await?;
    let sealed = SealedConfirm {
        plan_id: plan.id.clone(),
        request_digest: plan.request_digest.clone(),
        nonce: ids::nonce(),
    };
    let payload = serde_json::to_vec(&sealed).map_err(|e| ToolError::new(e.to_string()))?;
    let state_str = codec.seal_with(
        &payload,
        &SealOptions::new()
            .associated_data(associated_data(ask, plan).as_bytes())
            .ttl(CONFIRM_TTL),
    );
    let schema = serde_json::from_value(json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean", "title": "Approve", "description": ask.tick}},
        "required": ["confirm"]
    }))
    .map_err(|e: serde_json::Error| ToolError::new(e.to_string()))?;
    let mut reqs = InputRequests::new();
    reqs.insert(
        "confirm".into(),
        InputRequest::Elicitation(ElicitRequest::new(
            ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: ask.question.clone(),
                requested_schema: schema,
            },
        )),
    );
    audit(
        state,
        ask.tool,
        "asked",
        Some(&plan.id),
        None,
        json!({"via": "input_required"}),
    )
    .await;
    Ok(InputRequiredResult::new(Some(reqs), Some(state_str)).into())
}

/// Second leg: open the sealed state, spend its nonce, read the answer.
async fn answer_input_required(
    state: &AppState,
    store: &dyn StateStore,
    plan: &PlanRecord,
    ask: &Ask<'_>,
    call: &Call,
    sealed: &str,
) -> Result<(), ToolError> {
    let codec = codec(store).await?;
    let payload = codec
        .open_with(sealed, associated_data(ask, plan).as_bytes())
        .map_err(|_| {
            ToolError::bad_argument("The confirmation state is invalid, tampered with or expired: call launch_run again to be asked afresh. Nothing was dispatched.")
        })?;
    let sc: SealedConfirm = serde_json::from_slice(&payload).map_err(|_| {
        ToolError::bad_argument(
            "The confirmation state is unreadable: call launch_run again. Nothing was dispatched.",
        )
    })?;
    if sc.plan_id != plan.id || sc.request_digest != plan.request_digest {
        return Err(ToolError::bad_argument(
            "The confirmation was for another plan or request: call launch_run again.",
        ));
    }
    let first_use = store
        .use_nonce(
            &sc.nonce,
            Utc::now() + chrono::Duration::from_std(CONFIRM_TTL).unwrap_or_default(),
        )
        .await
        .map_err(|e| ToolError::unavailable(format!("cannot record the confirmation: {e}")))?;
    if !first_use {
        audit(
            state,
            ask.tool,
            "replay_refused",
            Some(&plan.id),
            None,
            json!({}),
        )
        .await;
        return Err(ToolError::new(
            "This confirmation was already used: a confirmation answers one launch only. Call launch_run again.",
        ));
    }
    let accepted = call
        .input_responses
        .as_ref()
        .and_then(|r| r.get("confirm"))
        .and_then(|v| ElicitResult::deserialize(v).ok())
        .is_some_and(|r| {
            matches!(r.action, ElicitationAction::Accept)
                && r.content
                    .as_ref()
                    .and_then(|c| c.get("confirm"))
                    .and_then(Value::as_bool)
                    == Some(true)
        });
    if !accepted {
        return Err(declined(state, plan, ask, "input_required").await);
    }
    approved(state, store, plan, ask, "input_required").await
}

/// The legacy `elicitation/create` request.
async fn ask_elicitation(
    state: &AppState,
    store: &dyn StateStore,
    plan: &PlanRecord,
    ask: Ask<'_>,
    call: &Call,
) -> Result<(), ToolError> {
    match call.ctx.peer.elicit::<Confirm>(ask.question.clone()).await {
        Ok(Some(Confirm { confirm: true })) => {
            approved(state, store, plan, &ask, "elicitation").await
        }
        Ok(_)
        | Err(rmcp::service::ElicitationError::UserDeclined)
        | Err(rmcp::service::ElicitationError::UserCancelled) => {
            Err(declined(state, plan, &ask, "elicitation").await)
        }
        Err(e) => Err(ToolError::needs_person(format!(
            "Could not ask for confirmation ({e}). Run `factory-mcp approve {}` in a terminal, then call {} again.",
            plan.id, ask.tool
        ))),
    }
}

/// Record the yes (so a retry is not asked again) and audit it.
async fn approved(
    state: &AppState,
    store: &dyn StateStore,
    plan: &PlanRecord,
    ask: &Ask<'_>,
    via: &str,
) -> Result<(), ToolError> {
    store
        .record_decision(&plan.id, Decision::Approved, "elicitation")
        .await
        .map_err(|e| ToolError::unavailable(format!("cannot record the decision: {e}")))?;
    audit(
        state,
        ask.tool,
        "approved",
        Some(&plan.id),
        None,
        json!({"via": via}),
    )
    .await;
    Ok(())
}
