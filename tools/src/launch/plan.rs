//! `plan_run`: validate the config with the argument overrides applied, resolve the owner,
//! build the request, price it, check budgets, duplicates and repeated failures, store a plan.
//! Nothing changes on the platform. A plan made with `resume_from` is `resume.rs`'s.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use factory_platform::wire::{runs::RlRun, volumes::Volume};
use factory_policies::{
    duplicates, forwarding,
    launch::{self, ActiveRun, PlanFigures},
    overrides,
    store::PlanRecord,
    summary::Summary,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{
    KIND_LAUNCH, PlanBody, PlannedRequest, VolumePlan, checks, identity,
    request::{self, ResolvedLaunch},
    resume,
    run::enforce_budgets,
    summary,
};
use crate::{
    audit::audit,
    error::ToolError,
    ids::PlanId,
    owner::{self, Owner},
    reply::{Outcome, ToolResult},
    server::Call,
    spend::{active_spend, owner_runs},
    state::AppState,
    validation::{self, ValidationInput},
};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct PlanRunArgs {
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
    /// prime-rl branch, tag or commit whose code is overlaid on the image at start (nothing is built; the team must be allowed custom refs).
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

pub(super) fn refuse(msg: impl Into<String>) -> ToolError {
    ToolError::new(msg)
}

pub(super) async fn plan_run(
    state: Arc<AppState>,
    args: PlanRunArgs,
    call: Call,
) -> ToolResult<PlanOut> {
    // 1. No secret value in any argument; env holds forwardable names the server has values for.
    let (env_names, mut overrides) = screen_arguments(&state, &args, &call)?;
    if args.resume_from.is_some() {
        return resume::plan_resume(state, args, env_names, overrides).await;
    }

    // 2. The config, the owner, and what the owner's account offers; any error stops here.
    let config = read_validated(&state, &args, &env_names).await?;
    let platform = state.platform()?;
    let owner = owner::resolve_for_plan(
        &state,
        platform,
        args.team_id.as_deref(),
        args.personal,
        &mut overrides,
    )
    .await?;
    if let Some(refusal) = overrides::override_refusal(&state.policy, &overrides) {
        crate::meter::refusal(crate::meter::Refusal::Override);
        return Err(refuse(refusal));
    }
    let account = checks::gather(platform, &owner.team).await?;
    let team_name = owner::team_name(platform, owner.team.as_deref()).await;
    let mut report = config.report;
    let capacity = checks::refuse_config_errors(&mut report, &account)?;
    let mode = report.mode.as_str().to_string();

    // 3. The request, exactly as launch_run will send it (secret values added then), and the
    //    platform's prepare for it (a ref the team may not use is refused here).
    let resolved = request::resolve_launch(
        &args,
        &config.doc,
        mode == "sft",
        report.summary.model.as_deref(),
        owner.team.clone(),
    )?;
    let prepared = checks::prepare(platform, &resolved, mode == "sft", &config.doc).await?;
    let volume = volume_plan(&resolved, &account.volumes);

    // 4. Price on the capacity, and budgets.
    let gpus = report.summary.gpus.total;
    let mut price = launch::price(
        &account.models,
        &capacity,
        report.summary.model.as_deref(),
        gpus,
        state.policy.reserved_price_per_gpu_hour_usd,
    );
    price.notes.extend(weights_notes(&report));
    // The owner's unfinished runs (however old), then the known runs a duplicate or the
    // name could concern: the same config, the same name, or one of ours.
    let known = owner_runs(&state, platform, &owner.team).await?;
    let active = active_spend(&state, known.unfinished(), &account.models).await;
    let figures = PlanFigures {
        team: owner.team.as_deref(),
        gpu_type: resolved.gpu_type.as_deref(),
        gpus,
        per_hour_usd: price.per_hour_usd,
        max_steps: report.summary.max_steps,
        reserved: price.reserved,
    };
    enforce_budgets(
        &state.policy,
        &figures,
        &active,
        "Refused by the policy",
        "Change the config or ask the operator to change the policy.",
    )?;

    // 5. Duplicates and repeated failures on the whole launch identity, then the other checks.
    let now = Utc::now();
    let runs = known
        .with(
            std::slice::from_ref(&resolved.run_name),
            std::slice::from_ref(&resolved.config_digest),
            &identity::dispatched_ids(&state).await,
        )
        .await?;
    let journal = identity::journalled(&state, &runs).await;
    let verdict = duplicates::judge(
        &runs,
        &identity::of_plan(&resolved),
        &journal,
        now,
        args.allow_duplicate == Some(true),
        args.relaunch_after_failure == Some(true),
    )
    .map_err(|e| {
        crate::meter::refusal(crate::meter::Refusal::Duplicate);
        refuse(e)
    })?;
    let mut checks = plan_checks(&verdict.checks, &report, &resolved.notes, &active);
    checks.push(prepared);
    let planned = Planned {
        body: launch_body(
            &resolved,
            &report,
            &owner,
            team_name,
            env_names,
            volume,
            price,
            overrides,
            &runs,
            verdict.blocked.clone(),
            config.path,
            config.sha256,
        ),
        duplicates: duplicate_items(&verdict.related),
        checks,
        report,
        image_tag: resolved.image_tag,
        source_ref: resolved.source_ref,
        config_digest: resolved.config_digest,
    };
    finish_plan(&state, planned, &owner, now).await
}

/// A plan made, before it is stored and answered.
struct Planned {
    body: PlanBody,
    duplicates: Vec<DuplicateItem>,
    checks: Vec<CheckItem>,
    report: validation::Report,
    image_tag: Option<String>,
    source_ref: Option<String>,
    config_digest: String,
}

/// The plan's stored body.
#[allow(clippy::too_many_arguments)]
fn launch_body(
    resolved: &ResolvedLaunch,
    report: &validation::Report,
    owner: &Owner,
    team_name: Option<String>,
    env_names: Vec<String>,
    volume: Option<VolumePlan>,
    price: launch::Price,
    overrides: Vec<String>,
    runs: &[RlRun],
    blocked: Option<String>,
    config_path: Option<String>,
    config_sha256: Option<String>,
) -> PlanBody {
    PlanBody {
        request: PlannedRequest::Create(resolved.spec.clone()),
        env_names,
        run_name: resolved.run_name.clone(),
        run_name_generated: resolved.run_name_generated,
        team_id: owner.team.clone(),
        team_name,
        owner_label: owner.label.clone(),
        owner_source: owner.source.clone(),
        config_path,
        config_sha256,
        config_digest: resolved.config_digest.clone(),
        volume,
        mode: report.mode.as_str().to_string(),
        model: report.summary.model.clone(),
        gpu_type: resolved.gpu_type.clone(),
        gpus: report.summary.gpus.total,
        max_steps: report.summary.max_steps,
        price,
        overrides,
        blocked,
        preexisting_same_name: runs
            .iter()
            .filter(|r| r.name.as_deref() == Some(resolved.run_name.as_str()))
            .map(|r| r.id.clone())
            .collect(),
        kind: KIND_LAUNCH.into(),
        resume_from: None,
    }
}

/// Digests, summary, store, audit, and the answer.
async fn finish_plan(
    state: &AppState,
    p: Planned,
    owner: &Owner,
    now: DateTime<Utc>,
) -> ToolResult<PlanOut> {
    let body = p.body;
    let request_digest = launch::digest(
        &json!({"request": body.request.to_value(), "env": body.env_names, "volume": body.volume}),
    );
    let content_digest = launch::digest(&json!({
        "config": p.config_digest, "mode": body.mode, "team": body.team_id, "gpu_type": body.gpu_type,
        "image_tag": p.image_tag, "source_ref": p.source_ref,
        "volume": body.volume.as_ref().map(|v| v.name.clone()), "env": body.env_names,
    }));
    let plan_id = PlanId::generate();
    let expires = now + chrono::Duration::seconds(state.policy.plan_ttl_seconds as i64);
    let screen = summary::launch_summary(
        plan_id.as_str(),
        &expires,
        &body,
        &p.report,
        p.image_tag.as_deref(),
        p.source_ref.as_deref(),
        state.sandbox,
    );
    let summary = store_plan(
        state,
        &plan_id,
        now,
        expires,
        &request_digest,
        &content_digest,
        &screen,
        &body,
    )
    .await?;
    audit(
        state,
        "plan_run",
        "planned",
        Some(plan_id.as_str()),
        None,
        json!({
            "owner": body.team_id, "price_per_hour_usd": body.price.per_hour_usd,
            "blocked": body.blocked.is_some(), "overrides": body.overrides,
        }),
    )
    .await;
    let confirmation =
        crate::confirm::plan_note(state.policy.confirm, "launch_run", plan_id.as_str());
    let headline = headline(&body, owner, body.blocked.is_some());
    Ok(Outcome::done(
        format!("{headline}\n{summary}"),
        PlanOut {
            plan_id: plan_id.to_string(),
            expires_at: expires.to_rfc3339(),
            summary,
            owner: body.team_id.clone(),
            mode: body.mode.clone(),
            model: body.model.clone(),
            run_name: body.run_name.clone(),
            gpus: body.gpus,
            gpu_type: body.gpu_type.clone(),
            price_per_hour_usd: body.price.per_hour_usd,
            price_basis: body.price.basis.clone(),
            volume: body.volume.clone(),
            env: body.env_names.clone(),
            max_steps: body.max_steps,
            checks: p.checks,
            duplicates: p.duplicates,
            blocked: body.blocked.clone(),
            confirmation,
            request: body.request.to_value(),
            request_digest,
            content_digest,
        },
    ))
}

/// The runs the duplicate verdict relates to the plan, as the plan lists them.
fn duplicate_items(related: &[(&RlRun, duplicates::Relation)]) -> Vec<DuplicateItem> {
    related
        .iter()
        .map(|(r, rel)| DuplicateItem {
            run_id: r.id.clone(),
            // The platform's name for another run: bounded and on one line in the answer.
            name: r
                .name
                .as_deref()
                .map(|n| factory_policies::untrusted::one_line(n, 128)),
            status: r.status.clone(),
            created_at: r.created_at.clone(),
            relation: rel.as_str().into(),
        })
        .collect()
}

/// The cached-weights caveat, for the person's screen (it is also among the checks).
fn weights_notes(report: &validation::Report) -> Vec<String> {
    report
        .findings
        .iter()
        .filter(|f| {
            f.severity == validation::FindingSeverity::Warning
                && f.source == validation::FindingSource::Account
                && f.path == "model.name"
        })
        .map(|f| f.message.clone())
        .collect()
}

/// Refuse a secret value in any argument, check the env names, and list the arguments the
/// assistant set that change what runs.
fn screen_arguments(
    state: &AppState,
    args: &PlanRunArgs,
    call: &Call,
) -> Result<(Vec<String>, Vec<String>), ToolError> {
    if let Err(findings) = state.secret_guard.check_json(&call.arguments, "arguments") {
        return Err(secret_refusal(&findings));
    }
    let env_names = forwarding::check_env_names(args.env.as_deref().unwrap_or_default())
        .map_err(|e| ToolError::bad_argument(e.to_string()))?;
    forwarding::check_values_held(&env_names, |n| state.secret_value(n).is_some()).map_err(
        |e| {
            crate::meter::refusal(crate::meter::Refusal::SecretForwarding);
            refuse(e)
        },
    )?;
    request::check_argument_names(args)?;
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
    Ok((env_names, overrides))
}

/// A config read, guarded and validated (account facts not yet applied).
struct ValidatedConfig {
    doc: toml::Table,
    path: Option<String>,
    sha256: Option<String>,
    report: validation::Report,
}

async fn read_validated(
    state: &AppState,
    args: &PlanRunArgs,
    env_names: &[String],
) -> Result<ValidatedConfig, ToolError> {
    let (text, path, sha256) = read_config(state, args).await?;
    if let Err(findings) = state.secret_guard.check_toml_str(&text, "config") {
        return Err(secret_refusal(&findings));
    }
    let mut doc = validation::parse(&text)
        .map_err(|e| ToolError::bad_argument(format!("The config is not valid TOML: {e}")))?;
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
    input.forwarded_secrets = Some(env_names.to_vec());
    input.workspace = state.workspace().ok().cloned();
    let report = validation::validate(input).await;
    Ok(ValidatedConfig {
        doc,
        path,
        sha256,
        report,
    })
}

/// The plan's volume: existing, or to be created (a billable side effect).
fn volume_plan(resolved: &ResolvedLaunch, volumes: &[Volume]) -> Option<VolumePlan> {
    resolved.volume_name.as_ref().map(|name| {
        let exists = volumes.iter().any(|v| &v.name == name);
        VolumePlan {
            name: name.clone(),
            size: if exists {
                "existing".into()
            } else {
                resolved.volume_size.clone().unwrap_or_else(|| "5Ti".into())
            },
            create: !exists,
        }
    })
}

/// The checks a plan lists: the duplicate verdict's, the config's warnings, max_steps, the
/// notes on what the CLI would strip, and the budgets line.
fn plan_checks(
    verdict: &[duplicates::Check],
    report: &validation::Report,
    notes: &[String],
    active: &[ActiveRun],
) -> Vec<CheckItem> {
    let mut checks: Vec<CheckItem> = verdict
        .iter()
        .map(|c| CheckItem {
            check: c.check.into(),
            status: c.status.into(),
            detail: c.detail.clone(),
        })
        .collect();
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
            detail: n.clone(),
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
    checks
}

/// Store a plan (or a resume plan) with its digests and summary; returns the summary text.
#[allow(clippy::too_many_arguments)]
pub(super) async fn store_plan(
    state: &AppState,
    plan_id: &PlanId,
    now: DateTime<Utc>,
    expires: DateTime<Utc>,
    request_digest: &str,
    content_digest: &str,
    screen: &Summary,
    body: &PlanBody,
) -> Result<String, ToolError> {
    let summary_text = screen.to_text();
    // The structured summary travels in the body (the page renders it; `approve` too).
    let mut stored_body =
        serde_json::to_value(body).map_err(|e| refuse(format!("internal: {e}")))?;
    stored_body["summary"] =
        serde_json::to_value(screen).map_err(|e| refuse(format!("internal: {e}")))?;
    state
        .store()?
        .put_plan(&PlanRecord {
            id: plan_id.to_string(),
            created_at: now,
            expires_at: expires,
            request_digest: request_digest.to_string(),
            content_digest: content_digest.to_string(),
            owner: body.team_id.clone(),
            summary_text: summary_text.clone(),
            body: stored_body,
        })
        .await
        .map_err(|e| ToolError::unavailable(format!("cannot store the plan: {e}")))?;
    Ok(summary_text)
}

fn headline(body: &PlanBody, owner: &Owner, blocked: bool) -> String {
    format!(
        "Planned {} on {}: {} GPU(s), {}{}",
        body.model.as_deref().unwrap_or("a run"),
        owner.label,
        body.gpus
            .map(|g| g.to_string())
            .unwrap_or_else(|| "?".into()),
        match (body.price.per_hour_usd, body.price.reserved) {
            (Some(p), _) => format!("${p:.2}/h"),
            (None, true) => launch::RESERVED_NOT_COUNTED.to_string(),
            (None, false) => "price unknown".into(),
        },
        if blocked {
            " — BLOCKED (see blocked)"
        } else {
            ""
        }
    )
}

pub(super) fn secret_refusal(findings: &[factory_policies::SecretFinding]) -> ToolError {
    crate::meter::refusal(crate::meter::Refusal::SecretValue);
    refuse(format!(
        "Refused: an argument carries a secret value, and secrets are passed by name only.\n- {}\nRemove the value; for a run's W&B or Hugging Face credentials pass env: [\"WANDB_API_KEY\"] / [\"HF_TOKEN\"] and set them in the server's environment.",
        findings
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("\n- ")
    ))
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
