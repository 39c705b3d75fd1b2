//! `validate_config`: the native prime-rl validator, the account-aware checks when the platform
//! is reachable (model, GPU type, volume, schema drift through `prepare`), and the optional
//! authoritative checkers.

use std::{sync::Arc, time::Duration};

use factory_platform::{
    PrepareOutcome,
    wire::runs::{PrepareRequest, TrainingMode},
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    catalogue, owner,
    reply::{Outcome, ToolError, ToolResult},
    server::{Call, ServerTool},
    state::AppState,
    validation::{self, ValidationInput},
};

pub(crate) fn tools() -> Vec<ServerTool<AppState>> {
    vec![ServerTool::new(
        &catalogue::VALIDATE_CONFIG,
        validate_config,
    )]
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateArgs {
    /// Path of the TOML under the workspace (or give config_toml).
    pub config_path: Option<String>,
    /// The TOML itself (or give config_path).
    pub config_toml: Option<String>,
    /// Treat the config as SFT (the CLI's --sft).
    pub sft: Option<bool>,
    /// Check against this owner's account (else the active team).
    pub team_id: Option<String>,
    pub personal: Option<bool>,
    /// Skip the account-aware checks (model, GPU type, volume, schema drift).
    pub offline: Option<bool>,
    /// Not an argument any more (hidden from the schema; refused with how a person enables it):
    /// the checkers run code, so the policy's `[validate]` turns them on.
    #[schemars(skip)]
    pub prime_rl_checkout: Option<String>,
    #[schemars(skip)]
    pub prime_cli: Option<bool>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct ValidateOut {
    pub valid: bool,
    /// rl or sft.
    pub mode: String,
    /// The prime-rl schema commit these rules follow.
    pub schema_commit: String,
    pub summary: SummaryOut,
    pub findings: Vec<FindingOut>,
    /// The optional and account-aware checkers, and whether they ran.
    pub checkers: Vec<CheckerOut>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SummaryOut {
    pub model: Option<String>,
    pub max_steps: Option<i64>,
    pub seq_len: Option<i64>,
    pub gpus: GpusOut,
    pub gpu_type: Option<String>,
    pub volume: Option<String>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct GpusOut {
    pub trainer: Option<u64>,
    pub inference: Option<u64>,
    pub total: Option<u64>,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct FindingOut {
    /// error, warning or info.
    pub severity: String,
    /// Dotted path of the key, e.g. deployment.num_train_gpus.
    pub path: String,
    pub message: String,
    pub hint: Option<String>,
    /// native, account, prime_rl_checkout or prime_cli.
    pub source: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct CheckerOut {
    pub name: String,
    pub status: String,
    pub detail: String,
}

/// `validate_config`, as its steps: refuse secret arguments, read the config, validate it
/// natively (plus any checker the policy enables), check it against the account, shape the
/// answer.
async fn validate_config(
    state: Arc<AppState>,
    args: ValidateArgs,
    call: Call,
) -> ToolResult<ValidateOut> {
    refuse_secret_arguments(&state, &call)?;
    let text = read_config_text(&state, &args)?;
    let mut report = validate_text(&state, &args, &text).await?;
    if args.offline == Some(true) {
        report.checker("account", validation::Status::Skipped, "offline: true");
    } else if let Ok(platform) = state.platform() {
        check_account(&state, platform, &args, &text, &mut report).await?;
    } else {
        report.checker(
            "account",
            validation::Status::Skipped,
            "no platform credentials",
        );
    }
    report.finish();
    answer(report)
}

/// Secrets are passed by name only: an argument carrying a value is refused outright.
fn refuse_secret_arguments(state: &AppState, call: &Call) -> Result<(), ToolError> {
    match state.secret_guard.check_json(&call.arguments, "arguments") {
        Ok(()) => Ok(()),
        Err(findings) => {
            crate::meter::refusal(crate::meter::Refusal::SecretValue);
            Err(ToolError::new(format!(
                "Refused: an argument carries a secret value; secrets are passed by name only.\n- {}",
                findings
                    .iter()
                    .map(|f| f.to_string())
                    .collect::<Vec<_>>()
                    .join("\n- ")
            )))
        }
    }
}

/// The TOML text: `config_toml` as given, or the file at `config_path` (inside the workspace,
/// size-limited, UTF-8).
fn read_config_text(state: &AppState, args: &ValidateArgs) -> Result<String, ToolError> {
    match (&args.config_path, &args.config_toml) {
        (Some(_), Some(_)) => Err(ToolError::new(
            "`config_path` and `config_toml` exclude each other: pass one.",
        )),
        (None, None) => Err(ToolError::new(
            "Pass `config_path` (a TOML file under the workspace) or `config_toml` (its text).",
        )),
        (None, Some(t)) => Ok(t.clone()),
        (Some(p), None) => {
            let ws = state.workspace()?;
            let path = ws
                .resolve_existing(p)
                .map_err(|e| ToolError::new(format!("config_path: {e}")))?;
            let bytes = factory_policies::files::read_file(
                ws,
                &path,
                factory_policies::files::ReadLimits::CONFIG,
            )
            .map_err(|e| ToolError::new(format!("config_path: {e}")))?;
            String::from_utf8(bytes)
                .map_err(|_| ToolError::new(format!("{} is not UTF-8 text", path.display())))
        }
    }
}

/// The native validation against the pinned schema copy, the workspace-file warnings, and the
/// checkers the policy enables (a checkout's own schema, the `prime` CLI).
async fn validate_text(
    state: &AppState,
    args: &ValidateArgs,
    text: &str,
) -> Result<validation::Report, ToolError> {
    let (checkout, checkout_refused, prime_cli) =
        crate::checker_gate::gate(state, args.prime_rl_checkout.as_deref(), args.prime_cli)?;
    let mut input = ValidationInput::new(text);
    input.sft = args.sft.unwrap_or(false);
    input.prime_rl_checkout = checkout;
    input.prime_cli = prime_cli;
    input.timeout = Duration::from_secs(state.policy.validate.checker_timeout_s);
    input.search_path = crate::checker_gate::search_path(state);
    input.workspace = state.workspace().ok().cloned();
    let mut report = validation::validate(input).await;
    if let Some(why) = checkout_refused {
        report.checker("prime_rl_checkout", validation::Status::Failed, why);
    }
    Ok(report)
}

/// The account-aware checks: the owner's models, GPU types and volumes, and schema drift
/// through `prepare` (with the config's image tag and source ref).
async fn check_account(
    state: &AppState,
    platform: &factory_platform::PlatformClient,
    args: &ValidateArgs,
    text: &str,
    report: &mut validation::Report,
) -> Result<(), ToolError> {
    let scope = owner::scope(args.team_id.as_deref(), args.personal, &state.policy)?;
    let team = platform.team_for(&scope);
    let scope = owner::scope_of(&team);
    let doc = validation::parse(text).ok();
    let top = |k: &str| {
        doc.as_ref()
            .and_then(|d| d.get(k))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let prepare = PrepareRequest {
        mode: if report.mode.as_str() == "sft" {
            TrainingMode::Sft
        } else {
            TrainingMode::Rl
        },
        team_id: team.clone(),
        image_tag: top("image_tag"),
        source_ref: top("source_ref"),
    };
    let (models, gpu_types, volumes, prep) = tokio::join!(
        platform.available_models(&scope),
        platform.gpu_types(&scope),
        platform.list_volumes(&scope),
        platform.prepare_run(&prepare)
    );
    let mut unread = None;
    // The same account rules as plan_run (GPU types on every capacity the owner has, cached
    // weights as a warning on on-demand and an error where they cannot get there).
    match (models, volumes) {
        (Ok(models), Ok(volumes)) => {
            let account = crate::launch::checks::Account {
                models,
                // The models' clusters and offers still name most types; a missing route is no error.
                gpu_types: gpu_types.map(|g| g.gpu_types).unwrap_or_default(),
                volumes,
            };
            crate::launch::checks::apply_account(report, &account);
        }
        (Err(e), _) => unread = Some(format!("models: {e}")),
        (Ok(_), Err(e)) => unread = Some(format!("volumes: {e}")),
    }
    let mut facts = validation::AccountFacts::default();
    match prep {
        Ok(PrepareOutcome::Prepared(p)) => {
            facts.prepare_schema_commit = Some(p.runtime.schema_commit.clone())
        }
        Ok(PrepareOutcome::NotSupported { .. }) => report.checker(
            "schema drift",
            validation::Status::Skipped,
            "the platform does not offer prepare (404/405)",
        ),
        Err(e) => report.checker(
            "schema drift",
            validation::Status::Failed,
            format!("prepare: {e}"),
        ),
    }
    validation::apply_account_facts(report, &facts);
    match unread {
        // Said last, so no later entry hides that the account could not be read.
        Some(why) => report.checker("account", validation::Status::Failed, why),
        None => report.checker(
            "account",
            validation::Status::Ran,
            format!(
                "checked against the {}",
                owner::owner_label(team.as_deref(), None)
            ),
        ),
    }
    Ok(())
}

/// The report as the tool's answer, with a one-line verdict.
fn answer(report: validation::Report) -> ToolResult<ValidateOut> {
    let value =
        serde_json::to_value(&report).map_err(|e| ToolError::new(format!("internal: {e}")))?;
    let out: ValidateOut =
        serde_json::from_value(value).map_err(|e| ToolError::new(format!("internal: {e}")))?;
    let count = |severity: &str| {
        out.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    };
    let (errors, warnings) = (count("error"), count("warning"));
    let summary = if out.valid {
        format!(
            "Valid {} config ({warnings} warning(s))",
            out.mode.to_uppercase()
        )
    } else {
        format!(
            "Invalid {} config: {errors} error(s), {warnings} warning(s)",
            out.mode.to_uppercase()
        )
    };
    Ok(Outcome::done(summary, out))
}
