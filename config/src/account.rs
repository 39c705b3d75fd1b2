//! Account-aware checks as pure functions: the caller (the tool layer) fetches the facts from
//! the platform — trainable models, available GPU types, existing volumes, the `prepare`
//! answer's schema commit — and these turn them into findings with source `account`.

use crate::report::{Finding, Report, SCHEMA_COMMIT, Source};
use crate::secrets::show;

/// What the platform said about the account. `None` means "not known" (not asked, or the
/// call failed), and the corresponding check is skipped.
#[derive(Debug, Clone, Default)]
pub struct AccountFacts {
    /// Models the team may train.
    pub trainable_models: Option<Vec<String>>,
    /// GPU types available to the team.
    pub gpu_types: Option<Vec<String>>,
    /// Names of the team's existing volumes.
    pub volumes: Option<Vec<String>>,
    /// `schema_commit` from `POST /training/runs/prepare` (None when it answered 404/405).
    pub prepare_schema_commit: Option<String>,
    /// How many runs the team has launched before (for the first-run advice).
    pub prior_runs: Option<u64>,
}

/// Findings from the facts, for a report produced by [`crate::validate`].
pub(crate) fn check(report: &Report, facts: &AccountFacts) -> Vec<Finding> {
    let mut out = Vec::new();
    let s = &report.summary;
    if let (Some(models), Some(model)) = (&facts.trainable_models, &s.model)
        && !models.iter().any(|m| m == model)
    {
        let mut hint = "`list_models` shows the models this team can train".to_string();
        if let Some(close) = models.iter().find(|m| m.eq_ignore_ascii_case(model)) {
            hint = format!(
                "Names are case-sensitive: did you mean {}? {hint}",
                show("name", close)
            );
        }
        out.push(
            Finding::error(
                "model.name",
                format!(
                    "model {} is not trainable for this team",
                    show("name", model)
                ),
            )
            .hint(format!("{hint}."))
            .from_source(Source::Account),
        );
    }
    if let (Some(types), Some(gpu)) = (&facts.gpu_types, &s.gpu_type)
        && !types.iter().any(|t| t == gpu)
    {
        out.push(
            Finding::error(
                "gpu_type",
                format!("gpu_type {} is not available", show("gpu_type", gpu)),
            )
            .hint(format!(
                "Available: {}.",
                if types.is_empty() {
                    "none".to_string()
                } else {
                    types.join(", ")
                }
            ))
            .from_source(Source::Account),
        );
    }
    if let (Some(volumes), Some(volume)) = (&facts.volumes, &s.volume)
        && !volumes.iter().any(|v| v == volume)
    {
        out.push(
            Finding::warning("volume", format!("volume {} does not exist: launching will create it", show("volume", volume)))
                .hint("Creating a volume is a billable side effect (its size is volume_size, 5Ti by default). Check the name if you meant an existing one.")
                .from_source(Source::Account),
        );
    }
    if let Some(commit) = &facts.prepare_schema_commit
        && let Some(f) = schema_drift(commit)
    {
        out.push(f);
    }
    if facts.prior_runs == Some(0) {
        match s.max_steps {
            Some(n) if n > 50 => out.push(
                Finding::warning("max_steps", format!("first run with max_steps = {n}"))
                    .hint("Start with a small smoke budget (e.g. max_steps = 10) to see the config work before a long, billable run.")
                    .from_source(Source::Account),
            ),
            _ => {}
        }
    }
    out
}

/// A finding when the platform validates against another prime-rl commit than these rules.
pub fn schema_drift(platform_commit: &str) -> Option<Finding> {
    let theirs = platform_commit.trim();
    if theirs.is_empty() || SCHEMA_COMMIT.starts_with(theirs) || theirs.starts_with(SCHEMA_COMMIT) {
        return None;
    }
    let safe = theirs.chars().all(|c| c.is_ascii_alphanumeric());
    let shown = if safe {
        theirs.to_string()
    } else {
        "<not shown>".to_string()
    };
    Some(
        Finding::warning("", format!("the platform validates against prime-rl {shown}; these rules follow prime-rl {SCHEMA_COMMIT}"))
            .hint("Fields move between prime-rl commits without aliases: pin `image_tag` to an image built from the commit you wrote the config for, and trust the platform's verdict on keys that differ.")
            .from_source(Source::Account),
    )
}

/// Append the account findings to a report and record the `account` checker.
pub fn apply(report: &mut Report, facts: &AccountFacts) {
    let findings = check(report, facts);
    let n = findings.len();
    report.extend(findings);
    report.checker(
        "account",
        crate::CheckerStatus::Ran,
        format!("{n} finding(s) from platform facts"),
    );
    report.finish();
}
