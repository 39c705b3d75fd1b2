//! The run-list cache's decisions: which cache a call uses, how a newest-first read of the
//! platform's run list (no status filter) goes on — which page next, when it may stop, when
//! the list changed under it — what the cache then knows, and which runs known to be
//! unfinished are re-read by id.
//!
//! The cache is knowledge, not truth: every decision here errs towards reading more. A run the
//! cache does not know is found by the newest-first read (new runs are at the top of the
//! list); a run it knows as unfinished is re-read by id (`GET /rft/runs/{id}`) until it is
//! finished. A finished run never comes back with the same id (the reference: restart is
//! RUNNING-only, resume makes a new run), so a finished run is not re-read.

use std::collections::HashSet;

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

/// How far below the platform's clock at the start of a read the watermark is set. A run is
/// listed only once its create request has been handled, but its `createdAt` may be stamped
/// when the request started: the reference's create timeout is 120 s, and the platform's
/// clocks may disagree by a little. Ten minutes covers both with room; every warm call re-reads
/// the runs created in the ten minutes before the previous read (a short page for most teams).
pub const STOP_MARGIN_MS: i64 = 10 * 60 * 1000;

/// Most step-backs one read makes when the list changed under it (see [`ListRead`]). Each
/// costs a page; a list that changes more often than that within one read is not read whole,
/// and the call fails closed ("retry") rather than answer from a read with a possible gap.
pub const MAX_REPAIRS: u32 = 16;

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
    /// Every run with a `createdAt` (ms since the epoch) below this was visible, and read,
    /// when the cache was last brought up to date.
    pub watermark_ms: i64,
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

/// Where a page leaves the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PageEnd {
    /// More runs follow.
    More,
    /// The list's end: as many runs were listed as its `total` says.
    End,
    /// The list stops here (an empty page, or the page `total_pages` calls the last) but fewer
    /// runs were listed than its `total` says, or it has no `total`: read no further, and do
    /// not take the read as whole.
    Short,
}

/// After a page: `listed` runs were listed on the pages up to and including this one, the
/// page held `on_page` runs. The end is decided from the list's `total` (and `total_pages`),
/// never from a page being shorter than the size asked for: a server may cap the page size.
pub fn page_end(
    page: u32,
    listed: u64,
    on_page: usize,
    total: Option<u64>,
    total_pages: Option<u64>,
) -> PageEnd {
    match total {
        Some(t) if listed >= t => PageEnd::End,
        _ if on_page == 0 => PageEnd::Short,
        Some(_) if total_pages.is_some_and(|tp| u64::from(page) >= tp) => PageEnd::Short,
        Some(_) => PageEnd::More,
        // No total (the client pages a legacy server itself, so only a broken answer): read
        // on until an empty page; never whole.
        None => PageEnd::More,
    }
}

/// Whether a page read continues the pages before it (the runs read so far are every run
/// above this page). It does when the list's `total` did not move since the page before was
/// read, or when its first run was already read: runs keep their order, so then every run
/// above it was read too (runs created meanwhile push the pages down, which repeats runs and
/// hides none). A run deleted above the read pushes the pages up and can hide one at the
/// boundary: then neither holds, and the read steps back a page.
pub fn joins(page: u32, prefix_total: Option<u64>, total: Option<u64>, first_seen: bool) -> bool {
    page == 1 || total == prefix_total || first_seen
}

/// One page as the read sees it.
#[derive(Debug, Clone, Copy)]
pub struct PageFacts<'a> {
    pub total: Option<u64>,
    pub total_pages: Option<u64>,
    /// The runs on the page, in the list's order: id and `createdAt` (ms), if readable.
    pub runs: &'a [(&'a str, Option<i64>)],
    /// How many of the runs below the watermark the cache does not know (see
    /// [`ListRead::below_watermark`]; the caller looks them up).
    pub unknown_below: usize,
}

/// The next request of a read, or its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Read {
        page: u32,
        limit: u32,
    },
    /// The read is over; [`ListRead::end`] says what it covered.
    Stop,
    /// The list kept changing under the read ([`MAX_REPAIRS`] step-backs spent): what was read
    /// may have a gap. Fail closed.
    Unsettled,
}

/// A read of the newest-first run list, page by page: the caller asks for the first request
/// ([`ListRead::start`]), makes each request and hands the page to [`ListRead::on_page`],
/// which says the next one.
///
/// The read keeps a *prefix*: pages `1..=n` read so that together they hold every run above
/// page `n + 1` ([`joins`]). A page that does not join (the list shrank above it) sends the
/// read one page back (at most [`MAX_REPAIRS`] times); the page it stepped away from is kept
/// aside and taken without a new request when the page read back joins and the list's `total`
/// did not move in between.
#[derive(Debug, Clone)]
pub struct ListRead {
    mark: Option<Mark>,
    limit: u32,
    /// Per page of the prefix (index `page - 1`): runs listed and the list's `total` then.
    counts: Vec<u64>,
    totals: Vec<Option<u64>>,
    /// Ids on the prefix's pages (in any version of the list read).
    seen: HashSet<String>,
    /// A page read that did not join, kept while the page before it is read again.
    aside: Option<Aside>,
    repairs: u32,
    newest_ms: Option<i64>,
    end: Option<PageEnd>,
    joined: bool,
    straggler: bool,
}

#[derive(Debug, Clone)]
struct Aside {
    page: u32,
    total: Option<u64>,
    total_pages: Option<u64>,
    ids: Vec<String>,
    oldest_ms: Option<i64>,
    unknown_below: usize,
}

impl ListRead {
    pub fn new(mark: Option<Mark>) -> Self {
        Self {
            mark,
            limit: first_page_size(mark),
            counts: Vec::new(),
            totals: Vec::new(),
            seen: HashSet::new(),
            aside: None,
            repairs: 0,
            newest_ms: None,
            end: None,
            joined: false,
            straggler: false,
        }
    }

    /// The first request.
    pub fn start(&self) -> Next {
        Next::Read {
            page: 1,
            limit: self.limit,
        }
    }

    /// Which runs of a page lie below a complete cache's watermark (the caller finds out how
    /// many of them the cache does not know). None without a complete cache.
    pub fn below_watermark<'b>(&self, runs: &[(&'b str, Option<i64>)]) -> Vec<&'b str> {
        match self.mark {
            Some(m) if m.complete => runs
                .iter()
                .filter(|(_, c)| c.is_some_and(|c| c < m.watermark_ms))
                .map(|(id, _)| *id)
                .collect(),
            _ => Vec::new(),
        }
    }

    fn prefix_page(&self) -> u32 {
        self.counts.len() as u32
    }

    fn read(&self, page: u32) -> Next {
        Next::Read {
            page,
            limit: self.limit,
        }
    }

    fn take(&mut self, total: Option<u64>, ids: Vec<String>) {
        self.counts.push(ids.len() as u64);
        self.totals.push(total);
        self.seen.extend(ids);
    }

    /// After page `page` was read: the next request, or the end.
    pub fn on_page(&mut self, page: u32, p: PageFacts<'_>) -> Next {
        if let Some(newest) = p.runs.iter().filter_map(|r| r.1).max() {
            self.newest_ms = self.newest_ms.max(Some(newest));
        }
        let ids: Vec<String> = p.runs.iter().map(|r| r.0.to_string()).collect();
        let oldest_ms = p.runs.iter().filter_map(|r| r.1).min();
        let first_seen = p.runs.first().is_some_and(|r| self.seen.contains(r.0));
        let prefix_total = self.totals.last().copied().flatten();
        if page != self.prefix_page() + 1 || !joins(page, prefix_total, p.total, first_seen) {
            if self.repairs >= MAX_REPAIRS || page < 2 {
                return Next::Unsettled;
            }
            self.repairs += 1;
            self.aside = Some(Aside {
                page,
                total: p.total,
                total_pages: p.total_pages,
                ids,
                oldest_ms,
                unknown_below: p.unknown_below,
            });
            // Read the page before again: runs below a deletion moved up onto it.
            let back = page - 1;
            self.counts.truncate(back as usize - 1);
            self.totals.truncate(back as usize - 1);
            return self.read(back);
        }
        self.take(p.total, ids);
        let mut at = (page, p.total, p.total_pages, oldest_ms, p.unknown_below);
        if let Some(a) = self.aside.take()
            && a.page == page + 1
            && a.total == p.total
        {
            at = (a.page, a.total, a.total_pages, a.oldest_ms, a.unknown_below);
            self.take(a.total, a.ids);
        }
        let (at_page, total, total_pages, oldest, unknown_below) = at;
        let listed: u64 = self.counts.iter().sum();
        let on_page = self.counts.last().copied().unwrap_or(0) as usize;
        let end = page_end(at_page, listed, on_page, total, total_pages);
        if end != PageEnd::More {
            self.end = Some(end);
            return Next::Stop;
        }
        if unknown_below > 0 {
            // A run below the watermark the cache never saw: the list's order did not hold
            // for it (listed late). Read on, and make the next call read the whole list.
            self.straggler = true;
        } else if self.reaches_watermark(oldest) {
            self.joined = true;
            return Next::Stop;
        }
        if self.limit != PAGE {
            // The short first page did not reach the watermark: start over in full pages
            // (page numbers depend on the size).
            let keep = (self.repairs, self.newest_ms, self.straggler);
            *self = Self::new(self.mark);
            self.limit = PAGE;
            (self.repairs, self.newest_ms, self.straggler) = keep;
            return self.start();
        }
        if at_page >= MAX_PAGES {
            return Next::Stop;
        }
        self.read(at_page + 1)
    }

    fn reaches_watermark(&self, oldest_ms: Option<i64>) -> bool {
        match (self.mark, oldest_ms) {
            (Some(m), Some(oldest)) => m.complete && oldest < m.watermark_ms,
            _ => false,
        }
    }

    /// What the read covered, once it stopped; `now_ms`: the platform's clock when the read
    /// started, if known.
    pub fn end(&self, now_ms: Option<i64>) -> ReadEnd {
        ReadEnd {
            whole: self.end == Some(PageEnd::End),
            joined: self.joined,
            straggler: self.straggler,
            newest_ms: self.newest_ms,
            now_ms,
        }
    }
}

/// How a read ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadEnd {
    /// The read listed the whole list (as many runs as its `total`), without a gap.
    pub whole: bool,
    /// The read stopped at a complete cache's watermark, without a gap.
    pub joined: bool,
    /// A run below the watermark was one the cache did not know.
    pub straggler: bool,
    /// The newest `createdAt` read.
    pub newest_ms: Option<i64>,
    /// The platform's clock when the read started (its `Date`), if known.
    pub now_ms: Option<i64>,
}

/// What the cache knows after a read; `vanished`: an unfinished run answered 404 on its
/// re-read (a run deleted — or a platform answer not to be trusted: the next call reads the
/// whole list, which finds it if it is there).
///
/// Complete after a whole read, or one that joined a complete cache's watermark, with the
/// watermark at the newest run read but at most [`STOP_MARGIN_MS`] below the platform's clock
/// at the read's start (a run listed late, or one with a `createdAt` in the future, cannot
/// hold it up). A read that saw a run below the watermark the cache did not know, or a
/// vanished run, clears `complete`; any other read leaves the mark as it was.
pub fn next_mark(old: Option<Mark>, end: ReadEnd, vanished: bool) -> Option<Mark> {
    if end.straggler || vanished {
        return Some(Mark {
            complete: false,
            watermark_ms: old.map_or(i64::MIN, |m| m.watermark_ms),
        });
    }
    let joined = end.joined && old.is_some_and(|m| m.complete);
    if !(end.whole || joined) {
        return old;
    }
    let cap = end
        .now_ms
        .or(end.newest_ms)
        .map(|t| t.saturating_sub(STOP_MARGIN_MS));
    let read = match (end.newest_ms, cap) {
        (Some(n), Some(c)) => Some(n.min(c)),
        (n, c) => n.or(c),
    };
    let kept = old.filter(|_| joined).map(|m| m.watermark_ms);
    let mut watermark_ms = match (kept, read) {
        (Some(a), Some(b)) => a.max(b),
        (a, b) => a.or(b).unwrap_or(i64::MIN),
    };
    if let Some(c) = cap {
        watermark_ms = watermark_ms.min(c);
    }
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

/// Whether a call may answer when the cache's list of unfinished runs could not be read: only
/// when this call's read listed the whole list (every unfinished run was on it).
pub fn may_answer_without_watched(end: ReadEnd) -> bool {
    end.whole
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMPLETE: Mark = Mark {
        complete: true,
        watermark_ms: 1_000_000,
    };

    /// A newest-first list served like the platform: `cap` is the server's largest page.
    struct List {
        runs: Vec<(String, i64)>,
        cap: u32,
    }

    impl List {
        /// `n` runs, `created` ms apart, the newest at `newest_ms`.
        fn new(n: usize, newest_ms: i64, apart: i64) -> Self {
            Self {
                runs: (0..n)
                    .map(|i| (format!("r{i}"), newest_ms - i as i64 * apart))
                    .collect(),
                cap: PAGE,
            }
        }
    }

    struct Outcome {
        next: Next,
        read: HashSet<String>,
        requests: u32,
        end: ReadEnd,
    }

    /// Drive a read over `list`; `between(request, list)` changes the list before each
    /// request after the first; `known` are the ids the cache holds.
    fn drive(
        list: &mut List,
        mark: Option<Mark>,
        known: &HashSet<String>,
        mut between: impl FnMut(u32, &mut List),
    ) -> Outcome {
        let mut r = ListRead::new(mark);
        let mut next = r.start();
        let mut read = HashSet::new();
        let mut requests = 0;
        while let Next::Read { page, limit } = next {
            if requests > 0 {
                between(requests, list);
            }
            requests += 1;
            assert!(requests < 10_000, "the read does not end");
            let size = limit.min(list.cap) as usize;
            let start = (page as usize - 1) * size;
            let on_page: Vec<(&str, Option<i64>)> = list
                .runs
                .iter()
                .skip(start)
                .take(size)
                .map(|(id, c)| (id.as_str(), Some(*c)))
                .collect();
            read.extend(on_page.iter().map(|r| r.0.to_string()));
            let unknown_below = r
                .below_watermark(&on_page)
                .into_iter()
                .filter(|id| !known.contains(*id))
                .count();
            let total = list.runs.len() as u64;
            next = r.on_page(
                page,
                PageFacts {
                    total: Some(total),
                    total_pages: Some(total.div_ceil(size as u64)),
                    runs: &on_page,
                    unknown_below,
                },
            );
        }
        Outcome {
            next,
            read,
            requests,
            end: r.end(Some(2_000_000)),
        }
    }

    fn ids(list: &List) -> HashSet<String> {
        list.runs.iter().map(|r| r.0.clone()).collect()
    }

    #[test]
    fn an_empty_cache_reads_the_whole_list() {
        let mut list = List::new(250, 500_000, 1);
        let o = drive(&mut list, None, &HashSet::new(), |_, _| {});
        assert_eq!(o.next, Next::Stop);
        assert_eq!(o.requests, 3);
        assert_eq!(o.read, ids(&list));
        assert!(o.end.whole);
        // An exact multiple of the page: the end is known from `total`, no empty page asked.
        let mut list = List::new(200, 500_000, 1);
        let o = drive(&mut list, None, &HashSet::new(), |_, _| {});
        assert_eq!((o.requests, o.end.whole), (2, true));
        let mut empty = List::new(0, 0, 1);
        let o = drive(&mut empty, None, &HashSet::new(), |_, _| {});
        assert_eq!((o.requests, o.end.whole), (1, true));
    }

    /// H3: a server that caps the page below the size asked answers short pages that are not
    /// the end; the end comes from `total`.
    #[test]
    fn a_short_page_is_not_the_end_while_the_total_says_more() {
        assert_eq!(page_end(1, 50, 50, Some(250), None), PageEnd::More);
        assert_eq!(page_end(1, 50, 50, Some(250), Some(5)), PageEnd::More);
        assert_eq!(page_end(5, 250, 50, Some(250), Some(5)), PageEnd::End);
        // The list says this is its last page, or the page is empty, yet runs are missing:
        // stop, but not whole.
        assert_eq!(page_end(3, 120, 20, Some(250), Some(3)), PageEnd::Short);
        assert_eq!(page_end(4, 120, 0, Some(250), None), PageEnd::Short);
        let mut list = List::new(250, 500_000, 1);
        list.cap = 50;
        let o = drive(&mut list, None, &HashSet::new(), |_, _| {});
        assert_eq!(o.read, ids(&list));
        assert_eq!((o.requests, o.end.whole), (5, true));
        assert_eq!(
            next_mark(None, o.end, false).map(|m| m.complete),
            Some(true)
        );
    }

    /// H1: a run deleted above the read while it goes on moves the pages up; the read steps
    /// back a page instead of hiding the run at the boundary, and reads to its normal end.
    #[test]
    fn a_deletion_above_the_read_costs_a_page_and_hides_nothing() {
        for at in [1, 2, 3] {
            let mut list = List::new(450, 500_000, 1);
            let before = ids(&list);
            let o = drive(&mut list, None, &HashSet::new(), |request, l| {
                if request == at {
                    l.runs.remove(3);
                }
            });
            let survivors = ids(&list);
            assert!(survivors.is_subset(&o.read), "deletion before request {at}");
            assert!(o.read.is_subset(&before));
            assert_eq!(o.next, Next::Stop);
            // One page more than the 5 of a quiet list.
            assert_eq!(o.requests, 6, "deletion before request {at}");
            assert!(o.end.whole);
        }
    }

    /// H1: runs created while the read goes on push the pages down: nothing is hidden and no
    /// page is read again.
    #[test]
    fn runs_created_during_the_read_cost_nothing() {
        let mut list = List::new(450, 500_000, 1);
        let before = ids(&list);
        let o = drive(&mut list, None, &HashSet::new(), |request, l| {
            for k in 0..request {
                l.runs.insert(
                    0,
                    (format!("new-{request}-{k}"), 600_000 + i64::from(request)),
                );
            }
        });
        assert!(before.is_subset(&o.read));
        assert_eq!(o.next, Next::Stop);
        assert!(o.requests <= 6, "{}", o.requests);
    }

    /// H1: a list that keeps shrinking under every page is never answered from: the read
    /// says it is unsettled (the call fails closed) once its step-backs are spent.
    #[test]
    fn a_list_that_never_settles_fails_closed() {
        let mut list = List::new(5_000, 500_000, 1);
        let o = drive(&mut list, None, &HashSet::new(), |_, l| {
            l.runs.remove(0);
        });
        assert_eq!(o.next, Next::Unsettled);
        assert!(o.requests <= 2 * (MAX_REPAIRS + 1) + 1, "{}", o.requests);
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
    fn a_complete_cache_stops_at_the_first_page_below_its_watermark() {
        // 3,000 runs, the newest far below the watermark: one short page.
        let mut list = List::new(3_000, 900_000, 1);
        let known = ids(&list);
        let o = drive(&mut list, Some(COMPLETE), &known, |_, _| {});
        assert_eq!((o.next, o.requests), (Next::Stop, 1));
        assert!(o.end.joined && !o.end.whole);
        // 50 new runs above the watermark: the short page does not reach it, full pages do.
        let mut list = List::new(3_000, 1_000_049, 1);
        let known: HashSet<String> = list.runs[50..].iter().map(|r| r.0.clone()).collect();
        let o = drive(&mut list, Some(COMPLETE), &known, |_, _| {});
        assert_eq!(o.requests, 2);
        assert!(list.runs[..50].iter().all(|r| o.read.contains(&r.0)));
        // At the watermark: a run created in the same millisecond may still be new.
        let mut r = ListRead::new(Some(COMPLETE));
        let page = [("a", Some(1_000_000))];
        let facts = PageFacts {
            total: Some(500),
            total_pages: None,
            runs: &page,
            unknown_below: 0,
        };
        assert_ne!(r.on_page(1, facts), Next::Stop);
    }

    /// H2: a run the cache does not know below the watermark (listed late) keeps the read
    /// going, and the next call reads the whole list.
    #[test]
    fn a_run_listed_late_below_the_watermark_clears_complete() {
        let mut list = List::new(3_000, 900_000, 1);
        let mut known = ids(&list);
        known.remove("r5");
        let o = drive(&mut list, Some(COMPLETE), &known, |_, _| {});
        assert!(o.end.straggler);
        assert!(o.requests > 1);
        assert_eq!(
            next_mark(Some(COMPLETE), o.end, false),
            Some(Mark {
                complete: false,
                watermark_ms: COMPLETE.watermark_ms
            })
        );
    }

    fn end(whole: bool, joined: bool, newest: Option<i64>, now: Option<i64>) -> ReadEnd {
        ReadEnd {
            whole,
            joined,
            straggler: false,
            newest_ms: newest,
            now_ms: now,
        }
    }

    const NOW: i64 = 100 * STOP_MARGIN_MS;

    #[test]
    fn a_whole_read_makes_the_cache_complete() {
        assert_eq!(
            next_mark(None, end(true, false, Some(50), Some(NOW)), false),
            Some(Mark {
                complete: true,
                watermark_ms: 50
            })
        );
        // Joining a complete cache moves the watermark up, never down.
        assert_eq!(
            next_mark(
                Some(COMPLETE),
                end(false, true, Some(2_000_000), Some(NOW)),
                false
            ),
            Some(Mark {
                complete: true,
                watermark_ms: 2_000_000
            })
        );
        assert_eq!(
            next_mark(Some(COMPLETE), end(false, true, Some(10), Some(NOW)), false),
            Some(COMPLETE)
        );
        // An empty history is complete too.
        assert_eq!(
            next_mark(None, end(true, false, None, Some(NOW)), false),
            Some(Mark {
                complete: true,
                watermark_ms: NOW - STOP_MARGIN_MS
            })
        );
    }

    /// H2: the watermark stays the margin below the platform's clock at the read's start, so
    /// a run created (stamped) just before the read but listed after it is read next time,
    /// and a `createdAt` in the future cannot hold the watermark up.
    #[test]
    fn the_watermark_stays_a_margin_below_the_platforms_clock() {
        let fresh = next_mark(None, end(true, false, Some(NOW - 1_000), Some(NOW)), false);
        assert_eq!(fresh.map(|m| m.watermark_ms), Some(NOW - STOP_MARGIN_MS));
        let future = next_mark(None, end(true, false, Some(NOW * 50), Some(NOW)), false);
        assert_eq!(future.map(|m| m.watermark_ms), Some(NOW - STOP_MARGIN_MS));
        // An old watermark in the future (an earlier version) comes down too.
        let old = Mark {
            complete: true,
            watermark_ms: NOW * 50,
        };
        let joined = next_mark(Some(old), end(false, true, Some(NOW - 5), Some(NOW)), false);
        assert_eq!(joined.map(|m| m.watermark_ms), Some(NOW - STOP_MARGIN_MS));
        // Without the platform's clock, the margin is taken below the newest run read.
        let no_clock = next_mark(None, end(true, false, Some(NOW), None), false);
        assert_eq!(no_clock.map(|m| m.watermark_ms), Some(NOW - STOP_MARGIN_MS));
    }

    /// M2: an unfinished run that answers 404 clears `complete`: the next call reads the
    /// whole list and finds the run again if it is still there.
    #[test]
    fn a_vanished_run_clears_complete() {
        assert_eq!(
            next_mark(Some(COMPLETE), end(false, true, Some(5), Some(NOW)), true),
            Some(Mark {
                complete: false,
                watermark_ms: COMPLETE.watermark_ms
            })
        );
    }

    #[test]
    fn an_unsettled_short_or_capped_read_teaches_nothing_about_completeness() {
        assert_eq!(
            next_mark(None, end(false, false, Some(50), Some(NOW)), false),
            None
        );
        assert_eq!(
            next_mark(
                Some(COMPLETE),
                end(false, false, Some(5_000), Some(NOW)),
                false
            ),
            Some(COMPLETE)
        );
        let partial = Mark {
            complete: false,
            watermark_ms: 7,
        };
        // Joining an incomplete mark is no join.
        assert_eq!(
            next_mark(Some(partial), end(false, true, Some(9), Some(NOW)), false),
            Some(partial)
        );
    }

    /// M1: without the cache's unfinished runs, a call may answer only from a whole read.
    #[test]
    fn without_the_watched_runs_only_a_whole_read_answers() {
        assert!(may_answer_without_watched(end(true, false, None, None)));
        assert!(!may_answer_without_watched(end(false, true, None, None)));
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
