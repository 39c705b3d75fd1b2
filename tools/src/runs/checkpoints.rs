//! `list_checkpoints`, and the paging of a run's checkpoints it shares with `run_report`: newest
//! first, a page at a time, with the total and the next page said (a run keeps a checkpoint
//! every few steps, so a long run's list outgrows an answer).
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{
    error::ToolError,
    reply::{Outcome, ToolResult},
    server::Call,
    state::{AppState, check_id},
};

use super::*;

/// Checkpoints per page of `list_checkpoints` by default: ten keep the answer near 3 KB.
pub(crate) const DEFAULT_LIMIT: u32 = 10;
/// Most checkpoints per page: forty stay well under the 16 KB result cap (~300 B each).
pub(crate) const MAX_LIMIT: u32 = 40;

/// Where a page of checkpoints sits among all of them (newest first).
#[derive(Debug, Clone, Serialize, JsonSchema, PartialEq)]
pub struct Paging {
    /// How many checkpoints there are in all (after any status filter).
    pub total: usize,
    /// This page, from 1 (page 1 holds the newest).
    pub page: u32,
    /// Checkpoints per page.
    pub limit: u32,
    pub total_pages: u32,
    /// The page that holds the next older checkpoints; null on the last page.
    pub next_page: Option<u32>,
}

/// Page `page` (from 1) of `limit` items of `items` ordered newest first by `step`. `page` and
/// `limit` are clamped to their ranges (a page past the last is empty, and says so by `total`).
pub(crate) fn newest_first<T>(
    mut items: Vec<T>,
    step: impl Fn(&T) -> i64,
    page: Option<u32>,
    limit: Option<u32>,
    default_limit: u32,
) -> (Vec<T>, Paging) {
    items.sort_by_key(|c| std::cmp::Reverse(step(c)));
    let page = page.unwrap_or(1).max(1);
    let limit = limit.unwrap_or(default_limit).clamp(1, MAX_LIMIT);
    let total = items.len();
    let total_pages = u32::try_from(total.div_ceil(limit as usize)).unwrap_or(u32::MAX);
    let skip = (page as usize - 1).saturating_mul(limit as usize);
    let shown: Vec<T> = items.into_iter().skip(skip).take(limit as usize).collect();
    let next_page = (page < total_pages).then(|| page + 1);
    (
        shown,
        Paging {
            total,
            page,
            limit,
            total_pages,
            next_page,
        },
    )
}

/// "checkpoints 11–20 of 30 (newest first); older ones: list_checkpoints with "page": 3" —
/// where this page is and the call for the next (`tool` with its page argument `page_arg`).
pub(crate) fn describe(paging: &Paging, shown: usize, tool: &str, page_arg: &str) -> String {
    let first = (paging.page as usize - 1) * paging.limit as usize + 1;
    let place = if shown == 0 {
        format!(
            "no checkpoint on page {} of {} ({} in all)",
            paging.page,
            paging.total_pages.max(1),
            paging.total
        )
    } else {
        format!(
            "checkpoints {first}–{} of {} (newest first)",
            first + shown - 1,
            paging.total
        )
    };
    match paging.next_page {
        Some(n) => format!("{place}; older ones: {tool} with \"{page_arg}\": {n}"),
        None => place,
    }
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum CheckpointStatus {
    Ready,
    Pending,
    Uploading,
    Failed,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointsArgs {
    pub run_id: String,
    /// Only checkpoints in this status.
    pub status: Option<CheckpointStatus>,
    /// Page, from 1 (default 1: the newest checkpoints).
    #[schemars(range(min = 1))]
    pub page: Option<u32>,
    /// Checkpoints per page, 1 to 40 (default 10).
    #[schemars(range(min = 1, max = 40))]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckpointsOut {
    pub run_id: String,
    /// This page of checkpoints, newest first.
    pub checkpoints: Vec<CheckpointItem>,
    /// The newest READY checkpoint's step, if any (among all pages).
    pub latest_ready_step: Option<i64>,
    #[serde(flatten)]
    pub paging: Paging,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct CheckpointItem {
    pub id: String,
    pub step: i64,
    pub status: String,
    pub size_bytes: Option<u64>,
    pub storage_url: String,
    pub created_at: String,
    pub uploaded_at: Option<String>,
}

pub(super) async fn list_checkpoints(
    state: Arc<AppState>,
    args: CheckpointsArgs,
    _call: Call,
) -> ToolResult<CheckpointsOut> {
    check_id("run", &args.run_id)?;
    if args.page == Some(0) || args.limit == Some(0) {
        return Err(ToolError::bad_argument(
            "`page` and `limit` start at 1: call list_checkpoints again without them for the newest checkpoints.",
        ));
    }
    let filter = args.status.map(|s| match s {
        CheckpointStatus::Ready => "READY",
        CheckpointStatus::Pending => "PENDING",
        CheckpointStatus::Uploading => "UPLOADING",
        CheckpointStatus::Failed => "FAILED",
    });
    let resp = state
        .platform()?
        .list_checkpoints(&args.run_id, filter)
        .await
        .map_err(|e| not_found_or(&args.run_id, "list checkpoints of run", e))?;
    let all: Vec<CheckpointItem> = resp
        .checkpoints
        .into_iter()
        .map(|c| CheckpointItem {
            id: c.id,
            step: c.step,
            status: c.status,
            size_bytes: c.size_bytes,
            storage_url: c.storage_url,
            created_at: c.created_at,
            uploaded_at: c.uploaded_at,
        })
        .collect();
    let latest_ready_step = all
        .iter()
        .filter(|c| c.status == "READY")
        .map(|c| c.step)
        .max();
    let (checkpoints, paging) = newest_first(all, |c| c.step, args.page, args.limit, DEFAULT_LIMIT);
    let summary = format!(
        "Run {}: {}{}",
        args.run_id,
        describe(&paging, checkpoints.len(), "list_checkpoints", "page"),
        latest_ready_step
            .map(|s| format!("; latest ready at step {s}"))
            .unwrap_or_default()
    );
    let smaller = serde_json::json!({"run_id": args.run_id, "page": 1, "limit": DEFAULT_LIMIT});
    Ok(Outcome::done(
        summary,
        CheckpointsOut {
            run_id: args.run_id,
            checkpoints,
            latest_ready_step,
            paging,
        },
    )
    .with_rest(format!(
        "Call list_checkpoints {smaller} for the newest {DEFAULT_LIMIT}, then the next `page`; `status` narrows to one status."
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps(page: Option<u32>, limit: Option<u32>, n: i64) -> (Vec<i64>, Paging) {
        // In the platform's order (oldest first), as the list arrives.
        let items: Vec<i64> = (1..=n).map(|i| i * 5).collect();
        newest_first(items, |s| *s, page, limit, DEFAULT_LIMIT)
    }

    #[test]
    fn the_first_page_holds_the_newest_and_names_the_next() {
        let (shown, p) = steps(None, None, 30);
        assert_eq!(shown, [150, 145, 140, 135, 130, 125, 120, 115, 110, 105]);
        assert_eq!(
            p,
            Paging {
                total: 30,
                page: 1,
                limit: 10,
                total_pages: 3,
                next_page: Some(2)
            }
        );
        assert_eq!(
            describe(&p, shown.len(), "list_checkpoints", "page"),
            "checkpoints 1–10 of 30 (newest first); older ones: list_checkpoints with \"page\": 2"
        );
    }

    #[test]
    fn the_pages_cover_every_checkpoint_once_and_the_last_says_so() {
        let mut seen = Vec::new();
        let mut page = Some(1);
        while let Some(n) = page {
            let (shown, p) = steps(Some(n), Some(7), 30);
            seen.extend(shown);
            page = p.next_page;
        }
        let mut want: Vec<i64> = (1..=30).map(|i| i * 5).collect();
        want.reverse();
        assert_eq!(seen, want);
        let (shown, p) = steps(Some(5), Some(7), 30);
        assert_eq!((shown, p.next_page, p.total_pages), (vec![10, 5], None, 5));
    }

    #[test]
    fn a_page_past_the_last_is_empty_and_says_how_many_there_are() {
        let (shown, p) = steps(Some(9), None, 30);
        assert!(shown.is_empty());
        assert_eq!(
            describe(&p, 0, "list_checkpoints", "page"),
            "no checkpoint on page 9 of 3 (30 in all)"
        );
        let (shown, p) = steps(None, None, 0);
        assert!(shown.is_empty());
        assert_eq!((p.total, p.total_pages, p.next_page), (0, 0, None));
        assert_eq!(
            describe(&p, 0, "x", "page"),
            "no checkpoint on page 1 of 1 (0 in all)"
        );
    }

    #[test]
    fn limit_is_clamped_to_its_range() {
        let (shown, p) = steps(None, Some(1000), 150);
        assert_eq!((shown.len(), p.limit), (40, 40));
        let (shown, p) = steps(Some(u32::MAX), Some(40), 150);
        assert!(shown.is_empty());
        assert_eq!(p.next_page, None);
    }
}
