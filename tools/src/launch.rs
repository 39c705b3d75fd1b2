//! The launch pipeline: `plan_run` (validate, resolve, price, check budgets and duplicates, store
//! a plan; no platform change), `launch_run` (duplicate guard, re-checks, human confirmation,
//! journalled dispatch, reconciliation after an ambiguous answer) and `stop_run`.
//!
//! Decisions come from `factory_policies::launch`; durable state from `factory_policies::store`.

use std::{sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use factory_platform::{
    ListRunsQuery, PlatformClient, TeamScope,
    wire::{account::AvailableModels, runs::CreateRunRequest, runs::ResumeRunRequest, runs::RlRun},
};
use factory_policies::{
    ConfirmMode,
    launch::{self, ActiveRun, PlanFigures, Price},
    store::{Claim, Decision, DispatchState, PlanRecord, Store, VolumeState},
};
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
    InputRequests, InputRequiredResult, ProtocolVersion, RequestStateCodec, SealOptions,
};
use schemars::JsonSchema;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::{
    reply::{Outcome, ToolError, ToolResult},
    runs::fetch_run,
    server::{Call, ToolDef, tool},
    state::{AppState, check_id, platform_error},
    validation::{self, ValidationInput},
};

pub fn tools() -> Vec<ToolDef<AppState>> {
    vec![
        tool("plan_run", plan_run),
        tool("launch_run", launch_run),
        tool("resume_run", resume_run),
        tool("stop_run", stop_run),
    ]
}

/// The only secrets a run can receive, by name.
pub const FORWARDABLE: [&str; 2] = ["WANDB_API_KEY", "HF_TOKEN"];
/// Top-level keys the CLI strips from the config before sending it (§6.4).
const CLI_ONLY_KEYS: [&str; 8] = [
    "env_file",
    "env_files",
    "image_tag",
    "gpu_type",
    "volume",
    "volume_size",
    "source_ref",
    "type",
];
/// How far back a run counts as "recent" for the duplicate warning.
const RECENT: chrono::Duration = chrono::Duration::hours(24);
/// How long a sealed confirmation stays valid.
const CONFIRM_TTL: Duration = Duration::from_secs(300);

fn store(state: &AppState) -> Result<&Store, ToolError> {
    state.store()
}

// ---------------------------------------------------------------------------------------------
// plan_run

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanRunArgs {
    /// Path of the prime-rl TOML under the workspace (or give config_toml).
    pub config_path: Option<String>,
    /// The TOML itself (or give config_path).
    pub config_toml: Option<String>,
    /// Team to launch for (else PRIME_TEAM_ID, then the saved team).
    pub team_id: Option<String>,
    /// Launch on the personal account even though the key can act for teams.
    pub personal: Option<bool>,
    /// GPU type, e.g. H200_141GB (overrides the TOML's gpu_type).
    pub gpu_type: Option<String>,
    /// Named volume for outputs (created if absent: a billable side effect).
    pub volume: Option<String>,
    /// Size of a volume to create, e.g. 500Gi (default 5Ti).
    pub volume_size: Option<String>,
    /// prime-rl image tag.
    pub image_tag: Option<String>,
    /// prime-rl branch, tag or commit to build from.
    pub source_ref: Option<String>,
    /// Names of secrets to forward: WANDB_API_KEY, HF_TOKEN. Never values.
    pub env: Option<Vec<String>>,
    /// Treat the config as SFT.
    pub sft: Option<bool>,
    /// Run name (else the TOML's name, else a generated unique one).
    pub run_name: Option<String>,
    /// Launch again although the last run of this config failed for a reason that would repeat.
    pub relaunch_after_failure: Option<bool>,
    /// Launch although an identical run is active.
    pub allow_duplicate: Option<bool>,
    /// A PAUSED run to resume as a new run (no config; only gpu_type, image_tag, env and the owner overrides apply). Launch it with resume_run.
    pub resume_from: Option<String>,
}

/// Everything about a plan that `launch_run` needs, stored with it (no secret values).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct PlanBody {
    /// The create-run body, without secret values.
    request: Value,
    env_names: Vec<String>,
    run_name: String,
    run_name_generated: bool,
    team_id: Option<String>,
    owner_label: String,
    owner_source: String,
    config_path: Option<String>,
    config_sha256: Option<String>,
    config_digest: String,
    volume: Option<VolumePlan>,
    mode: String,
    model: Option<String>,
    gpu_type: Option<String>,
    gpus: Option<u64>,
    max_steps: Option<i64>,
    price: Price,
    overrides: Vec<String>,
    blocked: Option<String>,
    /// Runs of the owner that already carried the run name when the plan was made: never
    /// taken for this plan's run when reconciling.
    #[serde(default)]
    preexisting_same_name: Vec<String>,
    /// `launch` (a new run from a config) or `resume` (a new run from a paused one).
    #[serde(default = "default_kind")]
    kind: String,
    #[serde(default)]
    resume_from: Option<String>,
}

fn default_kind() -> String {
    "launch".into()
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct VolumePlan {
    pub name: String,
    pub size: String,
    /// The volume does not exist: launch_run creates it (billable).
    pub create: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckItem {
    pub check: String,
    /// ok, warning or refused.
    pub status: String,
    pub detail: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DuplicateItem {
    pub run_id: String,
    pub name: Option<String>,
    pub status: String,
    pub created_at: String,
    /// active (blocks unless allow_duplicate), recent (a warning), or failed (blocks unless relaunch_after_failure when the failure would repeat).
    pub relation: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PlanOut {
    pub plan_id: String,
    pub expires_at: String,
    /// One screen for a human: owner, model, GPUs, price, side effects.
    pub summary: String,
    pub owner: Option<String>,
    pub mode: String,
    pub model: Option<String>,
    pub run_name: String,
    pub gpus: Option<u64>,
    pub gpu_type: Option<String>,
    pub price_per_hour_usd: Option<f64>,
    pub price_basis: String,
    pub volume: Option<VolumePlan>,
    pub env: Vec<String>,
    pub max_steps: Option<i64>,
    pub checks: Vec<CheckItem>,
    pub duplicates: Vec<DuplicateItem>,
    /// The launch is refused until this is resolved (null when launchable).
    pub blocked: Option<String>,
    /// What launch_run will need before it dispatches.
    pub confirmation: String,
    /// The create-run request that launch_run will send (secret values are added then).
    pub request: Value,
    pub request_digest: String,
    pub content_digest: String,
}

fn refuse(msg: impl Into<String>) -> ToolError {
    ToolError::new(msg)
}

/// The TOML and, for a file, its path and digest.
async fn read_config(
    state: &AppState,
    args: &PlanRunArgs,
) -> Result<(String, Option<String>, Option<String>), ToolError> {
    match (&args.config_path, &args.config_toml) {
        (Some(_), Some(_)) => Err(refuse(
            "`config_path` and `config_toml` exclude each other: pass one.",
        )),
        (None, None) => Err(refuse(
            "Pass the config: `config_path` (a TOML file under the workspace) or `config_toml` (its text).",
        )),
        (None, Some(text)) => Ok((text.clone(), None, None)),
        (Some(p), None) => {
            let path = state
                .workspace()?
                .resolve_existing(p)
                .map_err(|e| refuse(format!("config_path: {e}")))?;
            // Race-free, regular files only, capped at 1 MiB before reading (policies::files).
            let bytes = factory_policies::files::read_file(
                state.workspace()?,
                &path,
                factory_policies::files::ReadLimits::CONFIG,
            )
            .map_err(|e| refuse(format!("config_path: {e}")))?;
            let digest = launch::digest_bytes(&bytes);
            let text = String::from_utf8(bytes)
                .map_err(|_| refuse(format!("{} is not UTF-8 text", path.display())))?;
            Ok((text, Some(path.display().to_string()), Some(digest)))
        }
    }
}

/// TOML to JSON as the CLI's `json=` encoding would send it; dates cannot be encoded.
fn toml_to_json(v: &toml::Value, path: &str) -> Result<Value, ToolError> {
    Ok(match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => json!(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| refuse(format!("{path}: {f} cannot be sent as JSON")))?,
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(_) => {
            return Err(refuse(format!(
                "{path}: TOML dates cannot be sent to the platform (the CLI fails on them too); use a string"
            )));
        }
        toml::Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, x)| toml_to_json(x, &format!("{path}[{i}]")))
                .collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(t) => {
            let mut m = Map::new();
            for (k, x) in t {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                m.insert(k.clone(), toml_to_json(x, &p)?);
            }
            Value::Object(m)
        }
    })
}

/// The `config` the CLI sends: the TOML minus its CLI-only keys, with the deprecated
/// orchestrator keys dropped and `eval.eval_base_model` turned into `eval.skip_first_step`.
fn submission_config(doc: &toml::Table) -> Result<(Map<String, Value>, Vec<String>), ToolError> {
    let mut notes = Vec::new();
    let Value::Object(mut config) = toml_to_json(&toml::Value::Table(doc.clone()), "")? else {
        return Err(refuse("the config is not a table"));
    };
    for k in CLI_ONLY_KEYS {
        config.remove(k);
    }
    if let Some(Value::Object(orch)) = config.get_mut("orchestrator") {
        for k in ["trajectory_strategy", "trajectoryStrategy", "buffer"] {
            if orch.remove(k).is_some() {
                notes.push(format!(
                    "orchestrator.{k} is deprecated and was dropped, as the CLI does"
                ));
            }
        }
        if let Some(Value::Object(eval)) = orch.get_mut("eval")
            && let Some(v) = eval.remove("eval_base_model")
        {
            let skip = !v.as_bool().unwrap_or(true);
            eval.insert("skip_first_step".into(), Value::Bool(skip));
            notes.push(
                "orchestrator.eval.eval_base_model became eval.skip_first_step, as the CLI does"
                    .into(),
            );
        }
    }
    Ok((config, notes))
}

fn toml_str(doc: &toml::Table, key: &str) -> Option<String> {
    doc.get(key).and_then(|v| v.as_str()).map(str::to_owned)
}

fn generated_name(model: Option<&str>) -> String {
    let short: String = model
        .and_then(|m| m.rsplit('/').next())
        .unwrap_or("run")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(32)
        .collect();
    let suffix: String = (0..8)
        .map(|_| {
            let n = rand_u32() % 36;
            char::from_digit(n, 36).unwrap_or('0')
        })
        .collect();
    format!("{short}-{suffix}")
}

fn rand_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    // A fresh SipHash key per call: random enough for names and ids, no extra dependency.
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.finish() as u32
}

pub(crate) fn new_plan_id() -> String {
    let alphabet = b"abcdefghijklmnopqrstuvwxyz234567";
    let id: String = (0..20)
        .map(|_| alphabet[(rand_u32() % 32) as usize] as char)
        .collect();
    format!("plan_{id}")
}

/// The owner a plan launches for, and where that came from.
struct Owner {
    team: Option<String>,
    label: String,
    source: String,
}

async fn resolve_owner(
    state: &AppState,
    platform: &PlatformClient,
    args: &PlanRunArgs,
    overrides: &mut Vec<String>,
) -> Result<Owner, ToolError> {
    if args.team_id.is_some() && args.personal == Some(true) {
        return Err(refuse(
            "`team_id` and `personal: true` exclude each other: pass one.",
        ));
    }
    if let Some(team) = &args.team_id {
        check_id("team", team)?;
        return Ok(Owner {
            team: Some(team.clone()),
            label: format!("team {team}"),
            source: "the team_id argument".into(),
        });
    }
    if args.personal == Some(true) {
        overrides.push("personal".into());
        return Ok(Owner {
            team: None,
            label: "personal account".into(),
            source: "personal: true (set by the assistant)".into(),
        });
    }
    if let Some(team) = &platform.settings().team {
        return Ok(Owner {
            team: Some(team.id.clone()),
            label: format!("team {}", team.id),
            source: team.source.to_string(),
        });
    }
    let teams = platform
        .list_all_teams()
        .await
        .map_err(|e| platform_error("list teams to resolve the owner", &e))?;
    if !teams.is_empty() {
        let listed: Vec<String> = teams
            .iter()
            .map(|t| format!("{} ({})", t.team_id, t.name))
            .collect();
        return Err(refuse(format!(
            "Owner ambiguous: this key can act for teams [{}] and no team is chosen. Pass team_id, or personal: true to bill the personal account{}.",
            listed.join(", "),
            if state.policy.confirm == ConfirmMode::Plan && !state.policy.allow_model_overrides {
                " (personal is refused in plan mode unless the policy allows model overrides)"
            } else {
                ""
            }
        )));
    }
    Ok(Owner {
        team: None,
        label: "personal account".into(),
        source: "no team is set and the key has none".into(),
    })
}

pub(crate) fn scope_of(team: &Option<String>) -> TeamScope {
    match team {
        Some(t) => TeamScope::Team(t.clone()),
        None => TeamScope::Personal,
    }
}

/// The owner's runs, newest first, up to `pages` pages of 100.
pub(crate) async fn owner_runs(
    platform: &PlatformClient,
    team: &Option<String>,
    pages: u32,
) -> Result<Vec<RlRun>, ToolError> {
    let mut out = Vec::new();
    for page in 1..=pages {
        let p = platform
            .list_runs(&ListRunsQuery {
                page,
                limit: 100,
                team: scope_of(team),
                mine: false,
            })
            .await
            .map_err(|e| platform_error("list the owner's runs", &e))?;
        let n = p.runs.len();
        out.extend(p.runs);
        if n < 100 || p.total_pages.is_some_and(|tp| u64::from(page) >= tp) {
            break;
        }
    }
    Ok(out)
}

/// Active runs with their rates: journalled for runs we launched, estimated for the others.
pub(crate) fn active_spend(
    state: &AppState,
    runs: &[RlRun],
    models: &AvailableModels,
) -> Vec<ActiveRun> {
    let journalled: Vec<(String, Option<f64>)> = state
        .store()
        .ok()
        .and_then(|s| s.dispatched_runs().ok())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|d| match d.state {
            DispatchState::Dispatched { run_id, details } => Some((
                run_id,
                details.get("rate_per_hour_usd").and_then(Value::as_f64),
            )),
            _ => None,
        })
        .collect();
    runs.iter()
        .filter(|r| launch::is_active_status(&r.status))
        .map(|r| {
            let ours = journalled.iter().find(|(id, _)| id == &r.id);
            let (rate, estimated) = match ours {
                Some((_, Some(rate))) => (Some(*rate), false),
                _ => (launch::estimate_rate(r, models), true),
            };
            ActiveRun {
                id: r.id.clone(),
                name: r.name.clone(),
                status: r.status.clone(),
                created_at: r.created_at.clone(),
                rate_per_hour_usd: rate,
                estimated,
            }
        })
        .collect()
}

fn run_config_digest(run: &RlRun) -> Option<String> {
    run.run_config
        .as_ref()
        .and_then(Value::as_object)
        .map(launch::config_digest)
}

async fn plan_run(state: Arc<AppState>, args: PlanRunArgs, call: Call) -> ToolResult<PlanOut> {
    // 1. No secret value in any argument.
    if let Err(findings) = state.guard.check_json(&call.arguments, "arguments") {
        return Err(secret_refusal(&findings));
    }
    let env_names = check_env_names(&state, args.env.as_deref().unwrap_or_default())?;
    let mut overrides = Vec::new();
    for (flag, name) in [
        (args.relaunch_after_failure, "relaunch_after_failure"),
        (args.allow_duplicate, "allow_duplicate"),
    ] {
        if flag == Some(true) {
            overrides.push(name.to_string());
        }
    }
    if args.run_name.is_some() {
        overrides.push("run_name".into());
    }
    if args.resume_from.is_some() {
        return plan_resume(state, args, env_names, overrides).await;
    }

    // 2. The config: read, guard, validate with the argument overrides applied.
    let (text, config_path, config_sha) = read_config(&state, &args).await?;
    if let Err(findings) = state.guard.check_toml_str(&text, "config") {
        return Err(secret_refusal(&findings));
    }
    let mut doc = validation::parse(&text)
        .map_err(|e| refuse(format!("The config is not valid TOML: {e}")))?;
    for k in ["env_file", "env_files"] {
        if doc.contains_key(k) {
            return Err(refuse(format!(
                "The config sets `{k}`: secret files are refused. Remove it and pass the secrets by name in `env` (WANDB_API_KEY, HF_TOKEN); the server reads their values from its own environment."
            )));
        }
    }
    for (key, value) in [
        ("gpu_type", &args.gpu_type),
        ("volume", &args.volume),
        ("volume_size", &args.volume_size),
        ("image_tag", &args.image_tag),
        ("source_ref", &args.source_ref),
    ] {
        if let Some(v) = value {
            doc.insert(key.to_string(), toml::Value::String(v.clone()));
        }
    }
    let merged =
        toml::to_string(&doc).map_err(|e| refuse(format!("cannot re-encode the config: {e}")))?;
    let mut input = ValidationInput::new(merged);
    input.sft = args.sft.unwrap_or(false);
    input.forwarded_secrets = Some(env_names.clone());
    let mut report = validation::validate(input).await;

    let platform = state.platform()?;
    let owner = resolve_owner(&state, platform, &args, &mut overrides).await?;
    if state.policy.confirm == ConfirmMode::Plan && !state.policy.allow_model_overrides {
        let refused: Vec<&String> = overrides
            .iter()
            .filter(|o| o.as_str() != "run_name")
            .collect();
        if !refused.is_empty() {
            return Err(refuse(format!(
                "Refused in plan-confirmation mode: {} may not be set by the assistant unless the policy sets allow_model_overrides = true.",
                refused
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let scope = scope_of(&owner.team);
    let (models, volumes) = tokio::join!(
        platform.available_models(&scope),
        platform.list_volumes(&scope)
    );
    let models = models.map_err(|e| platform_error("list trainable models", &e))?;
    let volumes = volumes.map_err(|e| platform_error("list volumes", &e))?;
    validation::apply_account_facts(
        &mut report,
        &validation::AccountFacts {
            trainable_models: Some(models.models.iter().map(|m| m.name.clone()).collect()),
            gpu_types: Some(
                models
                    .on_demand
                    .iter()
                    .map(|o| o.gpu_type.clone())
                    .collect(),
            ),
            volumes: Some(volumes.iter().map(|v| v.name.clone()).collect()),
            prepare_schema_commit: None,
            prior_runs: None,
        },
    );
    let errors: Vec<String> = report
        .findings
        .iter()
        .filter(|f| f.severity == validation::FindingSeverity::Error)
        .map(|f| {
            format!(
                "{}: {}{}",
                if f.path.is_empty() {
                    "(config)"
                } else {
                    &f.path
                },
                f.message,
                f.hint
                    .as_ref()
                    .map(|h| format!(" — {h}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    if !errors.is_empty() {
        return Err(refuse(format!(
            "The config has {} error(s); nothing was planned:\n- {}\nFix them (validate_config shows every finding) and plan again.",
            errors.len(),
            errors.join("\n- ")
        )));
    }
    let mode = report.mode.as_str().to_string();
    let sft = mode == "sft";

    // 3. The request, exactly as launch_run will send it (secret values added then).
    let (mut config, notes) = submission_config(&doc)?;
    let (run_name, generated) = match (&args.run_name, toml_str(&doc, "name")) {
        (Some(n), _) => (n.clone(), false),
        (None, Some(n)) if !n.trim().is_empty() => (n, false),
        _ => (generated_name(report.summary.model.as_deref()), true),
    };
    config.insert("name".into(), Value::String(run_name.clone()));
    let config_digest = launch::config_digest(&config);
    let gpu_type = args.gpu_type.clone().or_else(|| toml_str(&doc, "gpu_type"));
    let image_tag = args
        .image_tag
        .clone()
        .or_else(|| toml_str(&doc, "image_tag"));
    let source_ref = args
        .source_ref
        .clone()
        .or_else(|| toml_str(&doc, "source_ref"));
    let volume_name = args.volume.clone().or_else(|| toml_str(&doc, "volume"));
    let volume_size = args
        .volume_size
        .clone()
        .or_else(|| toml_str(&doc, "volume_size"));
    if volume_size.is_some() && volume_name.is_none() {
        return Err(refuse(
            "`volume_size` needs `volume` (the volume to create).",
        ));
    }
    let mut request = Map::new();
    request.insert("config".into(), Value::Object(config));
    if sft {
        request.insert("mode".into(), json!("sft"));
    }
    request.insert("name".into(), json!(run_name));
    if let Some(t) = &owner.team {
        request.insert("teamId".into(), json!(t));
    }
    for (k, v) in [
        ("imageTag", &image_tag),
        ("gpuType", &gpu_type),
        ("volume", &volume_name),
        ("sourceRef", &source_ref),
    ] {
        if let Some(v) = v {
            request.insert(k.into(), json!(v));
        }
    }
    let request = Value::Object(request);
    let volume = volume_name.as_ref().map(|name| {
        let exists = volumes.iter().any(|v| &v.name == name);
        VolumePlan {
            name: name.clone(),
            size: if exists {
                "existing".into()
            } else {
                volume_size.clone().unwrap_or_else(|| "5Ti".into())
            },
            create: !exists,
        }
    });

    // 4. Price and budgets.
    let gpus = report.summary.gpus.total;
    let price = launch::price(
        &models,
        report.summary.model.as_deref(),
        gpu_type.as_deref(),
        gpus,
    );
    let runs = owner_runs(platform, &owner.team, 5).await?;
    let active = active_spend(&state, &runs, &models);
    let figures = PlanFigures {
        team: owner.team.as_deref(),
        gpu_type: gpu_type.as_deref(),
        gpus,
        per_hour_usd: price.per_hour_usd,
        max_steps: report.summary.max_steps,
    };
    enforce_budgets(
        &state.policy,
        &figures,
        &active,
        "Refused by the policy",
        "Change the config or ask the operator to change the policy.",
    )?;

    // 5. Duplicates and repeated failures.
    let mut checks = Vec::new();
    let mut duplicates = Vec::new();
    let now = Utc::now();
    let same: Vec<&RlRun> = runs
        .iter()
        .filter(|r| run_config_digest(r).as_deref() == Some(config_digest.as_str()))
        .collect();
    let mut blocked = None;
    for r in &same {
        let relation = if launch::is_active_status(&r.status) {
            "active"
        } else if r.created_at_utc().is_some_and(|t| now - t < RECENT) {
            "recent"
        } else {
            continue;
        };
        duplicates.push(DuplicateItem {
            run_id: r.id.clone(),
            name: r.name.clone(),
            status: r.status.clone(),
            created_at: r.created_at.clone(),
            relation: relation.into(),
        });
    }
    let active_dups: Vec<&DuplicateItem> = duplicates
        .iter()
        .filter(|d| d.relation == "active")
        .collect();
    if !active_dups.is_empty() {
        if args.allow_duplicate != Some(true) {
            return Err(refuse(format!(
                "An identical run is already active: {}. Watch it instead (get_run), or pass allow_duplicate: true to launch another.",
                active_dups
                    .iter()
                    .map(|d| format!(
                        "{} ({}, {})",
                        d.run_id,
                        d.name.as_deref().unwrap_or("unnamed"),
                        d.status
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        checks.push(CheckItem {
            check: "duplicates".into(),
            status: "warning".into(),
            detail: format!(
                "{} identical active run(s); allow_duplicate is set",
                active_dups.len()
            ),
        });
    } else if duplicates.iter().any(|d| d.relation == "recent") {
        checks.push(CheckItem {
            check: "duplicates".into(),
            status: "warning".into(),
            detail: "the same config ran in the last 24 hours (see duplicates)".into(),
        });
    } else {
        checks.push(CheckItem {
            check: "duplicates".into(),
            status: "ok".into(),
            detail: "no identical active or recent run".into(),
        });
    }
    if let Some(last) = same.iter().max_by_key(|r| r.created_at_utc())
        && let Some(reason) = launch::deterministic_failure(last)
    {
        duplicates.push(DuplicateItem {
            run_id: last.id.clone(),
            name: last.name.clone(),
            status: last.status.clone(),
            created_at: last.created_at.clone(),
            relation: "failed".into(),
        });
        if args.relaunch_after_failure == Some(true) {
            checks.push(CheckItem {
                check: "previous failure".into(),
                status: "warning".into(),
                detail: format!("the last run of this config ({}) failed with a {reason}; relaunch_after_failure is set", last.id),
            });
        } else {
            blocked = Some(format!(
                "The last run of this config ({}) failed with a {reason}. The same config would fail again: change the config and re-plan, or pass relaunch_after_failure: true.",
                last.id
            ));
        }
    }
    for f in report
        .findings
        .iter()
        .filter(|f| f.severity == validation::FindingSeverity::Warning)
    {
        checks.push(CheckItem {
            check: format!(
                "config {}",
                if f.path.is_empty() { "(file)" } else { &f.path }
            ),
            status: "warning".into(),
            detail: format!(
                "{}{}",
                f.message,
                f.hint
                    .as_ref()
                    .map(|h| format!(" — {h}"))
                    .unwrap_or_default()
            ),
        });
    }
    if report.summary.max_steps.is_none() {
        checks.push(CheckItem {
            check: "max_steps".into(),
            status: "warning".into(),
            detail: "NO max_steps: the run trains (and bills) until someone stops it".into(),
        });
    }
    for n in notes {
        checks.push(CheckItem {
            check: "config".into(),
            status: "ok".into(),
            detail: n,
        });
    }
    checks.push(CheckItem {
        check: "budgets".into(),
        status: "ok".into(),
        detail: format!(
            "{} active run(s) for this owner{}",
            active.len(),
            if active.iter().any(|a| a.estimated) {
                " (rates partly estimated)"
            } else {
                ""
            }
        ),
    });

    // 6. Digests, summary, store.
    let request_digest =
        launch::digest(&json!({"request": request, "env": env_names, "volume": volume}));
    let content_digest = launch::digest(&json!({
        "config": config_digest, "mode": mode, "team": owner.team, "gpu_type": gpu_type,
        "image_tag": image_tag, "source_ref": source_ref, "volume": volume_name, "env": env_names,
    }));
    let plan_id = new_plan_id();
    let expires = now + chrono::Duration::seconds(state.policy.plan_ttl_seconds as i64);
    let body = PlanBody {
        request: request.clone(),
        env_names: env_names.clone(),
        run_name: run_name.clone(),
        run_name_generated: generated,
        team_id: owner.team.clone(),
        owner_label: owner.label.clone(),
        owner_source: owner.source.clone(),
        config_path: config_path.clone(),
        config_sha256: config_sha,
        config_digest,
        volume: volume.clone(),
        mode: mode.clone(),
        model: report.summary.model.clone(),
        gpu_type: gpu_type.clone(),
        gpus,
        max_steps: report.summary.max_steps,
        price: price.clone(),
        overrides: overrides.clone(),
        blocked: blocked.clone(),
        preexisting_same_name: runs
            .iter()
            .filter(|r| r.name.as_deref() == Some(run_name.as_str()))
            .map(|r| r.id.clone())
            .collect(),
        kind: default_kind(),
        resume_from: None,
    };
    let summary = summary_text(
        &plan_id,
        &expires,
        &body,
        &report,
        image_tag.as_deref(),
        source_ref.as_deref(),
        state.sandbox,
    );
    let store = store(&state)?;
    store
        .put_plan(&PlanRecord {
            id: plan_id.clone(),
            created_at: now,
            expires_at: expires,
            request_digest: request_digest.clone(),
            content_digest: content_digest.clone(),
            owner: owner.team.clone(),
            summary_text: summary.clone(),
            body: serde_json::to_value(&body).map_err(|e| refuse(format!("internal: {e}")))?,
        })
        .map_err(|e| refuse(format!("cannot store the plan: {e}")))?;
    audit(
        &state,
        "plan_run",
        "planned",
        Some(&plan_id),
        None,
        json!({
            "owner": owner.team, "price_per_hour_usd": price.per_hour_usd, "blocked": blocked.is_some(),
            "overrides": overrides,
        }),
    );
    let confirmation = match state.policy.confirm {
        ConfirmMode::Plan => {
            "plan mode: launch_run with this plan_id dispatches without asking (cost caps apply)"
                .to_string()
        }
        ConfirmMode::Human => format!(
            "a person must confirm: launch_run asks through your client's confirmation dialog when it has one; otherwise the person runs `factory-mcp approve {plan_id}` in a terminal, then launch_run is called again"
        ),
    };
    let headline = format!(
        "Planned {} on {}: {} GPU(s), {}{}",
        body.model.as_deref().unwrap_or("a run"),
        owner.label,
        gpus.map(|g| g.to_string()).unwrap_or_else(|| "?".into()),
        price
            .per_hour_usd
            .map(|p| format!("${p:.2}/h"))
            .unwrap_or_else(|| "price unknown".into()),
        if blocked.is_some() {
            " — BLOCKED (see blocked)"
        } else {
            ""
        }
    );
    Ok(Outcome::done(
        format!("{headline}\n{summary}"),
        PlanOut {
            plan_id,
            expires_at: expires.to_rfc3339(),
            summary,
            owner: owner.team,
            mode,
            model: body.model,
            run_name,
            gpus,
            gpu_type,
            price_per_hour_usd: price.per_hour_usd,
            price_basis: price.basis,
            volume,
            env: env_names,
            max_steps: report.summary.max_steps,
            checks,
            duplicates,
            blocked,
            confirmation,
            request,
            request_digest,
            content_digest,
        },
    ))
}

/// Plan the resume of a PAUSED run: a new billable run, priced from the paused run's GPUs.
async fn plan_resume(
    state: Arc<AppState>,
    args: PlanRunArgs,
    env_names: Vec<String>,
    mut overrides: Vec<String>,
) -> ToolResult<PlanOut> {
    for (name, present) in [
        ("config_path", args.config_path.is_some()),
        ("config_toml", args.config_toml.is_some()),
        ("volume", args.volume.is_some()),
        ("volume_size", args.volume_size.is_some()),
        ("source_ref", args.source_ref.is_some()),
        ("sft", args.sft.is_some()),
        ("run_name", args.run_name.is_some()),
        ("team_id", args.team_id.is_some()),
        ("personal", args.personal.is_some()),
        (
            "relaunch_after_failure",
            args.relaunch_after_failure.is_some(),
        ),
    ] {
        if present {
            return Err(refuse(format!(
                "`{name}` does not apply to a resume: a resumed run keeps the paused run's config and owner; only gpu_type, image_tag, env and allow_duplicate may be set."
            )));
        }
    }
    overrides.retain(|o| o == "allow_duplicate");
    let from = args.resume_from.clone().unwrap_or_default();
    let prev = fetch_run(&state, &from).await?;
    if !prev.status.eq_ignore_ascii_case("PAUSED") {
        return Err(refuse(format!(
            "Run {from} is {}: only a PAUSED run can be resumed (pause_run pauses a RUNNING one).",
            prev.status
        )));
    }
    if state.policy.confirm == ConfirmMode::Plan
        && !state.policy.allow_model_overrides
        && !overrides.is_empty()
    {
        return Err(refuse(
            "Refused in plan-confirmation mode: allow_duplicate may not be set by the assistant unless the policy sets allow_model_overrides = true.",
        ));
    }
    let platform = state.platform()?;
    let team = prev.team_id.clone();
    let scope = scope_of(&team);
    let models = platform
        .available_models(&scope)
        .await
        .map_err(|e| platform_error("list models to price the resume", &e))?;
    let cluster_gpu = prev.prime_cluster_id.as_deref().and_then(|cid| {
        models
            .models
            .iter()
            .flat_map(|m| &m.clusters)
            .find(|c| c.cluster_id == cid)
            .and_then(|c| c.gpu_type.clone())
    });
    let gpu_type = args.gpu_type.clone().or(cluster_gpu);
    let gpus = prev.gpu_count.and_then(|g| u64::try_from(g).ok());
    let price = launch::price(
        &models,
        prev.base_model.as_deref(),
        gpu_type.as_deref(),
        gpus,
    );
    let runs = owner_runs(platform, &team, 5).await?;
    let active = active_spend(&state, &runs, &models);
    let figures = PlanFigures {
        team: team.as_deref(),
        gpu_type: gpu_type.as_deref(),
        gpus,
        per_hour_usd: price.per_hour_usd,
        max_steps: prev.max_steps,
    };
    enforce_budgets(
        &state.policy,
        &figures,
        &active,
        "Refused by the policy",
        "",
    )?;
    let run_name = prev.name.clone().unwrap_or_default();
    let resumed: Vec<&RlRun> = runs
        .iter()
        .filter(|r| {
            r.id != prev.id
                && launch::is_active_status(&r.status)
                && !run_name.is_empty()
                && r.name.as_deref() == Some(run_name.as_str())
        })
        .collect();
    let duplicates: Vec<DuplicateItem> = resumed
        .iter()
        .map(|r| DuplicateItem {
            run_id: r.id.clone(),
            name: r.name.clone(),
            status: r.status.clone(),
            created_at: r.created_at.clone(),
            relation: "active".into(),
        })
        .collect();
    if !duplicates.is_empty() && args.allow_duplicate != Some(true) {
        return Err(refuse(format!(
            "An active run named {run_name} already exists ({}): the paused run may have been resumed already. Watch it instead, or pass allow_duplicate: true.",
            duplicates
                .iter()
                .map(|d| d.run_id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut request = Map::new();
    if let Some(g) = &gpu_type {
        request.insert("gpuType".into(), json!(g));
    }
    if let Some(t) = &args.image_tag {
        request.insert("imageTag".into(), json!(t));
    }
    let request = Value::Object(request);
    let request_digest =
        launch::digest(&json!({"resume_from": from, "request": request, "env": env_names}));
    let content_digest = launch::digest(
        &json!({"resume_from": from, "gpu_type": gpu_type, "image_tag": args.image_tag, "env": env_names}),
    );
    let now = Utc::now();
    let plan_id = new_plan_id();
    let expires = now + chrono::Duration::seconds(state.policy.plan_ttl_seconds as i64);
    let owner_label = team
        .as_ref()
        .map(|t| format!("team {t}"))
        .unwrap_or_else(|| "personal account".into());
    let body = PlanBody {
        request: request.clone(),
        env_names: env_names.clone(),
        run_name: run_name.clone(),
        run_name_generated: false,
        team_id: team.clone(),
        owner_label: owner_label.clone(),
        owner_source: format!("the paused run {from}"),
        config_path: None,
        config_sha256: None,
        config_digest: String::new(),
        volume: None,
        mode: if prev.is_sft() { "sft" } else { "rl" }.into(),
        model: prev.base_model.clone(),
        gpu_type: gpu_type.clone(),
        gpus,
        max_steps: prev.max_steps,
        price: price.clone(),
        overrides: overrides.clone(),
        blocked: None,
        preexisting_same_name: runs
            .iter()
            .filter(|r| !run_name.is_empty() && r.name.as_deref() == Some(run_name.as_str()))
            .map(|r| r.id.clone())
            .collect(),
        kind: "resume".into(),
        resume_from: Some(from.clone()),
    };
    let mut lines = vec![
        format!(
            "Resume plan {plan_id} (expires {})",
            expires.format("%Y-%m-%d %H:%M UTC")
        ),
        format!(
            "Resumes:  {from} ({}, PAUSED) as a NEW billable run",
            if run_name.is_empty() {
                "unnamed"
            } else {
                &run_name
            }
        ),
        format!("Owner:    {owner_label} — from the paused run"),
        format!(
            "Model:    {} ({})",
            body.model.as_deref().unwrap_or("?"),
            body.mode.to_uppercase()
        ),
        format!(
            "GPUs:     {} × {}",
            gpus.map(|g| g.to_string()).unwrap_or_else(|| "?".into()),
            gpu_type
                .as_deref()
                .or(price.gpu_type.as_deref())
                .unwrap_or("any type")
        ),
        format!(
            "Price:    {}",
            match price.per_hour_usd {
                Some(ph) => format!("${ph:.2}/hour ({})", price.basis),
                None => format!("unknown ({})", price.basis),
            }
        ),
        format!(
            "Secrets:  {}",
            if env_names.is_empty() {
                "none".to_string()
            } else {
                format!("{} (by name)", env_names.join(", "))
            }
        ),
    ];
    for n in &price.notes {
        lines.push(format!("Note:     {n}"));
    }
    if !overrides.is_empty() {
        lines.push(format!("Set by the assistant: {}", overrides.join(", ")));
    }
    if state.sandbox {
        lines.push("Platform: the embedded sandbox (no real GPUs, no charge)".into());
    }
    let summary = lines.join("\n");
    store(&state)?
        .put_plan(&PlanRecord {
            id: plan_id.clone(),
            created_at: now,
            expires_at: expires,
            request_digest: request_digest.clone(),
            content_digest: content_digest.clone(),
            owner: team.clone(),
            summary_text: summary.clone(),
            body: serde_json::to_value(&body).map_err(|e| refuse(format!("internal: {e}")))?,
        })
        .map_err(|e| refuse(format!("cannot store the plan: {e}")))?;
    audit(
        &state,
        "plan_run",
        "planned_resume",
        Some(&plan_id),
        Some(&from),
        json!({"price_per_hour_usd": price.per_hour_usd}),
    );
    Ok(Outcome::done(
        format!("Planned the resume of {from}: {}\n{summary}", price.per_hour_usd.map(|p| format!("${p:.2}/h")).unwrap_or_else(|| "price unknown".into())),
        PlanOut {
            plan_id: plan_id.clone(),
            expires_at: expires.to_rfc3339(),
            summary,
            owner: team,
            mode: body.mode.clone(),
            model: body.model.clone(),
            run_name,
            gpus,
            gpu_type,
            price_per_hour_usd: price.per_hour_usd,
            price_basis: price.basis,
            volume: None,
            env: env_names,
            max_steps: prev.max_steps,
            checks: vec![CheckItem { check: "resume".into(), status: "ok".into(), detail: format!("{from} is PAUSED") }],
            duplicates,
            blocked: None,
            confirmation: match state.policy.confirm {
                ConfirmMode::Plan => "plan mode: resume_run with this plan_id dispatches without asking (cost caps apply)".into(),
                ConfirmMode::Human => format!("a person must confirm: resume_run asks through your client's dialog, or the person runs `factory-mcp approve {plan_id}`"),
            },
            request,
            request_digest,
            content_digest,
        },
    ))
}

fn secret_refusal(findings: &[factory_policies::SecretFinding]) -> ToolError {
    refuse(format!(
        "Refused: an argument carries a secret value, and secrets are passed by name only.\n- {}\nRemove the value; for a run's W&B or Hugging Face credentials pass env: [\"WANDB_API_KEY\"] / [\"HF_TOKEN\"] and set them in the server's environment.",
        findings
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("\n- ")
    ))
}

/// `env` holds names only, and only the two the platform forwards.
fn check_env_names(state: &AppState, names: &[String]) -> Result<Vec<String>, ToolError> {
    let mut out = Vec::new();
    for (i, n) in names.iter().enumerate() {
        if n.contains('=') {
            let name = n.split('=').next().unwrap_or_default();
            return Err(refuse(format!(
                "env[{i}]: `{name}=…` carries a value; pass the name only (e.g. \"{name}\") and set the value in the server's environment."
            )));
        }
        if !FORWARDABLE.contains(&n.as_str()) {
            let shown: String = n.chars().take(40).collect();
            return Err(refuse(format!(
                "env[{i}]: `{shown}` cannot be forwarded: a run can receive only WANDB_API_KEY and HF_TOKEN{}.",
                if n == "PRIME_API_KEY" {
                    " (the platform key is never forwarded)"
                } else {
                    ""
                }
            )));
        }
        if !out.contains(n) {
            out.push(n.clone());
        }
    }
    let _ = state;
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
fn summary_text(
    plan_id: &str,
    expires: &DateTime<Utc>,
    b: &PlanBody,
    report: &validation::Report,
    image_tag: Option<&str>,
    source_ref: Option<&str>,
    sandbox: bool,
) -> String {
    let g = &report.summary.gpus;
    let gpus = match (g.trainer, g.inference, g.total) {
        (Some(t), Some(i), Some(n)) => format!("{t} trainer + {i} inference = {n}"),
        (_, _, Some(n)) => format!("{n}"),
        _ => "not derivable from the config".into(),
    };
    let price = match (b.price.per_gpu_hour_usd, b.price.per_hour_usd) {
        (Some(pg), Some(ph)) => format!(
            "${pg:.2}/GPU-hour on demand → ${ph:.2}/hour ({})",
            b.price.basis
        ),
        (Some(pg), None) => format!(
            "${pg:.2}/GPU-hour; hourly total unknown ({})",
            b.price.basis
        ),
        _ => format!("unknown ({})", b.price.basis),
    };
    let length = match b.max_steps {
        Some(s) => format!(
            "max_steps = {s}; run cost unknown (the platform gives no step timing), billed per hour until it ends"
        ),
        None => "NO max_steps: trains and bills until stopped".into(),
    };
    let volume = match &b.volume {
        Some(v) if v.create => format!(
            "{} — will be CREATED ({}), a billable side effect",
            v.name, v.size
        ),
        Some(v) => format!("{} (exists)", v.name),
        None => "none (checkpoints stay on the platform)".into(),
    };
    let mut lines = vec![
        format!(
            "Launch plan {plan_id} (expires {})",
            expires.format("%Y-%m-%d %H:%M UTC")
        ),
        format!("Owner:    {} — from {}", b.owner_label, b.owner_source),
        format!(
            "Model:    {} ({})",
            b.model.as_deref().unwrap_or("?"),
            b.mode.to_uppercase()
        ),
        format!(
            "GPUs:     {gpus} × {}",
            b.gpu_type
                .as_deref()
                .or(b.price.gpu_type.as_deref())
                .unwrap_or("any type")
        ),
        format!("Price:    {price}"),
        format!("Length:   {length}"),
        format!(
            "Image:    {} · source ref: {}",
            image_tag.unwrap_or("(platform default)"),
            source_ref.unwrap_or("(none)")
        ),
        format!("Volume:   {volume}"),
        format!(
            "Secrets:  {}",
            if b.env_names.is_empty() {
                "none".to_string()
            } else {
                format!(
                    "{} (by name, from the server's environment)",
                    b.env_names.join(", ")
                )
            }
        ),
        format!(
            "Run name: {}{}",
            b.run_name,
            if b.run_name_generated {
                " (generated)"
            } else {
                ""
            }
        ),
    ];
    for n in &b.price.notes {
        lines.push(format!("Note:     {n}"));
    }
    if !b.overrides.is_empty() {
        lines.push(format!("Set by the assistant: {}", b.overrides.join(", ")));
    }
    if let Some(bl) = &b.blocked {
        lines.push(format!("BLOCKED:  {bl}"));
    }
    if sandbox {
        lines.push("Platform: the embedded sandbox (no real GPUs, no charge)".into());
    }
    lines.join("\n")
}

pub(crate) fn audit(
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
        if let Err(e) = store.audit(&event) {
            tracing::warn!(error = %e, "could not write the audit log");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// launch_run

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LaunchRunArgs {
    /// The plan_id from plan_run.
    pub plan_id: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct LaunchOut {
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

fn load_plan(store: &Store, plan_id: &str) -> Result<(PlanRecord, PlanBody), ToolError> {
    if !plan_id.starts_with("plan_") || check_id("plan", plan_id).is_err() {
        return Err(refuse(format!(
            "`{}` is not a plan id: call plan_run first.",
            plan_id.chars().take(40).collect::<String>()
        )));
    }
    let plan = store
        .get_plan(plan_id)
        .map_err(|e| refuse(format!("cannot read the plan store: {e}")))?
        .ok_or_else(|| {
            refuse(format!(
                "Unknown plan {plan_id}: call plan_run to make one. Nothing was dispatched."
            ))
        })?;
    let body: PlanBody = serde_json::from_value(plan.body.clone())
        .map_err(|e| refuse(format!("plan {plan_id} is unreadable ({e}); re-plan")))?;
    Ok((plan, body))
}

fn dedup_out(
    state: &AppState,
    plan_id: &str,
    run_id: &str,
    run: Option<&RlRun>,
    details: &Value,
) -> LaunchOut {
    let url = state
        .platform()
        .map(|p| p.settings().run_dashboard_url(run_id))
        .unwrap_or_default();
    LaunchOut {
        plan_id: plan_id.into(),
        run_id: run_id.into(),
        status: run.map(|r| r.status.clone()),
        dashboard_url: url,
        deduplicated: true,
        on_demand: details.get("on_demand").and_then(Value::as_bool),
        gpu_type: details
            .get("gpu_type")
            .and_then(Value::as_str)
            .map(str::to_owned),
        price_per_gpu_hour_usd: details
            .get("price_per_gpu_hour_usd")
            .and_then(Value::as_f64),
        estimated_cost_per_hour_usd: details.get("rate_per_hour_usd").and_then(Value::as_f64),
        volume_created: false,
    }
}

/// Find the run a dispatch created: same name and owner, not a run that carried the name
/// before the plan was made, and not a run journalled to another plan. (Matching by name, not
/// by time, keeps this right whatever the skew between our clock and the platform's.)
async fn reconcile(
    state: &AppState,
    platform: &PlatformClient,
    plan_id: &str,
    body: &PlanBody,
) -> Result<Option<RlRun>, ToolError> {
    let others: Vec<String> = state
        .store()
        .ok()
        .and_then(|s| s.dispatched_runs().ok())
        .unwrap_or_default()
        .into_iter()
        .filter(|d| d.plan_id != plan_id)
        .filter_map(|d| match d.state {
            DispatchState::Dispatched { run_id, .. } => Some(run_id),
            _ => None,
        })
        .collect();
    let runs = owner_runs(platform, &body.team_id, 3).await?;
    Ok(runs.into_iter().find(|r| {
        r.name.as_deref() == Some(body.run_name.as_str())
            && r.team_id == body.team_id
            && !body.preexisting_same_name.contains(&r.id)
            && !others.contains(&r.id)
    }))
}

async fn launch_run(
    state: Arc<AppState>,
    args: LaunchRunArgs,
    call: Call,
) -> ToolResult<LaunchOut> {
    run_plan(state, &args.plan_id, call, "launch_run").await
}

async fn resume_run(
    state: Arc<AppState>,
    args: LaunchRunArgs,
    call: Call,
) -> ToolResult<LaunchOut> {
    run_plan(state, &args.plan_id, call, "resume_run").await
}

/// The shared pipeline of launch_run and resume_run.
async fn run_plan(
    state: Arc<AppState>,
    plan_id: &str,
    call: Call,
    tool_name: &str,
) -> ToolResult<LaunchOut> {
    let store = store(&state)?;
    let platform = state.platform()?;
    let (plan, body) = load_plan(store, plan_id)?;
    let plan_id = plan.id.clone();
    match (tool_name, body.kind.as_str()) {
        ("launch_run", "resume") => {
            return Err(refuse(format!(
                "Plan {plan_id} resumes a paused run: call resume_run with it."
            )));
        }
        ("resume_run", k) if k != "resume" => {
            return Err(refuse(format!(
                "Plan {plan_id} launches a new run: call launch_run with it."
            )));
        }
        _ => {}
    }

    // Duplicate guard first: a dispatched plan returns its run, asking no one again.
    if let Some(done) = guard_existing(&state, store, platform, &plan, &body).await? {
        return Ok(done);
    }
    if Utc::now() > plan.expires_at {
        return Err(refuse(format!(
            "Plan {plan_id} expired at {}: call plan_run again. Nothing was dispatched.",
            plan.expires_at.to_rfc3339()
        )));
    }
    if let Some(b) = &body.blocked {
        audit(
            &state,
            tool_name,
            "refused_blocked",
            Some(&plan_id),
            None,
            json!({}),
        );
        return Err(refuse(format!("{b} Nothing was dispatched.")));
    }
    recheck(&state, platform, &body).await?;

    // Confirmation.
    match state.policy.confirm {
        ConfirmMode::Plan => {}
        ConfirmMode::Human => {
            if let Some(resp) = confirm(&state, store, &plan, tool_name, &call).await? {
                return Ok(Outcome::Response(Box::new(resp)));
            }
            recheck(&state, platform, &body).await?;
        }
    }
    dispatch(state.clone(), plan, body).await
}

/// The plan was already dispatched, or its dispatch is in doubt: settle that first.
async fn guard_existing(
    state: &AppState,
    store: &Store,
    platform: &PlatformClient,
    plan: &PlanRecord,
    body: &PlanBody,
) -> Result<Option<Outcome<LaunchOut>>, ToolError> {
    let Some(rec) = store
        .dispatch(&plan.id)
        .map_err(|e| refuse(format!("cannot read the dispatch journal: {e}")))?
    else {
        return Ok(None);
    };
    let in_flight = match &rec.state {
        DispatchState::Dispatched { run_id, details } => {
            let run = platform.get_run(run_id).await.ok();
            audit(
                state,
                "launch_run",
                "deduplicated",
                Some(&plan.id),
                Some(run_id),
                json!({}),
            );
            return Ok(Some(Outcome::done(
                format!(
                    "Plan {} was already launched as run {run_id}: nothing new was dispatched",
                    plan.id
                ),
                dedup_out(state, &plan.id, run_id, run.as_ref(), details),
            )));
        }
        DispatchState::Failed { .. } => return Ok(None),
        DispatchState::Dispatching { lease_expired, .. } => !lease_expired,
        DispatchState::Unknown { .. } => false,
    };
    if let Some(run) = reconcile(state, platform, &plan.id, body).await? {
        let details = json!({"reconciled": true, "rate_per_hour_usd": body.price.per_hour_usd, "max_steps": body.max_steps});
        settle_found(store, &plan.id, &run.id, &details);
        audit(
            state,
            "launch_run",
            "reconciled",
            Some(&plan.id),
            Some(&run.id),
            json!({}),
        );
        return Ok(Some(Outcome::done(
            format!(
                "Plan {} had already created run {} (found by reconciliation): nothing new was dispatched",
                plan.id, run.id
            ),
            dedup_out(state, &plan.id, &run.id, Some(&run), &details),
        )));
    }
    if in_flight {
        return Err(refuse(format!(
            "A launch of plan {} is in progress in this or another session; call launch_run again in a few seconds. Nothing new was dispatched.",
            plan.id
        )));
    }
    // No run under the plan's name: safe to dispatch again only once the platform has had
    // time to commit a create that was in flight.
    let settle = state
        .platform()
        .map(|p| p.settings().timeouts.create)
        .unwrap_or(Duration::from_secs(120));
    let since = Utc::now() - rec.started_at;
    if since.to_std().unwrap_or_default() < settle {
        return Err(refuse(format!(
            "The last dispatch of plan {} has an unknown outcome and no run has appeared yet; call launch_run again in {} s, when a late create would be visible. Nothing new was dispatched.",
            plan.id,
            (settle.as_secs() as i64 - since.num_seconds()).max(1)
        )));
    }
    Ok(None)
}

/// Refuse, with every broken limit and its figures, when the plan breaks the policy's budgets.
fn enforce_budgets(
    policy: &factory_policies::Policy,
    figures: &PlanFigures<'_>,
    active: &[ActiveRun],
    head: &str,
    tail: &str,
) -> Result<(), ToolError> {
    let violations = launch::check_budgets(policy, figures, active);
    if violations.is_empty() {
        return Ok(());
    }
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

/// Record a run that reconciliation found. Only the lease holder may settle a `dispatching`
/// record: when its holder died (the lease expired) this process takes the lease over first;
/// when the holder is alive it records the run itself. Either way the run exists, so a journal
/// refusal is logged, never turned into an error that would hide it.
fn settle_found(store: &Store, plan_id: &str, run_id: &str, details: &Value) {
    if store.mark_dispatched(plan_id, run_id, details).is_ok() {
        return;
    }
    let taken = matches!(
        store.take_over(plan_id, Duration::from_secs(60)),
        Ok(Claim::Claimed(_))
    );
    if !(taken && store.mark_dispatched(plan_id, run_id, details).is_ok()) {
        tracing::info!(
            plan_id,
            run_id,
            "reconciled run left for the live dispatch holder to record"
        );
    }
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
    let runs = owner_runs(platform, &body.team_id, 5).await?;
    let active = active_spend(state, &runs, &models);
    let figures = PlanFigures {
        team: body.team_id.as_deref(),
        gpu_type: body.gpu_type.as_deref(),
        gpus: body.gpus,
        per_hour_usd: body.price.per_hour_usd,
        max_steps: body.max_steps,
    };
    enforce_budgets(
        &state.policy,
        &figures,
        &active,
        "Refused by the policy now",
        "Nothing was dispatched.",
    )?;
    Ok(())
}

/// Ask a person. `Ok(None)`: confirmed, go on. `Ok(Some(resp))`: answer the client with this
/// (the input-required round trip). `Err`: refused, or no way to ask.
pub(crate) async fn confirm(
    state: &AppState,
    store: &Store,
    plan: &PlanRecord,
    tool: &str,
    call: &Call,
) -> Result<Option<rmcp::model::CallToolResponse>, ToolError> {
    let decision = store
        .decision(&plan.id)
        .map_err(|e| refuse(format!("cannot read approvals: {e}")))?;
    if let Some(d) = decision {
        return match d.decision {
            Decision::Approved => Ok(None),
            Decision::Refused => Err(refuse(format!(
                "Plan {} was refused by a person ({}): nothing was dispatched. Make a new plan if the launch is still wanted.",
                plan.id, d.via
            ))),
        };
    }
    let ctx = &call.ctx;
    let modern = ctx
        .protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
    let can_elicit = ctx
        .client_capabilities()
        .is_some_and(|c| c.elicitation.is_some());
    // A "no" in either dialog: audited under the calling tool, nothing done.
    let declined = |via: &str| {
        audit(
            state,
            tool,
            "declined",
            Some(&plan.id),
            None,
            json!({"via": via}),
        );
        let what = if tool == "delete_run" {
            "deletion"
        } else {
            "launch"
        };
        refuse(format!(
            "The {what} for plan {} was declined: nothing was done.",
            plan.id
        ))
    };
    let question = format!("{}\n\nApprove this billable launch?", plan.summary_text);
    if modern && can_elicit {
        let key = store
            .request_state_key()
            .map_err(|e| refuse(format!("cannot read the request-state key: {e}")))?;
        let codec = RequestStateCodec::try_new(secrecy::ExposeSecret::expose_secret(&key).to_vec())
            .map_err(|e| refuse(format!("request-state key unusable: {e}")))?;
        let ad = format!("{tool}|{}|{}", plan.id, plan.request_digest);
        match &call.request_state {
            None => {
                let sealed = SealedConfirm {
                    plan_id: plan.id.clone(),
                    request_digest: plan.request_digest.clone(),
                    nonce: format!(
                        "{:08x}{:08x}{:08x}{:08x}",
                        rand_u32(),
                        rand_u32(),
                        rand_u32(),
                        rand_u32()
                    ),
                };
                let payload = serde_json::to_vec(&sealed).map_err(|e| refuse(e.to_string()))?;
                let state_str = codec.seal_with(
                    &payload,
                    &SealOptions::new()
                        .associated_data(ad.as_bytes())
                        .ttl(CONFIRM_TTL),
                );
                let schema = serde_json::from_value(json!({
                    "type": "object",
                    "properties": {"confirm": {"type": "boolean", "title": "Approve", "description": "Tick to launch (billable)"}},
                    "required": ["confirm"]
                }))
                .map_err(|e: serde_json::Error| refuse(e.to_string()))?;
                let mut reqs = InputRequests::new();
                reqs.insert(
                    "confirm".into(),
                    InputRequest::Elicitation(ElicitRequest::new(
                        ElicitRequestParams::FormElicitationParams {
                            meta: None,
                            message: question,
                            requested_schema: schema,
                        },
                    )),
                );
                audit(
                    state,
                    tool,
                    "asked",
                    Some(&plan.id),
                    None,
                    json!({"via": "input_required"}),
                );
                Ok(Some(
                    InputRequiredResult::new(Some(reqs), Some(state_str)).into(),
                ))
            }
            Some(sealed) => {
                let payload = codec.open_with(sealed, ad.as_bytes()).map_err(|_| {
                    refuse("The confirmation state is invalid, tampered with or expired: call launch_run again to be asked afresh. Nothing was dispatched.")
                })?;
                let sc: SealedConfirm = serde_json::from_slice(&payload)
                    .map_err(|_| refuse("The confirmation state is unreadable: call launch_run again. Nothing was dispatched."))?;
                if sc.plan_id != plan.id || sc.request_digest != plan.request_digest {
                    return Err(refuse(
                        "The confirmation was for another plan or request: call launch_run again.",
                    ));
                }
                let first_use = store
                    .use_nonce(
                        &sc.nonce,
                        Utc::now() + chrono::Duration::from_std(CONFIRM_TTL).unwrap_or_default(),
                    )
                    .map_err(|e| refuse(format!("cannot record the confirmation: {e}")))?;
                if !first_use {
                    audit(
                        state,
                        tool,
                        "replay_refused",
                        Some(&plan.id),
                        None,
                        json!({}),
                    );
                    return Err(refuse(
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
                if accepted {
                    record(store, &plan.id, Decision::Approved, "elicitation")?;
                    audit(
                        state,
                        tool,
                        "approved",
                        Some(&plan.id),
                        None,
                        json!({"via": "input_required"}),
                    );
                    Ok(None)
                } else {
                    Err(declined("input_required"))
                }
            }
        }
    } else if !modern && can_elicit {
        match ctx.peer.elicit::<Confirm>(question).await {
            Ok(Some(Confirm { confirm: true })) => {
                record(store, &plan.id, Decision::Approved, "elicitation")?;
                audit(
                    state,
                    tool,
                    "approved",
                    Some(&plan.id),
                    None,
                    json!({"via": "elicitation"}),
                );
                Ok(None)
            }
            Ok(_)
            | Err(rmcp::service::ElicitationError::UserDeclined)
            | Err(rmcp::service::ElicitationError::UserCancelled) => Err(declined("elicitation")),
            Err(e) => Err(refuse(format!(
                "Could not ask for confirmation ({e}). Run `factory-mcp approve {}` in a terminal, then call {tool} again.",
                plan.id
            ))),
        }
    } else {
        audit(
            state,
            tool,
            "needs_approval",
            Some(&plan.id),
            None,
            json!({}),
        );
        Err(refuse(format!(
            "A person must approve this and this client cannot show a confirmation dialog. Ask the user to run `factory-mcp approve {}` in their terminal, then call {tool} again{}. Nothing was done.\n\n{}",
            plan.id,
            if tool == "delete_run" {
                format!(" with intent_id: \"{}\"", plan.id)
            } else {
                String::new()
            },
            plan.summary_text
        )))
    }
}

fn record(store: &Store, plan_id: &str, d: Decision, via: &str) -> Result<(), ToolError> {
    store
        .record_decision(plan_id, d, via)
        .map_err(|e| refuse(format!("cannot record the decision: {e}")))
}

/// Journal, create the volume if needed, POST once, journal the result. Runs in its own task
/// so a client that goes away mid-call cannot leave the journal half-written.
async fn dispatch(state: Arc<AppState>, plan: PlanRecord, body: PlanBody) -> ToolResult<LaunchOut> {
    let task = tokio::spawn(async move { dispatch_inner(&state, &plan, &body).await });
    task.await.map_err(|e| {
        refuse(format!(
            "the dispatch task failed: {e}; call launch_run again (it reconciles first)"
        ))
    })?
}

async fn dispatch_inner(
    state: &AppState,
    plan: &PlanRecord,
    body: &PlanBody,
) -> ToolResult<LaunchOut> {
    let store = state.store()?;
    let platform = state.platform()?;
    let scope = scope_of(&body.team_id);
    let mut volume_created = false;
    if let Some(v) = body.volume.as_ref().filter(|v| v.create) {
        volume_created = ensure_volume(state, store, platform, &scope, body, v).await?;
    }
    let lease = platform.settings().timeouts.create + Duration::from_secs(30);
    let busy = || {
        refuse(format!(
            "Another session is launching plan {} right now; call launch_run again shortly — it returns that run.",
            plan.id
        ))
    };
    match store
        .claim_dispatch(&plan.id, lease)
        .map_err(|e| refuse(format!("cannot write the dispatch journal: {e}")))?
    {
        Claim::Claimed(_) => {}
        Claim::Existing(rec) => match rec.state {
            DispatchState::Dispatched { run_id, details } => {
                let run = platform.get_run(&run_id).await.ok();
                return Ok(Outcome::done(
                    format!("Plan {} was already launched as run {run_id}", plan.id),
                    dedup_out(state, &plan.id, &run_id, run.as_ref(), &details),
                ));
            }
            DispatchState::Dispatching {
                lease_expired: true,
                ..
            } => {
                // Its holder died; the guard reconciled just before and found no run.
                match store.take_over(&plan.id, lease) {
                    Ok(Claim::Claimed(_)) => {}
                    _ => return Err(busy()),
                }
            }
            DispatchState::Unknown { .. } => {
                // The guard reconciled just before, after the settle window, and found no run:
                // the lost attempt created nothing. Record that, then claim afresh (atomic: of
                // several callers only one wins the claim).
                let _ =
                    store.mark_failed(&plan.id, "reconciled: the earlier attempt created no run");
                match store.claim_dispatch(&plan.id, lease) {
                    Ok(Claim::Claimed(_)) => {}
                    _ => return Err(busy()),
                }
            }
            _ => return Err(busy()),
        },
    }
    audit(
        state,
        "launch_run",
        "dispatching",
        Some(&plan.id),
        None,
        json!({"run_name": body.run_name, "kind": body.kind}),
    );
    let answer = if body.kind == "resume" {
        let from = body.resume_from.clone().unwrap_or_default();
        let request = resume_request(state, body)?;
        platform.resume_run(&from, &request).await
    } else {
        let request = create_request(state, body)?;
        platform.create_run(&request).await
    };
    match answer {
        Ok(resp) => {
            let details = json!({
                "request_digest": plan.request_digest,
                "content_digest": plan.content_digest,
                "team_id": body.team_id,
                "volume": body.volume.as_ref().map(|v| &v.name),
                "image_tag": body.request.get("imageTag"),
                "source_ref": body.request.get("sourceRef"),
                "on_demand": resp.on_demand,
                "gpu_type": resp.gpu_type.clone().or(body.gpu_type.clone()),
                "price_per_gpu_hour_usd": resp.price_per_gpu_hour,
                "rate_per_hour_usd": resp.estimated_cost_per_hour.or(body.price.per_hour_usd),
                "max_steps": body.max_steps,
                "dashboard_url": platform.settings().run_dashboard_url(&resp.run_id),
            });
            store
                .mark_dispatched(&plan.id, &resp.run_id, &details)
                .map_err(|e| refuse(format!("run {} was created but the journal could not record it ({e}); do not re-launch: get_run shows it", resp.run_id)))?;
            audit(
                state,
                "launch_run",
                "dispatched",
                Some(&plan.id),
                Some(&resp.run_id),
                details.clone(),
            );
            let run = platform.get_run(&resp.run_id).await.ok();
            Ok(Outcome::done(
                format!("Launched run {} for plan {}", resp.run_id, plan.id),
                LaunchOut {
                    plan_id: plan.id.clone(),
                    run_id: resp.run_id.clone(),
                    status: run.map(|r| r.status),
                    dashboard_url: platform.settings().run_dashboard_url(&resp.run_id),
                    deduplicated: false,
                    on_demand: resp.on_demand,
                    gpu_type: resp.gpu_type,
                    price_per_gpu_hour_usd: resp.price_per_gpu_hour,
                    estimated_cost_per_hour_usd: resp.estimated_cost_per_hour,
                    volume_created,
                },
            ))
        }
        Err(e) if e.is_ambiguous() => {
            let _ = store.mark_unknown(&plan.id, &e.to_string());
            audit(
                state,
                "launch_run",
                "unknown",
                Some(&plan.id),
                None,
                json!({"error": e.to_string()}),
            );
            // Reconcile at once: the run may exist although the answer was lost.
            if let Ok(Some(run)) = reconcile(state, platform, &plan.id, body).await {
                let details =
                    json!({"reconciled": true, "rate_per_hour_usd": body.price.per_hour_usd});
                settle_found(store, &plan.id, &run.id, &details);
                audit(
                    state,
                    "launch_run",
                    "reconciled",
                    Some(&plan.id),
                    Some(&run.id),
                    json!({}),
                );
                let mut out = dedup_out(state, &plan.id, &run.id, Some(&run), &details);
                out.deduplicated = false;
                return Ok(Outcome::done(
                    format!(
                        "Launched run {} for plan {} (the platform's answer was lost; found by reconciliation)",
                        run.id, plan.id
                    ),
                    out,
                ));
            }
            Err(refuse(format!(
                "The platform's answer to the launch of plan {} was lost ({e}); the run may or may not exist. Call launch_run again: it checks for the run before dispatching anything.",
                plan.id
            )))
        }
        Err(e) => {
            let _ = store.mark_failed(&plan.id, &e.to_string());
            audit(
                state,
                "launch_run",
                "failed",
                Some(&plan.id),
                None,
                json!({"error": e.to_string()}),
            );
            Err(platform_error(
                &format!("launch plan {} (nothing was created)", plan.id),
                &e,
            ))
        }
    }
}

fn forwarded_secret(
    state: &AppState,
    body: &PlanBody,
    name: &str,
) -> Result<Option<SecretString>, ToolError> {
    if !body.env_names.iter().any(|n| n == name) {
        return Ok(None);
    }
    state.secret_value(name).map(Some).ok_or_else(|| {
        refuse(format!(
            "The plan forwards {name}, but the server has no value for it: set {name} in the server's environment (or secrets.env_file) and restart it. Nothing was dispatched."
        ))
    })
}

/// The resume request (§6.6: only gpuType, imageTag and the two secrets).
fn resume_request(state: &AppState, body: &PlanBody) -> Result<ResumeRunRequest, ToolError> {
    let s = |k: &str| {
        body.request
            .get(k)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    Ok(ResumeRunRequest {
        gpu_type: s("gpuType"),
        image_tag: s("imageTag"),
        wandb_api_key: forwarded_secret(state, body, "WANDB_API_KEY")?,
        hf_token: forwarded_secret(state, body, "HF_TOKEN")?,
    })
}

/// The create request with secret values read from the server's environment now.
fn create_request(state: &AppState, body: &PlanBody) -> Result<CreateRunRequest, ToolError> {
    let r = &body.request;
    let s = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_owned);
    let secret = |name: &str| -> Result<Option<SecretString>, ToolError> {
        if !body.env_names.iter().any(|n| n == name) {
            return Ok(None);
        }
        match state.secret_value(name) {
            Some(v) => Ok(Some(v)),
            None => Err(refuse(format!(
                "The plan forwards {name}, but the server has no value for it: set {name} in the server's environment (or secrets.env_file) and restart it. Nothing was dispatched."
            ))),
        }
    };
    Ok(CreateRunRequest {
        config: r
            .get("config")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        sft: r.get("mode").and_then(Value::as_str) == Some("sft"),
        name: s("name"),
        team_id: s("teamId"),
        image_tag: s("imageTag"),
        wandb_api_key: secret("WANDB_API_KEY")?,
        hf_token: secret("HF_TOKEN")?,
        gpu_type: s("gpuType"),
        volume: s("volume"),
        source_ref: s("sourceRef"),
        ..CreateRunRequest::default()
    })
}

/// Create the plan's volume once (journalled), then wait up to the limit for it to be RUNNING.
async fn ensure_volume(
    state: &AppState,
    store: &Store,
    platform: &PlatformClient,
    scope: &TeamScope,
    body: &PlanBody,
    v: &VolumePlan,
) -> Result<bool, ToolError> {
    let owner_key = body.team_id.clone().unwrap_or_else(|| "personal".into());
    let lease = platform.settings().timeouts.request + Duration::from_secs(30);
    let list = |platform: &PlatformClient| {
        let scope = scope.clone();
        let platform = platform.clone();
        async move { platform.list_volumes(&scope).await }
    };
    let mut created = false;
    let existing = list(platform)
        .await
        .map_err(|e| platform_error("list volumes", &e))?;
    if !existing.iter().any(|x| x.name == v.name) {
        let claim = store
            .claim_volume_create(&owner_key, &v.name, lease)
            .map_err(|e| refuse(format!("cannot write the volume journal: {e}")))?;
        let go = match claim {
            Claim::Claimed(_) => true,
            Claim::Existing(rec) => match rec.state {
                VolumeState::Created => false,
                VolumeState::Creating {
                    lease_expired: false,
                    ..
                } => {
                    return Err(refuse(format!(
                        "Volume {} is being created by another call; call launch_run again in a moment. Nothing was dispatched.",
                        v.name
                    )));
                }
                // Failed, unknown, or a creator that died: nothing is listed under the name,
                // so create it (the platform does not hold it).
                _ => matches!(
                    store.take_over_volume_create(&owner_key, &v.name, lease),
                    Ok(Claim::Claimed(_))
                ),
            },
        };
        if go {
            match platform.create_volume(&v.name, &v.size, scope).await {
                Ok(_) => {
                    let _ = store.mark_volume_created(&owner_key, &v.name);
                    audit(
                        state,
                        "launch_run",
                        "volume_created",
                        None,
                        None,
                        json!({"volume": v.name, "size": v.size}),
                    );
                    created = true;
                }
                Err(e) if e.is_ambiguous() => {
                    let _ = store.mark_volume_unknown(&owner_key, &v.name, &e.to_string());
                    // The volume may exist: look before saying anything.
                    let now = list(platform).await.unwrap_or_default();
                    if now.iter().any(|x| x.name == v.name) {
                        let _ = store.mark_volume_created(&owner_key, &v.name);
                        created = true;
                    } else {
                        return Err(refuse(format!(
                            "Creating volume {} had an unknown outcome ({e}); call launch_run again: it checks before creating. Nothing was dispatched.",
                            v.name
                        )));
                    }
                }
                Err(e) => {
                    let _ = store.mark_volume_failed(&owner_key, &v.name, &e.to_string());
                    return Err(platform_error(&format!("create volume {}", v.name), &e));
                }
            }
        }
    }
    // Wait (bounded) for RUNNING.
    let deadline = tokio::time::Instant::now() + state.limits.volume_wait;
    loop {
        let vols = list(platform)
            .await
            .map_err(|e| platform_error("list volumes", &e))?;
        match vols
            .iter()
            .find(|x| x.name == v.name)
            .map(|x| x.status.as_str())
        {
            Some("RUNNING") => return Ok(created),
            Some(s @ ("FAILED" | "TOMBSTONED")) => {
                return Err(refuse(format!(
                    "Volume {} is {s}: choose another volume and re-plan. Nothing was dispatched.",
                    v.name
                )));
            }
            other => {
                if tokio::time::Instant::now() >= deadline {
                    return Err(refuse(format!(
                        "Volume {} is still being created ({}); call launch_run again in a minute — it continues from here. Nothing was dispatched yet.",
                        v.name,
                        other.unwrap_or("not listed yet")
                    )));
                }
            }
        }
        tokio::time::sleep(state.limits.volume_poll).await;
    }
}

// ---------------------------------------------------------------------------------------------
// stop_run

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopRunArgs {
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
pub struct StopOut {
    pub run_id: String,
    pub status: String,
    pub terminal: bool,
    /// The run was already in a terminal state: nothing was sent.
    pub already_stopped: bool,
    pub note: Option<String>,
    /// With then_report: the end-of-run report.
    pub report: Option<crate::artifacts::RunReport>,
}

async fn stop_run(state: Arc<AppState>, args: StopRunArgs, _call: Call) -> ToolResult<StopOut> {
    let run = fetch_run(&state, &args.run_id).await?;
    let budget = Duration::from_secs(args.timeout_s.unwrap_or(60).clamp(1, 300));
    let want_report = args.then_report.unwrap_or(false);
    if run.is_terminal() {
        let report = if want_report {
            Some(crate::artifacts::report_when_synced(&state, &run.id, budget).await?)
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
        );
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
    );
    let mut last = stopped;
    if (args.wait.unwrap_or(true) || want_report) && !last.is_terminal() {
        last = platform
            .wait_until_terminal(last, state.limits.stop_poll, budget)
            .await;
    }
    let terminal = last.is_terminal();
    let report = if want_report && terminal {
        Some(crate::artifacts::report_when_synced(&state, &last.id, budget).await?)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn submission_config_strips_what_the_cli_strips() {
        let doc: toml::Table = toml::from_str(
            r#"
            name = "x"
            gpu_type = "H200_141GB"
            volume = "v"
            image_tag = "t"
            max_steps = 3
            [orchestrator]
            buffer = {}
            batch_size = 8
            [orchestrator.eval]
            eval_base_model = false
            "#,
        )
        .unwrap();
        let (c, notes) = submission_config(&doc).unwrap();
        assert_eq!(c.get("name"), Some(&json!("x")));
        for k in ["gpu_type", "volume", "image_tag"] {
            assert!(!c.contains_key(k), "{k}");
        }
        assert_eq!(c["orchestrator"]["eval"]["skip_first_step"], json!(true));
        assert!(c["orchestrator"].get("buffer").is_none());
        assert_eq!(notes.len(), 2);
    }

    #[test]
    fn toml_dates_are_refused() {
        let doc: toml::Table = toml::from_str("when = 1979-05-27T07:32:00Z").unwrap();
        assert!(submission_config(&doc).is_err());
    }

    #[test]
    fn generated_names_are_unique_and_tidy() {
        let a = generated_name(Some("Qwen/Qwen3-4B"));
        let b = generated_name(Some("Qwen/Qwen3-4B"));
        assert!(a.starts_with("qwen3-4b-"), "{a}");
        assert_ne!(a, b);
        assert!(new_plan_id().starts_with("plan_"));
    }
}
