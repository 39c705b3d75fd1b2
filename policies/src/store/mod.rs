//! The durable state store: plans, approvals, the dispatch and volume-creation journal, used
//! request-state nonces and the audit log, in one SQLite database under
//! `$XDG_STATE_HOME/factory-mcp/`, with the run-list cache (`known_runs`); and, beside it, the request-state key in its own file.
//!
//! Durability and crash safety: every mutation is one transaction; the database runs in WAL
//! mode with `synchronous=FULL`, so a call that returned `Ok` has reached the disk before the
//! caller goes on to dispatch, and a process killed mid-transaction leaves the previous state
//! (SQLite rolls back the torn transaction on the next open).
//!
//! Concurrency: several processes (assistant sessions, an `approve` in a terminal) may use
//! the same directory at once. Writes take the database's write lock up front
//! (`BEGIN IMMEDIATE`) so read-then-write decisions such as "claim this dispatch unless
//! someone has" cannot interleave; a waiting writer retries for up to [`BUSY_TIMEOUT`].
//!
//! Secrets: the store never receives a secret value. Plans hold secret *names* and digests;
//! the request-state key is the only sensitive material here and lives in its own
//! owner-only file, never in the SQLite database. (The PostgreSQL backend, `postgres.rs`,
//! keeps it in the shared database instead, so that every replica of a gateway has it.)

mod backend;
mod journal;
mod key;
mod known_runs;
mod page;
pub mod postgres;
mod schema;

use std::fs::{DirBuilder, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

pub use chrono::{DateTime, Utc};
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use secrecy::SecretSlice;
use serde::{Deserialize, Serialize};

pub use backend::{StateStore, StoreFuture};
pub use journal::{Claim, DispatchRecord, DispatchState, Lease, VolumeRecord, VolumeState};
pub use key::{KEY_FILE, KEY_LEN};
pub use known_runs::{KnownRun, KnownRunsQuery};
pub use page::{PageTokenRecord, new_page_secret, secret_digest};

/// The database file's name inside the state directory.
pub const DB_FILE: &str = "state.sqlite3";
/// How long a writer waits for another process's transaction before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Everything that can go wrong with the state store; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no state directory: set XDG_STATE_HOME or HOME, or pass an explicit state directory")]
    NoStateDir,
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "the state database is busy: another factory-mcp process has held it for over {}s; \
         retry, and if it persists look for a stuck factory-mcp process",
        BUSY_TIMEOUT.as_secs()
    )]
    Busy,
    #[error(
        "the state database at {} is damaged ({detail}); move it aside (it holds plans, the \
         dispatch journal and the audit log: keep it for inspection) and retry; check \
         list_runs before relaunching anything",
        path.display()
    )]
    Corrupt { path: PathBuf, detail: String },
    #[error(
        "the state database was written by a newer factory-mcp (schema {found}, this build \
         reads up to {supported}); upgrade factory-mcp"
    )]
    NewerSchema { found: i64, supported: i64 },
    #[error("state database error: {0}")]
    Sqlite(rusqlite::Error),
    #[error(
        "the PostgreSQL state database: {0}; check [state] url, the password, and that the \
         database is reachable"
    )]
    Postgres(String),
    #[error("state store settings: {0}")]
    Config(String),
    #[error("stored {what} is not valid JSON: {source}")]
    Json {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("a plan with id {0} already exists")]
    DuplicatePlan(String),
    #[error("no plan with id {0}")]
    UnknownPlan(String),
    #[error("{what} {key} has no journal record; claim it first")]
    NotClaimed { what: &'static str, key: String },
    #[error(
        "{what} {key} is held by another process ({holder}); this process's lease expired \
         and was taken over, so it must not record an outcome"
    )]
    LeaseLost {
        what: &'static str,
        key: String,
        holder: String,
    },
    #[error("{what} {key} is already {state}; its journal record cannot change to {to}")]
    Settled {
        what: &'static str,
        key: String,
        state: String,
        to: &'static str,
    },
    #[error(
        "the request-state key {} is readable by others (mode {mode:o}); run `chmod 600 {}`",
        path.display(),
        path.display()
    )]
    KeyPermissions { path: PathBuf, mode: u32 },
    #[error(
        "the request-state key {} holds {len} bytes, not {}; delete it (a new one is made; \
         pending confirmations must then be asked again)",
        path.display(),
        KEY_LEN
    )]
    KeyCorrupt { path: PathBuf, len: usize },
    #[error("the operating system's random source failed: {0}")]
    Random(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => StoreError::Busy,
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => StoreError::Corrupt {
                // Filled in by `Store` methods that know the path; see `Store::err`.
                path: PathBuf::new(),
                detail: e.to_string(),
            },
            _ => StoreError::Sqlite(e),
        }
    }
}

/// A launch plan as the store keeps it: indexed columns plus an opaque JSON body. Plans are
/// immutable once stored, so a decision on a plan id is a decision on these digests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRecord {
    pub id: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    /// Digest of the exact create-run request (detects any change before launch).
    pub request_digest: String,
    /// Digest of the normalised config and options (finds duplicates of earlier runs).
    pub content_digest: String,
    /// Team id, or `None` for the personal account.
    pub owner: Option<String>,
    /// One screen of text, shown by `factory-mcp approve`.
    pub summary_text: String,
    /// Everything else, opaque to the store.
    pub body: serde_json::Value,
}

impl PlanRecord {
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at <= now
    }
}

/// A person's answer to a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approved,
    Refused,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Approved => "approved",
            Decision::Refused => "refused",
        }
    }
}

impl std::fmt::Display for Decision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The latest decision on a plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecisionRecord {
    pub plan_id: String,
    pub decision: Decision,
    /// The channel the answer came through (`confirmation::Via::as_str`: `"terminal"`,
    /// `"form"`, `"input_required"`; `"elicitation"` in older rows).
    pub via: String,
    pub decided_at: DateTime<Utc>,
    /// The plan's request digest when the decision was made (plans are immutable, so this
    /// equals the plan's; kept so a reader of the row alone can tell what was approved).
    pub request_digest: String,
}

/// One event for the audit log. Never put a secret value in `detail`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEvent {
    /// The tool or command that acted (`launch_run`, `approve`, …).
    pub actor: String,
    /// What it did (`dispatch`, `decide`, `show`, …).
    pub action: String,
    pub plan_id: Option<String>,
    pub run_id: Option<String>,
    /// The decision or outcome (`approved`, `refused`, `dispatched`, `unknown_plan`, …).
    pub outcome: String,
    pub detail: serde_json::Value,
    /// Who the action was for: the OAuth access token's or the signed-in person's `sub`
    /// (issue 21 §2); `None` over stdio, with a static token, and for `factory-mcp approve`.
    pub subject: Option<String>,
}

impl AuditEvent {
    pub fn new(actor: &str, action: &str, outcome: &str) -> Self {
        AuditEvent {
            actor: actor.to_owned(),
            action: action.to_owned(),
            plan_id: None,
            run_id: None,
            outcome: outcome.to_owned(),
            detail: serde_json::Value::Null,
            subject: None,
        }
    }

    pub fn subject(mut self, subject: Option<&str>) -> Self {
        self.subject = subject.map(str::to_owned);
        self
    }

    pub fn plan(mut self, plan_id: &str) -> Self {
        self.plan_id = Some(plan_id.to_owned());
        self
    }

    pub fn run(mut self, run_id: &str) -> Self {
        self.run_id = Some(run_id.to_owned());
        self
    }

    pub fn detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = detail;
        self
    }
}

/// An audit log entry as read back.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEntry {
    /// Position in the log (increasing, never reused).
    pub seq: i64,
    pub at: DateTime<Utc>,
    /// The process that wrote it.
    pub pid: u32,
    #[serde(flatten)]
    pub event: AuditEvent,
}

/// The state store. Cheap to share behind an `Arc`; one connection, used under a mutex
/// (SQLite serialises writers anyway, and calls are short).
pub struct Store {
    dir: PathBuf,
    db_path: PathBuf,
    conn: Mutex<Connection>,
    /// The connection may be left at `synchronous = NORMAL` (a cache write that panicked, or
    /// whose restore of FULL failed): the next FULL write sets FULL first, or refuses.
    relaxed: std::sync::atomic::AtomicBool,
    /// The dispatch lease the settings ask for (`[state] dispatch_lease_seconds`).
    dispatch_lease: Option<Duration>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("dir", &self.dir).finish()
    }
}

/// This process's identity as a lease holder: pid plus random bits, so that a recycled pid
/// is not mistaken for the process that died.
pub fn holder_id() -> &'static str {
    static HOLDER: OnceLock<String> = OnceLock::new();
    HOLDER.get_or_init(|| {
        let tag: [u8; 6] = rand::random();
        format!("pid{}-{}", std::process::id(), hex::encode(tag))
    })
}

pub(crate) fn to_millis(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

pub(crate) fn from_millis(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

pub(crate) fn now_millis() -> i64 {
    to_millis(Utc::now())
}

impl Store {
    /// Open (creating if needed) the store in `dir`. The directory is created with mode 0700
    /// and the database file with 0600; the schema is created or migrated.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError::Io { path, source }
        };
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io(dir))?;
        let db_path = dir.join(DB_FILE);
        // Create the file ourselves so it is private from the start; SQLite gives the -wal
        // and -shm files the main file's permissions.
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&db_path)
            .map_err(io(&db_path))?;
        let with_path = |e: StoreError| match e {
            StoreError::Corrupt { detail, .. } => StoreError::Corrupt {
                path: db_path.clone(),
                detail,
            },
            other => other,
        };
        let mut conn = Connection::open_with_flags(
            &db_path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )
        .map_err(|e| with_path(e.into()))?;
        Self::configure(&mut conn).map_err(with_path)?;
        schema::migrate(&mut conn).map_err(with_path)?;
        Ok(Store {
            dir: dir.to_path_buf(),
            db_path,
            conn: Mutex::new(conn),
            relaxed: std::sync::atomic::AtomicBool::new(false),
            dispatch_lease: None,
        })
    }

    fn configure(conn: &mut Connection) -> Result<(), StoreError> {
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // WAL lets readers proceed during a write; it is persistent in the file, but setting
        // it on every open is cheap and repairs a database created elsewhere.
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(%mode, "the state database could not switch to WAL mode");
        }
        // FULL: a commit is on disk (WAL fsynced) before `Ok` returns; dispatch relies on it.
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")?;
        Ok(())
    }

    /// `$XDG_STATE_HOME/factory-mcp`, else `$HOME/.local/state/factory-mcp`. Relative values
    /// are ignored, as the XDG spec asks.
    pub fn default_dir(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
        let absolute = |v: Option<String>| v.map(PathBuf::from).filter(|p| p.is_absolute());
        if let Some(state) = absolute(env("XDG_STATE_HOME")) {
            return Some(state.join("factory-mcp"));
        }
        absolute(env("HOME")).map(|home| home.join(".local/state/factory-mcp"))
    }

    /// Use this dispatch lease instead of the dispatcher's default (create timeout + 30 s).
    pub fn with_dispatch_lease(mut self, lease: Option<Duration>) -> Self {
        self.dispatch_lease = lease;
        self
    }

    /// The state directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The database file.
    pub fn db_path(&self) -> &Path {
        &self.db_path
    }

    fn conn(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave a half-applied change: SQLite rolls an
        // unfinished transaction back when its `Transaction` is dropped.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn err(&self, e: impl Into<StoreError>) -> StoreError {
        match e.into() {
            StoreError::Corrupt { detail, .. } => StoreError::Corrupt {
                path: self.db_path.clone(),
                detail,
            },
            other => other,
        }
    }

    /// `synchronous = FULL` again if a relaxed write may have left the connection without it;
    /// a write that cannot have FULL is refused.
    pub(crate) fn ensure_full(&self, conn: &Connection) -> Result<(), StoreError> {
        use std::sync::atomic::Ordering;
        if self.relaxed.load(Ordering::SeqCst) {
            conn.execute_batch("PRAGMA synchronous = FULL")
                .map_err(|e| self.err(e))?;
            self.relaxed.store(false, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Run `f` inside one `BEGIN IMMEDIATE` transaction; commit on `Ok`, roll back on `Err`.
    pub(crate) fn write<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn();
        self.ensure_full(&conn)?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| self.err(e))?;
        let out = f(&tx).map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(out)
    }

    /// Run read-only `f` on one consistent snapshot.
    pub(crate) fn read<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut conn = self.conn();
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Deferred)
            .map_err(|e| self.err(e))?;
        let out = f(&tx).map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(out)
    }

    /// `PRAGMA integrity_check`: `Ok` when SQLite finds the file consistent.
    pub fn check_integrity(&self) -> Result<(), StoreError> {
        let report: Vec<String> = self.read(|tx| {
            let mut stmt = tx.prepare("PRAGMA integrity_check")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            Ok(rows.collect::<Result<_, _>>()?)
        })?;
        if report.len() == 1 && report[0] == "ok" {
            Ok(())
        } else {
            Err(StoreError::Corrupt {
                path: self.db_path.clone(),
                detail: report.join("; "),
            })
        }
    }

    // ----- plans -----------------------------------------------------------------------

    /// Store a new plan. Plans are immutable: a second plan with the same id is refused.
    pub fn put_plan(&self, plan: &PlanRecord) -> Result<(), StoreError> {
        let body = serde_json::to_string(&plan.body).map_err(|source| StoreError::Json {
            what: "plan body",
            source,
        })?;
        self.write(|tx| {
            let inserted = tx.execute(
                "INSERT INTO plans (id, created_at, expires_at, request_digest, content_digest,
                                    owner, summary_text, body)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (id) DO NOTHING",
                params![
                    plan.id,
                    to_millis(plan.created_at),
                    to_millis(plan.expires_at),
                    plan.request_digest,
                    plan.content_digest,
                    plan.owner,
                    plan.summary_text,
                    body,
                ],
            )?;
            if inserted == 0 {
                return Err(StoreError::DuplicatePlan(plan.id.clone()));
            }
            Ok(())
        })
    }

    /// The plan with this id, expired or not (the caller decides what expiry means).
    pub fn get_plan(&self, plan_id: &str) -> Result<Option<PlanRecord>, StoreError> {
        self.read(|tx| {
            tx.query_row(
                &format!("SELECT {PLAN_COLUMNS} FROM plans WHERE id = ?1"),
                [plan_id],
                plan_row,
            )
            .optional()?
            .map(finish_plan)
            .transpose()
        })
    }

    /// Every plan with this content digest, oldest first.
    pub fn plans_by_content_digest(&self, digest: &str) -> Result<Vec<PlanRecord>, StoreError> {
        self.read(|tx| {
            let mut stmt = tx.prepare(&format!(
                "SELECT {PLAN_COLUMNS} FROM plans WHERE content_digest = ?1
                 ORDER BY created_at, id"
            ))?;
            let rows = stmt.query_map([digest], plan_row)?;
            rows.map(|r| finish_plan(r?)).collect()
        })
    }

    // ----- decisions ---------------------------------------------------------------------

    /// Record a person's decision on a plan (the latest one wins: a refusal can be changed
    /// to an approval and back), and append it to the audit log in the same transaction, so
    /// that no decision lands without its audit entry.
    pub fn record_decision(
        &self,
        plan_id: &str,
        decision: Decision,
        via: &str,
    ) -> Result<(), StoreError> {
        self.record_decision_as(plan_id, decision, via, None)
    }

    /// [`Store::record_decision`], the audit entry naming who decided (`sub`).
    pub fn record_decision_as(
        &self,
        plan_id: &str,
        decision: Decision,
        via: &str,
        subject: Option<&str>,
    ) -> Result<(), StoreError> {
        self.write(|tx| {
            let digest: Option<String> = tx
                .query_row(
                    "SELECT request_digest FROM plans WHERE id = ?1",
                    [plan_id],
                    |r| r.get(0),
                )
                .optional()?;
            let Some(digest) = digest else {
                return Err(StoreError::UnknownPlan(plan_id.to_owned()));
            };
            let now = now_millis();
            tx.execute(
                "INSERT INTO decisions (plan_id, decision, via, decided_at, request_digest)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (plan_id) DO UPDATE SET decision = excluded.decision,
                     via = excluded.via, decided_at = excluded.decided_at,
                     request_digest = excluded.request_digest",
                params![plan_id, decision.as_str(), via, now, digest],
            )?;
            insert_audit(
                tx,
                &AuditEvent::new(via, "decide", decision.as_str())
                    .plan(plan_id)
                    .subject(subject)
                    .detail(serde_json::json!({
                        "request_digest": digest,
                        "channel": via,
                        "decided_at": from_millis(now).to_rfc3339(),
                    })),
            )
        })
    }

    /// The latest decision on a plan, if any.
    pub fn decision(&self, plan_id: &str) -> Result<Option<DecisionRecord>, StoreError> {
        self.read(|tx| {
            Ok(tx
                .query_row(
                    "SELECT plan_id, decision, via, decided_at, request_digest
                     FROM decisions WHERE plan_id = ?1",
                    [plan_id],
                    |r| {
                        let decision: String = r.get(1)?;
                        Ok(DecisionRecord {
                            plan_id: r.get(0)?,
                            decision: if decision == "approved" {
                                Decision::Approved
                            } else {
                                Decision::Refused
                            },
                            via: r.get(2)?,
                            decided_at: from_millis(r.get(3)?),
                            request_digest: r.get(4)?,
                        })
                    },
                )
                .optional()?)
        })
    }

    // ----- nonces --------------------------------------------------------------------------

    /// Use a request-state nonce: `true` the first time, `false` ever after. A nonce whose
    /// `expires_at` has already passed is never accepted (fail closed), which is what makes
    /// pruning expired rows safe: a pruned nonce could only come back expired.
    pub fn use_nonce(&self, nonce: &str, expires_at: DateTime<Utc>) -> Result<bool, StoreError> {
        let now = now_millis();
        let expires = to_millis(expires_at);
        if expires <= now {
            return Ok(false);
        }
        self.write(|tx| {
            tx.execute("DELETE FROM nonces WHERE expires_at <= ?1", [now])?;
            let inserted = tx.execute(
                "INSERT INTO nonces (nonce, expires_at, used_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (nonce) DO NOTHING",
                params![nonce, expires, now],
            )?;
            Ok(inserted == 1)
        })
    }

    // ----- audit log -----------------------------------------------------------------------

    /// Append an event to the audit log.
    pub fn audit(&self, event: &AuditEvent) -> Result<(), StoreError> {
        self.write(|tx| insert_audit(tx, event))
    }

    /// The latest `limit` entries, oldest first.
    pub fn audit_entries(&self, limit: usize) -> Result<Vec<AuditEntry>, StoreError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.read(|tx| {
            let mut stmt = tx.prepare(
                "SELECT seq, at, pid, actor, action, plan_id, run_id, outcome, detail, subject
                 FROM (SELECT * FROM audit ORDER BY seq DESC LIMIT ?1) ORDER BY seq",
            )?;
            let rows = stmt.query_map([limit], |r| {
                Ok((
                    AuditEntry {
                        seq: r.get(0)?,
                        at: from_millis(r.get(1)?),
                        pid: r.get(2)?,
                        event: AuditEvent {
                            actor: r.get(3)?,
                            action: r.get(4)?,
                            plan_id: r.get(5)?,
                            run_id: r.get(6)?,
                            outcome: r.get(7)?,
                            detail: serde_json::Value::Null,
                            subject: r.get(9)?,
                        },
                    },
                    r.get::<_, String>(8)?,
                ))
            })?;
            rows.map(|row| {
                let (mut entry, detail) = row?;
                entry.event.detail =
                    serde_json::from_str(&detail).map_err(|source| StoreError::Json {
                        what: "audit detail",
                        source,
                    })?;
                Ok(entry)
            })
            .collect()
        })
    }

    // ----- request-state key -----------------------------------------------------------------

    /// The per-install request-state key (32 bytes in `<dir>/request-state.key`, mode 0600),
    /// created on first use. A key file readable by group or others is refused.
    pub fn request_state_key(&self) -> Result<SecretSlice<u8>, StoreError> {
        key::request_state_key(&self.dir)
    }
}

const PLAN_COLUMNS: &str =
    "id, created_at, expires_at, request_digest, content_digest, owner, summary_text, body";

fn plan_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<(PlanRecord, String)> {
    Ok((
        PlanRecord {
            id: r.get(0)?,
            created_at: from_millis(r.get(1)?),
            expires_at: from_millis(r.get(2)?),
            request_digest: r.get(3)?,
            content_digest: r.get(4)?,
            owner: r.get(5)?,
            summary_text: r.get(6)?,
            body: serde_json::Value::Null,
        },
        r.get(7)?,
    ))
}

fn finish_plan((mut plan, body): (PlanRecord, String)) -> Result<PlanRecord, StoreError> {
    plan.body = serde_json::from_str(&body).map_err(|source| StoreError::Json {
        what: "plan body",
        source,
    })?;
    Ok(plan)
}

pub(crate) fn insert_audit(
    tx: &rusqlite::Transaction<'_>,
    e: &AuditEvent,
) -> Result<(), StoreError> {
    let detail = serde_json::to_string(&e.detail).map_err(|source| StoreError::Json {
        what: "audit detail",
        source,
    })?;
    tx.execute(
        "INSERT INTO audit (at, pid, actor, action, plan_id, run_id, outcome, detail, subject)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            now_millis(),
            std::process::id(),
            e.actor,
            e.action,
            e.plan_id,
            e.run_id,
            e.outcome,
            detail,
            e.subject,
        ],
    )?;
    Ok(())
}
