//! The run-list cache (`known_runs`, `known_run_scopes`): per owner scope (base URL, owner,
//! API-key fingerprint — [`crate::runs_cache::scope_key`]), the runs read from the platform
//! with their status, and how much of the history has been read ([`Mark`]). The decisions
//! over it are in [`crate::runs_cache`]; the platform stays the truth.
//!
//! A cache write is not a decision anyone relies on after a crash: it commits with
//! `synchronous = NORMAL` (no fsync of its own; the next FULL commit, or the WAL checkpoint,
//! carries it), so a read call costs no disk flush. A lost cache write only means a re-read.

use rusqlite::{OptionalExtension, params, params_from_iter};

use super::{Store, StoreError, now_millis};
use crate::runs_cache::Mark;

/// One run as the cache keeps it: the indexed facts plus the run object as read (JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownRun {
    pub run_id: String,
    /// `createdAt` in ms since the epoch (`i64::MIN` when unreadable).
    pub created_ms: i64,
    pub status: String,
    /// Not finished: re-read by id until it is (`!is_terminal`, so unknown statuses too).
    pub watch: bool,
    pub name: Option<String>,
    /// [`crate::duplicates::run_config_digest`], for the duplicate decision.
    pub config_digest: Option<String>,
    /// The run object as the platform sent it (JSON text).
    pub body: String,
    /// When it was last read from the platform (ms since the epoch; set by the store).
    pub checked_ms: i64,
}

/// Which known runs to read back: those matching any of the given conditions.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownRunsQuery {
    /// Every run not known to be finished.
    pub watched: bool,
    /// Runs with one of these names.
    pub names: Vec<String>,
    /// Runs with one of these config digests.
    pub config_digests: Vec<String>,
    /// Runs with one of these ids.
    pub ids: Vec<String>,
    /// Runs this server dispatched (the dispatch journal's `dispatched` entries), joined in
    /// the store however many there are (a backend matches them without a parameter a run).
    pub dispatched: bool,
}

const COLUMNS: &str = "run_id, created_ms, status, watch, name, config_digest, body, checked_ms";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<KnownRun> {
    Ok(KnownRun {
        run_id: r.get(0)?,
        created_ms: r.get(1)?,
        status: r.get(2)?,
        watch: r.get::<_, i64>(3)? != 0,
        name: r.get(4)?,
        config_digest: r.get(5)?,
        body: r.get(6)?,
        checked_ms: r.get(7)?,
    })
}

impl Store {
    /// How much of this scope's history the cache has read; `None`: nothing yet.
    pub fn known_runs_mark(&self, scope: &str) -> Result<Option<Mark>, StoreError> {
        self.read(|tx| {
            Ok(tx
                .query_row(
                    "SELECT complete, watermark_ms FROM known_run_scopes WHERE scope = ?1",
                    [scope],
                    |r| {
                        Ok(Mark {
                            complete: r.get::<_, i64>(0)? != 0,
                            watermark_ms: r.get(1)?,
                        })
                    },
                )
                .optional()?)
        })
    }

    /// Record what a read found: `runs` upserted (a row whose object and status did not
    /// change is left alone, so a warm read of a quiet history writes nothing), `gone` removed
    /// (the platform answered 404), and the scope's mark set when given.
    pub fn put_known_runs(
        &self,
        scope: &str,
        runs: &[KnownRun],
        gone: &[String],
        mark: Option<Mark>,
    ) -> Result<(), StoreError> {
        let now = now_millis();
        self.write_relaxed(|tx| {
            {
                let mut up = tx.prepare_cached(
                    "INSERT INTO known_runs (scope, run_id, created_ms, status, watch, name,
                                             config_digest, body, checked_ms)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                     ON CONFLICT (scope, run_id) DO UPDATE SET
                         created_ms = excluded.created_ms, status = excluded.status,
                         watch = excluded.watch, name = excluded.name,
                         config_digest = excluded.config_digest, body = excluded.body,
                         checked_ms = excluded.checked_ms
                     WHERE known_runs.watch != 0 OR excluded.watch != 0
                        OR known_runs.body != excluded.body",
                )?;
                for r in runs {
                    up.execute(params![
                        scope,
                        r.run_id,
                        r.created_ms,
                        r.status,
                        i64::from(r.watch),
                        r.name,
                        r.config_digest,
                        r.body,
                        now,
                    ])?;
                }
                let mut del =
                    tx.prepare_cached("DELETE FROM known_runs WHERE scope = ?1 AND run_id = ?2")?;
                for id in gone {
                    del.execute(params![scope, id])?;
                }
            }
            if let Some(m) = mark {
                tx.execute(
                    "INSERT INTO known_run_scopes (scope, complete, watermark_ms, updated_ms)
                     VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (scope) DO UPDATE SET complete = excluded.complete,
                         watermark_ms = excluded.watermark_ms, updated_ms = excluded.updated_ms
                     WHERE known_run_scopes.complete != excluded.complete
                        OR known_run_scopes.watermark_ms != excluded.watermark_ms",
                    params![scope, i64::from(m.complete), m.watermark_ms, now],
                )?;
            }
            Ok(())
        })
    }

    /// The known runs of a scope matching `q` (any condition), newest first. One indexed
    /// select per condition (an `OR` across columns would scan the whole scope).
    pub fn known_runs(&self, scope: &str, q: &KnownRunsQuery) -> Result<Vec<KnownRun>, StoreError> {
        let mut selects = Vec::new();
        let mut args: Vec<&str> = vec![scope];
        if q.watched {
            selects.push(format!(
                "SELECT {COLUMNS} FROM known_runs WHERE scope = ?1 AND watch = 1"
            ));
        }
        if q.dispatched {
            selects.push(format!(
                "SELECT {COLUMNS} FROM known_runs WHERE scope = ?1 AND run_id IN
                     (SELECT run_id FROM journal
                      WHERE kind = 'dispatch' AND state = 'dispatched' AND run_id IS NOT NULL)"
            ));
        }
        for (column, values) in [
            ("name", &q.names),
            ("config_digest", &q.config_digests),
            ("run_id", &q.ids),
        ] {
            if values.is_empty() {
                continue;
            }
            let first = args.len() + 1;
            let marks: Vec<String> = (first..first + values.len())
                .map(|i| format!("?{i}"))
                .collect();
            selects.push(format!(
                "SELECT {COLUMNS} FROM known_runs WHERE scope = ?1 AND {column} IN ({})",
                marks.join(", ")
            ));
            args.extend(values.iter().map(String::as_str));
        }
        if selects.is_empty() {
            return Ok(Vec::new());
        }
        let sql = selects.join(" UNION ALL ");
        let mut out: Vec<KnownRun> = self.read(|tx| {
            let mut stmt = tx.prepare(&sql)?;
            let rows = stmt.query_map(params_from_iter(args.iter()), row)?;
            Ok(rows.collect::<Result<_, _>>()?)
        })?;
        out.sort_by(|a, b| {
            b.created_ms
                .cmp(&a.created_ms)
                .then_with(|| b.run_id.cmp(&a.run_id))
        });
        out.dedup_by(|a, b| a.run_id == b.run_id);
        Ok(out)
    }

    /// `write`, with `synchronous = NORMAL` for this transaction only (under the same lock,
    /// so no other write of this process runs relaxed): for the cache, whose writes need no
    /// flush of their own. The store notes the connection as relaxed first, so if `f` panics
    /// or FULL cannot be restored here, the next FULL write restores it (or is refused).
    fn write_relaxed<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        use std::sync::atomic::Ordering;
        let mut conn = self.conn();
        self.relaxed.store(true, Ordering::SeqCst);
        conn.execute_batch("PRAGMA synchronous = NORMAL")
            .map_err(|e| self.err(e))?;
        let out = (|| {
            let tx = conn
                .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
                .map_err(|e| self.err(e))?;
            let out = f(&tx).map_err(|e| self.err(e))?;
            tx.commit().map_err(|e| self.err(e))?;
            Ok(out)
        })();
        // FULL again whatever happened: dispatch relies on it.
        self.ensure_full(&conn)?;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, created: i64, status: &str, watch: bool) -> KnownRun {
        KnownRun {
            run_id: id.into(),
            created_ms: created,
            status: status.into(),
            watch,
            name: Some(format!("name-{id}")),
            config_digest: Some(format!("d-{}", created % 2)),
            body: format!("{{\"id\":\"{id}\",\"status\":\"{status}\"}}"),
            checked_ms: 0,
        }
    }

    #[test]
    fn known_runs_are_kept_per_scope_queried_and_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.known_runs_mark("s1").unwrap(), None);
        let mark = Mark {
            complete: true,
            watermark_ms: 30,
        };
        store
            .put_known_runs(
                "s1",
                &[
                    run("a", 10, "COMPLETED", false),
                    run("b", 20, "RUNNING", true),
                    run("c", 30, "FAILED", false),
                ],
                &[],
                Some(mark),
            )
            .unwrap();
        store
            .put_known_runs("s2", &[run("z", 5, "RUNNING", true)], &[], None)
            .unwrap();
        assert_eq!(store.known_runs_mark("s1").unwrap(), Some(mark));
        assert_eq!(store.known_runs_mark("s2").unwrap(), None);
        let watched = store
            .known_runs(
                "s1",
                &KnownRunsQuery {
                    watched: true,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(
            watched
                .iter()
                .map(|r| r.run_id.as_str())
                .collect::<Vec<_>>(),
            ["b"]
        );
        let q = KnownRunsQuery {
            names: vec!["name-a".into()],
            config_digests: vec!["d-0".into()],
            ids: vec!["zz".into()],
            ..Default::default()
        };
        let found: Vec<String> = store
            .known_runs("s1", &q)
            .unwrap()
            .into_iter()
            .map(|r| r.run_id)
            .collect();
        assert_eq!(found, ["c", "b", "a"]);
        assert!(
            store
                .known_runs("s1", &KnownRunsQuery::default())
                .unwrap()
                .is_empty()
        );
        // A status change is written; a 404 forgets the run.
        store
            .put_known_runs(
                "s1",
                &[run("b", 20, "COMPLETED", false)],
                &["a".into()],
                None,
            )
            .unwrap();
        let all = store
            .known_runs(
                "s1",
                &KnownRunsQuery {
                    ids: vec!["a".into(), "b".into(), "c".into()],
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(all.len(), 2);
        assert!(all.iter().all(|r| !r.watch));
        assert_eq!(store.known_runs_mark("s1").unwrap(), Some(mark));
    }

    #[test]
    fn the_schema_migrates_and_dispatch_writes_stay_full() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .put_known_runs("s", &[run("a", 1, "RUNNING", true)], &[], None)
            .unwrap();
        let sync: i64 = store
            .conn()
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .unwrap();
        assert_eq!(sync, 2, "FULL after a cache write");
    }

    /// Review L1/L2: a cache write whose closure fails, or panics, leaves the connection at
    /// FULL for the next write.
    #[test]
    fn full_is_restored_after_a_failed_or_panicking_cache_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let sync = |s: &Store| -> i64 {
            s.conn()
                .query_row("PRAGMA synchronous", [], |r| r.get(0))
                .unwrap()
        };
        let failed: Result<(), StoreError> =
            store.write_relaxed(|tx| Ok(tx.execute_batch("SELECT * FROM no_such_table")?));
        assert!(failed.is_err());
        assert_eq!(sync(&store), 2, "FULL after a failed cache write");
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = store.write_relaxed(|_| -> Result<(), StoreError> { panic!("boom") });
        }));
        assert!(panicked.is_err());
        assert_eq!(sync(&store), 1, "left NORMAL by the panic");
        store.write(|tx| Ok(tx.execute_batch("SELECT 1")?)).unwrap();
        assert_eq!(sync(&store), 2, "the next FULL write restored FULL");
    }

    /// Review L2: a populated store written by schema 2 (before the cache) opens, migrates
    /// to the current version and keeps its rows; the cache works in it.
    #[test]
    fn a_populated_schema_2_store_migrates() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store
                .conn()
                .execute_batch(
                    "DROP TABLE known_runs; DROP TABLE known_run_scopes;
                     INSERT INTO plans (id, created_at, expires_at, request_digest,
                                        content_digest, owner, summary_text, body)
                     VALUES ('p1', 1, 2, 'rd', 'cd', NULL, 'summary', '{}');
                     PRAGMA user_version = 2;",
                )
                .unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let version: i64 = store
            .conn()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, crate::store::schema::SCHEMA_VERSION);
        let plans: i64 = store
            .conn()
            .query_row("SELECT count(*) FROM plans WHERE id = 'p1'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(plans, 1, "the schema-2 rows are kept");
        store
            .put_known_runs("s", &[run("a", 1, "RUNNING", true)], &[], None)
            .unwrap();
        assert_eq!(
            store
                .known_runs(
                    "s",
                    &KnownRunsQuery {
                        watched: true,
                        ..Default::default()
                    }
                )
                .unwrap()
                .len(),
            1
        );
    }

    /// Review L3: the runs this server dispatched are matched against the journal in the
    /// store, not through one parameter a run.
    #[test]
    fn dispatched_runs_are_joined_against_the_journal() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        store
            .conn()
            .execute_batch(
                "INSERT INTO plans (id, created_at, expires_at, request_digest, content_digest,
                                    owner, summary_text, body)
                 VALUES ('p1', 1, 2, 'rd', 'cd', NULL, 's', '{}')",
            )
            .unwrap();
        assert!(
            store
                .claim_dispatch("p1", std::time::Duration::from_secs(60))
                .unwrap()
                .is_claimed()
        );
        store
            .mark_dispatched("p1", "b", &serde_json::json!({}))
            .unwrap();
        store
            .put_known_runs(
                "s",
                &[
                    run("a", 1, "COMPLETED", false),
                    run("b", 2, "FAILED", false),
                ],
                &[],
                None,
            )
            .unwrap();
        let ours = store
            .known_runs(
                "s",
                &KnownRunsQuery {
                    dispatched: true,
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(
            ours.iter().map(|r| r.run_id.as_str()).collect::<Vec<_>>(),
            ["b"]
        );
    }
}
