//! The launch toolset: `plan_run` (validate, resolve, price, check budgets and duplicates,
//! store a plan; no platform change), `launch_run` and `resume_run` (settle an earlier
//! dispatch, re-check, confirm, dispatch once). Decisions come from `factory_policies`
//! (`launch`, `duplicates`, `overrides`, `forwarding`, `confirmation`, `dispatch`); durable
//! state from `factory_policies::store`.
//!
//! `plan` and `resume` make plans; `checks` asks the owner's account (GPU types, capacity,
//! cached weights) and the platform's `prepare`; `identity` gives the launch identities the
//! duplicate decision compares; `request` builds the typed request a plan stores and the
//! wire request a dispatch sends; `summary` writes the plan's screen; `run` is the shared
//! pipeline of `launch_run`/`resume_run`; `reconcile` settles a dispatch in doubt;
//! `dispatch` sends it once; `volumes` creates a plan's volume once.

pub(crate) mod checks;
mod dispatch;
mod identity;
mod plan;
mod reconcile;
mod request;
mod resume;
mod run;
mod summary;
mod volumes;

pub(crate) use summary::owner_line;

use factory_platform::wire::runs::{ResumeSpec, RunSpec};
use factory_policies::launch::Price;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{catalogue, server::ServerTool, state::AppState};

pub(crate) fn tools() -> Vec<ServerTool<AppState>> {
    vec![
        ServerTool::new(&catalogue::PLAN_RUN, plan::plan_run),
        ServerTool::new(&catalogue::LAUNCH_RUN, run::launch_run),
        ServerTool::new(&catalogue::RESUME_RUN, run::resume_run),
    ]
}

/// A plan's kind: a new run from a config.
const KIND_LAUNCH: &str = "launch";
/// A plan's kind: a new run from a paused one.
const KIND_RESUME: &str = "resume";

/// The request a plan will send, without secret values. Stored untagged: a create request
/// always carries `config`, a resume request never does.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum PlannedRequest {
    Create(RunSpec),
    Resume(ResumeSpec),
}

impl PlannedRequest {
    /// The request as the plan shows it (the wire's keys and casing, no secrets).
    pub(crate) fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    pub(crate) fn image_tag(&self) -> Option<&str> {
        match self {
            PlannedRequest::Create(r) => r.image_tag.as_deref(),
            PlannedRequest::Resume(r) => r.image_tag.as_deref(),
        }
    }

    pub(crate) fn source_ref(&self) -> Option<&str> {
        match self {
            PlannedRequest::Create(r) => r.source_ref.as_deref(),
            PlannedRequest::Resume(_) => None,
        }
    }
}

/// Everything about a plan that `launch_run` needs, stored with it (no secret values).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct PlanBody {
    /// The request, without secret values (its wire shape is the platform's).
    pub(crate) request: PlannedRequest,
    pub(crate) env_names: Vec<String>,
    pub(crate) run_name: String,
    pub(crate) run_name_generated: bool,
    pub(crate) team_id: Option<String>,
    /// The team's name as the platform lists it (shown beside the id; untrusted text).
    #[serde(default)]
    pub(crate) team_name: Option<String>,
    pub(crate) owner_label: String,
    pub(crate) owner_source: String,
    pub(crate) config_path: Option<String>,
    pub(crate) config_sha256: Option<String>,
    pub(crate) config_digest: String,
    pub(crate) volume: Option<VolumePlan>,
    pub(crate) mode: String,
    pub(crate) model: Option<String>,
    pub(crate) gpu_type: Option<String>,
    pub(crate) gpus: Option<u64>,
    pub(crate) max_steps: Option<i64>,
    pub(crate) price: Price,
    pub(crate) overrides: Vec<String>,
    pub(crate) blocked: Option<String>,
    /// Runs of the owner that already carried the run name when the plan was made: never
    /// taken for this plan's run when reconciling.
    #[serde(default)]
    pub(crate) preexisting_same_name: Vec<String>,
    /// `launch` (a new run from a config) or `resume` (a new run from a paused one).
    #[serde(default = "default_kind")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) resume_from: Option<String>,
}

fn default_kind() -> String {
    KIND_LAUNCH.into()
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VolumePlan {
    pub name: String,
    pub size: String,
    /// The volume does not exist: launch_run creates it (billable).
    pub create: bool,
}
