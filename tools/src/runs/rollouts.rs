//! The RL signals: `get_rollouts` (sample rollouts, long texts shortened; every sample of a step,
//! whole, written to a file on request) and
//! `get_distributions` (reward and advantage histograms).
use std::sync::Arc;

use factory_platform::{DistributionsQuery, SamplesQuery};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{
    error::ToolError,
    export::{self, Exported, FileFormat, ToFile},
    reply::{Outcome, ToolResult},
    server::Call,
    state::{AppState, check_id},
};

use super::*;

// ---- get_rollouts ----------------------------------------------------------------------------

/// Longest string kept inside one rollout sample (prompts and completions can be long).
const SAMPLE_STRING_CHARS: usize = 2000;
/// Samples per platform page while exporting (the CLI's page size).
const EXPORT_PAGE: u32 = 100;
/// Most samples one export writes.
const MAX_EXPORT_SAMPLES: usize = 10_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RolloutsArgs {
    pub run_id: String,
    /// Training step (default: the latest step with samples).
    #[schemars(range(min = 0))]
    pub step: Option<i64>,
    /// Page, from 1 (default 1).
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    /// Samples per page, 1 to 50 (default 10).
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
    /// Write every sample of the step, whole, to a file (default jsonl).
    pub to_file: Option<ToFile>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RolloutsOut {
    pub run_id: String,
    pub step: Option<i64>,
    pub samples: Vec<Value>,
    pub count: usize,
    pub total: Option<u64>,
    pub page: u32,
    pub total_pages: Option<u64>,
    pub truncated: bool,
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exported: Option<Exported>,
}

/// Shorten every string longer than `max` chars inside `v`.
fn shorten_strings(v: &mut Value, max: usize) -> bool {
    match v {
        Value::String(s) if s.chars().count() > max => {
            let cut: String = s.chars().take(max).collect();
            let dropped = s.chars().count() - max;
            *s = format!("{cut}… [{dropped} more characters]");
            true
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |acc, i| shorten_strings(i, max) | acc),
        Value::Object(map) => map
            .values_mut()
            .fold(false, |acc, i| shorten_strings(i, max) | acc),
        _ => false,
    }
}

pub(super) async fn get_rollouts(
    state: Arc<AppState>,
    args: RolloutsArgs,
    _call: Call,
) -> ToolResult<RolloutsOut> {
    check_id("run", &args.run_id)?;
    let page = args.page.unwrap_or(1);
    let limit = args.limit.unwrap_or(10);
    if page == 0 || !(1..=50).contains(&limit) {
        return Err(ToolError::new(format!(
            "`page` starts at 1 and `limit` is 1 to 50; got page {page}, limit {limit}"
        )));
    }
    // Resolved before the platform is asked, so a bad dest_dir fails fast.
    let target = match &args.to_file {
        Some(t) => Some(t.target(&state, &args.run_id, FileFormat::Jsonl)?),
        None => None,
    };
    let platform = state.platform()?;
    let step = match args.step {
        Some(s) if s < 0 => {
            return Err(ToolError::new(format!("`step` must be 0 or more; got {s}")));
        }
        Some(s) => Some(s),
        None => {
            let p = platform
                .get_progress(&args.run_id)
                .await
                .map_err(|e| not_found_or(&args.run_id, "get progress of run", e))?;
            p.steps_with_samples.iter().copied().max()
        }
    };
    let Some(step) = step else {
        return Ok(Outcome::done(
            format!("Run {} has no rollout samples yet", args.run_id),
            RolloutsOut {
                run_id: args.run_id,
                step: None,
                samples: Vec::new(),
                count: 0,
                total: Some(0),
                page,
                total_pages: Some(0),
                truncated: false,
                note: Some(
                    "No step has samples yet (SFT runs have none; RL runs have them once steps complete). watch_run until_step 1, then call again.".into(),
                ),
                exported: None,
            },
        ));
    };
    if let Some(target) = target {
        return export_step(&state, args.run_id, step, target).await;
    }
    let resp = platform
        .get_samples(&args.run_id, &SamplesQuery { step, page, limit })
        .await
        .map_err(|e| not_found_or(&args.run_id, "get samples of run", e))?;
    let budget = state.limits.log_bytes;
    let mut used = 0usize;
    let mut truncated = false;
    let mut samples = Vec::new();
    for mut s in resp.samples.into_iter().take(limit as usize) {
        truncated |= shorten_strings(&mut s, SAMPLE_STRING_CHARS);
        let cost = serde_json::to_string(&s).map(|t| t.len()).unwrap_or(0);
        if used + cost > budget && !samples.is_empty() {
            truncated = true;
            break;
        }
        used += cost;
        samples.push(s);
    }
    let count = samples.len();
    let note = truncated.then(|| {
        "Some texts or samples were cut to keep the answer small: ask for fewer samples (limit) or the next page, or write them whole with to_file.".to_string()
    });
    Ok(Outcome::done(
        format!(
            "{count} rollout sample(s) of run {} at step {step}{}",
            args.run_id,
            resp.total
                .map(|t| format!(" ({t} in all)"))
                .unwrap_or_default()
        ),
        RolloutsOut {
            run_id: args.run_id,
            step: Some(step),
            samples,
            count,
            total: resp.total,
            page,
            total_pages: resp.total_pages,
            truncated,
            note,
            exported: None,
        },
    ))
}

/// Writes every sample of `step` (all pages, texts whole, redacted) into the export file.
async fn export_step(
    state: &Arc<AppState>,
    run_id: String,
    step: i64,
    (dest, format): (std::path::PathBuf, FileFormat),
) -> ToolResult<RolloutsOut> {
    let platform = state.platform()?;
    let mut rows = Vec::new();
    let mut total = None;
    let mut page = 1;
    let mut capped = false;
    loop {
        let resp = platform
            .get_samples(
                &run_id,
                &SamplesQuery {
                    step,
                    page,
                    limit: EXPORT_PAGE,
                },
            )
            .await
            .map_err(|e| not_found_or(&run_id, "get samples of run", e))?;
        total = resp.total.or(total);
        let got = resp.samples.len();
        rows.extend(resp.samples);
        if rows.len() >= MAX_EXPORT_SAMPLES {
            capped =
                rows.len() > MAX_EXPORT_SAMPLES || total.is_none_or(|t| t as usize > rows.len());
            rows.truncate(MAX_EXPORT_SAMPLES);
            break;
        }
        // The page counts decide when they are known (the platform may serve fewer than asked
        // per page); otherwise an empty page ends it.
        let last_page = resp.total_pages.is_some_and(|p| u64::from(page) >= p)
            || total.is_some_and(|t| rows.len() as u64 >= t);
        if got == 0 || last_page {
            break;
        }
        page += 1;
    }
    let exported =
        export::write_rows(state, dest, &format!("rollouts_step_{step}"), format, rows).await?;
    let note = capped.then(|| {
        format!("The file holds the first {MAX_EXPORT_SAMPLES} samples of the step, the most one export writes.")
    });
    Ok(Outcome::done(
        format!(
            "{} rollout sample(s) of run {run_id} at step {step} written to {}",
            exported.rows, exported.path
        ),
        RolloutsOut {
            run_id,
            step: Some(step),
            samples: Vec::new(),
            count: 0,
            total,
            page: 1,
            total_pages: None,
            truncated: capped,
            note,
            exported: Some(exported),
        },
    ))
}

// ---- get_distributions -----------------------------------------------------------------------

/// Most histogram bins returned.
const MAX_BINS: usize = 200;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistributionsArgs {
    pub run_id: String,
    /// Distribution type, e.g. rewards (the platform's default), advantages.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Training step (default: the platform's latest).
    #[schemars(range(min = 0))]
    pub step: Option<i64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DistributionsOut {
    pub run_id: String,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub step: Option<i64>,
    pub bins: Vec<Value>,
    pub bin_count: usize,
    pub total_count: Option<u64>,
    pub truncated: bool,
}

pub(super) async fn get_distributions(
    state: Arc<AppState>,
    args: DistributionsArgs,
    _call: Call,
) -> ToolResult<DistributionsOut> {
    check_id("run", &args.run_id)?;
    if let Some(k) = &args.kind {
        let ok = !k.is_empty()
            && k.len() <= 64
            && !k.contains("..")
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
        if !ok {
            return Err(ToolError::new(
                "`type` is a distribution name such as rewards: letters, digits, '_', '-', '.', '/' (at most 64).",
            ));
        }
    }
    if let Some(s) = args.step.filter(|s| *s < 0) {
        return Err(ToolError::new(format!("`step` must be 0 or more; got {s}")));
    }
    let resp = state
        .platform()?
        .get_distributions(
            &args.run_id,
            &DistributionsQuery {
                kind: args.kind.clone(),
                step: args.step,
            },
        )
        .await
        .map_err(|e| not_found_or(&args.run_id, "get distributions of run", e))?;
    let mut bins = resp.bins;
    let truncated = bins.len() > MAX_BINS;
    bins.truncate(MAX_BINS);
    let counts: Vec<u64> = bins
        .iter()
        .filter_map(|b| b.get("count").and_then(Value::as_u64))
        .collect();
    let total_count = (!counts.is_empty()).then(|| counts.iter().sum());
    let step = resp.step.or(args.step);
    let bin_count = bins.len();
    Ok(Outcome::done(
        format!(
            "{bin_count} {} bin(s) of run {}{}",
            args.kind.as_deref().unwrap_or("distribution"),
            args.run_id,
            step.map(|s| format!(" at step {s}")).unwrap_or_default()
        ),
        DistributionsOut {
            run_id: args.run_id,
            kind: args.kind,
            step,
            bins,
            bin_count,
            total_count,
            truncated,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_sample_texts_are_shortened() {
        let mut v = serde_json::json!({"completion": [{"content": "x".repeat(3000)}], "reward": 1});
        assert!(shorten_strings(&mut v, 100));
        let s = v["completion"][0]["content"].as_str().unwrap();
        assert!(s.starts_with(&"x".repeat(100)) && s.contains("2900 more"));
    }
}
