//! Trace tools: `list_traces` (a run's rollout traces, train or eval, optionally one step,
//! filtered as `prime traces list` filters them, with a total and the steps whose uploads are
//! missing) and `fetch_traces` (their raw documents, byte-exact, into a directory under the
//! workspace, with a manifest, in capped calls that continue by cursor).
//!
//! The traces service keys traces by its own `run_id`. That a hosted run's train traces carry
//! the platform run id, and that its eval traces sit under a trace run of type `eval` whose id
//! starts with the platform run id, is our inference (the API does not document it).

use std::{path::PathBuf, sync::Arc};

use futures::StreamExt as _;

use factory_platform::{
    EpisodesQuery, PlatformClient, PlatformError, TeamScope, TraceRunsQuery, TracesClient,
    TracesQuery, wire::traces::TraceSummary,
};
use factory_policies::names::{self, NameKind};
use rmcp::model::ProgressNotificationParam;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    catalogue,
    reply::{Outcome, ToolError, ToolResult},
    server::{Call, ServerTool},
    state::{AppState, check_id, platform_error},
};

mod cursor;
mod fetch;
mod gaps;

use cursor::{Pos, TraceCursor};
pub(crate) use fetch::fetch_traces;
pub(crate) use gaps::MissingUploads;

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

// A trace's `score.outcome`, as the traces service filters it (no doc comment: it would become
// the argument's description in tools/list).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum TraceOutcome {
    Success,
    Failure,
    Error,
}

impl TraceOutcome {
    fn as_str(self) -> &'static str {
        match self {
            TraceOutcome::Success => "success",
            TraceOutcome::Failure => "failure",
            TraceOutcome::Error => "error",
        }
    }
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
    /// Traces with (true) or without (false) an error.
    pub has_error: Option<bool>,
    pub outcome: Option<TraceOutcome>,
    pub reward_min: Option<f64>,
    pub reward_max: Option<f64>,
    /// e.g. reverse-text
    pub environment_id: Option<String>,
    pub task_id: Option<String>,
    /// Traces per page, 1 to 40 (default 10).
    #[schemars(range(min = 1, max = 40))]
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
    pub task_id: Option<String>,
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
            task_id: t.task_id.clone(),
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
    /// Traces matching (null: unknown); a lower bound when total_is_lower_bound.
    pub total: Option<u64>,
    pub total_is_lower_bound: bool,
    /// Train steps up to the latest without traces (first page only).
    pub missing_uploads: Option<MissingUploads>,
    /// Pass as `cursor` for the next page; null on the last page.
    pub next_cursor: Option<String>,
}

/// Most pages read when looking for a run's eval trace runs.
const EVAL_SCAN_PAGES: usize = 20;
/// Episodes per `GET /episodes` page when listing one step.
const EPISODE_PAGE: u32 = 20;
/// Most episodes one page of one step reads (filters may match few); the cursor goes on.
const MAX_EPISODES_PER_PAGE: usize = 100;
/// Pages of one episode's traces read at most (100 each).
const MAX_EPISODE_TRACE_PAGES: usize = 10;
/// Pages in a row without a trace after which `fetch_traces` stops listing (cursor given).
const MAX_EMPTY_PAGES: usize = 20;
/// The largest `list_traces` page.
const LIST_MAX: u32 = 40;

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

/// The filters of `prime traces list` that `list_traces` takes, checked.
#[derive(Debug, Clone, Default, PartialEq)]
struct Filters {
    has_error: Option<bool>,
    outcome: Option<TraceOutcome>,
    reward_min: Option<f64>,
    reward_max: Option<f64>,
    environment_id: Option<String>,
    task_id: Option<String>,
}

impl Filters {
    fn from_args(a: &ListTracesArgs) -> Result<Filters, ToolError> {
        for (name, v) in [("reward_min", a.reward_min), ("reward_max", a.reward_max)] {
            if v.is_some_and(|r| !r.is_finite()) {
                return Err(ToolError::bad_argument(format!(
                    "`{name}` must be a finite number."
                )));
            }
        }
        if let (Some(lo), Some(hi)) = (a.reward_min, a.reward_max)
            && lo > hi
        {
            return Err(ToolError::bad_argument(
                "`reward_min` is above `reward_max`: no trace could match; swap them.",
            ));
        }
        for (name, v) in [
            ("environment_id", &a.environment_id),
            ("task_id", &a.task_id),
        ] {
            if let Some(v) = v {
                names::check(NameKind::TraceFilter, v, &format!("the argument `{name}`"))
                    .map_err(|e| ToolError::bad_argument(e.to_string()))?;
            }
        }
        Ok(Filters {
            has_error: a.has_error,
            outcome: a.outcome,
            reward_min: a.reward_min,
            reward_max: a.reward_max,
            environment_id: a.environment_id.clone(),
            task_id: a.task_id.clone(),
        })
    }

    fn any(&self) -> bool {
        *self != Filters::default()
    }

    /// The query of `GET /traces` or `GET /episodes/{id}/traces` with these filters.
    fn query(&self, limit: u32, run_id: Option<String>, cursor: Option<String>) -> TracesQuery {
        TracesQuery {
            limit,
            run_id,
            cursor,
            environment_id: self.environment_id.clone(),
            task_id: self.task_id.clone(),
            outcome: self.outcome.map(|o| o.as_str().to_string()),
            has_error: self.has_error,
            reward_min: self.reward_min,
            reward_max: self.reward_max,
            ..TracesQuery::default()
        }
    }

    /// What a cursor is bound to, besides the run, kind and step.
    fn key(&self) -> String {
        format!(
            "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
            self.has_error,
            self.outcome,
            self.reward_min.map(f64::to_bits),
            self.reward_max.map(f64::to_bits),
            self.environment_id,
            self.task_id
        )
    }

    /// How the filters read in a summary.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(h) = self.has_error {
            parts.push(if h { "with errors" } else { "without errors" }.to_string());
        }
        if let Some(o) = self.outcome {
            parts.push(format!("outcome {}", o.as_str()));
        }
        match (self.reward_min, self.reward_max) {
            (Some(a), Some(b)) => parts.push(format!("reward {a} to {b}")),
            (Some(a), None) => parts.push(format!("reward >= {a}")),
            (None, Some(b)) => parts.push(format!("reward <= {b}")),
            (None, None) => {}
        }
        if let Some(e) = &self.environment_id {
            parts.push(format!("environment {e}"));
        }
        if let Some(t) = &self.task_id {
            parts.push(format!("task {t}"));
        }
        parts.join(", ")
    }
}

fn cursor_query(run_id: &str, kind: TraceKind, step: Option<i64>, filters: &Filters) -> u64 {
    cursor::query_hash(&[
        run_id,
        if kind == TraceKind::Eval {
            "eval"
        } else {
            "train"
        },
        &step.map(|s| s.to_string()).unwrap_or_default(),
        &filters.key(),
    ])
}

/// Reads a run's traces page by page, `limit` counting traces (also for one step, where the
/// service pages episodes).
struct Pager<'a> {
    traces: TracesClient<'a>,
    runs: &'a [String],
    step: Option<i64>,
    filters: &'a Filters,
}

impl Pager<'_> {
    /// Up to `limit` traces from `pos`, and the position after them (None: no more).
    async fn page(
        &self,
        limit: usize,
        mut pos: Pos,
    ) -> Result<(Vec<TraceSummary>, Option<Pos>), PlatformError> {
        let mut out: Vec<TraceSummary> = Vec::new();
        let mut episodes_read = 0;
        loop {
            let Some(run) = self.runs.get(pos.run) else {
                return Ok((out, None));
            };
            let want = limit.saturating_sub(out.len()).clamp(1, 100);
            let next_run = Pos {
                run: pos.run + 1,
                ..Pos::default()
            };
            let Some(step) = self.step else {
                let page = self
                    .traces
                    .list_traces(&self.filters.query(
                        want as u32,
                        Some(run.clone()),
                        pos.service.take(),
                    ))
                    .await?;
                out.extend(page.items);
                match page.next_cursor {
                    Some(c) => {
                        return Ok((
                            out,
                            Some(Pos {
                                service: Some(c),
                                ..pos
                            }),
                        ));
                    }
                    None if out.len() >= limit => {
                        return Ok((out, (next_run.run < self.runs.len()).then_some(next_run)));
                    }
                    None => {
                        pos = next_run;
                        continue;
                    }
                }
            };
            let episodes = self
                .traces
                .list_episodes(&EpisodesQuery {
                    limit: EPISODE_PAGE,
                    run_id: Some(run.clone()),
                    run_step: Some(step),
                    cursor: pos.service.clone(),
                    ..EpisodesQuery::default()
                })
                .await?;
            let after_page = match &episodes.next_cursor {
                Some(c) => Some(Pos {
                    service: Some(c.clone()),
                    index: 0,
                    skip: 0,
                    run: pos.run,
                }),
                None => (next_run.run < self.runs.len()).then_some(next_run.clone()),
            };
            let here = |p: &Pos, index, skip| Pos {
                index,
                skip,
                ..p.clone()
            };
            while pos.index < episodes.items.len() {
                if episodes_read >= MAX_EPISODES_PER_PAGE {
                    return Ok((out, Some(here(&pos, pos.index, 0))));
                }
                episodes_read += 1;
                let ep = &episodes.items[pos.index].episode_id;
                let members = self.episode_traces(ep).await?;
                let avail = members.len().saturating_sub(pos.skip);
                let take = avail.min(limit - out.len());
                out.extend(members.into_iter().skip(pos.skip).take(take));
                if take < avail {
                    return Ok((out, Some(here(&pos, pos.index, pos.skip + take))));
                }
                pos.index += 1;
                pos.skip = 0;
                if out.len() >= limit {
                    return Ok((
                        out,
                        if pos.index < episodes.items.len() {
                            Some(here(&pos, pos.index, 0))
                        } else {
                            after_page
                        },
                    ));
                }
            }
            match after_page {
                Some(p) => pos = p,
                None => return Ok((out, None)),
            }
        }
    }

    /// Every trace of one episode that matches the filters (the service's order).
    async fn episode_traces(&self, episode_id: &str) -> Result<Vec<TraceSummary>, PlatformError> {
        let mut out = Vec::new();
        let mut c = None;
        for _ in 0..MAX_EPISODE_TRACE_PAGES {
            let page = self
                .traces
                .list_episode_traces(episode_id, &self.filters.query(100, None, c.take()))
                .await?;
            out.extend(page.items);
            match page.next_cursor {
                Some(next) => c = Some(next),
                None => break,
            }
        }
        Ok(out)
    }
}

/// What the traces service's counts say about a run's traces: how many (of one step, with a
/// step), and which steps have any. `None` where it could not tell.
struct Counts {
    total: Option<u64>,
    steps: Option<Vec<i64>>,
}

async fn counts(
    traces: &TracesClient<'_>,
    runs: &[String],
    step: Option<i64>,
    want_steps: bool,
) -> Counts {
    let mut total = Some(0u64);
    let mut steps: Option<Vec<i64>> = Some(Vec::new());
    for run in runs {
        let summary = match traces.get_run(run).await {
            Ok(s) => s,
            // "A run holding no traces for this owner".
            Err(PlatformError::NotFound { .. }) => continue,
            Err(e) => {
                tracing::debug!("trace counts unavailable: {e}");
                return Counts {
                    total: None,
                    steps: None,
                };
            }
        };
        if step.is_none() {
            total = total.map(|t| t + summary.trace_count);
        }
        if (step.is_some() || want_steps) && summary.step_count > 0 {
            match traces.get_run_steps(run).await {
                Ok(list) => {
                    if let Some(s) = step {
                        let n: u64 = list
                            .items
                            .iter()
                            .filter(|i| i.step == s)
                            .map(|i| i.trace_count)
                            .sum();
                        total = total.map(|t| t + n);
                    }
                    if let Some(v) = steps.as_mut() {
                        v.extend(
                            list.items
                                .iter()
                                .filter(|i| i.trace_count > 0)
                                .map(|i| i.step),
                        );
                    }
                }
                Err(e) => {
                    tracing::debug!("trace steps unavailable: {e}");
                    if step.is_some() {
                        total = None;
                    }
                    steps = None;
                }
            }
        }
    }
    Counts { total, steps }
}

/// The missing-upload check for a platform run: its train steps up to its latest step (the
/// platform's progress) without traces. `None` when either side could not be read.
pub(crate) async fn missing_uploads(
    platform: &PlatformClient,
    scope: &TeamScope,
    run_id: &str,
    latest_step: Option<i64>,
) -> Option<MissingUploads> {
    let latest = latest_step?;
    let runs = [run_id.to_string()];
    let c = counts(&platform.traces_scoped(scope), &runs, None, true).await;
    Some(gaps::missing_uploads(&c.steps?, latest))
}

fn missing_text(m: &MissingUploads) -> String {
    if m.count == 0 {
        format!("every step through {} has traces", m.checked_through)
    } else {
        format!(
            "{} step(s) through {} have no traces: {}",
            m.count, m.checked_through, m.ranges
        )
    }
}

async fn list_traces(
    state: Arc<AppState>,
    args: ListTracesArgs,
    _call: Call,
) -> ToolResult<ListTracesOut> {
    check_id("run", &args.run_id)?;
    let kind = args.kind.unwrap_or_default();
    // At most 40 a page: a page of 40 stays well under the 16 KB result cap (~300 B a trace).
    let limit = args.limit.unwrap_or(10).clamp(1, LIST_MAX) as usize;
    if args.step.is_some_and(|s| s < 0) {
        return Err(ToolError::bad_argument("`step` must be 0 or more."));
    }
    let filters = Filters::from_args(&args)?;
    let query = cursor_query(&args.run_id, kind, args.step, &filters);
    let start = TraceCursor::start(args.cursor.as_deref(), query)?;
    let platform = state.platform()?;
    let scope = run_scope(&state, &args.run_id).await?;
    let runs = trace_runs(platform, &scope, &args.run_id, kind).await?;
    let traces = platform.traces_scoped(&scope);
    let first_page = args.cursor.is_none();
    let check_gaps = first_page && kind == TraceKind::Train;
    let counted = if filters.any() {
        None
    } else {
        Some(counts(&traces, &runs, args.step, check_gaps).await)
    };
    let missing = if check_gaps {
        let latest = platform
            .get_progress(&args.run_id)
            .await
            .ok()
            .and_then(|p| p.latest_step);
        match (&counted, latest) {
            (Some(Counts { steps: Some(s), .. }), Some(l)) => Some(gaps::missing_uploads(s, l)),
            (Some(_), _) => None,
            (None, l) => missing_uploads(platform, &scope, &args.run_id, l).await,
        }
    } else {
        None
    };
    let pager = Pager {
        traces: platform.traces_scoped(&scope),
        runs: &runs,
        step: args.step,
        filters: &filters,
    };
    let (items, next) = pager
        .page(limit, start.pos.clone())
        .await
        .map_err(|e| trace_error(&args.run_id, e))?;
    let through = start.seen.saturating_add(items.len() as u64);
    let (total, lower) = match counted.and_then(|c| c.total) {
        Some(t) => (Some(t.max(through)), false),
        None if next.is_none() => (Some(through), false),
        None => (Some(through), true),
    };
    let next_cursor = next.map(|pos| {
        TraceCursor {
            query,
            seen: through,
            pos,
        }
        .encode()
    });
    let what = if filters.any() {
        format!(" ({})", filters.describe())
    } else {
        String::new()
    };
    let summary = format!(
        "{} {} trace(s) of run {}{}{}: {} of {}{}{}",
        items.len(),
        if kind == TraceKind::Eval {
            "eval"
        } else {
            "train"
        },
        args.run_id,
        args.step
            .map(|s| format!(" at step {s}"))
            .unwrap_or_default(),
        what,
        if items.is_empty() {
            "none".to_string()
        } else {
            format!("{}-{}", start.seen.saturating_add(1), through)
        },
        match total {
            Some(t) if lower => format!(
                "at least {t} (a lower bound: {}, more pages follow)",
                if filters.any() {
                    "filtered"
                } else {
                    "the service's count was unavailable"
                }
            ),
            Some(t) => t.to_string(),
            None => "an unknown total".into(),
        },
        if next_cursor.is_some() {
            "; more with next_cursor"
        } else {
            ""
        },
        missing
            .as_ref()
            .map(|m| format!("; {}", missing_text(m)))
            .unwrap_or_default(),
    );
    Ok(Outcome::done(
        summary,
        ListTracesOut {
            run_id: args.run_id,
            kind,
            trace_run_ids: runs,
            step: args.step,
            traces: items.iter().map(TraceItem::from).collect(),
            total,
            total_is_lower_bound: lower,
            missing_uploads: missing,
            next_cursor,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::fetch::{ManifestEntry, merge_manifest, safe_file_name};
    use super::*;

    #[test]
    fn trace_ids_that_could_escape_are_not_file_names() {
        assert_eq!(safe_file_name("tr_123-a").as_deref(), Some("tr_123-a.json"));
        assert_eq!(safe_file_name("../etc/passwd"), None);
        assert_eq!(safe_file_name(".hidden"), None);
        assert_eq!(safe_file_name("a/b"), None);
        assert_eq!(safe_file_name(""), None);
    }

    fn entry(id: &str, bytes: u64) -> ManifestEntry {
        ManifestEntry {
            trace_id: id.into(),
            file: format!("{id}.json"),
            bytes,
        }
    }

    #[test]
    fn the_manifest_lists_each_trace_once_across_calls() {
        let first = merge_manifest("", &[entry("a", 1), entry("b", 2)]);
        assert_eq!(first.lines().count(), 2);
        // A continuation adds its files; a trace fetched again replaces its line.
        let second = merge_manifest(&first, &[entry("b", 3), entry("c", 4)]);
        let lines: Vec<ManifestEntry> = second
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines, vec![entry("a", 1), entry("b", 3), entry("c", 4)]);
        // Lines that are not ours, duplicates, and entries naming another file are dropped.
        let messy = format!(
            "{first}not json\n{{\"trace_id\":\"x\",\"file\":\"../x.json\",\"bytes\":1}}\n{}\n",
            serde_json::to_string(&entry("a", 9)).unwrap()
        );
        let merged = merge_manifest(&messy, &[]);
        assert_eq!(merged, first);
    }

    fn args(v: serde_json::Value) -> ListTracesArgs {
        let mut base = serde_json::json!({"run_id": "r1"});
        base.as_object_mut()
            .unwrap()
            .extend(v.as_object().unwrap().clone());
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn filters_are_checked_before_anything_is_asked() {
        let f = Filters::from_args(&args(serde_json::json!({
            "has_error": true, "outcome": "error", "reward_min": 0.25, "reward_max": 1.0,
            "environment_id": "owner/reverse-text@0.1", "task_id": "task-007"
        })))
        .unwrap();
        assert!(f.any());
        let q = f.query(10, Some("r1".into()), None);
        assert_eq!(q.outcome.as_deref(), Some("error"));
        assert_eq!((q.reward_min, q.reward_max), (Some(0.25), Some(1.0)));
        assert_eq!(q.has_error, Some(true));
        assert_eq!(
            f.describe(),
            "with errors, outcome error, reward 0.25 to 1, environment owner/reverse-text@0.1, task task-007"
        );
        assert!(
            !Filters::from_args(&args(serde_json::json!({})))
                .unwrap()
                .any()
        );

        let e = Filters::from_args(&args(
            serde_json::json!({"reward_min": 0.9, "reward_max": 0.1}),
        ))
        .unwrap_err();
        assert!(e.to_string().contains("swap"), "{e}");
        for bad in ["a&has_error=false", "x\u{1b}[2J", "a\nb", ""] {
            let e = Filters::from_args(&args(serde_json::json!({"environment_id": bad})))
                .unwrap_err()
                .to_string();
            assert!(e.contains("environment_id") && !e.contains('\u{1b}'), "{e}");
            assert!(
                Filters::from_args(&args(serde_json::json!({"task_id": bad}))).is_err(),
                "{bad:?}"
            );
        }
        // An outcome outside the enum is refused by the schema.
        assert!(
            serde_json::from_value::<ListTracesArgs>(
                serde_json::json!({"run_id": "r", "outcome": "weird"})
            )
            .is_err()
        );
    }

    #[test]
    fn a_cursor_binds_run_kind_step_and_filters() {
        let none = Filters::default();
        let some = Filters {
            has_error: Some(true),
            ..Filters::default()
        };
        let a = cursor_query("r", TraceKind::Train, None, &none);
        assert_ne!(a, cursor_query("r", TraceKind::Eval, None, &none));
        assert_ne!(a, cursor_query("r", TraceKind::Train, Some(1), &none));
        assert_ne!(a, cursor_query("r", TraceKind::Train, None, &some));
        assert_ne!(a, cursor_query("s", TraceKind::Train, None, &none));
        assert_eq!(
            a,
            cursor_query("r", TraceKind::Train, None, &Filters::default())
        );
    }
}
