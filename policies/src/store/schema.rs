//! The database schema and its migrations, keyed by SQLite's `user_version`.
//!
//! Times are INTEGER milliseconds since the Unix epoch (UTC) so that lease and expiry
//! comparisons happen inside SQL without parsing. JSON columns hold text.

use rusqlite::{Connection, TransactionBehavior};

use super::StoreError;

/// The schema this build writes. A database with a higher `user_version` was written by a
/// newer factory-mcp and is refused rather than misread.
pub(crate) const SCHEMA_VERSION: i64 = 4;

const V1: &str = r#"
CREATE TABLE plans (
    id              TEXT PRIMARY KEY NOT NULL,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    request_digest  TEXT NOT NULL,
    content_digest  TEXT NOT NULL,
    owner           TEXT,
    summary_text    TEXT NOT NULL,
    body            TEXT NOT NULL
) STRICT;
CREATE INDEX plans_by_content_digest ON plans(content_digest);

-- The latest decision per plan; the audit log keeps every one.
CREATE TABLE decisions (
    plan_id         TEXT PRIMARY KEY NOT NULL REFERENCES plans(id),
    decision        TEXT NOT NULL CHECK (decision IN ('approved', 'refused')),
    via             TEXT NOT NULL,
    decided_at      INTEGER NOT NULL,
    request_digest  TEXT NOT NULL
) STRICT;

-- The dispatch journal (kind 'dispatch', key = plan id, sub = '') and the volume-creation
-- journal (kind 'volume', key = owner key, sub = volume name) share one shape.
CREATE TABLE journal (
    kind            TEXT NOT NULL CHECK (kind IN ('dispatch', 'volume')),
    key             TEXT NOT NULL,
    sub             TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN
                        ('dispatching', 'dispatched', 'creating', 'created', 'unknown', 'failed')),
    holder          TEXT,
    lease_until     INTEGER,
    started_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    run_id          TEXT,
    reason          TEXT,
    details         TEXT,
    attempts        INTEGER NOT NULL,
    PRIMARY KEY (kind, key, sub)
) STRICT;
CREATE INDEX journal_by_state ON journal(kind, state);

-- Single-use request-state nonces; rows past their expiry are pruned.
CREATE TABLE nonces (
    nonce           TEXT PRIMARY KEY NOT NULL,
    expires_at      INTEGER NOT NULL,
    used_at         INTEGER NOT NULL
) STRICT;
CREATE INDEX nonces_by_expiry ON nonces(expires_at);

CREATE TABLE audit (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    at              INTEGER NOT NULL,
    pid             INTEGER NOT NULL,
    actor           TEXT NOT NULL,
    action          TEXT NOT NULL,
    plan_id         TEXT,
    run_id          TEXT,
    outcome         TEXT NOT NULL,
    detail          TEXT NOT NULL
) STRICT;
-- Append-only: the database itself refuses to rewrite history.
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
    BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END;
"#;

/// Version 2: the approval page's single-use tokens, stored by digest (a copy of the database
/// holds no live token).
const V2: &str = r#"
CREATE TABLE page_tokens (
    token_digest    TEXT PRIMARY KEY NOT NULL,
    plan_id         TEXT NOT NULL REFERENCES plans(id),
    request_digest  TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    used_at         INTEGER,
    cookie_digest   TEXT
) STRICT;
CREATE INDEX page_tokens_by_plan ON page_tokens(plan_id);
"#;

/// Version 3: the run-list cache (`known_runs.rs`): per owner scope, the runs read from the
/// platform (status, name, config digest, the object as read) and how much of the history was
/// read (`known_run_scopes`). Only a cache: deleting both tables loses nothing but a re-read.
const V3: &str = r#"
CREATE TABLE known_run_scopes (
    scope           TEXT PRIMARY KEY NOT NULL,
    complete        INTEGER NOT NULL,
    watermark_ms    INTEGER NOT NULL,
    updated_ms      INTEGER NOT NULL
) STRICT;
CREATE TABLE known_runs (
    scope           TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    created_ms      INTEGER NOT NULL,
    status          TEXT NOT NULL,
    watch           INTEGER NOT NULL,
    name            TEXT,
    config_digest   TEXT,
    body            TEXT NOT NULL,
    checked_ms      INTEGER NOT NULL,
    PRIMARY KEY (scope, run_id)
) STRICT;
CREATE INDEX known_runs_watched ON known_runs(scope, watch);
CREATE INDEX known_runs_by_name ON known_runs(scope, name);
CREATE INDEX known_runs_by_config ON known_runs(scope, config_digest);
"#;

/// Version 4: who each audited action was for (the OAuth `sub`, issue 21 §2); NULL for the
/// rows before it and for local use.
const V4: &str = r#"
ALTER TABLE audit ADD COLUMN subject TEXT;
"#;

/// Bring the schema up to [`SCHEMA_VERSION`] inside one IMMEDIATE transaction, so that two
/// processes opening a fresh database at once do not both create it.
pub(crate) fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::NewerSchema {
            found: version,
            supported: SCHEMA_VERSION,
        });
    }
    if version < 1 {
        tx.execute_batch(V1)?;
    }
    if version < 2 {
        tx.execute_batch(V2)?;
    }
    if version < 3 {
        tx.execute_batch(V3)?;
    }
    if version < 4 {
        // A store that already has the column (written by a build that added it) keeps it.
        let has_subject: bool = tx
            .prepare("SELECT 1 FROM pragma_table_info('audit') WHERE name = 'subject'")?
            .exists([])?;
        if !has_subject {
            tx.execute_batch(V4)?;
        }
    }
    // Later versions: `if version < 5 { tx.execute_batch(V5)?; }` and so on.
    if version != SCHEMA_VERSION {
        tx.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
    }
    tx.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::SCHEMA_VERSION;
    use crate::store::{AuditEvent, Store};

    /// A populated schema-3 store (before `audit.subject`) migrates: its rows are kept with no
    /// subject, and new rows carry theirs.
    #[test]
    fn a_schema_3_audit_log_gains_the_subject_column() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = Store::open(dir.path()).unwrap();
            store
                .audit(&AuditEvent::new("plan_run", "plan", "planned"))
                .unwrap();
            store
                .conn()
                .execute_batch("ALTER TABLE audit DROP COLUMN subject; PRAGMA user_version = 3;")
                .unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        let version: i64 = store
            .conn()
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        store
            .audit(&AuditEvent::new("launch_run", "call", "call").subject(Some("alice")))
            .unwrap();
        store
            .record_decision_as(
                "p-none",
                crate::store::Decision::Approved,
                "page",
                Some("bob"),
            )
            .unwrap_err();
        let entries = store.audit_entries(10).unwrap();
        let subjects: Vec<_> = entries
            .iter()
            .map(|e| (e.event.actor.as_str(), e.event.subject.as_deref()))
            .collect();
        assert_eq!(
            subjects,
            vec![("plan_run", None), ("launch_run", Some("alice"))]
        );
        // Opening again is a no-op.
        drop(store);
        Store::open(dir.path()).unwrap();
    }
}
