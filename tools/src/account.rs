//! Account and discovery tools: `whoami`, `list_teams`, `list_models`, `list_gpus`.

use std::sync::Arc;

use factory_platform::TeamScope;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    catalogue, owner,
    reply::{Outcome, ToolResult},
    server::{Call, ServerTool},
    state::{AppState, platform_error},
};

pub(crate) fn tools() -> Vec<ServerTool<AppState>> {
    vec![
        ServerTool::new(&catalogue::WHOAMI, whoami),
        ServerTool::new(&catalogue::LIST_TEAMS, list_teams),
        ServerTool::new(&catalogue::LIST_MODELS, list_models),
        ServerTool::new(&catalogue::LIST_GPUS, list_gpus),
    ]
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WhoamiOut {
    pub user: UserOut,
    /// The active team, or null when none is chosen (see `owner` for who calls act for).
    pub team: Option<TeamOut>,
    /// Who calls without `team_id` or `personal` act for, and every owner the key can act for.
    pub owner: OwnerOut,
    pub base_url: String,
    pub traces_url: String,
    /// The API key, masked to at most its last 4 characters.
    pub api_key: String,
    /// Where the API key came from.
    pub api_key_source: String,
    /// True when the platform is the embedded sandbox, not the real service.
    pub sandbox: bool,
    pub policy: PolicyOut,
    /// The owner's active runs, their hourly rates, and how far they are from the policy's limits.
    pub spend: SpendOut,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct OwnerOut {
    /// `team` (a team is chosen), `personal` (no team is chosen and the key has none), or
    /// `ambiguous` (no team is chosen but the key can act for teams: plans need `team_id` or
    /// `personal: true`; listings cover every owner).
    pub standing: String,
    /// The owner as a person reads it, e.g. "team cteam… (Team A)" or "personal account".
    pub label: String,
    /// Every owner the key can act for (as the policy's allowed_teams lets this server see).
    pub can_act_for: Vec<String>,
    /// Why the list of owners is missing, if it is.
    pub note: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SpendOut {
    /// Whose runs these are: one owner, or every owner when the owner is ambiguous.
    pub scope: String,
    pub active_runs: Vec<ActiveRunOut>,
    pub total_per_hour_usd: f64,
    /// Some rates are estimates (GPU count × the price of the run's GPU type).
    pub estimated: bool,
    pub limits: Vec<LimitOut>,
    /// Why the figures are missing or partial, if they are.
    pub note: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ActiveRunOut {
    pub id: String,
    pub name: Option<String>,
    pub status: String,
    pub rate_per_hour_usd: Option<f64>,
    pub estimated: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LimitOut {
    /// The policy key.
    pub key: String,
    pub limit: f64,
    pub used: f64,
    /// limit − used (negative when over).
    pub headroom: f64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct UserOut {
    pub id: Option<String>,
    pub name: Option<String>,
    pub email: Option<String>,
    pub slug: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TeamOut {
    pub id: String,
    /// env (PRIME_TEAM_ID), config (~/.prime), or server.
    pub source: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PolicyOut {
    pub confirm: String,
    pub read_only: bool,
    pub disable_destructive: bool,
    pub allowed_teams: Option<Vec<String>>,
    pub allowed_gpu_types: Option<Vec<String>>,
    pub max_gpus_per_run: Option<u32>,
    pub max_cost_per_hour_usd: Option<f64>,
    pub max_active_runs: Option<u32>,
    pub max_active_cost_per_hour_usd: Option<f64>,
    pub max_steps: Option<u64>,
}

async fn whoami(state: Arc<AppState>, _args: NoArgs, _call: Call) -> ToolResult<WhoamiOut> {
    let platform = state.platform()?;
    let (user, owners) = tokio::join!(platform.whoami(), owner::owners(&state, platform));
    let user = user.map_err(|e| platform_error("read the current user", &e))?;
    let settings = platform.settings();
    let team = settings.team.as_ref().map(|t| TeamOut {
        id: t.id.clone(),
        source: t.source.to_string(),
    });
    let (owner, spend_owners, spend_scope) = owner_standing(settings.team.as_ref(), owners);
    let spend = spend(&state, platform, &spend_owners, spend_scope).await;
    let p = &state.policy;
    let out = WhoamiOut {
        user: UserOut {
            id: user.id,
            name: user.name,
            email: user.email,
            slug: user.slug,
        },
        team,
        owner,
        base_url: settings.base_url.clone(),
        traces_url: settings.traces_url.clone(),
        api_key: settings.masked_api_key().unwrap_or_else(|| "(none)".into()),
        api_key_source: settings.api_key_source.to_string(),
        sandbox: state.sandbox,
        policy: PolicyOut {
            confirm: p.confirm.to_string(),
            read_only: p.read_only,
            disable_destructive: p.disable_destructive,
            allowed_teams: p.allowed_teams.clone(),
            allowed_gpu_types: p.allowed_gpu_types.clone(),
            max_gpus_per_run: p.max_gpus_per_run,
            max_cost_per_hour_usd: p.max_cost_per_hour_usd,
            max_active_runs: p.max_active_runs,
            max_active_cost_per_hour_usd: p.max_active_cost_per_hour_usd,
            max_steps: p.max_steps,
        },
        spend,
    };
    let who = factory_policies::untrusted::one_line(
        &out.user
            .name
            .clone()
            .or(out.user.email.clone())
            .unwrap_or_else(|| "unknown user".into()),
        80,
    );
    let where_ = if state.sandbox { " (sandbox)" } else { "" };
    let spend_line = format!(
        "; {} active run(s) at {}/h{}",
        out.spend.active_runs.len(),
        crate::figures::usd(out.spend.total_per_hour_usd),
        if out.spend.estimated {
            " (partly estimated)"
        } else {
            ""
        }
    );
    let acting = match out.owner.standing.as_str() {
        "ambiguous" => format!(
            "owner ambiguous — this key can act for {}; no team is chosen, so a plan needs team_id or personal: true, and list_runs without either lists every owner",
            out.owner.can_act_for.join(", ")
        ),
        _ => format!("acting for the {}", out.owner.label),
    };
    Ok(Outcome::done(
        format!("{who}, {acting}{where_}{spend_line}"),
        out,
    ))
}

/// Who argument-less calls act for, the owners whose spend `whoami` shows, and that scope's
/// name. A list of owners that could not be read leaves the owner as the settings say.
fn owner_standing(
    active: Option<&factory_platform::ActiveTeam>,
    owners: Result<owner::Owners, crate::error::ToolError>,
) -> (OwnerOut, Vec<Option<String>>, String) {
    let owners = match owners {
        Ok(o) => o,
        Err(e) => {
            let team = active.map(|t| t.id.clone());
            let label = owner::owner_label(team.as_deref(), None);
            return (
                OwnerOut {
                    standing: if team.is_some() { "team" } else { "personal" }.into(),
                    label: label.clone(),
                    can_act_for: Vec::new(),
                    note: Some(format!(
                        "the teams this key can act for are unknown ({}); with teams and no team chosen, the owner would be ambiguous",
                        e.message
                    )),
                },
                vec![team],
                label,
            );
        }
    };
    let can_act_for: Vec<String> = owners.all.iter().map(owner::OwnerRef::label).collect();
    let name_of = |team: &str| {
        owners
            .all
            .iter()
            .find(|o| o.team.as_deref() == Some(team))
            .and_then(|o| o.name.clone())
    };
    match &owners.standing {
        owner::Standing::ActiveTeam { team, source } => {
            let label = owner::owner_label(Some(team), name_of(team).as_deref());
            (
                OwnerOut {
                    standing: "team".into(),
                    label: format!("{label}, from {source}"),
                    can_act_for,
                    note: None,
                },
                vec![Some(team.clone())],
                label,
            )
        }
        owner::Standing::Personal => (
            OwnerOut {
                standing: "personal".into(),
                label: "personal account".into(),
                can_act_for,
                note: None,
            },
            vec![None],
            "personal account".into(),
        ),
        owner::Standing::Ambiguous => (
            OwnerOut {
                standing: "ambiguous".into(),
                label: "ambiguous: no team is chosen and the key can act for teams".into(),
                note: Some(
                    "Plans need team_id or personal: true; a person can set PRIME_TEAM_ID (or `prime config set-team-id`) for the server to choose a team.".into(),
                ),
                can_act_for,
            },
            owners.all.iter().map(|o| o.team.clone()).collect(),
            owners.scope_text(),
        ),
    }
}

/// Active spend of the given owners together, against the policy's active-run limits.
async fn spend(
    state: &AppState,
    platform: &factory_platform::PlatformClient,
    owners: &[Option<String>],
    scope: String,
) -> SpendOut {
    let mut active = Vec::new();
    for team in owners {
        let team_scope = crate::owner::scope_of(team);
        let (runs, models) = tokio::join!(
            crate::spend::owner_runs(state, platform, team),
            platform.available_models(&team_scope)
        );
        let (runs, models) = match (runs, models) {
            (Ok(r), Ok(m)) => (r, m),
            (Err(e), _) => return empty_spend(scope, e.message),
            (_, Err(e)) => return empty_spend(scope, format!("cannot price active runs: {e}")),
        };
        active.extend(crate::spend::active_spend(state, runs.unfinished(), &models).await);
    }
    let total: f64 = active.iter().filter_map(|a| a.rate_per_hour_usd).sum();
    let mut limits = Vec::new();
    if let Some(cap) = state.policy.max_active_cost_per_hour_usd {
        limits.push(LimitOut {
            key: "max_active_cost_per_hour_usd".into(),
            limit: cap,
            used: crate::figures::cents(total),
            headroom: crate::figures::cents(cap - total),
        });
    }
    if let Some(cap) = state.policy.max_active_runs {
        let used = active.len() as f64;
        limits.push(LimitOut {
            key: "max_active_runs".into(),
            limit: f64::from(cap),
            used,
            headroom: f64::from(cap) - used,
        });
    }
    SpendOut {
        scope,
        estimated: active.iter().any(|a| a.estimated),
        active_runs: active
            .into_iter()
            .map(|a| ActiveRunOut {
                id: a.id,
                name: a.name,
                status: a.status,
                rate_per_hour_usd: a.rate_per_hour_usd.map(crate::figures::cents),
                estimated: a.estimated,
            })
            .collect(),
        total_per_hour_usd: crate::figures::cents(total),
        limits,
        note: None,
    }
}

fn empty_spend(scope: String, note: String) -> SpendOut {
    SpendOut {
        scope,
        active_runs: Vec::new(),
        total_per_hour_usd: 0.0,
        estimated: false,
        limits: Vec::new(),
        note: Some(note),
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TeamsOut {
    pub teams: Vec<TeamItem>,
    pub total: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TeamItem {
    pub team_id: String,
    pub name: String,
    pub slug: Option<String>,
    pub role: Option<String>,
    pub created_at: Option<String>,
}

async fn list_teams(state: Arc<AppState>, _args: NoArgs, _call: Call) -> ToolResult<TeamsOut> {
    let teams = state
        .platform()?
        .list_all_teams()
        .await
        .map_err(|e| platform_error("list teams", &e))?;
    let teams: Vec<TeamItem> = teams
        .into_iter()
        .map(|t| TeamItem {
            team_id: t.team_id,
            name: t.name,
            slug: t.slug,
            role: t.role,
            created_at: t.created_at,
        })
        .collect();
    let total = teams.len();
    Ok(Outcome::done(
        format!("{total} team(s)"),
        TeamsOut { teams, total },
    ))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OwnerArgs {
    /// Team to act for (overrides the active team).
    pub team_id: Option<String>,
    /// Act for the personal account even when a team is active.
    pub personal: Option<bool>,
}

impl OwnerArgs {
    fn scope(&self, state: &AppState) -> Result<TeamScope, crate::reply::ToolError> {
        owner::scope(self.team_id.as_deref(), self.personal, &state.policy)
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ModelsOut {
    pub models: Vec<ModelItem>,
    pub on_demand: Vec<OfferItem>,
    /// Whether the owner may launch on-demand (beta) capacity; null when the platform did not say.
    pub on_demand_beta_access: Option<bool>,
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ModelItem {
    pub name: String,
    pub clusters: Vec<ClusterItem>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ClusterItem {
    pub cluster_id: String,
    pub cluster_name: String,
    pub gpu_type: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct OfferItem {
    pub gpu_type: String,
    pub price_per_gpu_hour: f64,
    pub available_now: Option<bool>,
    pub is_beta: Option<bool>,
    pub discount_label: Option<String>,
}

async fn list_models(state: Arc<AppState>, args: OwnerArgs, _call: Call) -> ToolResult<ModelsOut> {
    let scope = args.scope(&state)?;
    let m = state
        .platform()?
        .available_models(&scope)
        .await
        .map_err(|e| platform_error("list trainable models", &e))?;
    let mut notes = Vec::new();
    if m.on_demand_beta_access == Some(false) {
        notes.push(
            "This owner has no on-demand (beta) access: runs use reserved capacity only.".into(),
        );
    }
    let out = ModelsOut {
        models: m
            .models
            .into_iter()
            .map(|model| ModelItem {
                name: model.name,
                clusters: model
                    .clusters
                    .into_iter()
                    .map(|c| ClusterItem {
                        cluster_id: c.cluster_id,
                        cluster_name: c.cluster_name,
                        gpu_type: c.gpu_type,
                    })
                    .collect(),
            })
            .collect(),
        on_demand: m.on_demand.into_iter().map(offer).collect(),
        on_demand_beta_access: m.on_demand_beta_access,
        notes,
    };
    Ok(Outcome::done(
        format!(
            "{} trainable model(s), {} on-demand GPU offer(s)",
            out.models.len(),
            out.on_demand.len()
        ),
        out,
    ))
}

fn offer(o: factory_platform::wire::account::OnDemandOffer) -> OfferItem {
    OfferItem {
        gpu_type: o.gpu_type,
        price_per_gpu_hour: o.price_per_gpu_hour,
        available_now: o.available_now,
        is_beta: o.is_beta,
        discount_label: o.discount_label,
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GpusOut {
    pub gpus: Vec<GpuItem>,
    pub notes: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GpuItem {
    pub gpu_type: String,
    /// On-demand price per GPU-hour in USD, when the platform offers this type on demand.
    pub price_per_gpu_hour: Option<f64>,
    pub available_now: Option<bool>,
    /// Whether the policy's allowed_gpu_types lets a plan use this type.
    pub allowed_by_policy: bool,
}

async fn list_gpus(state: Arc<AppState>, args: OwnerArgs, _call: Call) -> ToolResult<GpusOut> {
    let scope = args.scope(&state)?;
    let platform = state.platform()?;
    let (types, models) = tokio::join!(
        platform.gpu_types(&scope),
        platform.available_models(&scope)
    );
    let types = types.map_err(|e| platform_error("list GPU types", &e))?;
    let models = models.map_err(|e| platform_error("read on-demand GPU prices", &e))?;
    let allowed = state.policy.allowed_gpu_types.as_deref();
    let mut names = types.gpu_types;
    for o in &models.on_demand {
        if !names.contains(&o.gpu_type) {
            names.push(o.gpu_type.clone());
        }
    }
    let gpus: Vec<GpuItem> = names
        .into_iter()
        .map(|name| {
            let o = models.on_demand.iter().find(|o| o.gpu_type == name);
            GpuItem {
                price_per_gpu_hour: o.map(|o| o.price_per_gpu_hour),
                available_now: o.and_then(|o| o.available_now),
                allowed_by_policy: allowed.is_none_or(|a| a.iter().any(|x| x == &name)),
                gpu_type: name,
            }
        })
        .collect();
    let mut notes = Vec::new();
    if models.on_demand_beta_access == Some(false) {
        notes.push(
            "No on-demand (beta) access for this owner: runs use the owner's reserved capacity, which has no published price; the listed prices are on-demand offers this owner cannot use."
                .into(),
        );
    }
    Ok(Outcome::done(
        format!("{} GPU type(s)", gpus.len()),
        GpusOut { gpus, notes },
    ))
}
