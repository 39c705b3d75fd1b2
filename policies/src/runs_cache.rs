//! The run-list cache's decisions: which cache a call uses, when reading the platform's run
//! list (newest first, no status filter) may stop, what the cache then knows, and which runs
//! known to be unfinished are re-read by id.
//!
//! The cache is knowledge, not truth: every decision here errs towards reading more. A run the
//! cache does not know is found by the newest-first read (new runs are at the top of the
//! list); a run it knows as unfinished is re-read by id (`GET /rft/runs/{id}`) until it is
//! finished. A finished run never comes back with the same id (the reference: restart is
//! RUNNING-only, resume makes a new run), so a finished run is not re-read.

use sha2::{Digest, Sha256};

/// Page size of the newest-first read (the API's largest).
pub const PAGE: u32 = 100;

/// Page size of a complete cache's first page: a warm call usually finds nothing or a few new
/// runs, so it reads a short page; when that page does not reach the watermark the read starts
/// over with [`PAGE`]-run pages (page numbers depend on the size, so it cannot just go on).
pub const FIRST_PAGE: u32 = 20;

/// Most pages one read takes (100,000 runs). A history longer than that is never marked
/// complete, so every call reads it again from the top: slow, never wrong.
pub const MAX_PAGES: u32 = 1000;

/// How often a read starts over from the first page when the list changed under it (its
/// `total` moved between pages: a run deleted mid-read shifts the pages up and could hide one).
pub const MAX_RESTARTS: u32 = 2;

/// Most unfinished runs re-read by id per call (the least recently checked first; 8 in
/// flight at a time). Runs past the bound keep their last known status — still counted as
/// active, the safe side for the budgets and the duplicate guard — and are re-read by a later
/// call.
pub const MAX_RECHECKS: usize = 32;

/// What the cache knows about one owner's history: every run created before `watermark_ms`
/// was read once (`complete`), so a newest-first read may stop at the first run older than it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mark {
    /// The history below the watermark was read to its end once.
    pub complete: bool,
    /// `createdAt` (ms since the epoch) of the newest run read.
    pub watermark_ms: i64,
}

/// After a page of the newest-first read: read the next page, or stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Next,
    /// Stop: everything newer than the cache's watermark (or everything) has been read.
    Done,
}

/// The key of one cache: base URL, owner (team or personal) and the API key's fingerprint, so
/// two accounts (or two keys that may see different runs) never share one. The fingerprint is
/// a domain-separated SHA-256 prefix of the key, never the key.
pub fn scope_key(base_url: &str, team: Option<&str>, api_key: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"factory-mcp run cache v1\0");
    h.update(api_key.as_bytes());
    let fingerprint = hex::encode(&h.finalize()[..8]);
    let owner = match team {
        Some(t) => format!("team:{t}"),
        None => "personal".into(),
    };
    format!(
        "{}|{owner}|key:{fingerprint}",
        base_url.trim_end_matches('/')
    )
}

/// The page size a read starts with: short when the cache is complete (only the new runs are
/// wanted), else [`PAGE`].
pub fn first_page_size(mark: Option<Mark>) -> u32 {
    if mark.is_some_and(|m| m.complete) {
        FIRST_PAGE
    } else {
        PAGE
    }
}

/// After reading a page: `oldest_ms` is the oldest `createdAt` on it (`None` when no run on it
/// has a readable time), `last` whether it was the list's last page. With a complete cache the
/// read stops at the first page reaching below the watermark: the list is ordered by
/// `createdAt`, newest first, so every run at or above the watermark is on the pages read.
pub fn after_page(mark: Option<Mark>, oldest_ms: Option<i64>, last: bool) -> Step {
    if last {
        return Step::Done;
    }
    match (mark, oldest_ms) {
        (Some(m), Some(oldest)) if m.complete && oldest < m.watermark_ms => Step::Done,
        _ => Step::Next,
    }
}

/// How a read ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadEnd {
    /// [`after_page`] said [`Step::Done`] (not the page cap).
    pub done: bool,
    /// The read reached the list's last page.
    pub reached_end: bool,
    /// The list's `total` stayed the same on every page of the read.
    pub stable: bool,
    /// The newest `createdAt` read.
    pub newest_ms: Option<i64>,
}

/// What the cache knows after a read. Complete only when the read was stable and either
/// reached the end or joined a complete cache's watermark; otherwise the old mark stays (a
/// read that cannot be trusted to be whole teaches the cache nothing about completeness).
pub fn next_mark(old: Option<Mark>, end: ReadEnd) -> Option<Mark> {
    if !(end.done && end.stable) {
        return old;
    }
    let joined = old.is_some_and(|m| m.complete);
    if !(end.reached_end || joined) {
        return old;
    }
    let watermark_ms = match (old.map(|m| m.watermark_ms), end.newest_ms) {
        (Some(a), Some(b)) => a.max(b),
        (a, b) => a.or(b).unwrap_or(i64::MIN),
    };
    Some(Mark {
        complete: true,
        watermark_ms,
    })
}

/// Which unfinished runs to re-read by id: those the read did not see (`seen`), least recently
/// checked first (`(id, checked_ms)`), at most `max`.
pub fn rechecks(watched: &[(String, i64)], seen: impl Fn(&str) -> bool, max: usize) -> Vec<String> {
    let mut due: Vec<&(String, i64)> = watched.iter().filter(|(id, _)| !seen(id)).collect();
    due.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    due.into_iter()
        .take(max)
        .map(|(id, _)| id.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMPLETE: Mark = Mark {
        complete: true,
        watermark_ms: 1_000,
    };

    #[test]
    fn an_empty_cache_reads_to_the_end() {
        assert_eq!(after_page(None, Some(5), false), Step::Next);
        assert_eq!(after_page(None, Some(5), true), Step::Done);
        let partial = Mark {
            complete: false,
            watermark_ms: 1_000,
        };
        assert_eq!(after_page(Some(partial), Some(5), false), Step::Next);
    }

    #[test]
    fn only_a_complete_cache_starts_with_a_short_page() {
        assert_eq!(first_page_size(None), PAGE);
        assert_eq!(
            first_page_size(Some(Mark {
                complete: false,
                watermark_ms: 1
            })),
            PAGE
        );
        assert_eq!(first_page_size(Some(COMPLETE)), FIRST_PAGE);
    }

    #[test]
    fn a_complete_cache_stops_below_its_watermark_only() {
        assert_eq!(after_page(Some(COMPLETE), Some(999), false), Step::Done);
        // At the watermark: a run created in the same millisecond may still be new.
        assert_eq!(after_page(Some(COMPLETE), Some(1_000), false), Step::Next);
        assert_eq!(after_page(Some(COMPLETE), Some(2_000), false), Step::Next);
        // No readable time on the page: read on.
        assert_eq!(after_page(Some(COMPLETE), None, false), Step::Next);
    }

    fn end(done: bool, reached_end: bool, stable: bool, newest: Option<i64>) -> ReadEnd {
        ReadEnd {
            done,
            reached_end,
            stable,
            newest_ms: newest,
        }
    }

    #[test]
    fn a_whole_stable_read_makes_the_cache_complete() {
        assert_eq!(
            next_mark(None, end(true, true, true, Some(50))),
            Some(Mark {
                complete: true,
                watermark_ms: 50
            })
        );
        // Joining a complete cache moves the watermark up, never down.
        assert_eq!(
            next_mark(Some(COMPLETE), end(true, false, true, Some(2_000))),
            Some(Mark {
                complete: true,
                watermark_ms: 2_000
            })
        );
        assert_eq!(
            next_mark(Some(COMPLETE), end(true, false, true, Some(10))),
            Some(COMPLETE)
        );
        // An empty history is complete too.
        assert_eq!(
            next_mark(None, end(true, true, true, None)).map(|m| m.complete),
            Some(true)
        );
    }

    #[test]
    fn an_unstable_or_capped_read_teaches_nothing_about_completeness() {
        assert_eq!(next_mark(None, end(true, true, false, Some(50))), None);
        assert_eq!(next_mark(None, end(false, false, true, Some(50))), None);
        assert_eq!(
            next_mark(Some(COMPLETE), end(true, false, false, Some(5_000))),
            Some(COMPLETE)
        );
        let partial = Mark {
            complete: false,
            watermark_ms: 7,
        };
        // Not at the end and nothing complete to join: still incomplete.
        assert_eq!(
            next_mark(Some(partial), end(true, false, true, Some(9))),
            Some(partial)
        );
    }

    #[test]
    fn rechecks_skip_runs_just_read_and_take_the_stalest_first() {
        let watched = vec![
            ("a".to_string(), 30),
            ("b".to_string(), 10),
            ("c".to_string(), 20),
            ("d".to_string(), 5),
        ];
        assert_eq!(rechecks(&watched, |id| id == "d", 2), vec!["b", "c"]);
        assert_eq!(rechecks(&watched, |_| false, 10).len(), 4);
        assert!(rechecks(&watched, |_| true, 10).is_empty());
    }

    #[test]
    fn scopes_differ_by_url_owner_and_key_and_never_hold_the_key() {
        let a = scope_key("https://api.example/", Some("t1"), "secret-key-1");
        assert_eq!(
            a,
            scope_key("https://api.example", Some("t1"), "secret-key-1")
        );
        assert!(!a.contains("secret-key-1"));
        assert_ne!(
            a,
            scope_key("https://api.example", Some("t2"), "secret-key-1")
        );
        assert_ne!(a, scope_key("https://api.example", None, "secret-key-1"));
        assert_ne!(
            a,
            scope_key("https://api.example", Some("t1"), "secret-key-2")
        );
        assert_ne!(
            a,
            scope_key("https://other.example", Some("t1"), "secret-key-1")
        );
    }
}
