//! An owner's runs through the run-list cache in the store: each call reads only what is new
//! since the last read (newest-first pages down to the cache's watermark) and re-reads by id
//! the runs known to be unfinished, so its platform requests grow with what changed, not with
//! the owner's history. The first call of a fresh store (per base URL, owner and key) reads the
//! whole list once. The decisions — when to stop, what the cache then knows, what to re-read —
//! are `factory_policies::runs_cache`'s; the platform stays the truth: a cache that cannot be
//! read or written means a full read, never a run left out.

use std::collections::{HashMap, HashSet};

use factory_platform::{ListRunsQuery, PlatformClient, wire::runs::RlRun};
use factory_policies::{
    duplicates::run_config_digest,
    runs_cache::{self, Mark, Next, ReadEnd},
    store::{KnownRun, KnownRunsQuery, StateStore},
};
use futures::StreamExt;
use secrecy::ExposeSecret;

use crate::{
    error::ToolError,
    owner::scope_of,
    state::{AppState, platform_error},
};

/// Re-reads by id in flight at once.
const RECHECKS_IN_FLIGHT: usize = 8;

/// Pages read without a store (the cache's fallback: the old bounded read).
const FALLBACK_PAGES: u32 = 5;

/// An owner's runs as far as a call needs them: every run not known to be finished (fresh from
/// this call's reads, or — past the re-check bound — as last read), and lookups by name,
/// config digest or id in this call's reads and the cache.
pub(crate) struct OwnerRuns<'a> {
    /// `None` without a store.
    cache: Option<(&'a dyn StateStore, String)>,
    /// The team the runs belong to (`None`: the personal account).
    team: Option<String>,
    /// Every run this call read (the newest runs; without a store, the bounded read), so a
    /// lookup finds them even when the cache could not be written.
    fresh: Vec<RlRun>,
    unfinished: Vec<RlRun>,
}

impl OwnerRuns<'_> {
    /// Every run of the owner not known to be finished (active ones included).
    pub(crate) fn unfinished(&self) -> &[RlRun] {
        &self.unfinished
    }

    /// The unfinished runs, plus every run read by this call or known to the cache with one
    /// of `names` or `config_digests`, or one of `ours` (the ids of the runs this server
    /// dispatched, from its journal: in the cache they are matched by the store's join with
    /// the journal, not one by one), whatever its age, newest first, each once. A
    /// cache that cannot be read fails the call: an old run left out could let a duplicate or
    /// a second dispatch through.
    pub(crate) async fn with(
        &self,
        names: &[String],
        config_digests: &[String],
        ours: &[String],
    ) -> Result<Vec<RlRun>, ToolError> {
        let mut out: Vec<RlRun> = self.unfinished.clone();
        let mut extra: Vec<RlRun> = self
            .fresh
            .iter()
            .filter(|r| {
                r.name.as_ref().is_some_and(|n| names.contains(n))
                    || ours.contains(&r.id)
                    || run_config_digest(r).is_some_and(|d| config_digests.contains(&d))
            })
            .cloned()
            .collect();
        if let Some((store, scope)) = &self.cache {
            let q = KnownRunsQuery {
                watched: false,
                names: names.to_vec(),
                config_digests: config_digests.to_vec(),
                ids: Vec::new(),
                dispatched: !ours.is_empty(),
            };
            let rows = store.known_runs(scope, &q).await.map_err(|e| {
                ToolError::unavailable(format!(
                    "cannot read the run-list cache ({e}); nothing was decided — call again"
                ))
            })?;
            extra.extend(rows.iter().filter_map(|k| parse(k, &self.team)));
        }
        for r in extra {
            if !out.iter().any(|o| o.id == r.id) {
                out.push(r);
            }
        }
        out.sort_by_key(|r| std::cmp::Reverse(r.created_at_utc()));
        Ok(out)
    }
}

/// A cached run: the object as stored, or — when that no longer parses (a row written by
/// another version, or damaged) — the run as the row's columns describe it (id, status, time,
/// name, owner), so it is still counted and still matched by name and id.
fn parse(k: &KnownRun, team: &Option<String>) -> Option<RlRun> {
    serde_json::from_str(&k.body).ok().or_else(|| {
        let at = chrono::DateTime::from_timestamp_millis(k.created_ms)
            .map(|t| t.to_rfc3339())
            .unwrap_or_default();
        serde_json::from_value(serde_json::json!({
            "id": k.run_id,
            "userId": "",
            "status": k.status,
            "createdAt": at,
            "updatedAt": at,
            "name": k.name,
            "teamId": team,
        }))
        .ok()
    })
}

fn created_ms(r: &RlRun) -> Option<i64> {
    r.created_at_utc().map(|t| t.timestamp_millis())
}

fn known(r: &RlRun) -> Option<KnownRun> {
    Some(KnownRun {
        run_id: r.id.clone(),
        created_ms: created_ms(r).unwrap_or(i64::MIN),
        status: r.status.clone(),
        watch: !r.is_terminal(),
        name: r.name.clone(),
        config_digest: run_config_digest(r),
        body: serde_json::to_string(r).ok()?,
        checked_ms: 0,
    })
}

/// What one newest-first read returned.
struct Read {
    runs: Vec<RlRun>,
    end: ReadEnd,
    requests: u32,
}

/// Newest-first pages as [`runs_cache::ListRead`] says: down to a complete cache's watermark
/// or the list's end, stepping back a page where the list shrank above the read. A list that
/// keeps changing fails the call (retry) rather than answer from a read with a possible gap.
async fn read_new(
    platform: &PlatformClient,
    team: &Option<String>,
    mark: Option<Mark>,
    cache: (&dyn StateStore, &str),
) -> Result<Read, ToolError> {
    let mut runs: HashMap<String, RlRun> = HashMap::new();
    let mut requests = 0;
    let mut now_ms = None;
    let mut read = runs_cache::ListRead::new(mark);
    let mut next = read.start();
    while let Next::Read { page, limit } = next {
        let p = platform
            .list_runs(&ListRunsQuery {
                page,
                limit,
                team: scope_of(team),
                mine: false,
            })
            .await
            .map_err(|e| platform_error("list the owner's runs", &e))?;
        requests += 1;
        if requests == 1 {
            now_ms = platform.server_time().map(|t| t.timestamp_millis());
        }
        let facts: Vec<(&str, Option<i64>)> = p
            .runs
            .iter()
            .map(|r| (r.id.as_str(), created_ms(r)))
            .collect();
        let below = read.below_watermark(&facts);
        let unknown_below = if below.is_empty() {
            0
        } else {
            let q = KnownRunsQuery {
                ids: below.iter().map(|id| id.to_string()).collect(),
                ..Default::default()
            };
            match cache.0.known_runs(cache.1, &q).await {
                Ok(rows) => below
                    .iter()
                    .filter(|id| !rows.iter().any(|k| k.run_id == **id))
                    .count(),
                // Not known to be known: read on (and the next call reads the whole list).
                Err(_) => below.len(),
            }
        };
        next = read.on_page(
            page,
            runs_cache::PageFacts {
                total: p.total,
                total_pages: p.total_pages,
                runs: &facts,
                unknown_below,
            },
        );
        runs.extend(p.runs.into_iter().map(|r| (r.id.clone(), r)));
    }
    if next == Next::Unsettled {
        return Err(ToolError::unavailable(
            "The owner's run list kept changing while it was read (runs deleted between pages), \
             so an active run could have been missed: nothing was decided. Call again in a minute.",
        ));
    }
    Ok(Read {
        runs: runs.into_values().collect(),
        end: read.end(now_ms),
        requests,
    })
}

/// The owner's runs: what is new since the last read, the unfinished ones re-read, the cache
/// brought up to date.
pub(crate) async fn owner_runs<'a>(
    state: &'a AppState,
    platform: &PlatformClient,
    team: &Option<String>,
) -> Result<OwnerRuns<'a>, ToolError> {
    let Ok(store) = state.store() else {
        let scan = platform
            .scan_runs(&scope_of(team), false, FALLBACK_PAGES, |_| false)
            .await
            .map_err(|e| platform_error("list the owner's runs", &e))?;
        let unfinished = scan
            .runs
            .iter()
            .filter(|r| !r.is_terminal())
            .cloned()
            .collect();
        return Ok(OwnerRuns {
            cache: None,
            team: team.clone(),
            fresh: scan.runs,
            unfinished,
        });
    };
    let settings = platform.settings();
    let key = settings.api_key.as_ref().map_or("", |k| k.expose_secret());
    let scope = runs_cache::scope_key(&settings.base_url, team.as_deref(), key);
    let mark = match store.known_runs_mark(&scope).await {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!("run cache unreadable ({e}); reading the whole run list");
            None
        }
    };
    let read = read_new(platform, team, mark, (store, &scope)).await?;
    let mut requests = read.requests;
    let watched = match store
        .known_runs(
            &scope,
            &KnownRunsQuery {
                watched: true,
                ..Default::default()
            },
        )
        .await
    {
        Ok(w) => w,
        Err(e) if runs_cache::may_answer_without_watched(read.end) => {
            tracing::warn!("run cache unreadable ({e}); the whole list was read");
            Vec::new()
        }
        Err(e) => {
            return Err(ToolError::unavailable(format!(
                "cannot read the run-list cache's unfinished runs ({e}); nothing was decided — call again"
            )));
        }
    };
    let seen: HashSet<&str> = read.runs.iter().map(|r| r.id.as_str()).collect();
    // A row whose object no longer parses is re-read first.
    let stamps: Vec<(String, i64)> = watched
        .iter()
        .map(|w| {
            let stale = serde_json::from_str::<RlRun>(&w.body).is_err();
            (
                w.run_id.clone(),
                if stale { i64::MIN } else { w.checked_ms },
            )
        })
        .collect();
    let due = runs_cache::rechecks(&stamps, |id| seen.contains(id), runs_cache::MAX_RECHECKS);
    let answers: Vec<(String, Result<RlRun, factory_platform::PlatformError>)> =
        futures::stream::iter(due.iter().cloned())
            .map(|id| async move {
                let r = platform.get_run(&id).await;
                (id, r)
            })
            .buffer_unordered(RECHECKS_IN_FLIGHT)
            .collect()
            .await;
    requests += answers.len() as u32;
    let mut fresh: Vec<RlRun> = read.runs;
    let mut gone: Vec<String> = Vec::new();
    for (id, answer) in answers {
        match answer {
            Ok(run) if run.id == id => fresh.push(run),
            Err(e) if e.status() == Some(404) => gone.push(id),
            // Not re-read (an error, or another run's object): kept as last known.
            Ok(_) | Err(_) => {}
        }
    }
    // Unfinished: as read now, or as last known when not re-read (past the bound, the re-read
    // failed, or it answered 404: such a run leaves the cache and the next call reads the
    // whole list, which finds it again if the 404 was wrong) — counted as active, the safe
    // side.
    let fresh_ids: HashSet<&str> = fresh.iter().map(|r| r.id.as_str()).collect();
    let mut unfinished: Vec<RlRun> = fresh.iter().filter(|r| !r.is_terminal()).cloned().collect();
    for w in &watched {
        if fresh_ids.contains(w.run_id.as_str()) {
            continue;
        }
        unfinished.extend(parse(w, team));
    }
    unfinished.sort_by_key(|r| std::cmp::Reverse(r.created_at_utc()));
    let rows: Vec<KnownRun> = fresh.iter().filter_map(known).collect();
    let next = runs_cache::next_mark(mark, read.end, !gone.is_empty());
    if let Err(e) = store.put_known_runs(&scope, &rows, &gone, next).await {
        tracing::warn!("run cache not written ({e}); the next call reads again");
    }
    tracing::debug!(
        requests,
        new = rows.len(),
        rechecked = due.len(),
        gone = gone.len(),
        "owner runs read"
    );
    Ok(OwnerRuns {
        cache: Some((store, scope)),
        team: team.clone(),
        fresh,
        unfinished,
    })
}

#[cfg(test)]
mod tests {
    use factory_policies::store::Store;

    use super::*;

    fn run(id: &str, name: &str, status: &str) -> RlRun {
        serde_json::from_value(serde_json::json!({
            "id": id, "userId": "u", "status": status, "name": name, "teamId": "t1",
            "createdAt": "2026-01-01T00:00:00Z", "updatedAt": "2026-01-01T00:00:00Z",
        }))
        .unwrap()
    }

    /// Review M3: a run this call read is found by a lookup even when the cache never got it
    /// (its write failed): reconciliation must see a just-created run that already failed.
    #[tokio::test]
    async fn lookups_see_this_calls_reads_without_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let runs = OwnerRuns {
            cache: Some((&store, "scope".into())),
            team: Some("t1".into()),
            fresh: vec![run("r1", "mine", "FAILED"), run("r2", "other", "FAILED")],
            unfinished: Vec::new(),
        };
        let found = runs.with(&["mine".into()], &[], &[]).await.unwrap();
        assert_eq!(
            found.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
            ["r1"]
        );
        let by_id = runs.with(&[], &[], &["r2".into()]).await.unwrap();
        assert_eq!(by_id.len(), 1);
    }

    /// Review M4: a cached row whose object no longer parses is still a run (id, status,
    /// name, owner), so it is counted and matched by name.
    #[test]
    fn a_row_that_no_longer_parses_is_still_a_run() {
        let row = KnownRun {
            run_id: "r9".into(),
            created_ms: 1_700_000_000_000,
            status: "RUNNING".into(),
            watch: true,
            name: Some("long".into()),
            config_digest: None,
            body: "{not json".into(),
            checked_ms: 0,
        };
        let r = parse(&row, &Some("t1".into())).expect("a run from the columns");
        assert_eq!(
            (
                r.id.as_str(),
                r.status.as_str(),
                r.name.as_deref(),
                r.team_id.as_deref()
            ),
            ("r9", "RUNNING", Some("long"), Some("t1"))
        );
        assert!(!r.is_terminal());
        assert!(r.created_at_utc().is_some());
    }
}
