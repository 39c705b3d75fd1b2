//! The account side of a plan: what the owner's account offers (models, GPU types, volumes),
//! the capacity the plan would run on and whether its model's weights can get there
//! (`factory_policies::capacity`), and the platform's `prepare` handshake, asked before a
//! person is, so a ref the team may not use or a schema drift shows in the plan.

use factory_platform::{
    PlatformClient, PlatformError, PrepareOutcome,
    wire::{
        account::AvailableModels,
        runs::{PrepareRequest, TrainingMode},
        volumes::Volume,
    },
};
use factory_policies::{
    capacity::{self, Capacity, Weights},
    launch,
};

use super::{plan::CheckItem, request::ResolvedLaunch};
use crate::{
    error::ToolError,
    owner::scope_of,
    state::platform_error,
    validation::{self, FindingSource, ValidationFinding},
};

/// What the owner's account offers.
pub(crate) struct Account {
    pub(crate) models: AvailableModels,
    /// `available-gpu-types` (empty when the platform has no such route).
    pub(crate) gpu_types: Vec<String>,
    pub(crate) volumes: Vec<Volume>,
}

/// Read the owner's models, GPU types and volumes at once.
pub(super) async fn gather(
    platform: &PlatformClient,
    team: &Option<String>,
) -> Result<Account, ToolError> {
    let scope = scope_of(team);
    let (models, gpu_types, volumes) = tokio::join!(
        platform.available_models(&scope),
        platform.gpu_types(&scope),
        platform.list_volumes(&scope)
    );
    Ok(Account {
        models: models.map_err(|e| platform_error("list trainable models", &e))?,
        // The models' clusters and offers still name most types; a missing route is no error.
        gpu_types: gpu_types.map(|g| g.gpu_types).unwrap_or_default(),
        volumes: volumes.map_err(|e| platform_error("list volumes", &e))?,
    })
}

/// Apply the account's facts to the report — GPU types (on-demand ∪ available ∪ the models'
/// clusters), volumes, capacity and cached weights — as findings; the capacity the config would
/// run on. Shared by `plan_run` (which refuses on any error) and `validate_config` (which
/// reports), so both judge a config alike.
pub(crate) fn apply_account(report: &mut validation::Report, account: &Account) -> Capacity {
    validation::apply_account_facts(
        report,
        &validation::AccountFacts {
            // Whether the model is cached is the capacity rule's (below), not a config error.
            trainable_models: None,
            gpu_types: Some(capacity::usable_gpu_types(
                &account.models,
                &account.gpu_types,
            )),
            volumes: Some(account.volumes.iter().map(|v| v.name.clone()).collect()),
            prepare_schema_commit: None,
            prior_runs: None,
        },
    );
    let s = &report.summary;
    let capacity = capacity::resolve(
        &account.models,
        &account.gpu_types,
        s.model.as_deref(),
        s.gpu_type.as_deref(),
    );
    let mut findings = Vec::new();
    match capacity::weights(
        &account.models,
        s.model.as_deref(),
        &capacity,
        s.volume.as_deref(),
    ) {
        Weights::Cached => {}
        Weights::Warning(w) => findings.push(ValidationFinding::warning("model.name", w)),
        Weights::Error(e) => findings.push(ValidationFinding::error("model.name", e)),
    }
    if let Some(e) = capacity::on_demand_refusal(&account.models, &capacity) {
        findings.push(ValidationFinding::error("gpu_type", e));
    }
    report.extend(
        findings
            .into_iter()
            .map(|f| f.from_source(FindingSource::Account)),
    );
    capacity
}

/// Apply the account's facts ([`apply_account`]) and refuse the plan on any error.
pub(super) fn refuse_config_errors(
    report: &mut validation::Report,
    account: &Account,
) -> Result<Capacity, ToolError> {
    let capacity = apply_account(report, account);
    report.finish();
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
    if errors.is_empty() {
        return Ok(capacity);
    }
    Err(ToolError::bad_argument(format!(
        "The config has {} error(s); nothing was planned:\n- {}\nFix them (validate_config shows every finding) and plan again.",
        errors.len(),
        errors.join("\n- ")
    )))
}

/// `prepare` for the plan's request (§6.2), as `prime train run` asks it before its prompt:
/// 404/405 → the platform has none, go on; a refusal (403 for a ref the team may not use) or a
/// malformed answer → the plan is refused; an outage → a warning. A schema drift is a warning.
pub(super) async fn prepare(
    platform: &PlatformClient,
    resolved: &ResolvedLaunch,
    sft: bool,
    doc: &toml::Table,
) -> Result<CheckItem, ToolError> {
    let item = |status: &str, detail: String| CheckItem {
        check: "prepare".into(),
        status: status.into(),
        detail,
    };
    // §6.2: not called for an SFT config with its own eval/inference/weight_broadcast blocks.
    if sft
        && ["eval", "inference", "weight_broadcast"]
            .iter()
            .any(|k| doc.contains_key(*k))
    {
        return Ok(item(
            "ok",
            "not asked (an SFT config with eval/inference blocks, as the CLI does)".into(),
        ));
    }
    let mode = if sft {
        TrainingMode::Sft
    } else {
        TrainingMode::Rl
    };
    let request = PrepareRequest {
        mode,
        team_id: resolved.spec.team_id.clone(),
        image_tag: resolved.image_tag.clone(),
        source_ref: resolved.source_ref.clone(),
    };
    match platform.prepare_run(&request).await {
        Ok(PrepareOutcome::NotSupported { status }) => Ok(item(
            "ok",
            format!(
                "the platform has no prepare ({status}); it validates the config on submission"
            ),
        )),
        Ok(PrepareOutcome::Prepared(p)) => {
            if p.submission_supported && p.mode != mode {
                return Err(ToolError::new(
                    "The platform's prepare answered for another training mode than this config's: check `sft` (or the config's [data]/[trainer] sections) and plan again.",
                ));
            }
            let commit = &p.runtime.schema_commit;
            Ok(match factory_config::account::schema_drift(commit) {
                Some(f) => item(
                    "warning",
                    format!("{} — {}", f.message, f.hint.unwrap_or_default()),
                ),
                None => item(
                    "ok",
                    format!("the platform validates against prime-rl {commit}, as these rules do"),
                ),
            })
        }
        Err(e) => prepare_failure(&e, resolved).map(|detail| item("warning", detail)),
    }
}

/// A failed prepare: refused when the platform said no, else a warning to carry on with.
fn prepare_failure(e: &PlatformError, resolved: &ResolvedLaunch) -> Result<String, ToolError> {
    let malformed = matches!(e, PlatformError::Decode { .. });
    if !launch::prepare_failure_stops(e.status(), e.is_timeout(), malformed) {
        return Ok(format!(
            "prepare failed ({e}); the platform still validates the config on submission"
        ));
    }
    let hint = match (e.status(), &resolved.source_ref) {
        (Some(403), Some(_)) => {
            " Custom source refs are restricted to allowlisted teams: drop source_ref, or plan for a team that may use it (list_teams)."
        }
        _ => " Nothing was planned; fix what it names and plan again.",
    };
    Err(ToolError::new(format!(
        "The platform refused to prepare this launch: {}.{hint}",
        e.to_string().trim_end_matches('.')
    )))
}
