//! `plan_run` with `resume_from`: plan the resume of a PAUSED run as a new billable run,
//! priced from the paused run's GPUs. Launched with `resume_run`.

use std::sync::Arc;

use chrono::Utc;
use factory_platform::{
    PlatformClient,
    wire::{account::AvailableModels, runs::RlRun},
};
use factory_policies::{
    capacity, duplicates,
    launch::{self, PlanFigures, Price},
    lifecycle, overrides,
};
use serde_json::json;

use super::{
    KIND_RESUME, PlanBody,
    plan::{CheckItem, DuplicateItem, PlanOut, PlanRunArgs, refuse, store_plan},
    request::resume_spec,
    run::enforce_budgets,
    summary,
};
use crate::{
    audit::audit,
    error::ToolError,
    ids::PlanId,
    owner::scope_of,
    reply::{Outcome, ToolResult},
    run_view::fetch_run,
    spend::{active_spend, owner_runs},
    state::{AppState, platform_error},
};

/// Plan the resume of a PAUSED run: a new billable run, priced from the paused run's GPUs.
pub(super) async fn plan_resume(
    state: Arc<AppState>,
    args: PlanRunArgs,
    env_names: Vec<String>,
    mut overrides: Vec<String>,
) -> ToolResult<PlanOut> {
    refuse_launch_only_arguments(&args)?;
    overrides.retain(|o| o == "allow_duplicate");
    let from = args.resume_from.clone().unwrap_or_default();
    let prev = fetch_run(&state, &from).await?;
    if !lifecycle::may_resume(&prev.run_status()) {
        crate::meter::refusal(crate::meter::Refusal::RunState);
        return Err(refuse(format!(
            "Run {from} is {}: only a PAUSED run can be resumed (pause_run pauses a RUNNING one).",
            prev.status
        )));
    }
    if let Some(refusal) = overrides::override_refusal(&state.policy, &overrides) {
        crate::meter::refusal(crate::meter::Refusal::Override);
        return Err(refuse(refusal));
    }
    let platform = state.platform()?;
    let priced = price_resume(&state, platform, &prev, args.gpu_type.clone()).await?;
    let team = prev.team_id.clone();
    let known = owner_runs(&state, platform, &team).await?;
    let active = active_spend(&state, known.unfinished(), &priced.models).await;
    let figures = PlanFigures {
        team: team.as_deref(),
        gpu_type: priced.gpu_type.as_deref(),
        gpus: priced.gpus,
        per_hour_usd: priced.price.per_hour_usd,
        max_steps: prev.max_steps,
        reserved: priced.price.reserved,
    };
    enforce_budgets(
        &state.policy,
        &figures,
        &active,
        "Refused by the policy",
        "",
    )?;
    let run_name = prev.name.clone().unwrap_or_default();
    let runs = known
        .with(std::slice::from_ref(&run_name), &[], &[])
        .await?;
    let resumed = duplicates::judge_resume(
        &runs,
        &prev.id,
        &run_name,
        args.allow_duplicate == Some(true),
    )
    .map_err(|e| {
        crate::meter::refusal(crate::meter::Refusal::Duplicate);
        refuse(e)
    })?;
    let duplicates: Vec<DuplicateItem> = resumed
        .iter()
        .map(|r| DuplicateItem {
            run_id: r.id.clone(),
            // The platform's name for another run: bounded and on one line in the answer.
            name: r
                .name
                .as_deref()
                .map(|n| factory_policies::untrusted::one_line(n, 128)),
            status: r.status.clone(),
            created_at: r.created_at.clone(),
            relation: duplicates::Relation::Active.as_str().into(),
        })
        .collect();
    let team_name = crate::owner::team_name(platform, team.as_deref()).await;
    let body = PlanBody {
        request: resume_spec(priced.gpu_type.clone(), args.image_tag.clone()),
        env_names,
        run_name: run_name.clone(),
        run_name_generated: false,
        owner_label: team
            .as_ref()
            .map(|t| format!("team {t}"))
            .unwrap_or_else(|| "personal account".into()),
        team_id: team,
        team_name,
        owner_source: format!("the paused run {from}"),
        config_path: None,
        config_sha256: None,
        config_digest: String::new(),
        volume: None,
        mode: if prev.is_sft() { "sft" } else { "rl" }.into(),
        model: prev.base_model.clone(),
        gpu_type: priced.gpu_type,
        gpus: priced.gpus,
        max_steps: prev.max_steps,
        price: priced.price,
        overrides,
        blocked: None,
        preexisting_same_name: runs
            .iter()
            .filter(|r| !run_name.is_empty() && r.name.as_deref() == Some(run_name.as_str()))
            .map(|r| r.id.clone())
            .collect(),
        kind: KIND_RESUME.into(),
        resume_from: Some(from.clone()),
    };
    finish_resume(&state, &from, body, duplicates, args.image_tag).await
}

/// A resume's price: on the paused run's cluster type (or the asked one), on its capacity.
struct ResumePrice {
    models: AvailableModels,
    gpu_type: Option<String>,
    gpus: Option<u64>,
    price: Price,
}

async fn price_resume(
    state: &AppState,
    platform: &PlatformClient,
    prev: &RlRun,
    asked_gpu_type: Option<String>,
) -> Result<ResumePrice, ToolError> {
    let scope = scope_of(&prev.team_id);
    let (models, gpu_types) = tokio::join!(
        platform.available_models(&scope),
        platform.gpu_types(&scope)
    );
    let models = models.map_err(|e| platform_error("list models to price the resume", &e))?;
    let gpu_types = gpu_types.map(|g| g.gpu_types).unwrap_or_default();
    let cluster_gpu = prev.prime_cluster_id.as_deref().and_then(|cid| {
        models
            .models
            .iter()
            .flat_map(|m| &m.clusters)
            .find(|c| c.cluster_id == cid)
            .and_then(|c| c.gpu_type.clone())
    });
    let gpu_type = asked_gpu_type.or(cluster_gpu);
    let gpus = prev.gpu_count.and_then(|g| u64::try_from(g).ok());
    let capacity = capacity::resolve(
        &models,
        &gpu_types,
        prev.base_model.as_deref(),
        gpu_type.as_deref(),
    );
    let price = launch::price(
        &models,
        &capacity,
        prev.base_model.as_deref(),
        gpus,
        state.policy.reserved_price_per_gpu_hour_usd,
    );
    Ok(ResumePrice {
        models,
        gpu_type,
        gpus,
        price,
    })
}

/// Digests, summary, store, audit, and the answer of a resume plan.
async fn finish_resume(
    state: &AppState,
    from: &str,
    body: PlanBody,
    duplicates: Vec<DuplicateItem>,
    image_tag: Option<String>,
) -> ToolResult<PlanOut> {
    let request_value = body.request.to_value();
    let request_digest = launch::digest(
        &json!({"resume_from": from, "request": request_value, "env": body.env_names}),
    );
    let content_digest = launch::digest(
        &json!({"resume_from": from, "gpu_type": body.gpu_type, "image_tag": image_tag, "env": body.env_names}),
    );
    let now = Utc::now();
    let plan_id = PlanId::generate();
    let expires = now + chrono::Duration::seconds(state.policy.plan_ttl_seconds as i64);
    let screen = summary::resume_summary(plan_id.as_str(), &expires, from, &body, state.sandbox);
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
        "planned_resume",
        Some(plan_id.as_str()),
        Some(from),
        json!({"price_per_hour_usd": body.price.per_hour_usd}),
    )
    .await;
    let price = match (body.price.per_hour_usd, body.price.reserved) {
        (Some(p), _) => format!("${p:.2}/h"),
        (None, true) => launch::RESERVED_NOT_COUNTED.to_string(),
        (None, false) => "price unknown".into(),
    };
    Ok(Outcome::done(
        format!("Planned the resume of {from}: {price}\n{summary}"),
        PlanOut {
            plan_id: plan_id.to_string(),
            expires_at: expires.to_rfc3339(),
            summary,
            owner: body.team_id.clone(),
            mode: body.mode.clone(),
            model: body.model.clone(),
            // The paused run's name as the platform has it (any length, any text): bounded and
            // on one line in the answer; the plan keeps it whole for reconciliation.
            run_name: factory_policies::untrusted::one_line(&body.run_name, 128),
            gpus: body.gpus,
            gpu_type: body.gpu_type.clone(),
            price_per_hour_usd: body.price.per_hour_usd,
            price_basis: body.price.basis.clone(),
            volume: None,
            env: body.env_names.clone(),
            max_steps: body.max_steps,
            checks: vec![CheckItem {
                check: "resume".into(),
                status: "ok".into(),
                detail: format!("{from} is PAUSED"),
            }],
            duplicates,
            blocked: None,
            confirmation: crate::confirm::plan_note(
                state.policy.confirm,
                "resume_run",
                plan_id.as_str(),
            ),
            request: request_value,
            request_digest,
            content_digest,
        },
    ))
}

/// A resumed run keeps the paused run's config and owner: the arguments that would change
/// them are refused.
fn refuse_launch_only_arguments(args: &PlanRunArgs) -> Result<(), ToolError> {
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
    Ok(())
}
