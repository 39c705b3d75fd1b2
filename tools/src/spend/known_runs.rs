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
    runs_cache::{self, Mark, ReadEnd, Step},
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
/// config digest or id in the cache.
pub(crate) struct OwnerRuns<'a> {
    /// `None` without a store: then `fallback` holds the newest runs read.
    cache: Option<(&'a dyn StateStore, String)>,
    fallback: Vec<RlRun>,
    unfinished: Vec<RlRun>,
}

impl OwnerRuns<'_> {
    /// Every run of the owner not known to be finished (active ones included).
    pub(crate) fn unfinished(&self) -> &[RlRun] {
        &self.unfinished
    }

    /// The unfinished runs, plus every known run with one of `names`, `config_digests` or
    /// `ids` (whatever its age), newest first, each once.
    pub(crate) async fn with(
        &self,
        names: &[String],
        config_digests: &[String],
        ids: &[String],
    ) -> Vec<RlRun> {
        let mut out: Vec<RlRun> = self.unfinished.clone();
        let extra: Vec<RlRun> = match &self.cache {
            Some((store, scope)) => {
                let q = KnownRunsQuery {
                    watched: false,
                    names: names.to_vec(),
                    config_digests: config_digests.to_vec(),
                    ids: ids.to_vec(),
                };
                match store.known_runs(scope, &q).await {
                    Ok(rows) => rows.iter().filter_map(parse).collect(),
                    Err(e) => {
                        tracing::warn!(
                            "run cache unreadable ({e}); lookups see only unfinished runs"
                        );
                        Vec::new()
                    }
                }
            }
            None => self
                .fallback
                .iter()
                .filter(|r| {
                    r.name.as_ref().is_some_and(|n| names.contains(n))
                        || ids.contains(&r.id)
                        || run_config_digest(r).is_some_and(|d| config_digests.contains(&d))
                })
                .cloned()
                .collect(),
        };
        for r in extra {
            if !out.iter().any(|o| o.id == r.id) {
                out.push(r);
            }
        }
        out.sort_by_key(|r| std::cmp::Reverse(r.created_at_utc()));
        out
    }
}

fn parse(k: &KnownRun) -> Option<RlRun> {
    serde_json::from_str(&k.body).ok()
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

/// Newest-first pages until [`runs_cache::after_page`] says enough. A list whose `total`
/// moves between pages is read again from the top (at most [`runs_cache::MAX_RESTARTS`] times).
async fn read_new(
    platform: &PlatformClient,
    team: &Option<String>,
    mark: Option<Mark>,
) -> Result<Read, ToolError> {
    let mut seen: HashMap<String, RlRun> = HashMap::new();
    let mut requests = 0;
    let mut restarts = 0;
    let mut limit = runs_cache::first_page_size(mark);
    'read: loop {
        let mut total = None;
        let mut newest: Option<i64> = None;
        for page in 1..=runs_cache::MAX_PAGES {
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
            if page == 1 {
                total = p.total;
            } else if p.total != total {
                if restarts < runs_cache::MAX_RESTARTS {
                    restarts += 1;
                    continue 'read;
                }
                seen.extend(p.runs.into_iter().map(|r| (r.id.clone(), r)));
                return Ok(Read {
                    runs: seen.into_values().collect(),
                    end: ReadEnd {
                        done: true,
                        reached_end: false,
                        stable: false,
                        newest_ms: newest,
                    },
                    requests,
                });
            }
            let last = p.runs.len() < limit as usize
                || p.total_pages.is_some_and(|tp| u64::from(page) >= tp);
            let oldest = p.runs.iter().filter_map(created_ms).min();
            newest = newest.max(p.runs.iter().filter_map(created_ms).max());
            seen.extend(p.runs.into_iter().map(|r| (r.id.clone(), r)));
            let step = runs_cache::after_page(mark, oldest, last);
            if step == Step::Next && limit != runs_cache::PAGE {
                // The short first page did not reach the watermark: read on in full pages.
                limit = runs_cache::PAGE;
                continue 'read;
            }
            if step == Step::Done {
                return Ok(Read {
                    runs: seen.into_values().collect(),
                    end: ReadEnd {
                        done: true,
                        reached_end: last,
                        stable: true,
                        newest_ms: newest,
                    },
                    requests,
                });
            }
        }
        return Ok(Read {
            runs: seen.into_values().collect(),
            end: ReadEnd {
                done: false,
                reached_end: false,
                stable: true,
                newest_ms: newest,
            },
            requests,
        });
    }
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
            fallback: scan.runs,
            unfinished,
        });
    };
    let settings = platform.settings();
    let key = settings
        .api_key
        .as_ref()
        .map(|k| k.expose_secret().to_string())
        .unwrap_or_default();
    let scope = runs_cache::scope_key(&settings.base_url, team.as_deref(), &key);
    let mark = match store.known_runs_mark(&scope).await {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!("run cache unreadable ({e}); reading the whole run list");
            None
        }
    };
    let read = read_new(platform, team, mark).await?;
    let mut requests = read.requests;
    let watched = store
        .known_runs(
            &scope,
            &KnownRunsQuery {
                watched: true,
                ..Default::default()
            },
        )
        .await
        .unwrap_or_default();
    let seen: HashSet<&str> = read.runs.iter().map(|r| r.id.as_str()).collect();
    let stamps: Vec<(String, i64)> = watched
        .iter()
        .map(|w| (w.run_id.clone(), w.checked_ms))
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
    // Unfinished: as read now, or as last known when not re-read (past the bound, or the
    // re-read failed) — counted as active, the safe side.
    let fresh_ids: HashSet<&str> = fresh.iter().map(|r| r.id.as_str()).collect();
    let mut unfinished: Vec<RlRun> = fresh.iter().filter(|r| !r.is_terminal()).cloned().collect();
    for w in &watched {
        if fresh_ids.contains(w.run_id.as_str()) || gone.contains(&w.run_id) {
            continue;
        }
        if let Some(r) = parse(w) {
            unfinished.push(r);
        }
    }
    unfinished.sort_by_key(|r| std::cmp::Reverse(r.created_at_utc()));
    let rows: Vec<KnownRun> = fresh.iter().filter_map(known).collect();
    let next = runs_cache::next_mark(mark, read.end);
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
        fallback: Vec::new(),
        unfinished,
    })
}
