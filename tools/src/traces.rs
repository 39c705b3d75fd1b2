//! Trace tools: `list_traces` (a run's rollout traces, train or eval, optionally one step) and
//! `fetch_traces` (their raw documents, byte-exact, into a directory under the workspace).
//!
//! The traces service keys traces by its own `run_id`. That a hosted run's train traces carry
//! the platform run id, and that its eval traces sit under a trace run of type `eval` whose id
//! starts with the platform run id, is our inference (the API does not document it).

use std::{path::PathBuf, sync::Arc};

use factory_platform::{
    EpisodesQuery, PlatformClient, PlatformError, TeamScope, TraceRunsQuery, TracesQuery,
    wire::traces::TraceSummary,
};
use rmcp::model::ProgressNotificationParam;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    catalogue,
    reply::{Outcome, ToolError, ToolResult},
    server::{Call, ServerTool},
    state::{AppState, check_id, platform_error},
};

pub(crate) fn tools() -> Vec<ServerTool<AppState>> {
    vec![ServerTool::new(&catalogue::LIST_TRACES, list_traces)]
}

#[derive(Debug, Clone, Copy, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TraceKind {
    /// Rollouts of training steps.
    #[default]
    Train,
    /// Rollouts of evaluations.
    Eval,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListTracesArgs {
    pub run_id: String,
    /// train (default) or eval.
    pub kind: Option<TraceKind>,
    /// Only traces of this training step.
    #[schemars(range(min = 0))]
    pub step: Option<i64>,
    /// Traces per page, 1 to 100 (default 20).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TraceItem {
    pub trace_id: String,
    pub episode_id: Option<String>,
    pub created_at: Option<String>,
    pub environment_id: Option<String>,
    pub reward: Option<f64>,
    pub outcome: Option<String>,
    pub has_error: bool,
    pub is_truncated: bool,
    pub total_tokens: Option<u64>,
    pub size_bytes: Option<u64>,
}

impl From<&TraceSummary> for TraceItem {
    fn from(t: &TraceSummary) -> Self {
        TraceItem {
            trace_id: t.trace_id.clone(),
            episode_id: t.episode_id.clone(),
            created_at: t.created_at.clone(),
            environment_id: t.environment_id.clone(),
            reward: t.score.reward,
            outcome: t.score.outcome.clone(),
            has_error: t.execution.has_error,
            is_truncated: t.execution.is_truncated,
            total_tokens: t.total_tokens,
            size_bytes: t.size_bytes,
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ListTracesOut {
    pub run_id: String,
    pub kind: TraceKind,
    /// The traces service's run id(s) these traces were read from.
    pub trace_run_ids: Vec<String>,
    pub step: Option<i64>,
    pub traces: Vec<TraceItem>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// Most pages read when looking for a run's eval trace runs.
const EVAL_SCAN_PAGES: usize = 20;
/// Most traces one `fetch_traces` call will download.
const MAX_FETCH_TRACES: usize = 20_000;
/// Most file entries listed in a `fetch_traces` result (the counts cover all of them).
const MAX_LISTED_FILES: usize = 200;

/// The traces-service run ids holding this platform run's traces of `kind`.
async fn trace_runs(
    platform: &PlatformClient,
    scope: &TeamScope,
    run_id: &str,
    kind: TraceKind,
) -> Result<Vec<String>, ToolError> {
    if kind == TraceKind::Train {
        return Ok(vec![run_id.to_string()]);
    }
    let traces = platform.traces_scoped(scope);
    let mut found = Vec::new();
    let mut cursor = None;
    for _ in 0..EVAL_SCAN_PAGES {
        let page = traces
            .list_runs(&TraceRunsQuery {
                limit: 100,
                run_types: vec!["eval".into()],
                cursor: cursor.take(),
                ..TraceRunsQuery::default()
            })
            .await
            .map_err(|e| platform_error("list eval trace runs", &e))?;
        found.extend(
            page.items
                .iter()
                .filter(|r| r.run_id == run_id || r.run_id.starts_with(&format!("{run_id}-")))
                .map(|r| r.run_id.clone()),
        );
        match page.next_cursor {
            Some(c) => cursor = Some(c),
            None => break,
        }
    }
    Ok(found)
}

/// The traces service is scoped by the run's own team (header `X-Prime-Team-ID`), not the active
/// one: a team run's traces are invisible under another scope. Reading the run also tells a
/// run that does not exist (or is not visible) from one with no traces yet.
async fn run_scope(state: &AppState, run_id: &str) -> Result<TeamScope, ToolError> {
    let run = crate::run_view::fetch_run(state, run_id).await?;
    Ok(match run.team_id {
        Some(t) => TeamScope::Team(t),
        None => TeamScope::Personal,
    })
}

fn trace_error(run_id: &str, e: PlatformError) -> ToolError {
    match e {
        PlatformError::NotFound { .. } => ToolError::new(format!(
            "No traces found for run {run_id} on the traces service (it may not have produced any yet; get_progress shows its steps)."
        )),
        e => platform_error(&format!("list traces of run {run_id}"), &e),
    }
}

/// One page of traces: of the run, or of one step (through the step's episodes).
async fn traces_page(
    platform: &PlatformClient,
    scope: &TeamScope,
    trace_run: &str,
    step: Option<i64>,
    limit: u32,
    cursor: Option<String>,
) -> Result<(Vec<TraceSummary>, Option<String>), PlatformError> {
    let traces = platform.traces_scoped(scope);
    match step {
        None => {
            let page = traces
                .list_traces(&TracesQuery {
                    limit,
                    run_id: Some(trace_run.to_string()),
                    cursor,
                    ..TracesQuery::default()
                })
                .await?;
            Ok((page.items, page.next_cursor))
        }
        Some(step) => {
            let episodes = traces
                .list_episodes(&EpisodesQuery {
                    limit,
                    run_id: Some(trace_run.to_string()),
                    run_step: Some(step),
                    cursor,
                    ..EpisodesQuery::default()
                })
                .await?;
            let mut out = Vec::new();
            for ep in &episodes.items {
                let mut c = None;
                loop {
                    let page = traces
                        .list_episode_traces(
                            &ep.episode_id,
                            &TracesQuery {
                                limit: 100,
                                cursor: c.take(),
                                ..TracesQuery::default()
                            },
                        )
                        .await?;
                    out.extend(page.items);
                    match page.next_cursor {
                        Some(next) => c = Some(next),
                        None => break,
                    }
                }
            }
            Ok((out, episodes.next_cursor))
        }
    }
}

async fn list_traces(
    state: Arc<AppState>,
    args: ListTracesArgs,
    _call: Call,
) -> ToolResult<ListTracesOut> {
    check_id("run", &args.run_id)?;
    let kind = args.kind.unwrap_or_default();
    let limit = args.limit.unwrap_or(20).clamp(1, 100);
    if args.step.is_some_and(|s| s < 0) {
        return Err(ToolError::new("`step` must be 0 or more."));
    }
    let platform = state.platform()?;
    let scope = run_scope(&state, &args.run_id).await?;
    let runs = trace_runs(platform, &scope, &args.run_id, kind).await?;
    // A cursor belongs to one trace run; eval traces of several trace runs are listed from the
    // first one that has any.
    let mut traces = Vec::new();
    let mut next_cursor = None;
    for trace_run in &runs {
        let (items, next) = traces_page(
            platform,
            &scope,
            trace_run,
            args.step,
            limit,
            args.cursor.clone(),
        )
        .await
        .map_err(|e| trace_error(&args.run_id, e))?;
        traces.extend(items.iter().map(TraceItem::from));
        next_cursor = next;
        if !traces.is_empty() {
            break;
        }
    }
    let summary = format!(
        "{} {} trace(s) of run {}{}{}",
        traces.len(),
        if kind == TraceKind::Eval {
            "eval"
        } else {
            "train"
        },
        args.run_id,
        args.step
            .map(|s| format!(" at step {s}"))
            .unwrap_or_default(),
        if next_cursor.is_some() {
            "; more with next_cursor"
        } else {
            ""
        }
    );
    Ok(Outcome::done(
        summary,
        ListTracesOut {
            run_id: args.run_id,
            kind,
            trace_run_ids: runs,
            step: args.step,
            traces,
            next_cursor,
        },
    ))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FetchTracesArgs {
    pub run_id: String,
    /// Directory under the workspace to write `<trace_id>.json` files into (created if absent).
    pub dest_dir: String,
    /// train (default) or eval.
    pub kind: Option<TraceKind>,
    /// Only traces of this training step.
    #[schemars(range(min = 0))]
    pub step: Option<i64>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FetchedFile {
    pub trace_id: String,
    pub path: String,
    pub bytes: u64,
    /// Already complete on disk from an earlier call, so not downloaded again.
    pub skipped: bool,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct NotDownloaded {
    pub trace_id: String,
    pub reason: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct FetchTracesOut {
    pub run_id: String,
    pub dest_dir: String,
    pub listed: usize,
    pub downloaded: usize,
    pub skipped: usize,
    /// Bytes on disk for the listed traces (downloaded now or earlier).
    pub bytes: u64,
    /// Up to 200 of the files; the counts above cover all.
    pub files: Vec<FetchedFile>,
    pub not_downloaded: Vec<NotDownloaded>,
    /// The call was cancelled before every trace was fetched; calling again resumes.
    pub cancelled: bool,
}

fn safe_file_name(trace_id: &str) -> Option<String> {
    let ok = !trace_id.is_empty()
        && trace_id.len() <= 200
        && trace_id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
        && !trace_id.starts_with('.');
    ok.then(|| format!("{trace_id}.json"))
}

pub(crate) async fn fetch_traces(
    state: Arc<AppState>,
    args: FetchTracesArgs,
    call: Call,
) -> ToolResult<FetchTracesOut> {
    check_id("run", &args.run_id)?;
    let kind = args.kind.unwrap_or_default();
    let dest: PathBuf = state
        .workspace()?
        .resolve_for_write(&args.dest_dir)
        .map_err(|e| ToolError::new(format!("dest_dir: {e}")))?;
    let platform = state.platform()?;

    // List every trace first (whole-run pagination), so progress has a total.
    let mut all: Vec<TraceSummary> = Vec::new();
    let scope = run_scope(&state, &args.run_id).await?;
    // The run exists: only now is dest_dir created, held open and written relative to.
    let (dest_dir, staging) = crate::transfers::open(&state, &dest)?;
    for trace_run in trace_runs(platform, &scope, &args.run_id, kind).await? {
        let mut cursor = None;
        loop {
            let (items, next) =
                traces_page(platform, &scope, &trace_run, args.step, 100, cursor.take())
                    .await
                    .map_err(|e| trace_error(&args.run_id, e))?;
            all.extend(items);
            if all.len() >= MAX_FETCH_TRACES {
                break;
            }
            match next {
                Some(c) => cursor = Some(c),
                None => break,
            }
        }
    }
    all.truncate(MAX_FETCH_TRACES);

    let total = all.len();
    let progress = call.ctx.meta.get_progress_token();
    let traces = platform.traces_scoped(&scope);
    let mut out = FetchTracesOut {
        run_id: args.run_id.clone(),
        dest_dir: dest.display().to_string(),
        listed: total,
        downloaded: 0,
        skipped: 0,
        bytes: 0,
        files: Vec::new(),
        not_downloaded: Vec::new(),
        cancelled: false,
    };
    for (i, t) in all.iter().enumerate() {
        if call.ctx.ct.is_cancelled() {
            out.cancelled = true;
            break;
        }
        let Some(name) = safe_file_name(&t.trace_id) else {
            out.not_downloaded.push(NotDownloaded {
                trace_id: t.trace_id.chars().take(80).collect(),
                reason: "the id is not usable as a file name".into(),
            });
            continue;
        };
        let path = dest.join(&name);
        // Files appear under their final name only after a complete, fsynced download (the
        // platform client renames a finished temporary file), so an existing file of the
        // advertised size is complete.
        let existing = dest_dir.regular_len(name.as_ref());
        let (bytes, skipped) = match existing {
            Some(len) if t.size_bytes.is_none_or(|s| s == len) => (len, true),
            _ => match crate::transfers::trace(&traces, &t.trace_id, &staging, &dest_dir, &name)
                .await
            {
                Ok(n) => (n, false),
                Err(e) => {
                    out.not_downloaded.push(NotDownloaded {
                        trace_id: t.trace_id.clone(),
                        reason: e,
                    });
                    continue;
                }
            },
        };
        if skipped {
            out.skipped += 1;
        } else {
            out.downloaded += 1;
        }
        out.bytes += bytes;
        if out.files.len() < MAX_LISTED_FILES {
            out.files.push(FetchedFile {
                trace_id: t.trace_id.clone(),
                path: path.display().to_string(),
                bytes,
                skipped,
            });
        }
        if let Some(token) = &progress {
            let _ = call
                .ctx
                .peer
                .notify_progress(
                    ProgressNotificationParam::new(token.clone(), (i + 1) as f64)
                        .with_total(total as f64)
                        .with_message(format!("{} of {total} traces", i + 1)),
                )
                .await;
        }
    }
    let summary = format!(
        "{} trace file(s) in {} ({} downloaded, {} already complete, {} bytes){}{}",
        out.downloaded + out.skipped,
        out.dest_dir,
        out.downloaded,
        out.skipped,
        out.bytes,
        if out.not_downloaded.is_empty() {
            String::new()
        } else {
            format!("; {} not downloadable", out.not_downloaded.len())
        },
        if out.cancelled {
            "; cancelled, call again to resume"
        } else {
            ""
        }
    );
    Ok(Outcome::done(summary, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_ids_that_could_escape_are_not_file_names() {
        assert_eq!(safe_file_name("tr_123-a").as_deref(), Some("tr_123-a.json"));
        assert_eq!(safe_file_name("../etc/passwd"), None);
        assert_eq!(safe_file_name(".hidden"), None);
        assert_eq!(safe_file_name("a/b"), None);
        assert_eq!(safe_file_name(""), None);
    }
}
