//! Asking a person before an irreversible or billable action. The caller says what is asked
//! ([`Ask`]); the words are the plan's stored summary (`factory_policies::summary`), so the
//! launch, resume and delete dialogs, the terminal and the tool errors all show the same
//! neutralised screen. The channel, and which recorded answers count as a person's yes, are
//! the policy's decisions (`factory_policies::confirmation`): the 2026-07-28 input-required
//! round trip (state sealed with the per-install key, bound to the tool, plan and request
//! digest, 5 minutes, single-use nonce), the legacy elicitation request, or an approval
//! recorded by `factory-mcp approve` on a person's terminal. Every decision is audited with
//! the channel it came through.

use std::time::Duration;

use chrono::Utc;
use factory_policies::{
    ConfirmMode,
    confirmation::{self, Action, Channel, Client, Via},
    store::{Decision, DecisionRecord, PlanRecord, StateStore},
    summary::{self, Summary, SummaryKind},
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
    /// What is asked: the question, the checkbox and the action's name follow from it.
    pub(crate) kind: SummaryKind,
    /// Appended to "call {tool} again" (e.g. the intent id).
    pub(crate) again_with: String,
}

impl Ask<'_> {
    pub(crate) fn noun(&self) -> &'static str {
        self.kind.noun()
    }
}

/// The text a person reads: the plan's structured summary rendered, or (for a plan stored
/// before summaries were structured) its stored text neutralised line by line.
pub(crate) fn summary_text(plan: &PlanRecord) -> String {
    Summary::from_plan_body(&plan.body)
        .map(|s| s.to_text())
        .unwrap_or_else(|| summary::plain_text_fallback(&plan.summary_text))
}

/// The dialog's message: the summary, then the question.
fn message(plan: &PlanRecord, ask: &Ask<'_>) -> String {
    format!("{}\n\n{}", summary_text(plan), ask.kind.question())
}

/// What a plan's `confirmation` field says will be needed (plan_run's answer).
pub(crate) fn plan_note(mode: ConfirmMode, tool: &str, plan_id: &str) -> String {
    match mode {
        ConfirmMode::Plan => format!(
            "plan mode: {tool} with this plan_id dispatches without asking (cost caps apply)"
        ),
        ConfirmMode::Human => format!(
            "a person must confirm: {tool} asks through your client's confirmation dialog when it has one; otherwise the person approves in their own terminal with `factory-mcp approve {plan_id}`, then {tool} is called again"
        ),
        ConfirmMode::OutOfBand => format!(
            "a person must confirm outside this client (policy confirm = \"out_of_band\"): the person approves in their own terminal with `factory-mcp approve {plan_id}`, then {tool} is called again"
        ),
    }
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
struct Confirm {
    /// Tick to approve what the message above describes.
    confirm: bool,
}
rmcp::elicit_safe!(Confirm);

/// The state an input-required round trip carries (the form's here, the page's in
/// `approval_page::ask`): sealed with the per-install key, bound by its associated data to the
/// channel, tool, plan and request digest, valid for a TTL, and single-use by its nonce.
#[derive(Debug, Serialize, Deserialize)]
struct SealedState {
    plan_id: String,
    request_digest: String,
    nonce: String,
}

/// What [`open_state`] found in a sealed state that came back.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Opened {
    /// Ours, for this plan and request, first use: go on.
    Fresh,
    /// Not sealed by us for this binding, tampered with, or expired.
    Invalid,
    /// Sealed by us but not a state we can read.
    Unreadable,
    /// Sealed for another plan or request digest.
    OtherPlan,
    /// Already used once.
    Replayed,
}

/// Seals a new round-trip state for `plan`, bound to `binding` (the associated data).
pub(crate) async fn seal_state(
    store: &dyn StateStore,
    plan: &PlanRecord,
    binding: &str,
    ttl: std::time::Duration,
) -> Result<String, ToolError> {
    let codec = codec(store).await?;
    let sealed = SealedState {
        plan_id: plan.id.clone(),
        request_digest: plan.request_digest.clone(),
        nonce: ids::nonce(),
    };
    let payload = serde_json::to_vec(&sealed).map_err(|e| ToolError::new(e.to_string()))?;
    Ok(codec.seal_with(
        &payload,
        &SealOptions::new()
            .associated_data(binding.as_bytes())
            .ttl(ttl),
    ))
}

/// Opens a round-trip state that came back for `plan` under `binding`, spending its nonce
/// when it is otherwise good.
pub(crate) async fn open_state(
    store: &dyn StateStore,
    plan: &PlanRecord,
    binding: &str,
    ttl: std::time::Duration,
    sealed: &str,
) -> Result<Opened, ToolError> {
    let codec = codec(store).await?;
    let Ok(payload) = codec.open_with(sealed, binding.as_bytes()) else {
        return Ok(Opened::Invalid);
    };
    let Ok(state) = serde_json::from_slice::<SealedState>(&payload) else {
        return Ok(Opened::Unreadable);
    };
    if state.plan_id != plan.id || state.request_digest != plan.request_digest {
        return Ok(Opened::OtherPlan);
    }
    let first_use = store
        .use_nonce(
            &state.nonce,
            Utc::now() + chrono::Duration::from_std(ttl).unwrap_or_default(),
        )
        .await
        .map_err(|e| ToolError::unavailable(format!("cannot record the confirmation: {e}")))?;
    Ok(if first_use {
        Opened::Fresh
    } else {
        Opened::Replayed
    })
}

/// Whether `action` needs a person under this server's policy (before any client question).
pub(crate) fn person_needed(state: &AppState, action: Action) -> bool {
    confirmation::person_needed(state.policy.confirm, action)
}

/// Ask a person. `Ok(None)`: confirmed, go on. `Ok(Some(resp))`: answer the client with this
/// (the input-required round trip). `Err`: refused, or waiting for a person.
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
        match recorded(state.policy.confirm, &d, plan, &ask) {
            Recorded::Yes => return Ok(None),
            Recorded::No(e) => return Err(e),
            Recorded::DoesNotCount => {}
        }
    }
    // URL-mode elicitation (either era) goes to the approval page (`approval_page`).
    let url_mode = call
        .ctx
        .client_capabilities()
        .is_some_and(|c| c.elicitation.as_ref().is_some_and(|e| e.url.is_some()));
    let channel = confirmation::channel_with_modes(
        state.policy.confirm,
        ask.action,
        client_of(call),
        url_mode,
    );
    // Under OAuth: only a caller holding the approving scope answers in the client.
    let caller = crate::server::caller_of(&call.ctx);
    match factory_policies::scopes::channel_for_caller(
        channel,
        caller
            .as_ref()
            .map(|c| c.may(factory_policies::scopes::Access::Approve)),
        state
            .policy
            .oauth
            .as_ref()
            .is_some_and(|o| o.page_client_id.is_some()),
    ) {
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
        Channel::ApproveCommand => Err(waiting_for_terminal(state, plan, &ask).await),
    }
}

fn client_of(call: &Call) -> Client {
    let ctx = &call.ctx;
    Client {
        modern: ctx
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28),
        can_elicit: ctx
            .client_capabilities()
            .is_some_and(|c| c.elicitation.is_some()),
    }
}

/// What a recorded decision means now.
enum Recorded {
    Yes,
    No(ToolError),
    /// An approval through a channel the policy does not take (a form, under out_of_band).
    DoesNotCount,
}

fn recorded(mode: ConfirmMode, d: &DecisionRecord, plan: &PlanRecord, ask: &Ask<'_>) -> Recorded {
    match d.decision {
        Decision::Approved if confirmation::counts_as_yes(mode, &d.via) => Recorded::Yes,
        Decision::Approved => Recorded::DoesNotCount,
        Decision::Refused => Recorded::No(ToolError::new(format!(
            "The {} of plan {} was refused by a person ({}, {}): nothing was done. If the person still wants it, they can approve it in their own terminal with `factory-mcp approve {}`; otherwise make a new plan.",
            ask.noun(),
            plan.id,
            d.via,
            d.decided_at.format("%Y-%m-%d %H:%M:%S UTC"),
            plan.id
        ))),
    }
}

/// No dialog can carry a person's yes here: the person approves in their own terminal. The
/// words address the person's action; the assistant's part is to ask and call again.
async fn waiting_for_terminal(state: &AppState, plan: &PlanRecord, ask: &Ask<'_>) -> ToolError {
    crate::meter::confirmation(crate::meter::Confirmation::Pending);
    audit(
        state,
        ask.tool,
        "needs_approval",
        Some(&plan.id),
        None,
        json!({"channel": "terminal"}),
    )
    .await;
    let why = if state.policy.confirm == ConfirmMode::OutOfBand {
        "this server takes a yes only from outside the client (policy confirm = \"out_of_band\")"
    } else {
        "this client cannot show a confirmation dialog"
    };
    ToolError::needs_person(format!(
        "Waiting for a person: this {noun} needs a person's approval, and {why}. Nothing was done. Ask the person to approve it themselves, in their own terminal: `factory-mcp approve {id}` shows them the summary below and asks them to type a code it prints there (it refuses to run without a person at a terminal); `factory-mcp approve {id} --page` prints the address of the approval page there instead, to decide in their browser. When they have answered, call {tool} again{again}.\n\n{summary}",
        noun = ask.noun(),
        id = plan.id,
        tool = ask.tool,
        again = ask.again_with,
        summary = summary_text(plan),
    ))
}

/// A "no" in either dialog: audited under the calling tool, nothing done.
async fn declined(state: &AppState, plan: &PlanRecord, ask: &Ask<'_>, via: Via) -> ToolError {
    crate::meter::confirmation(crate::meter::Confirmation::Declined);
    audit(
        state,
        ask.tool,
        "declined",
        Some(&plan.id),
        None,
        json!({"channel": via.as_str(), "at": Utc::now().to_rfc3339()}),
    )
    .await;
    ToolError::new(format!(
        "The {} of plan {} was declined in the client's dialog: nothing was done{}. Call {} again only if the person asks for it{}.",
        ask.noun(),
        plan.id,
        if ask.action == Action::Launch {
            " and nothing is billed"
        } else {
            ""
        },
        ask.tool,
        if ask.action == Action::Launch {
            "; if they want something different, change what they objected to and make a new plan with plan_run"
        } else {
            ""
        }
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
    let state_str = seal_state(store, plan, &associated_data(ask, plan), CONFIRM_TTL).await?;
    let schema = serde_json::from_value(json!({
        "type": "object",
        "properties": {"confirm": {"type": "boolean", "title": "Approve", "description": ask.kind.tick()}},
        "required": ["confirm"]
    }))
    .map_err(|e: serde_json::Error| ToolError::new(e.to_string()))?;
    let mut reqs = InputRequests::new();
    reqs.insert(
        "confirm".into(),
        InputRequest::Elicitation(ElicitRequest::new(
            ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: message(plan, ask),
                requested_schema: schema,
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
        json!({"channel": Via::InputRequired.as_str()}),
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
    let tool = ask.tool;
    match open_state(
        store,
        plan,
        &associated_data(ask, plan),
        CONFIRM_TTL,
        sealed,
    )
    .await?
    {
        Opened::Fresh => {}
        Opened::Invalid => {
            crate::meter::confirmation(crate::meter::Confirmation::Expired);
            return Err(ToolError::bad_argument(format!(
                "The confirmation state is invalid, tampered with or expired: call {tool} again so that the person is asked afresh. Nothing was done."
            )));
        }
        Opened::Unreadable => {
            return Err(ToolError::bad_argument(format!(
                "The confirmation state is unreadable: call {tool} again. Nothing was done."
            )));
        }
        Opened::OtherPlan => {
            return Err(ToolError::bad_argument(format!(
                "The confirmation was for another plan or request: call {tool} again. Nothing was done."
            )));
        }
        Opened::Replayed => {
            crate::meter::confirmation(crate::meter::Confirmation::Replayed);
            audit(
                state,
                tool,
                "replay_refused",
                Some(&plan.id),
                None,
                json!({"channel": Via::InputRequired.as_str()}),
            )
            .await;
            return Err(ToolError::new(format!(
                "This confirmation was already used: a confirmation answers one {} only. Call {tool} again. Nothing was done.",
                ask.noun()
            )));
        }
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
        return Err(declined(state, plan, ask, Via::InputRequired).await);
    }
    approved(state, store, plan, ask, Via::InputRequired).await
}

/// The legacy `elicitation/create` request.
async fn ask_elicitation(
    state: &AppState,
    store: &dyn StateStore,
    plan: &PlanRecord,
    ask: Ask<'_>,
    call: &Call,
) -> Result<(), ToolError> {
    match call.ctx.peer.elicit::<Confirm>(message(plan, &ask)).await {
        Ok(Some(Confirm { confirm: true })) => approved(state, store, plan, &ask, Via::Form).await,
        Ok(_)
        | Err(rmcp::service::ElicitationError::UserDeclined)
        | Err(rmcp::service::ElicitationError::UserCancelled) => {
            Err(declined(state, plan, &ask, Via::Form).await)
        }
        Err(e) => Err(ToolError::needs_person(format!(
            "Could not show the confirmation dialog ({e}). Nothing was done. Ask the person to approve it themselves, in their own terminal, with `factory-mcp approve {}`; then call {} again{}.",
            plan.id, ask.tool, ask.again_with
        ))),
    }
}

/// Record the yes with its channel (so a retry is not asked again) and audit it.
async fn approved(
    state: &AppState,
    store: &dyn StateStore,
    plan: &PlanRecord,
    ask: &Ask<'_>,
    via: Via,
) -> Result<(), ToolError> {
    let subject = crate::audit::current_subject();
    store
        .record_decision_as(
            &plan.id,
            Decision::Approved,
            via.as_str(),
            subject.as_deref(),
        )
        .await
        .map_err(|e| ToolError::unavailable(format!("cannot record the decision: {e}")))?;
    crate::meter::confirmation(crate::meter::Confirmation::Approved);
    audit(
        state,
        ask.tool,
        "approved",
        Some(&plan.id),
        None,
        json!({"channel": via.as_str(), "at": Utc::now().to_rfc3339()}),
    )
    .await;
    Ok(())
}
